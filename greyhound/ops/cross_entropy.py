"""Cross-entropy over a large vocabulary with the gradient written during the forward pass.

`cross_entropy_with_grad(logits, target)` matches `F.cross_entropy(logits.float(), target, ...)` and adds a tanh
soft-cap and a z-loss. A loss kernel (one program per row) finds each row's log-sum-exp online; when a gradient is
needed, an elementwise kernel then writes d loss / d logits from the row's max and log2 of its sum of exp (not from
the lse, whose rounding would go into every probability at large logits), so `backward` only rescales the saved
gradient, on the device, and does nothing for `loss.backward()`. On Hopper, when the rows in flight fit in L2, one
Gluon kernel does both (greyhound/ops/_ce_gluon.py): each persistent program streams its row through shared memory
twice, the second sweep from L2, so HBM sees the logits once (docs/perf/cross_entropy.md, session 14).
"""
import functools
from typing import NamedTuple, Optional

import torch
import triton
import triton.language as tl

from greyhound import _library, _tuning
from greyhound._launch import FastLaunch, cdiv, multiprocessor_count, next_power_of_2
from greyhound.ops import _ce_gluon
from greyhound.ops._ce_gluon import TANH_SERIES, TANH_SERIES_BOUND
from greyhound._validate import (FLOAT_DTYPES, check_bool, check_choice, check_tensor, check_triton_device, is_int,
                                 is_real)

__all__ = ["CrossEntropyOutput", "cross_entropy_with_grad", "cross_entropy_reference"]

TARGET_DTYPES = (torch.int64, torch.int32)
REDUCTIONS = ("mean", "sum", "none")
LOG2E = tl.constexpr(1.4426950408889634)
FP32_MAX, FP32_NORMAL_MIN = torch.finfo(torch.float32).max, torch.finfo(torch.float32).tiny
TUNING_OP = "cross_entropy_with_grad"
_tuning.register(
    TUNING_OP,
    loss_block_v=(int, "loss kernel: vocabulary block (power of 2)"),
    loss_warps=(int, "loss kernel: num_warps"),
    prefetch=(bool, "loss kernel: issue the next block's load before this block's math"),
    grad_block_v=(int, "gradient kernel: vocabulary block (power of 2; num_warps = block / 512, at most 8)"),
    one_pass=(bool, "with a gradient on compute capability 9.x: the one-pass Gluon kernel (else loss + gradient "
                    "kernels)"),
    one_pass_tile_rows=(int, "one-pass kernel: tile = tile_rows x 256 x num_warps entries (power of 2, <= 16)"),
    one_pass_warps=(int, "one-pass kernel: num_warps (4, 8, 16 or 32)"),
    one_pass_stages=(int, "one-pass kernel: tiles in the shared-memory ring (>= 2)"),
    one_pass_programs=(int, "one-pass kernel: persistent programs (default: one per SM)"),
    one_pass_split=(int, "one-pass kernel: programs sharing a row (power of 2; they exchange partials)"),
    one_pass_policy=(int, "one-pass kernel: L2 eviction hints, bits 1 sweep-1 loads evict_last, 2 sweep-2 loads "
                          "evict_first, 4 gradient stores evict_first (default 7; 8 means none; Triton 3.6 drops "
                          "the two load hints)"),
    one_pass_reuse=(bool, "one-pass kernel: sweep 2 takes each row's last tile from the ring slot sweep 1 left it in "
                          "(else it loads it again)"),
    one_pass_hold=(bool, "one-pass kernel: hold each row on chip (one tile in registers, the rest in the ring) and "
                         "read it from HBM once, where the row fits; picks its own ring depth, and its tile unless "
                         "one_pass_tile_rows is given (default: on where the row is longer than one ring tile)"),
    one_pass_held_tiles=(int, "one-pass kernel, holding rows: the row's first tiles kept in registers (1 to 3, at "
                              "most the ring's depth; each one past the first frees a ring slot for the next row's "
                              "tiles; default 2, 1 for 16-bit logits with a soft-cap)"),
)


# ----------------------------------------------------------------------------------------------------------------
# Kernels
# ----------------------------------------------------------------------------------------------------------------
@triton.jit
def _tanh(x):
    # exp2 form rather than libdevice (the Triton interpreter, how CI checks kernels, has none), and below its bound
    # the odd Taylor series _ce_gluon.TANH_SERIES, where the exp2 form cancels (a large soft-cap)
    x2 = x * x
    series = x2 * TANH_SERIES[5] + TANH_SERIES[4]
    for k in tl.static_range(4):
        series = series * x2 + TANH_SERIES[3 - k]
    return tl.where(tl.abs(x) < TANH_SERIES_BOUND, x * series,
                    1.0 - 2.0 / (1.0 + tl.exp2(x * 2.8853900817779268)))  # 2 * log2(e)


@triton.jit
def _online_lse_step(z, mask, row_max, sum_exp, sum_z, softcap, HAS_SOFTCAP: tl.constexpr,
                     HAS_SMOOTHING: tl.constexpr):
    """Folds one block of fp32 logits z (masked lanes -inf) into a row's running max, per-lane sums of exp and, for
    label smoothing, per-lane sums of the logits; the soft-cap is applied first. Returns the three updated.
    (chunked_linear_cross_entropy's vocab schedule; the loss kernel takes _centred_lse_step, whose smoothing sum
    cannot overflow where the logits' own sum does.)"""
    if HAS_SOFTCAP:
        z = tl.where(mask, softcap * _tanh(z / softcap), float("-inf"))
    new_max = tl.maximum(row_max, tl.max(z, axis=0))
    # clamped so that -FLT_MAX - max never overflows; exp2 of it is 0 either way
    rescale = tl.exp2(tl.maximum(row_max - new_max, -1000.0) * LOG2E)
    sum_exp = sum_exp * rescale + tl.exp2((z - new_max) * LOG2E)
    if HAS_SMOOTHING:
        sum_z += tl.where(mask, z, 0.0)
    return new_max, sum_exp, sum_z


