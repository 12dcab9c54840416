"""Cross-entropy over a large vocabulary with the gradient written during the forward pass.

`cross_entropy_with_grad(logits, target)` matches `F.cross_entropy(logits.float(), target, ...)` and adds a tanh
soft-cap and a z-loss. One Triton program owns one row: a first sweep of the row finds the log-sum-exp online;
when a gradient is needed a second sweep (mostly L2 hits, walked backwards so the freshest blocks come first)
writes d loss / d logits, so `backward` only rescales that saved gradient, or does nothing for `loss.backward()`.
"""
from typing import NamedTuple, Optional

import torch
import triton
import triton.language as tl

from greyhound._validate import FLOAT_DTYPES, check_choice, check_tensor, check_triton_device

__all__ = ["CrossEntropyOutput", "cross_entropy_with_grad", "cross_entropy_reference"]

TARGET_DTYPES = (torch.int64, torch.int32)
REDUCTIONS = ("mean", "sum", "none")
LOG2E = tl.constexpr(1.4426950408889634)


# ----------------------------------------------------------------------------------------------------------------
# Kernels
# ----------------------------------------------------------------------------------------------------------------
@triton.jit
def _tanh(x):
    # exp2 form rather than libdevice: the Triton interpreter (how CI checks kernels) has no libdevice
    return 1.0 - 2.0 / (1.0 + tl.exp2(x * 2.8853900817779268))  # 2 * log2(e)


