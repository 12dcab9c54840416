"""Depthwise causal 1-D convolution (the short convolution of Mamba, DeltaNet and friends), with dilation,
packed variable-length sequences, carried states and a one-token decoding step.

`causal_conv1d(x, weight, bias)`: out[b, d, t] = act(bias[d] + Σ_k weight[d, k] · x[b, d, t − (W−1−k)·dilation])
for x (B, D, L) of any strides. The forward kernel tiles (time × channel) and reads the W shifted input tiles
straight from x, with the stride-1 dimension (L for (B, D, L)-contiguous x, D for channel-last x) the vectorised
one, so neither layout is copied. The backward kernel walks source positions p:
grad_x[p] = Σ_k w[k] · g[p + (W−1−k)·dilation] with g = grad_out · silu'(pre), the pre-activation recomputed from x
(nothing but the inputs is saved); grad_w and grad_b are summed per program into fp32 partial rows, then by torch
(deterministic).
`causal_conv1d_update(x_t, conv_state, weight)`: one decoding step, conv_state rolled in place.
"""
import functools
from typing import NamedTuple, Optional

import torch
import triton
import triton.language as tl

from greyhound import _library, _tuning
from greyhound._launch import FastLaunch, cdiv, multiprocessor_count, next_power_of_2
from greyhound._validate import FLOAT_DTYPES, check_bool, check_choice, check_tensor, check_triton_device, is_int

__all__ = ["causal_conv1d", "causal_conv1d_update", "causal_conv1d_reference"]

MIN_WIDTH, MAX_WIDTH = 2, 8  # the backward keeps one grad_w accumulator per tap: eight are written out
ACTIVATIONS = (None, "silu")
SEQ_IDX_DTYPES = (torch.int32, torch.int64)
TUNING_OP = "causal_conv1d"
_tuning.register(
    TUNING_OP,
    block_l=(int, "forward tile length along L (power of 2)"),
    block_d=(int, "forward tile width along D (power of 2)"),
    warps=(int, "forward num_warps"),
    bwd_block_l=(int, "backward tile length along L (power of 2)"),
    bwd_block_d=(int, "backward tile width along D (power of 2)"),
    bwd_warps=(int, "backward num_warps"),
    bwd_programs_per_sm=(int, "backward programs per SM: how many chunks of L each (batch, D block) is cut into"),
    bwd_two_pass=(bool, "silu backward in two passes: g = grad_out·silu'(pre) once per position into a buffer of "
                        "x's shape and dtype, then the activation-free backward (an experiment: one more tensor)"),
    bwd_gather=(bool, "silu backward without seq_idx / initial states: g computed once per position, its shifted "
                      "reads gathered on chip (tl.gather along L) instead of W recomputations of pre and silu' "
                      "(default: on unless x is channel-last)"),
    bwd_gather_block_l=(int, "bwd_gather tile length along L (power of 2, > (W - 1)·dilation: the last "
                             "(W - 1)·dilation rows of a tile are its halo)"),
    bwd_gather_scratch=(bool, "bwd_gather: shift g through a per-program fp32 scratch tile in global memory "
                              "(L1/L2-resident) instead of tl.gather"),
    walk=(bool, "channel-last x without seq_idx / initial states: forward and backward walk L one row of channels "
                "at a time, the taps' inputs (and g) kept in a register window: each x row read once (default: on, "
                "unless a tiled-kernel tunable of that direction is forced)"),
    walk_steps=(int, "forward walk: positions of one residue class a program walks (its chunk of L)"),
    walk_block_d=(int, "forward walk: channels a program holds (power of 2)"),
    walk_warps=(int, "forward walk: num_warps"),
    walk_group=(int, "forward walk: rows loaded together, a group ahead of their use (1 to 8)"),
    walk_bwd_steps=(int, "backward walk: positions of one residue class a program walks (its chunk of L)"),
    walk_bwd_block_d=(int, "backward walk: channels a program holds (power of 2)"),
    walk_bwd_warps=(int, "backward walk: num_warps"),
    walk_bwd_group=(int, "backward walk: rows of x and of grad_out loaded together, a group ahead (1 to 8)"),
)


# ----------------------------------------------------------------------------------------------------------------
# Kernels
# ----------------------------------------------------------------------------------------------------------------
@triton.jit
def _sequence_ids(seq_row, positions, seq_len, stride_seq_l):
    """seq_idx at `positions` clamped into [0, L): positions before 0 belong to the row's first sequence."""
    clamped = tl.minimum(tl.maximum(positions, 0), seq_len - 1)
    return tl.load(seq_row + clamped * stride_seq_l)


@triton.jit
def _load_inputs(x_row, init_row, positions, channels, channel_mask, seq_len, state_len,
                 stride_x_l, stride_x_d, stride_init_s, stride_init_d, HAS_INIT: tl.constexpr):
    """fp32 [BLOCK_L, BLOCK_D] inputs at `positions`: x for 0 <= p < L, the initial states for -state_len <= p < 0
    (HAS_INIT), 0 elsewhere. The x load's mask depends on the positions only, so the compiler merges repeated
    loads of one position (the silu backward asks for each shifted tile up to W times)."""
    x_ptrs = x_row + positions[:, None] * stride_x_l + channels[None, :] * stride_x_d
    in_x = (positions >= 0) & (positions < seq_len)
    values = tl.load(x_ptrs, mask=in_x[:, None] & channel_mask[None, :], other=0.0).to(tl.float32)
    if HAS_INIT:
        init_ptrs = init_row + (positions + state_len)[:, None] * stride_init_s + channels[None, :] * stride_init_d
        in_init = (positions < 0) & (positions >= -state_len)
        values += tl.load(init_ptrs, mask=in_init[:, None] & channel_mask[None, :], other=0.0).to(tl.float32)
    return values


@triton.jit
def _pre_activation(x_row, init_row, seq_row, weight_ptr, bias, base, time_seq, channels, channel_mask,
                    seq_len, dilation, state_len, stride_x_l, stride_x_d, stride_w_d, stride_w_k, stride_seq_l,
                    stride_init_s, stride_init_d, SHIFT: tl.constexpr, WIDTH: tl.constexpr,
                    HAS_SEQ_IDX: tl.constexpr, HAS_INIT: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_D: tl.constexpr):
    """fp32 bias + Σ_k w[k] · in[t − (W−1−k)·dilation] at the times t = base + SHIFT·dilation ([BLOCK_L]); with
    HAS_SEQ_IDX a tap counts only if its source lies in the same sequence as t (`time_seq`). Source positions are
    base + constant·dilation, so the silu backward's repeated loads of one position are one expression (merged).
    """
    acc = tl.zeros([BLOCK_L, BLOCK_D], dtype=tl.float32) + bias[None, :]
    for k in tl.static_range(WIDTH):
        sources = base + (SHIFT - (WIDTH - 1 - k)) * dilation
        values = _load_inputs(x_row, init_row, sources, channels, channel_mask, seq_len, state_len,
                              stride_x_l, stride_x_d, stride_init_s, stride_init_d, HAS_INIT)
        if HAS_SEQ_IDX:
            same = _sequence_ids(seq_row, sources, seq_len, stride_seq_l) == time_seq
            values = tl.where(same[:, None], values, 0.0)
        tap = tl.load(weight_ptr + channels * stride_w_d + k * stride_w_k, mask=channel_mask, other=0.0)
        acc += tap.to(tl.float32)[None, :] * values
    return acc


@triton.jit
def _add_if(acc, value, CONDITION: tl.constexpr):
    """acc + value if CONDITION (a constexpr), else acc: picks which of the backward's per-tap sums grows."""
    if CONDITION:
        acc += value
    return acc


@triton.jit
def _store_tap_sum(partial_ptrs, tap_sum, channel_mask, K: tl.constexpr, WIDTH: tl.constexpr):
    """partial[d, K] = Σ over rows of tap_sum, for the taps the kernel has (K < WIDTH)."""
    if K < WIDTH:
        tl.store(partial_ptrs + K, tl.sum(tap_sum, axis=0), mask=channel_mask)


@triton.jit
def _add_to_tap(tap_0, tap_1, tap_2, tap_3, tap_4, tap_5, tap_6, tap_7, value, K: tl.constexpr):
    """The backward's eight per-tap sums with `value` added to sum K (a constexpr)."""
    return (_add_if(tap_0, value, K == 0), _add_if(tap_1, value, K == 1), _add_if(tap_2, value, K == 2),
            _add_if(tap_3, value, K == 3), _add_if(tap_4, value, K == 4), _add_if(tap_5, value, K == 5),
            _add_if(tap_6, value, K == 6), _add_if(tap_7, value, K == 7))


@triton.jit
def _store_partial_row(grad_weight_partial_ptr, grad_bias_partial_ptr, row, dim, channels, channel_mask,
                       tap_0, tap_1, tap_2, tap_3, tap_4, tap_5, tap_6, tap_7, bias_sum,
                       WIDTH: tl.constexpr, HAS_BIAS: tl.constexpr):
    """A tiled backward program's [BLOCK_L, BLOCK_D] sums, reduced over rows, into its partial row: contiguous
    (rows, D, W) for grad_w and (rows, D) for grad_b."""
    partial_ptrs = grad_weight_partial_ptr + (row * dim + channels) * WIDTH
    _store_tap_sum(partial_ptrs, tap_0, channel_mask, 0, WIDTH)
    _store_tap_sum(partial_ptrs, tap_1, channel_mask, 1, WIDTH)
    _store_tap_sum(partial_ptrs, tap_2, channel_mask, 2, WIDTH)
    _store_tap_sum(partial_ptrs, tap_3, channel_mask, 3, WIDTH)
    _store_tap_sum(partial_ptrs, tap_4, channel_mask, 4, WIDTH)
    _store_tap_sum(partial_ptrs, tap_5, channel_mask, 5, WIDTH)
    _store_tap_sum(partial_ptrs, tap_6, channel_mask, 6, WIDTH)
    _store_tap_sum(partial_ptrs, tap_7, channel_mask, 7, WIDTH)
    if HAS_BIAS:
        tl.store(grad_bias_partial_ptr + row * dim + channels, tl.sum(bias_sum, axis=0), mask=channel_mask)


@triton.jit
def _causal_conv1d_forward_kernel(
    x_ptr, weight_ptr, bias_ptr, seq_idx_ptr, init_ptr, out_ptr,
    seq_len, dim, dilation, state_len, first_block,
    stride_x_b, stride_x_d, stride_x_l, stride_w_d, stride_w_k, stride_seq_b, stride_seq_l,
    stride_init_b, stride_init_d, stride_init_s, stride_out_b, stride_out_d, stride_out_l,
    WIDTH: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_SEQ_IDX: tl.constexpr, HAS_INIT: tl.constexpr,
    SILU: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_D: tl.constexpr,
):
    """Program (block first_block + i of L, block of D, batch): out = act(pre-activation) on a [BLOCK_L, BLOCK_D]
    tile.

    Inputs fp32/bf16/fp16 loaded and upcast, taps accumulated in fp32, stored in out's dtype. Each of the W shifted
    input tiles is one masked load (halo re-reads hit L1/L2); positions before 0 read the initial states or 0.
    """
    batch = tl.program_id(2).to(tl.int64)
    start = (first_block + tl.program_id(0)).to(tl.int64) * BLOCK_L
    times = start + tl.arange(0, BLOCK_L)
    channels = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    time_mask = times < seq_len
    channel_mask = channels < dim
    seq_row = seq_idx_ptr + batch * stride_seq_b
    time_seq = times  # placeholder: only read with HAS_SEQ_IDX
    if HAS_SEQ_IDX:
        time_seq = _sequence_ids(seq_row, times, seq_len, stride_seq_l)
    bias = tl.zeros([BLOCK_D], dtype=tl.float32)
    if HAS_BIAS:
        bias = tl.load(bias_ptr + channels, mask=channel_mask, other=0.0).to(tl.float32)
    pre = _pre_activation(x_ptr + batch * stride_x_b, init_ptr + batch * stride_init_b, seq_row, weight_ptr, bias,
                          times, time_seq, channels, channel_mask, seq_len, dilation, state_len,
                          stride_x_l, stride_x_d, stride_w_d, stride_w_k, stride_seq_l, stride_init_s, stride_init_d,
                          0, WIDTH, HAS_SEQ_IDX, HAS_INIT, BLOCK_L, BLOCK_D)
    out = pre
    if SILU:
        out = pre * tl.sigmoid(pre)
    out_ptrs = out_ptr + batch * stride_out_b + times[:, None] * stride_out_l + channels[None, :] * stride_out_d
    tl.store(out_ptrs, out.to(out_ptr.dtype.element_ty), mask=time_mask[:, None] & channel_mask[None, :])


