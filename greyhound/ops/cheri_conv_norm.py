"""Cheri Block kernels: the fused block kernel (inference and training forward) and the conv + LayerNorm kernels.

The block, on x of shape (N, C, L) (docs/kernels/cheri_block.md is the full definition):
    y   = b_conv + sum_k w_conv[:, k] * x[:, :, l - (K-1-k)*dilation]   (depthwise, causal: zeros left of l=0)
    z   = LayerNorm_C(y) * gamma + beta                                   (over channels, per (n, l))
    out = x + (GELU_erf(z @ W1^T + b1) @ W2^T + b2)                       (pointwise MLP C -> E -> C)

Paths:
  * `cheri_block_megakernel` (inference): conv, LayerNorm, MLP and residual in one kernel; the E-wide hidden
    layer is produced BLOCK_E columns at a time and consumed at once, so it never leaves the chip. With bf16, fp16
    or bf16x3 dots on Hopper the Gluon version of it (greyhound/ops/_cheri_gluon.py, software-pipelined) is tried
    first.
  * `cheri_block_forward` (training): the same kernel, also writing the hidden activations (and, in the bf16/fp16
    default "split" layout, reading z and the LayerNorm statistics from the conv + LayerNorm kernel; an fp32 model's
    bf16x3 tries the Gluon kernel with TRAINING first) for its backward
    (cuBLAS GEMMs, the exact-erf GELU backward, two Triton conv + LayerNorm kernels).
    A hidden width that is not a multiple of 16 takes `conv_norm` + an eager MLP instead.
  * `conv_norm` (autograd): conv + LayerNorm alone, writing z as (N, L, C).
  * `cheri_block_reference`: plain PyTorch in the inputs' dtype (tests, docs, torch-eager/torch.compile).
On CPU tensors without TRITON_INTERPRET the same functions run eager PyTorch with the same numerics.
"""
import functools
import math
from typing import NamedTuple, Optional

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from triton.runtime.errors import OutOfResources

from greyhound import _library, _tuning
from greyhound.ops import _cheri_gluon
from greyhound.ops._cheri_gluon import ERFC_LOG2_POLY, ERFC_LOG2_TERMS
from greyhound._launch import FastLaunch, cdiv, multiprocessor_count, next_power_of_2
from greyhound._validate import FLOAT_DTYPES, as_float, check_choice, check_tensor, is_int, is_real, triton_interpreting

FP32_DOT_MODES = ("bf16x3", "tf32x3", "ieee", "bf16")
# MLP operand modes (a tl.constexpr): one bf16 dot, three bf16 dots on hi/lo splits, fp32 dots, or one fp16 dot.
_DOT_BF16, _DOT_BF16X3, _DOT_TF32X3, _DOT_IEEE, _DOT_FP16 = 0, 1, 2, 3, 4
_DOT_MODE_CODES = {"bf16": _DOT_BF16, "bf16x3": _DOT_BF16X3, "tf32x3": _DOT_TF32X3, "ieee": _DOT_IEEE,
                   "fp16": _DOT_FP16}
# GELU evaluations the fused kernel can compile: "poly" is the one every path uses; "erf" (libdevice erff) and
# "tanh" (the tanh form on the GPU's tanh.approx: 6 FP32 operations and one MUFU against poly's 11 and one, within
# 1e-3 absolute of erf-GELU; measured 12% slower than poly at N=512, docs/perf/cheri_block.md) are tuning variants
# (gelu=erf, gelu=tanh); "none" (no activation: wrong on purpose, run_fused(gelu="none") only, no correctness gate
# would pass it) measures what the activation costs.
GELU_VARIANTS = {"poly": 0, "erf": 1, "none": 2, "tanh": 3}
# Launch parameters a benchmark variant may force (greyhound._tuning), e.g.
# `python -m benchmarks cheri_block --providers 'greyhound-megakernel,greyhound-megakernel[layout=split,block_e=64]'`.
TUNING_OP = "cheri_block"
_FUSED_TUNABLES = ("block_l", "block_e", "warps", "stages", "layout", "maxnreg")  # in the config tuple's order
_tuning.register(
    TUNING_OP,
    block_l=(int, "fused block kernel: positions per program (power of 2, >= 16)"),
    block_e=(int, "fused block kernel: hidden columns per step (power of 2 dividing the hidden width)"),
    warps=(int, "fused block kernel: num_warps"),
    stages=(int, "fused block kernel: num_stages"),
    layout=(str, "fused block kernel: lc ((L, C) tiles), cl (transposed: weights as A operands), split (z from "
                 "the conv + LayerNorm kernel), gluon (the Hopper Gluon kernel: bf16-dot inference; stages = its "
                 "weight ring's depth), or its warp-specialised versions gluon_ws / gluon_ws3 (2 / 3 consumer warp "
                 "groups; maxnreg = theirs) and gluon_wsz (2 consumers and a warp group computing z ahead of them)"),
    maxnreg=(int, "fused block kernel: registers per thread cap (CUDA only; 255 = none; a forced layout other "
                  "than the default's starts uncapped); the warp-specialised layouts: the consumers' registers "
                  "(gluon_wsz: 152, the z producer taking what they leave, 168; 160 for an fp16 model with shuffled "
                  "taps, session 49, one H100, N=512: 0.3442-0.3467 ms against 0.3477-0.3487 at 152)"),
    gelu=(str, "GELU evaluation: poly (the default, no erf; gluon_wsz runs poly2 for bf16 and fp16 dots), "
               "erf (libdevice erff), tanh (tanh.approx form), poly3 (a degree-3 fit of poly's form, 1.2e-5 absolute; "
               "the warp-specialised Gluon layouts only) or poly2 (a degree-2 fit, 8.6e-5 absolute, no clamp; those "
               "layouts with bf16 or fp16 dots)"),
    w1_stages=(int, "Gluon kernel: the W1 ring's depth, at least stages (the W2 ring's; default: equal)"),
    z_regs=(bool, "Gluon kernels, bf16/fp16 dots: the first GEMMs read z from registers instead of shared memory "
                  "(default: on for the gluon layout's bf16/fp16 dots at block_e <= 32, off in the warp-specialised "
                  "layouts)"),
    loop=(bool, "Gluon kernel: the hidden chunks as a loop (one CTA barrier a step, only the output accumulator in "
                "flight across a step; needs stages >= 3 and w1_stages equal to it) instead of fully unrolled; H200, "
                "N=512 bf16: 0.4555 ms at (64, 32, ring 3, maxnreg 168) against the default's 0.4423"),
    ws_pipeline=(bool, "warp-specialised kernel (layouts gluon_ws, gluon_ws3): each consumer keeps its next chunk's "
                       "first GEMM and its previous chunk's second GEMM in flight under this chunk's GELU (needs "
                       "stages >= 3) instead of one chunk at a time; H200, N=512 bf16: 0.5016 ms at gluon_ws (64, 32, "
                       "ring 8) against one chunk at a time's 0.4922 (64, 64, ring 2) and the default's 0.4431"),
    ws_schedule=(str, "warp-specialised kernels' consumers (layouts gluon_ws, gluon_ws3, gluon_wsz): chunk (one chunk "
                      "at a time; gluon_ws/gluon_ws3's default), pingpong (chunk k's second GEMM and chunk k+1's first "
                      "issued together, one wait a chunk; gluon_wsz's default), turns (pingpong, the two consumers "
                      "taking turns at issuing; stages >= 3) or tail (gluon_wsz: chunk k+1's first GEMM, then chunk "
                      "k's second with the hidden chunk from shared memory, chunk k+1's GELU under it; its two hidden "
                      "buffers a consumer fit beside a ring of 3). Session 31's logs call pingpong / turns "
                      "ws_pingpong=1 / 2"),
    ws_thread_release=(bool, "warp-specialised kernels (layouts gluon_ws, gluon_ws3, gluon_wsz): every consumer thread "
                             "releases a weight-ring slot with an arrive of its own (the slot's barrier counts 128 a "
                             "consumer) instead of one arrive a warp group, which Triton 3.6 fences with a warp-group "
                             "barrier; one such barrier a chunk fewer (offline, sm_90a). Off: level or slower on the "
                             "H200 (session 36, N=512 bf16 0.3929 / 0.3954 ms against 0.3970 / 0.3906; session 47, "
                             "N=512: bf16 0.3610 / 0.3616 against 0.3578 / 0.3579, fp16 0.3642 / 0.3610 against "
                             "0.3546 / 0.3575)"),
    ws_producer_regs=(int, "warp-specialised kernels (layouts gluon_ws, gluon_ws3, gluon_wsz): the weight "
                           "producer warp group's registers (setmaxnreg), a multiple of 8 in [24, 256]; default 40, "
                           "24 for an fp16 model in gluon_wsz with shuffled taps (since session 50). In gluon_wsz the "
                           "z producer takes what the consumers (maxnreg) and it leave: at 24 beside consumers of 160 "
                           "it keeps the 168 it has beside 152 (offline, Triton 3.6, sm_90a, the 16-bit defaults: no "
                           "spills at 160 / 168 / 24, 8 bytes at 152 / 168 / 40). Session 50, one H100, N=512: fp16 "
                           "at 160 / 168 / 24 -1.1% against 160 / 152 / 40 in the sweep CLI, -0.4 to -0.8% in asv; "
                           "bf16 +0.6% against its 152 / 168 / 40"),
    ws_balance=(bool, "warp-specialised kernels (layouts gluon_ws, gluon_ws3, gluon_wsz; not with ws_schedule=turns): "
                      "when the tiles left after the grid's whole rounds (two or three tiles a CTA) are no more than "
                      "the grid, they go one a CTA, on its first consumer, instead of two or three a CTA (N=512, "
                      "L=1024: 8192 tiles on 132 SMs, 31 whole rounds and 8 tiles left). Default: on in gluon_wsz on the "
                      "pingpong schedule (session 36, H200, N=512: bf16 -3.0% / -0.6%, fp16 -1.0% / -0.2%)"),
    ws_late_residual=(bool, "warp-specialised kernels on the pingpong or turns schedule: each tile's residual loaded "
                            "after its last GEMM (as before session 33) instead of issued before it. Default: on in "
                            "gluon_wsz on the pingpong schedule for fp16 dots (session 36, H200, N=512: 0.3828 against "
                            "0.3888 ms), off for bf16 (0.3872 against 0.3775)"),
    ws_x_prefetch=(_tuning.NonNegativeInt,
                   "layout gluon_wsz: the z producer asks L2 for each tile's x this many of the CTA's groups before "
                   "computing it (prefetch.global.L2, one a thread and channel row), 0..8 (0: none). Default: 1 for "
                   "a bf16 model on the ping-pong schedule whose taps are not shuffled (ws_x_shuffle), none "
                   "elsewhere (session 39, one H100, N=512: with the conv's taps in shared memory bf16 0.3632 against "
                   "0.3655 ms; fp16 0.3873 against 0.3836; session 47, one H100, bf16 with shuffled taps 0.3468 / "
                   "0.3490 against 0.3448 / 0.3471)"),
    ws_conv_smem=(bool, "layout gluon_wsz: the conv's (C, 1, K) weight goes to shared memory once, as K fp32 rows, "
                        "and the z producer reads each tap there by 16-byte vectors instead of re-reading it from "
                        "global memory by 2-byte loads every tile (38% of its L1 sectors in session 37's profile). "
                        "Default: on for a bf16 model on the ping-pong schedule whose taps are not shuffled "
                        "(ws_x_shuffle) where the taps leave the z ring as deep (session 39, one H100, N=512: 0.3655 "
                        "against 0.3744 ms), off elsewhere (fp16: 0.3836 against 0.3826; session 47, one H100, bf16 "
                        "with shuffled taps 0.3541 / 0.3575 against 0.3448 / 0.3471)"),
    ws_conv_regs=(bool, "layout gluon_wsz, not with ws_conv_smem: the z producer loads the conv's taps once and keeps "
                        "them in registers across its tiles (K fp32 registers a thread and channel it holds: 24 with "
                        "the shuffled taps at K=3) instead of K 2-byte loads at stride K a channel every tile (21% of "
                        "the kernel's global sectors as excess in session 50's profile, all L1 hits). Off by default: "
                        "session 51, sweep CLI, N=512, three rounds on each of two H100s: bf16 level (-0.1% / -0.3%), "
                        "fp16 +0.5% / +0.9% (offline, Triton 3.6, sm_90a: the fp16 default's per-tile 2-byte loads "
                        "77 -> 29, 4 bytes of spills outside the tile loop)"),
    ws_bf16_shifts=(bool, "layout gluon_wsz, a bf16 x whose conv taps come by shuffles (ws_x_shuffle): the z "
                          "producer widens the taps to fp32 by a shift and an and of each register of two, where the "
                          "bf16 -> fp32 conversion took three instructions a pair (the upper half moved down by a "
                          "PRMT, then shifted back up) and fp16's two: exact, so no bit moves (offline, Triton 3.6, "
                          "sm_90a: the z producer's SASS 7668 -> 7096 instructions, fp16's 7020). Off by default: "
                          "session 53, one H100, sweep CLI, three rounds, N=512 bf16: 0.3512 / 0.3486 / 0.3516 ms "
                          "against 0.3436 / 0.3434 / 0.3436 without (+2.1%), N=64 level"),
    ws_first_z=(bool, "layout gluon_wsz, not with ws_cross_tile: consumer 1 computes its first tile's z (conv + "
                      "LayerNorm) itself, with the z producer's layout and arithmetic (the same bits), while the z "
                      "producer computes consumer 0's, so both consumers start after one tile's z instead of consumer "
                      "1 after two (session 54's staircase, one H100: ~10-14 us of a call outside its rounds of "
                      "tiles). Off by default: session 54, one H100, sweep CLI, three rounds: N=64 bf16 -3.3%, fp16 "
                      "-1.5% (1-2 us off the start); N=512 bf16 -0.25%, fp16 +1.1%; on a second H100 N=64 -2.4% / "
                      "-1.7%, N=512 +1.0% / +0.6% (ptxas rescheduled the consumers' and the z producer's code "
                      "around the added conv + LayerNorm; the start's saving is ~0.5% there). N=16 runs the gluon "
                      "layout, where it does not apply"),
    ws_x_shuffle=(bool, "layout gluon_wsz, 16-bit x, every conv tap an even number of positions back and at most 8 "
                        "(e.g. K=3 at dilation 4), C a multiple of 16: the z producer loads x once a tile (16 bytes a "
                        "thread and channel, plus 16 bytes before each lane pair's first lane) and takes the conv's "
                        "shifted taps from its lane pair by shuffles instead of loading each tap (three batches of "
                        "loads a tile in session 37's profile, one with this). Default: on for a 16-bit model on the "
                        "ping-pong schedule where it applies (then with ws_split_ring and ws_epilogue16, and neither "
                        "ws_conv_smem nor ws_x_prefetch), off elsewhere (session 44, one H100, N=512, sweep CLI, three "
                        "rounds: fp16 0.3532-0.3550 ms against 0.3633-0.3662; session 47, one H100, five rounds: bf16 "
                        "with the whole configuration 0.3442-0.3472 against the taps in shared memory's "
                        "0.3533-0.3583)"),
    ws_split_ring=(bool, "layout gluon_wsz on the pingpong schedule: W1 and W2 stream through weight rings of their "
                         "own (the same shared memory, a barrier pair each), W1 a chunk ahead, each slot released as "
                         "soon as its one GEMM is done, where a joint slot is held for two steps: the two consumers "
                         "may drift two chunks apart instead of one before the one ahead waits on the ring. Default: "
                         "on with ws_epilogue16 where a 16-bit model's taps are shuffled (ws_x_shuffle; not with "
                         "ws_cross_tile), off elsewhere (session 47, H200, sweep CLI, N=512, two rounds: fp16 with "
                         "ws_epilogue16 0.3510 / 0.3504 ms against 0.3546 / 0.3575, alone 0.3548 / 0.3558; bf16 with "
                         "its taps in shared memory, alone 0.3610 / 0.3621 against 0.3578 / 0.3579)"),
    ws_cross_tile=(bool, "layout gluon_wsz on the pingpong schedule (not with ws_split_ring or z_regs): each tile's "
                         "first GEMM is issued with the previous tile's last second GEMM, one wait for both, instead "
                         "of after that tile's stores (the residual then loads late unless ws_late_residual says "
                         "otherwise). Off: slower (session 47, H200, sweep CLI, N=512: bf16 0.3856 / 0.3863 ms against "
                         "0.3578 / 0.3579, fp16 0.3753 / 0.3762 against 0.3546 / 0.3575)"),
    ws_epilogue16=(bool, "layout gluon_wsz on the pingpong schedule, 16-bit x, the residual loaded early (not with "
                         "ws_cross_tile or ws_late_residual=True): each tile's residual goes to the accumulator's "
                         "layout under the tile's last GEMM and the tile's 16-bit output, not its fp32 accumulator, "
                         "through shared memory to 16-byte stores (offline, Triton 3.6, the bf16 default: after the "
                         "last GEMM 16 shared-memory accesses a thread instead of 32, 8 stores instead of 16, spills "
                         "168 -> 104 bytes). Bit-identical. Default: on with ws_split_ring where a 16-bit model's "
                         "taps are shuffled (not with ws_cross_tile or ws_late_residual=True), off elsewhere (session "
                         "47, H200, sweep CLI, N=512, two rounds: fp16 alone 0.3560 / 0.3563 ms, with ws_split_ring "
                         "0.3510 / 0.3504, against 0.3546 / 0.3575; bf16 with its taps in shared memory, alone 0.3697 "
                         "/ 0.3677, with ws_split_ring 0.3655 / 0.3628, against 0.3578 / 0.3579)"),
    b1_mma=(bool, "layout gluon_wsz with the pingpong or tail schedule: b1 added by a k=16 wgmma a chunk (a column of "
                  "ones against b1, accumulated with the first GEMM) instead of an FADD a hidden element (default: on "
                  "there at block_e 64; H200, N=512: bf16 0.4097 -> 0.3957 ms, fp16 0.4083 -> 0.3884)"),
    norm_block_l=(int, "conv + LayerNorm forward kernel: positions per program (power of 2)"),
    norm_bwd_block_l=(int, "conv + LayerNorm backward (dy) kernel: positions per program (power of 2)"),
    norm_dx_block_l=(int, "conv + LayerNorm backward (dx) kernel: positions per program (power of 2)"),
)


