"""Per-token log-probabilities of given tokens (and the entropy), as RL trainers (GRPO/PPO) take them.

`logprobs(logits, target)` = log_softmax(logits / temperature)[target] in one pass over the logits: a Triton
kernel keeps a running max and a running sum of exp2 per row (log2(e)/temperature folded into one multiply), so
the logits are read once and nothing but the fp32 outputs and the row's normaliser (max, log2 sum: two floats) is
written. The backward re-reads the logits and writes d/d logits = grad · (onehot − softmax) / T (+ entropy term).

`linear_logprobs(hidden, weight, target)` is the same from the hidden states and the lm-head weight without ever
holding the full logits: the forward takes a chunk of rows at a time (logits chunk = h_c @ Wᵀ by torch matmul, then
the kernel); the backward walks the vocabulary in slices (logits slice = h @ W_sᵀ for all rows; its gradient needs
only the saved row normalisers), so grad_W of each slice is one full-depth GEMM written once and only grad_h,
rows × H, is accumulated in fp32 across slices.
"""
import math
from typing import Optional

import torch
import triton
import triton.language as tl

from greyhound import _library, _tuning
from greyhound._launch import FastLaunch, cdiv, next_power_of_2
from greyhound._validate import FLOAT_DTYPES, as_float, check_bool, check_tensor, check_triton_device, is_int, is_real
from greyhound.ops._fp32_gemm import _addmm_into_fp32_

LOG2E = 1.4426950408889634
# The smallest temperature whose kernel scale, log2(e) / temperature (above 1 / temperature), is finite in fp32.
MIN_TEMPERATURE = LOG2E / torch.finfo(torch.float32).max
# The largest whose 1 / temperature (below log2(e) / temperature, the other scale the kernels take) is a normal fp32
# number: 2**126. Past ~1e45 log2(e) / temperature is 0 in fp32 and every output nan; between, the scales are
# subnormal, which the GPU's flush-to-zero arithmetic may take as 0.
MAX_TEMPERATURE = 1.0 / torch.finfo(torch.float32).tiny
LN2 = tl.constexpr(0.6931471805599453)
# Below any log2 of a nonzero fp32 probability (>= -149): clamping there leaves p > 0 terms exact, makes p = 0 ones 0.
MIN_LOG2_P = tl.constexpr(-200.0)
TARGET_DTYPES = (torch.int64, torch.int32)
# The linear form's automatic chunk holds about this many bytes of logits (about 1000 rows of a 128K vocabulary).
AUTO_CHUNK_BYTES = 256 * 2**20
# One tuning op for both suites (logprobs, linear_logprobs): the kernels are shared.
TUNING_OP = "logprobs"
_tuning.register(
    TUNING_OP,
    fwd_block_v=(int, "forward kernel: vocabulary block (power of 2)"),
    fwd_warps=(int, "forward kernel: num_warps"),
    prefetch=(bool, "forward kernel: issue the next block's load before this block's math"),
    bwd_block_v=(int, "backward kernel: vocabulary block (power of 2)"),
    bwd_warps=(int, "backward kernel: num_warps"),
    linear_chunk_rows=(int, "linear_logprobs: rows per forward chunk when chunk_size is None"),
)