@triton.jit
def _causal_conv1d_backward_kernel(
    x_ptr, weight_ptr, bias_ptr, seq_idx_ptr, init_ptr, grad_out_ptr,
    grad_x_ptr, grad_init_ptr, grad_weight_partial_ptr, grad_bias_partial_ptr,
    seq_len, dim, dilation, state_len, tiles_before_zero, tile_begin, tile_end, tiles_per_program, partial_row_begin,
    stride_x_b, stride_x_d, stride_x_l, stride_w_d, stride_w_k, stride_seq_b, stride_seq_l,
    stride_init_b, stride_init_d, stride_init_s, stride_g_b, stride_g_d, stride_g_l,
    stride_gx_b, stride_gx_d, stride_gx_l,
    WIDTH: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_SEQ_IDX: tl.constexpr, HAS_INIT: tl.constexpr,
    SILU: tl.constexpr, GRAD_X: tl.constexpr, GRAD_INIT: tl.constexpr, GRAD_PARAMS: tl.constexpr,
    BLOCK_L: tl.constexpr, BLOCK_D: tl.constexpr,
):
    """Program (block of D, batch, chunk of tiles_per_program tiles of [tile_begin, tile_end)), walking source
    positions p tile by tile (tiles below `tiles_before_zero` are the initial states' positions, p < 0):
    grad_in[p] = Σ_k w[k] · g[p + (W−1−k)·dilation], g = grad_out (· silu'(pre), pre recomputed), masked as the
    forward; with GRAD_PARAMS this program's fp32 sums Σ_p g[p + (W−1−k)·dilation] · in[p] (grad_w) and Σ g
    (grad_b) go to its own partial row, partial_row_begin + batch · chunks + chunk: they are kept elementwise over
    the program's tiles and reduced once at the end (W + 1 cross-warp reductions per tile cost more than the tile's
    math). All math fp32; grad_x and grad_init stored in their dtype.
    """
    batch = tl.program_id(1).to(tl.int64)
    chunk = tl.program_id(2)
    channels = tl.program_id(0) * BLOCK_D + tl.arange(0, BLOCK_D)
    channel_mask = channels < dim
    x_row = x_ptr + batch * stride_x_b
    init_row = init_ptr + batch * stride_init_b
    seq_row = seq_idx_ptr + batch * stride_seq_b
    grad_out_row = grad_out_ptr + batch * stride_g_b
    bias = tl.zeros([BLOCK_D], dtype=tl.float32)
    if HAS_BIAS:
        bias = tl.load(bias_ptr + channels, mask=channel_mask, other=0.0).to(tl.float32)
    # fp32 Σ grad · input per tap k (tap_k) and Σ grad, elementwise; the taps past WIDTH stay unused (removed).
    tap_0 = tl.zeros([BLOCK_L, BLOCK_D], dtype=tl.float32)
    tap_1 = tl.zeros([BLOCK_L, BLOCK_D], dtype=tl.float32)
    tap_2 = tl.zeros([BLOCK_L, BLOCK_D], dtype=tl.float32)
    tap_3 = tl.zeros([BLOCK_L, BLOCK_D], dtype=tl.float32)
    tap_4 = tl.zeros([BLOCK_L, BLOCK_D], dtype=tl.float32)
    tap_5 = tl.zeros([BLOCK_L, BLOCK_D], dtype=tl.float32)
    tap_6 = tl.zeros([BLOCK_L, BLOCK_D], dtype=tl.float32)
    tap_7 = tl.zeros([BLOCK_L, BLOCK_D], dtype=tl.float32)
    bias_sum = tl.zeros([BLOCK_L, BLOCK_D], dtype=tl.float32)
    first_tile = tile_begin + chunk * tiles_per_program
    for tile in range(first_tile, tl.minimum(first_tile + tiles_per_program, tile_end)):
        start = (tile - tiles_before_zero).to(tl.int64) * BLOCK_L
        sources = start + tl.arange(0, BLOCK_L)
        source_mask = sources < seq_len
        if HAS_INIT:
            source_mask = source_mask & (sources >= -state_len)
        else:
            source_mask = source_mask & (sources >= 0)
        source_seq = sources  # placeholder: only read with HAS_SEQ_IDX
        if HAS_SEQ_IDX:
            source_seq = _sequence_ids(seq_row, sources, seq_len, stride_seq_l)
        if GRAD_PARAMS:
            inputs = _load_inputs(x_row, init_row, sources, channels, channel_mask, seq_len, state_len,
                                  stride_x_l, stride_x_d, stride_init_s, stride_init_d, HAS_INIT)
        grad_in = tl.zeros([BLOCK_L, BLOCK_D], dtype=tl.float32)
        # a tile some of whose targets are masked (past L, before 0, or another sequence's): only there is a masked
        # target's 0 kept out of the sum (a branch a tile and shift, not a select an element: the tail is rare)
        edge = (start < 0) | (start + (BLOCK_L - 1 + (WIDTH - 1) * dilation) >= seq_len) | HAS_SEQ_IDX
        for shift in tl.static_range(WIDTH):  # target t = p + shift·dilation reads p through tap W − 1 − shift
            targets = sources + shift * dilation
            target_mask = source_mask & (targets >= 0) & (targets < seq_len)
            target_seq = targets
            if HAS_SEQ_IDX:
                target_seq = _sequence_ids(seq_row, targets, seq_len, stride_seq_l)
                target_mask = target_mask & (target_seq == source_seq)
            grad_ptrs = grad_out_row + targets[:, None] * stride_g_l + channels[None, :] * stride_g_d
            grad = tl.load(grad_ptrs, mask=target_mask[:, None] & channel_mask[None, :], other=0.0).to(tl.float32)
            if SILU:
                pre = _pre_activation(x_row, init_row, seq_row, weight_ptr, bias, sources, target_seq,
                                      channels, channel_mask, seq_len, dilation, state_len, stride_x_l, stride_x_d,
                                      stride_w_d, stride_w_k, stride_seq_l, stride_init_s, stride_init_d,
                                      shift, WIDTH, HAS_SEQ_IDX, HAS_INIT, BLOCK_L, BLOCK_D)
                sig = tl.sigmoid(pre)
                grad = grad * sig * (1.0 + pre * (1.0 - sig))
            k = WIDTH - 1 - shift
            weight_k = tl.load(weight_ptr + channels * stride_w_d + k * stride_w_k, mask=channel_mask, other=0.0)
            term = weight_k.to(tl.float32)[None, :] * grad
            if not SILU:  # (with silu an inf tap makes its channel's g nan everywhere, as the reference's)
                if edge:  # a target past L, before 0 or in another sequence adds nothing, not 0 · tap (inf: nan)
                    term = tl.where(target_mask[:, None], term, 0.0)
            grad_in += term
            if GRAD_PARAMS:
                product = grad * inputs
                tap_0, tap_1, tap_2, tap_3, tap_4, tap_5, tap_6, tap_7 = _add_to_tap(
                    tap_0, tap_1, tap_2, tap_3, tap_4, tap_5, tap_6, tap_7, product, k)
                bias_sum = _add_if(bias_sum, grad, shift == 0)
        if GRAD_X:
            in_x = (sources >= 0) & (sources < seq_len)
            grad_x_ptrs = (grad_x_ptr + batch * stride_gx_b + sources[:, None] * stride_gx_l
                           + channels[None, :] * stride_gx_d)
            tl.store(grad_x_ptrs, grad_in.to(grad_x_ptr.dtype.element_ty),
                     mask=in_x[:, None] & channel_mask[None, :])
        if GRAD_INIT:  # contiguous (B, D, state_len)
            in_init = (sources < 0) & (sources >= -state_len)
            grad_init_ptrs = (grad_init_ptr + (batch * dim + channels[None, :]) * state_len
                              + (sources + state_len)[:, None])
            tl.store(grad_init_ptrs, grad_in.to(grad_init_ptr.dtype.element_ty),
                     mask=in_init[:, None] & channel_mask[None, :])
    if GRAD_PARAMS:
        _store_partial_row(grad_weight_partial_ptr, grad_bias_partial_ptr,
                           partial_row_begin + batch * tl.num_programs(2) + chunk, dim, channels, channel_mask,
                           tap_0, tap_1, tap_2, tap_3, tap_4, tap_5, tap_6, tap_7, bias_sum, WIDTH, HAS_BIAS)