def _tuned_block(name, default):
    """A power-of-2 tile size: the forced value of tunable `name`, or `default`."""
    value = _tuning.get(TUNING_OP, name, default)
    if value & (value - 1):
        raise ValueError(f"tuning: {TUNING_OP}.{name} must be a power of 2, got {value}")
    return value


# ----------------------------------------------------------------------------------------------------------
# Plain-PyTorch definition (the reference every path is tested against)
# ----------------------------------------------------------------------------------------------------------
def causal_depthwise_conv(x, conv_weight, conv_bias, dilation):
    """y[n, c, l] = b[c] + sum_k w[c, 0, k] * x[n, c, l - (K-1-k)*dilation], zero-padded on the left."""
    kernel_size = conv_weight.shape[-1]
    x_padded = F.pad(x, ((kernel_size - 1) * dilation, 0))
    return F.conv1d(x_padded, conv_weight, conv_bias, dilation=dilation, groups=x.shape[1])


def channel_layer_norm(y, norm_weight, norm_bias, eps=1e-5):
    """LayerNorm over the channels of y (N, C, L), per (n, l); returned as (N, L, C), in y's dtype."""
    return F.layer_norm(y.transpose(1, 2), (y.shape[1],), norm_weight, norm_bias, eps)


def conv_norm_reference(x, conv_weight, conv_bias, norm_weight, norm_bias, *, dilation=1, eps=1e-5):
    """conv_norm in plain PyTorch, in the inputs' dtype: z = LayerNorm_C(causal depthwise conv of x), (N, L, C)."""
    return channel_layer_norm(causal_depthwise_conv(x, conv_weight, conv_bias, dilation), norm_weight, norm_bias, eps)


def mlp_residual(x, z, fc1_weight, fc1_bias, fc2_weight, fc2_bias):
    """out = x + (GELU(z @ W1^T + b1) @ W2^T + b2)^T for z of shape (N, L, C); exact-erf GELU."""
    hidden = F.gelu(F.linear(z, fc1_weight, fc1_bias))
    return x + F.linear(hidden, fc2_weight, fc2_bias).transpose(1, 2)


def cheri_block_reference(x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_weight, fc1_bias, fc2_weight,
                          fc2_bias, *, dilation=1, eps=1e-5):
    """The Cheri Block in plain PyTorch, computed in the inputs' dtype (pass fp64 tensors for a test oracle)."""
    z = conv_norm_reference(x, conv_weight, conv_bias, norm_weight, norm_bias, dilation=dilation, eps=eps)
    return mlp_residual(x, z, fc1_weight, fc1_bias, fc2_weight, fc2_bias)


# ----------------------------------------------------------------------------------------------------------
# Triton tile helpers. Tiles are (BLOCK_L positions, BLOCK_C channels) (or transposed), fp32.
# ----------------------------------------------------------------------------------------------------------
@triton.jit
def _block_tile_mask(offs_l, L, C: tl.constexpr, EVEN_L: tl.constexpr, BLOCK_L: tl.constexpr,
                     BLOCK_C: tl.constexpr, TRANSPOSED: tl.constexpr):
    """Valid (position, channel) entries of a fused-kernel tile: all of them when L % BLOCK_L == 0 and C == BLOCK_C
    (both compile-time facts, so full tiles need no masks and keep their vector loads and stores)."""
    offs_c = tl.arange(0, BLOCK_C)
    if TRANSPOSED:
        mask = tl.full([BLOCK_C, BLOCK_L], 1, tl.int1)
        if not EVEN_L:
            mask = mask & (offs_l < L)[None, :]
        if C != BLOCK_C:
            mask = mask & (offs_c < C)[:, None]
    else:
        mask = tl.full([BLOCK_L, BLOCK_C], 1, tl.int1)
        if not EVEN_L:
            mask = mask & (offs_l < L)[:, None]
        if C != BLOCK_C:
            mask = mask & (offs_c < C)[None, :]
    return mask


@triton.jit
def _conv_norm_block_tile(x_row, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr, offs_l, L, eps,
                          C: tl.constexpr, KERNEL_SIZE: tl.constexpr, DILATION: tl.constexpr, EVEN_L: tl.constexpr,
                          BLOCK_L: tl.constexpr, BLOCK_C: tl.constexpr, TRANSPOSED: tl.constexpr):
    """z = LayerNorm(causal_conv(x)) * gamma + beta for positions offs_l of one contiguous (C, L) sequence at x_row:
    fp32 (BLOCK_L, BLOCK_C) tile, or (BLOCK_C, BLOCK_L) when TRANSPOSED, plus mean and rstd per position.
    Tap shifts are compile-time constants and full tiles are unmasked, so the tap loads stay vectorised along L
    (the only mask left is the causal zero padding, `position >= shift`, on the first tiles' shifted taps)."""
    offs_c = tl.arange(0, BLOCK_C)
    mask_c = offs_c < C
    tile_mask = _block_tile_mask(offs_l, L, C, EVEN_L, BLOCK_L, BLOCK_C, TRANSPOSED)
    if TRANSPOSED:
        y = tl.zeros([BLOCK_C, BLOCK_L], dtype=tl.float32)
        y += tl.load(conv_b_ptr + offs_c, mask=mask_c, other=0.0).to(tl.float32)[:, None]
    else:
        y = tl.zeros([BLOCK_L, BLOCK_C], dtype=tl.float32)
        y += tl.load(conv_b_ptr + offs_c, mask=mask_c, other=0.0).to(tl.float32)[None, :]
    for k in tl.static_range(KERNEL_SIZE):
        shift = (KERNEL_SIZE - 1 - k) * DILATION  # a compile-time constant
        w_tap = tl.load(conv_w_ptr + offs_c * KERNEL_SIZE + k, mask=mask_c, other=0.0).to(tl.float32)
        if TRANSPOSED:
            tap_ptrs = x_row + offs_c[:, None] * L + (offs_l - shift)[None, :]
            causal = (offs_l >= shift)[None, :]
        else:
            tap_ptrs = x_row + offs_c[None, :] * L + (offs_l - shift)[:, None]
            causal = (offs_l >= shift)[:, None]
        if shift == 0:
            if EVEN_L and C == BLOCK_C:
                x_tap = tl.load(tap_ptrs)
            else:
                x_tap = tl.load(tap_ptrs, mask=tile_mask, other=0.0)
        else:
            x_tap = tl.load(tap_ptrs, mask=tile_mask & causal, other=0.0)
        if TRANSPOSED:
            y += x_tap.to(tl.float32) * w_tap[:, None]
        else:
            y += x_tap.to(tl.float32) * w_tap[None, :]
    gamma = tl.load(gamma_ptr + offs_c, mask=mask_c, other=0.0).to(tl.float32)
    beta = tl.load(beta_ptr + offs_c, mask=mask_c, other=0.0).to(tl.float32)
    if TRANSPOSED:
        mean = tl.sum(y, axis=0) / C  # padded channels of y are exactly zero
        centered = y - mean[None, :]
        if C != BLOCK_C:
            centered = tl.where(mask_c[:, None], centered, 0.0)
        rstd = tl.math.rsqrt(tl.sum(centered * centered, axis=0) / C + eps)
        z = (centered * rstd[None, :]) * gamma[:, None] + beta[:, None]
    else:
        mean = tl.sum(y, axis=1) / C
        centered = y - mean[:, None]
        if C != BLOCK_C:
            centered = tl.where(mask_c[None, :], centered, 0.0)
        rstd = tl.math.rsqrt(tl.sum(centered * centered, axis=1) / C + eps)
        z = (centered * rstd[:, None]) * gamma[None, :] + beta[None, :]
    return z, mean, rstd  # padded channels: z = beta = 0, so they add nothing to the dots


@triton.jit
def _tanh_approx(x, EMULATE: tl.constexpr):
    """tanh(x) by the GPU's tanh.approx.f32 (max relative error ~2^-11); exact (through a sigmoid) where the
    interpreter runs the kernel, which has no inline assembly."""
    if EMULATE:
        return 2.0 * tl.sigmoid(2.0 * tl.clamp(x, -20.0, 20.0)) - 1.0  # tanh(±20) is ±1 in fp32
    return tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=f,f", [x], dtype=tl.float32, is_pure=True,
                                     pack=1)


@triton.jit
def _gelu_erf(pre, bias, GELU_VARIANT: tl.constexpr, EMULATE: tl.constexpr = False):
    """GELU(u) = u * Phi(u) = u/2 * (1 + erf(u/sqrt 2)) of u = pre + bias (bias broadcasts), fp32, without erf.

    With h = u/2 and E = erfc(|u|/sqrt 2) = 2^F(|h|), F a degree-7 polynomial (F(0) = 0), GELU(u) is 2h - |h|E
    for u >= 0 and hE for u < 0, i.e. (h + |h|) - |h|E in both cases: no cancellation in either tail. E is
    within 3.9e-6 relative of erfc for |u| <= 6 (beyond, E < 1e-9 and falls on), so the result is within
    ~8e-7 absolute of fp64 GELU: 10 FP32 operations and one ex2, where libdevice erff takes ~30."""
    if GELU_VARIANT == 0:
        half = tl.fma(pre, 0.5, tl.broadcast_to(bias * 0.5, pre.shape))  # the bias add, halved
        a = tl.abs(half)
        f = tl.fma(a, ERFC_LOG2_POLY[0], ERFC_LOG2_POLY[1])
        for k in tl.static_range(2, ERFC_LOG2_TERMS):
            f = tl.fma(f, a, ERFC_LOG2_POLY[k])
        erfc_abs = tl.exp2(f * a)
        gelu = tl.fma(a, -erfc_abs, half + a)  # negate E, not |h|: -|x| would cost an FADD of its own
    elif GELU_VARIANT == 1:
        u = pre + bias
        gelu = 0.5 * u * (1.0 + tl.math.erf(u * 0.7071067811865476))
    elif GELU_VARIANT == 3:  # u/2 (1 + tanh(sqrt(2/pi) (u + 0.044715 u^3)))
        u = pre + bias
        half = 0.5 * u
        gelu = tl.fma(half, _tanh_approx(u * tl.fma(u * u, 0.03567740813636141, 0.7978845608028654), EMULATE), half)
    else:
        gelu = pre + bias
    return gelu


# ----------------------------------------------------------------------------------------------------------
# Fused conv + LayerNorm: forward
# ----------------------------------------------------------------------------------------------------------
@triton.jit
def _conv_norm_fwd_kernel(
    x_ptr, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr, z_ptr, mean_ptr, rstd_ptr,
    L, eps,
    C: tl.constexpr, KERNEL_SIZE: tl.constexpr, DILATION: tl.constexpr, EVEN_L: tl.constexpr,
    SAVE_STATS: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_C: tl.constexpr,
):
    """z[n, l, :] = LayerNorm(causal_conv(x)[n, :, l]) * gamma + beta, x (N, C, L) and z (N, L, C) contiguous, z in
    its dtype. Loads any float dtype, computes conv and statistics in fp32, rounds once on store.
    Optionally stores fp32 mean and rstd (N, L) for the backward."""
    pid = tl.program_id(0)
    num_l_blocks = tl.cdiv(L, BLOCK_L)
    n = pid // num_l_blocks
    offs_l = (pid % num_l_blocks) * BLOCK_L + tl.arange(0, BLOCK_L)
    offs_c = tl.arange(0, BLOCK_C)
    mask_l = offs_l < L
    z, mean, rstd = _conv_norm_block_tile(x_ptr + n.to(tl.int64) * C * L, conv_w_ptr, conv_b_ptr, gamma_ptr,
                                          beta_ptr, offs_l, L, eps, C, KERNEL_SIZE, DILATION, EVEN_L, BLOCK_L,
                                          BLOCK_C, False)
    z_ptrs = z_ptr + (n.to(tl.int64) * L + offs_l)[:, None] * C + offs_c[None, :]
    tl.store(z_ptrs, z.to(z_ptr.dtype.element_ty), mask=_block_tile_mask(offs_l, L, C, EVEN_L, BLOCK_L, BLOCK_C,
                                                                          False))
    if SAVE_STATS:
        tl.store(mean_ptr + n.to(tl.int64) * L + offs_l, mean, mask=mask_l)
        tl.store(rstd_ptr + n.to(tl.int64) * L + offs_l, rstd, mask=mask_l)


# ----------------------------------------------------------------------------------------------------------
# Fused conv + LayerNorm: backward, in two passes (dy at each position, then dx from K shifted dy)
# ----------------------------------------------------------------------------------------------------------
@triton.jit
def _conv_norm_bwd_dy_kernel(
    x_ptr, conv_w_ptr, conv_b_ptr, gamma_ptr, mean_ptr, rstd_ptr, dz_ptr, dy_ptr, partials_ptr,
    L, tiles_per_program, programs_per_row,
    C: tl.constexpr, KERNEL_SIZE: tl.constexpr, DILATION: tl.constexpr, EVEN_L: tl.constexpr,
    BLOCK_K: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_C: tl.constexpr,
):
    """dy = d(loss)/d(conv output), fp32 (N, C, L), from dz (N, L, C) in any float dtype, plus fp32 per-program
    partial sums (3 + K, C) of dgamma, dbeta, dconv_b, dconv_w. x, dz, dy contiguous. Recomputes y from x in fp32
    with the saved mean/rstd. Each program owns `tiles_per_program` consecutive L-blocks of one row."""
    pid = tl.program_id(0)
    n = pid // programs_per_row
    first_block = (pid % programs_per_row) * tiles_per_program
    offs_c = tl.arange(0, BLOCK_C)
    offs_k = tl.arange(0, BLOCK_K)
    mask_c = offs_c < C
    x_row = x_ptr + n.to(tl.int64) * C * L
    dy_row = dy_ptr + n.to(tl.int64) * C * L
    gamma = tl.load(gamma_ptr + offs_c, mask=mask_c, other=0.0).to(tl.float32)
    conv_b = tl.load(conv_b_ptr + offs_c, mask=mask_c, other=0.0).to(tl.float32)
    dgamma_acc = tl.zeros([BLOCK_C], dtype=tl.float32)
    dbeta_acc = tl.zeros([BLOCK_C], dtype=tl.float32)
    dconv_b_acc = tl.zeros([BLOCK_C], dtype=tl.float32)
    dconv_w_acc = tl.zeros([BLOCK_K, BLOCK_C], dtype=tl.float32)
    for t in range(tiles_per_program):
        offs_l = (first_block + t) * BLOCK_L + tl.arange(0, BLOCK_L)
        mask_l = offs_l < L
        tile_mask = _block_tile_mask(offs_l, L, C, EVEN_L, BLOCK_L, BLOCK_C, False)
        y = tl.zeros([BLOCK_L, BLOCK_C], dtype=tl.float32) + conv_b[None, :]
        for k in tl.static_range(KERNEL_SIZE):
            shift = (KERNEL_SIZE - 1 - k) * DILATION  # a compile-time constant: vector loads along L
            w_tap = tl.load(conv_w_ptr + offs_c * KERNEL_SIZE + k, mask=mask_c, other=0.0).to(tl.float32)
            x_tap = tl.load(x_row + offs_c[None, :] * L + (offs_l - shift)[:, None],
                            mask=tile_mask & (offs_l >= shift)[:, None], other=0.0)
            y += x_tap.to(tl.float32) * w_tap[None, :]
        mean = tl.load(mean_ptr + n.to(tl.int64) * L + offs_l, mask=mask_l, other=0.0)
        rstd = tl.load(rstd_ptr + n.to(tl.int64) * L + offs_l, mask=mask_l, other=0.0)
        xhat = tl.where(tile_mask, (y - mean[:, None]) * rstd[:, None], 0.0)
        dz = tl.load(dz_ptr + (n.to(tl.int64) * L + offs_l)[:, None] * C + offs_c[None, :], mask=tile_mask,
                     other=0.0).to(tl.float32)
        g = dz * gamma[None, :]
        mean_g_xhat = tl.sum(g * xhat, axis=1) / C
        mean_g = tl.sum(g, axis=1) / C
        dy = tl.where(tile_mask, rstd[:, None] * (g - xhat * mean_g_xhat[:, None] - mean_g[:, None]), 0.0)
        tl.store(dy_row + offs_c[None, :] * L + offs_l[:, None], dy, mask=tile_mask)
        dgamma_acc += tl.sum(dz * xhat, axis=0)
        dbeta_acc += tl.sum(dz, axis=0)
        dconv_b_acc += tl.sum(dy, axis=0)
        for k in tl.static_range(KERNEL_SIZE):  # the taps again: L1/L2 hits from the conv above
            shift = (KERNEL_SIZE - 1 - k) * DILATION
            x_tap = tl.load(x_row + offs_c[None, :] * L + (offs_l - shift)[:, None],
                            mask=tile_mask & (offs_l >= shift)[:, None], other=0.0).to(tl.float32)
            dconv_w_acc += tl.where(offs_k[:, None] == k, tl.sum(dy * x_tap, axis=0)[None, :], 0.0)
    partial_row = partials_ptr + pid.to(tl.int64) * (3 + KERNEL_SIZE) * C
    tl.store(partial_row + offs_c, dgamma_acc, mask=mask_c)
    tl.store(partial_row + C + offs_c, dbeta_acc, mask=mask_c)
    tl.store(partial_row + 2 * C + offs_c, dconv_b_acc, mask=mask_c)
    tl.store(partial_row + (3 + offs_k[:, None]) * C + offs_c[None, :], dconv_w_acc,
             mask=(offs_k < KERNEL_SIZE)[:, None] & mask_c[None, :])