@triton.jit
def _cross_entropy_kernel(
    logits_ptr, logits_row_stride,
    grad_ptr, grad_row_stride,
    target_ptr, per_token_loss_ptr, lse_ptr, grad_scale_ptr, grad_scale_stride,
    V, ignore_index, label_smoothing, softcap, lse_square_scale,
    BLOCK_V: tl.constexpr,
    HAS_SOFTCAP: tl.constexpr, HAS_SMOOTHING: tl.constexpr, HAS_Z_LOSS: tl.constexpr, WRITE_GRAD: tl.constexpr,
    FIRST_SWEEP_EVICTION: tl.constexpr, PREFETCH: tl.constexpr,
):
    """Per row: per-token loss and lse; with WRITE_GRAD also grad_scale[row] * d loss_row / d logits_row
    (grad_scale_stride 0: one scale for every row).

    Reads fp32/bf16/fp16 logits, computes every value in fp32, stores the loss and lse in fp32 and the gradient
    in the gradient tensor's dtype. grad_ptr may equal logits_ptr: each element is read before it is overwritten.
    """
    row = tl.program_id(0).to(tl.int64)
    logits_row = logits_ptr + row * logits_row_stride
    cols = tl.arange(0, BLOCK_V)
    target = tl.load(target_ptr + row).to(tl.int64)
    is_valid = target != ignore_index

    # sweep 1: online max / sum of exp over the row, in blocks of BLOCK_V
    row_max = float("-inf")
    sum_exp = 0.0
    sum_z = 0.0
    if PREFETCH:  # the next block's load is in flight while this one is reduced: twice the bytes in flight
        next_block = tl.load(logits_row + cols, mask=cols < V, other=float("-inf"),
                             eviction_policy=FIRST_SWEEP_EVICTION)
    for start in range(0, V, BLOCK_V):
        offsets = start + cols
        mask = offsets < V
        if PREFETCH:
            z = next_block.to(tl.float32)
            next_block = tl.load(logits_row + BLOCK_V + offsets, mask=BLOCK_V + offsets < V, other=float("-inf"),
                                 eviction_policy=FIRST_SWEEP_EVICTION)
        else:
            z = tl.load(logits_row + offsets, mask=mask, other=float("-inf"),
                        eviction_policy=FIRST_SWEEP_EVICTION).to(tl.float32)
        if HAS_SOFTCAP:
            z = tl.where(mask, softcap * _tanh(z / softcap), float("-inf"))
        new_max = tl.maximum(row_max, tl.max(z, axis=0))
        safe_max = tl.where(new_max == float("-inf"), 0.0, new_max)  # a row that starts with -inf logits
        sum_exp = sum_exp * tl.exp2((row_max - safe_max) * LOG2E) + tl.sum(tl.exp2((z - safe_max) * LOG2E), axis=0)
        row_max = new_max
        if HAS_SMOOTHING:
            sum_z += tl.sum(tl.where(mask, z, 0.0), axis=0)
    lse = row_max + tl.log(sum_exp)

    z_target = tl.load(logits_row + tl.where(is_valid, target, 0), mask=is_valid, other=0.0).to(tl.float32)
    if HAS_SOFTCAP:
        z_target = softcap * _tanh(z_target / softcap)
    loss = lse - (1.0 - label_smoothing) * z_target
    if HAS_SMOOTHING:
        loss -= label_smoothing * sum_z / V
    if HAS_Z_LOSS:
        loss += lse_square_scale * lse * lse
    tl.store(per_token_loss_ptr + row, tl.where(is_valid, loss, 0.0))
    tl.store(lse_ptr + row, lse)

    if WRITE_GRAD:
        # d loss / d z_j = p_j (1 + 2 s lse) - (1 - eps) [j = target] - eps / V, all times the row's scale
        row_scale = tl.where(is_valid, tl.load(grad_scale_ptr + row * grad_scale_stride).to(tl.float32), 0.0)
        softmax_coef = row_scale
        if HAS_Z_LOSS:
            softmax_coef = row_scale * (1.0 + 2.0 * lse_square_scale * lse)
        target_coef = row_scale * (1.0 - label_smoothing)
        uniform = row_scale * label_smoothing / V
        lse_log2 = lse * LOG2E
        grad_row = grad_ptr + row * grad_row_stride
        num_blocks = tl.cdiv(V, BLOCK_V)
        # sweep 2 walks the row backwards: its first blocks are the ones sweep 1 read last, still in L2
        for block in range(0, num_blocks):
            offsets = (num_blocks - 1 - block) * BLOCK_V + cols
            mask = offsets < V
            x = tl.load(logits_row + offsets, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
            z = x
            if HAS_SOFTCAP:
                capped = _tanh(x / softcap)
                z = softcap * capped
            grad = tl.exp2(z * LOG2E - lse_log2) * softmax_coef - uniform
            grad -= tl.where(offsets == target, target_coef, 0.0)
            if HAS_SOFTCAP:
                grad *= 1.0 - capped * capped
            tl.store(grad_row + offsets, grad.to(grad_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _scale_rows_kernel(grad_ptr, grad_row_stride, scale_ptr, scale_stride, V, BLOCK_V: tl.constexpr):
    """grad[row, :] *= scale[row * scale_stride] (scale_stride 0: one scalar for every row), in place.

    Reads the gradient in its own dtype (fp32/bf16/fp16) and the scale in fp32 or lower, multiplies in fp32 and
    stores back in the gradient's dtype.
    """
    row = tl.program_id(0).to(tl.int64)
    offsets = tl.program_id(1) * BLOCK_V + tl.arange(0, BLOCK_V)
    mask = offsets < V
    scale = tl.load(scale_ptr + row * scale_stride).to(tl.float32)
    grad_row = grad_ptr + row * grad_row_stride
    grad = tl.load(grad_row + offsets, mask=mask, other=0.0).to(tl.float32)
    tl.store(grad_row + offsets, (grad * scale).to(grad_ptr.dtype.element_ty), mask=mask)


# ----------------------------------------------------------------------------------------------------------------
# Launchers
# ----------------------------------------------------------------------------------------------------------------
# (BLOCK_V, num_warps, PREFETCH) forced for every launch when set: how scripts/gpu_cross_entropy.py compares configs
_CONFIG_OVERRIDE: Optional[tuple] = None


def _launch_config(V: int) -> tuple:
    """(BLOCK_V, num_warps, PREFETCH) for rows of V logits: big blocks and a prefetch keep bytes in flight."""
    if _CONFIG_OVERRIDE is not None:
        return _CONFIG_OVERRIDE
    block_v = min(triton.next_power_of_2(V), 8192)
    num_warps = 4 if block_v <= 1024 else (8 if block_v <= 4096 else 16)
    return block_v, num_warps, V > block_v


def _grad_scale_arg(grad_scale, rows: int, like: torch.Tensor) -> tuple:
    """(fp32 tensor, stride) for the kernel from a float, a 0-d tensor (every row) or a [rows] tensor (per row),
    without a host sync."""
    if not isinstance(grad_scale, torch.Tensor):
        return torch.full((1,), float(grad_scale), device=like.device, dtype=torch.float32), 0
    if grad_scale.dim() == 0:
        return grad_scale.reshape(1).to(device=like.device, dtype=torch.float32), 0
    if grad_scale.shape != (rows,):
        raise ValueError(f"grad_scale must be 0-d or have shape ({rows},), got {tuple(grad_scale.shape)}")
    if grad_scale.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        grad_scale = grad_scale.float()
    return grad_scale, grad_scale.stride(0)


def _cross_entropy_rows(
    logits: torch.Tensor,
    target: torch.Tensor,
    grad: Optional[torch.Tensor] = None,
    grad_scale=1.0,
    *,
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
    softcap: Optional[float] = None,
    lse_square_scale: float = 0.0,
    per_token_loss: Optional[torch.Tensor] = None,
    lse: Optional[torch.Tensor] = None,
) -> tuple:
    """Per-token loss and lse (fp32 [rows]) of `logits` [rows, V]; when `grad` is given (it may be `logits`
    itself), also write grad_scale * d per_token_loss / d logits into it. Inputs are not validated here: callers
    pass 2-D logits with unit stride along V, matching target and grad, and targets already range-checked.
    `grad_scale` is a float, a 0-d device tensor (e.g. 1 / number of valid tokens, read by the kernel) or a
    [rows] tensor of per-row scales. `per_token_loss` / `lse`, if given, are contiguous fp32 [rows] outputs.
    """
    rows, V = logits.shape
    if per_token_loss is None:
        per_token_loss = torch.empty(rows, device=logits.device, dtype=torch.float32)
    if lse is None:
        lse = torch.empty(rows, device=logits.device, dtype=torch.float32)
    if rows == 0:
        return per_token_loss, lse
    write_grad = grad is not None
    grad_scale, grad_scale_stride = _grad_scale_arg(grad_scale if write_grad else 0.0, rows, logits)
    block_v, num_warps, prefetch = _launch_config(V)
    _cross_entropy_kernel[(rows,)](
        logits, logits.stride(0),
        grad if write_grad else logits, grad.stride(0) if write_grad else 0,
        target, per_token_loss, lse, grad_scale, grad_scale_stride,
        V, ignore_index, float(label_smoothing), float(softcap or 1.0), float(lse_square_scale),
        BLOCK_V=block_v,
        HAS_SOFTCAP=softcap is not None, HAS_SMOOTHING=label_smoothing > 0, HAS_Z_LOSS=lse_square_scale > 0,
        WRITE_GRAD=write_grad,
        # streamed once without a gradient; with one, kept in L2 for the second sweep
        FIRST_SWEEP_EVICTION="evict_last" if write_grad else "evict_first",
        PREFETCH=prefetch,
        num_warps=num_warps,
    )
    return per_token_loss, lse


def _scale_rows_(grad: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """grad *= scale in place, `scale` a scalar or one value per row of `grad`."""
    rows, V = grad.shape
    if rows == 0:
        return grad
    scale = scale.reshape(-1) if scale.dim() else scale.reshape(1)
    scale_stride = 0 if scale.numel() == 1 else scale.stride(0)
    block_v = min(triton.next_power_of_2(V), 4096)
    _scale_rows_kernel[(rows, triton.cdiv(V, block_v))](
        grad, grad.stride(0), scale, scale_stride, V, BLOCK_V=block_v, num_warps=8 if block_v >= 2048 else 4,
    )
    return grad


def _reduce(per_token_loss: torch.Tensor, n_valid: torch.Tensor, reduction: str) -> torch.Tensor:
    if reduction == "none":
        return per_token_loss
    total = per_token_loss.sum()
    return total / n_valid if reduction == "mean" else total  # mean over no valid token is 0/0 = nan, as in torch


def _check_targets(target: torch.Tensor, V: int, ignore_index: int) -> None:
    # one fused device check (and one host sync) so that an out-of-range target can never read out of bounds
    bad = ((target < 0) | (target >= V)) & (target != ignore_index)
    if bool(bad.any()):
        example = int(target[bad][0])
        raise ValueError(
            f"target must hold class indices in [0, {V}) or ignore_index={ignore_index}, got {example} "
            f"({int(bad.sum())} of {target.numel()} entries out of range)"
        )


# ----------------------------------------------------------------------------------------------------------------
# Autograd
# ----------------------------------------------------------------------------------------------------------------
def _hand_out_once(ctx, op_name: str) -> None:
    """Gradients made in the forward are handed out (and maybe rescaled in place) once: a second backward through
    the same graph (retain_graph=True) raises instead of returning stale or doubly scaled values."""
    if getattr(ctx, "backward_done", False):
        raise RuntimeError(
            f"{op_name}: backward ran twice through the same forward (retain_graph=True); the gradients made in "
            f"the forward were already handed out. Call {op_name} again instead."
        )
    ctx.backward_done = True


class _CrossEntropyFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, target, reduction, ignore_index, label_smoothing, softcap, lse_square_scale,
                inplace_backward):
        grad = logits if inplace_backward else torch.empty_like(logits)
        n_valid = (target != ignore_index).sum()
        grad_scale = 1.0 / n_valid.float() if reduction == "mean" else 1.0
        per_token_loss, lse = _cross_entropy_rows(
            logits, target, grad, grad_scale, ignore_index=ignore_index, label_smoothing=label_smoothing,
            softcap=softcap, lse_square_scale=lse_square_scale,
        )
        if inplace_backward:
            # other nodes that saved logits now raise; bumped before saving so the saved version holds the gradient
            torch.autograd.graph.increment_version(logits)
        ctx.save_for_backward(grad)  # a later in-place write to it makes backward raise
        loss = _reduce(per_token_loss, n_valid, reduction)
        if reduction == "none":
            ctx.mark_non_differentiable(lse)
            return loss, None, lse
        ctx.mark_non_differentiable(per_token_loss, lse)
        return loss, per_token_loss, lse

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_loss, _grad_per_token_loss, _grad_lse):
        _hand_out_once(ctx, "cross_entropy_with_grad")
        (grad,) = ctx.saved_tensors
        grad = grad.detach()
        if grad_loss is not None and not bool((grad_loss == 1).all()):  # loss.backward() passes 1: nothing to do
            _scale_rows_(grad, grad_loss)
        return grad, None, None, None, None, None, None, None


class CrossEntropyOutput(NamedTuple):
    loss: torch.Tensor
    per_token_loss: Optional[torch.Tensor]
    lse: Optional[torch.Tensor]


def _outputs(loss, per_token_loss, lse, return_per_token_loss: bool, return_lse: bool):
    """The bare loss, or CrossEntropyOutput with the fields asked for (None elsewhere)."""
    if not (return_per_token_loss or return_lse):
        return loss
    return CrossEntropyOutput(loss, per_token_loss if return_per_token_loss else None, lse if return_lse else None)


def _check_options(reduction, ignore_index, label_smoothing, softcap, lse_square_scale):
    check_choice("reduction", reduction, REDUCTIONS)
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, int):
        raise TypeError(f"ignore_index must be an int, got {type(ignore_index).__name__}")
    for name, value in (("label_smoothing", label_smoothing), ("lse_square_scale", lse_square_scale)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{name} must be a float, got {type(value).__name__}")
    if not 0.0 <= label_smoothing < 1.0:
        raise ValueError(f"label_smoothing must be in [0, 1), got {label_smoothing}")
    if not 0.0 <= lse_square_scale < float("inf"):
        raise ValueError(f"lse_square_scale must be a finite float >= 0, got {lse_square_scale}")
    if softcap is not None:
        if isinstance(softcap, bool) or not isinstance(softcap, (int, float)):
            raise TypeError(f"softcap must be None or a float, got {type(softcap).__name__}")
        if not 0.0 < softcap < float("inf"):
            raise ValueError(f"softcap must be None or a finite float > 0, got {softcap}")


# ----------------------------------------------------------------------------------------------------------------
# Public functions
# ----------------------------------------------------------------------------------------------------------------
def cross_entropy_with_grad(
    logits: torch.Tensor,
    target: torch.Tensor,
    *,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
    softcap: Optional[float] = None,
    lse_square_scale: float = 0.0,
    return_per_token_loss: bool = False,
    return_lse: bool = False,
    inplace_backward: bool = False,
):
    """Cross-entropy of `logits` [BT, V] against class indices `target` [BT], as
    `F.cross_entropy(logits.float(), target, ignore_index=, reduction=, label_smoothing=)`, plus:

    - `softcap`: logits <- softcap * tanh(logits / softcap) before the softmax (gradient flows through it);
    - `lse_square_scale`: z-loss, lse_square_scale * lse**2 added to each non-ignored token's loss.

    Contract: fp32/bf16/fp16 logits, int64/int32 target; every sum and exp in fp32; the loss, per-token loss and
    lse are fp32, the logits gradient has the logits' dtype. When a gradient is needed (logits.requires_grad and
    grad mode on) it is computed in the forward pass and kept (BT x V); `backward` only rescales it in place.
    With `inplace_backward=True` that gradient is written into `logits` itself (no extra memory; the values of
    `logits` are lost and its version counter is bumped so that other users of it raise); otherwise `logits` is
    never written. Without a gradient nothing is written and `inplace_backward` has no effect.

    Returns the loss: 0-d for reduction "mean"/"sum", [BT] for "none". With `reduction="mean"` the loss is the
    mean over non-ignored tokens; if every token is ignored it is nan (0/0, as torch gives) and the gradient is 0.
    With `return_per_token_loss` or `return_lse` returns `CrossEntropyOutput(loss, per_token_loss, lse)` instead:
    per_token_loss [BT] fp32 (0 at ignored tokens, z-loss included), lse [BT] fp32 (the log-sum-exp of the
    soft-capped logits of every row, ignored or not); both are for logging and carry no gradient; fields not
    asked for are None. Gradients reach `logits` only; one backward per forward call.
    """
    check_tensor("logits", logits, dtypes=FLOAT_DTYPES, ndim=2)
    check_triton_device("logits", logits)
    check_tensor("target", target, dtypes=TARGET_DTYPES, ndim=1, like=logits)
    if target.shape[0] != logits.shape[0]:
        raise ValueError(
            f"target must have one entry per row of logits ({logits.shape[0]}), got shape {tuple(target.shape)}"
        )
    if logits.shape[1] == 0:
        raise ValueError(f"logits must have at least one class (V >= 1), got shape {tuple(logits.shape)}")
    _check_options(reduction, ignore_index, label_smoothing, softcap, lse_square_scale)
    V = logits.shape[1]
    needs_grad = torch.is_grad_enabled() and logits.requires_grad
    if logits.stride(1) != 1:
        if inplace_backward and needs_grad:
            raise ValueError(
                f"logits must have unit stride along the vocabulary for inplace_backward=True, got strides "
                f"{logits.stride()}"
            )
        logits = logits.contiguous()
    target = target.contiguous()
    _check_targets(target, V, ignore_index)
    options = dict(ignore_index=ignore_index, label_smoothing=float(label_smoothing), softcap=softcap,
                   lse_square_scale=float(lse_square_scale))

    if needs_grad:
        loss, per_token_loss, lse = _CrossEntropyFunction.apply(
            logits, target, reduction, ignore_index, options["label_smoothing"], softcap,
            options["lse_square_scale"], bool(inplace_backward),
        )
        if reduction == "none":
            per_token_loss = loss.detach()
    else:
        per_token_loss, lse = _cross_entropy_rows(logits, target, **options)
        loss = _reduce(per_token_loss, (target != ignore_index).sum(), reduction)
    return _outputs(loss, per_token_loss, lse, return_per_token_loss, return_lse)


def cross_entropy_reference(
    logits: torch.Tensor,
    target: torch.Tensor,
    *,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
    softcap: Optional[float] = None,
    lse_square_scale: float = 0.0,
    return_per_token_loss: bool = False,
    return_lse: bool = False,
    inplace_backward: bool = False,
):
    """Plain-PyTorch definition of `cross_entropy_with_grad` (same options and outputs; differentiable through
    autograd; never writes in place, so `inplace_backward` is ignored). Computes in fp64 for fp64 logits, else fp32.
    """
    z = logits if logits.dtype == torch.float64 else logits.float()
    if softcap is not None:
        z = softcap * torch.tanh(z / softcap)
    lse = torch.logsumexp(z, dim=-1)
    valid = target != ignore_index
    z_target = z.gather(1, torch.where(valid, target, 0).long()[:, None])[:, 0]
    per_token_loss = lse - (1.0 - label_smoothing) * z_target
    if label_smoothing > 0:
        per_token_loss = per_token_loss - label_smoothing * z.mean(dim=-1)
    if lse_square_scale > 0:
        per_token_loss = per_token_loss + lse_square_scale * lse.square()
    per_token_loss = torch.where(valid, per_token_loss, 0.0)
    if reduction == "none":
        loss = per_token_loss
    elif reduction == "sum":
        loss = per_token_loss.sum()
    else:
        loss = per_token_loss.sum() / valid.sum()
    return _outputs(loss, per_token_loss.detach(), lse.detach(), return_per_token_loss, return_lse)