# ----------------------------------------------------------------------------------------------------------------
# Kernels
# ----------------------------------------------------------------------------------------------------------------
@triton.jit
def _logprobs_forward_kernel(
    logits_ptr, target_ptr, logprob_ptr, row_max_ptr, log2_sum_ptr, entropy_ptr, bad_target_flag_ptr,
    inner_rows, stride_outer, stride_inner, vocab_size, scale,
    COMPUTE_ENTROPY: tl.constexpr, PREFETCH: tl.constexpr, BLOCK_V: tl.constexpr, FLAG_BAD_TARGETS: tl.constexpr,
):
    """One program per row: logprob = log_softmax(x / T)[target], the row's normaliser, optionally the entropy.
    A target outside [0, V) gives a nan logprob, is never read, and with FLAG_BAD_TARGETS sets
    *bad_target_flag_ptr = 1 (for the host's error).

    Logits fp32/bf16/fp16, loaded and upcast, read once; fp32 math on s = (x - max) · log2(e)/T (exp2 units).
    Writes fp32 logprob, entropy, and for the backward the row max of x and log2 sum 2^s (lse = max + that / scale).
    """
    row = tl.program_id(0).to(tl.int64)
    # Rows are (outer, inner) pairs so that logits[:, :-1] and other non-collapsible slices need no copy.
    row_ptr = logits_ptr + (row // inner_rows) * stride_outer + (row % inner_rows) * stride_inner
    offsets = tl.arange(0, BLOCK_V)
    # Finite start so that rows opening with -inf logits give exp2(-inf) = 0, never exp2(-inf + inf) = nan.
    running_max = -3.4028234663852886e38
    min_shift = MIN_LOG2_P / scale  # clamp in x units before scaling: -FLT_MAX * scale would overflow to -inf
    sum_exp = tl.zeros([BLOCK_V], dtype=tl.float32)  # per lane: sum of 2^s, s = (x - running_max) * scale
    sum_exp_s = tl.zeros([BLOCK_V], dtype=tl.float32)  # per lane: sum of 2^s * s
    if PREFETCH:
        next_block = tl.load(row_ptr + offsets, mask=offsets < vocab_size, other=float("-inf"))
    for block_start in range(0, vocab_size, BLOCK_V):
        if PREFETCH:
            # Issue the next block's load before this block's math: two blocks in flight per program.
            block = next_block
            next_cols = block_start + BLOCK_V + offsets
            next_block = tl.load(row_ptr + next_cols, mask=next_cols < vocab_size, other=float("-inf"))
        else:
            cols = block_start + offsets
            block = tl.load(row_ptr + cols, mask=cols < vocab_size, other=float("-inf"))
        x = block.to(tl.float32)
        new_max = tl.maximum(running_max, tl.max(x, axis=0))
        # Subtract before scaling: x - max is exact near the max, so logits of 1e4 lose nothing to x * scale.
        shift = tl.maximum(running_max - new_max, min_shift) * scale
        rescale = tl.exp2(shift)
        s = (x - new_max) * scale
        p = tl.exp2(s)
        if COMPUTE_ENTROPY:
            # Re-centre on the new max: sum 2^(s + shift) (s + shift) = rescale * (sum 2^s s + shift sum 2^s).
            sum_exp_s = rescale * (sum_exp_s + shift * sum_exp) + p * tl.maximum(s, MIN_LOG2_P)
        sum_exp = sum_exp * rescale + p
        running_max = new_max

    total = tl.sum(sum_exp, axis=0)
    log2_sum = tl.log2(total)
    target = tl.load(target_ptr + row).to(tl.int64)
    target_ok = (target >= 0) & (target < vocab_size)
    if FLAG_BAD_TARGETS:  # for the host's error after the kernel; every writer writes 1, the race is harmless
        tl.store(bad_target_flag_ptr, 1, mask=(target < 0) | (target >= vocab_size))
    target_x = tl.load(row_ptr + target, mask=target_ok, other=0.0).to(tl.float32)
    logprob = ((target_x - running_max) * scale - log2_sum) * LN2
    # An out-of-range target (only reachable when the host check is skipped) gives nan, never a wrong number.
    tl.store(logprob_ptr + row, tl.where(target_ok, logprob, float("nan")))
    tl.store(row_max_ptr + row, running_max)
    tl.store(log2_sum_ptr + row, log2_sum)
    if COMPUTE_ENTROPY:
        # H = -sum p ln p with ln p = (s - log2_sum) ln2
        tl.store(entropy_ptr + row, (log2_sum - tl.sum(sum_exp_s, axis=0) / total) * LN2)


@triton.jit
def _logprobs_backward_kernel(
    logits_ptr, target_ptr, row_max_ptr, log2_sum_ptr, entropy_ptr, grad_logprob_ptr, grad_entropy_ptr,
    grad_logits_ptr, inner_rows, stride_outer, stride_inner, stride_grad_row, vocab_size, vocab_offset,
    full_vocab_size, scale, inv_temperature,
    HAS_LOGPROB_GRAD: tl.constexpr, HAS_ENTROPY_GRAD: tl.constexpr, BLOCK_V: tl.constexpr,
):
    """Program (row, block of V): d/d logits of grad_lp · logprob + grad_H · entropy from the saved normaliser.

    Logits fp32/bf16/fp16 upcast; p = 2^((x - max) · scale - log2_sum) and the gradient in fp32, stored in
    grad_logits' dtype. grad_logits may alias logits (each program reads its block before writing it); columns
    are offset by vocab_offset so that a slice of the vocabulary can be processed on its own. A target outside
    [0, full_vocab_size) (unchecked) makes its row's gradient nan whenever the logprob has a gradient.
    """
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_V + tl.arange(0, BLOCK_V)
    mask = cols < vocab_size
    row_ptr = logits_ptr + (row // inner_rows) * stride_outer + (row % inner_rows) * stride_inner
    x = tl.load(row_ptr + cols, mask=mask, other=float("-inf")).to(tl.float32)
    log2_p = (x - tl.load(row_max_ptr + row)) * scale - tl.load(log2_sum_ptr + row)
    p = tl.exp2(log2_p)
    grad = tl.zeros([BLOCK_V], dtype=tl.float32)
    if HAS_LOGPROB_GRAD:
        target = tl.load(target_ptr + row).to(tl.int64)
        target_ok = (target >= 0) & (target < full_vocab_size)
        grad += tl.load(grad_logprob_ptr + row) * (tl.where(cols == target - vocab_offset, 1.0, 0.0) - p)
        grad = tl.where(target_ok, grad, float("nan"))
    if HAS_ENTROPY_GRAD:
        # dH/dz_j = -p_j (ln p_j + H); the clamp makes p = 0 lanes (-inf logits) give 0, not 0 * -inf.
        entropy = tl.load(entropy_ptr + row)
        grad -= tl.load(grad_entropy_ptr + row) * p * (tl.maximum(log2_p, MIN_LOG2_P) * LN2 + entropy)
    grad_ptr = grad_logits_ptr + row * stride_grad_row + cols
    tl.store(grad_ptr, (grad * inv_temperature).to(grad_logits_ptr.dtype.element_ty), mask=mask)


# ----------------------------------------------------------------------------------------------------------------
# Launchers
# ----------------------------------------------------------------------------------------------------------------
# Every kernel launches through FastLaunch (greyhound/_launch.py): Triton's per-call argument binding runs once per
# launch key instead of on every call.
_run_logprobs_forward, _run_logprobs_backward = map(FastLaunch, (_logprobs_forward_kernel,
                                                                _logprobs_backward_kernel))


def _default_blocks(vocab_size):
    block_v = max(16, min(next_power_of_2(vocab_size), 2048))
    return block_v, max(1, min(4, block_v // 512))


def _tuned_blocks(vocab_size, prefix):
    """(BLOCK_V, num_warps) of the forward ("fwd_") or backward ("bwd_") kernel: the default, or what a tuning
    override forces (a forced block keeps the rule for its warps unless those are forced too)."""
    block_v = _tuning.get(TUNING_OP, prefix + "block_v", _default_blocks(vocab_size)[0])
    if block_v & (block_v - 1):
        raise ValueError(f"tuning: {TUNING_OP}.{prefix}block_v must be a power of 2, got {block_v}")
    return block_v, _tuning.get(TUNING_OP, prefix + "warps", max(1, min(4, block_v // 512)))


def _backward_config(vocab_size):
    """(BLOCK_V, num_warps): 2048-wide blocks for large V, 16 elements per thread (two 16-byte bf16 loads); on the
    H200 at V=128256 2048/4 measured 1.068 ms against 1.091 ms for 4096/8. Tunable (bwd_block_v, bwd_warps)."""
    return _tuned_blocks(vocab_size, "bwd_")


def _forward_config(vocab_size):
    """(BLOCK_V, num_warps, PREFETCH): the backward's blocks, with the next block's load issued early. On the H200
    at V=128256 2048/4 measured 0.504-0.515 ms, 4096/8 0.530-0.547, a persistent grid of 2048/4 programs
    (4 or 6 per SM) 0.59-0.75 ms. Tunable (fwd_block_v, fwd_warps, prefetch)."""
    return (*_tuned_blocks(vocab_size, "fwd_"), _tuning.get(TUNING_OP, "prefetch", True))


def _row_layout(logits):
    """(logits, inner_rows, stride_outer, stride_inner): row r starts at (r // inner) * s_outer + (r % inner) * s_inner.

    Leading dims are merged where their strides allow it; a last dim with stride != 1, or more than two leading
    dims that cannot be merged, costs a contiguous copy.
    """
    if logits.stride(-1) != 1:
        logits = logits.contiguous()
    dims = [(size, stride) for size, stride in zip(logits.shape[:-1], logits.stride()[:-1]) if size != 1]
    merged = []
    for size, stride in dims:
        if merged and merged[-1][1] == stride * size:
            merged[-1] = (merged[-1][0] * size, stride)
        else:
            merged.append((size, stride))
    if len(merged) > 2:
        logits = logits.contiguous()
        merged = [(logits.numel() // logits.shape[-1], logits.shape[-1])]
    if not merged:
        return logits, 1, 0, 0
    if len(merged) == 1:
        return logits, merged[0][0], 0, merged[0][1]
    (_, stride_outer), (inner_rows, stride_inner) = merged
    return logits, inner_rows, stride_outer, stride_inner


def _forward_outputs(n_rows, compute_entropy, device):
    """Flat fp32 (logprob, row_max, log2_sum, entropy or None): the outputs and the row normaliser."""
    outputs = [torch.empty(n_rows, dtype=torch.float32, device=device) for _ in range(4 if compute_entropy else 3)]
    return (*outputs[:3], outputs[3] if compute_entropy else None)


def _launch_forward(logits, target_flat, temperature, outputs, config=None, bad_target_flag=None):
    """Run the forward kernel on logits[..., V] (any strides) into `outputs` (see _forward_outputs); returns them.
    `bad_target_flag` (see _target_flag), if given, is set to 1 by a target outside [0, V)."""
    logits, inner_rows, stride_outer, stride_inner = _row_layout(logits)
    n_rows, vocab_size = target_flat.numel(), logits.shape[-1]
    logprob, row_max, log2_sum, entropy = outputs
    if n_rows == 0:
        return outputs
    block_v, num_warps, prefetch = config or _forward_config(vocab_size)
    _run_logprobs_forward[(n_rows,)](
        logits, target_flat, logprob, row_max, log2_sum, entropy,
        logprob if bad_target_flag is None else bad_target_flag,
        inner_rows, stride_outer, stride_inner, vocab_size, LOG2E / temperature,
        COMPUTE_ENTROPY=entropy is not None, PREFETCH=prefetch, BLOCK_V=block_v,
        FLAG_BAD_TARGETS=bad_target_flag is not None, num_warps=num_warps,
    )
    return outputs


def _launch_backward(logits, target_flat, row_max, log2_sum, entropy, grad_logprob, grad_entropy, temperature,
                     grad_logits=None, vocab_offset=0, config=None, full_vocab_size=None):
    """Gradient w.r.t. logits[..., V] in logits' dtype: a new contiguous tensor, or into `grad_logits`.

    grad_logits, if given, must be contiguous rows × V (it may be `logits` itself: the linear form's in-place use).
    `logits` may be the vocabulary slice [vocab_offset, vocab_offset + V) of `full_vocab_size` columns.
    """
    logits, inner_rows, stride_outer, stride_inner = _row_layout(logits)
    n_rows, vocab_size = target_flat.numel(), logits.shape[-1]
    if grad_logits is None:
        grad_logits = torch.empty(logits.shape, dtype=logits.dtype, device=logits.device)
    if n_rows == 0:
        return grad_logits
    block_v, num_warps = config or _backward_config(vocab_size)
    _run_logprobs_backward[(n_rows, cdiv(vocab_size, block_v))](
        logits, target_flat, row_max, log2_sum, entropy, grad_logprob, grad_entropy, grad_logits,
        inner_rows, stride_outer, stride_inner, vocab_size, vocab_size, vocab_offset,
        full_vocab_size or vocab_size, LOG2E / temperature, 1.0 / temperature,
        HAS_LOGPROB_GRAD=grad_logprob is not None, HAS_ENTROPY_GRAD=grad_entropy is not None,
        BLOCK_V=block_v, num_warps=num_warps,
    )
    return grad_logits


def _shaped_outputs(logprob, entropy, shape):
    """What the public functions return: logprob, or (logprob, entropy) when the entropy was computed."""
    return logprob.view(shape) if entropy is None else (logprob.view(shape), entropy.view(shape))


def _flat_grad(grad):
    """Upstream gradients arrive in any layout (sum().backward() gives a stride-0 expand); the kernel wants 1-D."""
    return None if grad is None else grad.reshape(-1).to(torch.float32).contiguous()


# ----------------------------------------------------------------------------------------------------------------
# Argument checks
# ----------------------------------------------------------------------------------------------------------------
def _check_temperature(temperature):
    if not is_real(temperature):
        raise TypeError(f"temperature must be a positive float, got {type(temperature).__name__}")
    if not (math.isfinite(as_float(temperature)) and temperature > 0):
        raise ValueError(f"temperature must be a positive finite float, got {temperature!r}")
    if temperature < MIN_TEMPERATURE:  # (the kernels' scale overflows to inf and every output is nan)
        raise ValueError(f"temperature must be >= {MIN_TEMPERATURE:.4g} (log2(e) / temperature must be finite in "
                         f"fp32), got {temperature!r}")
    if temperature > MAX_TEMPERATURE:  # (the kernels' scales underflow, to 0 past ~1e45: every output nan)
        raise ValueError(f"temperature must be <= {MAX_TEMPERATURE:.4g} (1 / temperature and log2(e) / temperature "
                         f"must be normal fp32 numbers), got {temperature!r}")
    return float(temperature)


def _check_target(target, expected_shape, like, like_name="the logits"):
    check_tensor("target", target, dtypes=TARGET_DTYPES, like=like)
    if tuple(target.shape) != tuple(expected_shape):
        raise ValueError(f"target must have shape {tuple(expected_shape)} (the leading dims of {like_name}), "
                         f"got {tuple(target.shape)}")


def _target_flag(target_flat, check_target=True):
    """A zeroed int32 [1] that the forward kernel sets to 1 on a target outside [0, V): one launch before the
    kernel, one host sync after it (the GPU never idles on the check). None with check_target=False."""
    if not check_target or target_flat.numel() == 0:
        return None
    if torch.compiler.is_compiling() or (target_flat.is_cuda and torch.cuda.is_current_stream_capturing()):
        return None  # cannot read a flag while tracing or capturing; the kernel writes nan for such rows
    return torch.zeros(1, dtype=torch.int32, device=target_flat.device)


def _raise_if_out_of_range(flag, target_flat, vocab_size):
    if flag is not None and bool(flag):
        bad = target_flat[(target_flat < 0) | (target_flat >= vocab_size)]
        raise ValueError(f"target must hold token ids in [0, {vocab_size}), got {bad.numel()} outside it "
                         f"(min {int(target_flat.min())}, max {int(target_flat.max())})")


# ----------------------------------------------------------------------------------------------------------------
# logprobs
# ----------------------------------------------------------------------------------------------------------------
# Registered ops (greyhound::logprobs_fwd / _bwd) with fake implementations and autograd, so that torch.compile
# keeps them in its graph (fullgraph=True). The target check runs inside the op, at run time, not while tracing.
@torch.library.custom_op("greyhound::logprobs_fwd", mutates_args=())
def _logprobs_fwd(logits: torch.Tensor, target_flat: torch.Tensor, temperature: float, return_entropy: bool,
                  check_target: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Flat fp32 (logprob, row_max, log2_sum, entropy; a 0-element entropy without return_entropy)."""
    out_of_range = _target_flag(target_flat, check_target)
    logprob, row_max, log2_sum, entropy = _launch_forward(
        logits, target_flat, temperature, _forward_outputs(target_flat.numel(), return_entropy, logits.device),
        bad_target_flag=out_of_range)
    _raise_if_out_of_range(out_of_range, target_flat, logits.shape[-1])
    return logprob, row_max, log2_sum, entropy if entropy is not None else logprob.new_empty(0)


@_logprobs_fwd.register_fake
def _logprobs_fwd_fake(logits, target_flat, temperature, return_entropy, check_target):
    n_rows = target_flat.numel()
    flat = [logits.new_empty(n_rows, dtype=torch.float32) for _ in range(3)]
    return (*flat, logits.new_empty(n_rows if return_entropy else 0, dtype=torch.float32))


@torch.library.custom_op("greyhound::logprobs_bwd", mutates_args=())
def _logprobs_bwd(logits: torch.Tensor, target_flat: torch.Tensor, row_max: torch.Tensor, log2_sum: torch.Tensor,
                  entropy: Optional[torch.Tensor], grad_logprob: Optional[torch.Tensor],
                  grad_entropy: Optional[torch.Tensor], temperature: float) -> torch.Tensor:
    return _launch_backward(logits, target_flat, row_max, log2_sum, entropy, grad_logprob, grad_entropy, temperature)


@_logprobs_bwd.register_fake
def _logprobs_bwd_fake(logits, target_flat, row_max, log2_sum, entropy, grad_logprob, grad_entropy, temperature):
    # contiguous, as _launch_backward allocates it: empty_like kept a transposed logits' strides, and inductor then
    # read the real gradient with the fake's strides (an assertion, or with size_asserts off a wrong gradient)
    return logits.new_empty(logits.shape)


def _logprobs_setup_context(ctx, inputs, output):
    logits, target_flat, temperature, return_entropy, _ = inputs
    logprob, row_max, log2_sum, entropy = output
    ctx.save_for_backward(logits, target_flat, row_max, log2_sum, entropy if return_entropy else None)
    ctx.temperature = temperature
    ctx.mark_non_differentiable(row_max, log2_sum)
    ctx.set_materialize_grads(False)


def _logprobs_backward(ctx, grad_logprob, _grad_row_max, _grad_log2_sum, grad_entropy, eager=False):
    logits, target_flat, row_max, log2_sum, entropy = ctx.saved_tensors
    if grad_logprob is None and grad_entropy is None:
        return None, None, None, None, None
    grad_entropy = _flat_grad(grad_entropy) if entropy is not None else None
    grad_logits = _library.run(_logprobs_bwd, eager, logits, target_flat, row_max, log2_sum, entropy,
                               _flat_grad(grad_logprob), grad_entropy, ctx.temperature)
    return grad_logits, None, None, None, None


_logprobs_fwd.register_autograd(_logprobs_backward, setup_context=_logprobs_setup_context)


_logprobs_eager = _library.twin(_logprobs_fwd, _logprobs_setup_context, _logprobs_backward)


def logprobs(logits, target, *, temperature=1.0, return_entropy=False, check_target=True):
    """log_softmax(logits / temperature)[target] per token, fp32 of target's shape (and the entropy if asked).

    logits: [..., V] fp32/bf16/fp16 on CUDA (any strides; math in fp32); target: integer [...] in [0, V).
    Differentiable w.r.t. logits: the gradient has logits' dtype. Extra memory in forward: the outputs only.
    Returns logprob, or (logprob, entropy) with return_entropy=True (entropy of softmax(logits / temperature)).
    check_target=True raises a ValueError naming `target` for an id outside [0, V) (the kernel flags it; one host
    sync per call, after the kernel; skipped while torch.compile traces or a CUDA graph is captured).
    check_target=False: no host sync; an out-of-range target gives NaN instead of an error (its logprob and, if
    the logprob has a gradient, its gradient row are nan; the entropy is unaffected); it is never read out of
    bounds.
    """
    check_tensor("logits", logits, dtypes=FLOAT_DTYPES)
    if logits.dim() == 0 or logits.shape[-1] == 0:
        raise ValueError(f"logits must have a non-empty last (vocabulary) dim, got shape {tuple(logits.shape)}")
    check_triton_device("logits", logits)
    _check_target(target, logits.shape[:-1], like=logits)
    temperature = _check_temperature(temperature)
    check_bool("return_entropy", return_entropy)
    check_bool("check_target", check_target)
    logprob, _, _, entropy = _library.call(_logprobs_fwd, _logprobs_eager, logits, target.reshape(-1).contiguous(),
                                           temperature, return_entropy, check_target)
    return _shaped_outputs(logprob, entropy if return_entropy else None, target.shape)


def logprobs_reference(logits, target, *, temperature=1.0, return_entropy=False, check_target=True):
    """Plain PyTorch: fp32 math for fp32/bf16/fp16 logits (fp64 stays fp64), the full log-softmax materialised."""
    log_probs = torch.log_softmax(logits.to(torch.promote_types(logits.dtype, torch.float32)) / temperature, dim=-1)
    logprob = log_probs.gather(-1, target.unsqueeze(-1).long()).squeeze(-1)
    if not return_entropy:
        return logprob
    probs = log_probs.exp()
    # p = 0 (-inf logits) contributes 0 to the entropy and to its gradient, not 0 * -inf.
    return logprob, -(probs * log_probs.masked_fill(probs == 0, 0.0)).sum(-1)


# ----------------------------------------------------------------------------------------------------------------
# linear_logprobs
# ----------------------------------------------------------------------------------------------------------------
def _auto_chunk_rows(n_rows, vocab_size, element_size):
    rows = AUTO_CHUNK_BYTES // max(1, vocab_size * element_size)
    return max(1, min(n_rows, max(16, rows // 16 * 16)))


def _vocab_slice(chunk_rows, n_rows, vocab_size):
    """Backward slice width holding as many logits as a forward chunk (chunk_rows × V), rounded to 128 columns."""
    width = chunk_rows * vocab_size // max(1, n_rows)
    if width >= 128:
        width = width // 128 * 128
    return max(1, min(vocab_size, width))


def _linear_logits(hidden_2d, weight, bias):
    return hidden_2d @ weight.t() if bias is None else torch.addmm(bias, hidden_2d, weight.t())


# Registered ops (greyhound::linear_logprobs_fwd / _bwd), as for logprobs: torch.compile keeps them in its graph.
@torch.library.custom_op("greyhound::linear_logprobs_fwd", mutates_args=())
def _linear_logprobs_fwd(hidden_2d: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                         target_flat: torch.Tensor, temperature: float, return_entropy: bool, chunk_rows: int,
                         check_target: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Flat fp32 (logprob, row_max, log2_sum, entropy; a 0-element entropy without return_entropy), `chunk_rows`
    rows of logits at a time."""
    n_rows, vocab_size = hidden_2d.shape[0], weight.shape[0]
    out_of_range = _target_flag(target_flat, check_target)
    outputs = _forward_outputs(n_rows, return_entropy, hidden_2d.device)
    for start in range(0, n_rows, chunk_rows):
        rows = slice(start, min(n_rows, start + chunk_rows))
        _launch_forward(_linear_logits(hidden_2d[rows], weight, bias), target_flat[rows], temperature,
                        tuple(None if out is None else out[rows] for out in outputs), bad_target_flag=out_of_range)
    _raise_if_out_of_range(out_of_range, target_flat, vocab_size)
    logprob, row_max, log2_sum, entropy = outputs
    return logprob, row_max, log2_sum, entropy if entropy is not None else logprob.new_empty(0)


@_linear_logprobs_fwd.register_fake
def _linear_logprobs_fwd_fake(hidden_2d, weight, bias, target_flat, temperature, return_entropy, chunk_rows,
                              check_target):
    n_rows = target_flat.numel()
    flat = [hidden_2d.new_empty(n_rows, dtype=torch.float32) for _ in range(3)]
    return (*flat, hidden_2d.new_empty(n_rows if return_entropy else 0, dtype=torch.float32))


@torch.library.custom_op("greyhound::linear_logprobs_bwd", mutates_args=())
def _linear_logprobs_bwd(hidden_2d: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                         target_flat: torch.Tensor, row_max: torch.Tensor, log2_sum: torch.Tensor,
                         entropy: Optional[torch.Tensor], grad_logprob: Optional[torch.Tensor],
                         grad_entropy: Optional[torch.Tensor], temperature: float, chunk_rows: int,
                         needs_grad: list[bool]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(grad_hidden_2d, grad_weight, grad_bias), a 0-element tensor where `needs_grad` says none: the vocabulary
    walked in slices, each slice's logits recomputed and overwritten by their gradient."""
    needs_hidden, needs_weight, needs_bias = needs_grad
    n_rows, vocab_size = hidden_2d.shape[0], weight.shape[0]
    grad_hidden = None
    if needs_hidden:
        grad_hidden = torch.zeros(hidden_2d.shape, dtype=torch.float32, device=hidden_2d.device)
    # Contiguous, so that each vocabulary slice of grad_weight is a contiguous GEMM output.
    grad_weight = torch.empty(weight.shape, dtype=weight.dtype, device=weight.device) if needs_weight else None
    grad_bias = torch.empty(bias.shape, dtype=bias.dtype, device=bias.device) if needs_bias else None
    width = _vocab_slice(chunk_rows, n_rows, vocab_size)
    for start in range(0, vocab_size, width):
        end = min(vocab_size, start + width)
        weight_slice = weight[start:end]
        logits = _linear_logits(hidden_2d, weight_slice, None if bias is None else bias[start:end])
        # The slice's gradient needs only the saved row normaliser, so it overwrites the logits slice in place.
        grad_logits = _launch_backward(logits, target_flat, row_max, log2_sum, entropy, grad_logprob,
                                       grad_entropy, temperature, grad_logits=logits, vocab_offset=start,
                                       full_vocab_size=vocab_size)
        if needs_hidden:
            _addmm_into_fp32_(grad_hidden, grad_logits, weight_slice)
        if needs_weight:
            torch.mm(grad_logits.t(), hidden_2d, out=grad_weight[start:end])
        if needs_bias:
            grad_bias[start:end] = grad_logits.sum(0, dtype=torch.float32)
    if needs_hidden:
        grad_hidden = grad_hidden.to(hidden_2d.dtype)
    # Outputs must not alias each other: a fresh 0-element tensor for each gradient not asked for.
    return tuple(grad if need else hidden_2d.new_empty(0)
                 for grad, need in zip((grad_hidden, grad_weight, grad_bias), needs_grad))


@_linear_logprobs_bwd.register_fake
def _linear_logprobs_bwd_fake(hidden_2d, weight, bias, target_flat, row_max, log2_sum, entropy, grad_logprob,
                              grad_entropy, temperature, chunk_rows, needs_grad):
    likes = (hidden_2d, weight, bias)
    return tuple(torch.empty(like.shape, dtype=like.dtype, device=like.device) if need else hidden_2d.new_empty(0)
                 for need, like in zip(needs_grad, likes))


def _linear_logprobs_setup_context(ctx, inputs, output):
    hidden_2d, weight, bias, target_flat, temperature, return_entropy, chunk_rows, _ = inputs
    _, row_max, log2_sum, entropy = output
    ctx.save_for_backward(hidden_2d, weight, bias, target_flat, row_max, log2_sum,
                          entropy if return_entropy else None)
    ctx.temperature, ctx.chunk_rows = temperature, chunk_rows
    ctx.mark_non_differentiable(row_max, log2_sum)
    ctx.set_materialize_grads(False)


def _linear_logprobs_backward(ctx, grad_logprob, _grad_row_max, _grad_log2_sum, grad_entropy, eager=False):
    hidden_2d, weight, bias, target_flat, row_max, log2_sum, entropy = ctx.saved_tensors
    needs = [ctx.needs_input_grad[0], ctx.needs_input_grad[1], ctx.needs_input_grad[2] and bias is not None]
    if (grad_logprob is None and grad_entropy is None) or not any(needs):
        return None, None, None, None, None, None, None, None
    grad_entropy = _flat_grad(grad_entropy) if entropy is not None else None
    grads = _library.run(_linear_logprobs_bwd, eager, hidden_2d, weight, bias, target_flat, row_max, log2_sum,
                         entropy, _flat_grad(grad_logprob), grad_entropy, ctx.temperature, ctx.chunk_rows, needs)
    grad_hidden, grad_weight, grad_bias = (g if need else None for g, need in zip(grads, needs))
    return grad_hidden, grad_weight, grad_bias, None, None, None, None, None


_linear_logprobs_fwd.register_autograd(_linear_logprobs_backward, setup_context=_linear_logprobs_setup_context)


_linear_logprobs_eager = _library.twin(_linear_logprobs_fwd, _linear_logprobs_setup_context,
                                       _linear_logprobs_backward)


def linear_logprobs(hidden, weight, target, bias=None, *, temperature=1.0, return_entropy=False, chunk_size=None,
                    check_target=True):
    """logprobs(hidden @ weight.T + bias, target) without holding the full logits: `chunk_size` rows at a time.

    hidden [..., H], weight [V, H], bias [V] of one dtype (fp32/bf16/fp16); logits chunks in that dtype by torch
    matmul, then the logprobs kernel (fp32 math). grad_hidden is accumulated in fp32 over vocabulary slices.
    chunk_size: rows per forward chunk (default: about 256 MiB of logits); the backward's vocabulary slices hold
    as many logits. Returns fp32 logprob of target's shape, or (logprob, entropy) with return_entropy=True.
    check_target as in `logprobs` (check_target=False: no host sync; an out-of-range target gives NaN instead of an
    error: its logprob, its row of grad_hidden, and the grad_weight / grad_bias sums over it are nan).
    """
    check_tensor("hidden", hidden, dtypes=FLOAT_DTYPES)
    if hidden.dim() == 0:
        raise ValueError("hidden must have a last (hidden-size) dim, got a 0-D tensor")
    check_triton_device("hidden", hidden)
    check_tensor("weight", weight, dtypes=(hidden.dtype,), ndim=2, like=hidden)
    if weight.shape[1] != hidden.shape[-1] or weight.shape[0] == 0:
        raise ValueError(f"weight must have shape [V, {hidden.shape[-1]}] with V >= 1 (hidden's last dim is "
                         f"{hidden.shape[-1]}), got {tuple(weight.shape)}")
    if bias is not None:
        check_tensor("bias", bias, dtypes=(hidden.dtype,), ndim=1, like=hidden)
        if bias.shape[0] != weight.shape[0]:
            raise ValueError(f"bias must have shape [{weight.shape[0]}] (weight's V), got {tuple(bias.shape)}")
    _check_target(target, hidden.shape[:-1], like=hidden, like_name="hidden")
    temperature = _check_temperature(temperature)
    check_bool("return_entropy", return_entropy)
    check_bool("check_target", check_target)
    n_rows = target.numel()
    if chunk_size is None:
        chunk_size = _tuning.get(TUNING_OP, "linear_chunk_rows",
                                 _auto_chunk_rows(n_rows, weight.shape[0], hidden.element_size()))
    elif not is_int(chunk_size) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int or None, got {chunk_size!r}")
    chunk_size = int(chunk_size)
    logprob, _, _, entropy = _library.call(
        _linear_logprobs_fwd, _linear_logprobs_eager, hidden.reshape(n_rows, hidden.shape[-1]), weight, bias,
        target.reshape(-1).contiguous(), temperature, return_entropy, max(1, min(chunk_size, n_rows)), check_target)
    return _shaped_outputs(logprob, entropy if return_entropy else None, target.shape)


def linear_logprobs_reference(hidden, weight, target, bias=None, *, temperature=1.0, return_entropy=False,
                              check_target=True):
    """Plain PyTorch: the full logits in hidden's dtype (as a model's lm head gives them), then logprobs_reference."""
    logits = hidden @ weight.t()
    if bias is not None:
        logits = logits + bias
    return logprobs_reference(logits, target, temperature=temperature, return_entropy=return_entropy)
