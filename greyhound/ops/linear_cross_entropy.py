"""Linear layer + cross-entropy that never materialises the BT x V logits.

`chunked_linear_cross_entropy(x, weight, target)` equals `F.cross_entropy((x @ weight.T + bias).float(), target)`
(with the soft-cap, z-loss and label smoothing of `cross_entropy_with_grad`). Rows are processed a chunk at a time:
cuBLAS computes the chunk's logits, the row kernel of greyhound/ops/cross_entropy.py turns them in place into
d loss / d logits, and two more GEMMs fold that into the gradients of x and of the weight. Full mode thus costs
three GEMMs, the forward pass one; `backward` only rescales gradients computed during the forward. With several
chunks, the mean's 1 / n_valid is applied to the GEMM results, not to d loss / d logits: p / BT at a 256K
vocabulary (~2e-9) is below fp16's smallest subnormal, and folding it in first flushed most fp16 gradient entries
to zero (2-3 % errors).

One chunk (the default with a gradient in bf16/fp32 while the BT x V logits fit ONE_CHUNK_BYTES): the weight
gradient is one GEMM over every row, summed in cuBLAS's fp32 accumulator and rounded once; the scale is folded
into d loss / d logits (bf16 has fp32's range). Peak extra memory: the BT x V logits + the gradients.

Several chunks: the weight gradient sums one GEMM per chunk. That running sum is kept in fp32 (cuBLAS reads and
writes an fp32 C with beta = 1; bf16 sums drift at large vocabularies), which takes V x H x 4 bytes. Half of that
space is the bf16/fp16 gradient's own storage: rows [0, V/2) accumulate in place inside it and are narrowed in
place at the end, rows [V/2, V) in a separate fp32 buffer freed afterwards. Peak extra memory is therefore
V*H*4 (grad_weight + that buffer) + BT*H*2 (grad_x) + one chunk of logits, and afterwards just the gradients.

The loss-only pass with automatic chunks on Hopper (bf16/fp16) is one fused GEMM instead, its epilogue making each
128 x 256 logit tile's per-row max, sum of exp and target logit from the fp32 accumulators (greyhound/ops/
_lce_gluon.py, merged by _merge_lse_partials_kernel): no logits are written at all, and it ran ~5% under the cuBLAS
chunks and torch.compile on the H200 (docs/perf/cross_entropy.md, session 30).

grad_schedule="vocab" (the low-memory schedule): the forward is the loss-only pass (vocabulary chunks, all rows);
the backward recomputes the logits a vocabulary chunk at a time for all rows from the saved lse, so each block of
the weight gradient is one GEMM over every row (cuBLAS's fp32 accumulator, rounded once, written once) and no
fp32 V x H sum ever exists. The x gradient sums over the chunks in fp32 (half of it inside its own storage).
Four GEMMs instead of three; peak extra memory: the gradients + BT*H*2 + one chunk (GRAD_VOCAB_CHUNK_BYTES).
"""
from typing import Optional

import torch
import triton
import triton.language as tl

from greyhound import _library, _tuning
from greyhound._launch import FastLaunch, next_power_of_2
from greyhound._validate import FLOAT_DTYPES, check_bool, check_choice, check_tensor, check_triton_device, is_int
from greyhound.ops import _lce_gluon
from greyhound.ops._fp32_gemm import _addmm_into_fp32_
from greyhound.ops.cross_entropy import (
    LOG2E,
    REDUCTIONS,
    TARGET_DTYPES,
    _online_lse_step,
    _tanh,
    _check_options,
    _valid_targets,
    _cross_entropy_rows,
    _cross_entropy_scale_grad_,
    _grad_scale_arg,
    _hand_out_once,
    _kept,
    _outputs,
    _reduce,
    _run_gradient,
    cross_entropy_reference,
)

__all__ = ["chunked_linear_cross_entropy", "chunked_linear_cross_entropy_reference"]

# Logits held at once, per chunk: the forward pass streams small chunks (its extra memory is that chunk). With a
# gradient, all rows make one chunk when their logits fit ONE_CHUNK_BYTES (bf16/fp32): the weight gradient is then
# one GEMM, as fast as torch.compile's three GEMMs at half its memory (H200, BT=8192, H=4096, V=128256 bf16: 38.97
# ms at 3070 MiB against 40.77 ms at 6012 MiB). Otherwise (and in fp16) chunks of ~GRAD_CHUNK_BYTES, bigger than the
# forward's because every chunk's weight-gradient GEMM also reads and writes the fp32 V x H sum.
FORWARD_CHUNK_BYTES = 64 << 20
ONE_CHUNK_BYTES = 4 << 30
GRAD_CHUNK_BYTES = 256 << 20
MIN_GRAD_CHUNK_ROWS = 1024
MAX_CHUNK_ROWS = 8192
# grad_schedule="vocab": logits of all rows x this many bytes of vocabulary entries per chunk. At BT=8192, H=4096,
# V=128256 bf16 the gradients take 1.118 GB, the x gradient's fp32 half 67 MB and a 48 MiB chunk 50 MB: 1.235 GB
GRAD_VOCAB_CHUNK_BYTES = 48 << 20
GRAD_SCHEDULES = ("auto", "rows", "vocab")


FORWARD_SCHEDULES = ("auto", "rows", "vocab")
# vocabulary chunks: the entries whose logits, with the per-row fp32 running values, fit FORWARD_CHUNK_BYTES, in
# multiples of 32 (64-byte rows in bf16). On the H200 at BT=8192, H=4096 bf16 (sweep CLI, two processes each):
# 4096 entries 13.33-13.52 ms (64.1 MiB with the running values), 4064 13.40-13.43 (63.6 MiB), 4080 13.35-13.46,
# 4088 13.59-13.75 (rows only 16-byte aligned), 4032 13.35-13.62; earlier 3968 (a 33rd chunk) 13.50 against 13.17
VOCAB_CHUNK_MULTIPLE = 32
TUNING_OP = "chunked_linear_cross_entropy"
_tuning.register(
    TUNING_OP,
    chunk_rows=(int, "rows per chunk when chunk_size is None (default: from the byte budgets)"),
    vocab_schedule=(bool, "loss-only passes walk the vocabulary in chunks (forward_schedule='vocab')"),
    vocab_chunk=(int, "vocabulary entries per chunk of the vocab schedule when chunk_size does not give them"),
    grad_vocab_schedule=(bool, "grad_schedule='auto' takes the vocab (low-memory) schedule"),
    grad_vocab_chunk=(int, "vocabulary entries per chunk of grad_schedule='vocab' when chunk_size does not give "
                           "them"),
    vocab_block_v=(int, "entries a loop step of the vocab schedule's row kernel (a power of 2; default: the chunk's "
                        "width rounded up, at most 2048)"),
    vocab_warps=(int, "warps a program of the vocab schedule's row kernel (default: BLOCK_V / 512, 1 to 4)"),
    fused_lse=(bool, "loss-only passes with automatic chunks on Hopper run one GEMM with the lse in its epilogue "
                     "(greyhound/ops/_lce_gluon.py) instead of cuBLAS chunks and a row kernel"),
    fused_block_n=(int, "vocabulary entries a tile of the fused kernel (64, 128 or 256)"),
    fused_stages=(int, "shared-memory ring stages of the fused kernel"),
    fused_group_n=(int, "vocabulary tiles the fused kernel walks for every row block before moving on"),
)
# the fused GEMM + lse loss pass is the default where it can run (tunable fused_lse)
FUSED_LSE = True