@triton.jit
def _conv_norm_bwd_dx_kernel(
    dy_ptr, conv_w_ptr, residual_grad_ptr, dx_ptr,
    C, L, num_l_blocks,
    stride_rn, stride_rc, stride_rl,
    KERNEL_SIZE: tl.constexpr, DILATION: tl.constexpr, HAS_RESIDUAL: tl.constexpr, BLOCK_C: tl.constexpr,
    BLOCK_L: tl.constexpr,
):
    """dx[n, c, l] = sum_k w[c, k] * dy[n, c, l + (K-1-k)*dilation] (+ residual_grad[n, c, l]), dx (N, C, L)
    contiguous in its dtype; dy fp32 (N, C, L) and conv weight (C, 1, K) contiguous; fp32 arithmetic, one rounding
    on store. Tiles are (BLOCK_C channels, BLOCK_L positions) along the contiguous L; shifts are compile-time."""
    pid = tl.program_id(0)
    n = pid // num_l_blocks
    offs_l = (pid % num_l_blocks) * BLOCK_L + tl.arange(0, BLOCK_L)
    offs_c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask_c = offs_c < C
    tile_mask = mask_c[:, None] & (offs_l < L)[None, :]
    dy_rows = dy_ptr + n.to(tl.int64) * C * L + offs_c[:, None] * L
    dx = tl.zeros([BLOCK_C, BLOCK_L], dtype=tl.float32)
    for k in tl.static_range(KERNEL_SIZE):
        src_l = offs_l + (KERNEL_SIZE - 1 - k) * DILATION
        w_k = tl.load(conv_w_ptr + offs_c * KERNEL_SIZE + k, mask=mask_c, other=0.0).to(tl.float32)
        dy = tl.load(dy_rows + src_l[None, :], mask=mask_c[:, None] & (src_l < L)[None, :], other=0.0)
        dx += w_k[:, None] * dy
    if HAS_RESIDUAL:
        dx += tl.load(residual_grad_ptr + n.to(tl.int64) * stride_rn + offs_c[:, None] * stride_rc
                      + offs_l[None, :] * stride_rl, mask=tile_mask, other=0.0).to(tl.float32)
    tl.store(dx_ptr + n.to(tl.int64) * C * L + offs_c[:, None] * L + offs_l[None, :],
             dx.to(dx_ptr.dtype.element_ty), mask=tile_mask)


@triton.jit
def _conv_norm_param_grads_kernel(
    partials_ptr, dgamma_ptr, dbeta_ptr, dconv_b_ptr, dconv_w_ptr, num_partials,
    C: tl.constexpr, KERNEL_SIZE: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr,
):
    """The parameter gradients from _conv_norm_bwd_dy_kernel's per-program partial sums (P, 3 + K, C) fp32: row
    `program_id(1)` of every program summed in fp32 for BLOCK_C channels, then stored once in its gradient's own dtype:
    dgamma, dbeta, dconv_b (C,) and, for rows 3 + k, tap k of dconv_w (C, 1, K). One launch writes the four separate
    tensors (what a sum over the partials and four casting copies did in five)."""
    row = tl.program_id(1)
    offs_c = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask_c = offs_c < C
    acc = tl.zeros([BLOCK_C], dtype=tl.float32)
    for first in range(0, num_partials, BLOCK_P):
        offs_p = first + tl.arange(0, BLOCK_P)
        acc += tl.sum(tl.load(partials_ptr + (offs_p.to(tl.int64)[:, None] * (3 + KERNEL_SIZE) + row) * C
                              + offs_c[None, :], mask=(offs_p < num_partials)[:, None] & mask_c[None, :], other=0.0),
                      axis=0)
    if row == 0:
        tl.store(dgamma_ptr + offs_c, acc.to(dgamma_ptr.dtype.element_ty), mask=mask_c)
    elif row == 1:
        tl.store(dbeta_ptr + offs_c, acc.to(dbeta_ptr.dtype.element_ty), mask=mask_c)
    elif row == 2:
        tl.store(dconv_b_ptr + offs_c, acc.to(dconv_b_ptr.dtype.element_ty), mask=mask_c)
    else:
        tl.store(dconv_w_ptr + offs_c * KERNEL_SIZE + (row - 3), acc.to(dconv_w_ptr.dtype.element_ty), mask=mask_c)


# ----------------------------------------------------------------------------------------------------------
# Launchers and autograd for conv + LayerNorm
# ----------------------------------------------------------------------------------------------------------
# Every kernel launches through FastLaunch (greyhound/_launch.py): Triton's per-call argument binding runs once per
# launch key instead of on every call.
_run_conv_norm_fwd, _run_conv_norm_bwd_dy, _run_conv_norm_bwd_dx, _run_conv_norm_param_grads = map(
    FastLaunch, (_conv_norm_fwd_kernel, _conv_norm_bwd_dy_kernel, _conv_norm_bwd_dx_kernel,
                 _conv_norm_param_grads_kernel))


def _uses_triton(x):
    return x.device.type == "cuda" or (x.device.type == "cpu" and triton_interpreting())


def _channel_block(channels):
    return max(16, next_power_of_2(channels))


def _check_conv_norm_args(x, conv_weight, conv_bias, norm_weight, norm_bias, dilation, eps):
    """The conv + LayerNorm arguments' checks; returns dilation as a Python int (numpy integers are taken too)."""
    check_tensor("x", x, dtypes=FLOAT_DTYPES, ndim=3)
    channels, length = x.shape[1], x.shape[2]
    for name, t, shape in (("conv_weight", conv_weight, None), ("conv_bias", conv_bias, (channels,)),
                           ("norm_weight", norm_weight, (channels,)), ("norm_bias", norm_bias, (channels,))):
        check_tensor(name, t, dtypes=FLOAT_DTYPES, like=x)
        if shape is not None and tuple(t.shape) != shape:
            raise ValueError(f"{name} must have shape {shape} for x of shape {tuple(x.shape)}, got {tuple(t.shape)}")
    if conv_weight.dim() != 3 or conv_weight.shape[:2] != (channels, 1) or conv_weight.shape[2] < 1:
        raise ValueError(f"conv_weight must have shape ({channels}, 1, kernel_size) (depthwise) for x of shape "
                         f"{tuple(x.shape)}, got {tuple(conv_weight.shape)}")
    if not is_int(dilation) or dilation < 1:
        raise ValueError(f"dilation must be a positive int, got {dilation!r}")
    if not is_real(eps) or not (math.isfinite(as_float(eps)) and eps > 0):
        raise ValueError(f"eps must be a positive finite float (the LayerNorm's), got {eps!r}")
    if channels * max(length, 1) >= 2**31:
        raise ValueError(f"x must have C * L < 2**31 (in-row offsets are int32), got shape {tuple(x.shape)}")
    return int(dilation)


def _check_mlp_args(x, fc1_weight, fc1_bias, fc2_weight, fc2_bias):
    """The MLP's parameters for x (N, C, L): fc1 (E, C) + (E,), fc2 (C, E) + (C,), float, on x's device."""
    check_tensor("fc1_weight", fc1_weight, dtypes=FLOAT_DTYPES, ndim=2, like=x)
    channels, hidden_width = x.shape[1], fc1_weight.shape[0]
    for name, t, shape in (("fc1_weight", fc1_weight, (hidden_width, channels)),
                           ("fc1_bias", fc1_bias, (hidden_width,)),
                           ("fc2_weight", fc2_weight, (channels, hidden_width)), ("fc2_bias", fc2_bias, (channels,))):
        check_tensor(name, t, dtypes=FLOAT_DTYPES, like=x)
        if tuple(t.shape) != shape:
            raise ValueError(f"{name} must have shape {shape} for x of shape {tuple(x.shape)}, got {tuple(t.shape)}")


