"""Newton-Schulz orthogonalisation (the zeroth power of Muon): G (..., m, n) -> an approximation of U Vᵀ.

`newton_schulz(G)` normalises each matrix by its Frobenius norm, X = G / (‖G‖_F + eps) (transposed first when
m > n, so that X Xᵀ is the small side), then runs the quintic iteration X ← a·X + (b·A + c·A²)·X, A = X Xᵀ, with
one (a, b, c) per step: Muon's fixed coefficients, the Polar Express schedule, or the caller's list.

A = X Xᵀ and B = b·A + c·A² are symmetric (A² = A Aᵀ), so each step is three Triton GEMMs of which two compute
only the tiles on or above the diagonal and store each one twice (itself and its mirror):
  1. A = X Xᵀ             (m × m from m × n, upper tiles)
  2. B = c·A Aᵀ + b·A     (m × m from m × m, upper tiles, b·A added in the epilogue)
  3. X' = B X + a·X       (m × n, a·X added in the epilogue; the last step writes G's dtype and layout directly)
Every product accumulates in fp32 and rounds once to the compute dtype; the program grid's third axis is the batch.
Non-square matrices iterate on the Gram matrix instead (`method="gram"`, Gram Newton-Schulz): every product is
m × m and symmetric, X is touched four times in all (see `_gram_iteration`).
"""
import math
import struct

import torch
import triton
import triton.language as tl

from greyhound import _library, _tuning
from greyhound._launch import FastLaunch, cdiv, next_power_of_2
from greyhound._validate import FLOAT_DTYPES, as_float, check_choice, check_tensor, check_triton_device, is_int, is_real

DEFAULT_STEPS = 5
MAX_STEPS = 1000  # steps a call may take (Muon takes 5, Polar Express 8): more is a mistake, not a request
# Keller Jordan's Muon (github.com/KellerJordan/Muon, zeropower_via_newtonschulz5): the same polynomial every step.
MUON_COEFFICIENTS = ((3.4445, -4.7750, 2.0315),)
# Amsel, Persson, Musco, Gower, "The Polar Express" (arXiv 2505.16932), Algorithm 1: one polynomial per step, all
# but the last divided by the safety factor 1.01 (a / 1.01, b / 1.01³, c / 1.01⁵); steps past the list repeat the last.
_POLAR_EXPRESS_UNSCALED = (
    (8.28721201814563, -23.595886519098837, 17.300387312530933),
    (4.107059111542203, -2.9478499167379106, 0.5448431082926601),
    (3.9486908534822946, -2.908902115962949, 0.5518191394370137),
    (3.3184196573706015, -2.488488024314874, 0.51004894012372),
    (2.300652019954817, -1.6689039845747493, 0.4188073119525673),
    (1.891301407787398, -1.2679958271945868, 0.37680408948524835),
    (1.8750014808534479, -1.2500016453999487, 0.3750001645474248),
    (1.875, -1.25, 0.375),
)
POLAR_EXPRESS_SAFETY = 1.01
POLAR_EXPRESS_COEFFICIENTS = tuple(
    (a / POLAR_EXPRESS_SAFETY, b / POLAR_EXPRESS_SAFETY**3, c / POLAR_EXPRESS_SAFETY**5)
    for a, b, c in _POLAR_EXPRESS_UNSCALED[:-1]
) + _POLAR_EXPRESS_UNSCALED[-1:]
COEFFICIENT_SETS = {"muon": MUON_COEFFICIENTS, "polar_express": POLAR_EXPRESS_COEFFICIENTS}
# Algorithm 1 also divides by 1.01·‖G‖_F (bf16 rounding may lift the top singular value past 1, where its first,
# steep polynomial overshoots); Muon divides by ‖G‖_F.
NORM_SCALE = {"muon": 1.0, "polar_express": POLAR_EXPRESS_SAFETY}
MAX_GRID_BATCH = 65535  # CUDA's limit on the grid's third axis; larger batches are launched in slices
MAX_MATRIX_ELEMENTS = 2**31  # kernels index within one matrix in int32 (the batch offset is int64)
# Gram Newton-Schulz (Dao-AILab, gram-newton-schulz): restart from X (X ← Q X, R ← X Xᵀ) at step 2 (their default for
# 5 steps) and every 3 steps after it, which bounds how far the rounding of the Gram-matrix recurrence drifts (fp32,
# Polar Express, 8 steps: max |σ − 1| 6e-3 with the one restart at 2, < 1e-5 with restarts at 2 and 5).
GRAM_FIRST_RESTART, GRAM_RESTART_EVERY = 2, 3
TUNING_OP = "newton_schulz"
_tuning.register(
    TUNING_OP,
    gram=(bool, "iterate on the Gram matrix (default: for non-square matrices)"),
    sym_block=(int, "tile edge of the symmetric products"), sym_block_k=(int, "their K step"),
    sym_warps=(int, "their num_warps"), sym_stages=(int, "their num_stages"),
    apply_block_m=(int, "rows of a B X + a·X tile"), apply_block_n=(int, "its columns"),
    apply_block_k=(int, "its K step"), apply_group_m=(int, "row tiles per L2 group"),
    apply_warps=(int, "its num_warps"), apply_stages=(int, "its num_stages"),
)