def _auto_chunk_rows(rows: int, V: int, element_size: int, with_grad: bool, one_chunk: bool = False) -> int:
    """Rows per chunk: with a gradient and `one_chunk`, all rows when their logits fit ONE_CHUNK_BYTES; else the
    power of two whose logits fit the byte budget, within [64 or 1024, 8192]."""
    if with_grad and one_chunk and rows * V * element_size <= ONE_CHUNK_BYTES:
        return max(1, rows)
    budget, floor = (GRAD_CHUNK_BYTES, MIN_GRAD_CHUNK_ROWS) if with_grad else (FORWARD_CHUNK_BYTES, 64)
    fitting = max(1, budget // (V * element_size))
    chunk = 1 << (fitting.bit_length() - 1)
    return max(1, min(rows, max(floor, min(chunk, MAX_CHUNK_ROWS))))


def _running_vectors(label_smoothing: float) -> int:
    """fp32 [BT] vectors the vocab schedule keeps across chunks: max, sum of exp, target logit[, sum of logits]."""
    return 4 if label_smoothing > 0 else 3


def _auto_grad_vocab_chunk(rows: int, V: int, element_size: int) -> int:
    """Vocabulary entries per chunk of grad_schedule="vocab": all rows x the columns whose logits fit
    GRAD_VOCAB_CHUNK_BYTES, a multiple of VOCAB_CHUNK_MULTIPLE (at least one), at most V."""
    fitting = GRAD_VOCAB_CHUNK_BYTES // max(1, rows * element_size)
    return min(V, max(VOCAB_CHUNK_MULTIPLE, fitting // VOCAB_CHUNK_MULTIPLE * VOCAB_CHUNK_MULTIPLE))


def _auto_vocab_chunk(rows: int, V: int, element_size: int, vectors: int = 3) -> int:
    """Vocabulary entries per chunk of the vocab schedule: all rows x the columns whose logits fit
    FORWARD_CHUNK_BYTES beside `vectors` fp32 [rows] running vectors; a multiple of VOCAB_CHUNK_MULTIPLE (at least
    one), at most V."""
    fitting = (FORWARD_CHUNK_BYTES - vectors * 4 * rows) // max(1, rows * element_size)
    return min(V, max(VOCAB_CHUNK_MULTIPLE, fitting // VOCAB_CHUNK_MULTIPLE * VOCAB_CHUNK_MULTIPLE))


# ----------------------------------------------------------------------------------------------------------------
# The vocab schedule of the loss-only pass: all rows at once, the vocabulary a chunk at a time
# ----------------------------------------------------------------------------------------------------------------
@triton.jit
def _vocab_chunk_kernel(
    logits_ptr, logits_row_stride, target_ptr, running_max_ptr, running_sum_ptr, target_z_ptr, sum_z_ptr,
    v0, Vc, softcap,
    BLOCK_V: tl.constexpr, HAS_SOFTCAP: tl.constexpr, HAS_SMOOTHING: tl.constexpr, FIRST: tl.constexpr,
):
    """One program per row of a logits chunk holding vocabulary entries [v0, v0 + Vc): folds the chunk into the
    row's running max and sum of exp (fp32; FIRST starts them), adds its logits to the smoothing sum, and stores
    the (soft-capped) target logit if the target falls in the chunk. The loss kernel's block step, chunk-wide."""
    row = tl.program_id(0).to(tl.int64)
    logits_row = logits_ptr + row * logits_row_stride
    cols = tl.arange(0, BLOCK_V)
    chunk_max = -3.4028234663852886e38
    sum_exp = tl.zeros([BLOCK_V], dtype=tl.float32)
    sum_z = tl.zeros([BLOCK_V], dtype=tl.float32)
    for start in range(0, Vc, BLOCK_V):
        offsets = start + cols
        mask = offsets < Vc
        z = tl.load(logits_row + offsets, mask=mask, other=float("-inf"), eviction_policy="evict_first")
        chunk_max, sum_exp, sum_z = _online_lse_step(z.to(tl.float32), mask, chunk_max, sum_exp, sum_z, softcap,
                                                     HAS_SOFTCAP, HAS_SMOOTHING)
    chunk_sum = tl.sum(sum_exp, axis=0)
    if FIRST:
        row_max = chunk_max
        row_sum = chunk_sum
    else:
        old_max = tl.load(running_max_ptr + row)
        row_max = tl.maximum(old_max, chunk_max)
        row_sum = (tl.load(running_sum_ptr + row) * tl.exp2(tl.maximum(old_max - row_max, -1000.0) * LOG2E)
                   + chunk_sum * tl.exp2(tl.maximum(chunk_max - row_max, -1000.0) * LOG2E))
    tl.store(running_max_ptr + row, row_max)
    tl.store(running_sum_ptr + row, row_sum)
    if HAS_SMOOTHING:
        chunk_sum_z = tl.sum(sum_z, axis=0)
        if not FIRST:
            chunk_sum_z += tl.load(sum_z_ptr + row)
        tl.store(sum_z_ptr + row, chunk_sum_z)
    local = tl.load(target_ptr + row).to(tl.int64) - v0
    in_chunk = (local >= 0) & (local < Vc)
    z_target = tl.load(logits_row + tl.where(in_chunk, local, 0), mask=in_chunk, other=0.0).to(tl.float32)
    if HAS_SOFTCAP:
        z_target = softcap * _tanh(z_target / softcap)
    tl.store(target_z_ptr + row, z_target, mask=in_chunk)


def _vocab_major_loss(x, weight, bias, target, chunk_cols, ignore_index, label_smoothing, softcap,
                      lse_square_scale):
    """Per-token loss and lse (fp32 [BT]) with the logits made `chunk_cols` vocabulary entries at a time for all
    rows: full-height GEMMs (BT x chunk x H) and one read of each chunk; the same results as the rows schedule
    up to the order of the fp32 sums. Automatic chunks (`chunk_cols` None) on Hopper take the fused GEMM + lse
    kernel instead when it can run (`_fused_lse_stats`)."""
    stats = None
    if chunk_cols is None:
        stats = _fused_lse_stats(x, weight, bias, target, label_smoothing, softcap)
    if stats is None:
        stats = _chunked_lse_stats(x, weight, bias, target, chunk_cols, label_smoothing, softcap)
    return _finish_vocab_loss(*stats, target, weight.shape[0], ignore_index, label_smoothing, lse_square_scale)


def _fused_config(bias, label_smoothing, softcap):
    """The fused kernel's tile and ring (_lce_gluon.DEFAULT_CONFIG; 128-entry vocabulary tiles when two or more of
    bias, soft-cap and label smoothing are on: with 256 their epilogue spills (ptxas, Triton 3.6)), then any
    fused_* tuning override."""
    config = dict(_lce_gluon.DEFAULT_CONFIG)
    if (bias is not None) + (softcap is not None) + (label_smoothing > 0) >= 2:
        config["block_n"] = 128
    for name in ("block_n", "stages", "group_n"):
        config[name] = _tuning.get(TUNING_OP, "fused_" + name, config[name])
    return config


def _fused_lse_stats(x, weight, bias, target, label_smoothing, softcap):
    """(running max, sum of exp, target logit, sum of logits or None), fp32 [BT], from the fused GEMM + lse kernel
    (greyhound/ops/_lce_gluon.py), or None when it is off (tunable `fused_lse`), cannot run on these inputs or
    failed to compile (a warning once, then the cuBLAS chunks)."""
    if not _tuning.get(TUNING_OP, "fused_lse", FUSED_LSE) or x.shape[0] == 0:
        return None
    config = _fused_config(bias, label_smoothing, softcap)
    why_not = _lce_gluon.unsupported(x, weight, config)
    if why_not is not None:  # fused_lse or a variant of the kernel asked for: said, every time
        _tuning.warn_if_forced(TUNING_OP, "fused_", "fused_lse", why_not, "the cuBLAS vocab schedule", stacklevel=4)
        return None
    rows, V = x.shape[0], weight.shape[0]
    vectors = _lce_gluon.partial_vectors(label_smoothing)
    n_tiles = -(-V // config["block_n"])
    running = _running_vectors(label_smoothing)
    # rows a launch: their partials fit FORWARD_CHUNK_BYTES beside the fp32 [BT] vectors; whole row blocks
    room = max(0, FORWARD_CHUNK_BYTES - running * 4 * rows) // (vectors * 4 * n_tiles)
    chunk = max(config["block_m"], room // config["block_m"] * config["block_m"])
    running_max, running_sum, target_z, *rest = (
        torch.zeros(rows, device=x.device, dtype=torch.float32) for _ in range(running))
    sum_z = rest[0] if rest else None
    partials = torch.empty(vectors, n_tiles, min(chunk, rows), device=x.device, dtype=torch.float32)
    try:
        for start in range(0, rows, chunk):
            stop = min(start + chunk, rows)
            part = partials[:, :, : stop - start]
            _lce_gluon.launch(x[start:stop], weight, bias, target[start:stop], part, target_z[start:stop],
                              softcap, label_smoothing, config)
            _merge_lse_partials(part, running_max[start:stop], running_sum[start:stop],
                                None if sum_z is None else sum_z[start:stop])
    except Exception as error:  # Gluon's API moves between Triton releases: fall back, never fail the call
        _lce_gluon.warn_fallback(error)
        return None
    return running_max, running_sum, target_z, sum_z


@triton.jit
def _merge_lse_partials_kernel(
    partials_ptr, vector_stride, tile_stride, n_tiles, rows, row_max_ptr, row_sum_ptr, sum_z_ptr,
    BLOCK_T: tl.constexpr, BLOCK_R: tl.constexpr, HAS_SMOOTHING: tl.constexpr,
):
    """BLOCK_R rows a program: folds each row's n_tiles partials (max, sum of exp[, sum of logits]; [vector, tile,
    row] with the row fastest) into its max and sum of exp, BLOCK_T tiles a step."""
    row = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_ok = row < rows
    tile = tl.arange(0, BLOCK_T)
    run_max = tl.full([BLOCK_R], -3.4028234663852886e38, tl.float32)
    run_sum = tl.zeros([BLOCK_R], dtype=tl.float32)
    run_z = tl.zeros([BLOCK_R], dtype=tl.float32)
    for t0 in range(0, n_tiles, BLOCK_T):
        offsets = (t0 + tile)[:, None] * tile_stride + row[None, :]
        mask = ((t0 + tile) < n_tiles)[:, None] & row_ok[None, :]
        tile_max = tl.load(partials_ptr + offsets, mask=mask, other=float("-inf"))
        tile_sum = tl.load(partials_ptr + vector_stride + offsets, mask=mask, other=0.0)
        new_max = tl.maximum(run_max, tl.max(tile_max, axis=0))
        run_sum = (run_sum * tl.exp2(tl.maximum(run_max - new_max, -1000.0) * LOG2E)
                   + tl.sum(tile_sum * tl.exp2(tl.maximum(tile_max - new_max[None, :], -1000.0) * LOG2E), axis=0))
        run_max = new_max
        if HAS_SMOOTHING:
            run_z += tl.sum(tl.load(partials_ptr + 2 * vector_stride + offsets, mask=mask, other=0.0), axis=0)
    tl.store(row_max_ptr + row, run_max, mask=row_ok)
    tl.store(row_sum_ptr + row, run_sum, mask=row_ok)
    if HAS_SMOOTHING:
        tl.store(sum_z_ptr + row, run_z, mask=row_ok)


def _merge_lse_partials(partials, row_max, row_sum, sum_z=None):
    """partials [2 or 3, n_tiles, rows] fp32 (max, sum of exp[, sum of logits] of each row over each tile's
    vocabulary entries; a contiguous last axis) -> each row's max and sum of exp over all of them (written into
    row_max, row_sum [rows]) and, with a third vector, the sum of logits (into sum_z)."""
    vectors, n_tiles, rows = partials.shape
    if partials.stride(2) != 1 or vectors != (3 if sum_z is not None else 2):
        raise ValueError(f"partials must be [2, n_tiles, rows] (3 with sum_z) with a contiguous last axis, got shape "
                         f"{tuple(partials.shape)}, strides {tuple(partials.stride())}, sum_z given: {sum_z is not None}")
    block_r = 64
    _run_merge_lse_partials[(-(-rows // block_r),)](
        partials, partials.stride(0), partials.stride(1), n_tiles, rows, row_max, row_sum,
        row_sum if sum_z is None else sum_z, BLOCK_T=32, BLOCK_R=block_r, HAS_SMOOTHING=sum_z is not None,
        num_warps=4)


def _chunked_lse_stats(x, weight, bias, target, chunk_cols, label_smoothing, softcap):
    """(running max, sum of exp, target logit, sum of logits or None), fp32 [BT], with cuBLAS making the logits
    `chunk_cols` vocabulary entries at a time (automatic when None) and the row kernel reading each chunk once."""
    rows, V = x.shape[0], weight.shape[0]
    vectors = _running_vectors(label_smoothing)
    chunk = min(V, chunk_cols or _tuning.get(TUNING_OP, "vocab_chunk",
                                             _auto_vocab_chunk(rows, V, x.element_size(), vectors)))
    # the running values: max, sum of exp, target logit, and (label smoothing only) the sum of logits
    running_max, running_sum, target_z, *rest = (
        torch.zeros(rows, device=x.device, dtype=torch.float32) for _ in range(vectors))
    sum_z = rest[0] if rest else running_sum  # never touched without label smoothing
    buffer = torch.empty(rows * chunk, device=x.device, dtype=x.dtype)
    block_v = _tuning.get(TUNING_OP, "vocab_block_v", min(next_power_of_2(chunk), 2048))
    if block_v & (block_v - 1):
        raise ValueError(f"tuning: {TUNING_OP}.vocab_block_v must be a power of 2, got {block_v}")
    warps = _tuning.get(TUNING_OP, "vocab_warps", max(1, min(4, block_v // 512)))
    for v0 in range(0, V, chunk):
        v1 = min(v0 + chunk, V)
        logits = buffer[: rows * (v1 - v0)].view(rows, v1 - v0)
        if bias is None:
            torch.mm(x, weight[v0:v1].t(), out=logits)
        else:
            torch.addmm(bias[v0:v1], x, weight[v0:v1].t(), out=logits)
        _run_vocab_chunk[(rows,)](
            logits, logits.stride(0), target, running_max, running_sum, target_z, sum_z, v0, v1 - v0,
            float(softcap or 1.0), BLOCK_V=block_v, HAS_SOFTCAP=softcap is not None,
            HAS_SMOOTHING=label_smoothing > 0, FIRST=v0 == 0, num_warps=warps)
    return running_max, running_sum, target_z, rest[0] if rest else None


def _finish_vocab_loss(running_max, running_sum, target_z, sum_z, target, V, ignore_index, label_smoothing,
                       lse_square_scale):
    """Per-token loss and lse (fp32 [BT]) from each row's max, sum of exp, target logit and (label smoothing) sum of
    logits: 0 for ignored rows, nan for a target outside [0, V)."""
    lse = running_max + running_sum.log()
    loss = lse - (1.0 - label_smoothing) * target_z
    if label_smoothing > 0:
        loss = loss - label_smoothing * sum_z / V
    if lse_square_scale > 0:
        loss = loss + lse_square_scale * lse * lse
    valid = _kept(target, ignore_index)
    bad = valid & ((target < 0) | (target >= V))  # never in any chunk: nan, as the loss kernel gives
    nan = torch.full_like(lse, float("nan"))
    per_token_loss = torch.where(bad, nan, torch.where(valid, loss, torch.zeros_like(loss)))
    return per_token_loss, torch.where(bad, nan, lse)


# ----------------------------------------------------------------------------------------------------------------
# fp32 accumulation of the weight gradient
# ----------------------------------------------------------------------------------------------------------------
class _Fp32Sum:
    """Sums a_c^T b_c over chunks in fp32 into a [V, H] result in `dtype`: the weight gradient (a_c = d loss /
    d logits of a chunk of rows, b_c = those rows of x) or, in the vocab schedule, the x gradient (a_c = the
    transposed d loss / d logits of a vocabulary chunk, b_c = those rows of the weight; V counts x's rows).

    For bf16/fp16 the fp32 sum of rows [0, ~V/2) lives in the output tensor's own bytes (4 bytes per element for
    half the rows = 2 bytes per element for all rows), so the only extra buffer is fp32 rows [~V/2, V).
    """

    def __init__(self, V: int, H: int, dtype: torch.dtype, device: torch.device):
        self.grad = torch.empty(V, H, dtype=dtype, device=device)
        if dtype == torch.float32:
            self.split = V
            self.head = self.grad.zero_()
            self.tail = self.grad[V:]
        else:
            self.split = V // 2 // 8 * 8  # keeps the tail's columns of grad_logits 16-byte aligned for cuBLAS
            self.head = self.grad.view(-1)[: 2 * self.split * H].view(torch.float32).view(self.split, H).zero_()
            self.tail = torch.zeros(V - self.split, H, dtype=torch.float32, device=device)

    def add_(self, grad_logits: torch.Tensor, x: torch.Tensor) -> None:
        """sum += grad_logits^T x for one chunk: grad_logits [rows, V], x [rows, H]."""
        _addmm_into_fp32_(self.head, grad_logits[:, : self.split].t(), x)
        if self.tail.shape[0]:
            _addmm_into_fp32_(self.tail, grad_logits[:, self.split:].t(), x)

    def finish(self, scale=None) -> torch.Tensor:
        """The gradient in the weight's dtype, times `scale` (None, a float or a 0-d tensor) applied in fp32."""
        if self.grad.dtype == torch.float32:
            return self.grad if scale is None else self.grad.mul_(scale)
        _narrow_in_place(self.head, self.grad[: self.split], scale)
        if scale is None:
            self.grad[self.split:].copy_(self.tail)
        else:
            torch.mul(self.tail, scale, out=self.grad[self.split:])
        self.tail = None  # frees the fp32 half before the caller sees the gradient
        return self.grad


def _narrow_in_place(wide: torch.Tensor, narrow: torch.Tensor, scale=None, first_rows: int = 1024) -> None:
    """narrow[:] = wide[:] (* scale, in fp32) where fp32 `wide` [R, H] occupies the first 4RH bytes of the same
    storage as the 2-byte `narrow` [R, H]. Rows go in growing slabs [s, 2s): their 2-byte destination overlaps only
    fp32 rows below s, already converted, so every slab but the first (which goes through a temporary) is direct."""
    rows = wide.shape[0]
    stop = min(rows, first_rows)
    narrow[:stop].copy_((wide[:stop] if scale is None else wide[:stop] * scale).to(narrow.dtype))
    while stop < rows:
        start, stop = stop, min(rows, 2 * stop)
        if scale is None:
            narrow[start:stop].copy_(wide[start:stop])
        else:
            torch.mul(wide[start:stop], scale, out=narrow[start:stop])


# ----------------------------------------------------------------------------------------------------------------
# The chunk loop
# ----------------------------------------------------------------------------------------------------------------
# Every kernel launches through FastLaunch (greyhound/_launch.py): Triton's per-call argument binding runs once per
# launch key instead of on every call.
_run_vocab_chunk = FastLaunch(_vocab_chunk_kernel)
_run_merge_lse_partials = FastLaunch(_merge_lse_partials_kernel)


def _split_scale(grad_scale, fold: bool) -> tuple:
    """(kernel_scale, late_scale) of a float, 0-d or per-row [BT] `grad_scale`: a per-row scale, and any scale when
    `fold`, goes into d loss / d logits (kernel_scale); otherwise kernel_scale is 1 and the one scale is applied to
    the GEMM results (late_scale; None when nothing is left to apply or it is exactly 1)."""
    if fold or (isinstance(grad_scale, torch.Tensor) and grad_scale.dim() == 1):
        return grad_scale, None
    return 1.0, None if not isinstance(grad_scale, torch.Tensor) and grad_scale == 1 else grad_scale


def _vocab_major_grads(x, weight, bias, target, lse, grad_scale, needs_grad, chunk_cols, ignore_index,
                       label_smoothing, softcap, lse_square_scale):
    """The gradients of grad_scale * per_token_loss summed over rows (grad_schedule="vocab"), from each row's lse
    (fp32 [BT], from the loss pass): for each chunk of `chunk_cols` vocabulary entries, the logits of all rows
    (one GEMM), d loss / d logits in place (the gradient kernel), grad_x += g W_c (fp32 sum over chunks),
    grad_W[chunk] = g^T x and grad_b[chunk] = sum of g's rows, each written once. `grad_scale`: float, 0-d or
    per-row [BT] tensor. In bf16/fp32 (and any per-row scale) the scale goes into d loss / d logits; in fp16 one
    scale is applied to fp32 GEMM results instead (as in the rows schedule: a 1 / BT factor would flush small
    entries)."""
    rows, hidden = x.shape
    V = weight.shape[0]
    need_x, need_weight, need_bias = needs_grad
    kernel_scale, late_scale = _split_scale(grad_scale, fold=x.dtype != torch.float16)
    late = late_scale is not None
    chunk = min(V, chunk_cols or _tuning.get(TUNING_OP, "grad_vocab_chunk",
                                             _auto_grad_vocab_chunk(rows, V, x.element_size())))
    scale, scale_stride = _grad_scale_arg(kernel_scale, rows, x)
    grad_x = _Fp32Sum(rows, hidden, x.dtype, x.device) if need_x else None
    grad_weight = torch.empty(V, hidden, device=x.device, dtype=weight.dtype) if need_weight else None
    # fp16's weight-gradient block goes through fp32, where the scale is applied before the one rounding
    block_fp32 = torch.empty(chunk, hidden, device=x.device, dtype=torch.float32) if need_weight and late else None
    grad_bias = torch.empty(V, device=x.device, dtype=torch.float32) if need_bias else None
    buffer = torch.empty(rows * chunk, device=x.device, dtype=x.dtype)
    block_v = min(next_power_of_2(chunk), 1024)
    scalars = (V, ignore_index, float(label_smoothing), float(softcap or 1.0), float(lse_square_scale))
    for v0 in range(0, V, chunk):
        v1 = min(v0 + chunk, V)
        w = weight[v0:v1]
        g = buffer[: rows * (v1 - v0)].view(rows, v1 - v0)
        if bias is None:
            torch.mm(x, w.t(), out=g)
        else:
            torch.addmm(bias[v0:v1], x, w.t(), out=g)
        _run_gradient[(rows, triton.cdiv(v1 - v0, block_v))](
            g, g.stride(0), g, g.stride(0), target, lse, scale, scale_stride, *scalars, v0, v1 - v0,
            BLOCK_V=block_v, HAS_SOFTCAP=softcap is not None, HAS_Z_LOSS=lse_square_scale > 0,
            num_warps=max(1, min(4, block_v // 256)))
        # from here `g` holds d loss / d logits of the chunk
        if need_x:
            grad_x.add_(g.t(), w)
        if need_weight and not late:
            torch.mm(g.t(), x, out=grad_weight[v0:v1])
        elif need_weight:
            block = block_fp32[: v1 - v0].zero_()
            _addmm_into_fp32_(block, g.t(), x)
            torch.mul(block, late_scale, out=grad_weight[v0:v1])
        if need_bias:
            torch.sum(g, dim=0, dtype=torch.float32, out=grad_bias[v0:v1])
    del buffer, g, block_fp32
    if need_x:
        grad_x = grad_x.finish(late_scale)
    if need_bias:
        grad_bias = (grad_bias if late_scale is None else grad_bias * late_scale).to(bias.dtype)
    return grad_x, grad_weight, grad_bias


def _chunked_loss_and_grads(x, weight, bias, target, grad_scale, needs_grad, chunk_size, options,
                            forward_schedule="rows", grad_schedule="rows", lse=None):
    """Per-token loss and lse (fp32 [BT]) and, for the inputs flagged in `needs_grad` (x, weight, bias), the
    gradients of sum_rows grad_scale * per_token_loss. `grad_scale`: float, 0-d tensor or per-row [BT] tensor; a
    per-row scale is folded into d loss / d logits (in the inputs' dtype), one scale is applied to the GEMM results
    (so fp16 keeps the small gradient entries that a 1 / BT factor would push below its range). Without any
    gradient, forward_schedule="vocab" walks the vocabulary in chunks instead of the rows. With one,
    grad_schedule="vocab" runs the loss pass that way (skipped when `lse` is given: then per_token_loss is None)
    and then _vocab_major_grads; `chunk_size` counts vocabulary entries there."""
    rows, V = x.shape[0], weight.shape[0]
    need_x, need_weight, need_bias = needs_grad
    with_grad = any(needs_grad)
    if with_grad and grad_schedule == "vocab" and rows > 0:
        per_token_loss = None
        if lse is None:
            per_token_loss, lse = _vocab_major_loss(x, weight, bias, target, chunk_size, **options)
        return (per_token_loss, lse,
                *_vocab_major_grads(x, weight, bias, target, lse, grad_scale, needs_grad, chunk_size, **options))
    if not with_grad and rows > 0 and _tuning.get(TUNING_OP, "vocab_schedule", forward_schedule == "vocab"):
        # chunk_size counts vocabulary entries only when the caller asked for the vocab schedule
        per_token_loss, lse = _vocab_major_loss(x, weight, bias, target,
                                                chunk_size if forward_schedule == "vocab" else None, **options)
        return per_token_loss, lse, None, None, None
    # fp16 never takes one chunk: its scale must come after the GEMMs (module docstring), which needs the fp32 sum
    one_chunk_dtype = x.dtype != torch.float16
    chunk = chunk_size or _tuning.get(TUNING_OP, "chunk_rows", _auto_chunk_rows(
        rows, V, x.element_size(), with_grad, one_chunk=one_chunk_dtype))
    per_token_loss = torch.empty(rows, device=x.device, dtype=torch.float32)
    lse = torch.empty(rows, device=x.device, dtype=torch.float32)
    logits_buffer = torch.empty(min(chunk, rows), V, device=x.device, dtype=x.dtype)
    # One chunk (chunk_size >= BT): the weight gradient is one GEMM whose K spans every row, so cuBLAS's own fp32
    # accumulator is the fp32 sum, written once in the weight's dtype: no fp32 V x H buffer, no narrowing. The
    # scale then goes into d loss / d logits (in the kernel, before the one rounding), except in fp16, where a
    # 1 / BT factor would push small entries below its range.
    direct = 0 < rows <= chunk and one_chunk_dtype
    grad_x = torch.empty(x.shape, device=x.device, dtype=x.dtype) if need_x else None
    grad_weight = None
    if need_weight and not direct:
        grad_weight = _Fp32Sum(V, x.shape[1], weight.dtype, x.device)
    grad_bias = torch.zeros(V, device=x.device, dtype=torch.float32) if need_bias else None
    per_row_scale = isinstance(grad_scale, torch.Tensor) and grad_scale.dim() == 1
    # with one chunk any scale goes into d loss / d logits
    kernel_scale, late_scale = _split_scale(grad_scale, fold=direct)

    for start in range(0, rows, chunk):
        stop = min(start + chunk, rows)
        x_chunk = x[start:stop]
        logits = logits_buffer[: stop - start]
        if bias is None:
            torch.mm(x_chunk, weight.t(), out=logits)
        else:
            torch.addmm(bias, x_chunk, weight.t(), out=logits)
        _cross_entropy_rows(
            logits, target[start:stop], logits if with_grad else None,
            kernel_scale[start:stop] if per_row_scale else kernel_scale,
            per_token_loss=per_token_loss[start:stop], lse=lse[start:stop], **options,
        )
        # from here `logits` holds d loss / d logits of this chunk
        if need_x:
            torch.mm(logits, weight, out=grad_x[start:stop])
        if need_weight and direct:
            grad_weight = torch.mm(logits.t(), x_chunk)
        elif need_weight:
            grad_weight.add_(logits, x_chunk)
        if need_bias:
            grad_bias += logits.sum(dim=0, dtype=torch.float32)

    if late_scale is not None and need_x:
        grad_x.mul_(late_scale)
    if need_weight and not direct:
        grad_weight = grad_weight.finish(late_scale)
    if need_bias:
        grad_bias = (grad_bias if late_scale is None else grad_bias * late_scale).to(bias.dtype)
    return per_token_loss, lse, grad_x, grad_weight, grad_bias


# Registered ops (greyhound::linear_cross_entropy_fwd / _bwd) with fake implementations and autograd, so that
# torch.compile keeps them in its graph (fullgraph=True). The forward op makes the loss and, for reductions "mean"
# and "sum", the gradients of the inputs flagged in `needs_grad` (returned as outputs, saved, rescaled in place
# by the backward); reduction "none" recomputes the chunks in the backward op, where the per-token grad_output is
# known. The target check runs inside the forward op, at run time (never while tracing).
def _options(ignore_index, label_smoothing, softcap, lse_square_scale):
    return dict(ignore_index=ignore_index, label_smoothing=label_smoothing, softcap=softcap or None,
                lse_square_scale=lse_square_scale)


@torch.library.custom_op("greyhound::linear_cross_entropy_fwd", mutates_args=())
def _linear_cross_entropy_fwd(
    x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], target: torch.Tensor, reduction: int,
    chunk_size: int, ignore_index: int, label_smoothing: float, softcap: float, lse_square_scale: float,
    vocab_schedule: bool, grad_vocab: bool, needs_grad: list[bool], check_target: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(loss, per_token_loss, lse, grad_x, grad_weight, grad_bias). `reduction` indexes REDUCTIONS; chunk_size 0
    means automatic; softcap 0 means none. loss is 0-d, or the per-token loss for "none" (then the per_token_loss
    slot is a 0-element tensor: outputs must not alias). Gradients (for "mean"/"sum", where `needs_grad` asks,
    unless `grad_vocab`: then the backward op makes them) are of the reduced loss; the others are 0-element."""
    V = weight.shape[0]
    # counted and checked (one sync) before the chunks: their work queues behind it
    n_valid = _valid_targets(target, V, ignore_index, check_target)
    options = _options(ignore_index, label_smoothing, softcap, lse_square_scale)
    reduction = REDUCTIONS[reduction]
    grads = (None, None, None)
    if _grads_in_backward(reduction, grad_vocab) or not any(needs_grad):
        per_token_loss, lse, *_ = _chunked_loss_and_grads(
            x, weight, bias, target, 0.0, (False, False, False), chunk_size or None, options,
            "vocab" if vocab_schedule else "rows")
    else:
        # clamped: with every token ignored d loss / d logits is 0, and 0 * inf would be nan
        grad_scale = n_valid.clamp_min(1).float().reciprocal_() if reduction == "mean" else 1.0
        per_token_loss, lse, *grads = _chunked_loss_and_grads(
            x, weight, bias, target, grad_scale, tuple(needs_grad), chunk_size or None, options)
    loss = _reduce(per_token_loss, n_valid, reduction)
    return (loss, per_token_loss.new_empty(0) if reduction == "none" else per_token_loss, lse,
            *(x.new_empty(0) if grad is None else grad for grad in grads))


def _grads_in_backward(reduction: str, grad_vocab: bool) -> bool:
    """Whether the backward op makes the gradients: reduction "none" (the per-token grad_output is known only
    there) and the vocab gradient schedule (from the lse the forward saved)."""
    return reduction == "none" or grad_vocab


def _gradient_likes(x, weight, bias, needs_grad):
    """Fake gradients as the chunk loop allocates them (contiguous, the input's dtype), 0-element where not asked."""
    return tuple(torch.empty(like.shape, dtype=like.dtype, device=like.device) if need else x.new_empty(0)
                 for need, like in zip(needs_grad, (x, weight, bias)))


@_linear_cross_entropy_fwd.register_fake
def _linear_cross_entropy_fwd_fake(x, weight, bias, target, reduction, chunk_size, ignore_index, label_smoothing,
                                   softcap, lse_square_scale, vocab_schedule, grad_vocab, needs_grad, check_target):
    rows = x.shape[0]
    per_row = x.new_empty(rows, dtype=torch.float32)
    lse = x.new_empty(rows, dtype=torch.float32)
    if REDUCTIONS[reduction] == "none":
        return (per_row, x.new_empty(0, dtype=torch.float32), lse, *_gradient_likes(x, weight, bias, [False] * 3))
    return (x.new_empty((), dtype=torch.float32), per_row, lse,
            *_gradient_likes(x, weight, bias, [False] * 3 if grad_vocab else needs_grad))


@torch.library.custom_op("greyhound::linear_cross_entropy_bwd", mutates_args=())
def _linear_cross_entropy_bwd(
    x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], target: torch.Tensor, lse: torch.Tensor,
    grad_per_token_loss: torch.Tensor, chunk_size: int, ignore_index: int, label_smoothing: float, softcap: float,
    lse_square_scale: float, grad_vocab: bool, needs_grad: list[bool],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(grad_x, grad_weight, grad_bias) of sum_rows grad_per_token_loss * per_token_loss; 0-element where
    `needs_grad` says none. grad_per_token_loss is [BT] (reduction "none": the per-row scale goes into d loss /
    d logits) or 0-d (one scale: grad_output, over the valid rows for "mean"). The rows schedule recomputes
    everything; `grad_vocab` recomputes the logits a vocabulary chunk at a time from the forward's `lse`."""
    _, _, *grads = _chunked_loss_and_grads(
        x, weight, bias, target, grad_per_token_loss, tuple(needs_grad), chunk_size or None,
        _options(ignore_index, label_smoothing, softcap, lse_square_scale),
        grad_schedule="vocab" if grad_vocab else "rows", lse=lse if grad_vocab else None)
    return tuple(x.new_empty(0) if grad is None else grad for grad in grads)


@_linear_cross_entropy_bwd.register_fake
def _linear_cross_entropy_bwd_fake(x, weight, bias, target, lse, grad_per_token_loss, chunk_size, ignore_index,
                                   label_smoothing, softcap, lse_square_scale, grad_vocab, needs_grad):
    return _gradient_likes(x, weight, bias, needs_grad)


def _linear_cross_entropy_setup_context(ctx, inputs, output):
    (x, weight, bias, target, reduction, chunk_size, ignore_index, label_smoothing, softcap, lse_square_scale,
     vocab_schedule, grad_vocab, needs_grad, _) = inputs
    _, per_token_loss, lse, *grads = output
    ctx.needs = list(needs_grad)
    ctx.reduction = REDUCTIONS[reduction]
    ctx.recompute = _grads_in_backward(ctx.reduction, grad_vocab)
    if ctx.recompute:
        ctx.save_for_backward(x, weight, bias, target, lse)
        ctx.grad_vocab = grad_vocab
        # with the vocab schedule (and not the vocab gradients), chunk_size counted vocabulary entries; the
        # backward then chunks rows (automatic)
        ctx.chunk_size = 0 if vocab_schedule and not grad_vocab else chunk_size
        ctx.options = (ignore_index, label_smoothing, softcap, lse_square_scale)
    else:
        ctx.save_for_backward(*grads)
    ctx.mark_non_differentiable(per_token_loss, lse, *grads)
    ctx.set_materialize_grads(False)


def _linear_cross_entropy_backward(ctx, grad_loss, *_grads_of_non_differentiable_outputs, eager=False):
    _hand_out_once(ctx, "chunked_linear_cross_entropy")
    needs = [need and asked for need, asked in zip(ctx.needs, ctx.needs_input_grad[:3])]
    if grad_loss is None or not any(needs):
        return (None,) * 14
    if ctx.recompute:
        x, weight, bias, target, lse = ctx.saved_tensors
        if ctx.reduction == "mean":  # clamped: with every token ignored d loss / d logits is 0 (0 * inf is nan)
            ignore_index = ctx.options[0]
            grad_loss = grad_loss / _kept(target, ignore_index).sum().clamp_min(1)
        grads = _library.run(_linear_cross_entropy_bwd, eager, x, weight, bias, target, lse, grad_loss,
                             ctx.chunk_size, *ctx.options, ctx.grad_vocab, needs)
    else:
        grads = ctx.saved_tensors
        for grad, need in zip(grads, needs):
            if need:  # a no-op on the device for loss.backward()'s grad_output of 1: no host sync
                _library.run(_cross_entropy_scale_grad_, eager, grad, grad_loss)
    # fresh references to the buffers, so that autograd can make them the .grad without a copy
    return (*(grad.detach() if need else None for grad, need in zip(grads, needs)),) + (None,) * 11


_linear_cross_entropy_fwd.register_autograd(_linear_cross_entropy_backward,
                                            setup_context=_linear_cross_entropy_setup_context)


_linear_cross_entropy_eager = _library.twin(_linear_cross_entropy_fwd, _linear_cross_entropy_setup_context,
                                            _linear_cross_entropy_backward)


# ----------------------------------------------------------------------------------------------------------------
# Public functions
# ----------------------------------------------------------------------------------------------------------------
def chunked_linear_cross_entropy(
    x: torch.Tensor,
    weight: torch.Tensor,
    target: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    *,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
    softcap: Optional[float] = None,
    lse_square_scale: float = 0.0,
    return_per_token_loss: bool = False,
    return_lse: bool = False,
    chunk_size: Optional[int] = None,
    check_target: bool = True,
    forward_schedule: str = "auto",
    grad_schedule: str = "auto",
):
    """Cross-entropy of the logits `x @ weight.T + bias` (x [BT, H], weight [V, H], bias [V]) against `target`
    [BT], with the options and outputs of `cross_entropy_with_grad`, computed `chunk_size` rows at a time so that
    at most one chunk of logits exists. Default: from the shapes; without a gradient, 64 MiB of logits; with one,
    in bf16/fp32, all rows in one chunk while the BT x V logits fit 4 GiB (the fastest: on the H200 at BT=8192,
    H=4096, V=128256 bf16 38.97 ms and 3070 MiB above the inputs, torch.compile 40.77 ms and 6012 MiB), else (and
    in fp16) about 256 MiB and at least 1024 rows a chunk (there 44.9 ms, 2343 MiB). Pass `chunk_size` to bound
    the memory: the weight gradient's fp32 sum across chunks then costs V x H x 4 bytes and more time.

    Contract: x, weight, bias share one float dtype (fp32/bf16/fp16); GEMMs through torch (cuBLAS) accumulate in
    fp32, the softmax math is fp32, the weight and bias gradients are summed over chunks in fp32 and returned in
    the parameters' dtype; loss, per-token loss and lse are fp32. Inputs are never written.

    When a gradient is needed, all of x's, weight's and bias's gradients (those that require grad) are computed
    in the forward pass and kept until `backward` (which only rescales them; one backward per call). With
    reduction="none" they are computed in `backward` instead, where the per-token grad_output is known (and
    folded into d loss / d logits in the inputs' dtype: in fp16, products below ~6e-8 flush to zero, as in torch).

    `forward_schedule` picks how a pass with no gradient (no input requires grad, or the forward of
    reduction="none") walks the logits: "rows" makes `chunk_size` rows x V at a time; "vocab" makes all BT rows x
    `chunk_size` vocabulary entries at a time (default: 64 MiB with the running fp32 values, a multiple of 32
    entries), so every GEMM is full-height, and merges each chunk into running log-sum-exps; passes with a
    gradient then use "rows" with automatic chunks. "auto" (default) is "vocab" unless `chunk_size` is given (then
    "rows", `chunk_size` counting rows). The two agree to fp32 rounding of the sums; on the H200 at BT=8192,
    H=4096, V=128256 bf16 "vocab" took 13.2-13.6 ms against 14.9 for "rows" (docs/perf/cross_entropy.md). With
    automatic chunks on Hopper (bf16/fp16 rows TMA can load) the vocab pass is one fused GEMM with the log-sum-exp
    in its epilogue (greyhound/ops/_lce_gluon.py; tunable `fused_lse`): no logits are written, 31.4 MiB of per-tile
    partials at that shape, 12.9-13.0 ms in asv against torch.compile's 13.5-13.8 in the same runs.

    `grad_schedule` picks how the gradients are made. "rows" (and "auto", the default) is the fast schedule above:
    three GEMMs, all in the forward. "vocab" is the low-memory one: the forward is the loss-only pass of
    forward_schedule="vocab" (which saves each row's lse), and the backward recomputes the logits of all rows a
    vocabulary chunk at a time (`chunk_size` entries; default about 48 MiB of logits), so each block of the weight
    gradient is one GEMM over every row, fp32-accurate and written once: four GEMMs, and peak memory the gradients
    + an fp32 half of x's gradient + one chunk (about 1.24 GB at BT=8192, H=4096, V=128256 bf16, against the
    one-chunk schedule's 3.2 GB). It cannot be combined with forward_schedule="rows" (a ValueError).

    Inside torch.compile the function is a registered torch.library op (no graph break with fullgraph=True).

    `check_target=True` raises a ValueError naming `target` for an entry outside [0, V) other than ignore_index
    (one host sync, before the chunks; inside a compiled graph when it runs, never while torch.compile traces;
    skipped while a CUDA graph is captured).
    check_target=False: no host sync; an out-of-range target gives NaN instead of an error (its per-token loss
    and lse are nan, and so are the loss and the gradients that sum over it); it is never read out of bounds.
    """
    check_tensor("x", x, dtypes=FLOAT_DTYPES, ndim=2)
    check_triton_device("x", x)
    check_tensor("weight", weight, dtypes=(x.dtype,), ndim=2, like=x)
    if weight.shape[1] != x.shape[1]:
        raise ValueError(f"weight must have shape (V, {x.shape[1]}) to match x's hidden size, got "
                         f"{tuple(weight.shape)}")
    if weight.shape[0] == 0:
        raise ValueError(f"weight must have at least one row (V >= 1), got shape {tuple(weight.shape)}")
    V = weight.shape[0]
    if bias is not None:
        check_tensor("bias", bias, dtypes=(x.dtype,), ndim=1, like=x)
        if bias.shape[0] != V:
            raise ValueError(f"bias must have shape ({V},) like weight's rows, got {tuple(bias.shape)}")
    check_tensor("target", target, dtypes=TARGET_DTYPES, ndim=1, like=x)
    if target.shape[0] != x.shape[0]:
        raise ValueError(f"target must have one entry per row of x ({x.shape[0]}), got shape {tuple(target.shape)}")
    if chunk_size is not None and (not is_int(chunk_size) or chunk_size < 1):
        raise ValueError(f"chunk_size must be None or a positive int, got {chunk_size!r}")
    chunk_size = None if chunk_size is None else int(chunk_size)
    ignore_index = _check_options(reduction, ignore_index, label_smoothing, softcap, lse_square_scale)
    for name, flag in (("return_per_token_loss", return_per_token_loss), ("return_lse", return_lse),
                       ("check_target", check_target)):
        check_bool(name, flag)
    check_choice("forward_schedule", forward_schedule, FORWARD_SCHEDULES)
    check_choice("grad_schedule", grad_schedule, GRAD_SCHEDULES)
    grad_vocab = grad_schedule == "vocab" or (
        grad_schedule == "auto" and _tuning.get(TUNING_OP, "grad_vocab_schedule", False))
    if grad_vocab and forward_schedule == "rows":
        raise ValueError("grad_schedule='vocab' runs the loss pass over vocabulary chunks: forward_schedule must be "
                         "'auto' or 'vocab' with it, got forward_schedule='rows'")
    target = target.contiguous()
    inputs = (x, weight, bias)
    grad_enabled = torch.is_grad_enabled()
    needs_grad = [grad_enabled and t is not None and t.requires_grad for t in inputs]
    loss, per_token_loss, lse, *_ = _library.call(
        _linear_cross_entropy_fwd, _linear_cross_entropy_eager, x, weight, bias, target, REDUCTIONS.index(reduction),
        chunk_size or 0, ignore_index, float(label_smoothing), float(softcap or 0.0), float(lse_square_scale),
        forward_schedule == "vocab" or (forward_schedule == "auto" and chunk_size is None) or grad_vocab, grad_vocab,
        needs_grad, check_target)
    if reduction == "none":
        per_token_loss = loss.detach()
    return _outputs(loss, per_token_loss, lse, return_per_token_loss, return_lse)


def chunked_linear_cross_entropy_reference(
    x: torch.Tensor,
    weight: torch.Tensor,
    target: torch.Tensor,
    bias: Optional[torch.Tensor] = None,
    *,
    chunk_size: Optional[int] = None,
    forward_schedule: str = "auto",
    grad_schedule: str = "auto",
    **options,
):
    """Plain PyTorch: `cross_entropy_reference(x @ weight.T + bias, target, **options)`, the logits made in the
    inputs' dtype and the loss computed in fp32 (fp64 for fp64 inputs); `chunk_size`, `forward_schedule` and
    `grad_schedule` are accepted (same signature as the kernel) and ignored."""
    logits = x @ weight.t() if bias is None else torch.addmm(bias, x, weight.t())
    return cross_entropy_reference(logits, target, **options)