@triton.jit
def _causal_conv1d_silu_gather_backward_kernel(
    x_ptr, weight_ptr, bias_ptr, grad_out_ptr, grad_x_ptr, grad_weight_partial_ptr, grad_bias_partial_ptr, scratch_ptr,
    seq_len, dim, dilation, halo, num_tiles, tiles_per_program,
    stride_x_b, stride_x_d, stride_x_l, stride_w_d, stride_w_k, stride_g_b, stride_g_d, stride_g_l,
    stride_gx_b, stride_gx_d, stride_gx_l,
    WIDTH: tl.constexpr, HAS_BIAS: tl.constexpr, GRAD_X: tl.constexpr, GRAD_PARAMS: tl.constexpr,
    SCRATCH: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_D: tl.constexpr,
):
    """The silu backward without seq_idx or initial states, g = grad_out · silu′(pre) computed once per position.

    Program (block of D, batch, chunk of tiles_per_program tiles). Tile i covers the BLOCK_L positions from
    i · (BLOCK_L − halo), halo = (W − 1)·dilation < BLOCK_L: it owns its first BLOCK_L − halo rows; the last `halo`
    rows only supply g to the owned rows' shifted reads. Per tile: the W shifted x tiles (loaded once, used for pre
    and for grad_w), pre and g on every row, then grad_x[p] = Σ_s w[W − 1 − s] · g[p + s·dilation] with the shifted
    g gathered along L on chip (tl.gather) instead of recomputed (the general kernel computes pre and silu′ W times
    per element); with SCRATCH the shift goes through this program's fp32 [BLOCK_L, BLOCK_D] tile of scratch_ptr
    (written, barrier, read back shifted, barrier) instead. grad_w / grad_b: owned rows summed elementwise per program
    and written to its partial row, as _causal_conv1d_backward_kernel. All math fp32; grad_x stored in its dtype.
    """
    batch = tl.program_id(1).to(tl.int64)
    chunk = tl.program_id(2)
    channels = tl.program_id(0) * BLOCK_D + tl.arange(0, BLOCK_D)
    channel_mask = channels < dim
    rows = tl.arange(0, BLOCK_L)
    own = BLOCK_L - halo
    x_row = x_ptr + batch * stride_x_b
    grad_out_row = grad_out_ptr + batch * stride_g_b
    bias = tl.zeros([BLOCK_D], dtype=tl.float32)
    if HAS_BIAS:
        bias = tl.load(bias_ptr + channels, mask=channel_mask, other=0.0).to(tl.float32)
    tap_0 = tl.zeros([BLOCK_L, BLOCK_D], dtype=tl.float32)
    tap_1 = tl.zeros([BLOCK_L, BLOCK_D], dtype=tl.float32)
    tap_2 = tl.zeros([BLOCK_L, BLOCK_D], dtype=tl.float32)
    tap_3 = tl.zeros([BLOCK_L, BLOCK_D], dtype=tl.float32)
    tap_4 = tl.zeros([BLOCK_L, BLOCK_D], dtype=tl.float32)
    tap_5 = tl.zeros([BLOCK_L, BLOCK_D], dtype=tl.float32)
    tap_6 = tl.zeros([BLOCK_L, BLOCK_D], dtype=tl.float32)
    tap_7 = tl.zeros([BLOCK_L, BLOCK_D], dtype=tl.float32)
    bias_sum = tl.zeros([BLOCK_L, BLOCK_D], dtype=tl.float32)
    broadcast = tl.zeros([BLOCK_L, BLOCK_D], dtype=tl.int32)
    program = (tl.program_id(1) * tl.num_programs(2) + chunk) * tl.num_programs(0) + tl.program_id(0)
    scratch = scratch_ptr + program.to(tl.int64) * (BLOCK_L * BLOCK_D) + tl.arange(0, BLOCK_D)[None, :]
    first_tile = chunk * tiles_per_program
    for tile in range(first_tile, tl.minimum(first_tile + tiles_per_program, num_tiles)):
        positions = tl.cast(tile, tl.int64) * own + rows
        pre = tl.zeros([BLOCK_L, BLOCK_D], dtype=tl.float32) + bias[None, :]
        for k in tl.static_range(WIDTH):
            sources = positions - (WIDTH - 1 - k) * dilation
            in_x = (sources >= 0) & (sources < seq_len)
            values = tl.load(x_row + sources[:, None] * stride_x_l + channels[None, :] * stride_x_d,
                             mask=in_x[:, None] & channel_mask[None, :], other=0.0).to(tl.float32)
            tap = tl.load(weight_ptr + channels * stride_w_d + k * stride_w_k, mask=channel_mask, other=0.0)
            pre += tap.to(tl.float32)[None, :] * values
        in_seq = positions < seq_len
        grad = tl.load(grad_out_row + positions[:, None] * stride_g_l + channels[None, :] * stride_g_d,
                       mask=in_seq[:, None] & channel_mask[None, :], other=0.0).to(tl.float32)
        sig = tl.sigmoid(pre)
        grad = grad * sig * (1.0 + pre * (1.0 - sig))  # 0 past L: grad_out is masked to 0 there
        owned = (rows < own) & in_seq
        if GRAD_PARAMS:
            owned_grad = tl.where(owned[:, None], grad, 0.0)
            for k in tl.static_range(WIDTH):  # the same loads as above: merged by the compiler
                sources = positions - (WIDTH - 1 - k) * dilation
                in_x = (sources >= 0) & (sources < seq_len)
                values = tl.load(x_row + sources[:, None] * stride_x_l + channels[None, :] * stride_x_d,
                                 mask=in_x[:, None] & channel_mask[None, :], other=0.0).to(tl.float32)
                product = owned_grad * values
                tap_0, tap_1, tap_2, tap_3, tap_4, tap_5, tap_6, tap_7 = _add_to_tap(
                    tap_0, tap_1, tap_2, tap_3, tap_4, tap_5, tap_6, tap_7, product, k)
            bias_sum += owned_grad
        if GRAD_X:
            grad_in = tl.zeros([BLOCK_L, BLOCK_D], dtype=tl.float32)
            if SCRATCH:
                tl.debug_barrier()  # the previous tile's reads are done
                tl.store(scratch + rows[:, None] * BLOCK_D, grad)
                tl.debug_barrier()
            for shift in tl.static_range(WIDTH):  # an owned row p reads g[p + shift·dilation] through tap W − 1 − shift
                shifted = grad
                if shift > 0:
                    index = tl.minimum(rows + shift * dilation, BLOCK_L - 1)  # clamped rows are not owned
                    if SCRATCH:
                        shifted = tl.load(scratch + index[:, None] * BLOCK_D)
                    else:
                        shifted = tl.gather(grad, index[:, None] + broadcast, axis=0)
                tap = tl.load(weight_ptr + channels * stride_w_d + (WIDTH - 1 - shift) * stride_w_k,
                              mask=channel_mask, other=0.0)
                grad_in += tap.to(tl.float32)[None, :] * shifted
            grad_x_ptrs = (grad_x_ptr + batch * stride_gx_b + positions[:, None] * stride_gx_l
                           + channels[None, :] * stride_gx_d)
            tl.store(grad_x_ptrs, grad_in.to(grad_x_ptr.dtype.element_ty),
                     mask=owned[:, None] & channel_mask[None, :])
    if GRAD_PARAMS:  # row batch · chunks + chunk
        _store_partial_row(grad_weight_partial_ptr, grad_bias_partial_ptr, batch * tl.num_programs(2) + chunk, dim,
                           channels, channel_mask, tap_0, tap_1, tap_2, tap_3, tap_4, tap_5, tap_6, tap_7, bias_sum,
                           WIDTH, HAS_BIAS)


@triton.jit
def _pick(a, b, TAKE_A: tl.constexpr):
    """a if TAKE_A (a constexpr) else b."""
    if TAKE_A:
        chosen = a
    else:
        chosen = b
    return chosen


@triton.jit
def _at(v0, v1, v2, v3, v4, v5, v6, v7, J: tl.constexpr):
    """v_J of a register window (J a constexpr < 8)."""
    return _pick(v0, _pick(v1, _pick(v2, _pick(v3, _pick(v4, _pick(v5, _pick(v6, v7, J == 6), J == 5), J == 4),
                                                  J == 3), J == 2), J == 1), J == 0)


@triton.jit
def _window_down(v0, v1, v2, v3, v4, v5, v6, v7, new, N: tl.constexpr):
    """A register window of N values moved one step: entry j takes v_{j+1}, entry N − 1 takes `new` (entries past
    N − 1 are unused): for v_j = x[t − j·dilation] when t moves down by dilation."""
    return (_pick(v1, new, N > 1), _pick(v2, _pick(new, v1, N == 2), N > 2),
            _pick(v3, _pick(new, v2, N == 3), N > 3), _pick(v4, _pick(new, v3, N == 4), N > 4),
            _pick(v5, _pick(new, v4, N == 5), N > 5), _pick(v6, _pick(new, v5, N == 6), N > 6),
            _pick(v7, _pick(new, v6, N == 7), N > 7), _pick(new, v7, N == 8))


@triton.jit
def _zero_window(BLOCK_D: tl.constexpr):
    """Eight zero [BLOCK_D] fp32 tensors, each its own value. A register window must start from distinct values:
    Triton finds a loop's carried names by comparing each name's value before and after a dry run of the body, so
    slots that start as one tensor look unchanged by the shift v_1 <- v_0 and are silently dropped from the loop
    (they stay zero: the walk kernels' first GPU run lost every tap but two). tests/ops/test_causal_conv1d.py checks
    the compiled loop's carried values."""
    return (tl.zeros([BLOCK_D], dtype=tl.float32), tl.zeros([BLOCK_D], dtype=tl.float32),
            tl.zeros([BLOCK_D], dtype=tl.float32), tl.zeros([BLOCK_D], dtype=tl.float32),
            tl.zeros([BLOCK_D], dtype=tl.float32), tl.zeros([BLOCK_D], dtype=tl.float32),
            tl.zeros([BLOCK_D], dtype=tl.float32), tl.zeros([BLOCK_D], dtype=tl.float32))


@triton.jit
def _row_mask(channels, dim, position, low, high):
    """channels < dim at a row position (a scalar) with low ≤ position < high, else nothing: the row test folded
    into the channel bound (one vector compare; the interpreter cannot combine 0-d and vector masks)."""
    return channels < tl.where((position >= low) & (position < high), dim, 0)


@triton.jit
def _load_row(row_ptr, base, step, stride_l, low, high, channels, dim, U: tl.constexpr, GROUP: tl.constexpr,
              BLOCK_D: tl.constexpr):
    """Row u = U of a group: the row at position base + U·step of one program's channels, masked to low ≤ position
    < high (0 elsewhere), in the row's dtype; a zero of its own past GROUP (an unused slot)."""
    if U < GROUP:
        position = base + U * step
        row = tl.load(row_ptr + position * stride_l, mask=_row_mask(channels, dim, position, low, high), other=0.0)
    else:
        row = tl.zeros([BLOCK_D], dtype=row_ptr.dtype.element_ty)
    return row


@triton.jit
def _load_rows(row_ptr, base, step, stride_l, low, high, channels, dim, GROUP: tl.constexpr, BLOCK_D: tl.constexpr):
    """The GROUP (≤ 8) rows at positions base + u·step, u < GROUP, as an 8-slot tuple (_load_row). All GROUP loads
    are issued together, a group ahead of their use: they are what keeps a walk's memory pipe full."""
    return (_load_row(row_ptr, base, step, stride_l, low, high, channels, dim, 0, GROUP, BLOCK_D),
            _load_row(row_ptr, base, step, stride_l, low, high, channels, dim, 1, GROUP, BLOCK_D),
            _load_row(row_ptr, base, step, stride_l, low, high, channels, dim, 2, GROUP, BLOCK_D),
            _load_row(row_ptr, base, step, stride_l, low, high, channels, dim, 3, GROUP, BLOCK_D),
            _load_row(row_ptr, base, step, stride_l, low, high, channels, dim, 4, GROUP, BLOCK_D),
            _load_row(row_ptr, base, step, stride_l, low, high, channels, dim, 5, GROUP, BLOCK_D),
            _load_row(row_ptr, base, step, stride_l, low, high, channels, dim, 6, GROUP, BLOCK_D),
            _load_row(row_ptr, base, step, stride_l, low, high, channels, dim, 7, GROUP, BLOCK_D))


@triton.jit
def _load_tap(w_row, stride_w_k, channel_mask, K: tl.constexpr, WIDTH: tl.constexpr, BLOCK_D: tl.constexpr):
    if K < WIDTH:
        tap = tl.load(w_row + K * stride_w_k, mask=channel_mask, other=0.0).to(tl.float32)
    else:
        tap = tl.zeros([BLOCK_D], dtype=tl.float32)
    return tap


@triton.jit
def _load_taps(w_row, stride_w_k, channel_mask, WIDTH: tl.constexpr, BLOCK_D: tl.constexpr):
    """The W taps of a program's channels in fp32, as an 8-slot tuple, loaded once before a walk (a load inside it
    would be repeated every step: the walk's stores may alias the weight for all the compiler knows)."""
    return (_load_tap(w_row, stride_w_k, channel_mask, 0, WIDTH, BLOCK_D),
            _load_tap(w_row, stride_w_k, channel_mask, 1, WIDTH, BLOCK_D),
            _load_tap(w_row, stride_w_k, channel_mask, 2, WIDTH, BLOCK_D),
            _load_tap(w_row, stride_w_k, channel_mask, 3, WIDTH, BLOCK_D),
            _load_tap(w_row, stride_w_k, channel_mask, 4, WIDTH, BLOCK_D),
            _load_tap(w_row, stride_w_k, channel_mask, 5, WIDTH, BLOCK_D),
            _load_tap(w_row, stride_w_k, channel_mask, 6, WIDTH, BLOCK_D),
            _load_tap(w_row, stride_w_k, channel_mask, 7, WIDTH, BLOCK_D))