@triton.jit
def _centred_lse_step(z, mask, row_max, sum_exp, sum_d, d_shift, n_before, softcap, HAS_SOFTCAP: tl.constexpr,
                      HAS_SMOOTHING: tl.constexpr):
    """_online_lse_step for the loss kernel: the same running max and per-lane sums of exp; for label smoothing,
    instead of the logits' sum, S = sum_j (z_j - row_max) kept as per-lane sums of z - (the max when z was folded)
    plus a scalar d_shift that moves them to the current max (n_before, the entries folded before this block, times
    the max's move). Returns the four updated.

    Why: the smoothing term is mean_j (lse - z_j) = log(sum) - S / V, and sum_j z_j overflows fp32 where the logits
    are large (two of 3e38: -inf loss) although every z_j - row_max is finite. Every term of S (each z - max, each
    move) is <= 0, so no partial sum is larger than S itself, and near the max each z - max is exact (Sterbenz). The
    move goes into one scalar rather than every lane: one scalar FMA a block (every earlier block was full)."""
    if HAS_SOFTCAP:
        z = tl.where(mask, softcap * _tanh(z / softcap), float("-inf"))
    new_max = tl.maximum(row_max, tl.max(z, axis=0))
    moved = row_max - new_max
    # clamped so that -FLT_MAX - max never overflows; exp2 of it is 0 either way
    rescale = tl.exp2(tl.maximum(moved, -1000.0) * LOG2E)
    d = z - new_max  # (exact near the max: the exponent below loses nothing to a large max)
    sum_exp = sum_exp * rescale + tl.exp2(d * LOG2E)
    if HAS_SMOOTHING:
        sum_d += tl.where(mask, d, 0.0)
        # clamped at -FLT_MAX: the first block's move from the -FLT_MAX start overflows to -inf (0 * -inf = nan)
        d_shift += n_before * tl.maximum(moved, -3.4028234663852886e38)  # (n_before an int: the product fp32)
    return new_max, sum_exp, sum_d, d_shift


@triton.jit
def _cross_entropy_kernel(
    logits_ptr, logits_row_stride, target_ptr, per_token_loss_ptr, lse_ptr, row_max_ptr, log2_sum_ptr,
    bad_target_flag_ptr, V, ignore_index, label_smoothing, softcap, lse_square_scale,
    BLOCK_V: tl.constexpr, HAS_SOFTCAP: tl.constexpr, HAS_SMOOTHING: tl.constexpr, HAS_Z_LOSS: tl.constexpr,
    FLAG_BAD_TARGETS: tl.constexpr, PREFETCH: tl.constexpr, STORE_STATS: tl.constexpr,
):
    """One program per row: per-token loss and lse. A target outside [0, V) that is not ignore_index gives a nan
    loss and lse, is never read, and with FLAG_BAD_TARGETS sets *bad_target_flag_ptr = 1 (for the host's error).
    With STORE_STATS, also the row's max and log2 of its sum of exp (nan for such a target) for the gradient kernel.

    Reads fp32/bf16/fp16 logits once, computes every value in fp32, stores the loss and lse in fp32.
    """
    row = tl.program_id(0).to(tl.int64)
    logits_row = logits_ptr + row * logits_row_stride
    cols = tl.arange(0, BLOCK_V)

    # a block max (one cross-warp reduction per block), per-lane sums of exp until the row ends
    row_max = -3.4028234663852886e38  # finite: a row opening with -inf logits gives exp2(-inf) = 0, not nan
    sum_exp = tl.zeros([BLOCK_V], dtype=tl.float32)
    sum_d = tl.zeros([BLOCK_V], dtype=tl.float32)  # label smoothing: see _centred_lse_step
    d_shift = 0.0
    if PREFETCH:  # the next block's load is in flight while this one is reduced: twice the bytes in flight
        next_block = tl.load(logits_row + cols, mask=cols < V, other=float("-inf"), eviction_policy="evict_first")
    for start in range(0, V, BLOCK_V):
        offsets = start + cols
        mask = offsets < V
        if PREFETCH:
            z = next_block.to(tl.float32)
            next_block = tl.load(logits_row + BLOCK_V + offsets, mask=BLOCK_V + offsets < V, other=float("-inf"),
                                 eviction_policy="evict_first")
        else:
            z = tl.load(logits_row + offsets, mask=mask, other=float("-inf"),
                        eviction_policy="evict_first").to(tl.float32)
        row_max, sum_exp, sum_d, d_shift = _centred_lse_step(z, mask, row_max, sum_exp, sum_d, d_shift, start,
                                                             softcap, HAS_SOFTCAP, HAS_SMOOTHING)
    row_sum = tl.sum(sum_exp, axis=0)
    log_sum = tl.log(row_sum)
    lse = row_max + log_sum  # nan for a row holding +inf (inf - inf): so are its loss

    target = tl.load(target_ptr + row).to(tl.int64)
    is_valid = target != ignore_index
    in_range = (target >= 0) & (target < V)
    is_bad = is_valid & ((target < 0) | (target >= V))
    if FLAG_BAD_TARGETS:
        tl.store(bad_target_flag_ptr, 1, mask=is_bad)  # every writer writes 1: the race is harmless
    z_target = tl.load(logits_row + tl.where(in_range, target, 0), mask=is_valid & in_range,
                       other=0.0).to(tl.float32)
    if HAS_SOFTCAP:
        z_target = softcap * _tanh(z_target / softcap)
    # lse - (1 - eps) z_target - eps mean_j z_j, with lse = row_max + log_sum: the large parts cancel exactly first
    # (row_max - z_target), so the loss does not carry lse's rounding (an ulp of a max logit of 1e4 is 1e-3)
    loss = (1.0 - label_smoothing) * (row_max - z_target) + log_sum
    if HAS_SMOOTHING:
        loss -= label_smoothing * ((tl.sum(sum_d, axis=0) + d_shift) / V)  # eps (row_max - mean_j z_j)
    if HAS_Z_LOSS:
        loss += lse_square_scale * lse * lse
    tl.store(per_token_loss_ptr + row, tl.where(is_bad, float("nan"), tl.where(is_valid, loss, 0.0)))
    # a row holding +inf: its loss nan as F.cross_entropy's, its lse +inf as torch.logsumexp's
    tl.store(lse_ptr + row, tl.where(is_bad, float("nan"), tl.where(row_max == float("inf"), row_max, lse)))
    if STORE_STATS:
        # the gradient's p_j = exp2((z_j - row_max) log2(e) - log2_sum), not exp2((z_j - lse) log2(e)): lse's own
        # rounding would go into every p_j (5.6e-5 relative at logits + 1e4). nan for a bad target: so is its
        # gradient (a row holding +inf: its sum, so log2_sum, is nan already)
        tl.store(row_max_ptr + row, row_max)
        tl.store(log2_sum_ptr + row, tl.where(is_bad, float("nan"), tl.log2(row_sum)))


