"""fp32 accumulation of low-precision GEMMs, shared by the fused lm-head ops (linear cross-entropy, logprobs)."""
import functools
import warnings

import torch


@functools.lru_cache(maxsize=None)
def _cublas_accumulates_into_fp32(device: torch.device, dtype: torch.dtype) -> bool:
    """Whether `torch.addmm(acc_fp32, a, b, out_dtype=torch.float32, out=acc_fp32)` works for `dtype` operands
    here (torch >= 2.8 on CUDA, with an fp32 `self` in recent versions): checked once on a tiny product."""
    try:
        a = torch.randn(32, 16, device=device).to(dtype)
        b = torch.randn(16, 24, device=device).to(dtype)
        acc = torch.randn(32, 24, device=device)
        expected = acc + a.float() @ b.float()
        torch.addmm(acc, a, b, out_dtype=torch.float32, out=acc)
        return bool(torch.allclose(acc, expected, rtol=1e-3, atol=1e-3))
    except (RuntimeError, TypeError):
        return False


def _addmm_into_fp32_(acc: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> None:
    """acc += a @ b for an fp32 `acc`, products and sums in fp32, operands in their own (low) precision."""
    if a.dtype == torch.float32:
        acc.addmm_(a, b)
    elif acc.is_cuda and _cublas_accumulates_into_fp32(acc.device, a.dtype):
        torch.addmm(acc, a, b, out_dtype=torch.float32, out=acc)
    else:
        if acc.is_cuda:
            warnings.warn("this torch has no addmm(out_dtype=float32) for an fp32 accumulator: the accumulation "
                          "falls back to fp32 GEMMs on upcast copies (correct, much slower)", stacklevel=3)
        acc.addmm_(a.float(), b.float())