@triton.jit
def _causal_conv1d_walk_forward_kernel(
    x_ptr, weight_ptr, bias_ptr, out_ptr, seq_len, dim, dilation, steps,
    stride_x_b, stride_x_d, stride_x_l, stride_w_d, stride_w_k, stride_out_b, stride_out_d, stride_out_l,
    WIDTH: tl.constexpr, HAS_BIAS: tl.constexpr, SILU: tl.constexpr, GROUP: tl.constexpr, BLOCK_D: tl.constexpr,
):
    """Program (block of D, batch, chunk · dilation + residue r): out at t = chunk · steps · dilation + r + i·dilation,
    i < steps, walking up one row of BLOCK_D channels at a time; the W − 1 earlier inputs of the taps stay in a
    register window (x_j = x[t − j·dilation]), so each input row is read once (W − 1 warm-up reads a chunk). Rows
    come in groups of GROUP, each group's loads issued while the previous group is computed (the group loop is
    unrolled: the window's shifts are register renames). No seq_idx, no initial states (the launcher sends those to
    the tiled kernel). fp32 math, out in its dtype."""
    batch = tl.program_id(1).to(tl.int64)
    chunk = tl.program_id(2) // dilation
    residue = tl.program_id(2) % dilation
    channels = tl.program_id(0) * BLOCK_D + tl.arange(0, BLOCK_D)
    channel_mask = channels < dim
    x_row = x_ptr + batch * stride_x_b + channels * stride_x_d
    out_row = out_ptr + batch * stride_out_b + channels * stride_out_d
    acc0 = tl.zeros([BLOCK_D], dtype=tl.float32)
    if HAS_BIAS:
        acc0 += tl.load(bias_ptr + channels, mask=channel_mask, other=0.0).to(tl.float32)
    w_0, w_1, w_2, w_3, w_4, w_5, w_6, w_7 = _load_taps(weight_ptr + channels * stride_w_d, stride_w_k, channel_mask,
                                                        WIDTH, BLOCK_D)
    x_0, x_1, x_2, x_3, x_4, x_5, x_6, x_7 = _zero_window(BLOCK_D)
    first = (chunk * steps * dilation + residue).to(tl.int64)
    end = tl.minimum(first + steps * dilation, seq_len)  # past the chunk's last output: nothing to read or write
    base = first - (WIDTH - 1) * dilation  # the first W − 1 rows only fill the window
    r_0, r_1, r_2, r_3, r_4, r_5, r_6, r_7 = _load_rows(x_row, base, dilation, stride_x_l, 0, end, channels, dim,
                                                        GROUP, BLOCK_D)
    for _ in range(0, tl.cdiv(steps + WIDTH - 1, GROUP)):
        following = base + GROUP * dilation
        q_0, q_1, q_2, q_3, q_4, q_5, q_6, q_7 = _load_rows(x_row, following, dilation, stride_x_l, 0, end,
                                                            channels, dim, GROUP, BLOCK_D)
        for u in tl.static_range(GROUP):
            t = base + u * dilation
            # up one step: x_j <- x_{j-1}, x_0 <- x[t]
            x_7, x_6, x_5, x_4, x_3, x_2, x_1, x_0 = (x_6, x_5, x_4, x_3, x_2, x_1, x_0,
                                                      _at(r_0, r_1, r_2, r_3, r_4, r_5, r_6, r_7, u).to(tl.float32))
            pre = acc0
            for k in tl.static_range(WIDTH):
                pre += _at(w_0, w_1, w_2, w_3, w_4, w_5, w_6, w_7, k) * _at(x_0, x_1, x_2, x_3, x_4, x_5, x_6, x_7,
                                                                            WIDTH - 1 - k)
            out = pre
            if SILU:
                out = pre * tl.sigmoid(pre)
            tl.store(out_row + t * stride_out_l, out.to(out_ptr.dtype.element_ty),
                     mask=_row_mask(channels, dim, t, first, end))
        r_0, r_1, r_2, r_3, r_4, r_5, r_6, r_7 = q_0, q_1, q_2, q_3, q_4, q_5, q_6, q_7
        base = following


@triton.jit
def _causal_conv1d_walk_backward_kernel(
    x_ptr, weight_ptr, bias_ptr, grad_out_ptr, grad_x_ptr, grad_weight_partial_ptr, grad_bias_partial_ptr,
    seq_len, dim, dilation, steps,
    stride_x_b, stride_x_d, stride_x_l, stride_w_d, stride_w_k, stride_g_b, stride_g_d, stride_g_l,
    stride_gx_b, stride_gx_d, stride_gx_l,
    WIDTH: tl.constexpr, HAS_BIAS: tl.constexpr, SILU: tl.constexpr, GRAD_X: tl.constexpr,
    GRAD_PARAMS: tl.constexpr, GROUP: tl.constexpr, BLOCK_D: tl.constexpr,
):
    """Program (block of D, batch, chunk · dilation + residue r): the backward at t = chunk · steps · dilation + r
    + i·dilation, i < steps, walking *down* one row of channels at a time. Register windows: x_j = x[t − j·dilation]
    (j < W) and g_s = g[t + s·dilation] (s < W), g = grad_out · silu′(pre): each position's pre and g computed once,
    each x and grad_out row read once. The walk starts 2W − 2 steps above the chunk: W − 1 to fill the x window, W − 1
    for the g of the positions the chunk's last rows read. grad_x[t] = Σ_s w[W − 1 − s] · g_s;
    grad_w[k] += g_0 · x_{W − 1 − k} and grad_b += g_0 elementwise, written to this program's partial row
    (batch · programs along axis 2 + axis-2 index). Rows of x and grad_out come in groups of GROUP, each group's
    loads issued while the previous group is computed. No seq_idx, no initial states. fp32 math."""
    batch = tl.program_id(1).to(tl.int64)
    chunk = tl.program_id(2) // dilation
    residue = tl.program_id(2) % dilation
    channels = tl.program_id(0) * BLOCK_D + tl.arange(0, BLOCK_D)
    channel_mask = channels < dim
    x_row = x_ptr + batch * stride_x_b + channels * stride_x_d
    grad_out_row = grad_out_ptr + batch * stride_g_b + channels * stride_g_d
    grad_x_row = grad_x_ptr + batch * stride_gx_b + channels * stride_gx_d
    w_0, w_1, w_2, w_3, w_4, w_5, w_6, w_7 = _load_taps(weight_ptr + channels * stride_w_d, stride_w_k, channel_mask,
                                                        WIDTH, BLOCK_D)
    acc0 = tl.zeros([BLOCK_D], dtype=tl.float32)
    if HAS_BIAS:
        acc0 += tl.load(bias_ptr + channels, mask=channel_mask, other=0.0).to(tl.float32)
    zero = tl.zeros([BLOCK_D], dtype=tl.float32)
    x_0, x_1, x_2, x_3, x_4, x_5, x_6, x_7 = _zero_window(BLOCK_D)
    g_0, g_1, g_2, g_3, g_4, g_5, g_6, g_7 = _zero_window(BLOCK_D)
    tap_0, tap_1, tap_2, tap_3, tap_4, tap_5, tap_6, tap_7 = zero, zero, zero, zero, zero, zero, zero, zero
    bias_sum = zero
    chunk_first = (chunk * steps * dilation + residue).to(tl.int64)
    chunk_end = tl.minimum(chunk_first + steps * dilation, seq_len)
    top = chunk_first + (steps - 1 + 2 * WIDTH - 2) * dilation
    # the group at t = base − u·dilation reads grad_out[t] (t ≥ chunk_first: below, no g is needed) and
    # x[t − (W − 1)·dilation] (from the chunk's first source row up)
    lowest_x = tl.maximum(chunk_first - (WIDTH - 1) * dilation, 0)
    x_base = top - (WIDTH - 1) * dilation
    base = top
    r_0, r_1, r_2, r_3, r_4, r_5, r_6, r_7 = _load_rows(x_row, x_base, -dilation, stride_x_l, lowest_x, seq_len,
                                                        channels, dim, GROUP, BLOCK_D)
    h_0, h_1, h_2, h_3, h_4, h_5, h_6, h_7 = _load_rows(grad_out_row, base, -dilation, stride_g_l, chunk_first,
                                                        seq_len, channels, dim, GROUP, BLOCK_D)
    for _ in range(0, tl.cdiv(steps + 2 * WIDTH - 2, GROUP)):
        following, x_following = base - GROUP * dilation, x_base - GROUP * dilation
        q_0, q_1, q_2, q_3, q_4, q_5, q_6, q_7 = _load_rows(x_row, x_following, -dilation, stride_x_l, lowest_x,
                                                            seq_len, channels, dim, GROUP, BLOCK_D)
        p_0, p_1, p_2, p_3, p_4, p_5, p_6, p_7 = _load_rows(grad_out_row, following, -dilation, stride_g_l,
                                                            chunk_first, seq_len, channels, dim, GROUP, BLOCK_D)
        for u in tl.static_range(GROUP):
            t = base - u * dilation
            x_0, x_1, x_2, x_3, x_4, x_5, x_6, x_7 = _window_down(
                x_0, x_1, x_2, x_3, x_4, x_5, x_6, x_7, _at(r_0, r_1, r_2, r_3, r_4, r_5, r_6, r_7, u).to(tl.float32),
                WIDTH)
            grad = _at(h_0, h_1, h_2, h_3, h_4, h_5, h_6, h_7, u).to(tl.float32)
            if SILU:
                pre = acc0
                for k in tl.static_range(WIDTH):
                    pre += _at(w_0, w_1, w_2, w_3, w_4, w_5, w_6, w_7, k) * _at(x_0, x_1, x_2, x_3, x_4, x_5, x_6,
                                                                                x_7, WIDTH - 1 - k)
                sig = tl.sigmoid(pre)
                grad = grad * sig * (1.0 + pre * (1.0 - sig))  # 0 past L and below the chunk (grad_out masked)
            # down one step: g_s <- g_{s-1}, g_0 <- g[t]
            g_7, g_6, g_5, g_4, g_3, g_2, g_1, g_0 = g_6, g_5, g_4, g_3, g_2, g_1, g_0, grad
            owned = (t >= chunk_first) & (t < chunk_end)  # not the warm-up above the chunk, nor the group's tail
            if GRAD_X:
                grad_in = zero
                for s in tl.static_range(WIDTH):
                    grad_in += (_at(w_0, w_1, w_2, w_3, w_4, w_5, w_6, w_7, WIDTH - 1 - s)
                                * _at(g_0, g_1, g_2, g_3, g_4, g_5, g_6, g_7, s))
                if not SILU:  # (with silu an inf tap makes its channel's g nan everywhere, as the reference's)
                    if t + (WIDTH - 1) * dilation >= seq_len:  # the last rows: a g past L adds nothing, not 0 · tap
                        grad_in = zero
                        for s in tl.static_range(WIDTH):
                            grad_in += tl.where(t + s * dilation < seq_len,
                                                _at(w_0, w_1, w_2, w_3, w_4, w_5, w_6, w_7, WIDTH - 1 - s)
                                                * _at(g_0, g_1, g_2, g_3, g_4, g_5, g_6, g_7, s), 0.0)
                tl.store(grad_x_row + t * stride_gx_l, grad_in.to(grad_x_ptr.dtype.element_ty),
                         mask=_row_mask(channels, dim, t, chunk_first, chunk_end))
            if GRAD_PARAMS:
                owned_grad = tl.where(owned, g_0, 0.0)
                for k in tl.static_range(WIDTH):
                    tap_0, tap_1, tap_2, tap_3, tap_4, tap_5, tap_6, tap_7 = _add_to_tap(
                        tap_0, tap_1, tap_2, tap_3, tap_4, tap_5, tap_6, tap_7,
                        owned_grad * _at(x_0, x_1, x_2, x_3, x_4, x_5, x_6, x_7, WIDTH - 1 - k), k)
                bias_sum += owned_grad
        r_0, r_1, r_2, r_3, r_4, r_5, r_6, r_7 = q_0, q_1, q_2, q_3, q_4, q_5, q_6, q_7
        h_0, h_1, h_2, h_3, h_4, h_5, h_6, h_7 = p_0, p_1, p_2, p_3, p_4, p_5, p_6, p_7
        base, x_base = following, x_following
    if GRAD_PARAMS:  # rows of contiguous (rows, D, W) and (rows, D)
        row = batch * tl.num_programs(2) + tl.program_id(2)
        partial = grad_weight_partial_ptr + (row * dim + channels) * WIDTH
        for k in tl.static_range(WIDTH):
            tl.store(partial + k, _at(tap_0, tap_1, tap_2, tap_3, tap_4, tap_5, tap_6, tap_7, k), mask=channel_mask)
        if HAS_BIAS:
            tl.store(grad_bias_partial_ptr + row * dim + channels, bias_sum, mask=channel_mask)