# ----------------------------------------------------------------------------------------------------------------
# Kernels
# ----------------------------------------------------------------------------------------------------------------
@triton.jit
def _upper_tile(pid):
    """(row tile, column tile) with row <= column of the pid-th tile on or above the diagonal, column by column:
    column c holds pids c(c+1)/2 ... c(c+1)/2 + c."""
    col = ((tl.sqrt((8 * pid + 1).to(tl.float32)) - 1.0) * 0.5).to(tl.int32)
    # tl.sqrt may be approximate: step back or forward once to the exact column.
    col = tl.where(col * (col + 1) // 2 > pid, col - 1, col)
    col = tl.where((col + 1) * (col + 2) // 2 <= pid, col + 1, col)
    return pid - col * (col + 1) // 2, col


@triton.jit
def _tile_product(x_ptr, y_ptr, tile_row, tile_col, size, depth, stride_xr, stride_xc, stride_yr, stride_yc,
                  INPUT_PRECISION: tl.constexpr, BLOCK: tl.constexpr, BLOCK_K: tl.constexpr):
    """(rows, cols, row_mask, col_mask, X[rows] Y[cols]ᵀ) of the (tile_row, tile_col) tile of X Yᵀ for X, Y
    [size, depth]: fp32 accumulation of the operands' dtype (Y = X for X Xᵀ)."""
    rows = tile_row * BLOCK + tl.arange(0, BLOCK)
    cols = tile_col * BLOCK + tl.arange(0, BLOCK)
    k = tl.arange(0, BLOCK_K)
    row_mask, col_mask = rows < size, cols < size
    left_ptrs = x_ptr + rows[:, None] * stride_xr + k[None, :] * stride_xc
    right_ptrs = y_ptr + cols[:, None] * stride_yr + k[None, :] * stride_yc
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k_start in range(0, depth, BLOCK_K):
        k_mask = (k_start + k) < depth
        left = tl.load(left_ptrs, mask=row_mask[:, None] & k_mask[None, :], other=0.0)
        right = tl.load(right_ptrs, mask=col_mask[:, None] & k_mask[None, :], other=0.0)
        acc = tl.dot(left, tl.trans(right), acc, input_precision=INPUT_PRECISION)
        left_ptrs += BLOCK_K * stride_xc
        right_ptrs += BLOCK_K * stride_yc
    return rows, cols, row_mask, col_mask, acc


@triton.jit
def _scale_plus_addend(acc, alpha, addend_ptr, batch, stride_ob, rows, cols, row_mask, col_mask, stride_or, stride_oc,
                       beta, HAS_ADDEND: tl.constexpr):
    """(alpha · acc (+ beta · the addend's tile, read in fp32 at out's strides), the tile's offsets in out, its mask)."""
    acc = acc * alpha
    tile_offsets = rows[:, None] * stride_or + cols[None, :] * stride_oc
    tile_mask = row_mask[:, None] & col_mask[None, :]
    if HAS_ADDEND:
        addend = tl.load(addend_ptr + batch * stride_ob + tile_offsets, mask=tile_mask, other=0.0)
        acc += beta * addend.to(tl.float32)
    return acc, tile_offsets, tile_mask


@triton.jit
def _store_with_mirror(out_ptr, acc, tile_offsets, tile_mask, rows, cols, row_mask, col_mask, stride_or, stride_oc,
                       tile_row, tile_col):
    """Stores the tile in out's dtype and, off the diagonal, its transpose at the mirror place below the diagonal; a
    diagonal tile is its own mirror and is stored once."""
    tile = acc.to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + tile_offsets, tile, mask=tile_mask)
    if tile_row != tile_col:
        mirror_offsets = cols[:, None] * stride_or + rows[None, :] * stride_oc
        tl.store(out_ptr + mirror_offsets, tl.trans(tile), mask=col_mask[:, None] & row_mask[None, :])


@triton.jit
def _symmetric_product_kernel(
    x_ptr, addend_ptr, out_ptr, size, depth,
    stride_xb, stride_xr, stride_xc, stride_ob, stride_or, stride_oc,
    alpha, beta,
    HAS_ADDEND: tl.constexpr, INPUT_PRECISION: tl.constexpr, BLOCK: tl.constexpr, BLOCK_K: tl.constexpr,
):
    """out = alpha · X Xᵀ (+ beta · addend) for X [size, depth]; out and addend [size, size], symmetric.

    Grid (tiles on or above the diagonal, 1, batch): each program computes one such tile (fp32 accumulation of
    X's dtype) and stores it and its mirror, in out's dtype. The addend (strides of out) is read in fp32.
    """
    tile_row, tile_col = _upper_tile(tl.program_id(0))
    batch = tl.program_id(2).to(tl.int64)
    x_ptr += batch * stride_xb
    out_ptr += batch * stride_ob
    rows, cols, row_mask, col_mask, acc = _tile_product(x_ptr, x_ptr, tile_row, tile_col, size, depth, stride_xr,
                                                        stride_xc, stride_xr, stride_xc, INPUT_PRECISION, BLOCK,
                                                        BLOCK_K)  # rows of X: columns of Xᵀ
    acc, tile_offsets, tile_mask = _scale_plus_addend(acc, alpha, addend_ptr, batch, stride_ob, rows, cols, row_mask,
                                                      col_mask, stride_or, stride_oc, beta, HAS_ADDEND)
    _store_with_mirror(out_ptr, acc, tile_offsets, tile_mask, rows, cols, row_mask, col_mask, stride_or, stride_oc,
                       tile_row, tile_col)


@triton.jit
def _gram_product_kernel(
    x_ptr, y_ptr, addend_ptr, out_ptr, size, depth,
    stride_xb, stride_xr, stride_xc, stride_yb, stride_yr, stride_yc, stride_ob, stride_or, stride_oc,
    alpha, beta, gamma,
    HAS_ADDEND: tl.constexpr, HAS_IDENTITY: tl.constexpr, INPUT_PRECISION: tl.constexpr, BLOCK: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    """The Gram iteration's products: out = alpha · X Yᵀ (+ beta · addend) (+ gamma · I) for X, Y [size, depth] whose
    product is symmetric (two commuting symmetric matrices: polynomials of one Gram matrix, or Y = X); out and addend
    [size, size], stored exactly symmetric.

    Grid (tiles on or above the diagonal, 1, batch), as _symmetric_product_kernel; a diagonal tile's lower half is
    made the transpose of its upper half. (With rounding, X Yᵀ of commuting X, Y is not symmetric, and the Gram
    iteration reads these matrices through their transposes: diagonal tiles stored as computed made its fp32 error
    15x that of symmetric products.) This is the form asv measured at 3101637 (4096 × 14336: 5.00 ms); the standard
    iteration keeps v1's kernel, which it ran 13-45% faster than this one; launching the diagonal tiles separately
    (3200461) made the Gram iteration 16% slower (a 32-program tail launch per product): docs/perf/newton_schulz.md.
    """
    tile_row, tile_col = _upper_tile(tl.program_id(0))
    batch = tl.program_id(2).to(tl.int64)
    x_ptr += batch * stride_xb
    y_ptr += batch * stride_yb
    out_ptr += batch * stride_ob
    rows, cols, row_mask, col_mask, acc = _tile_product(x_ptr, y_ptr, tile_row, tile_col, size, depth, stride_xr,
                                                        stride_xc, stride_yr, stride_yc, INPUT_PRECISION, BLOCK,
                                                        BLOCK_K)  # rows of Y: columns of Yᵀ
    acc, tile_offsets, tile_mask = _scale_plus_addend(acc, alpha, addend_ptr, batch, stride_ob, rows, cols, row_mask,
                                                      col_mask, stride_or, stride_oc, beta, HAS_ADDEND)
    if HAS_IDENTITY:
        acc += tl.where(rows[:, None] == cols[None, :], gamma, 0.0)
    if tile_row == tile_col:
        acc = tl.where(rows[:, None] <= cols[None, :], acc, tl.trans(acc))
    _store_with_mirror(out_ptr, acc, tile_offsets, tile_mask, rows, cols, row_mask, col_mask, stride_or, stride_oc,
                       tile_row, tile_col)


@triton.jit
def _symmetric_apply_kernel(
    b_ptr, x_ptr, out_ptr, rows, cols,
    stride_bb, stride_br, stride_bc, stride_xb, stride_xr, stride_xc, stride_ob, stride_or, stride_oc,
    alpha,
    INPUT_PRECISION: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    """out = B X + alpha · X for B [rows, rows] and X [rows, cols]: fp32 accumulation of the operands' dtype, one
    rounding to out's dtype (out may have any strides, e.g. a transposed view). Grid (tiles, 1, batch); tiles are
    taken GROUP_M row tiles at a time so that programs running together share B's rows and X's columns in L2."""
    pid = tl.program_id(0)
    tiles_m, tiles_n = tl.cdiv(rows, BLOCK_M), tl.cdiv(cols, BLOCK_N)
    group_size = GROUP_M * tiles_n
    first_m = (pid // group_size) * GROUP_M
    group_rows = tl.minimum(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % group_size) % group_rows
    tile_n = (pid % group_size) // group_rows
    batch = tl.program_id(2).to(tl.int64)
    b_ptr += batch * stride_bb
    x_ptr += batch * stride_xb
    out_ptr += batch * stride_ob
    offs_m = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    k = tl.arange(0, BLOCK_K)
    m_mask, n_mask = offs_m < rows, offs_n < cols
    b_ptrs = b_ptr + offs_m[:, None] * stride_br + k[None, :] * stride_bc
    x_ptrs = x_ptr + k[:, None] * stride_xr + offs_n[None, :] * stride_xc
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k_start in range(0, rows, BLOCK_K):
        k_mask = (k_start + k) < rows
        b = tl.load(b_ptrs, mask=m_mask[:, None] & k_mask[None, :], other=0.0)
        x = tl.load(x_ptrs, mask=k_mask[:, None] & n_mask[None, :], other=0.0)
        acc = tl.dot(b, x, acc, input_precision=INPUT_PRECISION)
        b_ptrs += BLOCK_K * stride_bc
        x_ptrs += BLOCK_K * stride_xr
    tile_mask = m_mask[:, None] & n_mask[None, :]
    x_tile = tl.load(x_ptr + offs_m[:, None] * stride_xr + offs_n[None, :] * stride_xc, mask=tile_mask, other=0.0)
    acc += alpha * x_tile.to(tl.float32)
    out_ptrs = out_ptr + offs_m[:, None] * stride_or + offs_n[None, :] * stride_oc
    tl.store(out_ptrs, acc.to(out_ptr.dtype.element_ty), mask=tile_mask)


@triton.jit
def _sum_squares_kernel(x_ptr, partial_ptr, numel, num_chunks, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    """partial[b, c] = the sum of squares of x[b, c * CHUNK: (c + 1) * CHUNK] in fp64, for x (B, numel) contiguous in
    its own float dtype (read once, widened in registers): grid (B, num_chunks)."""
    matrix, chunk = tl.program_id(0).to(tl.int64), tl.program_id(1).to(tl.int64)  # (the last chunk's end: 2**31)
    row = x_ptr + matrix * numel
    end = tl.minimum((chunk + 1) * CHUNK, numel)
    acc = tl.zeros([BLOCK], dtype=tl.float64)
    for first in range(chunk * CHUNK, end, BLOCK):
        offs = first + tl.arange(0, BLOCK)
        value = tl.load(row + offs, mask=offs < end, other=0.0).to(tl.float64)
        acc += value * value
    tl.store(partial_ptr + matrix * num_chunks + chunk, tl.sum(acc, axis=0))


@triton.jit
def _norm_divisor_kernel(partial_ptr, divisor_ptr, num_chunks, scale_hi, scale_lo, eps_hi, eps_lo,
                         BLOCK: tl.constexpr):
    """divisor[b] = norm_scale · sqrt(sum of partial[b, :]) + eps, in fp64: a program a matrix. (A float argument
    reaches a kernel in fp32, so norm_scale and eps come as two fp32 halves each, _fp32_pair, summed in fp64.)"""
    matrix = tl.program_id(0).to(tl.int64)
    acc = tl.zeros([BLOCK], dtype=tl.float64)
    for first in range(0, num_chunks, BLOCK):
        offs = first + tl.arange(0, BLOCK)
        acc += tl.load(partial_ptr + matrix * num_chunks + offs, mask=offs < num_chunks, other=0.0)
    norm_scale = tl.cast(scale_hi, tl.float64) + tl.cast(scale_lo, tl.float64)
    eps = tl.cast(eps_hi, tl.float64) + tl.cast(eps_lo, tl.float64)
    tl.store(divisor_ptr + matrix, norm_scale * tl.sqrt(tl.sum(acc, axis=0)) + eps)


# ----------------------------------------------------------------------------------------------------------------
# Launchers
# ----------------------------------------------------------------------------------------------------------------
# Every kernel launches through FastLaunch (greyhound/_launch.py): Triton's per-call argument binding runs once per
# launch key instead of on every call.
_run_symmetric_product, _run_gram_product, _run_symmetric_apply, _run_sum_squares, _run_norm_divisor = map(
    FastLaunch, (_symmetric_product_kernel, _gram_product_kernel, _symmetric_apply_kernel, _sum_squares_kernel,
                 _norm_divisor_kernel))
NORM_CHUNK = 65536  # elements a program of _sum_squares_kernel reads: (16, 1024, 1024) makes 256 programs


def _block(extent, cap):
    """A power-of-two tile edge covering `extent`, at least 16 (tl.dot's minimum) and at most `cap`."""
    return max(16, min(cap, next_power_of_2(extent)))


def _symmetric_config(size, depth, dtype):
    """(BLOCK, BLOCK_K, num_warps, num_stages) of the symmetric products: square 128 tiles (a tile and its mirror
    must coincide), K steps of 64 (32 for fp32 operands, to keep three stages within shared memory). Tunable
    (sym_block, sym_block_k, sym_warps, sym_stages)."""
    block = _tuning.get(TUNING_OP, "sym_block", _block(size, 128))
    block_k = _tuning.get(TUNING_OP, "sym_block_k", _block(depth, 32 if dtype == torch.float32 else 64))
    return (block, block_k, _tuning.get(TUNING_OP, "sym_warps", 8 if block >= 128 else 4),
            _tuning.get(TUNING_OP, "sym_stages", 3))


def _apply_config(rows, cols, dtype):
    """(BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages) of B X + a·X: 128 × 256 × 64 tiles, 8 warps,
    3 stages (the first config of Triton's Hopper matmul tutorial); 128 × 128 × 32 for fp32 operands. Tunable
    (apply_block_m, apply_block_n, apply_block_k, apply_group_m, apply_warps, apply_stages)."""
    wide = dtype != torch.float32
    block_m, block_n = _block(rows, 128), _block(cols, 256 if wide else 128)
    block_k = _block(rows, 64 if wide else 32)
    chosen = dict(block_m=block_m, block_n=block_n, block_k=block_k, group_m=8,
                  warps=8 if block_m * block_n >= 128 * 128 else 4, stages=3)
    return tuple(_tuning.get(TUNING_OP, "apply_" + name, value) for name, value in chosen.items())


def _input_precision(dtype):
    """fp32 operands are multiplied in full fp32 ("ieee"), never silently in tf32; 16-bit operands need no flag."""
    return "ieee" if dtype == torch.float32 else None


def _batch_parts(batch, *tensors):
    """The tensors (batch first; None passes through) cut into batches the grid's third axis can launch: the tensors
    themselves when the batch fits. (Slicing is a dispatched op: sliced at every launch, a (16, 1024, 1024) call made 40
    slices for its 15 launches, host time that a small call's benchmark measures.)"""
    if batch <= MAX_GRID_BATCH:
        return (tensors, )
    return [tuple(None if t is None else t[start:start + MAX_GRID_BATCH] for t in tensors)
            for start in range(0, batch, MAX_GRID_BATCH)]


def _launch_symmetric_product(x, out, alpha=1.0, beta=0.0, addend=None, config=None):
    """out[i] = alpha · x[i] x[i]ᵀ (+ beta · addend[i]), both triangles written: x [B, size, depth], out and addend
    [B, size, size] with equal strides."""
    batch, size, depth = x.shape
    block, block_k, num_warps, num_stages = config or _symmetric_config(size, depth, x.dtype)
    tiles = cdiv(size, block)
    for x_part, out_part, addend_part in _batch_parts(batch, x, out, addend):
        _run_symmetric_product[(tiles * (tiles + 1) // 2, 1, x_part.shape[0])](
            x_part, out_part if addend is None else addend_part, out_part, size, depth,
            *x_part.stride(), *out_part.stride(), alpha, beta,
            HAS_ADDEND=addend is not None, INPUT_PRECISION=_input_precision(x.dtype), BLOCK=block, BLOCK_K=block_k,
            num_warps=num_warps, num_stages=num_stages,
        )
    return out


def _launch_gram_product(x, out, alpha=1.0, beta=0.0, addend=None, y=None, gamma=None, config=None):
    """out[i] = alpha · x[i] y[i]ᵀ (+ beta · addend[i]) (+ gamma · I), exactly symmetric: x, y [B, size, depth] (y
    defaults to x; x[i] y[i]ᵀ must be symmetric), out and addend [B, size, size] with equal strides."""
    batch, size, depth = x.shape
    y = x if y is None else y
    block, block_k, num_warps, num_stages = config or _symmetric_config(size, depth, x.dtype)
    tiles = cdiv(size, block)
    for x_part, y_part, out_part, addend_part in _batch_parts(batch, x, y, out, addend):
        _run_gram_product[(tiles * (tiles + 1) // 2, 1, x_part.shape[0])](
            x_part, y_part, out_part if addend is None else addend_part, out_part, size, depth,
            *x_part.stride(), *y_part.stride(), *out_part.stride(), alpha, beta, 0.0 if gamma is None else gamma,
            HAS_ADDEND=addend is not None, HAS_IDENTITY=gamma is not None, INPUT_PRECISION=_input_precision(x.dtype),
            BLOCK=block, BLOCK_K=block_k, num_warps=num_warps, num_stages=num_stages,
        )
    return out


def _launch_apply(poly, x, out, alpha, config=None):
    """out[i] = poly[i] x[i] + alpha · x[i]: poly [B, rows, rows], x [B, rows, cols], out any [B, rows, cols] view."""
    batch, rows, cols = x.shape
    block_m, block_n, block_k, group_m, num_warps, num_stages = config or _apply_config(rows, cols, x.dtype)
    tiles = cdiv(rows, block_m) * cdiv(cols, block_n)
    for poly_part, x_part, out_part in _batch_parts(batch, poly, x, out):
        _run_symmetric_apply[(tiles, 1, x_part.shape[0])](
            poly_part, x_part, out_part, rows, cols, *poly_part.stride(), *x_part.stride(), *out_part.stride(),
            alpha, INPUT_PRECISION=_input_precision(x.dtype), BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
            GROUP_M=group_m, num_warps=num_warps, num_stages=num_stages,
        )
    return out


# ----------------------------------------------------------------------------------------------------------------
# Argument checks
# ----------------------------------------------------------------------------------------------------------------
def _check_matrices(G):
    if G.dim() < 2:
        raise ValueError(f"G must be a matrix or a batch of matrices (..., m, n), got shape {tuple(G.shape)}")
    m, n = G.shape[-2:]
    if m == 0 or n == 0:
        raise ValueError(f"G must hold non-empty matrices (m, n >= 1), got shape {tuple(G.shape)}")
    if m * n >= MAX_MATRIX_ELEMENTS:
        raise ValueError(f"G's matrices must have fewer than 2**31 elements, got {m} x {n}")


def _check_steps(steps):
    if not is_int(steps):
        raise TypeError(f"steps must be a positive int (or None for the default), got {type(steps).__name__}")
    if not 1 <= steps <= MAX_STEPS:  # (10**7 built a schedule for seconds before any launch; 10**400 never returned)
        raise ValueError(f"steps must be a positive int of at most {MAX_STEPS} (or None for the default), got "
                         f"{steps!r:.40}")
    return int(steps)


def _coefficient_schedule(coefficients, steps):
    """([(a, b, c)] * steps, norm_scale): a named set runs `steps` steps (default 5; Polar Express repeats its last
    polynomial past its 8), a list runs its own length (steps None or equal to it)."""
    if isinstance(coefficients, str):
        check_choice("coefficients", coefficients, tuple(COEFFICIENT_SETS))
        steps = DEFAULT_STEPS if steps is None else _check_steps(steps)
        table = COEFFICIENT_SETS[coefficients]
        return [table[min(i, len(table) - 1)] for i in range(steps)], NORM_SCALE[coefficients]
    expected = f"one of {', '.join(map(repr, COEFFICIENT_SETS))} or a non-empty list of (a, b, c) tuples"
    if not isinstance(coefficients, (list, tuple)):
        raise TypeError(f"coefficients must be {expected}, got {type(coefficients).__name__}")
    if len(coefficients) == 0:
        raise ValueError(f"coefficients must be {expected}, got an empty {type(coefficients).__name__}")
    schedule = []
    for i, triple in enumerate(coefficients):
        if not isinstance(triple, (list, tuple)) or len(triple) != 3 or not all(
                is_real(v) and math.isfinite(as_float(v)) for v in triple):
            raise ValueError(f"coefficients[{i}] must be an (a, b, c) tuple of 3 finite numbers, got {triple!r}")
        schedule.append(tuple(float(v) for v in triple))
    if steps is not None and _check_steps(steps) != len(schedule):
        raise ValueError(f"steps must be None or len(coefficients) = {len(schedule)} when coefficients is a list "
                         f"(its length sets the steps), got {steps!r}")
    return schedule, 1.0


def _check_eps(eps):
    if not is_real(eps):
        raise TypeError(f"eps must be a finite float >= 0, got {type(eps).__name__}")
    if not (math.isfinite(as_float(eps)) and eps >= 0):
        raise ValueError(f"eps must be a finite float >= 0, got {eps!r}")
    return float(eps)


def _default_compute_dtype(dtype, gram=False):
    """The standard iteration: bf16 for fp32/bf16 G (Muon's choice), fp16 for fp16 G, fp64 for the reference's fp64
    G. The Gram iteration: fp16 for every 16/32-bit G (gram-newton-schulz's choice): its recurrence on R = X Xᵀ
    carries rounding further (bf16, Polar Express, 8 × 256 × 640 on the H200: relative error 0.032 against the standard
    bf16 iteration's 0.0096), and its values stay far inside fp16's range (|R| <= 1 after the normalisation; Q, a
    product of at most three of the step polynomials between restarts, within |a|³ < 600)."""
    if dtype == torch.float64:
        return dtype
    if gram:
        return torch.float16
    return dtype if dtype == torch.float16 else torch.bfloat16


def _check_compute_dtype(compute_dtype, G, gram=False):
    if compute_dtype is None:
        compute_dtype = _default_compute_dtype(G.dtype, gram)
    elif compute_dtype not in FLOAT_DTYPES:
        allowed = ", ".join(str(d).replace("torch.", "") for d in FLOAT_DTYPES)
        raise TypeError(f"compute_dtype must be None or one of ({allowed}), got {compute_dtype!r}")
    if compute_dtype == torch.bfloat16 and G.device.type == "cpu":
        raise ValueError("compute_dtype bfloat16 (the default for square float32/bfloat16 G) needs a CUDA tensor: the Triton "
                         "CPU interpreter's bf16 tl.dot is wrong; on CPU pass compute_dtype=torch.float32 or "
                         f"torch.float16, got a {str(G.dtype).replace('torch.', '')} G on {G.device}")
    return compute_dtype


# ----------------------------------------------------------------------------------------------------------------
# newton_schulz
# ----------------------------------------------------------------------------------------------------------------
_FP32_TINY, _FP32_MAX = 2.0**-126, 3.4028234663852886e38  # fp32's smallest normal and largest finite values


def _fp32_pair(value):
    """(hi, lo), both exact in fp32, with hi + lo = value to ~2^-48 relative (hi: value rounded to fp32)."""
    hi = struct.unpack("f", struct.pack("f", value))[0]
    return hi, struct.unpack("f", struct.pack("f", value - hi))[0]


def _normalised(G, norm_scale, eps, compute_dtype):
    """(X [B, m, n] contiguous in compute_dtype with m <= n, transposed): G / (norm_scale · ‖G‖_F + eps) per matrix,
    the norm and the division in fp64: an fp32 sum of squares overflows once ‖G‖_F passes ~1.8e19 (the norm reads
    inf and X all zeros), an fp64 one holds any finite G. The sum of squares is a Triton kernel that reads G once in
    its own dtype (torch's vector_norm with dtype=float64 first copies G to fp64: 4x a bf16 G's bytes, written and read
    again); the division computes in fp64 as it reads, writing X in compute_dtype."""
    transposed = G.size(-2) > G.size(-1)
    matrices = G.reshape(-1, *G.shape[-2:])
    batch, numel = matrices.shape[0], matrices.shape[1] * matrices.shape[2]
    flat = matrices.reshape(batch, numel)  # the kernel reads (batch, numel) rows of unit stride: a view often is not
    if not flat.is_contiguous():  # (a strided or expanded G: copied once, which vector_norm's strides never needed)
        flat = flat.contiguous()
    chunks = cdiv(numel, NORM_CHUNK)
    partial = torch.empty(batch, chunks, dtype=torch.float64, device=G.device)
    divisor = torch.empty(batch, 1, 1, dtype=torch.float64, device=G.device)
    # (the batch on the grid's first axis, which holds 2**31 - 1; the chunks on its second: at most 2**31 / CHUNK)
    _run_sum_squares[(batch, chunks)](flat, partial, numel, chunks, CHUNK=NORM_CHUNK, BLOCK=2048, num_warps=8)
    # eps reaches the kernel as two fp32 halves where fp32 holds it as a normal number; else it is added here in fp64
    in_kernel = eps == 0.0 or _FP32_TINY <= eps <= _FP32_MAX
    _run_norm_divisor[(batch,)](partial, divisor, chunks, *_fp32_pair(norm_scale),
                                *_fp32_pair(eps if in_kernel else 0.0), BLOCK=256, num_warps=4)
    if not in_kernel:
        divisor.add_(eps)
    if transposed:
        matrices = matrices.mT
    x = torch.empty(matrices.shape, dtype=compute_dtype, device=G.device)
    torch.div(matrices, divisor, out=x)
    return x, transposed


METHODS = ("auto", "standard", "gram")


def newton_schulz(G, *, steps=None, coefficients="muon", eps=1e-7, compute_dtype=None, method="auto"):
    """Orthogonalise each matrix of G (..., m, n) by the quintic Newton-Schulz iteration (Muon's zeropower).

    X = G/(s·‖G‖_F + eps) per matrix (s = 1; 1.01 for "polar_express"), then `steps` times X ← a·X + (b·A + c·A²)·X,
    A = X Xᵀ (X = Gᵀ's when m > n). Returns G's shape and dtype; forward only (the result never requires grad).
    coefficients: "muon" (3.4445, -4.7750, 2.0315 every step), "polar_express" (arXiv 2505.16932, Algorithm 1), or
    a list of (a, b, c) whose length is the number of steps. steps: default 5 for a named set; with a list, None
    or its length.
    method: "standard" iterates on X (three products a step, two of them computing one triangle); "gram" iterates
    on the small Gram matrix R = X Xᵀ (Gram Newton-Schulz: X_k = Q_k X with Q_k a polynomial in R, every product
    symmetric and of the small side, X touched only at the start, at restarts (steps 2, 5, 8, ...) and at the
    end): 6·m²n + 14·m³ FLOPs for 5 steps against 15·m²n + 5·m³ (symmetric products counted at half a GEMM),
    so fewer whenever n > m. "auto" (the
    default) takes "gram" for non-square matrices and "standard" for square ones.
    Numerical contract: X, A and B (R, P and Q for "gram") are stored in compute_dtype (default: bf16 for fp32/bf16 G
    in the standard iteration, as Muon; fp16 for fp16 G, and fp16 for every G in the Gram iteration, as
    gram-newton-schulz, whose recurrence bf16 rounding hurts; torch.float32 for a full-fp32 iteration, the only
    choice besides fp16 on the CPU interpreter); every product
    accumulates in fp32 and adds its a·X / b·A term in fp32 before one rounding; the norm and the division by it
    are taken in fp64, so any finite G normalises (an fp32 norm overflows past ‖G‖_F ~1.8e19)
    """
    check_tensor("G", G, dtypes=FLOAT_DTYPES)
    _check_matrices(G)
    check_triton_device("G", G)
    schedule, norm_scale = _coefficient_schedule(coefficients, steps)
    eps = _check_eps(eps)
    check_choice("method", method, METHODS)
    gram = _tuning.get(TUNING_OP, "gram", G.size(-2) != G.size(-1) if method == "auto" else method == "gram")
    compute_dtype = _check_compute_dtype(compute_dtype, G, gram)
    # A registered op (greyhound::newton_schulz): torch.compile keeps it in the graph instead of breaking there.
    # Forward only: a G that requires grad is read (detached), and the result never requires grad.
    return _library.call(_newton_schulz_op, None, G.detach(), [v for triple in schedule for v in triple], norm_scale,
                         eps, compute_dtype, gram)


@torch.library.custom_op("greyhound::newton_schulz", mutates_args=())
def _newton_schulz_op(G: torch.Tensor, coefficients: list[float], norm_scale: float, eps: float,
                      compute_dtype: torch.dtype, gram: bool) -> torch.Tensor:
    """The checked iteration: `coefficients` flattened (a, b, c) per step."""
    schedule = [tuple(coefficients[i:i + 3]) for i in range(0, len(coefficients), 3)]
    out = torch.empty(G.shape, dtype=G.dtype, device=G.device)
    if G.numel() == 0:  # an empty batch of non-empty matrices
        return out
    x, transposed = _normalised(G, norm_scale, eps, compute_dtype)
    result = out.view(x.shape[0], *G.shape[-2:])
    result = result.mT if transposed else result
    if gram:
        _gram_iteration(x, schedule, result)
    else:
        _standard_iteration(x, schedule, result)
    return out


def _standard_iteration(x, schedule, result):
    """X ← B X + a·X with A = X Xᵀ and B = c·A Aᵀ + b·A, three launches a step; the last writes `result`."""
    batch, rows, cols = x.shape
    gram = torch.empty(batch, rows, rows, dtype=x.dtype, device=x.device)
    poly = torch.empty_like(gram)
    x_next = torch.empty_like(x) if len(schedule) > 1 else None
    wide, square, apply = _configs(rows, cols, x.dtype)  # once a call, not at every launch
    for step, (a, b, c) in enumerate(schedule):
        _launch_symmetric_product(x, gram, config=wide)  # A = X Xᵀ
        _launch_symmetric_product(gram, poly, alpha=c, beta=b, addend=gram, config=square)  # B = c·A Aᵀ + b·A
        last = step == len(schedule) - 1
        _launch_apply(poly, x, result if last else x_next, alpha=a, config=apply)  # X' = B X + a·X
        x, x_next = x_next, x


def _configs(rows, cols, dtype):
    """The iterations' launch configs for X of (rows, cols): the products with K = cols (X Xᵀ) and K = rows (the
    square ones), and the apply."""
    return (_symmetric_config(rows, cols, dtype), _symmetric_config(rows, rows, dtype),
            _apply_config(rows, cols, dtype))


def _gram_restarts(steps):
    return set(range(GRAM_FIRST_RESTART, steps, GRAM_RESTART_EVERY))


def _gram_iteration(x, schedule, result):
    """Gram Newton-Schulz: with R = X Xᵀ, one step maps X to P X, P = c·R² + b·R + a·I, and R to P R P, so after k
    steps X_k = Q X with Q = P_k ··· P_1 (all polynomials in R: symmetric, commuting). Every product is m × m and
    symmetric (one triangle computed); X (m × n) is read for R, multiplied by Q at each restart and at the end."""
    batch, rows, cols = x.shape
    like = dict(dtype=x.dtype, device=x.device)
    R, step_buffer, Q, spare = (torch.empty(batch, rows, rows, **like) for _ in range(4))
    wide, square, apply = _configs(rows, cols, x.dtype)  # once a call, not at every launch
    x_next = None
    have_q = False
    restarts = _gram_restarts(len(schedule))
    _launch_gram_product(x, R, config=wide)  # R = X Xᵀ
    for step, (a, b, c) in enumerate(schedule):
        if step in restarts:  # X ← Q X, R ← X Xᵀ, Q ← I
            x_next = torch.empty_like(x) if x_next is None else x_next
            _launch_apply(Q, x, x_next, alpha=0.0, config=apply)
            x, x_next = x_next, x
            _launch_gram_product(x, R, config=wide)
            have_q = False
        # P = c·R R + b·R + a·I
        _launch_gram_product(R, step_buffer, alpha=c, beta=b, addend=R, gamma=a, config=square)
        if have_q:
            _launch_gram_product(Q, spare, y=step_buffer, config=square)  # Q ← Q P
            Q, spare = spare, Q
            poly = step_buffer
        else:
            Q, step_buffer = step_buffer, Q  # Q = P; the old Q buffer holds the next step's P
            poly, have_q = Q, True
        if step < len(schedule) - 1 and step + 1 not in restarts:
            _launch_gram_product(R, spare, y=poly, config=square)  # R P
            _launch_gram_product(poly, R, y=spare, config=square)  # R ← P (R P)
    _launch_apply(Q, x, result, alpha=0.0, config=apply)  # X_k = Q X, in G's dtype and layout


@_newton_schulz_op.register_fake
def _newton_schulz_fake(G, coefficients, norm_scale, eps, compute_dtype, gram):
    return torch.empty_like(G, memory_format=torch.contiguous_format)


def newton_schulz_reference(G, *, steps=None, coefficients="muon", eps=1e-7, compute_dtype=None):
    """Plain PyTorch, the same iteration: matmuls and axpys in compute_dtype (default as newton_schulz's; fp64 for an
    fp64 G), the norm and the division in fp64. With bf16 it is Muon's zeropower_via_newtonschulz5 except there: Muon's
    fp32-accumulated norm overflows past ‖G‖_F ~1.8e19 and returns zeros."""
    schedule, norm_scale = _coefficient_schedule(coefficients, steps)
    compute_dtype = compute_dtype or _default_compute_dtype(G.dtype)
    transposed = G.size(-2) > G.size(-1)
    X = G.mT if transposed else G
    norm = torch.linalg.vector_norm(X, dim=(-2, -1), keepdim=True, dtype=torch.float64)
    X = (X / (norm * norm_scale + eps)).to(compute_dtype)
    for a, b, c in schedule:
        A = X @ X.mT
        B = b * A + c * (A @ A)
        X = a * X + B @ X
    return (X.mT if transposed else X).to(G.dtype)