@triton.jit
def _gradient_block(logits_ptr, logits_row_stride, grad_ptr, grad_row_stride, target_ptr, grad_scale_ptr,
                    grad_scale_stride, row, shift, log2_sum, lse, V, ignore_index, label_smoothing, softcap,
                    lse_square_scale, col0, n_cols, BLOCK_V: tl.constexpr, HAS_SOFTCAP: tl.constexpr,
                    HAS_Z_LOSS: tl.constexpr):
    """The gradient kernels' work on block tl.program_id(1) of `row`, with p_j = exp2((z_j - shift) log2(e) -
    log2_sum) and `lse` (the z-loss coefficient's; +inf taken as nan)."""
    offsets = tl.program_id(1) * BLOCK_V + tl.arange(0, BLOCK_V)
    mask = offsets < n_cols
    target = tl.load(target_ptr + row).to(tl.int64)
    is_valid = target != ignore_index
    # d loss / d z_j = p_j (1 + 2 s lse) - (1 - eps) [j = target] - eps / V, all times the row's scale
    row_scale = tl.where(is_valid, tl.load(grad_scale_ptr + row * grad_scale_stride).to(tl.float32), 0.0)
    softmax_coef = row_scale
    if HAS_Z_LOSS:
        lse = tl.where(lse == float("inf"), float("nan"), lse)  # a row holding +inf: nan, as F.cross_entropy's
        softmax_coef = row_scale * (1.0 + 2.0 * lse_square_scale * lse)
    target_coef = row_scale * (1.0 - label_smoothing)
    uniform = row_scale * label_smoothing / V

    x = tl.load(logits_ptr + row * logits_row_stride + offsets, mask=mask, other=0.0).to(tl.float32)
    z = x
    if HAS_SOFTCAP:
        capped = _tanh(x / softcap)
        z = softcap * capped
    grad = tl.exp2((z - shift) * LOG2E - log2_sum) * softmax_coef - uniform
    grad -= tl.where(offsets + col0 == target, target_coef, 0.0)
    if HAS_SOFTCAP:
        grad *= 1.0 - capped * capped
    tl.store(grad_ptr + row * grad_row_stride + offsets, grad.to(grad_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _row_gradient_kernel(
    logits_ptr, logits_row_stride, grad_ptr, grad_row_stride, target_ptr, lse_ptr, row_max_ptr, log2_sum_ptr,
    grad_scale_ptr, grad_scale_stride, V, ignore_index, label_smoothing, softcap, lse_square_scale,
    BLOCK_V: tl.constexpr, HAS_SOFTCAP: tl.constexpr, HAS_Z_LOSS: tl.constexpr,
):
    """Program (row, block of columns): grad_scale[row] * d loss_row / d logits_row (grad_scale_stride 0: one scale
    for every row) from the row's max and log2 of its sum of exp (saved by the loss kernel, STORE_STATS), with
    p_j = exp2((z_j - row_max) log2(e) - log2_sum): z_j - row_max is exact near the max, so the largest
    probabilities keep fp32 accuracy at any logit size (exp2((z_j - lse) log2(e)) carried lse's rounding, an ulp of
    the max logit, into every one). 0 for an ignored row; nan for an out-of-range target (its log2_sum is nan) and
    for a row holding +inf (so is its sum of exp). lse is read for the z-loss only.

    Reads fp32/bf16/fp16 logits, computes in fp32, stores in the gradient tensor's dtype. grad_ptr may equal
    logits_ptr: each program reads its block before writing it.
    """
    row = tl.program_id(0).to(tl.int64)
    lse = 0.0
    if HAS_Z_LOSS:
        lse = tl.load(lse_ptr + row)
    _gradient_block(logits_ptr, logits_row_stride, grad_ptr, grad_row_stride, target_ptr, grad_scale_ptr,
                    grad_scale_stride, row, tl.load(row_max_ptr + row), tl.load(log2_sum_ptr + row), lse, V,
                    ignore_index, label_smoothing, softcap, lse_square_scale, 0, V, BLOCK_V, HAS_SOFTCAP, HAS_Z_LOSS)


@triton.jit
def _gradient_kernel(
    logits_ptr, logits_row_stride, grad_ptr, grad_row_stride, target_ptr, lse_ptr, grad_scale_ptr, grad_scale_stride,
    V, ignore_index, label_smoothing, softcap, lse_square_scale, col0, n_cols,
    BLOCK_V: tl.constexpr, HAS_SOFTCAP: tl.constexpr, HAS_Z_LOSS: tl.constexpr,
):
    """Program (row, block of columns): grad_scale[row] * d loss_row / d logits_row from the row's lse alone
    (grad_scale_stride 0: one scale for every row); 0 for an ignored row, nan for an out-of-range target (its lse
    is nan). The logits and gradient rows hold the `n_cols` vocabulary entries [col0, col0 + n_cols) of V: a
    vocabulary chunk of chunked_linear_cross_entropy's vocab schedule, which keeps only the lse. p_j =
    exp2((z_j - lse) log2(e)) carries lse's rounding (an ulp of the max logit) into every p_j; where the row's max
    and sum are at hand, _row_gradient_kernel avoids that.

    Reads fp32/bf16/fp16 logits, computes in fp32, stores in the gradient tensor's dtype. grad_ptr may equal
    logits_ptr: each program reads its block before writing it.
    """
    row = tl.program_id(0).to(tl.int64)
    lse = tl.load(lse_ptr + row)  # nan for an out-of-range target: so is every p_j
    lse = tl.where(lse == float("inf"), float("nan"), lse)  # a row holding +inf: nan, as F.cross_entropy's gradient
    _gradient_block(logits_ptr, logits_row_stride, grad_ptr, grad_row_stride, target_ptr, grad_scale_ptr,
                    grad_scale_stride, row, lse, 0.0, lse, V, ignore_index, label_smoothing, softcap,
                    lse_square_scale, col0, n_cols, BLOCK_V, HAS_SOFTCAP, HAS_Z_LOSS)


@triton.jit
def _scale_rows_kernel(grad_ptr, grad_row_stride, scale_ptr, scale_stride, n_rows, V,
                       PER_ROW_SCALE: tl.constexpr, BLOCK_V: tl.constexpr):
    """grad[row, :] *= scale (one scalar, or scale[row * scale_stride] with PER_ROW_SCALE) in place, over a
    persistent grid of (row, block) tiles. Rows whose scale is exactly 1 are neither read nor written: for
    loss.backward() (grad_output 1) the launch does nothing, and no host sync was needed to know it.

    Reads the gradient in its own dtype (fp32/bf16/fp16) and the scale in any float dtype, multiplies in fp32 and
    stores back in the gradient's dtype.
    """
    num_blocks = tl.cdiv(V, BLOCK_V)
    cols = tl.arange(0, BLOCK_V)
    scale = tl.load(scale_ptr).to(tl.float32)
    if PER_ROW_SCALE:
        for tile in range(tl.program_id(0), n_rows * num_blocks, tl.num_programs(0)):
            row = tl.cast(tile // num_blocks, tl.int64)
            row_scale = tl.load(scale_ptr + row * scale_stride).to(tl.float32)
            if row_scale != 1.0:
                offsets = (tile % num_blocks) * BLOCK_V + cols
                mask = offsets < V
                grad_row = grad_ptr + row * grad_row_stride
                grad = tl.load(grad_row + offsets, mask=mask, other=0.0).to(tl.float32)
                tl.store(grad_row + offsets, (grad * row_scale).to(grad_ptr.dtype.element_ty), mask=mask)
    elif scale != 1.0:
        for tile in range(tl.program_id(0), n_rows * num_blocks, tl.num_programs(0)):
            row = tl.cast(tile // num_blocks, tl.int64)
            offsets = (tile % num_blocks) * BLOCK_V + cols
            mask = offsets < V
            grad_row = grad_ptr + row * grad_row_stride
            grad = tl.load(grad_row + offsets, mask=mask, other=0.0).to(tl.float32)
            tl.store(grad_row + offsets, (grad * scale).to(grad_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _target_stats_kernel(target_ptr, stats_ptr, n, V, ignore_index, ATOMIC: tl.constexpr, CHUNK: tl.constexpr,
                         BLOCK: tl.constexpr):
    """Over CHUNK targets a program: stats[0] = how many are not ignore_index (int64), stats[1] = 1 when one of those
    is outside [0, V), else 0. One program stores them; with ATOMIC several add into a zeroed stats."""
    start = tl.program_id(0).to(tl.int64) * CHUNK  # (int64: start + CHUNK may pass 2**31 - 1)
    end = tl.minimum(start + CHUNK, n)
    kept_count = tl.zeros([BLOCK], dtype=tl.int64)
    bad = tl.zeros([BLOCK], dtype=tl.int64)
    for first in range(start, end, BLOCK):
        offs = first + tl.arange(0, BLOCK)
        t = tl.load(target_ptr + offs, mask=offs < end, other=0).to(tl.int64)
        kept = (offs < end) & (t != ignore_index)
        kept_count += kept.to(tl.int64)
        bad = tl.maximum(bad, (kept & ((t < 0) | (t >= V))).to(tl.int64))
    if ATOMIC:
        tl.atomic_add(stats_ptr, tl.sum(kept_count, axis=0))
        tl.atomic_max(stats_ptr + 1, tl.max(bad, axis=0))
    else:
        tl.store(stats_ptr, tl.sum(kept_count, axis=0))
        tl.store(stats_ptr + 1, tl.max(bad, axis=0))


# ----------------------------------------------------------------------------------------------------------------
# Launchers
# ----------------------------------------------------------------------------------------------------------------
# Every kernel launches through FastLaunch (greyhound/_launch.py): Triton's per-call argument binding runs once per
# launch key instead of on every call.
_run_cross_entropy, _run_gradient, _run_row_gradient, _run_scale_rows, _run_target_stats = map(
    FastLaunch, (_cross_entropy_kernel, _gradient_kernel, _row_gradient_kernel, _scale_rows_kernel,
                 _target_stats_kernel))


class _Config(NamedTuple):
    block_v: int  # loss kernel
    num_warps: int  # loss kernel
    prefetch: bool  # loss kernel: next block's load issued before this block's math
    gradient_block_v: int = 2048  # gradient kernel (num_warps = block / 512)


class _OnePassConfig(NamedTuple):
    enabled: Optional[bool]  # None: when the rows in flight fit in L2 (see _one_pass)
    tile_rows: int
    num_warps: int
    stages: int
    programs: Optional[int]  # None: one per SM
    policy: int  # L2 eviction hints (see the tunable)
    split: int  # programs sharing a row
    reuse_last: bool  # sweep 2 takes the row's last tile from sweep 1's ring slot
    hold: int = 0  # the row held on chip, read once: its tiles held in registers (tile_rows and stages then from
    # _ce_gluon.held_geometry); 0: the ring


def _one_pass_config(V: int, element_size: int, softcap: bool = False) -> _OnePassConfig:
    """The one-pass kernel's config: 16 warps, tiles of up to 64 KB (8 x 256 x 16 entries of bf16/fp16, 4 x 256 x 16
    of fp32; fewer slabs when the row is shorter), a 3-tile ring (two tiles in flight a program), one program per SM:
    the fastest of 14 variants measured on the H200 at BT=8192, V=128256 bf16 (docs/perf/cross_entropy.md, session
    14). Where the row is longer than one such tile and fits on chip, it is held there instead and read once
    (_ce_gluon.held_geometry: 32 KB tiles, all but one in the ring; BT=8192, V=128256 bf16: 1.24 ms against the
    ring's 1.34, session 26), its first two tiles in registers, which frees a ring slot for the next row (1.148 ms
    against 1.240 with one, session 29). One tile only for 16-bit logits with a soft-cap (`softcap`): with two, the
    soft-cap's temporaries spill 200 bytes a thread (ptxas, Triton 3.6). On by default where the kernel can run (see
    _ce_gluon.unsupported) and, for the ring, where its sweep-2 re-reads can hit L2 (see _one_pass). Tuning
    overrides (op "cross_entropy_with_grad") replace any field."""
    get = functools.partial(_tuning.get, TUNING_OP)
    num_warps = get("one_pass_warps", 16)
    tile_rows = min(16 // element_size, next_power_of_2(cdiv(V, 256 * num_warps)))
    config = _OnePassConfig(get("one_pass", None), get("one_pass_tile_rows", tile_rows), num_warps,
                            get("one_pass_stages", 3), get("one_pass_programs", None),
                            get("one_pass_policy", 7) & 7, get("one_pass_split", 1), get("one_pass_reuse", True))
    hold = get("one_pass_hold", None)
    if hold is None:  # by default where the ring would read the row twice (more than one of its tiles)
        hold = V > config.tile_rows * 256 * num_warps
    if hold and config.split == 1:
        geometry = _ce_gluon.held_geometry(V, element_size, num_warps, get("one_pass_tile_rows", None))
        if geometry is not None:  # else the row does not fit on chip: the ring as configured
            held = get("one_pass_held_tiles", 1 if softcap and element_size == 2 else 2)
            # at most the ring's depth: a row of fewer tiles holds fewer of them in registers
            config = config._replace(tile_rows=geometry[0], stages=geometry[1], hold=max(1, min(held, geometry[1])))
    return config


@functools.lru_cache(maxsize=None)
def _l2_bytes(device: torch.device) -> int:
    return torch.cuda.get_device_properties(device).L2_cache_size


@functools.lru_cache(maxsize=None)
def _sm_count(device: torch.device) -> int:
    if device.type != "cuda":
        return 3  # the CPU interpreter: a few programs, so that each walks several tiles
    return multiprocessor_count(device.index if device.index is not None else torch.cuda.current_device())


def _launch_config(V: int) -> _Config:
    """2048-wide blocks, 4 warps (16 elements a thread), the next block prefetched; the same blocks for the
    gradient: the best measured on the H200 at V=128256 (loss 0.514 ms vs 0.556 for 4096/w8). Tuning overrides
    (greyhound._tuning, op "cross_entropy_with_grad") replace any field; a forced loss block keeps the rule for
    its warps and prefetch unless those are forced too."""
    default_block = min(next_power_of_2(V), 2048)
    block_v = _tuning.get(TUNING_OP, "loss_block_v", default_block)
    gradient_block_v = _tuning.get(TUNING_OP, "grad_block_v", default_block)
    for name, value in (("loss_block_v", block_v), ("grad_block_v", gradient_block_v)):
        if value & (value - 1):
            raise ValueError(f"tuning: {TUNING_OP}.{name} must be a power of 2, got {value}")
    return _Config(block_v, _tuning.get(TUNING_OP, "loss_warps", max(1, min(4, block_v // 512))),
                   _tuning.get(TUNING_OP, "prefetch", V > block_v), gradient_block_v)


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
    bad_target_flag: Optional[torch.Tensor] = None,
) -> tuple:
    """Per-token loss and lse (fp32 [rows]) of `logits` [rows, V]; when `grad` is given (it may be `logits`
    itself), also write grad_scale * d per_token_loss / d logits into it. Inputs are not validated here: callers
    pass 2-D logits with unit stride along V, matching target and grad (a target out of range gives nan, never an
    out-of-bounds read). `grad_scale` is a float, a 0-d device tensor (e.g. 1 / number of valid tokens, read by
    the kernel) or a [rows] tensor of per-row scales. `per_token_loss` / `lse`, if given, are contiguous fp32
    [rows] outputs. `bad_target_flag` (int32 [1], see _target_flag), if given, is set to 1 by a bad target.
    """
    rows, V = logits.shape
    if per_token_loss is None:
        per_token_loss = torch.empty(rows, device=logits.device, dtype=torch.float32)
    if lse is None:
        lse = torch.empty(rows, device=logits.device, dtype=torch.float32)
    if rows == 0:
        return per_token_loss, lse
    config = _launch_config(V)
    if grad is not None and bad_target_flag is None and _one_pass(
            logits, grad, target, per_token_loss, lse, *_grad_scale_arg(grad_scale, rows, logits), ignore_index,
            label_smoothing, softcap, lse_square_scale):
        return per_token_loss, lse
    options = dict(HAS_SOFTCAP=softcap is not None, HAS_Z_LOSS=lse_square_scale > 0)
    scalars = (V, ignore_index, float(label_smoothing), float(softcap or 1.0), float(lse_square_scale))
    # with a gradient, each row's max and log2 of its sum of exp (the gradient kernel's, see _row_gradient_kernel)
    row_max, log2_sum = (torch.empty(2, rows, device=logits.device, dtype=torch.float32) if grad is not None
                         else (lse, lse))  # (unused without a gradient)
    _run_cross_entropy[(rows,)](
        logits, logits.stride(0), target, per_token_loss, lse, row_max, log2_sum,
        per_token_loss if bad_target_flag is None else bad_target_flag, *scalars,
        BLOCK_V=config.block_v, HAS_SMOOTHING=label_smoothing > 0, FLAG_BAD_TARGETS=bad_target_flag is not None,
        PREFETCH=config.prefetch, STORE_STATS=grad is not None, num_warps=config.num_warps, **options,
    )
    if grad is not None:
        grad_scale, grad_scale_stride = _grad_scale_arg(grad_scale, rows, logits)
        block_v = min(next_power_of_2(V), config.gradient_block_v)
        _run_row_gradient[(rows, cdiv(V, block_v))](
            logits, logits.stride(0), grad, grad.stride(0), target, lse, row_max, log2_sum, grad_scale,
            grad_scale_stride, *scalars, BLOCK_V=block_v, num_warps=max(1, min(8, block_v // 512)), **options,
        )
    return per_token_loss, lse


def _one_pass(logits, grad, target, per_token_loss, lse, grad_scale, grad_scale_stride, ignore_index,
              label_smoothing, softcap, lse_square_scale) -> bool:
    """Runs the one-pass Gluon kernel (greyhound/ops/_ce_gluon.py) when it is enabled and can run this call;
    False when the two-kernel path must run instead (not enabled, not applicable, or it failed to compile: that
    warns once)."""
    config = _one_pass_config(logits.shape[1], logits.element_size(), softcap is not None)
    if config.enabled is False:
        return False
    sm_count = _sm_count(logits.device)
    # a group's programs wait for each other: never more programs than SMs when split > 1
    programs = min(config.programs or sm_count, sm_count) if config.split > 1 else config.programs or sm_count
    if config.enabled is None and logits.is_cuda and not config.hold:
        # Sweep 2 re-reads each row from L2 only while it is still there: one row in flight a program. Where they
        # do not fit, HBM sees the second read too and the two-kernel path is faster (H200, BT=8192 V=128256 full:
        # bf16 rows, 33 MB in flight, 1.37 vs 1.61 ms; fp32 rows, 66 MB, 3.32 vs 3.13 ms).
        if programs * logits.shape[1] * logits.element_size() > _l2_bytes(logits.device):
            return False
    why_not = _ce_gluon.unsupported(logits, grad, config.tile_rows, config.num_warps, config.stages, config.split,
                                    config.hold)
    if why_not is not None:
        # a variant of the kernel asked for: said every time; else the kernel alone asked for by name: said once
        if (not _tuning.warn_if_forced(TUNING_OP, "one_pass_", "the one-pass kernel", why_not, "the two-kernel path")
                and _tuning.get(TUNING_OP, "one_pass", None)):
            _ce_gluon.warn_fallback(ValueError(why_not))
        return False
    try:
        _ce_gluon.launch(logits, grad, target, per_token_loss, lse, grad_scale, grad_scale_stride, ignore_index,
                         label_smoothing, softcap, lse_square_scale, programs, config.tile_rows, config.num_warps,
                         config.stages, config.policy, config.split, config.reuse_last, config.hold)
    except Exception as error:  # Gluon is experimental: a compile failure falls back (nothing was written)
        _ce_gluon.warn_fallback(error)
        return False
    return True


def _scale_rows_(grad: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """grad [rows, V] *= scale in place, `scale` a tensor holding one value (any shape, e.g. 0-d) or one per row;
    rows scaled by exactly 1 are skipped on the device, so no host sync decides whether there is work."""
    rows, V = grad.shape
    if rows == 0 or V == 0:
        return grad
    if scale.numel() == 1:
        scale, scale_stride = scale.reshape(1), 0
    else:
        scale = scale.reshape(-1)
        scale_stride = scale.stride(0)
    block_v = min(next_power_of_2(V), 4096)
    num_tiles = rows * cdiv(V, block_v)
    _run_scale_rows[(max(1, min(num_tiles, 4 * _sm_count(grad.device))),)](
        grad, grad.stride(0), scale, scale_stride, rows, V, PER_ROW_SCALE=scale_stride != 0, BLOCK_V=block_v,
        num_warps=8 if block_v >= 2048 else 4,
    )
    return grad


def _reduce(per_token_loss: torch.Tensor, n_valid: torch.Tensor, reduction: str) -> torch.Tensor:
    if reduction == "none":
        return per_token_loss
    total = per_token_loss.sum()
    return total / n_valid if reduction == "mean" else total  # mean over no valid token is 0/0 = nan, as in torch


def _checking_targets(target: torch.Tensor, check_target: bool) -> bool:
    """Whether to check: not with check_target=False, nor while torch.compile traces or a CUDA graph is captured
    (neither can read a device flag); the kernels then give nan for such rows."""
    if not check_target or target.numel() == 0 or torch.compiler.is_compiling():
        return False
    return not (target.is_cuda and torch.cuda.is_current_stream_capturing())


def _target_flag(target: torch.Tensor, check_target: bool) -> Optional[torch.Tensor]:
    """A zeroed int32 [1] that the loss kernel sets to 1 on a bad target, read by _raise_if_flagged after the
    kernel (one launch before it, one host sync after it); None when not checking."""
    if not _checking_targets(target, check_target):
        return None
    return torch.zeros(1, dtype=torch.int32, device=target.device)


def _raise_if_flagged(flag: Optional[torch.Tensor], target: torch.Tensor, V: int, ignore_index: int) -> None:
    if flag is not None and bool(flag):
        _check_targets(target, V, ignore_index)


# Targets a program of _target_stats_kernel counts, 4096 a step: one program, no atomics, up to this many (BT = 8192
# is two steps, ~as long on the device as the two launches it replaces); beyond, programs of this many add atomically.
_TARGET_CHUNK, _TARGET_BLOCK = 16384, 4096


def _valid_targets(target: torch.Tensor, V: int, ignore_index: int, check_target: bool = True) -> torch.Tensor:
    """The number of targets that are not ignore_index, a 0-d int64 device tensor (the mean's divisor), counted by one
    kernel that also flags a kept target outside [0, V); then, unless _checking_targets says not to, one host sync
    reads the flag and a bad target raises (_check_targets' error). What it replaces: that check's six element-wise
    and reduction launches before its sync, then two more for the count. (The callers' inputs passed
    check_triton_device.)"""
    n = target.numel()
    programs = max(1, cdiv(n, _TARGET_CHUNK))
    stats = (torch.zeros if programs > 1 else torch.empty)(2, dtype=torch.int64, device=target.device)
    _run_target_stats[(programs,)](target, stats, n, V, ignore_index, ATOMIC=programs > 1, CHUNK=_TARGET_CHUNK,
                                   BLOCK=_TARGET_BLOCK, num_warps=8)
    if _checking_targets(target, check_target) and stats[1].item():
        _check_targets(target, V, ignore_index)  # raises, with an example and a count
    return stats[0]


def _kept(target: torch.Tensor, ignore_index: int) -> torch.Tensor:
    """target != ignore_index compared exactly, as the kernels do (in int64): torch compares an int32 tensor with a
    Python int outside int32's range after wrapping it (int32 targets != 2**32 read as != 0)."""
    info = torch.iinfo(target.dtype)
    if not info.min <= ignore_index <= info.max:
        return torch.ones_like(target, dtype=torch.bool)
    return target != ignore_index


def _check_targets(target: torch.Tensor, V: int, ignore_index: int, check_target: bool = True) -> None:
    """A device check and one host sync before any kernel, unless _checking_targets says not to."""
    if not _checking_targets(target, check_target):
        return
    bad = ((target < 0) | (target >= V)) & _kept(target, ignore_index)
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


# Registered ops (greyhound::cross_entropy_fwd, greyhound::cross_entropy_scale_grad_) with a fake implementation
# and autograd, so that torch.compile keeps them in its graph (fullgraph=True). The forward op makes the loss and,
# with `with_grad`, d loss / d logits in a fresh buffer; the backward scales that buffer in place by grad_output.
# The target check runs inside the op, at run time (never while tracing).
def _reduction_code(reduction: str) -> int:
    return REDUCTIONS.index(reduction)


@torch.library.custom_op("greyhound::cross_entropy_fwd", mutates_args=())
def _cross_entropy_fwd(logits: torch.Tensor, target: torch.Tensor, reduction: int, ignore_index: int,
                       label_smoothing: float, softcap: float, lse_square_scale: float, with_grad: bool,
                       check_target: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(loss, per_token_loss, lse, grad): `reduction` indexes REDUCTIONS; softcap 0 means none. loss is 0-d, or the
    per-token loss [rows] for "none" (then the per_token_loss slot is a 0-element tensor: outputs must not alias);
    grad is d loss / d logits (mean's 1 / n_valid included) with `with_grad`, else a 0-element tensor."""
    V = logits.shape[1]
    # with a gradient the targets are checked before the kernels (a sync after them left the GPU idle while the host
    # ran backward: 2.42 vs 1.99 ms full on the H200); without, the loss kernel flags them and one sync on the finished
    # kernel reads the flag
    n_valid = _valid_targets(target, V, ignore_index, check_target and with_grad)
    bad_target_flag = None if with_grad else _target_flag(target, check_target)
    reduction = REDUCTIONS[reduction]
    grad = torch.empty_like(logits) if with_grad else None
    grad_scale = n_valid.float().reciprocal_() if with_grad and reduction == "mean" else 1.0
    per_token_loss, lse = _cross_entropy_rows(
        logits, target, grad, grad_scale, ignore_index=ignore_index, label_smoothing=label_smoothing,
        softcap=softcap or None, lse_square_scale=lse_square_scale, bad_target_flag=bad_target_flag,
    )
    _raise_if_flagged(bad_target_flag, target, V, ignore_index)
    loss = _reduce(per_token_loss, n_valid, reduction)
    return (loss, per_token_loss.new_empty(0) if reduction == "none" else per_token_loss, lse,
            grad if with_grad else logits.new_empty(0))


@_cross_entropy_fwd.register_fake
def _cross_entropy_fwd_fake(logits, target, reduction, ignore_index, label_smoothing, softcap, lse_square_scale,
                            with_grad, check_target):
    rows = logits.shape[0]
    per_row = logits.new_empty(rows, dtype=torch.float32)
    if REDUCTIONS[reduction] == "none":
        loss, per_token_loss = per_row, logits.new_empty(0, dtype=torch.float32)
    else:
        loss, per_token_loss = logits.new_empty((), dtype=torch.float32), per_row
    return (loss, per_token_loss, logits.new_empty(rows, dtype=torch.float32),
            torch.empty_like(logits) if with_grad else logits.new_empty(0))


@torch.library.custom_op("greyhound::cross_entropy_scale_grad_", mutates_args=("grad",))
def _cross_entropy_scale_grad_(grad: torch.Tensor, scale: torch.Tensor) -> None:
    """grad *= scale in place (one value, or one per row of grad viewed as [-1, last dim]); rows scaled by exactly 1
    are skipped on the device (see _scale_rows_)."""
    _scale_rows_(grad if grad.dim() == 2 else grad.view(-1, grad.shape[-1]), scale)


@_cross_entropy_scale_grad_.register_fake
def _cross_entropy_scale_grad_fake(grad, scale):
    return None


def _cross_entropy_setup_context(ctx, inputs, output):
    _, per_token_loss, lse, grad = output
    ctx.save_for_backward(grad)  # a later in-place write to it makes backward raise
    ctx.mark_non_differentiable(per_token_loss, lse, grad)
    ctx.set_materialize_grads(False)


def _cross_entropy_backward(ctx, grad_loss, _grad_per_token_loss, _grad_lse, _grad_grad, eager=False):
    _hand_out_once(ctx, "cross_entropy_with_grad")
    (grad,) = ctx.saved_tensors
    if grad_loss is not None:  # a no-op on the device for loss.backward()'s grad_output of 1
        _library.run(_cross_entropy_scale_grad_, eager, grad, grad_loss)
    # a fresh reference to the buffer, so that autograd can make it the .grad without a copy
    return grad.detach(), None, None, None, None, None, None, None, None


_cross_entropy_fwd.register_autograd(_cross_entropy_backward, setup_context=_cross_entropy_setup_context)


_cross_entropy_eager = _library.twin(_cross_entropy_fwd, _cross_entropy_setup_context, _cross_entropy_backward)


class _InplaceCrossEntropyFunction(torch.autograd.Function):
    """inplace_backward=True with a gradient, in eager mode only: the gradient is written into `logits` itself.
    (A torch.library op cannot both mutate an input and carry autograd, so under torch.compile the wrapper takes
    the registered op instead, whose gradient has its own buffer.) Targets are checked, and counted (n_valid), by the
    caller."""

    @staticmethod
    def forward(ctx, logits, target, n_valid, reduction, ignore_index, label_smoothing, softcap, lse_square_scale):
        grad_scale = n_valid.float().reciprocal_() if reduction == "mean" else 1.0
        per_token_loss, lse = _cross_entropy_rows(
            logits, target, logits, grad_scale, ignore_index=ignore_index, label_smoothing=label_smoothing,
            softcap=softcap, lse_square_scale=lse_square_scale,
        )
        # other nodes that saved logits now raise; bumped before saving so the saved version holds the gradient
        torch.autograd.graph.increment_version(logits)
        ctx.save_for_backward(logits)  # a later in-place write to it makes backward raise
        loss = _reduce(per_token_loss, n_valid, reduction)
        if reduction == "none":
            ctx.mark_non_differentiable(lse)
            return loss, None, lse
        ctx.mark_non_differentiable(per_token_loss, lse)
        return loss, per_token_loss, lse

    @staticmethod
    @_library.once_differentiable("cross_entropy_with_grad")
    def backward(ctx, grad_loss, _grad_per_token_loss, _grad_lse):
        _hand_out_once(ctx, "cross_entropy_with_grad")
        (grad,) = ctx.saved_tensors
        grad = grad.detach()
        if grad_loss is not None:
            _scale_rows_(grad, grad_loss)  # a no-op on the device for loss.backward()'s grad_output of 1
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
    """The options' checks; returns ignore_index as a Python int (numpy integers are taken too; the float options
    go on through float())."""
    check_choice("reduction", reduction, REDUCTIONS)
    if not is_int(ignore_index):
        raise TypeError(f"ignore_index must be an int, got {type(ignore_index).__name__}")
    if not -2**63 <= ignore_index < 2**63:
        raise ValueError(f"ignore_index must fit in int64 (the targets' widest dtype), got {ignore_index}")
    for name, value in (("label_smoothing", label_smoothing), ("lse_square_scale", lse_square_scale)):
        if not is_real(value):
            raise TypeError(f"{name} must be a float, got {type(value).__name__}")
    if not 0.0 <= label_smoothing <= 1.0:  # (1.0, the uniform target alone, as F.cross_entropy allows)
        raise ValueError(f"label_smoothing must be in [0, 1], got {label_smoothing}")
    if not 0.0 <= lse_square_scale <= FP32_MAX:  # (the kernels take it as an fp32: above FLT_MAX it is inf there)
        raise ValueError(f"lse_square_scale must be a finite float >= 0 that fits fp32 (at most {FP32_MAX:.5g}), "
                         f"got {lse_square_scale!r:.40}")
    if softcap is not None:
        if not is_real(softcap):
            raise TypeError(f"softcap must be None or a float, got {type(softcap).__name__}")
        # the kernels take it as an fp32: above FLT_MAX it is inf there (inf * tanh(x / inf): every output nan),
        # below the smallest normal fp32 it can flush to 0 (0 / 0 at a zero logit: nan)
        if not FP32_NORMAL_MIN <= softcap <= FP32_MAX:
            raise ValueError(f"softcap must be None or a finite float > 0 that is a normal fp32 number (in "
                             f"[{FP32_NORMAL_MIN:.5g}, {FP32_MAX:.5g}]), got {softcap!r}")
    return int(ignore_index)


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
    check_target: bool = True,
):
    """Cross-entropy of `logits` [BT, V] against class indices `target` [BT], as
    `F.cross_entropy(logits.float(), target, ignore_index=, reduction=, label_smoothing=)`, plus:

    - `softcap`: logits <- softcap * tanh(logits / softcap) before the softmax (gradient flows through it);
    - `lse_square_scale`: z-loss, lse_square_scale * lse**2 added to each non-ignored token's loss.

    Contract: fp32/bf16/fp16 logits, int64/int32 target; every sum and exp in fp32; the loss, per-token loss and
    lse are fp32, the logits gradient has the logits' dtype. When a gradient is needed (logits.requires_grad and
    grad mode on) it is computed in the forward pass and kept (BT x V); `backward` only rescales it in place.
    With `inplace_backward=True` that gradient is written into `logits` itself (no extra memory; the values of
    `logits` are lost and its version counter is bumped so that other users of it raise; a leaf that requires grad,
    or a view of one, is refused, as torch refuses in-place writes to it); otherwise `logits` is never written.
    Without a gradient nothing is written and `inplace_backward` has no effect. Inside
    torch.compile the function is a registered torch.library op (no graph break with fullgraph=True), and there
    `inplace_backward=True` falls back to the out-of-place path (the gradient gets its own BT x V buffer and
    `logits` is not written): an op that carries autograd cannot also mutate its input.

    Returns the loss: 0-d for reduction "mean"/"sum", [BT] for "none". With `reduction="mean"` the loss is the
    mean over non-ignored tokens; if every token is ignored it is nan (0/0, as torch gives) and the gradient is 0.
    With `return_per_token_loss` or `return_lse` returns `CrossEntropyOutput(loss, per_token_loss, lse)` instead:
    per_token_loss [BT] fp32 (0 at ignored tokens, z-loss included), lse [BT] fp32 (the log-sum-exp of the
    soft-capped logits of every row, ignored or not); both are for logging and carry no gradient; fields not
    asked for are None. Gradients reach `logits` only; one backward per forward call.

    `check_target=True` raises a ValueError naming `target` for an entry outside [0, V) other than ignore_index,
    at the cost of one host sync (with a gradient before the kernels, without one after the loss kernel, which
    flags bad targets; inside a compiled graph when it runs, never while torch.compile traces; skipped while a
    CUDA graph is captured).
    check_target=False: no host sync; an out-of-range target gives NaN instead of an error (its per-token loss,
    lse and gradient row are nan, so is a mean or sum over it), and is never read out of bounds.
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
    ignore_index = _check_options(reduction, ignore_index, label_smoothing, softcap, lse_square_scale)
    for name, flag in (("return_per_token_loss", return_per_token_loss), ("return_lse", return_lse),
                       ("inplace_backward", inplace_backward), ("check_target", check_target)):
        check_bool(name, flag)
    V = logits.shape[1]
    needs_grad = torch.is_grad_enabled() and logits.requires_grad
    # a single class has no stride to speak of (e.g. a (1, BT) tensor's .mT), nor has a batch of no rows (nothing is
    # written: e.g. an expand()ed (0, V) tensor, strides (1, 0))
    if logits.stride(1) != 1 and V > 1 and logits.shape[0] > 0:
        if inplace_backward and needs_grad:
            raise ValueError(
                f"logits must have unit stride along the vocabulary for inplace_backward=True, got strides "
                f"{logits.stride()}"
            )
        logits = logits.contiguous()
    elif inplace_backward and needs_grad and logits.shape[0] > 1 and logits.stride(0) < V:
        raise ValueError(
            f"logits must not have overlapping rows for inplace_backward=True (the gradient is written into it; "
            f"row stride >= V = {V}), got shape {tuple(logits.shape)} with strides {logits.stride()} (an expand()ed "
            f"tensor?); pass a contiguous copy or inplace_backward=False"
        )
    target = target.contiguous()
    if needs_grad and inplace_backward and not torch.compiler.is_compiling():
        leaf = logits._base if logits._is_view() else logits  # (torch refuses in-place writes to either)
        if leaf.is_leaf:  # (one that requires grad, as logits does)
            raise ValueError(f"inplace_backward=True would write the gradient into logits, which is "
                             f"{'a view of ' if leaf is not logits else ''}a leaf that requires grad (a parameter?) "
                             f"whose values would be lost; pass inplace_backward=False")
        n_valid = _valid_targets(target, V, ignore_index, check_target)  # checked before the kernels overwrite logits
        loss, per_token_loss, lse = _InplaceCrossEntropyFunction.apply(
            logits, target, n_valid, reduction, ignore_index, float(label_smoothing), softcap,
            float(lse_square_scale))
    else:
        loss, per_token_loss, lse, _ = _library.call(
            _cross_entropy_fwd, _cross_entropy_eager, logits, target, _reduction_code(reduction), ignore_index,
            float(label_smoothing), float(softcap or 0.0), float(lse_square_scale), needs_grad, check_target)
    if reduction == "none":
        per_token_loss = loss.detach()
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
    check_target: bool = True,
):
    """Plain-PyTorch definition of `cross_entropy_with_grad` (same options and outputs; differentiable through
    autograd; never writes in place, so `inplace_backward` is ignored; torch's gather checks the targets).
    Computes in fp64 for fp64 logits, else fp32.
    """
    z = logits if logits.dtype == torch.float64 else logits.float()
    if softcap is not None:
        z = softcap * torch.tanh(z / softcap)
    lse = torch.logsumexp(z, dim=-1)
    valid = _kept(target, ignore_index)
    # through log_softmax, as F.cross_entropy: a row holding +inf gives a nan loss and gradient (lse is +inf)
    log_p = torch.log_softmax(z, dim=-1)
    per_token_loss = -(1.0 - label_smoothing) * log_p.gather(1, torch.where(valid, target, 0).long()[:, None])[:, 0]
    if label_smoothing > 0:
        per_token_loss = per_token_loss - label_smoothing * log_p.mean(dim=-1)
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