@triton.jit
def _causal_conv1d_silu_grad_kernel(
    x_ptr, weight_ptr, bias_ptr, seq_idx_ptr, init_ptr, grad_out_ptr, g_ptr,
    seq_len, dim, dilation, state_len, first_block,
    stride_x_b, stride_x_d, stride_x_l, stride_w_d, stride_w_k, stride_seq_b, stride_seq_l,
    stride_init_b, stride_init_d, stride_init_s, stride_go_b, stride_go_d, stride_go_l,
    stride_g_b, stride_g_d, stride_g_l,
    WIDTH: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_SEQ_IDX: tl.constexpr, HAS_INIT: tl.constexpr,
    BLOCK_L: tl.constexpr, BLOCK_D: tl.constexpr,
):
    """The two-pass backward's first pass (tunable bwd_two_pass): g = grad_out · silu'(pre) at every position, pre
    recomputed once per position exactly as the forward kernel computes it (same grid and masks), fp32 math, stored
    in g's dtype. The second pass is the backward kernel without the activation, reading g for grad_out."""
    batch = tl.program_id(2).to(tl.int64)
    start = (first_block + tl.program_id(0)).to(tl.int64) * BLOCK_L
    times = start + tl.arange(0, BLOCK_L)
    channels = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    mask = (times < seq_len)[:, None] & (channels < dim)[None, :]
    channel_mask = channels < dim
    seq_row = seq_idx_ptr + batch * stride_seq_b
    time_seq = times  # placeholder: only read with HAS_SEQ_IDX
    if HAS_SEQ_IDX:
        time_seq = _sequence_ids(seq_row, times, seq_len, stride_seq_l)
    bias = tl.zeros([BLOCK_D], dtype=tl.float32)
    if HAS_BIAS:
        bias = tl.load(bias_ptr + channels, mask=channel_mask, other=0.0).to(tl.float32)
    pre = _pre_activation(x_ptr + batch * stride_x_b, init_ptr + batch * stride_init_b, seq_row, weight_ptr, bias,
                          times, time_seq, channels, channel_mask, seq_len, dilation, state_len,
                          stride_x_l, stride_x_d, stride_w_d, stride_w_k, stride_seq_l, stride_init_s, stride_init_d,
                          0, WIDTH, HAS_SEQ_IDX, HAS_INIT, BLOCK_L, BLOCK_D)
    grad_ptrs = grad_out_ptr + batch * stride_go_b + times[:, None] * stride_go_l + channels[None, :] * stride_go_d
    grad = tl.load(grad_ptrs, mask=mask, other=0.0).to(tl.float32)
    sig = tl.sigmoid(pre)
    g = grad * sig * (1.0 + pre * (1.0 - sig))
    g_ptrs = g_ptr + batch * stride_g_b + times[:, None] * stride_g_l + channels[None, :] * stride_g_d
    tl.store(g_ptrs, g.to(g_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _causal_conv1d_update_kernel(
    x_ptr, state_ptr, weight_ptr, bias_ptr, out_ptr, dim, dilation, state_len,
    stride_x_b, stride_x_d, stride_s_b, stride_s_d, stride_s_s, stride_w_d, stride_w_k, stride_out_b, stride_out_d,
    WIDTH: tl.constexpr, HAS_BIAS: tl.constexpr, SILU: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_S: tl.constexpr,
):
    """Program (block of D, batch): out = act(bias + Σ_{k<W−1} w[k] · state[k·dilation] + w[W−1] · x_t), fp32 math,
    then state rolled left by one with x_t appended, in place (x_t and the state share one dtype)."""
    batch = tl.program_id(1).to(tl.int64)
    channels = tl.program_id(0) * BLOCK_D + tl.arange(0, BLOCK_D)
    channel_mask = channels < dim
    state_row = state_ptr + batch * stride_s_b + channels * stride_s_d
    x_new = tl.load(x_ptr + batch * stride_x_b + channels * stride_x_d, mask=channel_mask, other=0.0)
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    if HAS_BIAS:
        acc += tl.load(bias_ptr + channels, mask=channel_mask, other=0.0).to(tl.float32)
    for k in tl.static_range(WIDTH - 1):
        tap = tl.load(weight_ptr + channels * stride_w_d + k * stride_w_k, mask=channel_mask, other=0.0)
        value = tl.load(state_row + k * dilation * stride_s_s, mask=channel_mask, other=0.0)
        acc += tap.to(tl.float32) * value.to(tl.float32)
    last_tap = tl.load(weight_ptr + channels * stride_w_d + (WIDTH - 1) * stride_w_k, mask=channel_mask, other=0.0)
    acc += last_tap.to(tl.float32) * x_new.to(tl.float32)
    if SILU:
        acc = acc * tl.sigmoid(acc)
    tl.store(out_ptr + batch * stride_out_b + channels * stride_out_d, acc.to(out_ptr.dtype.element_ty),
             mask=channel_mask)
    slots = tl.arange(0, BLOCK_S)
    slot_ptrs = state_row[:, None] + slots[None, :] * stride_s_s
    shifted = tl.load(slot_ptrs + stride_s_s, mask=channel_mask[:, None] & (slots < state_len - 1)[None, :],
                      other=0.0)
    rolled = tl.where((slots == state_len - 1)[None, :], x_new[:, None], shifted)
    tl.debug_barrier()  # every thread has read the old state before any thread overwrites it
    tl.store(slot_ptrs, rolled, mask=channel_mask[:, None] & (slots < state_len)[None, :])


@triton.jit
def _sum_rows(src_ptr, dst_ptr, rows, cols, col_block, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    """dst[c] = Σ_r src[r, c] over the rows of a contiguous (rows, cols) fp32 matrix, for BLOCK columns from
    col_block · BLOCK, ROWS rows at a time in a fixed order; stored in dst's dtype."""
    cols_here = col_block * BLOCK + tl.arange(0, BLOCK)
    col_mask = cols_here < cols
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for first in range(0, rows, ROWS):
        r = first + tl.arange(0, ROWS)
        tile = tl.load(src_ptr + r[:, None].to(tl.int64) * cols + cols_here[None, :],
                       mask=(r[:, None] < rows) & col_mask[None, :], other=0.0)
        acc += tl.sum(tile.to(tl.float32), axis=0)
    tl.store(dst_ptr + cols_here, acc.to(dst_ptr.dtype.element_ty), mask=col_mask)


@triton.jit
def _sum_partial_rows_kernel(weight_partial_ptr, bias_partial_ptr, grad_weight_ptr, grad_bias_ptr, rows, weight_cols,
                             bias_cols, weight_blocks, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    """grad_w (D·W) and grad_b (D) from a backward's fp32 partial rows (rows, D, W) and (rows, D): programs below
    weight_blocks sum BLOCK columns of the weight's rows, the others BLOCK columns of the bias's."""
    pid = tl.program_id(0)
    if pid < weight_blocks:
        _sum_rows(weight_partial_ptr, grad_weight_ptr, rows, weight_cols, pid, ROWS, BLOCK)
    else:
        _sum_rows(bias_partial_ptr, grad_bias_ptr, rows, bias_cols, pid - weight_blocks, ROWS, BLOCK)


_SUM_ROWS, _SUM_BLOCK = 32, 128  # 10.5 MB of partial rows at the tracked shape: 160 programs of 128 columns


# ----------------------------------------------------------------------------------------------------------------
# Launchers
# ----------------------------------------------------------------------------------------------------------------
# Every kernel launches through FastLaunch (greyhound/_launch.py): Triton's per-call argument binding runs once per
# launch signature instead of on every call (host time is what a small call costs; docs/perf/causal_conv1d.md).
(_run_forward, _run_backward, _run_silu_gather_backward, _run_walk_forward, _run_walk_backward, _run_silu_grad,
 _run_update, _run_sum_partial_rows) = map(FastLaunch, (
    _causal_conv1d_forward_kernel, _causal_conv1d_backward_kernel, _causal_conv1d_silu_gather_backward_kernel,
    _causal_conv1d_walk_forward_kernel, _causal_conv1d_walk_backward_kernel, _causal_conv1d_silu_grad_kernel,
    _causal_conv1d_update_kernel, _sum_partial_rows_kernel))


class _Blocks(NamedTuple):
    block_l: int
    block_d: int
    num_warps: int


@functools.lru_cache(maxsize=None)
def _sm_count(device: torch.device) -> int:
    if device.type != "cuda":
        return 1  # the CPU interpreter: few programs, so that each walks several tiles
    return multiprocessor_count(device.index if device.index is not None else torch.cuda.current_device())


def _channel_last(t: torch.Tensor) -> bool:
    """Whether (B, D, L) `t` is stored with D as its stride-1 dimension (a transposed (B, L, D) tensor)."""
    return t.stride(1) == 1 and t.stride(2) != 1


def _blocks(x: torch.Tensor, width: int, backward: bool) -> _Blocks:
    """Tiles of 4096 (forward, 4 warps) or 2048 / 1024 (backward, channel-last with 8 warps / contiguous with 4: up to
    2W − 1 shifted input tiles live) elements for W <= 4, fewer for wider W, the wide side along x's stride-1
    dimension so that the unshifted loads are 16-byte vectors: 128 channels for channel-last x, 256 steps of L
    otherwise. The backward shapes come from a tuning sweep on the H200 (docs/perf/causal_conv1d.md: B=8, D=4096,
    L=2048, W=4: channel-last 16 × 128 with 8 warps 0.488 ms against 8 × 128 with 4 warps 0.661; contiguous
    256 × 4 0.558 against 128 × 8 0.664)."""
    _, dim, seq_len = x.shape
    narrow = max(1, next_power_of_2(width) // 4)
    if _channel_last(x):
        tile = (2048 if backward else 4096) // narrow
        block_d = min(next_power_of_2(dim), 128)
        return _Blocks(min(next_power_of_2(seq_len), tile // block_d), block_d, 8 if backward else 4)
    tile = (1024 if backward else 4096) // narrow
    block_l = min(next_power_of_2(seq_len), tile // 4 if backward else tile // 8, 256)
    return _Blocks(block_l, min(next_power_of_2(dim), tile // block_l), 4)


# forced for every launch when set: how tests walk many tiles and chunks at small sizes
_BLOCKS_OVERRIDE = None


def _block_config(x, width, backward):
    if _BLOCKS_OVERRIDE is not None:
        return _BLOCKS_OVERRIDE
    chosen = _blocks(x, width, backward)
    prefix = "bwd_" if backward else ""
    forced = _Blocks(*(_tuning.get(TUNING_OP, prefix + name, value)
                       for name, value in zip(("block_l", "block_d", "warps"), chosen)))
    for name, value in zip(("block_l", "block_d"), forced):
        if value & (value - 1):
            raise ValueError(f"tuning: causal_conv1d.{prefix}{name} must be a power of 2, got {value}")
    return forced


def _optional_strides(t, ndim):
    return t.stride() if t is not None else (0,) * ndim


def _head_blocks(initial_states, state_len, block_l):
    """Tiles of L starting before state_len read initial states (their taps, or the backward's recompute, reach
    below t = 0): they get their own launch, so the other tiles' kernel carries no initial-state code."""
    return cdiv(state_len, block_l) if initial_states is not None else 0


def _position_launches(x, width, dilation, initial_states):
    """The launches of a kernel tiled like the forward, over (blocks of L, blocks of D, B): (grid, first_block,
    has_init, blocks) each. Tiles that reach before t = 0 with initial states form their own launch, so the kernel
    for every other tile carries no initial-state code."""
    batch, dim, seq_len = x.shape
    blocks = _block_config(x, width, backward=False)
    l_blocks = cdiv(seq_len, blocks.block_l)
    head_blocks = min(l_blocks, _head_blocks(initial_states, (width - 1) * dilation, blocks.block_l))
    for first_block, num_blocks, has_init in ((0, head_blocks, True), (head_blocks, l_blocks - head_blocks, False)):
        if num_blocks:
            yield (num_blocks, cdiv(dim, blocks.block_d), batch), first_block, has_init, blocks


# tunables that ask for the tiled kernels of one direction: forcing any of them turns that direction's walk off
_TILED_TUNABLES = {False: ("block_l", "block_d", "warps"),
                   True: ("bwd_block_l", "bwd_block_d", "bwd_warps", "bwd_programs_per_sm", "bwd_two_pass",
                          "bwd_gather", "bwd_gather_block_l", "bwd_gather_scratch")}


def _walks_by_default(x):
    """The walk is the default on the GPU only. The CPU interpreter runs a walk one row at a time through Python
    (a forward + backward of a 2 × 64 × 100 tensor took minutes), so there the tiled kernels stay the default and the
    walk runs when forced (`walk=1`: its CPU tests)."""
    return x.is_cuda


def _walk_config(x, seq_idx, initial_states, backward=False):
    """(steps, block_d, num_warps, group) of the forward (or backward) walk kernel, or None where it does not apply:
    the default on the GPU for channel-last x without seq_idx or initial states, unless `walk` is forced off or a
    tiled-kernel tunable of that direction is forced; elsewhere only when `walk` is forced on. H200, B=8 D=4096
    L=2048 W=4 bf16 (docs/perf/causal_conv1d.md): forward 0.082 ms at 256 channels, 2 warps, groups of 4 rows, 64
    positions a program (tiled 0.109); backward at 64 channels, 1 warp, groups of 4, 128 positions (L=8192: 0.672
    ms, tiled 1.685; session 10's calls 3 to 5)."""
    if seq_idx is not None or initial_states is not None or not _channel_last(x) or x.numel() == 0:
        return None
    block_d = min(next_power_of_2(x.shape[1]), 64 if backward else 256)
    forced = _tuning.forced(TUNING_OP)
    if not forced:  # the common case, on every eager call: no override dictionary walked
        if not _walks_by_default(x):
            return None
        return (128, block_d, 1, 4) if backward else (64, block_d, max(1, block_d // 128), 4)
    default = _walks_by_default(x) and not any(name in forced for name in _TILED_TUNABLES[backward])
    if not forced.get("walk", default):
        return None
    prefix = "walk_bwd_" if backward else "walk_"
    block_d = forced.get(prefix + "block_d", block_d)
    if block_d & (block_d - 1):
        raise ValueError(f"tuning: causal_conv1d.{prefix}block_d must be a power of 2, got {block_d}")
    group = forced.get(prefix + "group", 4)
    if not 1 <= group <= 8:
        raise ValueError(f"tuning: causal_conv1d.{prefix}group must be from 1 to 8, got {group}")
    warps = forced.get(prefix + "warps", 1 if backward else max(1, block_d // 128))
    return forced.get(prefix + "steps", 128 if backward else 64), block_d, warps, group


def _walk_grid(x, dilation, steps, block_d):
    """(grid, steps) of a walk launch: (D blocks, batch, chunks · dilation), each program walking `steps` positions
    of one residue class, at most that class's length (no program walks past its last position)."""
    batch, dim, seq_len = x.shape
    steps = min(steps, cdiv(seq_len, dilation))
    return (cdiv(dim, block_d), batch, cdiv(seq_len, steps * dilation) * dilation), steps


def _launch_walk_forward(x, weight, bias, silu, dilation, config):
    steps, block_d, warps, group = config
    _, dim, seq_len = x.shape
    grid, steps = _walk_grid(x, dilation, steps, block_d)
    out = torch.empty_like(x)
    _run_walk_forward[grid](
        x, weight, x if bias is None else bias, out, seq_len, dim, dilation, steps,
        *x.stride(), *weight.stride(), *out.stride(),
        WIDTH=weight.shape[1], HAS_BIAS=bias is not None, SILU=silu, GROUP=group, BLOCK_D=block_d,
        num_warps=warps,
    )
    return out


def _partial_sums(rows, x, weight, bias, needs_grad):
    """(grad_w partial, grad_b partial): the fp32 rows (rows, D, W) and (rows, D) a backward kernel writes, one per
    program; None where no parameter gradient (or no bias) is needed."""
    _, needs_weight, needs_bias, _ = needs_grad
    if not (needs_weight or (needs_bias and bias is not None)):
        return None, None
    fp32 = dict(dtype=torch.float32, device=x.device)
    dim, width = weight.shape
    return (torch.empty(rows, dim, width, **fp32),
            torch.empty(rows, dim, **fp32) if bias is not None else None)


def _parameter_grads(grad_weight_partial, grad_bias_partial, weight, bias, needs_grad):
    """(grad_weight, grad_bias) in the parameters' dtypes: the partial rows summed in a fixed order, both in one
    launch (it replaced two `sum(0).to(dtype)` pairs: four launches and four allocations of host time a backward)."""
    _, needs_weight, needs_bias, _ = needs_grad
    needs_bias = needs_bias and bias is not None
    if not (needs_weight or needs_bias):
        return None, None
    grad_weight = torch.empty_like(weight, memory_format=torch.contiguous_format) if needs_weight else None
    grad_bias = torch.empty_like(bias, memory_format=torch.contiguous_format) if needs_bias else None
    rows = grad_weight_partial.shape[0]
    weight_cols, bias_cols = weight.numel() if needs_weight else 0, bias.numel() if needs_bias else 0
    weight_blocks = cdiv(weight_cols, _SUM_BLOCK)
    placeholder = grad_weight_partial
    _run_sum_partial_rows[(weight_blocks + cdiv(bias_cols, _SUM_BLOCK),)](
        grad_weight_partial, placeholder if grad_bias_partial is None else grad_bias_partial,
        placeholder if grad_weight is None else grad_weight, placeholder if grad_bias is None else grad_bias,
        rows, weight_cols, bias_cols, weight_blocks, ROWS=_SUM_ROWS, BLOCK=_SUM_BLOCK, num_warps=4,
    )
    return grad_weight, grad_bias


def _launch_walk_backward(x, weight, bias, grad_out, silu, dilation, needs_grad, config):
    steps, block_d, warps, group = config
    needs_x = needs_grad[0]
    _, dim, seq_len = x.shape
    width = weight.shape[1]
    grid, steps = _walk_grid(x, dilation, steps, block_d)
    grad_x = torch.empty_like(x) if needs_x else None
    grad_weight_partial, grad_bias_partial = _partial_sums(grid[1] * grid[2], x, weight, bias, needs_grad)
    _run_walk_backward[grid](
        x, weight, x if bias is None else bias, grad_out, x if grad_x is None else grad_x,
        x if grad_weight_partial is None else grad_weight_partial,
        x if grad_bias_partial is None else grad_bias_partial,
        seq_len, dim, dilation, steps,
        *x.stride(), *weight.stride(), *grad_out.stride(), *_optional_strides(grad_x, 3),
        WIDTH=width, HAS_BIAS=bias is not None, SILU=silu, GRAD_X=needs_x,
        GRAD_PARAMS=grad_weight_partial is not None, GROUP=group, BLOCK_D=block_d, num_warps=warps,
    )
    return (grad_x, *_parameter_grads(grad_weight_partial, grad_bias_partial, weight, bias, needs_grad), None)


def _launch_forward(x, weight, bias, seq_idx, initial_states, silu, dilation):
    """act(conv(x)) in x's dtype and layout (empty_like), x (B, D, L) of any strides."""
    _, dim, seq_len = x.shape
    width = weight.shape[1]
    walk = _walk_config(x, seq_idx, initial_states)
    if walk is not None:
        return _launch_walk_forward(x, weight, bias, silu, dilation, walk)
    out = torch.empty_like(x)
    if out.numel() == 0:
        return out
    for grid, first_block, has_init, blocks in _position_launches(x, width, dilation, initial_states):
        _run_forward[grid](
            x, weight, x if bias is None else bias, x if seq_idx is None else seq_idx,
            x if initial_states is None else initial_states, out,
            seq_len, dim, dilation, (width - 1) * dilation, first_block,
            *x.stride(), *weight.stride(), *_optional_strides(seq_idx, 2), *_optional_strides(initial_states, 3),
            *out.stride(),
            WIDTH=width, HAS_BIAS=bias is not None, HAS_SEQ_IDX=seq_idx is not None, HAS_INIT=has_init,
            SILU=silu, BLOCK_L=blocks.block_l, BLOCK_D=blocks.block_d, num_warps=blocks.num_warps,
        )
    return out


def _backward_chunks(num_tiles, batch, d_blocks, device):
    """(chunks, tiles_per_program) for num_tiles tiles of L: about 4 programs per SM in all, each walking a chunk of
    tiles, so the fp32 partial rows of grad_w / grad_b stay few (batch × chunks)."""
    per_sm = _tuning.get(TUNING_OP, "bwd_programs_per_sm", 4)
    chunks = max(1, min(num_tiles, cdiv(per_sm * _sm_count(device), batch * d_blocks)))
    tiles_per_program = cdiv(num_tiles, chunks)
    return cdiv(num_tiles, tiles_per_program), tiles_per_program


def _launch_silu_grad(x, weight, bias, seq_idx, initial_states, grad_out, dilation):
    """g = grad_out · silu'(pre) (the two-pass backward's first pass): x's shape, dtype and layout."""
    _, dim, seq_len = x.shape
    width = weight.shape[1]
    g = torch.empty_like(x)
    for grid, first_block, has_init, blocks in _position_launches(x, width, dilation, initial_states):
        _run_silu_grad[grid](
            x, weight, x if bias is None else bias, x if seq_idx is None else seq_idx,
            x if initial_states is None else initial_states, grad_out, g,
            seq_len, dim, dilation, (width - 1) * dilation, first_block,
            *x.stride(), *weight.stride(), *_optional_strides(seq_idx, 2), *_optional_strides(initial_states, 3),
            *grad_out.stride(), *g.stride(),
            WIDTH=width, HAS_BIAS=bias is not None, HAS_SEQ_IDX=seq_idx is not None, HAS_INIT=has_init,
            BLOCK_L=blocks.block_l, BLOCK_D=blocks.block_d, num_warps=blocks.num_warps,
        )
    return g


def _gather_backward_block_l(x, width, dilation):
    """The bwd_gather tile length, or 0 when that kernel does not apply (a halo of half the largest tile or more)."""
    halo = (width - 1) * dilation
    block_l = _tuning.get(TUNING_OP, "bwd_gather_block_l",
                          max(16 if _channel_last(x) else 256, next_power_of_2(2 * halo + 1)))
    if block_l & (block_l - 1):
        raise ValueError(f"tuning: causal_conv1d.bwd_gather_block_l must be a power of 2, got {block_l}")
    return block_l if halo < block_l <= 1024 else 0


def _launch_gather_backward(x, weight, bias, grad_out, dilation, needs_grad, block_l):
    """_causal_conv1d_silu_gather_backward_kernel's (grad_x, grad_weight, grad_bias, None)."""
    needs_x = needs_grad[0]
    batch, dim, seq_len = x.shape
    width = weight.shape[1]
    halo = (width - 1) * dilation
    blocks = _block_config(x, width, backward=True)
    block_d = max(1, min(next_power_of_2(dim), blocks.block_l * blocks.block_d // block_l))
    num_tiles = cdiv(seq_len, block_l - halo)
    d_blocks = cdiv(dim, block_d)
    chunks, tiles_per_program = _backward_chunks(num_tiles, batch, d_blocks, x.device)
    grad_x = torch.empty_like(x) if needs_x else None
    grad_weight_partial, grad_bias_partial = _partial_sums(batch * chunks, x, weight, bias, needs_grad)
    use_scratch = needs_x and _tuning.get(TUNING_OP, "bwd_gather_scratch", False)
    scratch = (torch.empty(d_blocks * batch * chunks * block_l * block_d, dtype=torch.float32, device=x.device)
               if use_scratch else None)
    _run_silu_gather_backward[(d_blocks, batch, chunks)](
        x, weight, x if bias is None else bias, grad_out, x if grad_x is None else grad_x,
        x if grad_weight_partial is None else grad_weight_partial,
        x if grad_bias_partial is None else grad_bias_partial, x if scratch is None else scratch,
        seq_len, dim, dilation, halo, num_tiles, tiles_per_program,
        *x.stride(), *weight.stride(), *grad_out.stride(), *_optional_strides(grad_x, 3),
        WIDTH=width, HAS_BIAS=bias is not None, GRAD_X=needs_x, GRAD_PARAMS=grad_weight_partial is not None,
        SCRATCH=use_scratch, BLOCK_L=block_l, BLOCK_D=block_d, num_warps=blocks.num_warps,
    )
    return (grad_x, *_parameter_grads(grad_weight_partial, grad_bias_partial, weight, bias, needs_grad), None)


def _launch_backward(x, weight, bias, seq_idx, initial_states, grad_out, silu, dilation, needs_grad):
    """(grad_x, grad_weight, grad_bias, grad_initial_states), None where `needs_grad` (four bools) says so."""
    # the gather kernel for x with L as its stride-1 dimension (H200, D=4096 W=4 bf16 backward: 0.504 vs 0.698 ms at
    # L=2048, 1.452 vs 1.959 at L=8192); for channel-last x the walk (above), else the general kernel
    walk = _walk_config(x, seq_idx, initial_states, backward=True)
    if walk is not None:
        return _launch_walk_backward(x, weight, bias, grad_out, silu, dilation, needs_grad, walk)
    if (silu and seq_idx is None and initial_states is None and x.numel() > 0
            and _tuning.get(TUNING_OP, "bwd_gather",
                            not _channel_last(x) and not _tuning.get(TUNING_OP, "bwd_two_pass", False))):
        block_l = _gather_backward_block_l(x, weight.shape[1], dilation)
        if block_l:
            return _launch_gather_backward(x, weight, bias, grad_out, dilation, needs_grad, block_l)
    if silu and x.numel() > 0 and _tuning.get(TUNING_OP, "bwd_two_pass", False):
        grad_out = _launch_silu_grad(x, weight, bias, seq_idx, initial_states, grad_out, dilation)
        silu = False
    needs_x, needs_weight, needs_bias, needs_init = needs_grad
    batch, dim, seq_len = x.shape
    width = weight.shape[1]
    state_len = (width - 1) * dilation
    grad_x = torch.empty_like(x) if needs_x else None
    grad_init = (torch.empty(batch, dim, state_len, dtype=initial_states.dtype, device=x.device)
                 if needs_init else None)
    needs_params = needs_weight or (needs_bias and bias is not None)
    if x.numel() == 0:  # no output, so every gradient is 0
        return (grad_x, torch.zeros_like(weight) if needs_weight else None,
                torch.zeros_like(bias) if needs_bias else None, grad_init.zero_() if needs_init else None)
    blocks = _block_config(x, width, backward=True)
    # The initial states' own positions (p < 0) get tiles when their gradient or grad_w needs them.
    tiles_before_zero = (cdiv(state_len, blocks.block_l)
                         if initial_states is not None and (needs_init or needs_params) else 0)
    num_tiles = tiles_before_zero + cdiv(seq_len, blocks.block_l)
    head_tiles = min(num_tiles, tiles_before_zero + _head_blocks(initial_states, state_len, blocks.block_l))
    d_blocks = cdiv(dim, blocks.block_d)
    launches = []  # (tile_begin, tile_end, has_init, chunks, tiles_per_program)
    for tile_begin, tile_end, has_init in ((0, head_tiles, True), (head_tiles, num_tiles, False)):
        if tile_end > tile_begin:
            chunks = _backward_chunks(tile_end - tile_begin, batch, d_blocks, x.device)
            launches.append((tile_begin, tile_end, has_init, *chunks))
    grad_weight_partial, grad_bias_partial = _partial_sums(batch * sum(launch[3] for launch in launches), x, weight,
                                                           bias, needs_grad)
    partial_row_begin = 0
    for tile_begin, tile_end, has_init, chunks, tiles_per_program in launches:
        _run_backward[(d_blocks, batch, chunks)](
            x, weight, x if bias is None else bias, x if seq_idx is None else seq_idx,
            x if initial_states is None else initial_states, grad_out,
            x if grad_x is None else grad_x, x if grad_init is None else grad_init,
            x if grad_weight_partial is None else grad_weight_partial,
            x if grad_bias_partial is None else grad_bias_partial,
            seq_len, dim, dilation, state_len, tiles_before_zero, tile_begin, tile_end, tiles_per_program,
            partial_row_begin,
            *x.stride(), *weight.stride(), *_optional_strides(seq_idx, 2), *_optional_strides(initial_states, 3),
            *grad_out.stride(), *_optional_strides(grad_x, 3),
            WIDTH=width, HAS_BIAS=bias is not None, HAS_SEQ_IDX=seq_idx is not None, HAS_INIT=has_init,
            SILU=silu, GRAD_X=needs_x, GRAD_INIT=needs_init and has_init, GRAD_PARAMS=needs_params,
            BLOCK_L=blocks.block_l, BLOCK_D=blocks.block_d, num_warps=blocks.num_warps,
        )
        partial_row_begin += batch * chunks
    return (grad_x, *_parameter_grads(grad_weight_partial, grad_bias_partial, weight, bias, needs_grad), grad_init)


def _final_states(x, seq_idx, initial_states, state_len):
    """The last state_len inputs (B, D, state_len), a new tensor in x's dtype: positions before 0 come from the
    initial states (or 0); with seq_idx, inputs of a sequence other than the row's last one are 0."""
    batch, dim, seq_len = x.shape
    if seq_len >= state_len:
        states = x[..., seq_len - state_len:]
    else:
        before = (initial_states[..., seq_len:] if initial_states is not None
                  else x.new_zeros(batch, dim, state_len - seq_len))
        states = torch.cat([before, x], dim=-1)
    if seq_idx is not None and seq_len > 0:
        positions = torch.arange(seq_len - state_len, seq_len, device=x.device).clamp_min(0)
        same = seq_idx[:, positions] == seq_idx[:, -1:]
        return torch.where(same[:, None, :], states, 0)
    return states.clone(memory_format=torch.contiguous_format)


# ----------------------------------------------------------------------------------------------------------------
# Argument checks
# ----------------------------------------------------------------------------------------------------------------
def _check_like(name, t, x, ndim, x_name="x"):
    """A tensor of `ndim` dims on x's device with x's dtype (weight, bias and states are not cast)."""
    check_tensor(name, t, ndim=ndim, like=x)
    if t.dtype != x.dtype:
        dtype = str(x.dtype).replace("torch.", "")
        raise TypeError(f"{name} must have {x_name}'s dtype ({dtype}), got {str(t.dtype).replace('torch.', '')}")


def _check_weight_and_bias(weight, bias, x, dim, x_name="x"):
    _check_like("weight", weight, x, 2, x_name)
    if weight.shape[0] != dim or not MIN_WIDTH <= weight.shape[1] <= MAX_WIDTH:
        raise ValueError(f"weight must have shape (D, W) = ({dim}, W) with W in [{MIN_WIDTH}, {MAX_WIDTH}] "
                         f"({x_name}'s D is {dim}), got {tuple(weight.shape)}")
    if bias is not None:
        _check_like("bias", bias, x, 1, x_name)
        if bias.shape[0] != dim:
            raise ValueError(f"bias must have shape ({dim},) ({x_name}'s D), got {tuple(bias.shape)}")


def _check_dilation(dilation):
    if not is_int(dilation):
        raise TypeError(f"dilation must be an int >= 1, got {type(dilation).__name__}")
    if dilation < 1:
        raise ValueError(f"dilation must be an int >= 1, got {dilation}")
    return int(dilation)


def _checking_on_host(t):
    """A host-side value check syncs: skipped while torch.compile traces or a CUDA graph is captured."""
    return not (torch.compiler.is_compiling() or (t.is_cuda and torch.cuda.is_current_stream_capturing()))


def _check_seq_idx(seq_idx, x):
    check_tensor("seq_idx", seq_idx, dtypes=SEQ_IDX_DTYPES, ndim=2, like=x)
    if tuple(seq_idx.shape) != (x.shape[0], x.shape[2]):
        raise ValueError(f"seq_idx must have shape (B, L) = ({x.shape[0]}, {x.shape[2]}) (x's B and L), "
                         f"got {tuple(seq_idx.shape)}")
    # Ids must not decrease along L: a tap reaching back into an earlier run of the same id would be counted.
    if seq_idx.shape[1] > 1 and _checking_on_host(seq_idx):
        decreasing = seq_idx[:, 1:] < seq_idx[:, :-1]
        if bool(decreasing.any()):
            row, step = (int(i) for i in decreasing.nonzero()[0])
            raise ValueError(f"seq_idx must be non-decreasing along L, got seq_idx[{row}, {step + 1}] = "
                             f"{int(seq_idx[row, step + 1])} after {int(seq_idx[row, step])}")


def _check_initial_states(initial_states, x, state_len):
    _check_like("initial_states", initial_states, x, 3)
    expected = (x.shape[0], x.shape[1], state_len)
    if tuple(initial_states.shape) != expected:
        raise ValueError(f"initial_states must have shape (B, D, (W - 1) * dilation) = {expected}, "
                         f"got {tuple(initial_states.shape)}")


# ----------------------------------------------------------------------------------------------------------------
# causal_conv1d
# ----------------------------------------------------------------------------------------------------------------
# Registered ops (greyhound::causal_conv1d_fwd / _bwd) with fake implementations and autograd, so that
# torch.compile keeps the op in its graph (fullgraph=True) instead of breaking there.
@torch.library.custom_op("greyhound::causal_conv1d_fwd", mutates_args=())
def _causal_conv1d_fwd(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                       seq_idx: Optional[torch.Tensor], initial_states: Optional[torch.Tensor], silu: bool,
                       dilation: int) -> torch.Tensor:
    return _launch_forward(x, weight, bias, seq_idx, initial_states, silu, dilation)


@_causal_conv1d_fwd.register_fake
def _causal_conv1d_fwd_fake(x, weight, bias, seq_idx, initial_states, silu, dilation):
    return torch.empty_like(x)  # x's dtype and layout, as _launch_forward allocates it


@torch.library.custom_op("greyhound::causal_conv1d_bwd", mutates_args=())
def _causal_conv1d_bwd(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
                       seq_idx: Optional[torch.Tensor], initial_states: Optional[torch.Tensor],
                       grad_out: torch.Tensor, silu: bool, dilation: int,
                       needs_grad: list[bool]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(grad_x, grad_weight, grad_bias, grad_initial_states); a 0-element tensor where `needs_grad` says none."""
    grads = _launch_backward(x, weight, bias, seq_idx, initial_states, grad_out, silu, dilation, tuple(needs_grad))
    return tuple(g if g is not None else x.new_empty(0) for g in grads)


@_causal_conv1d_bwd.register_fake
def _causal_conv1d_bwd_fake(x, weight, bias, seq_idx, initial_states, grad_out, silu, dilation, needs_grad):
    # laid out as the backward allocates them: grad_x like x, the parameters' and the initial state's gradients
    # contiguous (empty_like kept a transposed weight's or state's strides, and inductor then read the real gradients
    # with the fake's strides: an assertion, or with size_asserts off wrong gradients)
    formats = (torch.preserve_format, torch.contiguous_format, torch.contiguous_format, torch.contiguous_format)
    likes = (x, weight, bias, initial_states)
    return tuple(torch.empty_like(like, memory_format=layout) if need and like is not None else x.new_empty(0)
                 for need, like, layout in zip(needs_grad, likes, formats))


def _causal_conv1d_setup_context(ctx, inputs, output):
    x, weight, bias, seq_idx, initial_states, silu, dilation = inputs
    ctx.save_for_backward(x, weight, bias, seq_idx, initial_states)
    ctx.silu, ctx.dilation = silu, dilation


def _causal_conv1d_backward(ctx, grad_out, eager=False):
    x, weight, bias, seq_idx, initial_states = ctx.saved_tensors
    needs_x, needs_weight, needs_bias, _, needs_init = ctx.needs_input_grad[:5]
    needs = [needs_x, needs_weight, needs_bias and bias is not None, needs_init and initial_states is not None]
    if grad_out is None or not any(needs):
        return None, None, None, None, None, None, None
    if _channel_last(grad_out) != _channel_last(x):
        # The kernel's tiles vectorise along x's stride-1 dimension; a grad_out laid out the other way (AOTAutograd
        # hands compiled graphs contiguous tangents) would be read one element per memory sector: one copy is cheaper.
        grad_out = torch.empty_like(x).copy_(grad_out)
    grads = _library.run(_causal_conv1d_bwd, eager, x, weight, bias, seq_idx, initial_states, grad_out, ctx.silu,
                         ctx.dilation, needs)
    grad_x, grad_weight, grad_bias, grad_init = (g if need else None for g, need in zip(grads, needs))
    return grad_x, grad_weight, grad_bias, None, grad_init, None, None


_causal_conv1d_fwd.register_autograd(_causal_conv1d_backward, setup_context=_causal_conv1d_setup_context)


_causal_conv1d_eager = _library.twin(_causal_conv1d_fwd, _causal_conv1d_setup_context, _causal_conv1d_backward)


def causal_conv1d(x, weight, bias=None, *, activation=None, dilation=1, seq_idx=None, initial_states=None,
                  return_final_states=False):
    """out[b, d, t] = act(bias[d] + Σ_k weight[d, k] · x[b, d, t − (W − 1 − k)·dilation]), zeros before t = 0.

    x (B, D, L) fp32/bf16/fp16, any strides (channel-last x = y.transpose(1, 2) is read in place); weight (D, W),
    W in [2, 8], and bias (D,) of x's dtype; fp32 accumulation, out in x's dtype and layout; activation None or
    "silu". Differentiable in x, weight, bias, initial_states; the backward recomputes the pre-activation.
    seq_idx (B, L) int32/int64, non-decreasing along L: packed sequences; a tap reading t' counts only if
    seq_idx[b, t'] == seq_idx[b, t]. initial_states (B, D, (W − 1)·dilation): the inputs before t = 0, of each row's
    first sequence (the one holding t = 0; with seq_idx, later sequences start from zeros).
    return_final_states=True returns (out, final_states): the last (W − 1)·dilation inputs, entries of any sequence
    but the row's last one zeroed, so that chunks run with carried states equal one run over the whole (a sequence
    that starts exactly at a chunk boundary must be given zero initial states for its row).
    """
    check_tensor("x", x, dtypes=FLOAT_DTYPES, ndim=3)
    check_triton_device("x", x)
    _check_weight_and_bias(weight, bias, x, x.shape[1])
    check_choice("activation", activation, ACTIVATIONS)
    dilation = _check_dilation(dilation)
    state_len = (weight.shape[1] - 1) * dilation
    if seq_idx is not None:
        _check_seq_idx(seq_idx, x)
    if initial_states is not None:
        _check_initial_states(initial_states, x, state_len)
    check_bool("return_final_states", return_final_states)
    if bias is not None:
        bias = bias.contiguous()  # the kernels index bias[d] at bias_ptr + d (a no-op for a contiguous bias)
    out = _library.call(_causal_conv1d_fwd, _causal_conv1d_eager, x, weight, bias, seq_idx, initial_states,
                        activation == "silu", dilation)
    if not return_final_states:
        return out
    return out, _final_states(x, seq_idx, initial_states, state_len)


def causal_conv1d_reference(x, weight, bias=None, *, activation=None, dilation=1, seq_idx=None, initial_states=None,
                            return_final_states=False):
    """Plain PyTorch, unchecked: a depthwise F.conv1d over x left-padded with the initial states (or zeros), in x's
    dtype; with seq_idx, tap by tap with the sequence mask, in fp32 (fp64 stays fp64). Same returns as causal_conv1d."""
    batch, dim, seq_len = x.shape
    width = weight.shape[1]
    state_len = (width - 1) * dilation
    before = initial_states if initial_states is not None else x.new_zeros(batch, dim, state_len)
    padded = torch.cat([before, x], dim=-1)
    if seq_idx is None:
        out = torch.nn.functional.conv1d(padded, weight.unsqueeze(1), bias, dilation=dilation, groups=dim)
    else:
        compute = torch.promote_types(x.dtype, torch.float32)
        out = torch.zeros(batch, dim, seq_len, dtype=compute, device=x.device)
        if bias is not None:
            out = out + bias.to(compute)[:, None]
        for k in range(width):
            shift = (width - 1 - k) * dilation
            tap = padded[..., state_len - shift: state_len - shift + seq_len].to(compute)
            sources = (torch.arange(seq_len, device=x.device) - shift).clamp_min(0)  # before 0: the first sequence
            same = (seq_idx[:, sources] == seq_idx)[:, None, :]
            out = out + weight[:, k, None].to(compute) * torch.where(same, tap, 0)
        out = out.to(x.dtype)
    if activation == "silu":
        out = torch.nn.functional.silu(out)
    if not return_final_states:
        return out
    return out, _final_states(x, seq_idx, initial_states, state_len)


# ----------------------------------------------------------------------------------------------------------------
# causal_conv1d_update
# ----------------------------------------------------------------------------------------------------------------
# A registered op (greyhound::causal_conv1d_update, conv_state mutated in place) with a fake implementation, so that a
# decoding step compiles with fullgraph=True; eager calls run its implementation directly (greyhound._library).
@torch.library.custom_op("greyhound::causal_conv1d_update", mutates_args=("conv_state", ))
def _causal_conv1d_update_op(x_t: torch.Tensor, conv_state: torch.Tensor, weight: torch.Tensor,
                             bias: Optional[torch.Tensor], silu: bool, dilation: int) -> torch.Tensor:
    batch, dim = x_t.shape
    state_len = conv_state.shape[2]
    out = torch.empty_like(x_t)
    if out.numel() == 0:
        return out
    block_d = min(next_power_of_2(dim), 256)
    _run_update[(cdiv(dim, block_d), batch)](
        x_t, conv_state, weight, x_t if bias is None else bias, out, dim, dilation, state_len,
        *x_t.stride(), *conv_state.stride(), *weight.stride(), *out.stride(),
        WIDTH=weight.shape[1], HAS_BIAS=bias is not None, SILU=silu, BLOCK_D=block_d,
        BLOCK_S=next_power_of_2(state_len), num_warps=4,
    )
    if not conv_state.is_inference():  # (through the dispatcher, which bumps it too: a version only has to grow)
        torch.autograd.graph.increment_version(conv_state)
    return out


@_causal_conv1d_update_op.register_fake
def _causal_conv1d_update_fake(x_t, conv_state, weight, bias, silu, dilation):
    return torch.empty_like(x_t)


def _may_overlap(t):
    """Whether two elements of `t` may share an address: false when, its dims of size > 1 sorted by stride, each
    stride steps past the furthest offset of the dims before it (conservative: an interleaved layout that does not
    overlap is refused too). torch._debug_has_internal_overlap answers "too hard" for e.g. strides (3, 1, 1)."""
    extent = 1  # one past the furthest offset reached so far
    for stride, size in sorted(zip(t.stride(), t.shape)):
        if size > 1:
            if stride < extent:
                return True
            extent += stride * (size - 1)
    return False


def causal_conv1d_update(x_t, conv_state, weight, bias=None, activation=None, dilation=1):
    """One decoding step: out (B, D) = the last step of causal_conv1d over (conv_state, x_t); conv_state is then
    rolled left by one with x_t appended, in place (its autograd version is bumped). Not differentiable: with grad
    enabled, an input that requires grad is refused (RuntimeError naming it; call it under no_grad). A registered
    op: a decoding step calling it compiles with torch.compile(fullgraph=True), conv_state updated as in eager.

    x_t (B, D) and conv_state (B, D, (W − 1)·dilation) of one dtype (fp32/bf16/fp16, any strides; no two elements
    of conv_state at one address), weight (D, W) and bias (D,) of that dtype; fp32 math, out in x_t's dtype. One
    Triton launch.
    """
    check_tensor("x_t", x_t, dtypes=FLOAT_DTYPES, ndim=2)
    check_triton_device("x_t", x_t)
    batch, dim = x_t.shape
    _check_weight_and_bias(weight, bias, x_t, dim, x_name="x_t")
    check_choice("activation", activation, ACTIVATIONS)
    dilation = _check_dilation(dilation)
    state_len = (weight.shape[1] - 1) * dilation
    _check_like("conv_state", conv_state, x_t, 3, x_name="x_t")
    if tuple(conv_state.shape) != (batch, dim, state_len):
        raise ValueError(f"conv_state must have shape (B, D, (W - 1) * dilation) = {(batch, dim, state_len)}, "
                         f"got {tuple(conv_state.shape)}")
    if not conv_state.is_contiguous() and _may_overlap(conv_state):
        raise ValueError(f"conv_state is updated in place and must not have overlapping memory (two elements at one "
                         f"address, as expand() or as_strided() can give), got shape {tuple(conv_state.shape)} with "
                         f"strides {conv_state.stride()}; pass a contiguous copy")
    if torch.is_grad_enabled():  # not differentiable: refuse rather than cut the graph (or write into a grad leaf)
        wanting = [name for name, tensor in (("x_t", x_t), ("conv_state", conv_state), ("weight", weight),
                                             ("bias", bias)) if tensor is not None and tensor.requires_grad]
        if wanting:
            raise RuntimeError(f"causal_conv1d_update is not differentiable, and {', '.join(wanting)} require grad: "
                               f"call it under torch.no_grad() or torch.inference_mode() (a decoding step), or use "
                               f"causal_conv1d for a differentiable convolution")
    if bias is not None:
        bias = bias.contiguous()  # the kernel indexes bias[d] at bias_ptr + d (a no-op for a contiguous bias)
    return _library.call(_causal_conv1d_update_op, None, x_t, conv_state, weight, bias, activation == "silu", dilation)