def _conv_norm_forward(x, conv_weight, conv_bias, norm_weight, norm_bias, dilation, eps, save_stats,
                       block_l=None, num_warps=None, z_dtype=None):
    batch, channels, length = x.shape
    x, conv_weight = x.contiguous(), conv_weight.contiguous()  # the kernel derives strides from the shapes
    z = torch.empty((batch, length, channels), device=x.device, dtype=z_dtype or x.dtype)
    stats_shape = (batch, length) if save_stats else (1,)
    mean = torch.empty(stats_shape, device=x.device, dtype=torch.float32)
    rstd = torch.empty(stats_shape, device=x.device, dtype=torch.float32)
    if z.numel() == 0:
        return z, mean.zero_(), rstd.zero_()
    block_c = _channel_block(channels)
    block_l = block_l or _tuned_block("norm_block_l", max(16, min(64, 8192 // block_c)))
    _run_conv_norm_fwd[(batch * cdiv(length, block_l),)](
        x, conv_weight, conv_bias, norm_weight, norm_bias, z, mean, rstd, length, eps,
        C=channels, KERNEL_SIZE=conv_weight.shape[2], DILATION=dilation, EVEN_L=length % block_l == 0,
        SAVE_STATS=save_stats, BLOCK_L=block_l, BLOCK_C=block_c,
        num_warps=num_warps or (4 if block_l * block_c <= 4096 else 8),
    )
    return z, mean, rstd


def _conv_norm_backward(dz, x, conv_weight, conv_bias, norm_weight, mean, rstd, dilation, residual_grad=None,
                        block_l=None, num_warps=None, target_programs=None, dx_block_l=None, grad_dtypes=None):
    """(dx, dconv_w, dconv_b, dgamma, dbeta) for dz of shape (N, L, C); dx += residual_grad when given.
    dx in x's dtype; the parameter gradients are four separate contiguous tensors in `grad_dtypes` (those of dconv_w,
    dconv_b, dgamma, dbeta; default fp32), summed in fp32 and rounded once."""
    batch, channels, length = x.shape
    x, dz, conv_weight = x.contiguous(), dz.contiguous(), conv_weight.contiguous()
    kernel_size = conv_weight.shape[2]
    block_c = _channel_block(channels)
    block_l = block_l or _tuned_block("norm_bwd_block_l", max(16, min(64, 4096 // block_c)))
    num_l_blocks = cdiv(length, block_l)
    # Enough programs to fill the GPU, few enough that the partial sums stay a small fraction of x.
    if target_programs is None:
        target_programs = 64 if x.device.type == "cpu" else 8 * multiprocessor_count(x.device.index)
    tiles_per_program = max(1, min(num_l_blocks, (batch * num_l_blocks) // max(target_programs, 1)))
    programs_per_row = cdiv(num_l_blocks, tiles_per_program)
    num_programs = batch * programs_per_row
    dy = torch.empty((batch, channels, length), device=x.device, dtype=torch.float32)
    partials = torch.empty((num_programs, 3 + kernel_size, channels), device=x.device, dtype=torch.float32)
    _run_conv_norm_bwd_dy[(num_programs,)](
        x, conv_weight, conv_bias, norm_weight, mean, rstd, dz, dy, partials,
        length, tiles_per_program, programs_per_row,
        # a ragged split gives the last program of a row tiles past L: those need the row mask
        C=channels, KERNEL_SIZE=kernel_size, DILATION=dilation,
        EVEN_L=length % block_l == 0 and num_l_blocks % tiles_per_program == 0,
        BLOCK_K=next_power_of_2(kernel_size), BLOCK_L=block_l, BLOCK_C=block_c,
        num_warps=num_warps or (4 if block_l * block_c <= 4096 else 8),
    )
    dx = torch.empty((batch, channels, length), device=x.device, dtype=x.dtype)
    dx_block_c = min(block_c, 32)
    dx_block_l = dx_block_l or _tuned_block("norm_dx_block_l", 64 if x.device.type == "cpu" else 256)
    dx_l_blocks = cdiv(length, dx_block_l)
    residual = residual_grad if residual_grad is not None else dx
    _run_conv_norm_bwd_dx[(batch * dx_l_blocks, cdiv(channels, dx_block_c))](
        dy, conv_weight, residual, dx,
        channels, length, dx_l_blocks, residual.stride(0), residual.stride(1), residual.stride(2),
        KERNEL_SIZE=kernel_size, DILATION=dilation, HAS_RESIDUAL=residual_grad is not None, BLOCK_C=dx_block_c,
        BLOCK_L=dx_block_l, num_warps=4,
    )
    w_dtype, b_dtype, gamma_dtype, beta_dtype = grad_dtypes or (torch.float32,) * 4
    dconv_w = torch.empty((channels, 1, kernel_size), device=x.device, dtype=w_dtype)
    dconv_b, dgamma, dbeta = (torch.empty(channels, device=x.device, dtype=dtype)
                              for dtype in (b_dtype, gamma_dtype, beta_dtype))
    param_block_c = min(block_c, 32)
    _run_conv_norm_param_grads[(cdiv(channels, param_block_c), 3 + kernel_size)](
        partials, dgamma, dbeta, dconv_b, dconv_w, num_programs,
        C=channels, KERNEL_SIZE=kernel_size, BLOCK_P=64, BLOCK_C=param_block_c, num_warps=4,
    )
    return dx, dconv_w, dconv_b, dgamma, dbeta


# Registered ops (greyhound::conv_norm_fwd / _bwd) with fake implementations and autograd, so that torch.compile
# keeps them in its graph (fullgraph=True) instead of breaking there.
@torch.library.custom_op("greyhound::conv_norm_fwd", mutates_args=())
def _conv_norm_fwd(x: torch.Tensor, conv_weight: torch.Tensor, conv_bias: torch.Tensor, norm_weight: torch.Tensor,
                   norm_bias: torch.Tensor, dilation: int, eps: float,
                   save_stats: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(z (N, L, C) in x's dtype, mean, rstd): fp32 (N, L) statistics with save_stats, else (1,) placeholders."""
    return _conv_norm_forward(x, conv_weight, conv_bias, norm_weight, norm_bias, dilation, eps, save_stats)


@_conv_norm_fwd.register_fake
def _conv_norm_fwd_fake(x, conv_weight, conv_bias, norm_weight, norm_bias, dilation, eps, save_stats):
    batch, channels, length = x.shape
    stats_shape = (batch, length) if save_stats else (1,)
    return (x.new_empty((batch, length, channels)), x.new_empty(stats_shape, dtype=torch.float32),
            x.new_empty(stats_shape, dtype=torch.float32))


@torch.library.custom_op("greyhound::conv_norm_bwd", mutates_args=())
def _conv_norm_bwd(dz: torch.Tensor, x: torch.Tensor, conv_weight: torch.Tensor, conv_bias: torch.Tensor,
                   norm_weight: torch.Tensor, norm_bias: torch.Tensor, mean: torch.Tensor, rstd: torch.Tensor,
                   dilation: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dx, dconv_w, dconv_b, dgamma, dbeta), each contiguous in its input's dtype."""
    params = (x, conv_weight, conv_bias, norm_weight, norm_bias)
    if x.numel() == 0:
        return tuple(torch.zeros(p.shape, dtype=p.dtype, device=p.device) for p in params)
    return _conv_norm_backward(dz, x, conv_weight, conv_bias, norm_weight, mean, rstd, dilation,
                               grad_dtypes=tuple(p.dtype for p in params[1:]))


@_conv_norm_bwd.register_fake
def _conv_norm_bwd_fake(dz, x, conv_weight, conv_bias, norm_weight, norm_bias, mean, rstd, dilation):
    return tuple(p.new_empty(p.shape) for p in (x, conv_weight, conv_bias, norm_weight, norm_bias))


def _conv_norm_setup_context(ctx, inputs, output):
    x, conv_weight, conv_bias, norm_weight, norm_bias, dilation, _, _ = inputs
    _, mean, rstd = output
    ctx.save_for_backward(x, conv_weight, conv_bias, norm_weight, norm_bias, mean, rstd)
    ctx.dilation = dilation
    ctx.mark_non_differentiable(mean, rstd)
    ctx.set_materialize_grads(False)  # no zero-filled gradients for the statistics


def _conv_norm_backward_formula(ctx, dz, _grad_mean, _grad_rstd, eager=False):
    if dz is None:
        return (None,) * 8
    grads = _library.run(_conv_norm_bwd, eager, dz, *ctx.saved_tensors, ctx.dilation)
    return (*(g if needed else None for g, needed in zip(grads, ctx.needs_input_grad[:5])), None, None, None)


_conv_norm_fwd.register_autograd(_conv_norm_backward_formula, setup_context=_conv_norm_setup_context)


_conv_norm_fwd_eager = _library.twin(_conv_norm_fwd, _conv_norm_setup_context, _conv_norm_backward_formula)


def _conv_norm_eager(x, conv_weight, conv_bias, norm_weight, norm_bias, dilation, eps):
    """The Triton kernel's numerics in eager PyTorch: fp32 conv and statistics, one rounding to x's dtype."""
    z = conv_norm_reference(x.float(), conv_weight.float(), conv_bias.float(), norm_weight.float(),
                            norm_bias.float(), dilation=dilation, eps=eps)
    return z.to(x.dtype).contiguous()


def conv_norm(x, conv_weight, conv_bias, norm_weight, norm_bias, *, dilation=1, eps=1e-5):
    """LayerNorm over channels of the causal depthwise convolution of x (N, C, L); returns z of shape (N, L, C).

    Differentiable in x and all parameters (Triton backward when autograd needs it).
    Computes in fp32 whatever the input dtype; z has x's dtype."""
    dilation = _check_conv_norm_args(x, conv_weight, conv_bias, norm_weight, norm_bias, dilation, eps)
    if not _uses_triton(x):
        return _conv_norm_eager(x, conv_weight, conv_bias, norm_weight, norm_bias, dilation, eps)
    tensors = (x, conv_weight, conv_bias, norm_weight, norm_bias)
    needs_grad = torch.is_grad_enabled() and any(t.requires_grad for t in tensors)
    z, _, _ = _library.call(_conv_norm_fwd, _conv_norm_fwd_eager, *tensors, dilation, float(eps), needs_grad)
    return z


# ----------------------------------------------------------------------------------------------------------
# The fused block kernel (inference megakernel; with TRAINING, the training forward)
# ----------------------------------------------------------------------------------------------------------
@triton.jit
def _half_dot(a, b, acc, EMULATE_DOT: tl.constexpr):
    if EMULATE_DOT:  # the interpreter's 16-bit dot is wrong; 16-bit x 16-bit products are exact in fp32
        acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="ieee")
    else:
        acc = tl.dot(a, b, acc)
    return acc


@triton.jit
def _to_bf16(a, EMULATE_DOT: tl.constexpr):
    """Round-to-nearest-even fp32 -> bf16. The interpreter's cast truncates (biased dots, 1-ulp outputs)."""
    if EMULATE_DOT:
        bits = a.to(tl.int32, bitcast=True)
        bits = (bits + (0x7FFF + ((bits >> 16) & 1))) & -65536  # round the low 16 bits away (ties to even)
        a = bits.to(tl.float32, bitcast=True)  # now exactly representable: any cast mode keeps it
    return a.to(tl.bfloat16)


@triton.jit
def _dot_operand(a, DOT_MODE: tl.constexpr, EMULATE_DOT: tl.constexpr):
    """Splits an fp32 tile into the (hi, lo) operands DOT_MODE multiplies; lo is only read by bf16x3."""
    if DOT_MODE == 0:
        hi = _to_bf16(a, EMULATE_DOT)
        lo = hi
    elif DOT_MODE == 1:
        hi = _to_bf16(a, EMULATE_DOT)
        lo = _to_bf16(a - hi.to(tl.float32), EMULATE_DOT)
    elif DOT_MODE == 4:
        hi = a.to(tl.float16)
        lo = hi
    else:
        hi = a
        lo = a
    return hi, lo


@triton.jit
def _mlp_dot(a_hi, a_lo, b_hi, b_lo, acc, DOT_MODE: tl.constexpr, EMULATE_DOT: tl.constexpr):
    if DOT_MODE == 0 or DOT_MODE == 4:
        acc = _half_dot(a_hi, b_hi, acc, EMULATE_DOT)
    elif DOT_MODE == 1:  # a*b ~ a_lo*b_hi + a_hi*b_lo + a_hi*b_hi: ~2^-16 relative, at bf16 tensor-core rate
        acc = _half_dot(a_lo, b_hi, acc, EMULATE_DOT)
        acc = _half_dot(a_hi, b_lo, acc, EMULATE_DOT)
        acc = _half_dot(a_hi, b_hi, acc, EMULATE_DOT)
    elif DOT_MODE == 2:
        acc = tl.dot(a_hi, b_hi, acc, input_precision="tf32x3")
    else:
        acc = tl.dot(a_hi, b_hi, acc, input_precision="ieee")
    return acc


@triton.jit
def _hidden_pre_act(z_hi, z_lo, w1_hi_ptr, w1_lo_ptr, e0, offs_c, mask_c, C: tl.constexpr, DOT_MODE: tl.constexpr,
                    EMULATE_DOT: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_E: tl.constexpr):
    """z @ W1[e0:e0+BLOCK_E]^T: the (BLOCK_L, BLOCK_E) fp32 pre-activation of one hidden chunk (no bias)."""
    offs_e = e0 + tl.arange(0, BLOCK_E)
    w1_offsets = offs_c[:, None] + offs_e[None, :] * C  # (BLOCK_C, BLOCK_E) block of W1^T
    w1_hi = tl.load(w1_hi_ptr + w1_offsets, mask=mask_c[:, None], other=0.0)
    w1_lo = w1_hi
    if DOT_MODE == 1:
        w1_lo = tl.load(w1_lo_ptr + w1_offsets, mask=mask_c[:, None], other=0.0)
    return _mlp_dot(z_hi, z_lo, w1_hi, w1_lo, tl.zeros([BLOCK_L, BLOCK_E], dtype=tl.float32), DOT_MODE, EMULATE_DOT)


@triton.jit
def _hidden_out(pre_act, acc, e0, b1_ptr, w2_hi_ptr, w2_lo_ptr, hidden_rows, offs_c, mask_c, mask_l,
                HIDDEN: tl.constexpr, DOT_MODE: tl.constexpr, TRAINING: tl.constexpr, GELU_VARIANT: tl.constexpr,
                EMULATE_DOT: tl.constexpr, BLOCK_E: tl.constexpr):
    """acc + GELU(pre_act + b1) @ W2[:, e0:e0+BLOCK_E]^T for one hidden chunk; with TRAINING also stores the
    chunk's GEMM2 operand (what the backward's dW2 needs: bf16/fp16 hidden, or the fp32 hidden for fp32 modes)."""
    offs_e = e0 + tl.arange(0, BLOCK_E)
    hidden = _gelu_erf(pre_act, tl.load(b1_ptr + offs_e).to(tl.float32)[None, :], GELU_VARIANT, EMULATE_DOT)
    h_hi, h_lo = _dot_operand(hidden, DOT_MODE, EMULATE_DOT)
    if TRAINING:
        if DOT_MODE == 0 or DOT_MODE == 4:
            tl.store(hidden_rows + offs_e[None, :], h_hi, mask=mask_l[:, None])
        else:
            tl.store(hidden_rows + offs_e[None, :], hidden, mask=mask_l[:, None])
    w2_offsets = offs_e[:, None] + offs_c[None, :] * HIDDEN  # (BLOCK_E, BLOCK_C) block of W2^T
    w2_hi = tl.load(w2_hi_ptr + w2_offsets, mask=mask_c[None, :], other=0.0)
    w2_lo = w2_hi
    if DOT_MODE == 1:
        w2_lo = tl.load(w2_lo_ptr + w2_offsets, mask=mask_c[None, :], other=0.0)
    return _mlp_dot(h_hi, h_lo, w2_hi, w2_lo, acc, DOT_MODE, EMULATE_DOT)


@triton.jit
def _cheri_block_kernel(
    x_ptr, out_ptr, hidden_ptr, mean_ptr, rstd_ptr, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr,
    w1_hi_ptr, w1_lo_ptr, b1_ptr, w2_hi_ptr, w2_lo_ptr, b2_ptr, z_ptr,
    L, eps,
    C: tl.constexpr, HIDDEN: tl.constexpr, KERNEL_SIZE: tl.constexpr, DILATION: tl.constexpr,
    EVEN_L: tl.constexpr, DOT_MODE: tl.constexpr, TRAINING: tl.constexpr, GELU_VARIANT: tl.constexpr,
    EMULATE_DOT: tl.constexpr, Z_PRECOMPUTED: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_C: tl.constexpr,
    BLOCK_E: tl.constexpr,
):
    """out = x + GELU(LayerNorm(conv(x)) @ W1^T + b1) @ W2^T + b2 for one (n, BLOCK_L positions) tile, out in x's dtype.
    Conv, statistics, GELU, biases and both dot accumulators are fp32; dot operands follow DOT_MODE (bf16 / bf16x3
    hi+lo splits / tf32x3 / ieee fp32 / fp16). With TRAINING it also stores the hidden layer (the GEMM2 operand) and mean/rstd.
    x, out, conv weight (C, 1, K), W1 (E, C), W2 (C, E) and hidden (N, L, E) are contiguous: strides are derived."""
    pid = tl.program_id(0)
    num_l_blocks = tl.cdiv(L, BLOCK_L)
    n = pid // num_l_blocks
    offs_l = (pid % num_l_blocks) * BLOCK_L + tl.arange(0, BLOCK_L)
    offs_c = tl.arange(0, BLOCK_C)
    mask_l = offs_l < L
    mask_c = offs_c < C
    row_offset = n.to(tl.int64) * C * L
    if Z_PRECOMPUTED:  # the "split" layout: z (N, L, C) from the conv + LayerNorm kernel (which saved the stats)
        z_offsets = (n.to(tl.int64) * L + offs_l)[:, None] * C + offs_c[None, :]
        if EVEN_L and C == BLOCK_C:
            z = tl.load(z_ptr + z_offsets).to(tl.float32)
        else:
            z = tl.load(z_ptr + z_offsets, mask=_block_tile_mask(offs_l, L, C, EVEN_L, BLOCK_L, BLOCK_C, False),
                        other=0.0).to(tl.float32)
    else:
        z, mean, rstd = _conv_norm_block_tile(x_ptr + row_offset, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr,
                                              offs_l, L, eps, C, KERNEL_SIZE, DILATION, EVEN_L, BLOCK_L, BLOCK_C,
                                              False)
        if TRAINING:
            tl.store(mean_ptr + n.to(tl.int64) * L + offs_l, mean, mask=mask_l)
            tl.store(rstd_ptr + n.to(tl.int64) * L + offs_l, rstd, mask=mask_l)
    z_hi, z_lo = _dot_operand(z, DOT_MODE, EMULATE_DOT)
    hidden_rows = hidden_ptr + (n.to(tl.int64) * L + offs_l)[:, None] * HIDDEN

    acc = tl.zeros([BLOCK_L, BLOCK_C], dtype=tl.float32)
    for e0 in range(0, HIDDEN, BLOCK_E):
        pre_act = _hidden_pre_act(z_hi, z_lo, w1_hi_ptr, w1_lo_ptr, e0, offs_c, mask_c, C, DOT_MODE, EMULATE_DOT,
                                  BLOCK_L, BLOCK_E)
        acc = _hidden_out(pre_act, acc, e0, b1_ptr, w2_hi_ptr, w2_lo_ptr, hidden_rows, offs_c, mask_c, mask_l,
                          HIDDEN, DOT_MODE, TRAINING, GELU_VARIANT, EMULATE_DOT, BLOCK_E)

    tile_mask = _block_tile_mask(offs_l, L, C, EVEN_L, BLOCK_L, BLOCK_C, False)
    tile_offsets = row_offset + offs_c[None, :] * L + offs_l[:, None]
    residual = tl.load(x_ptr + tile_offsets, mask=tile_mask, other=0.0)
    out = acc + tl.load(b2_ptr + offs_c, mask=mask_c, other=0.0).to(tl.float32)[None, :] + residual.to(tl.float32)
    if out_ptr.dtype.element_ty == tl.bfloat16:
        tl.store(out_ptr + tile_offsets, _to_bf16(out, EMULATE_DOT), mask=tile_mask)
    else:
        tl.store(out_ptr + tile_offsets, out.to(out_ptr.dtype.element_ty), mask=tile_mask)


@triton.jit
def _cheri_block_kernel_t(
    x_ptr, out_ptr, hidden_ptr, mean_ptr, rstd_ptr, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr,
    w1_hi_ptr, w1_lo_ptr, b1_ptr, w2_hi_ptr, w2_lo_ptr, b2_ptr, z_ptr,
    L, eps,
    C: tl.constexpr, HIDDEN: tl.constexpr, KERNEL_SIZE: tl.constexpr, DILATION: tl.constexpr,
    EVEN_L: tl.constexpr, DOT_MODE: tl.constexpr, TRAINING: tl.constexpr, GELU_VARIANT: tl.constexpr,
    EMULATE_DOT: tl.constexpr, Z_PRECOMPUTED: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_C: tl.constexpr,
    BLOCK_E: tl.constexpr,
):
    """_cheri_block_kernel computed transposed: out^T = x^T + W2 @ GELU(W1 @ z^T + b1) + b2 on (C, BLOCK_L) tiles,
    so the weights are the dots' A operands and z^T, h^T the B operands (both in shared memory, not registers);
    same numerics and arguments (z_ptr unused: no Z_PRECOMPUTED form)."""
    tl.static_assert(not Z_PRECOMPUTED, "the transposed kernel computes z itself")
    pid = tl.program_id(0)
    num_l_blocks = tl.cdiv(L, BLOCK_L)
    n = pid // num_l_blocks
    offs_l = (pid % num_l_blocks) * BLOCK_L + tl.arange(0, BLOCK_L)
    offs_c = tl.arange(0, BLOCK_C)
    mask_l = offs_l < L
    mask_c = offs_c < C
    x_row = x_ptr + n.to(tl.int64) * C * L
    z_t, mean, rstd = _conv_norm_block_tile(x_row, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr, offs_l, L, eps, C,
                                            KERNEL_SIZE, DILATION, EVEN_L, BLOCK_L, BLOCK_C, True)
    if TRAINING:
        tl.store(mean_ptr + n.to(tl.int64) * L + offs_l, mean, mask=mask_l)
        tl.store(rstd_ptr + n.to(tl.int64) * L + offs_l, rstd, mask=mask_l)
    z_hi, z_lo = _dot_operand(z_t, DOT_MODE, EMULATE_DOT)
    hidden_cols = hidden_ptr + (n.to(tl.int64) * L + offs_l)[None, :] * HIDDEN

    acc = tl.zeros([BLOCK_C, BLOCK_L], dtype=tl.float32)
    for e0 in range(0, HIDDEN, BLOCK_E):
        offs_e = e0 + tl.arange(0, BLOCK_E)
        w1_offsets = offs_e[:, None] * C + offs_c[None, :]  # (BLOCK_E, BLOCK_C) block of W1
        w1_hi = tl.load(w1_hi_ptr + w1_offsets, mask=mask_c[None, :], other=0.0)
        w1_lo = w1_hi
        if DOT_MODE == 1:
            w1_lo = tl.load(w1_lo_ptr + w1_offsets, mask=mask_c[None, :], other=0.0)
        pre_act = _mlp_dot(w1_hi, w1_lo, z_hi, z_lo, tl.zeros([BLOCK_E, BLOCK_L], dtype=tl.float32), DOT_MODE,
                           EMULATE_DOT)
        hidden = _gelu_erf(pre_act, tl.load(b1_ptr + offs_e).to(tl.float32)[:, None], GELU_VARIANT, EMULATE_DOT)
        h_hi, h_lo = _dot_operand(hidden, DOT_MODE, EMULATE_DOT)
        if TRAINING:
            if DOT_MODE == 0 or DOT_MODE == 4:
                tl.store(hidden_cols + offs_e[:, None], h_hi, mask=mask_l[None, :])
            else:
                tl.store(hidden_cols + offs_e[:, None], hidden, mask=mask_l[None, :])
        w2_offsets = offs_c[:, None] * HIDDEN + offs_e[None, :]  # (BLOCK_C, BLOCK_E) block of W2
        w2_hi = tl.load(w2_hi_ptr + w2_offsets, mask=mask_c[:, None], other=0.0)
        w2_lo = w2_hi
        if DOT_MODE == 1:
            w2_lo = tl.load(w2_lo_ptr + w2_offsets, mask=mask_c[:, None], other=0.0)
        acc = _mlp_dot(w2_hi, w2_lo, h_hi, h_lo, acc, DOT_MODE, EMULATE_DOT)

    tile_mask = _block_tile_mask(offs_l, L, C, EVEN_L, BLOCK_L, BLOCK_C, True)
    tile_offsets = offs_c[:, None] * L + offs_l[None, :]
    residual = tl.load(x_row + tile_offsets, mask=tile_mask, other=0.0)
    out = acc + tl.load(b2_ptr + offs_c, mask=mask_c, other=0.0).to(tl.float32)[:, None] + residual.to(tl.float32)
    out_row = out_ptr + n.to(tl.int64) * C * L
    if out_ptr.dtype.element_ty == tl.bfloat16:
        tl.store(out_row + tile_offsets, _to_bf16(out, EMULATE_DOT), mask=tile_mask)
    else:
        tl.store(out_row + tile_offsets, out.to(out_ptr.dtype.element_ty), mask=tile_mask)


class MlpDotWeights(NamedTuple):
    """The MLP weights as the fused kernel multiplies them (what CheriBlock.eval() caches).

    mode "bf16": hi = W in bf16. "bf16x3": hi + lo = W (both bf16, lo = W - hi). "tf32x3"/"ieee": hi = W (fp32).
    "fp16" (fp16 models): hi = W. Layouts are the nn.Linear ones, contiguous: fc1 (E, C), fc2 (C, E)."""
    mode: str
    fc1_hi: torch.Tensor
    fc1_lo: Optional[torch.Tensor]
    fc2_hi: torch.Tensor
    fc2_lo: Optional[torch.Tensor]


@triton.jit
def _split_bf16_kernel(fc1_ptr, fc2_ptr, fc1_hi_ptr, fc2_hi_ptr, fc1_lo_ptr, fc2_lo_ptr, numel,
                       WRITE_LO: tl.constexpr, EMULATE_DOT: tl.constexpr, BLOCK: tl.constexpr):
    """hi = bf16(w), lo = bf16(w - hi) for w = fc1 (program axis 1 = 0) or fc2 (= 1), from any float input,
    rounded to nearest even; w - hi is exact in fp32. One launch for both weights (the per-call cast)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    if tl.program_id(1) == 0:
        w = tl.load(fc1_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        hi_ptr, lo_ptr = fc1_hi_ptr, fc1_lo_ptr
    else:
        w = tl.load(fc2_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        hi_ptr, lo_ptr = fc2_hi_ptr, fc2_lo_ptr
    hi = _to_bf16(w, EMULATE_DOT)
    tl.store(hi_ptr + offs, hi, mask=mask)
    if WRITE_LO:
        tl.store(lo_ptr + offs, _to_bf16(w - hi.to(tl.float32), EMULATE_DOT), mask=mask)


_run_split_bf16 = FastLaunch(_split_bf16_kernel)  # the per-call cast of a no-eval or training forward


def _split_bf16(fc1_weight, fc2_weight, write_lo):
    """(fc1_hi, fc1_lo, fc2_hi, fc2_lo) in bf16; the lo parts are None unless write_lo. Inside torch.compile the
    Triton split is the registered op greyhound::split_bf16 (eager calls it directly: no dispatch overhead)."""
    if torch.compiler.is_compiling() and _uses_triton(fc1_weight):
        fc1_hi, fc1_lo, fc2_hi, fc2_lo = _split_bf16_op(fc1_weight.detach(), fc2_weight.detach(), write_lo)
        return (fc1_hi, fc1_lo, fc2_hi, fc2_lo) if write_lo else (fc1_hi, None, fc2_hi, None)
    return _split_bf16_impl(fc1_weight, fc2_weight, write_lo)


def _split_bf16_impl(fc1_weight, fc2_weight, write_lo):
    fc1_weight, fc2_weight = fc1_weight.detach().contiguous(), fc2_weight.detach().contiguous()
    parts = [torch.empty(w.shape, device=w.device, dtype=torch.bfloat16)
             for w in ((fc1_weight, fc2_weight) * (2 if write_lo else 1))]
    fc1_hi, fc2_hi = parts[0], parts[1]
    fc1_lo, fc2_lo = (parts[2], parts[3]) if write_lo else (None, None)
    if _uses_triton(fc1_weight):
        block = 1024
        _run_split_bf16[(cdiv(fc1_weight.numel(), block), 2)](
            fc1_weight, fc2_weight, fc1_hi, fc2_hi, fc1_lo if write_lo else fc1_hi, fc2_lo if write_lo else fc2_hi,
            fc1_weight.numel(), WRITE_LO=write_lo, EMULATE_DOT=fc1_weight.device.type == "cpu", BLOCK=block)
    else:
        for weight, hi, lo in ((fc1_weight, fc1_hi, fc1_lo), (fc2_weight, fc2_hi, fc2_lo)):
            hi.copy_(weight)
            if write_lo:
                lo.copy_(weight.float() - hi.float())
    return fc1_hi, fc1_lo, fc2_hi, fc2_lo


@torch.library.custom_op("greyhound::split_bf16", mutates_args=())
def _split_bf16_op(fc1_weight: torch.Tensor, fc2_weight: torch.Tensor,
                   write_lo: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """_split_bf16 as an op: 0-element lo parts without write_lo."""
    fc1_hi, fc1_lo, fc2_hi, fc2_lo = _split_bf16_impl(fc1_weight, fc2_weight, write_lo)
    empty = fc1_weight.new_empty(0, dtype=torch.bfloat16)
    return fc1_hi, empty if fc1_lo is None else fc1_lo, fc2_hi, empty.clone() if fc2_lo is None else fc2_lo


@_split_bf16_op.register_fake
def _split_bf16_op_fake(fc1_weight, fc2_weight, write_lo):
    parts = [w.new_empty(w.shape if write_lo or i < 2 else 0, dtype=torch.bfloat16)
             for i, w in enumerate((fc1_weight, fc2_weight, fc1_weight, fc2_weight))]
    return parts[0], parts[2], parts[1], parts[3]


def mlp_dot_mode(model_dtype, fp32_dot="bf16x3", training=False):
    """bf16 models multiply bf16 operands, fp16 models fp16 operands (their weights as they are: no cast, eager's
    rounding), fp32 models per `fp32_dot` (fp32-accurate by default); the same in training and inference
    (`training` is kept for callers that pass it)."""
    check_choice("fp32_dot", fp32_dot, FP32_DOT_MODES)
    if model_dtype == torch.float32:
        return fp32_dot
    return "fp16" if model_dtype == torch.float16 else "bf16"


def hidden_dtype(model_dtype, mode):
    """The dtype of the hidden layer a training forward saves (the GEMM2 operand): the model's for one-pass half
    dots, fp32 for the fp32 modes."""
    return model_dtype if mode in ("bf16", "fp16") else torch.float32


def dot_dtype(mode):
    """The dtype of the weights (and their lo parts) an MLP dot mode multiplies."""
    return {"tf32x3": torch.float32, "ieee": torch.float32, "fp16": torch.float16}.get(mode, torch.bfloat16)


def prepare_mlp_weights(fc1_weight, fc2_weight, fp32_dot="bf16x3", training=False):
    """The weights as the fused kernel reads them: a bf16 model's own, an fp16 model's own, an fp32 model's bf16 cast
    or hi/lo split (or its own for tf32x3/ieee); CheriBlock caches this in eval mode."""
    check_tensor("fc1_weight", fc1_weight, dtypes=FLOAT_DTYPES, ndim=2)
    check_tensor("fc2_weight", fc2_weight, dtypes=FLOAT_DTYPES, ndim=2, like=fc1_weight)
    if fc2_weight.dtype != fc1_weight.dtype or fc2_weight.shape != fc1_weight.shape[::-1]:
        raise ValueError(f"fc2_weight must be ({fc1_weight.shape[1]}, {fc1_weight.shape[0]}) in "
                         f"{fc1_weight.dtype} like fc1_weight, got {tuple(fc2_weight.shape)} in {fc2_weight.dtype}")
    return _mlp_weights(fc1_weight, fc2_weight, fp32_dot, training)


def _mlp_weights(fc1_weight, fc2_weight, fp32_dot, training=False):
    """prepare_mlp_weights without the weight checks (callers own validated weights). Outside autograd: detached."""
    mode = mlp_dot_mode(fc1_weight.dtype, fp32_dot, training)
    if mode in ("tf32x3", "ieee", "fp16") or fc1_weight.dtype == torch.bfloat16:  # the weights as they are
        return MlpDotWeights(mode, fc1_weight.detach().contiguous(), None, fc2_weight.detach().contiguous(), None)
    return MlpDotWeights(mode, *_split_bf16(fc1_weight, fc2_weight, write_lo=mode == "bf16x3"))


def _megakernel_eager(x, conv_weight, conv_bias, norm_weight, norm_bias, weights, fc1_bias, fc2_bias, dilation, eps):
    """The megakernel's numerics in eager PyTorch (CPU without the interpreter): fp32 everywhere except that the
    dot operands are rounded as the kernel rounds them (bf16 or fp16; bf16 hi+lo for bf16x3; fp32 otherwise)."""
    def operands(t):
        if weights.mode in ("bf16", "fp16"):
            return [t.to(dot_dtype(weights.mode)).float()]
        if weights.mode == "bf16x3":
            hi = t.to(torch.bfloat16)
            return [hi.float(), (t - hi.float()).to(torch.bfloat16).float()]
        return [t]

    def dot(a, w_hi, w_lo):  # a @ W^T with W = w_hi (+ w_lo), both from MlpDotWeights
        a_parts = operands(a)
        out = a_parts[0] @ w_hi.float().t()
        if weights.mode == "bf16x3":
            out = a_parts[1] @ w_hi.float().t() + a_parts[0] @ w_lo.float().t() + out
        return out

    z = _conv_norm_eager(x.float(), conv_weight, conv_bias, norm_weight, norm_bias, dilation, eps)
    hidden = F.gelu(dot(z, weights.fc1_hi, weights.fc1_lo) + fc1_bias.float())
    out = dot(hidden, weights.fc2_hi, weights.fc2_lo) + fc2_bias.float()
    return (x.float() + out.transpose(1, 2)).to(x.dtype)


# (BLOCK_L, BLOCK_E, num_warps, num_stages, layout, maxnreg) by (dot-mode family, training): measured on the H200 at
# C=128, E=512, N in {16, 64, 512} (docs/perf/cheri_block.md). layout "lc" = _cheri_block_kernel ((L, C) tiles),
# "cl" = _cheri_block_kernel_t. Other shapes start from the same choice and fall back to smaller tiles if it does
# not fit (shared memory), once per shape.
_FUSED_CONFIGS = {
    ("half", False): (128, 64, 8, 2, "lc", 128),  # bf16 0.521 ms at N=512 (64x32 w4 s3: 0.535)
    ("half", True): (64, 32, 4, 3, "split", None),  # bf16 0.654 ms (one kernel, 64x64 w4 s2: 0.671)
    ("bf16x3", False): (128, 64, 8, 2, "lc", None),
    ("bf16x3", True): (128, 64, 8, 2, "lc", None),
    ("tf32x3", False): (64, 32, 4, 1, "lc", None),
    ("tf32x3", True): (64, 32, 4, 1, "lc", None),
    ("ieee", False): (64, 16, 8, 1, "lc", None),  # fp32 FMA dots: larger tiles spill registers
    ("ieee", True): (64, 16, 8, 1, "lc", None),
}
_FALLBACK_CONFIGS = [(64, 32, 4, 1, "lc", None), (32, 16, 4, 1, "lc", None), (16, 16, 4, 1, "lc", None)]
_chosen_configs = {}  # (C, E, K, mode, training, dtype, device) -> the config that compiled
# "split": the conv + LayerNorm kernel writes z (N, L, C) in the dot operand's dtype (bf16 for bf16 dots: the
# same single rounding as the fused prologue, so the same output), then _cheri_block_kernel reads it.
_KERNELS = {"lc": _cheri_block_kernel, "cl": _cheri_block_kernel_t, "split": _cheri_block_kernel}
# "gluon": greyhound/ops/_cheri_gluon.py, the software-pipelined Hopper kernel (bf16 dots, inference, CUDA 9.x);
# STAGES is the config's num_stages. Where it does not apply (or fails to compile: Gluon is experimental) the
# next candidate runs instead, unless it was asked for explicitly.
# "gluon_ws" / "gluon_ws3": its warp-specialised, persistent version (two / three consumer warp groups share each
# weight chunk a producer streams in); the config's maxnreg is then the consumers' register count (None: the most
# they can have).
# "gluon_wsz": two consumers and a z producer, a warp group that computes each tile's conv + LayerNorm ahead of its
# consumer (the consumers run only the MLP).
_LAYOUTS = ("lc", "cl", "split", "gluon", "gluon_ws", "gluon_ws3", "gluon_wsz")
_WS_CONSUMERS = {"gluon_ws": 2, "gluon_ws3": 3, "gluon_wsz": 2}
_GLUON_LAYOUTS = ("gluon", *_WS_CONSUMERS)  # launched through _cheri_gluon's module functions
_Z_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}  # other dot modes keep z in fp32


# A small training forward (N·L at most _SMALL_TRAINING_ROWS positions) with bf16/fp16 dots runs the single fused
# kernel instead of "split": one launch and three allocations fewer, which is what such a call costs (its host time
# exceeds its device time on the H200's hosts; docs/perf/cheri_block.md, session 18).
_SMALL_TRAINING_ROWS = 64 * 1024
_SMALL_TRAINING_CONFIG = (64, 64, 4, 2, "lc", None)  # 0.671 ms at N=512 against split's 0.654


def _default_config(channels, hidden_width, dot_mode, training, small=False):
    family = "half" if dot_mode in ("bf16", "fp16") else dot_mode
    block_l, block_e, num_warps, num_stages, layout, max_registers = (
        _SMALL_TRAINING_CONFIG if training and small and family == "half" else _FUSED_CONFIGS[family, training])
    block_c = _channel_block(channels)
    while hidden_width % block_e:
        block_e //= 2
    while block_l > 16 and block_l * block_c > 16384:  # wide channels: keep the (BLOCK_L, C) tiles in registers
        block_l //= 2
    if layout == "cl" and block_e < 64:  # the transposed kernel's first dot has M = BLOCK_E
        layout = "lc"
    return block_l, block_e, num_warps, num_stages, layout, max_registers


# The Gluon kernel's tile by (dot-mode family, training), tried before the Triton default where it applies. bf16/fp16
# inference (docs/perf/cheri_block.md, session 13): 64 positions x 64 hidden columns, 4 warps, a 2-deep weight ring,
# 234 registers -> 2 programs per SM: 0.506 ms at N=512 against 0.524 for the Triton kernel's (128, 64, 8, 2, maxnreg
# 128), one process. An fp32 model's bf16x3, inference and training forward (session 21, sweep CLI at N=512, H200):
# inference 1.056 ms at (64, 32, 4, 2) against the Triton tile's 1.163 (log 88); training forward 1.202 at (128, 64, 8,
# 2) against 1.573, peak memory equal (log 89; (64, 64, 4, 2) 1.423, (64, 32, 4, 3) 2.419); after the accuracy fix
# (residual added after the products) asv reads 0.982 and 1.290 (log 91; Triton 1.162 and 1.565). bf16/fp16 training
# forwards keep the Triton kernels (Gluon (64, 64, 4, 2) 0.675 ms against 0.644, log 89). bf16/fp16 inference since
# session 25: 32 hidden columns a chunk under a 168-register cap (40 bytes of stack), so three programs share an SM
# instead of two, with z read from registers by the first GEMMs (z_regs, the default for these dots); sweep CLI, one
# process, H200 (log 110): N=512 bf16 0.4505 against (64, 64, 4, 2)'s 0.4638 ms, fp16 0.4362 against 0.4570; N=64
# 0.0640 / 0.0646 against 0.0677 / 0.0678.
# Half-precision inference above the tiny class runs the warp-specialised kernel with the z producer (gluon_wsz), its
# consumers on the ping-pong schedule (ws_schedule=pingpong) and the degree-3 GELU fit (poly3), 64 hidden columns, ring 4:
# H200, sweep CLI, one process (session 31, log 141): bf16 N=512 0.4055 ms against the gluon tile's 0.4428, N=64
# 0.0614 against 0.0632; fp16 (ring 5) 0.3986 / 0.0620 against 0.4308 / 0.0641.
_GLUON_TILE = (64, 32, 4, 2, "gluon", 168)  # three programs an SM: bf16 0.4428 ms at N=512 (same run)
_GLUON_CONFIGS = {
    ("half", False): (64, 64, 4, 4, "gluon_wsz", None),
    ("bf16x3", False): (64, 32, 4, 2, "gluon", None),
    ("bf16x3", True): (128, 64, 8, 2, "gluon", None),
}
# Small calls (N·L at most _SMALL_INFERENCE_ROWS positions) where another Gluon tile is faster. An fp32 model's
# inference (bf16x3) at C=128, E=512, L=1024 (session 22, sweep CLI, one process, H200): (128, 64, 8 warps, 2) against
# the (64, 32, 4, 2) default, N=16 0.0394 against 0.0471 ms, N=64 0.1419 against 0.1519; at N=512 it is slower (1.069
# against 0.989, session 21). Its 128-position tiles put one 8-warp program on an SM where the default puts two
# 4-warp programs, which in a call this short may run in step (a guess: not profiled). bf16/fp16 keep their tile
# (N=16 / 64: 0.0217 / 0.0717 at (128, 64, 8, 2) against 0.0205 / 0.0676). The crossover (session 23, log 97, same
# kind of run): N=96 0.2097 against 0.2174, N=128 0.2753 against 0.2785 (within the spread), N=256 0.5424 against
# 0.5237; so up to 96Ki positions.
_SMALL_INFERENCE_ROWS = 96 * 1024
# Tiny inference calls (N·L at most _TINY_INFERENCE_ROWS positions, size class 2; "small" above is class 1), where
# bf16/fp16 keep the tile they had before session 25: (64, 64, 4, 2), no register cap, z in shared memory. Sweep CLI,
# one process, H200 (session 26, log 113): N=16 bf16 0.0207 against the three-programs-an-SM default's 0.0225, fp16
# 0.0204 against 0.0225; at N=64 the default is faster (0.0636 / 0.0638 against 0.0674 / 0.0668). At N=16 the old tile
# runs in one wave (256 tiles, two programs on each of 132 SMs); N=32 was not measured, so the class stops at 16Ki.
_TINY_INFERENCE_ROWS = 16 * 1024
_SMALL_GLUON_CONFIGS = {  # by (dot-mode family, training, size class)
    ("bf16x3", False, 1): (128, 64, 8, 2, "gluon", None),
    ("half", False, 2): (64, 64, 4, 2, "gluon", None),
}
# What the gluon_wsz layout runs unless a tuning override names it: the ping-pong schedule and, for the default GELU,
# the degree-2 fit (8.6e-5 absolute of fp64 GELU). bf16 rounds the hidden layer it feeds coarser than that (an ulp is
# 4.9e-4 at |h| = 0.1); fp16 rounds finer (6.1e-5), but what reaches the output, itself rounded to fp16, stays within
# one ulp of the degree-6 fit's (session 40's fp64 emulation; max error 2.07e-3 against poly3's 2.10e-3). Session 36
# (log 152, H200, sweep CLI, one process, two rounds): bf16 N=512 0.3768 / 0.3803 ms against poly3's 0.3970 / 0.3906,
# N=64 0.0595 / 0.0594 against 0.0603 / 0.0602. Session 41 (log 161, one H100, same form): fp16 N=512 0.3684 / 0.3681
# against poly3's 0.3851 / 0.3825; asv on that GPU (log 162) 0.3724 (sweep) against e238aa7's 0.3825 on another H100.
_WSZ_DEFAULT_SCHEDULE, _WSZ_DEFAULT_GELU = "pingpong", {"bf16": "poly2", "fp16": "poly2"}
_WS_SCHEDULES = {"chunk": 0, "pingpong": 1, "turns": 2, "tail": 3}  # ws_schedule -> _cheri_gluon.launch_ws's pingpong


def _ws_pingpong(layout, schedule):
    """launch_ws's pingpong for a warp-specialised `layout` and a ws_schedule tunable (None: the layout's default)."""
    if schedule is None:
        schedule = _WSZ_DEFAULT_SCHEDULE if layout == "gluon_wsz" else "chunk"
    return _WS_SCHEDULES[schedule]


def _ws_balance(layout, schedule, balance):
    """launch_ws's balance for a ws_balance tunable (None: on in gluon_wsz on the ping-pong schedule, where it was
    measured; session 36, log 152, H200, sweep CLI, one process, two rounds, N=512: bf16 0.3851 / 0.3883 ms against
    0.3970 / 0.3906, fp16 0.3892 / 0.3903 against 0.3932 / 0.3909; N=64, where the rule never fires, level)."""
    if balance is None:
        return layout == "gluon_wsz" and _ws_pingpong(layout, schedule) == 1
    return bool(balance)


def _ws_late_residual(layout, schedule, mode, late_residual, cross_tile=False, epilogue16=False):
    """launch_ws's late_residual for a ws_late_residual tunable (None: on in gluon_wsz on the ping-pong schedule for
    fp16 dots only; session 36, H200, sweep CLI, one process, log 153, N=512: fp16 0.3828 ms against 0.3888 (0.3845
    against 0.3925 without lone tiles), bf16 0.3872 against 0.3775; call 1 read fp16 at d06a75b, before the early load,
    1.2-1.5% faster than after it. Offline (Triton 3.6) the fp16 kernel's spills go 188 -> 60 bytes with it). With
    ws_cross_tile on for every dtype: the next tile's chunk-0 pre-activation is live through the tile's end, and beside
    an early residual the consumers spilled 900 bytes instead of 180 (Triton 3.6, offline, bf16). With ws_epilogue16
    off for every dtype: it adds the early residual in the accumulator's layout (fp16 spills 12 bytes with it, as
    late without it; Triton 3.6, offline)."""
    if late_residual is None:
        return layout == "gluon_wsz" and _ws_pingpong(layout, schedule) == 1 and (mode == "fp16" or cross_tile) \
            and not epilogue16
    return bool(late_residual)


def _ws_ring_and_epilogue(layout, schedule, mode, x_shuffle, split_ring, epilogue16, cross_tile, late_residual):
    """launch_ws's (split_ring, epilogue16) for the ws_split_ring and ws_epilogue16 tunables (None: both on in
    gluon_wsz on the ping-pong schedule where a 16-bit model's conv taps come by shuffles, `x_shuffle` being launch_ws's
    resolved one, unless ws_cross_tile (one weight ring, a late residual) is on; epilogue16 not beside
    ws_late_residual=True either. Off elsewhere. Session 47, logs 175-176, H200, sweep CLI, one process a round, N=512
    fp16: both 0.3510 / 0.3504 ms against 0.3546 / 0.3575 without (asv at d2a9ecd: 0.3544), split ring alone 0.3548 /
    0.3558, epilogue16 alone 0.3560 / 0.3563; N=64 level (0.0537 / 0.0538 against 0.0536 / 0.0530). bf16 with its taps
    from shared memory was slower with each (both 0.3655 / 0.3628 against 0.3578 / 0.3579), with shuffled taps and
    neither taps in shared memory nor prefetch faster: see _ws_x_shuffle)."""
    on = layout == "gluon_wsz" and _ws_pingpong(layout, schedule) == 1 and mode in ("bf16", "fp16") \
        and bool(x_shuffle) and not cross_tile
    return (on if split_ring is None else bool(split_ring),
            on and not late_residual if epilogue16 is None else bool(epilogue16))


# The registers (setmaxnreg) of an fp16 model on gluon_wsz's ping-pong schedule with its default configuration
# (shuffled taps, ws_split_ring, ws_epilogue16): the consumers take 160 and the weight producer 24, which leaves the z
# producer its 168. Elsewhere launch_ws's defaults: consumers 152, weight producer 40 (the z producer 168).
_WSZ_FP16_CONSUMER_REGS = 160
_WSZ_FP16_PRODUCER_REGS = 24


def _ws_registers(layout, schedule, mode, x_dtype, x_shuffle, split_ring, epilogue16, max_registers,
                  producer_regs=None):
    """launch_ws's (consumer_regs, producer_regs) for the config's register cap `max_registers` and the
    ws_producer_regs variant `producer_regs` (None: launch_ws's defaults), but for an fp16 model in gluon_wsz on the
    ping-pong schedule whose taps are shuffled, with ws_split_ring and ws_epilogue16 (launch_ws's resolved ones):
    there the consumers take _WSZ_FP16_CONSUMER_REGS where the weight producer leaves room for them, and without a
    cap or a producer's count given, the weight producer takes _WSZ_FP16_PRODUCER_REGS.

    The consumers at 160: session 49, logs 183-184, one H100, sweep CLI, N=512, one process a round, six rounds in two
    calls: fp16 0.3442-0.3467 ms at 160 against 152's 0.3477-0.3487; bf16 0.3476-0.3518 against 0.3452-0.3494 (slower,
    so bf16 keeps 152); 144 and 168 +3-5% for both. Log 185 (another H100): N=512 0.3435 / 0.3443 against 0.3462 /
    0.3472, N=64 level. The z producer was then cut to 152. The weight producer at 24, which gives the z producer its
    168 back: session 50, log 190 (H100 GPU-8ccbfc6a, three rounds, order alternating): fp16 N=512 0.3421 / 0.3428 /
    0.3423 ms against 0.3470 / 0.3443 / 0.3461 (-1.1%), N=64 level (0.0535-0.0536 against 0.0534-0.0541); in bf16
    the consumers at 160 beside it were +0.6% slower (0.3490-0.3505 against 0.3470-0.3480) and at 152 beside it +0.9%,
    so bf16 keeps launch_ws's defaults. Offline (sm_90a, Triton 3.6): no spills at 160 / 24 / 168 (compile case 27).
    Registers change no result bit (GPU test, logs 186 and 190)."""
    if not (layout == "gluon_wsz" and _ws_pingpong(layout, schedule) == 1 and mode == "fp16"
            and x_dtype == torch.float16 and x_shuffle and split_ring and epilogue16):
        return max_registers, producer_regs
    if max_registers is not None:  # a config's own cap: the weight producer's as given (launch_ws's default 40)
        return max_registers, producer_regs
    if producer_regs is None:
        return _WSZ_FP16_CONSUMER_REGS, _WSZ_FP16_PRODUCER_REGS
    most = _cheri_gluon.ws_consumer_regs(2, True, producer_regs)
    return (_WSZ_FP16_CONSUMER_REGS if _WSZ_FP16_CONSUMER_REGS <= most else None), producer_regs


def _wsz_bf16_pingpong(layout, schedule, mode, x_dtype, x_shuffle):
    """Where session 39 measured the z producer's conv taps in shared memory and L2 prefetch of x faster: gluon_wsz on
    the ping-pong schedule with a bf16 model (not an fp32 model's bf16 dots: x of 4 bytes an element, unmeasured) whose
    taps are not shuffled (`x_shuffle`, launch_ws's resolved one: beside shuffled taps both measured slower, session
    47)."""
    return layout == "gluon_wsz" and _ws_pingpong(layout, schedule) == 1 and mode == "bf16" and \
        x_dtype == torch.bfloat16 and not x_shuffle


def _ws_x_prefetch(layout, schedule, mode, x_dtype, x_prefetch, x_shuffle):
    """launch_ws's x_prefetch for a ws_x_prefetch tunable (None: 1 in gluon_wsz on the ping-pong schedule for a bf16
    model whose taps are not shuffled (`x_shuffle`, launch_ws's resolved one), 0 elsewhere; session 47, one H100, two
    rounds, N=512 bf16 with fp16's configuration: 0.3468 / 0.3490 ms with it, 0.3448 / 0.3471 without. Session 39,
    log 157, one H100, sweep CLI, one process, two rounds, N=512 bf16: with the conv's taps in shared memory 0.3632 /
    0.3631 ms against 0.3655 / 0.3657 without the prefetch, alone 0.3748 / 0.3765 against the default's 0.3744 /
    0.3762; fp16 slower with it: 0.3953 alone, 0.3873 with the taps, against 0.3826. 2 groups ahead: 0.3812)."""
    if x_prefetch is None:
        return int(_wsz_bf16_pingpong(layout, schedule, mode, x_dtype, x_shuffle))
    return x_prefetch


def _ws_x_shuffle(layout, schedule, mode, x_dtype, x_shuffle, channels, kernel_size, dilation):
    """launch_ws's x_shuffle for a ws_x_shuffle tunable (None: on in gluon_wsz on the ping-pong schedule for a 16-bit
    model (bf16 or fp16 dots on x of its own dtype) where the shuffles can take the taps, off elsewhere; session 44,
    logs 173-174, one H100, sweep CLI, one process a round, N=512 fp16: 0.3532 / 0.3550 / 0.3543 ms against the
    default's 0.3633 / 0.3635 / 0.3662, N=64 0.0538 / 0.0540 against 0.0567 / 0.0571. bf16 with its taps in shared
    memory was slower with it (0.3576 / 0.3582 against 0.3557 / 0.3553); with fp16's whole configuration (no taps in
    shared memory, no prefetch, ws_split_ring + ws_epilogue16) faster, session 47, one H100, five rounds: 0.3472,
    0.3442, 0.3452, 0.3448, 0.3471 ms against the bf16 default's 0.3571, 0.3544, 0.3546, 0.3533, 0.3583)."""
    if x_shuffle is None:
        return layout == "gluon_wsz" and _ws_pingpong(layout, schedule) == 1 and mode in ("bf16", "fp16") and \
            _cheri_gluon.x_shuffle_refusal(x_dtype, channels, kernel_size, dilation) is None
    return bool(x_shuffle)


def _ws_conv_taps(layout, schedule, mode, x_dtype, conv_smem, kernel_size, stages, block_e, channels, hidden_width,
                  block_l, b1_mma, x_shuffle, conv_regs=None):
    """The conv taps launch_ws stages in shared memory for a ws_conv_smem tunable: K, or 0 for none (always 0 with
    the taps in the z producer's registers, a ws_conv_regs tunable `conv_regs`, which _make_plan refuses beside
    ws_conv_smem=True). None: on in
    gluon_wsz on the ping-pong schedule for a bf16 model whose taps are not shuffled (`x_shuffle`, launch_ws's resolved
    one) where the taps leave the z ring as deep as without them (session 47, one H100, two rounds, N=512 bf16 with
    fp16's configuration: 0.3541 / 0.3575 ms with them, 0.3448 / 0.3471 without; fp16 0.3493 / 0.3496 against 0.3492 /
    0.3472. Session 39, log 157, one H100, sweep CLI, one process, two rounds, N=512 bf16: 0.3655 / 0.3657 ms against
    0.3744 / 0.3762; fp16 level, 0.3836 against 0.3826, so off; N=64 level within its host-bound spread). Asked for
    by name, on wherever gluon_wsz runs (unsupported_ws refuses a shape where the taps leave no z ring)."""
    if conv_regs:
        return 0
    if conv_smem is None:
        if not _wsz_bf16_pingpong(layout, schedule, mode, x_dtype, x_shuffle):
            return 0
        depth = functools.partial(_cheri_gluon.z_stages, stages, block_e, channels, hidden_width, block_l, b1_mma,
                                  False)
        return kernel_size if depth(kernel_size) == depth() > 0 else 0
    return kernel_size if conv_smem and layout == "gluon_wsz" else 0


def _ws_bf16_shifts(x_dtype, x_shuffle, bf16_shifts):
    """launch_ws's bf16_shifts for a ws_bf16_shifts tunable: None, off (the same fp32 values by fewer instructions,
    measured 2.1% slower at N=512 bf16: session 53). Asked for, it needs a bf16 x whose conv taps come by shuffles
    (`x_shuffle` resolved), or is refused by name."""
    applies = x_dtype == torch.bfloat16 and x_shuffle
    if bf16_shifts and not applies:
        raise ValueError(f"tuning: {TUNING_OP}.ws_bf16_shifts widens a bf16 x's shuffled conv taps: it needs x of "
                         f"torch.bfloat16 and shuffled taps (ws_x_shuffle), got x of {x_dtype}, shuffled taps "
                         f"{bool(x_shuffle)}")
    return bool(bf16_shifts)


def _ws_first_z(layout, cross_tile, first_z):
    """launch_ws's first_z for a ws_first_z tunable: None, off (on two H100s, N=512 -0.25% to +1.1%, N=64 1.5-3.3%
    faster: session 54). Asked for beside ws_cross_tile, refused by name (another layout than gluon_wsz is refused
    before this, with the other z-producer tunables)."""
    if first_z and cross_tile:
        raise ValueError(f"tuning: {TUNING_OP}.ws_first_z has consumer 1 compute its first tile's z beside the z "
                         f"producer: it needs layout gluon_wsz and not ws_cross_tile, got layout {layout}, "
                         f"ws_cross_tile={cross_tile}")
    return bool(first_z)


def _ws_b1_mma(layout, schedule, b1_mma, block_e):
    """launch_ws's b1_mma for a b1_mma tunable (None: on where it was measured and GPU-tested, gluon_wsz on the pingpong
    schedule at 64 hidden columns a chunk; session 32, H200 sweep CLI, N=512: bf16 0.4097 -> 0.3957 ms, fp16 0.4083 ->
    0.3884, N=64 level; the tail schedule takes it the same way. Narrower chunks run it when asked for by name)."""
    if b1_mma is None:
        return layout == "gluon_wsz" and _ws_pingpong(layout, schedule) in (1, 3) and block_e == 64
    return bool(b1_mma)


@functools.lru_cache(maxsize=None)
def _candidate_configs(channels, hidden_width, dot_mode, training, small=0):
    """The configs a shape tries in order, computed once per shape: the Gluon tile where _GLUON_CONFIGS has one
    (_SMALL_GLUON_CONFIGS's for the call's size class `small` (0 large, 1 small, 2 tiny), or for the next class down
    that has one; its block_e halved until it divides the hidden width; behind a warp-specialised one the Gluon
    kernel's tile _GLUON_TILE), then the Triton default (_default_config,
    always present and the base tuning overrides start from), then the smaller Triton fallbacks that divide the hidden
    width."""
    configs = []
    family = "half" if dot_mode in ("bf16", "fp16") else dot_mode
    gluon_config = next((_SMALL_GLUON_CONFIGS[family, training, size] for size in range(int(small), 0, -1)
                         if (family, training, size) in _SMALL_GLUON_CONFIGS), None) \
        or _GLUON_CONFIGS.get((family, training))
    if gluon_config is not None and _cheri_gluon.available():
        # the warp-specialised kernel keeps the Gluon kernel's tile behind it, for shapes it does not take
        for block_l, block_e, num_warps, num_stages, layout, max_registers in (
                (gluon_config, _GLUON_TILE) if gluon_config[4] in _WS_CONSUMERS else (gluon_config, )):
            while block_e > 16 and hidden_width % block_e:
                block_e //= 2
            configs.append((block_l, block_e, num_warps, num_stages, layout, max_registers))
    configs.append(_default_config(channels, hidden_width, dot_mode, training, small))
    return tuple(configs + [c for c in _FALLBACK_CONFIGS if hidden_width % c[1] == 0])


# The fused kernels launch through FastLaunch (greyhound/_launch.py): one launcher per kernel, so layouts that share
# a kernel ("lc" and "split") share its launcher.
_LAUNCHERS = {kernel: FastLaunch(kernel) for kernel in set(_KERNELS.values())}
_RUN_KERNELS = {layout: _LAUNCHERS[kernel] for layout, kernel in _KERNELS.items()}


class _Plan(NamedTuple):
    """How run_fused launches one shape: the layout, the Triton kernel's launcher with its grid bound (None for the
    Gluon kernels), and its keyword arguments (constexprs and launch options; a Gluon launcher's tile parameters)."""
    layout: str
    launch: object
    kwargs: dict
    hidden_dtype: torch.dtype
    z_dtype: torch.dtype


# Launch plans of the untuned default path, by (x.shape, dtype, device, E, K, dot mode, training, dilation): a repeated
# call skips the candidate walk and rebuilds no keyword dictionaries (a small-N call's host time is its cost).
_plans = {}
# Plans of calls that ask for something (a tuning variant, a config, a gelu), by what they ask for: the variant's
# repeated calls launch as directly as the default's, so a sweep times both behind the same host path (session 51:
# the variants' N=64 samples were often bimodal beside clean defaults, likely the host falling behind the GPU while it
# walked the refusals and _make_plan on every call). Never read by a call that asks for nothing.
_variant_plans = {}
_MAX_PLANS = 256


def _make_plan(candidate, x, hidden_width, kernel_size, mode, training, dilation, gelu):
    block_l, block_e, num_warps, num_stages, layout, max_registers = candidate
    batch, channels, length = x.shape
    saved_dtype = hidden_dtype(x.dtype, mode)
    w1_stages = _tuning.get(TUNING_OP, "w1_stages")
    z_regs = _tuning.get(TUNING_OP, "z_regs")
    loop = _tuning.get(TUNING_OP, "loop")
    for name, value in (("w1_stages", w1_stages), ("loop", loop)):
        if layout != "gluon" and value is not None:  # a variant would otherwise time a kernel it does not apply to
            raise ValueError(f"tuning: {TUNING_OP}.{name} applies to the gluon layout only; this call runs layout "
                             f"{layout}")
    if z_regs is not None and layout not in _GLUON_LAYOUTS:
        raise ValueError(f"tuning: {TUNING_OP}.z_regs applies to the gluon layouts only (gluon, gluon_ws, gluon_ws3, "
                         f"gluon_wsz); this call runs layout {layout}")
    ws_pipeline = _tuning.get(TUNING_OP, "ws_pipeline")
    ws_schedule = _tuning.get(TUNING_OP, "ws_schedule")  # (its value checked by run_fused, before any candidate)
    b1_mma = _tuning.get(TUNING_OP, "b1_mma")
    ws_thread_release = _tuning.get(TUNING_OP, "ws_thread_release")
    ws_producer_regs = _tuning.get(TUNING_OP, "ws_producer_regs")
    ws_balance = _tuning.get(TUNING_OP, "ws_balance")
    ws_late_residual = _tuning.get(TUNING_OP, "ws_late_residual")
    ws_x_prefetch = _tuning.get(TUNING_OP, "ws_x_prefetch")
    ws_conv_smem = _tuning.get(TUNING_OP, "ws_conv_smem")
    ws_conv_regs = _tuning.get(TUNING_OP, "ws_conv_regs")
    ws_x_shuffle = _tuning.get(TUNING_OP, "ws_x_shuffle")
    ws_split_ring = _tuning.get(TUNING_OP, "ws_split_ring")
    ws_cross_tile = _tuning.get(TUNING_OP, "ws_cross_tile")
    ws_epilogue16 = _tuning.get(TUNING_OP, "ws_epilogue16")
    ws_bf16_shifts = _tuning.get(TUNING_OP, "ws_bf16_shifts")
    ws_first_z = _tuning.get(TUNING_OP, "ws_first_z")
    for name, value in (("b1_mma", b1_mma), ("ws_x_prefetch", ws_x_prefetch), ("ws_conv_smem", ws_conv_smem),
                        ("ws_conv_regs", ws_conv_regs), ("ws_x_shuffle", ws_x_shuffle), ("ws_split_ring", ws_split_ring),
                        ("ws_cross_tile", ws_cross_tile), ("ws_epilogue16", ws_epilogue16),
                        ("ws_bf16_shifts", ws_bf16_shifts), ("ws_first_z", ws_first_z)):
        if value is not None and layout != "gluon_wsz":
            raise ValueError(f"tuning: {TUNING_OP}.{name} applies to the gluon_wsz layout only; this call runs layout "
                             f"{layout}")
    if ws_conv_regs and ws_conv_smem:
        raise ValueError(f"tuning: {TUNING_OP}.ws_conv_regs keeps the conv's taps in the z producer's registers: not "
                         f"with ws_conv_smem=True (the taps in shared memory)")
    if ws_x_shuffle:
        why_not = _cheri_gluon.x_shuffle_refusal(x.dtype, channels, kernel_size, dilation)
        if why_not is not None:
            raise ValueError(f"tuning: {TUNING_OP}.ws_x_shuffle cannot run this call: {why_not}")
    if ws_x_prefetch is not None and not 0 <= ws_x_prefetch <= 8:
        raise ValueError(f"tuning: {TUNING_OP}.ws_x_prefetch is a number of groups ahead in [0, 8] (0: none; not "
                         f"set: 1 for a bf16 model on the ping-pong schedule whose conv taps are not shuffled, else "
                         f"none), got {ws_x_prefetch}")
    for name, value in (("ws_pipeline", ws_pipeline), ("ws_schedule", ws_schedule),
                        ("ws_thread_release", ws_thread_release), ("ws_balance", ws_balance),
                        ("ws_late_residual", ws_late_residual), ("ws_producer_regs", ws_producer_regs)):
        if value is not None and layout not in _WS_CONSUMERS:
            raise ValueError(f"tuning: {TUNING_OP}.{name} applies to the gluon_ws, gluon_ws3 and gluon_wsz layouts "
                             f"only; this call runs layout {layout}")
    for name, value in (("ws_split_ring", ws_split_ring), ("ws_cross_tile", ws_cross_tile),
                        ("ws_epilogue16", ws_epilogue16)):
        if value and _ws_pingpong(layout, ws_schedule) != 1:
            raise ValueError(f"tuning: {TUNING_OP}.{name} applies to the pingpong schedule only; this call runs "
                             f"ws_schedule={ws_schedule}")
    if ws_cross_tile and (ws_split_ring or z_regs):
        raise ValueError(f"tuning: {TUNING_OP}.ws_cross_tile runs with one weight ring and z from shared memory: not "
                         f"with ws_split_ring or z_regs")
    if ws_epilogue16 and (ws_cross_tile or ws_late_residual or x.element_size() != 2):
        raise ValueError(f"tuning: {TUNING_OP}.ws_epilogue16 adds the residual loaded before the tile's last GEMM to "
                         f"a 16-bit output: not with ws_cross_tile or ws_late_residual=True, and x of a 16-bit type; "
                         f"got ws_cross_tile={ws_cross_tile}, ws_late_residual={ws_late_residual}, x of {x.dtype}")
    if ws_late_residual is not None and layout in _WS_CONSUMERS and _ws_pingpong(layout, ws_schedule) not in (1, 2):
        raise ValueError(f"tuning: {TUNING_OP}.ws_late_residual applies to the pingpong and turns schedules only; this "
                         f"call runs ws_schedule={ws_schedule or 'chunk'}")
    if z_regs and mode not in ("bf16", "fp16"):
        raise ValueError(f"tuning: {TUNING_OP}.z_regs applies to bf16/fp16 dots only; this call runs {mode} dots")
    if loop and (num_stages < 3 or w1_stages not in (None, num_stages)):
        raise ValueError(f"tuning: {TUNING_OP}.loop needs stages >= 3 and w1_stages equal to it (one ring depth), "
                         f"got stages={num_stages}, w1_stages={w1_stages}")
    if z_regs is None:  # on where it applies and paid (docs/perf/cheri_block.md, session 25): level or slower at 64
        # hidden columns a chunk, 2.6-4.6% faster at 32 (the Gluon kernel; off in the warp-specialised ones)
        z_regs = layout == "gluon" and mode in ("bf16", "fp16") and block_e <= 32
    if layout in _GLUON_LAYOUTS:
        kwargs = {"block_l": block_l, "block_e": block_e, "num_warps": num_warps, "stages": num_stages}
        if layout in _WS_CONSUMERS:
            pingpong = _ws_pingpong(layout, ws_schedule)
            b1_by_mma = _ws_b1_mma(layout, ws_schedule, b1_mma, block_e)
            x_shuffle = _ws_x_shuffle(layout, ws_schedule, mode, x.dtype, ws_x_shuffle, channels, kernel_size,
                                      dilation)
            conv_taps = _ws_conv_taps(layout, ws_schedule, mode, x.dtype, ws_conv_smem, kernel_size, num_stages,
                                      block_e, channels, hidden_width, block_l, b1_by_mma, x_shuffle, ws_conv_regs)
            split_ring, epilogue16 = _ws_ring_and_epilogue(layout, ws_schedule, mode, x_shuffle, ws_split_ring,
                                                           ws_epilogue16, ws_cross_tile, ws_late_residual)
            consumer_regs, producer_regs = _ws_registers(layout, ws_schedule, mode, x.dtype, x_shuffle, split_ring,
                                                         epilogue16, max_registers, ws_producer_regs)
            kwargs.update(consumer_regs=consumer_regs, consumers=_WS_CONSUMERS[layout], pipeline=bool(ws_pipeline),
                          z_producer=layout == "gluon_wsz", z_regs=bool(z_regs), gelu=gelu, pingpong=pingpong,
                          b1_mma=b1_by_mma, thread_release=bool(ws_thread_release),
                          balance=_ws_balance(layout, ws_schedule, ws_balance),
                          late_residual=_ws_late_residual(layout, ws_schedule, mode, ws_late_residual,
                                                          bool(ws_cross_tile), epilogue16),
                          x_prefetch=_ws_x_prefetch(layout, ws_schedule, mode, x.dtype, ws_x_prefetch, x_shuffle),
                          conv_smem=bool(conv_taps), x_shuffle=x_shuffle, split_ring=split_ring,
                          cross_tile=bool(ws_cross_tile), epilogue16=epilogue16, producer_regs=producer_regs,
                          conv_regs=bool(ws_conv_regs),
                          bf16_shifts=_ws_bf16_shifts(x.dtype, x_shuffle, ws_bf16_shifts),
                          first_z=_ws_first_z(layout, bool(ws_cross_tile), ws_first_z))
        else:
            kwargs["max_registers"] = max_registers
            kwargs["w1_stages"] = w1_stages
            kwargs["z_regs"] = bool(z_regs)
            kwargs["loop"] = bool(loop)
        return _Plan(layout, None, kwargs, saved_dtype, None)  # launched through _cheri_gluon's module functions
    interpreting = x.device.type == "cpu"
    kwargs = {"C": channels, "HIDDEN": hidden_width, "KERNEL_SIZE": kernel_size, "DILATION": dilation,
              "EVEN_L": length % block_l == 0, "DOT_MODE": _DOT_MODE_CODES[mode], "TRAINING": training,
              "GELU_VARIANT": GELU_VARIANTS[gelu], "EMULATE_DOT": interpreting, "Z_PRECOMPUTED": layout == "split",
              "BLOCK_L": block_l, "BLOCK_C": _channel_block(channels), "BLOCK_E": block_e,
              "num_warps": num_warps, "num_stages": num_stages}
    if max_registers is not None and not interpreting:
        kwargs["maxnreg"] = max_registers
    return _Plan(layout, _RUN_KERNELS[layout][(batch * cdiv(length, block_l),)], kwargs, saved_dtype,
                 _Z_DTYPES.get(mode, torch.float32))


def _stat_buffers(x):
    """The LayerNorm statistics a training forward saves: mean and rstd, (N, L) fp32 each, unwritten."""
    batch, _, length = x.shape
    return (torch.empty((batch, length), device=x.device, dtype=torch.float32),
            torch.empty((batch, length), device=x.device, dtype=torch.float32))


def _run_plan(plan, x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_bias, fc2_bias, mlp_weights, dilation, eps,
              training):
    batch, _, length = x.shape
    out = torch.empty_like(x)
    fc1_hi, fc2_hi = mlp_weights.fc1_hi, mlp_weights.fc2_hi
    if plan.launch is None:  # a Gluon kernel
        if plan.layout != "gluon":  # the warp-specialised ones: inference only
            _cheri_gluon.launch_ws(x, out, conv_weight, conv_bias, norm_weight, norm_bias, fc1_hi, fc1_bias, fc2_hi,
                                   fc2_bias, dilation, eps, **plan.kwargs)
            return out
        saved = None
        if training:
            saved = (torch.empty((batch, length, fc1_hi.shape[0]), device=x.device, dtype=plan.hidden_dtype),
                     *_stat_buffers(x))
        _cheri_gluon.launch(x, out, conv_weight, conv_bias, norm_weight, norm_bias, fc1_hi, fc1_bias, fc2_hi, fc2_bias,
                            dilation, eps, fc1_lo=mlp_weights.fc1_lo, fc2_lo=mlp_weights.fc2_lo, saved=saved,
                            **plan.kwargs)
        return (out, *saved) if training else out
    hidden = mean = rstd = z = out  # never touched: TRAINING and Z_PRECOMPUTED are compile-time switches
    if training:
        hidden = torch.empty((batch, length, fc1_hi.shape[0]), device=x.device, dtype=plan.hidden_dtype)
    if plan.layout == "split":  # z (and the statistics) from the conv + LayerNorm kernel
        z, split_mean, split_rstd = _conv_norm_forward(x, conv_weight, conv_bias, norm_weight, norm_bias, dilation,
                                                       eps, save_stats=training, z_dtype=plan.z_dtype)
        if training:
            mean, rstd = split_mean, split_rstd
    elif training:
        mean, rstd = _stat_buffers(x)
    fc1_lo = fc1_hi if mlp_weights.fc1_lo is None else mlp_weights.fc1_lo
    fc2_lo = fc2_hi if mlp_weights.fc2_lo is None else mlp_weights.fc2_lo
    plan.launch(x, out, hidden, mean, rstd, conv_weight, conv_bias, norm_weight, norm_bias, fc1_hi, fc1_lo, fc1_bias,
                fc2_hi, fc2_lo, fc2_bias, z, length, eps, **plan.kwargs)
    return (out, hidden, mean, rstd) if training else out


def run_fused(x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_bias, fc2_bias, mlp_weights, dilation, eps,
              training=False, config=None, gelu="poly"):
    """The fused kernel without argument checks (callers own validated parameters).

    Returns out, or (out, hidden (N, L, E), mean (N, L), rstd (N, L)) with training. `config` = (BLOCK_L,
    BLOCK_E, num_warps, num_stages[, layout[, maxnreg]]) overrides the tuned choice; `gelu` picks a GELU_VARIANTS
    entry. Tuning overrides (greyhound._tuning, op "cheri_block") replace single fields of whichever config
    applies, and the gelu. The default path's choice is kept per shape (_plans), a variant's per shape and what it asks
    for (_variant_plans), so a repeated call launches directly."""
    x = x.contiguous()  # the kernel derives every stride from the shapes
    conv_weight, conv_bias, norm_weight, norm_bias, fc1_bias, fc2_bias = (
        t.contiguous() for t in (conv_weight, conv_bias, norm_weight, norm_bias, fc1_bias, fc2_bias))
    hidden_width, kernel_size, mode = mlp_weights.fc1_hi.shape[0], conv_weight.shape[2], mlp_weights.mode
    tuning = _tuning.forced(TUNING_OP)  # {} outside a tuning override
    plan_key = variant_key = None
    shape_key = (x.shape, x.dtype, x.device, hidden_width, kernel_size, mode, training, dilation)
    if config is None and gelu == "poly" and not tuning:
        plan_key = shape_key
        plan = _plans.get(plan_key)
    else:  # a tuning variant, a config or a gelu asked for: its own plan, never the shape's
        variant_key = (shape_key, None if config is None else tuple(config), gelu, tuple(sorted(tuning.items())))
        plan = _variant_plans.get(variant_key)
    if plan is not None:
        return _run_plan(plan, x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_bias, fc2_bias, mlp_weights,
                         dilation, eps, training)
    batch, channels, length = x.shape
    if x.numel() == 0:
        out = torch.empty_like(x)
        if not training:
            return out
        return (out, x.new_empty((batch, length, hidden_width), dtype=hidden_dtype(x.dtype, mode)),
                *(torch.zeros((batch, length), device=x.device) for _ in range(2)))
    if x.device.type == "cpu" and config is None:  # the interpreter: few, mid-sized tiles run fastest
        config = (32, next(b for b in (64, 32, 16) if hidden_width % b == 0), 4, 1, "lc", None)
    user_config = config is not None and plan_key is None  # the interpreter's tile is its default, not a request
    rows = batch * length  # the size class (see _candidate_configs): 0 large, 1 small, 2 tiny
    small = int(rows <= (_SMALL_TRAINING_ROWS if training else _SMALL_INFERENCE_ROWS)) + int(
        not training and rows <= _TINY_INFERENCE_ROWS)
    key = (channels, hidden_width, kernel_size, mode, training, small, x.dtype, x.device)
    shape_candidates = _candidate_configs(channels, hidden_width, mode, training, small)
    if config is not None:
        config = (tuple(config) + ("lc", None)[len(config) - 4:])[:6]
    forced = None
    if tuning:
        default = next(c for c in shape_candidates if c[4] not in _GLUON_LAYOUTS)
        forced = _forced_config(default if config is None else config, hidden_width, tuning)
    if forced is not None:  # a tuning variant: exactly this config, never remembered as the shape's choice
        candidates, config = [forced], forced
    elif config is not None:
        candidates = [config]
    elif key in _chosen_configs and _chosen_configs[key][4] not in _GLUON_LAYOUTS:
        candidates = [_chosen_configs[key]]
    else:  # a Gluon choice keeps the Triton kernels behind it (e.g. for a forced gelu, which it does not run)
        candidates = shape_candidates
    tuned_gelu = tuning.get("gelu")
    if tuned_gelu is not None:
        if tuned_gelu not in ("poly", "erf", "tanh", "poly3", "poly2"):  # "none" is wrong on purpose: no gate
            # would pass it
            raise ValueError(f"tuning: {TUNING_OP}.gelu must be poly, erf, tanh, poly3 or poly2, got {tuned_gelu!r}")
        gelu = tuned_gelu
    if tuning.get("ws_producer_regs") is not None:
        why_not = _cheri_gluon.producer_regs_refusal(tuning["ws_producer_regs"])
        if why_not is not None:
            raise ValueError(f"tuning: {TUNING_OP}.ws_producer_regs: {why_not}")
    if tuning.get("ws_schedule", "chunk") not in _WS_SCHEDULES:
        raise ValueError(f"tuning: {TUNING_OP}.ws_schedule must be one of {', '.join(_WS_SCHEDULES)}, got "
                         f"{tuning['ws_schedule']!r}")
    for i, candidate in enumerate(candidates):
        block_l, block_e, num_warps, num_stages, layout, max_registers = candidate
        last = i + 1 == len(candidates)
        gelu_of = gelu  # the default GELU of gluon_wsz is a shorter fit, by dots (a forced gelu stays as forced)
        if layout == "gluon_wsz" and gelu == "poly" and tuned_gelu is None:
            gelu_of = _WSZ_DEFAULT_GELU.get(mode, gelu)
        if gelu_of in ("poly3", "poly2") and layout not in _WS_CONSUMERS:
            if config is not None or last:
                raise ValueError(f"tuning: {TUNING_OP}.gelu={gelu_of} (a shorter GELU fit) runs in the warp-specialised "
                                 f"Gluon layouts only (gluon_ws, gluon_ws3, gluon_wsz); this call would run layout "
                                 f"{layout}")
            continue
        if layout in _GLUON_LAYOUTS:
            if layout == "gluon":
                unsupported = _cheri_gluon.unsupported(x, channels, hidden_width, mode, training, block_l, block_e,
                                                       num_warps, num_stages, gelu_of)
            else:
                consumers, z_producer = _WS_CONSUMERS[layout], layout == "gluon_wsz"
                schedule = tuning.get("ws_schedule")
                b1_by_mma = _ws_b1_mma(layout, schedule, tuning.get("b1_mma"), block_e)
                unsupported = _cheri_gluon.unsupported_ws(
                    x, channels, hidden_width, mode, training, block_l, block_e, num_warps, num_stages, gelu_of,
                    consumers, max_registers or _cheri_gluon.default_consumer_regs(consumers, z_producer),
                    bool(tuning.get("ws_pipeline")), z_producer, _ws_pingpong(layout, schedule), b1_by_mma,
                    _ws_balance(layout, schedule, tuning.get("ws_balance")),
                    _ws_conv_taps(layout, schedule, mode, x.dtype, tuning.get("ws_conv_smem"), kernel_size,
                                  num_stages, block_e, channels, hidden_width, block_l, b1_by_mma,
                                  _ws_x_shuffle(layout, schedule, mode, x.dtype, tuning.get("ws_x_shuffle"),
                                                channels, kernel_size, dilation), tuning.get("ws_conv_regs")),
                    tuning.get("ws_producer_regs") or _cheri_gluon._PRODUCER_REGS)
            if unsupported is not None:
                if config is not None:
                    raise ValueError(f"layout {layout} does not apply here: {unsupported}")
                continue
        plan = _make_plan(candidate, x, hidden_width, kernel_size, mode, training, dilation, gelu_of)
        try:
            result = _run_plan(plan, x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_bias, fc2_bias,
                               mlp_weights, dilation, eps, training)
        except OutOfResources:  # shared memory: this shape needs a smaller tile (decided once per shape)
            if last:
                raise
            continue
        except Exception as error:  # a Gluon API this Triton lacks, or resources: the next candidate runs
            if plan.launch is not None or config is not None or last:
                raise
            _cheri_gluon.warn_fallback(error)
            continue
        if not user_config and forced is None and tuned_gelu is None:  # tuning variants are never the choice
            if config is None:
                _chosen_configs[key] = candidate
        for plans, at in ((_plans, plan_key), (_variant_plans, variant_key)):
            if at is not None:
                if len(plans) >= _MAX_PLANS:  # many shapes (e.g. a length per batch): the oldest plan goes
                    plans.pop(next(iter(plans)))
                plans[at] = plan
        return result
    # never reached with a Triton candidate last (it raises instead); kept so no path returns `out` unwritten
    raise RuntimeError(f"no fused Cheri Block kernel ran for {tuple(x.shape)} (candidates {candidates})")


def _forced_config(base, hidden_width, tuning):
    """`base` (BLOCK_L, BLOCK_E, num_warps, num_stages, layout, maxnreg) with the fields the tuning override `tuning`
    ({name: value}) forces, checked; None when it forces none of them."""
    values = {name: tuning.get(name) for name in _FUSED_TUNABLES}
    if all(value is None for value in values.values()):
        return None
    if values["layout"] not in (None, base[4]) and values["maxnreg"] is None:
        values["maxnreg"] = 0  # another layout's register cap is not this one's (it silently starved the Gluon kernel)
    config = tuple(base[i] if values[name] is None else values[name] for i, name in enumerate(_FUSED_TUNABLES))
    config = config[:5] + (config[5] or None,)
    block_l, block_e, num_warps, _, layout, maxnreg = config  # (tuning.parse: positive ints)
    if num_warps > 32 or num_warps & (num_warps - 1):
        raise ValueError(f"tuning: {TUNING_OP}.warps must be a power of 2 in [1, 32] (num_warps), got {num_warps!r}")
    if maxnreg is not None and not 16 <= maxnreg <= 255:
        raise ValueError(f"tuning: {TUNING_OP}.maxnreg must be in [16, 255] registers a thread, got {maxnreg!r}")
    if block_l < 16 or block_l & (block_l - 1):
        raise ValueError(f"tuning: {TUNING_OP}.block_l must be a power of 2 >= 16, got {block_l}")
    if block_e < 16 or block_e & (block_e - 1) or hidden_width % block_e:
        raise ValueError(f"tuning: {TUNING_OP}.block_e must be a power of 2 >= 16 dividing the hidden width "
                         f"{hidden_width}, got {block_e}")
    if layout not in _LAYOUTS:
        raise ValueError(f"tuning: {TUNING_OP}.layout must be one of {', '.join(_LAYOUTS)}, got {layout!r}")
    return config


def cheri_block_megakernel(x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_weight, fc1_bias, fc2_weight,
                           fc2_bias, *, dilation=1, eps=1e-5, mlp_weights=None, fp32_dot="bf16x3", config=None):
    """The inference path: conv, LayerNorm, MLP and residual of the Cheri Block in one Triton kernel (no autograd).

    Needs the hidden width E = fc1_weight.shape[0] to be a multiple of 16. `mlp_weights` is a cached
    `prepare_mlp_weights(...)`; without it the cast happens here, every call. `config` = (BLOCK_L, BLOCK_E,
    num_warps, num_stages[, layout "lc", "cl" or "split"]) overrides the tuned tile choice (benchmark variants).
    Output: x's dtype, shape and device."""
    dilation = _check_conv_norm_args(x, conv_weight, conv_bias, norm_weight, norm_bias, dilation, eps)
    _check_mlp_args(x, fc1_weight, fc1_bias, fc2_weight, fc2_bias)
    hidden_width = fc1_weight.shape[0]
    if hidden_width % 16:
        raise ValueError(f"the megakernel needs a hidden width (fc1_weight.shape[0]) that is a multiple of 16, "
                         f"got {hidden_width}; use cheri_block_forward")
    if mlp_weights is None:
        mlp_weights = prepare_mlp_weights(fc1_weight, fc2_weight, fp32_dot)
    elif mlp_weights.mode != mlp_dot_mode(x.dtype, fp32_dot) or mlp_weights.fc1_hi.shape != fc1_weight.shape:
        raise ValueError(f"mlp_weights must be prepare_mlp_weights(...) for a {x.dtype} model with fp32_dot="
                         f"{fp32_dot!r} (mode {mlp_dot_mode(x.dtype, fp32_dot)!r}, fc1 {tuple(fc1_weight.shape)}), "
                         f"got mode {mlp_weights.mode!r}, fc1 {tuple(mlp_weights.fc1_hi.shape)}")
    for name in ("fc1_hi", "fc1_lo", "fc2_hi", "fc2_lo"):
        part = getattr(mlp_weights, name)
        if part is not None:
            check_tensor(f"mlp_weights.{name}", part, dtypes=(dot_dtype(mlp_weights.mode),), like=x)
            if part.shape != getattr(mlp_weights, name[:3] + "_hi").shape or not part.is_contiguous():
                raise ValueError(f"mlp_weights.{name} must be contiguous and match the hi part's shape")
    _check_config(config, hidden_width)
    return run_megakernel(x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_bias, fc2_bias, mlp_weights,
                          dilation, eps, config)


def _check_config(config, hidden_width, lengths=(4, 5)):
    """A public entry point's `config` (None, or (BLOCK_L, BLOCK_E, num_warps, num_stages[, layout[, max_registers]])
    with `lengths` entries): BLOCK_L and BLOCK_E powers of 2 >= 16, BLOCK_E dividing the hidden width, num_warps a
    power of 2 up to 16, num_stages >= 1, a known layout, max_registers (the training forward's) None or >= 1. What a
    layout refuses beyond that (its own tile limits) it names itself."""
    if config is None:
        return
    shape = "(BLOCK_L, BLOCK_E, num_warps, num_stages[, layout" + (", max_registers" if 6 in lengths else "") \
        + f"]) with layout in {list(_LAYOUTS)}"
    if not isinstance(config, (tuple, list)) or len(config) not in lengths:
        raise ValueError(f"config must be None or {shape}, got {config!r}")
    block_l, block_e, num_warps, num_stages = config[:4]
    for name, value in (("BLOCK_L", block_l), ("BLOCK_E", block_e)):
        if not is_int(value) or value < 16 or value & (value - 1):
            raise ValueError(f"config's {name} must be a power of 2 >= 16, got {value!r} in config={config!r}")
    if hidden_width % block_e:
        raise ValueError(f"config's BLOCK_E must divide the hidden width {hidden_width}, got {block_e} in "
                         f"config={config!r}")
    if not is_int(num_warps) or num_warps not in (1, 2, 4, 8, 16):
        raise ValueError(f"config's num_warps must be 1, 2, 4, 8 or 16, got {num_warps!r} in config={config!r}")
    if not is_int(num_stages) or num_stages < 1:
        raise ValueError(f"config's num_stages must be a positive int, got {num_stages!r} in config={config!r}")
    if len(config) > 4 and (not isinstance(config[4], str) or config[4] not in _LAYOUTS):
        raise ValueError(f"config's layout must be one of {list(_LAYOUTS)}, got {config[4]!r} in config={config!r}")
    if len(config) > 5 and config[5] is not None and (not is_int(config[5]) or config[5] < 1):
        raise ValueError(f"config's max_registers must be None or a positive int, got {config[5]!r} in "
                         f"config={config!r}")


def run_megakernel(x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_bias, fc2_bias, mlp_weights, dilation,
                   eps, config=None):
    """cheri_block_megakernel without argument checks, for callers that own validated parameters (CheriBlock):
    at small N the Python around the launch is a visible part of the call."""
    if not _uses_triton(x):
        return _megakernel_eager(x, conv_weight, conv_bias, norm_weight, norm_bias, mlp_weights, fc1_bias, fc2_bias,
                                 dilation, eps)
    return _run_inference(x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_bias, fc2_bias, mlp_weights,
                          dilation, eps, config)


def _run_inference(x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_bias, fc2_bias, mlp_weights, dilation,
                   eps, config):
    """run_fused without training: directly in eager (a registered op's dispatch costs ~15 us, a visible part of a
    small-N call), through greyhound::cheri_block_megakernel while torch.compile traces."""
    if torch.compiler.is_compiling():
        return _cheri_block_megakernel_op(
            x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_bias, fc2_bias, mlp_weights.fc1_hi,
            mlp_weights.fc1_lo, mlp_weights.fc2_hi, mlp_weights.fc2_lo, _DOT_MODE_CODES[mlp_weights.mode], dilation,
            float(eps), _config_codes(config))
    return run_fused(x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_bias, fc2_bias, mlp_weights, dilation,
                     eps, config=config)


# Ops take ints: a dot mode is its _DOT_MODE_CODES value; a tile config (BLOCK_L, BLOCK_E, num_warps, num_stages[,
# layout[, maxnreg]]) is [BLOCK_L, BLOCK_E, num_warps, num_stages, layout index in _LAYOUTS, maxnreg or 0], and
# None is [].
_DOT_MODES = {code: mode for mode, code in _DOT_MODE_CODES.items()}


def _config_codes(config):
    if config is None:
        return []
    full = (tuple(config) + ("lc", None)[len(config) - 4:])[:6]
    block_l, block_e, num_warps, num_stages, layout, max_registers = full
    return [int(block_l), int(block_e), int(num_warps), int(num_stages), _LAYOUTS.index(layout),
            int(max_registers or 0)]


def _config_from_codes(codes):
    if not codes:
        return None
    block_l, block_e, num_warps, num_stages, layout, max_registers = codes
    return block_l, block_e, num_warps, num_stages, _LAYOUTS[layout], max_registers or None


@torch.library.custom_op("greyhound::cheri_block_megakernel", mutates_args=())
def _cheri_block_megakernel_op(x: torch.Tensor, conv_weight: torch.Tensor, conv_bias: torch.Tensor,
                               norm_weight: torch.Tensor, norm_bias: torch.Tensor, fc1_bias: torch.Tensor,
                               fc2_bias: torch.Tensor, fc1_hi: torch.Tensor, fc1_lo: Optional[torch.Tensor],
                               fc2_hi: torch.Tensor, fc2_lo: Optional[torch.Tensor], dot_mode: int, dilation: int,
                               eps: float, config: list[int]) -> torch.Tensor:
    weights = MlpDotWeights(_DOT_MODES[dot_mode], fc1_hi, fc1_lo, fc2_hi, fc2_lo)
    return run_fused(x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_bias, fc2_bias, weights, dilation, eps,
                     config=_config_from_codes(config))


@_cheri_block_megakernel_op.register_fake
def _cheri_block_megakernel_op_fake(x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_bias, fc2_bias, fc1_hi,
                                    fc1_lo, fc2_hi, fc2_lo, dot_mode, dilation, eps, config):
    return x.new_empty(x.shape)  # run_fused writes a contiguous out


# ----------------------------------------------------------------------------------------------------------
# Training: the fused forward (saves the hidden layer and statistics) and its backward
# ----------------------------------------------------------------------------------------------------------
# Registered ops (greyhound::cheri_block_fwd / _bwd) with fake implementations and autograd, so that
# torch.compile keeps the training path in its graph (fullgraph=True).
@torch.library.custom_op("greyhound::cheri_block_fwd", mutates_args=())
def _cheri_block_fwd(x: torch.Tensor, conv_weight: torch.Tensor, conv_bias: torch.Tensor, norm_weight: torch.Tensor,
                     norm_bias: torch.Tensor, fc1_weight: torch.Tensor, fc1_bias: torch.Tensor,
                     fc2_weight: torch.Tensor, fc2_bias: torch.Tensor, dilation: int, eps: float, fp32_dot: int,
                     config: list[int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The training forward: (out, hidden (N, L, E), mean (N, L), rstd (N, L)), the fused kernel with TRAINING.
    `fp32_dot` indexes FP32_DOT_MODES; `config` as _config_codes writes it."""
    weights = _mlp_weights(fc1_weight, fc2_weight, FP32_DOT_MODES[fp32_dot], training=True)
    return run_fused(x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_bias, fc2_bias, weights, dilation, eps,
                     training=True, config=_config_from_codes(config))


@_cheri_block_fwd.register_fake
def _cheri_block_fwd_fake(x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_weight, fc1_bias, fc2_weight,
                          fc2_bias, dilation, eps, fp32_dot, config):
    batch, _, length = x.shape
    mode = mlp_dot_mode(fc1_weight.dtype, FP32_DOT_MODES[fp32_dot], training=True)
    return (x.new_empty(x.shape), x.new_empty((batch, length, fc1_weight.shape[0]), dtype=hidden_dtype(x.dtype, mode)),
            x.new_empty((batch, length), dtype=torch.float32), x.new_empty((batch, length), dtype=torch.float32))


@torch.library.custom_op("greyhound::cheri_block_bwd", mutates_args=())
def _cheri_block_bwd(grad_out: torch.Tensor, x: torch.Tensor, conv_weight: torch.Tensor, conv_bias: torch.Tensor,
                     norm_weight: torch.Tensor, norm_bias: torch.Tensor, fc1_weight: torch.Tensor,
                     fc1_bias: torch.Tensor, fc2_weight: torch.Tensor, fc2_bias: torch.Tensor, hidden: torch.Tensor,
                     mean: torch.Tensor, rstd: torch.Tensor, dilation: int, eps: float,
                     needs_grad: list[bool]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor,
                                                      torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor,
                                                      torch.Tensor]:
    """Gradients of (x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_weight, fc1_bias, fc2_weight, fc2_bias),
    each contiguous in its input's dtype; a 0-element tensor where `needs_grad` says none. For rows r = (n, l) of
    the (N*L, .) layouts: dW2 = dout^T h, dh = dout W2, u = z W1^T + b1 recomputed (z from the conv + LayerNorm
    kernel), du = GELU'(u) dh (aten's exact-erf gelu_backward), dW1 = du^T z, dz = du W1, then the conv +
    LayerNorm backward, which also adds the residual's dout to dx. GEMMs are cuBLAS in the model dtype (fp32
    follows torch's allow_tf32 setting)."""
    batch, channels, length = x.shape
    rows, hidden_width = batch * length, fc1_weight.shape[0]
    grad_rows = grad_out.transpose(1, 2).reshape(rows, channels)  # one copy: (N, C, L) -> (N*L, C)
    hidden_rows = hidden.view(rows, hidden_width)
    grad_fc2_weight = grad_rows.t() @ hidden_rows if needs_grad[7] else None
    grad_fc2_bias = grad_rows.sum(0) if needs_grad[8] else None
    del hidden_rows
    grad_hidden = grad_rows @ fc2_weight
    del grad_rows
    z, _, _ = _conv_norm_forward(x, conv_weight, conv_bias, norm_weight, norm_bias, dilation, eps, save_stats=False)
    z = z.view(rows, channels)
    pre_act = torch.addmm(fc1_bias, z, fc1_weight.t())
    grad_pre = torch.ops.aten.gelu_backward(grad_hidden, pre_act)  # exact erf form
    del grad_hidden, pre_act
    grad_fc1_weight = grad_pre.t() @ z if needs_grad[5] else None
    grad_fc1_bias = grad_pre.sum(0) if needs_grad[6] else None
    grad_z = grad_pre @ fc1_weight
    del grad_pre, z
    dx, dconv_w, dconv_b, dgamma, dbeta = _conv_norm_backward(
        grad_z.view(batch, length, channels), x, conv_weight, conv_bias, norm_weight, mean, rstd, dilation,
        residual_grad=grad_out, grad_dtypes=(conv_weight.dtype, conv_bias.dtype, norm_weight.dtype, norm_bias.dtype))
    grads = (dx, dconv_w, dconv_b, dgamma, dbeta, grad_fc1_weight, grad_fc1_bias, grad_fc2_weight, grad_fc2_bias)
    return tuple(g if need else x.new_empty(0) for g, need in zip(grads, needs_grad))


@_cheri_block_bwd.register_fake
def _cheri_block_bwd_fake(grad_out, x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_weight, fc1_bias,
                          fc2_weight, fc2_bias, hidden, mean, rstd, dilation, eps, needs_grad):
    params = (x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_weight, fc1_bias, fc2_weight, fc2_bias)
    return tuple(p.new_empty(p.shape) if need else x.new_empty(0) for p, need in zip(params, needs_grad))


def _cheri_block_setup_context(ctx, inputs, output):
    x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_weight, fc1_bias, fc2_weight, fc2_bias, dilation, eps, \
        _, _ = inputs
    _, hidden, mean, rstd = output
    ctx.save_for_backward(x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_weight, fc1_bias, fc2_weight,
                          fc2_bias, hidden, mean, rstd)
    ctx.dilation, ctx.eps = dilation, eps
    ctx.mark_non_differentiable(hidden, mean, rstd)
    # Otherwise autograd hands the backward a zero-filled gradient of `hidden` (N, L, E): asv on the H200 measured
    # the training step's peak memory 22% higher and its time 2-5% slower than the autograd.Function it replaced.
    ctx.set_materialize_grads(False)


def _cheri_block_backward(ctx, grad_out, _grad_hidden, _grad_mean, _grad_rstd, eager=False):
    if grad_out is None:
        return (None,) * 13
    needs = list(ctx.needs_input_grad[:9])
    grads = _library.run(_cheri_block_bwd, eager, grad_out, *ctx.saved_tensors, ctx.dilation, ctx.eps, needs)
    return (*(g if need else None for g, need in zip(grads, needs)), None, None, None, None)


_cheri_block_fwd.register_autograd(_cheri_block_backward, setup_context=_cheri_block_setup_context)


_cheri_block_eager = _library.twin(_cheri_block_fwd, _cheri_block_setup_context, _cheri_block_backward)


def cheri_block_forward(x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_weight, fc1_bias, fc2_weight,
                        fc2_bias, *, dilation=1, eps=1e-5, fp32_dot="bf16x3", config=None):
    """The training-forward path (differentiable in x and every parameter).

    Hidden width a multiple of 16 and a Triton device: the fused kernel (`fp32_dot` picks an fp32 model's
    operand mode; fp16 models multiply in fp16, bf16 in bf16) saving the hidden layer for a cuBLAS backward.
    Otherwise: the Triton conv + LayerNorm (with its Triton backward), then the MLP and residual in eager PyTorch."""
    dilation = _check_conv_norm_args(x, conv_weight, conv_bias, norm_weight, norm_bias, dilation, eps)
    _check_mlp_args(x, fc1_weight, fc1_bias, fc2_weight, fc2_bias)
    check_choice("fp32_dot", fp32_dot, FP32_DOT_MODES)
    _check_config(config, fc1_weight.shape[0], lengths=(4, 5, 6))
    return train_forward(x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_weight, fc1_bias, fc2_weight,
                         fc2_bias, dilation, eps, fp32_dot, config)


def train_forward(x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_weight, fc1_bias, fc2_weight, fc2_bias,
                  dilation, eps, fp32_dot="bf16x3", config=None):
    """cheri_block_forward without argument checks, for callers that own validated parameters (CheriBlock): at
    small N the Python around the launches is what a training forward costs (docs/perf/cheri_block.md)."""
    tensors = (x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_weight, fc1_bias, fc2_weight, fc2_bias)
    if fc1_weight.shape[0] % 16 == 0 and _uses_triton(x) and x.numel() > 0:
        if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
            out, _, _, _ = _library.call(_cheri_block_fwd, _cheri_block_eager, *tensors, dilation, float(eps),
                                         FP32_DOT_MODES.index(fp32_dot), _config_codes(config))
            return out
        weights = _mlp_weights(fc1_weight, fc2_weight, fp32_dot, training=True)
        return _run_inference(x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_bias, fc2_bias, weights,
                              dilation, eps, config)
    z = conv_norm(x, conv_weight, conv_bias, norm_weight, norm_bias, dilation=dilation, eps=eps)
    return mlp_residual(x, z, fc1_weight, fc1_bias, fc2_weight, fc2_bias)
