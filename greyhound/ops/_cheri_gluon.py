"""The Cheri Block megakernel for Hopper, written in Gluon (Triton's explicit-layout dialect).

Same function and numerics as `_cheri_block_kernel` in its bf16, fp16 and bf16x3 dot modes (conv + LayerNorm in fp32;
z and the hidden layer rounded once to the weights' type, or split into bf16 hi + lo with three products a GEMM for an
fp32 model's bf16x3; fp32 accumulators; the polynomial erf-GELU), for inference and, with TRAINING, as the training
forward that also saves the hidden layer and the LayerNorm statistics, but scheduled by hand so that the tensor cores
and the FP32 units work at the same time:

  * z (BLOCK_L, C) goes to shared memory once per tile and is the first GEMM's A operand from there;
  * W1/W2 chunks stream through STAGES-deep rings of shared-memory buffers by cp.async, STAGES - 1 steps ahead;
  * the hidden loop is software-pipelined: chunk j+1's first GEMM (z @ W1[j+1]^T) is issued asynchronously
    before chunk j's GELU, so the GELU's FP32 work runs under it, and chunk j's second GEMM
    (acc += GELU(.) @ W2[:, j]^T) stays in flight while the next iteration starts.

`tl.dot` in the plain Triton kernel waits for every wgmma right after issuing it (ptxas serialises them outright
under a 128-register cap), so there the GELU and the tensor cores take turns. Measured on the H200 at N=512 bf16
(asv): 0.498 ms (session 15: a cheaper GELU form, b1 from shared memory) against the Triton kernel's 0.52; what
bounds it is each program's chain of dependent latencies at two programs per SM, not the overlap
(docs/perf/cheri_block.md, sessions 13 and 15).

With LOOP (a tuning variant) the hidden chunks run as a loop instead (`_loop_step`): one CTA barrier a step and only
the output accumulator in flight across a step; it removes the unrolled kernel's instruction-cache stalls but measured
slower than the default on the H200 (docs/perf/cheri_block.md, session 27).

`cheri_block_ws_kernel` below is a warp-specialised, persistent version (layouts "gluon_ws" / "gluon_ws3", tuning
variants): two or three consumer warp groups share the weight chunks one producer warp group streams in; with
"gluon_wsz" another warp group computes every tile's conv + LayerNorm (z) ahead of its consumer.

Only for CUDA devices of compute capability 9.x with a Triton that has Gluon's Hopper API; `available()` says so
and the caller falls back to the plain Triton kernel otherwise (or when this kernel fails to compile).
"""
import torch
import triton.language

from greyhound._launch import FastLaunch, cdiv, multiprocessor_count, next_power_of_2
from greyhound.ops._gluon import async_copy, async_load as _async_load, cta_barrier as _cta_barrier, gl, gluon
from greyhound.ops._gluon import reinterpret as _reinterpret, warn_fallback as _warn_fallback, why_not_hopper

try:  # the Hopper part of Gluon's API, on top of what greyhound.ops._gluon imports
    from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, warpgroup_mma,
                                                                  warpgroup_mma_init, warpgroup_mma_wait)
    _HOPPER_ERROR = None
except Exception as error:  # pragma: no cover - depends on the installed Triton
    _HOPPER_ERROR = error


# log2 erfc(|u|/sqrt 2) = a * P(a), a = |u|/2: P's coefficients, highest degree first. The Triton kernel's polynomial
# GELU reads them (greyhound/ops/cheri_conv_norm.py:_gelu_erf documents the fit and its accuracy).
_COEFFICIENTS = (-0.0002296021111298399, 0.003886459236891913, -0.029541895977814654, 0.13562948692196355,
                 -0.4311274590691493, -1.8341663513528101, -2.302428738391304)
ERFC_LOG2_POLY = triton.language.constexpr(_COEFFICIENTS)
ERFC_LOG2_TERMS = triton.language.constexpr(len(_COEFFICIENTS))
# The same fit in |u|: log2(erfc(|u|/sqrt 2) / 2) = |u| * Q(|u|) - 1 with Q(v) = P(v/2)/2, whose coefficients are P's
# times powers of 2 (so the same fp32 values). This module's kernels evaluate GELU in this form (_gelu_poly).
ERFC_HALF_LOG2_POLY = triton.language.constexpr(
    tuple(c / 2 ** (len(_COEFFICIENTS) - i) for i, c in enumerate(_COEFFICIENTS)))
# gelu="poly3" (a tuning variant for bf16/fp16 dots): a degree-3 Q fitted directly in |u| (weighted least squares on
# |u| < 5, reweighted towards the largest GELU error): within 1.2e-5 absolute of fp64 GELU over [-8, 8] (the default's
# degree 6: 8e-7), three FMAs a hidden element fewer. The hidden layer is rounded to bf16 / fp16 right after, whose
# half-ulp at |h| = 0.25 is 4.9e-4 / 6.1e-5.
ERFC_HALF_LOG2_POLY3 = triton.language.constexpr((0.004086745, -0.045348004, -0.4655302, -1.1492939))
# Its leading coefficient is positive, so |u| Q(|u|) - 1 turns upwards past its minimum (-77.5 at |u| = 13.09) and
# overflows 2^x from |u| ~ 17 on (GELU(20) came out -4.5e25). The polynomial's argument is therefore min(|u|, 13): the
# factor stays 2^-77.3 beyond, so GELU(u) = max(u, 0) - |u| * 5e-24 there (exact to 1e-5 for |u| < 2e18).
POLY3_CLAMP = triton.language.constexpr(13.0)
# gelu="poly2" (the default in gluon_wsz for bf16 dots, and since session 41 for fp16 dots): Q of degree 2, minimax
# in the GELU error over all u (Nelder-Mead on a grid of |u| in [0, 12]): within 8.6e-5 absolute of fp64 GELU
# (largest at |u| = 2.91).
# Its leading coefficient is negative, so the exponent only falls with |u| and needs no clamp (GELU(u) -> max(u, 0);
# finite out to |u| = 1e30 in fp32): two instructions a hidden element fewer than poly3 (an FMA and the clamp). Below
# bf16's rounding of the hidden layer it feeds (a bf16 ulp is 4.9e-4 at |h| = 0.1, 1.6e-2 at |h| = 2.9), not below
# fp16's (6.1e-5 at 0.1) element by element; but what reaches an fp16 block's output is below the output's own
# rounding: with the kernel's roundings emulated in fp64 (z, hidden and output rounded to fp16; C=128, E=512, 8 x 1024
# positions, unit-scale outputs) the max error against fp64 is 2.07e-3 with poly2 and 2.10e-3 with poly3, the mean
# 1.65e-4 against 1.62e-4, and every output is within one fp16 ulp of the degree-6 poly's (18% of them differ, 7.6%
# with poly3). So fp16 runs it too (session 41, one H100, N=512: -4% against poly3); bf16x3 (1e-5) may not.
ERFC_HALF_LOG2_POLY2 = triton.language.constexpr((-0.0276456531137228, -0.48822158575057983, -1.1409367322921753))
# launch_ws's gelu -> the kernel's GELU_FIT (the degree of Q)
GELU_FITS = {"poly": 6, "poly3": 3, "poly2": 2}


def available():
    return gluon is not None and _HOPPER_ERROR is None


_WARNED = set()


def unsupported(x, channels, hidden_width, mode, training, block_l, block_e, num_warps, stages, gelu,
                warp_specialised=False):
    """Why this kernel cannot run this call (a string), or None when it can."""
    why_not = why_not_hopper(x.device)
    if why_not is not None or _HOPPER_ERROR is not None:
        return why_not or f"this Triton has no Gluon Hopper API ({_HOPPER_ERROR})"
    if mode not in ("bf16", "fp16", "bf16x3") or gelu not in GELU_FITS:
        return f"it runs bf16, fp16 or bf16x3 dots and the poly GELU (or its fits poly3, poly2), got mode {mode!r}, " \
               f"gelu={gelu!r}"
    if channels & (channels - 1) or not 16 <= channels <= 128:  # the (BLOCK_L, C) fp32 accumulator lives in registers
        return f"the channel count must be a power of 2 in [16, 128], got {channels}"
    if num_warps not in (4, 8) or block_l != 16 * num_warps:
        return f"BLOCK_L must be 16 * num_warps with 4 or 8 warps, got BLOCK_L={block_l}, num_warps={num_warps}"
    if block_e & (block_e - 1) or not 16 <= block_e <= 256 or hidden_width % block_e or hidden_width > 32 * block_e:
        return f"BLOCK_E must be a power of 2 in [16, 256] dividing the hidden width into at most 32 chunks, got " \
               f"BLOCK_E={block_e}, hidden width {hidden_width}"
    if stages < 2:
        return f"it needs num_stages (its weight ring) >= 2, got {stages}"
    if gelu != "poly" and not warp_specialised:
        return f"gelu={gelu} (a shorter GELU fit) runs in the warp-specialised layouts only (gluon_ws, gluon_ws3, " \
               f"gluon_wsz)"
    if gelu == "poly2" and mode not in ("bf16", "fp16"):
        return f"gelu=poly2 (the degree-2 GELU fit, 8.6e-5 absolute) is for bf16 or fp16 dots, whose output rounding " \
               f"is coarser than its error; got {mode} dots"
    return None


def launch(x, out, conv_weight, conv_bias, norm_weight, norm_bias, fc1_weight, fc1_bias, fc2_weight, fc2_bias,
           dilation, eps, block_l, block_e, num_warps, stages, max_registers=None, fc1_lo=None, fc2_lo=None,
           saved=None, w1_stages=None, z_regs=False, loop=False):
    """One launch over x (N, C, L) into out; fc1_weight (E, C) and fc2_weight (C, E) bf16 or fp16, all contiguous.
    With fc1_lo and fc2_lo (bf16, W - hi: the bf16x3 mode of an fp32 model) every product is the three-term
    bf16x3 one, hi*hi + hi*lo + lo*hi (z and the hidden layer split the same way). With saved = (hidden (N, L, E),
    mean (N, L), rstd (N, L)) it is the training forward and writes them (hidden fp32 in bf16x3, else in the
    weights' type; mean and rstd fp32). `w1_stages` is the W1 ring's depth (`stages` is the W2 ring's; None: the
    same). One deeper measured level (H200, session 24, N=512: bf16 0.4543 against 0.4592 ms, fp16 0.4579 against
    0.4523), so the default keeps them equal."""
    if (fc1_lo is None) != (fc2_lo is None):
        raise ValueError("fc1_lo and fc2_lo are given together (the bf16x3 mode) or not at all")
    batch, channels, length = x.shape
    options = {"num_warps": num_warps}
    if max_registers is not None:
        options["maxnreg"] = max_registers
    split = fc1_lo is not None
    hidden, mean, rstd = (out, out, out) if saved is None else saved  # (not written without training)
    if w1_stages is None:
        w1_stages = stages
    if w1_stages < stages:
        raise ValueError(f"w1_stages (the W1 ring's depth) must be at least stages ({stages}), got {w1_stages}")
    if loop and (stages < 3 or w1_stages != stages):
        raise ValueError(f"loop (the looped chunk schedule) needs stages >= 3 and w1_stages equal to it, got "
                         f"stages={stages}, w1_stages={w1_stages}")
    _LAUNCHER[(cdiv(length, block_l) * batch,)](
        x, out, conv_weight, conv_bias, norm_weight, norm_bias, fc1_weight, fc1_bias, fc2_weight, fc2_bias,
        fc1_lo if split else fc1_weight, fc2_lo if split else fc2_weight, hidden, mean, rstd,
        length, eps, C=channels, HIDDEN=fc1_weight.shape[0], KERNEL_SIZE=conv_weight.shape[2],
        DILATION=dilation, EVEN_L=length % block_l == 0, BLOCK_L=block_l, BLOCK_E=block_e, STAGES=stages,
        W1_STAGES=w1_stages, SPLIT=split, TRAINING=saved is not None, Z_REGS=bool(z_regs), LOOP=bool(loop), **options)


# The warp-specialised kernel's partitions: two or three consumer warp groups of CONSUMER_REGS registers and a producer
# warp group of _PRODUCER_REGS, one CTA per SM (two consumers: 2 * 128 * 232 + 128 * 40 = 64512 of 65536 registers).
# With the z producer (layout gluon_wsz) a fourth warp group computes z into a ring of _Z_STAGES tiles (two a
# consumer) with the registers the consumers leave it (at least _Z_PRODUCER_MIN_REGS). By default the consumers take
# _WSZ_CONSUMER_REGS, which leaves the z producer the 168 its conv + LayerNorm of a (64, 128) tile needs without
# spilling (ptxas, Triton 3.6, offline); the consumers' maxnreg can trade its registers for theirs.
_PRODUCER_WARPS, _PRODUCER_REGS = 4, 40
_Z_STAGES, _Z_PRODUCER_MIN_REGS, _WSZ_CONSUMER_REGS = 4, 88, 152


def ws_consumer_regs(consumers, z_producer=False, producer_regs=_PRODUCER_REGS):
    """The most registers each of `consumers` consumer warp groups can have beside the producer of `producer_regs`
    (and the z producer's least): 232 for 2, 152 for 3, 192 for 2 with the z producer at the producer's default 40
    (setmaxnreg counts in multiples of 8; an SM has 65536)."""
    others = 32 * _PRODUCER_WARPS * producer_regs + (128 * _Z_PRODUCER_MIN_REGS if z_producer else 0)
    return (65536 - others) // (consumers * 128) // 8 * 8


def default_consumer_regs(consumers, z_producer=False):
    """The consumers' registers when the config names none: _WSZ_CONSUMER_REGS beside the z producer, else the most."""
    return _WSZ_CONSUMER_REGS if z_producer else ws_consumer_regs(consumers)


def z_stages(stages, block_e, channels, hidden_width, block_l=64, b1_mma=False, tail=False, conv_taps=0):
    """The z ring's depth beside a weight ring of `stages` slots: _Z_STAGES (two tiles a consumer) where the H200's
    shared memory holds it, else as many as fit (a ring of 5 at 64 hidden columns and C=128 runs with 3 z slots); 0
    when not even one a consumer fits. With `tail` (ws_schedule tail) beside two double buffers of the hidden operand
    (BLOCK_L, BLOCK_E) a consumer; with `conv_taps` K > 0 (ws_conv_smem) beside the conv's K taps in fp32 (rows padded
    to a power of 2: 2 KiB at K=3, C=128; 232076 bytes in all at ring 4 with b2, Triton 3.6)."""
    # bf16/fp16 weight rings, b1 (fp32), the layout conversions' scratch and the barriers: 215180 bytes in all at
    # (64, 64, ring 4, 4 z slots), 247980 at ring 5 (Triton 3.6, H200)
    # (b1: fp32, or with b1_mma a (block_e, 16) bf16/fp16 block a chunk; the chunks padded to a power of 2)
    # The scratch is a (block_l, C) 16-bit tile or a (block_l, min(2C, 64)) fp32 one, whichever is larger: below C=128
    # the second sets it (offline sm_90a compiles, Triton 3.6: at C=16, 32 and 64, block_l 64 and 128, block_e 64 and
    # 128, rings 2-6, this estimate is 852-916 bytes over the compiled size, so a ring on the edge is refused rather
    # than overflowing; (block_l, C) alone was 5-24 KiB under, and a ring of 6 at C=64, block_e=128 compiled to 237708
    # bytes where it said 2 z slots fit)
    b1_chunks = 1 << (hidden_width // block_e - 1).bit_length()
    scratch = max(block_l * channels * 2, block_l * min(2 * channels, 64) * 4)
    # (b2: fp32, C * 4 bytes since session 44, which came out of the 1024 bytes of slack before it: the estimate is
    # still ~340-400 bytes over the compiled size, 232076 at the bf16 default)
    others = (stages * 2 * block_e * channels * 2 + b1_chunks * block_e * (32 if b1_mma else 4)
              + scratch + 512 + channels * 4 + (4 * block_l * block_e * 2 if tail else 0)
              + next_power_of_2(conv_taps) * channels * 4)
    fits = (232448 - others) // (block_l * channels * 2)
    return min(_Z_STAGES, fits) if fits >= 2 else 0


def z_producer_regs(consumer_regs, producer_regs=_PRODUCER_REGS):
    """The z producer's registers beside two consumers of `consumer_regs` and the producer of `producer_regs`: all
    that is left."""
    return (65536 - 32 * _PRODUCER_WARPS * producer_regs - 2 * 128 * consumer_regs) // 128 // 8 * 8


def producer_regs_refusal(producer_regs):
    """Why the weight producer cannot run with `producer_regs` registers a thread (a string), or None."""
    if isinstance(producer_regs, bool) or not isinstance(producer_regs, int) or producer_regs % 8 \
            or not 24 <= producer_regs <= 256:
        return f"the weight producer's register count (ws_producer_regs) must be a multiple of 8 in [24, 256] " \
               f"(setmaxnreg), got {producer_regs!r}"
    return None


def schedule_refusal(channels, hidden_width, block_l, block_e, stages, gelu, consumers, pipeline=False,
                     z_producer=False, pingpong=0, b1_mma=False, balance=False, conv_taps=0):
    """Why the warp-specialised kernel cannot run this set of partitions and consumer schedule (a string), or None:
    the refusals unsupported_ws (the layouts' check) and launch_ws (a direct call) share."""
    if consumers not in (2, 3):
        return f"it has 2 or 3 consumer warp groups, got {consumers}"
    if z_producer and consumers != 2:
        return f"beside the z producer (layout gluon_wsz) it has 2 consumer warp groups, got {consumers}"
    if gelu not in GELU_FITS:
        return f"gelu is poly or its fits poly3, poly2, got gelu={gelu!r}"
    if pingpong not in (0, 1, 2, 3):
        return f"pingpong is 0 (ws_schedule chunk), 1 (pingpong: each chunk's GEMMs issued together), 2 (turns: and " \
               f"the consumers take turns) or 3 (tail: chunk k's second GEMM under chunk k+1's GELU), got {pingpong}"
    if b1_mma and not (z_producer and pingpong in (1, 3)):
        return f"b1_mma (b1 added by a wgmma) runs in layout gluon_wsz with the pingpong or tail schedule only, got " \
               f"z_producer={z_producer}, pingpong={pingpong}"
    if pingpong == 3 and not z_producer:
        return "its tail schedule (ws_schedule=tail) runs in layout gluon_wsz only"
    if conv_taps and not z_producer:
        return "the conv's taps in shared memory (ws_conv_smem) are read by the z producer: layout gluon_wsz only"
    if z_producer and not z_stages(stages, block_e, channels, hidden_width, block_l, b1_mma, pingpong == 3, conv_taps):
        return f"its weight ring of {stages} slots of {block_e} hidden columns leaves no room in the H200's shared " \
               f"memory for the z producer's ring (a tile a consumer, {block_l} x {channels}): fewer num_stages or " \
               f"hidden columns"
    if pipeline and gelu != "poly":
        return f"its pipelined consumers (ws_pipeline) run the default GELU (poly), got gelu={gelu!r}"
    if pipeline and z_producer:
        return "its pipelined consumers (ws_pipeline) need more registers than the z producer leaves them (layout " \
               "gluon_wsz runs one chunk at a time)"
    if pipeline and stages < 3:
        return f"its pipelined consumers hold three ring slots at a time: num_stages (the ring) >= 3, got {stages}"
    if pingpong and pipeline:
        return "the consumers run one schedule: ws_pipeline or ws_schedule pingpong / turns / tail, not both"
    if pingpong == 2 and (consumers != 2 or stages < 3):
        return f"its consumers' turns (ws_schedule=turns) are for two consumers and a ring of at least 3 (a consumer " \
               f"waiting for its turn may hold the slot the other needs), got {consumers} consumers, num_stages " \
               f"{stages}"
    if balance and pingpong == 2:
        return "its lone last-round tiles (ws_balance) leave the other consumer idle, so its consumers cannot take " \
               "turns (ws_schedule=turns)"
    return None


def unsupported_ws(x, channels, hidden_width, mode, training, block_l, block_e, num_warps, stages, gelu,
                   consumers, consumer_regs, pipeline=False, z_producer=False, pingpong=0, b1_mma=False,
                   balance=False, conv_taps=0, producer_regs=_PRODUCER_REGS):
    """Why the warp-specialised kernel cannot run this call (a string), or None when it can."""
    why_not = unsupported(x, channels, hidden_width, mode, training, block_l, block_e, num_warps, stages, gelu, True)
    if why_not is not None:
        return why_not
    if mode == "bf16x3" or training:
        return f"it is the inference kernel with bf16 or fp16 dots (the Gluon kernel, layout gluon, also runs bf16x3 " \
               f"and training forwards), got mode {mode!r}, training={training}"
    if num_warps != 4:
        return f"its consumers are one warp group each (num_warps 4), got num_warps={num_warps}"
    why_not = schedule_refusal(channels, hidden_width, block_l, block_e, stages, gelu, consumers, pipeline, z_producer,
                               pingpong, b1_mma, balance, conv_taps)
    if why_not is not None:
        return why_not
    why_not = producer_regs_refusal(producer_regs)
    if why_not is not None:
        return why_not
    most = ws_consumer_regs(consumers, z_producer, producer_regs)
    if consumer_regs % 8 or not 24 <= consumer_regs <= most:
        return f"the consumers' register count (maxnreg) must be a multiple of 8 in [24, {most}] with {consumers} " \
               f"consumers{' and the z producer' if z_producer else ''}, got {consumer_regs} (beside a weight producer " \
               f"of {producer_regs} registers)"
    return None


def launch_ws(x, out, conv_weight, conv_bias, norm_weight, norm_bias, fc1_weight, fc1_bias, fc2_weight, fc2_bias,
              dilation, eps, block_l, block_e, num_warps, stages, consumer_regs=None, consumers=2, pipeline=False,
              z_producer=False, pingpong=0, z_regs=False, gelu="poly", b1_mma=False, thread_release=False,
              balance=False, late_residual=False, x_prefetch=0, conv_smem=False, x_shuffle=False, split_ring=False,
              cross_tile=False, epilogue16=False, producer_regs=None, conv_regs=False, bf16_shifts=False,
              first_z=False):
    """launch()'s call on the warp-specialised kernel: one CTA per SM (at most one per group of `consumers`
    tiles). With `pipeline` each consumer keeps its next chunk's first GEMM and its previous chunk's second GEMM in
    flight under this chunk's GELU (a ring of at least 3 slots). With `z_producer` (two consumers, one chunk at a
    time) a warp group of its own computes every tile's conv + LayerNorm into a ring the consumers read. With
    `pingpong` 1 each consumer issues chunk k's second GEMM and chunk k+1's first together and waits once a chunk; with
    2 the two consumers also take turns at issuing them (a ring of at least 3); with 3 (z_producer) each consumer
    issues chunk k+1's first GEMM, then chunk k's second with the hidden operand from shared memory, waits for the first
    only and runs chunk k+1's GELU under the second. With `b1_mma` (z_producer, pingpong 1 or 3)
    b1 is added by a k=16 wgmma a chunk (a column of ones against b1) instead of an FADD a hidden element. With
    `z_regs` the consumers read z into registers once a tile, the first GEMMs' A operand (a quarter of their
    shared-memory operand traffic at 64 hidden columns, for 32 registers a thread). `gelu` "poly3" is the degree-3 GELU
    fit, "poly2" the degree-2 one (bf16 or fp16 dots; neither with `pipeline`). With `thread_release` every consumer
    thread releases a ring slot with an arrive of its own instead of one arrive a warp group (see _release). With
    `balance` (not with pingpong 2) a last round of at most one tile a CTA runs one tile a CTA (see lone_tiles). With
    `late_residual` (pingpong 1 or 2) each tile's residual is loaded after its last GEMM, not issued before it. With
    `x_prefetch` > 0 (z_producer) the z producer asks L2 for each tile's x `x_prefetch` groups before computing it.
    With `conv_smem` (z_producer) the conv's taps go to shared memory once and the z producer reads them there. With
    `x_shuffle` (z_producer; see x_shuffle_refusal) the z producer loads x once a tile and takes the conv's shifted taps
    from the other lane of its lane pair by shuffles. With `split_ring` (z_producer, pingpong 1) W1 and W2 stream
    through rings of their own (the same shared memory), each slot released once its one GEMM is done
    (_ws_split_producer). With `cross_tile` (z_producer, pingpong 1, neither z_regs nor split_ring) each tile's first
    GEMM is issued with the previous tile's last second GEMM. With `epilogue16` (z_producer, pingpong 1, the residual
    loaded early, not with cross_tile, 16-bit x) the residual is added in the accumulator's layout and each tile's
    16-bit output, not its fp32 accumulator, goes through shared memory to 16-byte stores. `producer_regs` (None:
    _PRODUCER_REGS) is the weight producer's register count; with `z_producer` the z producer takes what the
    consumers and it leave. With `conv_regs` (z_producer, not conv_smem) the z producer loads the conv's taps once and
    keeps them in registers across its tiles. With `bf16_shifts` (z_producer, x_shuffle, bf16 x) the z producer widens
    x's taps to fp32 by a shift and an and of each register of two (_widen). With `first_z` (z_producer, not
    cross_tile) consumer 1 computes its first tile's z itself while the z producer computes consumer 0's, so that both
    consumers start after one tile's conv + LayerNorm, not consumer 1 after two."""
    batch, channels, length = x.shape
    conv_taps = conv_weight.shape[2] if conv_smem else 0
    why_not = schedule_refusal(channels, fc1_weight.shape[0], block_l, block_e, stages, gelu, consumers, pipeline,
                               z_producer, pingpong, b1_mma, balance, conv_taps)
    if why_not is None and x_prefetch and not z_producer:
        why_not = "x_prefetch (the z producer's L2 prefetch of x) runs with the z producer (layout gluon_wsz) only"
    if why_not is None and x_shuffle:
        why_not = ("x_shuffle (the z producer's shuffled conv taps) runs with the z producer (layout gluon_wsz) only"
                   if not z_producer else x_shuffle_refusal(x.dtype, channels, conv_weight.shape[2], dilation))
    if why_not is None and split_ring and not (z_producer and pingpong == 1):
        why_not = (f"split_ring (W1 and W2 in rings of their own) runs with the z producer (layout gluon_wsz) on the "
                   f"pingpong schedule only, got z_producer={z_producer}, pingpong={pingpong}")
    if why_not is None and cross_tile and not (z_producer and pingpong == 1 and not z_regs and not split_ring):
        why_not = (f"cross_tile (each tile's first GEMM issued with the previous tile's last one) runs with the z "
                   f"producer (layout gluon_wsz) on the pingpong schedule, z from shared memory and one weight ring "
                   f"only, got z_producer={z_producer}, pingpong={pingpong}, z_regs={z_regs}, split_ring={split_ring}")
    if why_not is None and epilogue16 and not (z_producer and pingpong == 1 and not late_residual and not cross_tile
                                               and x.element_size() == 2):
        why_not = (f"epilogue16 (the residual added in the accumulator's layout, the 16-bit output through shared "
                   f"memory) runs with the z producer (layout gluon_wsz) on the pingpong schedule, the residual loaded "
                   f"early and a 16-bit x only, got z_producer={z_producer}, pingpong={pingpong}, "
                   f"late_residual={late_residual}, cross_tile={cross_tile}, x of {x.dtype}")
    if why_not is None and conv_regs and not (z_producer and not conv_smem):
        why_not = (f"conv_regs (the conv's taps in the z producer's registers) runs with the z producer (layout "
                   f"gluon_wsz) and without conv_smem only, got z_producer={z_producer}, conv_smem={conv_smem}")
    if why_not is None and bf16_shifts and not (z_producer and x_shuffle and x.dtype == torch.bfloat16):
        why_not = (f"bf16_shifts (x's shuffled conv taps widened by shifts) runs with the z producer (layout "
                   f"gluon_wsz), x_shuffle and a bf16 x only, got z_producer={z_producer}, x_shuffle={x_shuffle}, "
                   f"x of {x.dtype}")
    if why_not is None and first_z and not (z_producer and not cross_tile):
        why_not = (f"first_z (consumer 1 computes its first tile's z) runs with the z producer (layout gluon_wsz) and "
                   f"without cross_tile only, got z_producer={z_producer}, cross_tile={cross_tile}")
    producer_regs = _PRODUCER_REGS if producer_regs is None else producer_regs
    if why_not is None:
        why_not = producer_regs_refusal(producer_regs)
    consumer_regs = consumer_regs or default_consumer_regs(consumers, z_producer)
    most = ws_consumer_regs(consumers, z_producer, producer_regs) if why_not is None else None
    if why_not is None and consumer_regs > most:
        why_not = (f"its partitions' registers pass the SM's 65536: beside a producer of {producer_regs} registers"
                   f"{' and the z producer' if z_producer else ''} its {consumers} consumers have at most {most} each, "
                   f"got {consumer_regs}")
    if why_not is not None:
        raise ValueError(f"launch_ws: the warp-specialised kernel cannot run this call: {why_not}")
    num_tiles = cdiv(length, block_l) * batch
    grid = min(cdiv(num_tiles, consumers), multiprocessor_count(x.device.index))
    _WS_LAUNCHER[(grid,)](
        x, out, conv_weight, conv_bias, norm_weight, norm_bias, fc1_weight, fc1_bias, fc2_weight, fc2_bias,
        length, eps, num_tiles, C=channels, HIDDEN=fc1_weight.shape[0], KERNEL_SIZE=conv_weight.shape[2],
        DILATION=dilation, EVEN_L=length % block_l == 0, BLOCK_L=block_l, BLOCK_E=block_e, STAGES=stages,
        CONSUMERS=consumers, CONSUMER_REGS=consumer_regs, PRODUCER_WARPS=_PRODUCER_WARPS,
        PRODUCER_REGS=producer_regs, PIPELINE=bool(pipeline), Z_PRODUCER=bool(z_producer),
        Z_STAGES=z_stages(stages, block_e, channels, fc1_weight.shape[0], block_l, b1_mma, pingpong == 3, conv_taps)
        if z_producer else 1,
        Z_PRODUCER_REGS=z_producer_regs(consumer_regs, producer_regs),
        PINGPONG=int(pingpong), Z_REGS=bool(z_regs), GELU_FIT=GELU_FITS[gelu], B1_MMA=bool(b1_mma),
        THREAD_RELEASE=bool(thread_release), BALANCE=bool(balance), LATE_RESIDUAL=bool(late_residual),
        X_PREFETCH=int(x_prefetch), CONV_SMEM=bool(conv_smem), X_SHUFFLE=bool(x_shuffle), SPLIT_RING=bool(split_ring),
        CROSS_TILE=bool(cross_tile), EPILOGUE16=bool(epilogue16), CONV_REGS=bool(conv_regs),
        BF16_SHIFTS=bool(bf16_shifts), FIRST_Z=bool(first_z), num_warps=num_warps)


def x_shuffle_refusal(x_dtype, channels, kernel_size, dilation):
    """Why the z producer's shuffled conv taps (x_shuffle) cannot run a call (a string), or None. A thread holds 8
    consecutive positions of x as four 32-bit registers of two 16-bit elements, and takes the 8 before them from the
    other lane of its pair (or one load): so x of 2 bytes an element, every tap's shift (K - 1 - k) * dilation even
    (whole registers) and at most 8, and C / 16 channels a thread across 16 lanes."""
    if x_dtype not in (torch.bfloat16, torch.float16):
        return f"x of a 16-bit type (bf16 or fp16), got {x_dtype}"
    if (kernel_size - 1) * dilation > 8 or (dilation % 2 and kernel_size > 1):
        return (f"every conv tap an even number of positions back and at most 8 ((K - 1) * dilation <= 8, dilation "
                f"even), got K={kernel_size}, dilation={dilation}")
    if channels % 16:
        return f"C a multiple of 16, got C={channels}"
    return None


def lone_tiles(num_tiles, programs, consumers=2):
    """How many tiles the warp-specialised kernel with `balance` (ws_balance) runs alone, one a CTA, in its last
    round on a grid of `programs` CTAs: the tiles left after the whole rounds of `consumers` tiles a CTA when they are
    at most `programs`, else 0 (they go `consumers` a CTA). The host's mirror of _ws_groups, for tests and notes."""
    left = num_tiles - num_tiles // (consumers * programs) * consumers * programs
    return left if left <= programs else 0


def warn_fallback(error):
    """Once per kind of failure: the Gluon kernel did not run and the plain Triton kernel runs instead."""
    _warn_fallback(_WARNED, "Cheri Block", "the Triton kernel", error)


if available():

    @gluon.constexpr_function
    def _tile_layout(block_l, block_c, num_warps):
        """(BLOCK_L = 16 * num_warps, C) tiles of x / z / out: each warp owns 16 positions, as in the wgmma
        accumulator; a thread holds 4 consecutive positions (x's contiguous axis: 8-byte tap loads) of C / 8
        consecutive channels (vector loads of the per-channel parameters), 8 lanes across C. So LayerNorm's sums over C
        stay within a warp (shuffles, no CTA barrier) and z goes to shared memory by stmatrix. Session 16, offline
        (Triton 3.6, sm_90a, (64, 64, 4 warps, ring 2)): 1896 -> 1709 instructions before the first wgmma, 15 -> 2 CTA
        barriers there, 64 STS.U16 -> 8 STSM; the earlier layout put the 4 warps across C. Measured on one H200, the
        kernel's time did not change (0.4679 -> 0.4673 ms at N=512): the prologue runs under the other CTA's MLP."""
        # (warp_specialize hands its partitions constexprs wrapped twice, and constexpr functions unwrap once)
        block_c = getattr(getattr(block_c, "value", block_c), "value", getattr(block_c, "value", block_c))
        num_warps = getattr(getattr(num_warps, "value", num_warps), "value", getattr(num_warps, "value", num_warps))
        return gl.BlockedLayout([4, max(1, block_c // 8)], [4, 8], [num_warps, 1], [0, 1])

    @gluon.constexpr_function
    def _shuffle_tile_layout(block_c, num_warps):
        """(ws_x_shuffle) The z producer's (16 * num_warps, C) tile with 8 consecutive positions a thread (one 16-byte
        load of x a channel) of C / 16 consecutive channels, 2 lanes across positions and 16 across C: a thread's
        previous 8 positions are the other lane of its pair's (one shuffle a register) or, for the pair's first lane,
        one 16-byte load before its own, so the conv's shifted taps need no loads of their own (_shifted_tap)."""
        block_c = getattr(getattr(block_c, "value", block_c), "value", getattr(block_c, "value", block_c))  # as above
        num_warps = getattr(getattr(num_warps, "value", num_warps), "value", getattr(num_warps, "value", num_warps))
        return gl.BlockedLayout([8, max(1, block_c // 16)], [2, 16], [num_warps, 1], [0, 1])

    @gluon.constexpr_function
    def _tap_join_asm(shift):
        """(ws_x_shuffle) PTX of one packed group of 8 positions (4 registers of two 16-bit elements, position 0 in
        the low half of register 0): the tap `shift` (even, 2..6) positions back, from the previous 8 positions
        ($4..$7) and the thread's own ($8..$11): register renames only."""
        while hasattr(shift, "value"):
            shift = shift.value
        back = shift // 2  # registers taken from the previous 8 positions
        sources = [f"${4 + 4 - back + i}" for i in range(back)] + [f"${8 + i}" for i in range(4 - back)]
        return " ".join(f"mov.b32 ${i}, {src};" for i, src in enumerate(sources))

    @gluon.constexpr_function
    def _next_power_of_2(n):
        return 1 << (getattr(getattr(n, "value", n), "value", getattr(n, "value", n)) - 1).bit_length()

    @gluon.constexpr_function
    def _row_major_layout(rows, cols, num_warps):
        """(rows, cols) blocks read along their contiguous last axis, 8 elements (16 bytes) per thread."""
        cols = getattr(getattr(cols, "value", cols), "value", getattr(cols, "value", cols))  # as in _tile_layout
        num_warps = getattr(getattr(num_warps, "value", num_warps), "value", getattr(num_warps, "value", num_warps))
        lanes_c = min(32, max(1, cols // 8))
        return gl.BlockedLayout([1, 8], [32 // lanes_c, lanes_c], [num_warps, 1], [1, 0])

    @gluon.jit
    def _gelu_poly(u, FIT: gl.constexpr = 6):
        """erf-GELU of u (the pre-activation, b1 added) without erf, fp32: `_gelu_erf`'s polynomial, evaluated as
        max(u, 0) - |u| * 2^(|u| Q(|u|) - 1) (E/2 in one ex2 of an FMA; the -|u| is a multiply by -1.0, which LLVM turns
        into a negation that ptxas folds into the FMA, where `-x` would be 0 - x, an FADD of its own): an add, 8 FMAs,
        a max and an ex2 a hidden element, where _gelu_erf's form takes 12 operations. In the Triton kernel this form
        measured 17% slower (session 15), so that kernel keeps _gelu_erf's. FIT 3: the degree-3 fit
        (ERFC_HALF_LOG2_POLY3: 5 FMAs and a clamp, 1.2e-5 absolute); FIT 2: the degree-2 one (ERFC_HALF_LOG2_POLY2: 4
        FMAs, 8.6e-5 absolute, bf16 dots only)."""
        if FIT == 2:  # the leading coefficient is negative: no clamp
            a = gl.abs(u)
            f = gl.fma(a, ERFC_HALF_LOG2_POLY2[0], ERFC_HALF_LOG2_POLY2[1])
            f = gl.fma(f, a, ERFC_HALF_LOG2_POLY2[2])
        elif FIT == 3:  # clamped: see POLY3_CLAMP (one FMNMX a hidden element)
            a = gl.minimum(gl.abs(u), POLY3_CLAMP)
            f = gl.fma(a, ERFC_HALF_LOG2_POLY3[0], ERFC_HALF_LOG2_POLY3[1])
            for k in gl.static_range(2, 4):
                f = gl.fma(f, a, ERFC_HALF_LOG2_POLY3[k])
        else:  # the leading coefficient is negative: the exponent only falls with |u|, 2^x flushes to 0
            a = gl.abs(u)
            f = gl.fma(a, ERFC_HALF_LOG2_POLY[0], ERFC_HALF_LOG2_POLY[1])
            for k in gl.static_range(2, ERFC_LOG2_TERMS):
                f = gl.fma(f, a, ERFC_HALF_LOG2_POLY[k])
        half_erfc = gl.exp2(gl.fma(f, a, -1.0))
        return gl.fma(gl.abs(u) * -1.0, half_erfc, gl.maximum(u, 0.0))  # * -1.0: a negation ptxas folds

    @gluon.jit
    def _load_w1(w1_smem, w1lo_smem, w1_ptr, w1_lo_ptr, chunk, STAGES: gl.constexpr, C: gl.constexpr,
                 BLOCK_E: gl.constexpr, W1_LAYOUT: gl.constexpr, SPLIT: gl.constexpr):
        """cp.async of W1[chunk] (BLOCK_E, C rows of W1; with SPLIT also of its lo part) into its ring slot (not
        committed here)."""
        rows = chunk * BLOCK_E + gl.arange(0, BLOCK_E, layout=gl.SliceLayout(1, W1_LAYOUT))
        cols = gl.arange(0, C, layout=gl.SliceLayout(0, W1_LAYOUT))
        offsets = gl.expand_dims(rows, 1) * C + gl.expand_dims(cols, 0)
        _async_load(w1_smem.index(chunk % STAGES), w1_ptr + offsets)
        if SPLIT:
            _async_load(w1lo_smem.index(chunk % STAGES), w1_lo_ptr + offsets)

    @gluon.jit
    def _load_w2(w2_smem, w2lo_smem, w2_ptr, w2_lo_ptr, chunk, STAGES: gl.constexpr, C: gl.constexpr,
                 HIDDEN: gl.constexpr, BLOCK_E: gl.constexpr, W2_LAYOUT: gl.constexpr, SPLIT: gl.constexpr):
        """cp.async of W2[:, chunk] (C, BLOCK_E columns of W2; with SPLIT also of its lo part) into its ring slot (not
        committed here)."""
        rows = gl.arange(0, C, layout=gl.SliceLayout(1, W2_LAYOUT))
        cols = chunk * BLOCK_E + gl.arange(0, BLOCK_E, layout=gl.SliceLayout(0, W2_LAYOUT))
        offsets = gl.expand_dims(rows, 1) * HIDDEN + gl.expand_dims(cols, 0)
        _async_load(w2_smem.index(chunk % STAGES), w2_ptr + offsets)
        if SPLIT:
            _async_load(w2lo_smem.index(chunk % STAGES), w2_lo_ptr + offsets)

    @gluon.jit
    def _first_gemm(z_a, zlo_smem, w1_smem, w1lo_smem, chunk, spare, STAGES: gl.constexpr, SPLIT: gl.constexpr):
        """z @ W1[chunk]^T, issued asynchronously (a token: wait for it before reading); z_a is z's shared-memory
        tile or z in the wgmma's A-operand registers (Z_REGS), zlo_smem its lo part's tile. `spare` is a finished,
        otherwise dead (BLOCK_L, BLOCK_E) fp32 tensor whose registers the result takes over (use_acc=False ignores
        its values): defining fresh accumulator registers while another wgmma is in flight makes ptxas serialise.
        With SPLIT, three wgmma groups (z_lo W1_hi + z_hi W1_lo + z_hi W1_hi, the small terms first), else one."""
        w1_hi = w1_smem.index(chunk % STAGES).permute((1, 0))
        if SPLIT:
            pre = warpgroup_mma(zlo_smem, w1_hi, spare, use_acc=False, is_async=True)
            pre = warpgroup_mma(z_a, w1lo_smem.index(chunk % STAGES).permute((1, 0)), pre, is_async=True)
            pre = warpgroup_mma(z_a, w1_hi, pre, is_async=True)
        else:
            pre = warpgroup_mma(z_a, w1_hi, spare, use_acc=False, is_async=True)
        return pre

    @gluon.jit
    def _load_bias(b1_smem, chunk, BLOCK_E: gl.constexpr, PRE: gl.constexpr):
        """b1[chunk] (fp32, from the shared-memory copy the prologue made) in the pre-activation's column layout.
        Loaded a step before its GELU needs it. From global memory it cost an L2 round trip, and its bf16 -> fp32
        conversion about one instruction per hidden element."""
        return b1_smem.slice(chunk * BLOCK_E, BLOCK_E).load(gl.SliceLayout(0, PRE))

    @gluon.jit
    def _second_gemm(pre, acc, chunk, w2_smem, w2lo_smem, bias, hidden_rows, rows_in, STAGES: gl.constexpr,
                     H_OPERAND: gl.constexpr, SPLIT: gl.constexpr, TRAINING: gl.constexpr, EVEN_L: gl.constexpr,
                     BLOCK_E: gl.constexpr, PRE: gl.constexpr, W2_WAIT: gl.constexpr):
        """acc += GELU(pre + bias) @ W2[:, chunk]^T, issued asynchronously; pre is a finished tensor. With SPLIT the
        hidden layer splits into bf16 hi + lo and the product takes three wgmma groups, as in _first_gemm. With
        TRAINING the chunk's hidden layer is also stored at hidden_rows ((BLOCK_L, 1) row pointers, rows_in their
        mask) as the backward's dW2 reads it: fp32 with SPLIT, else rounded to the dots' type. With W2_WAIT >= 0 it
        first waits, after the GELU, until at most W2_WAIT cp.async groups are pending (W2[chunk]'s has landed) and
        for every warp's copies (a CTA barrier)."""
        hidden = _gelu_poly(pre + gl.expand_dims(bias, 0))
        h_hi = hidden.to(w2_smem.dtype)
        if TRAINING:
            cols = gl.expand_dims(chunk * BLOCK_E + gl.arange(0, BLOCK_E, layout=gl.SliceLayout(0, PRE)), 0)
            if SPLIT:
                saved = hidden
            else:
                saved = h_hi
            if EVEN_L:
                gl.store(hidden_rows + cols, saved)
            else:
                gl.store(hidden_rows + cols, saved, mask=rows_in & (cols >= 0))
        if W2_WAIT >= 0:
            async_copy.wait_group(W2_WAIT)
            _cta_barrier()
        w2_hi = w2_smem.index(chunk % STAGES).permute((1, 0))
        if SPLIT:
            h_lo = gl.convert_layout((hidden - h_hi.to(gl.float32)).to(w2_smem.dtype), H_OPERAND)
            h_hi = gl.convert_layout(h_hi, H_OPERAND)
            acc = warpgroup_mma(h_lo, w2_hi, acc, is_async=True)
            acc = warpgroup_mma(h_hi, w2lo_smem.index(chunk % STAGES).permute((1, 0)), acc, is_async=True)
            acc = warpgroup_mma(h_hi, w2_hi, acc, is_async=True)
        else:
            acc = warpgroup_mma(gl.convert_layout(h_hi, H_OPERAND), w2_hi, acc, is_async=True)
        return acc

    @gluon.jit
    def _mlp_step(pre, spare, acc, bias, j: gl.constexpr, z_a, zlo_smem, w1_smem, w1lo_smem, w2_smem, w2lo_smem,
                  w1_ptr, w1_lo_ptr, w2_ptr, w2_lo_ptr, b1_smem, hidden_rows, rows_in, n_chunks: gl.constexpr,
                  C: gl.constexpr, HIDDEN: gl.constexpr, BLOCK_L: gl.constexpr, BLOCK_E: gl.constexpr,
                  STAGES: gl.constexpr, W1_STAGES: gl.constexpr, PRE: gl.constexpr, H_OPERAND: gl.constexpr,
                  W1_LAYOUT: gl.constexpr, W2_LAYOUT: gl.constexpr, SPLIT: gl.constexpr, TRAINING: gl.constexpr,
                  EVEN_L: gl.constexpr):
        """Chunk j (1 <= j, j + 1 < n_chunks): issue chunk j+1's first GEMM, finish chunk j's, refill W1[j]'s and
        W2[j-1]'s ring slots (W1_STAGES and STAGES chunks ahead), then GELU and chunk j's second GEMM. `bias` is
        b1[j]. Returns (chunk j+1's pre-activation token, chunk j's finished pre-activation: the next step's spare, acc
        token, b1[j+1]).

        Commit groups: step j's holds W1[j + W1_STAGES] and W2[j - 1 + STAGES]. With W1_STAGES == STAGES the wait at
        the top (STAGES - 2 groups pending) covers W1[j+1] and W2[j]; with a deeper W1 ring it covers W1[j+1] only
        (W1_STAGES - 2 pending) and W2[j] is waited for after the GELU (STAGES - 1 pending, this step's group
        committed by then): a step and a half of lead for both instead of about half a step."""
        async_copy.wait_group(W1_STAGES - 2)  # W1[j+1] (and W2[j] when the rings are alike) (this thread's part)
        _cta_barrier()  # ... and everyone's. (No proxy fence: its MEMBAR would wait for the refills in flight)
        next_pre = _first_gemm(z_a, zlo_smem, w1_smem, w1lo_smem, j + 1, spare, W1_STAGES, SPLIT)
        # all but the newest wgmma groups (chunk j+1's first GEMM: 1, or 3 with SPLIT) are done: pre (chunk j) and
        # chunk j-1's second GEMM
        if SPLIT:
            pre, acc = warpgroup_mma_wait(num_outstanding=3, deps=(pre, acc))
        else:
            pre, acc = warpgroup_mma_wait(num_outstanding=1, deps=(pre, acc))
        _cta_barrier()  # every warp group is done with W1[j] and W2[j-1]: their slots can be refilled
        if j + W1_STAGES < n_chunks:
            _load_w1(w1_smem, w1lo_smem, w1_ptr, w1_lo_ptr, j + W1_STAGES, W1_STAGES, C, BLOCK_E, W1_LAYOUT, SPLIT)
        if j - 1 + STAGES < n_chunks:
            _load_w2(w2_smem, w2lo_smem, w2_ptr, w2_lo_ptr, j - 1 + STAGES, STAGES, C, HIDDEN, BLOCK_E, W2_LAYOUT,
                     SPLIT)
        async_copy.commit_group()  # one group per step, empty or not: wait_group counts stay static
        next_bias = _load_bias(b1_smem, j + 1, BLOCK_E, PRE)
        if W1_STAGES > STAGES:
            W2_WAIT: gl.constexpr = STAGES - 1
        else:
            W2_WAIT: gl.constexpr = -1
        acc = _second_gemm(pre, acc, j, w2_smem, w2lo_smem, bias, hidden_rows, rows_in, STAGES, H_OPERAND, SPLIT,
                           TRAINING, EVEN_L, BLOCK_E, PRE, W2_WAIT)
        return next_pre, pre, acc, next_bias

    @gluon.jit
    def _loop_step(pre, spare, acc, bias, t, z_a, zlo_smem, w1_smem, w1lo_smem, w2_smem, w2lo_smem, w1_ptr, w1_lo_ptr,
                   w2_ptr, w2_lo_ptr, b1_rows, hidden_rows, rows_in, C: gl.constexpr, HIDDEN: gl.constexpr,
                   BLOCK_E: gl.constexpr, STAGES: gl.constexpr, PRE: gl.constexpr, H_OPERAND: gl.constexpr,
                   W1_LAYOUT: gl.constexpr, W2_LAYOUT: gl.constexpr, SPLIT: gl.constexpr, TRAINING: gl.constexpr,
                   EVEN_L: gl.constexpr, TOP: gl.constexpr, REFILL_W1: gl.constexpr, REFILL_W2: gl.constexpr,
                   HAS_NEXT: gl.constexpr):
        """Chunk t of the looped schedule (LOOP): `pre` is chunk t's finished pre-activation, `spare` a finished, dead
        one, `acc` the output accumulator with chunk t-1's second GEMM possibly in flight, `bias` b1[t]. t may be a
        run-time value (the chunk loop) or a constexpr (the steps around it).

        With TOP (every step but chunk 0's): wait for this thread's copies of W1[t+1] and W2[t] (STAGES - 3 groups
        pending), one CTA barrier (everyone's copies; every warp is past the previous step's wgmma wait, so W1[t-1]'s
        and W2[t-2]'s slots are free), refill them with W1[t-1+STAGES] (REFILL_W1) and W2[t-2+STAGES] (REFILL_W2),
        one commit group. Then (HAS_NEXT) chunk t+1's first GEMM into spare's registers, chunk t's GELU and second
        GEMM, and a wgmma wait that leaves only that second GEMM in flight. So no pre-activation is in flight across
        a step's end and the loop carries only acc in flight, as a GEMM's k-loop does: ptxas keeps the wgmmas
        pipelined (the unrolled schedule's in-flight first GEMM, carried around a loop, serialises them: C7514).
        One CTA barrier a step where _mlp_step has two. Returns (chunk t+1's finished pre-activation, chunk t's, acc,
        b1[t+1]). Measured (H200, N=512 bf16, session 27): no instruction-cache stalls left, but 0.4555 ms at (64, 32,
        ring 3, maxnreg 168, z in shared memory) against 0.4623 unrolled and the default's 0.4423: a tuning variant."""
        if TOP:
            async_copy.wait_group(STAGES - 3)
            _cta_barrier()
            if REFILL_W1:
                _load_w1(w1_smem, w1lo_smem, w1_ptr, w1_lo_ptr, t - 1 + STAGES, STAGES, C, BLOCK_E, W1_LAYOUT, SPLIT)
            if REFILL_W2:
                _load_w2(w2_smem, w2lo_smem, w2_ptr, w2_lo_ptr, t - 2 + STAGES, STAGES, C, HIDDEN, BLOCK_E, W2_LAYOUT,
                         SPLIT)
            async_copy.commit_group()  # one group a step, empty or not: wait_group counts stay static
        if HAS_NEXT:
            next_pre = _first_gemm(z_a, zlo_smem, w1_smem, w1lo_smem, t + 1, spare, STAGES, SPLIT)
            next_bias = b1_rows.index(t + 1).load(gl.SliceLayout(0, PRE))
        else:
            next_pre = pre
            next_bias = bias
        acc = _second_gemm(pre, acc, t, w2_smem, w2lo_smem, bias, hidden_rows, rows_in, STAGES, H_OPERAND, SPLIT,
                           TRAINING, EVEN_L, BLOCK_E, PRE, -1)
        if HAS_NEXT:  # all but this step's second GEMM (1 wgmma group, 3 with SPLIT)
            if SPLIT:
                next_pre = warpgroup_mma_wait(num_outstanding=3, deps=(next_pre, ))
            else:
                next_pre = warpgroup_mma_wait(num_outstanding=1, deps=(next_pre, ))
        return next_pre, pre, acc, next_bias

    @gluon.jit
    def _load_x_tile(ptrs, in_range, EVEN_L: gl.constexpr, FP32: gl.constexpr = True):
        """A tile of x in fp32 (in x's own type with FP32 off): masked to the sequence's end unless L is a whole number
        of tiles."""
        if EVEN_L:
            tile = gl.load(ptrs)
        else:
            tile = gl.load(ptrs, mask=in_range, other=0.0)
        if FP32:
            tile = tile.to(gl.float32)
        return tile

    @gluon.jit
    def _previous_positions(own, own_ptrs, offs_l, offs_c, L, C: gl.constexpr):
        """(ws_x_shuffle, TILE = _shuffle_tile_layout) x at the 8 positions before each thread's own 8, in x's type:
        the pair's first lane loads them (16 bytes a channel; 0 before the sequence's start), the second takes the
        first lane's own by a shuffle (shfl.up within lane pairs; a first lane keeps its load). The load's mask is the
        previous positions' own (in [0, L)), not the thread's: at a ragged end the 8 before a first lane whose own run
        past L are all in the sequence."""
        first_lane = ((offs_l % 16) < 8) & (offs_l >= 8) & (offs_l - 8 < L)
        halo = gl.load(own_ptrs - 8, mask=gl.expand_dims(first_lane, 1) & gl.expand_dims(offs_c < C, 0), other=0.0)
        return gl.inline_asm_elementwise(
            "{ .reg .pred p; .reg .b32 t; "
            "shfl.sync.up.b32 t|p, $4, 1, 0x1e00, -1; selp.b32 $0, t, $8, p; "
            "shfl.sync.up.b32 t|p, $5, 1, 0x1e00, -1; selp.b32 $1, t, $9, p; "
            "shfl.sync.up.b32 t|p, $6, 1, 0x1e00, -1; selp.b32 $2, t, $10, p; "
            "shfl.sync.up.b32 t|p, $7, 1, 0x1e00, -1; selp.b32 $3, t, $11, p; }",
            "=r,=r,=r,=r,r,r,r,r,r,r,r,r", [own, halo], dtype=own.dtype, is_pure=True, pack=8)

    @gluon.jit
    def _shifted_tap(previous, own, SHIFT: gl.constexpr):
        """(ws_x_shuffle) x `SHIFT` positions back (0, 2, 4, 6 or 8) from the previous and own 8 positions of each
        thread (_previous_positions)."""
        gl.static_assert(SHIFT % 2 == 0 and SHIFT <= 8, "ws_x_shuffle: taps an even number of positions back, <= 8")
        if SHIFT == 0:
            return own
        elif SHIFT == 8:
            return previous
        else:
            return gl.inline_asm_elementwise(_tap_join_asm(SHIFT), "=r,=r,=r,=r,r,r,r,r,r,r,r,r", [previous, own],
                                             dtype=own.dtype, is_pure=True, pack=8)

    @gluon.jit
    def _widen(v, BF16_SHIFTS: gl.constexpr = False):
        """v (x's type) in fp32. With BF16_SHIFTS (bf16 v, an even count of elements a thread) by two ALU instructions a
        register of two packed elements (shl.b32 and and.b32 of that register), exact as a conversion is: Triton's
        bf16 -> fp32 (cvt.f32.bf16 of each half) took a PRMT that moves the upper half down and a shift back up, three
        instructions a pair where fp16's HADD2.F32 takes two (Triton 3.6, sm_90a, offline, session 53)."""
        if BF16_SHIFTS:
            return gl.inline_asm_elementwise("{ shl.b32 $0, $2, 16; and.b32 $1, $2, 0xffff0000; }", "=r,=r,r", [v],
                                             dtype=gl.float32, is_pure=True, pack=2)
        else:
            return v.to(gl.float32)

    @gluon.jit
    def _conv_norm_tile(x_row, offs_l, offs_c, in_range, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr, L, eps,
                        C: gl.constexpr, KERNEL_SIZE: gl.constexpr, DILATION: gl.constexpr, EVEN_L: gl.constexpr,
                        BLOCK_L: gl.constexpr, TILE: gl.constexpr, conv_smem=None, CONV_SMEM: gl.constexpr = False,
                        X_SHUFFLE: gl.constexpr = False, conv_regs=None, CONV_REGS: gl.constexpr = False,
                        BF16_SHIFTS: gl.constexpr = False):
        """LayerNorm(causal depthwise conv(x)) * gamma + beta of one (BLOCK_L, C) tile of x's row, fp32 in TILE, and
        the conv output's mean and rstd per position (what a training forward saves). With CONV_SMEM the conv's taps
        come from `conv_smem` (_stage_conv_taps) instead of the (C, 1, K) weight in global memory; with CONV_REGS from
        `conv_regs`, the K taps in registers (_load_conv_taps). With X_SHUFFLE
        (TILE = _shuffle_tile_layout) x is loaded once and its shifted taps come from lane pairs
        (_previous_positions), and with BF16_SHIFTS (bf16 x) its taps go to fp32 by _widen's shifts."""
        y = gl.zeros([BLOCK_L, C], gl.float32, TILE) + gl.expand_dims(gl.load(conv_b_ptr + offs_c).to(gl.float32), 0)
        if X_SHUFFLE:  # (TILE is _shuffle_tile_layout) x's own tile and the 8 positions before each lane pair
            own_ptrs = x_row + gl.expand_dims(offs_c, 0) * L + gl.expand_dims(offs_l, 1)
            own = _load_x_tile(own_ptrs, in_range, EVEN_L, FP32=False)
            previous = _previous_positions(own, own_ptrs, offs_l, offs_c, L, C)
        for k in gl.static_range(KERNEL_SIZE):
            shift = (KERNEL_SIZE - 1 - k) * DILATION  # the last tap (shift 0) is the only unshifted one
            if CONV_REGS:
                w_tap = conv_regs[k]
            elif CONV_SMEM:
                w_tap = conv_smem.slice(k * C, C).load(gl.SliceLayout(0, TILE))
            else:
                w_tap = gl.load(conv_w_ptr + offs_c * KERNEL_SIZE + k).to(gl.float32)
            if X_SHUFFLE:
                x_tap = _shifted_tap(previous, own, (KERNEL_SIZE - 1 - k) * DILATION)
            else:
                tap_ptrs = x_row + gl.expand_dims(offs_c, 0) * L + gl.expand_dims(offs_l - shift, 1)
                if k == KERNEL_SIZE - 1:
                    x_tap = _load_x_tile(tap_ptrs, in_range, EVEN_L)
                else:
                    x_tap = gl.load(tap_ptrs, mask=in_range & gl.expand_dims(offs_l >= shift, 1), other=0.0)
            y += _widen(x_tap, BF16_SHIFTS) * gl.expand_dims(w_tap, 0)
        mean = gl.sum(y, axis=1) / C
        centered = y - gl.expand_dims(mean, 1)
        rstd = gl.rsqrt(gl.sum(centered * centered, axis=1) / C + eps)
        gamma = gl.load(gamma_ptr + offs_c).to(gl.float32)
        beta = gl.load(beta_ptr + offs_c).to(gl.float32)
        return (centered * gl.expand_dims(rstd, 1)) * gl.expand_dims(gamma, 0) + gl.expand_dims(beta, 0), mean, rstd

    @gluon.jit
    def cheri_block_kernel(
        x_ptr, out_ptr, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr, w1_ptr, b1_ptr, w2_ptr, b2_ptr,
        w1_lo_ptr, w2_lo_ptr, hidden_ptr, mean_ptr, rstd_ptr, L, eps,
        C: gl.constexpr, HIDDEN: gl.constexpr, KERNEL_SIZE: gl.constexpr, DILATION: gl.constexpr,
        EVEN_L: gl.constexpr, BLOCK_L: gl.constexpr, BLOCK_E: gl.constexpr, STAGES: gl.constexpr,
        W1_STAGES: gl.constexpr, SPLIT: gl.constexpr, TRAINING: gl.constexpr, Z_REGS: gl.constexpr,
        LOOP: gl.constexpr, num_warps: gl.constexpr,
    ):
        """out = x + GELU(LayerNorm(conv(x)) @ W1^T + b1) @ W2^T + b2 for one (n, BLOCK_L positions) tile.
        x, out: (N, C, L) contiguous; W1 (E, C), W2 (C, E) bf16 or fp16 contiguous; C a power of 2 (16..128),
        BLOCK_L = 16 * num_warps, HIDDEN a multiple of BLOCK_E, W1_STAGES >= STAGES >= 2 (the W1 and W2 rings'
        depths). With SPLIT (an fp32 model's bf16x3 mode) W1/W2 are the bf16 hi parts and w1_lo/w2_lo the lo parts
        (W - hi), z and the hidden layer split alike in registers, and each GEMM is three (lo*hi + hi*lo + hi*hi, fp32
        accumulators); otherwise w1_lo/w2_lo are not read. With TRAINING (the training forward) it also saves what
        the backward reads, as the Triton kernel does: the hidden layer (N, L, HIDDEN) (fp32 with SPLIT, else in the
        dots' type) and the conv output's mean and rstd (N, L) fp32; otherwise hidden/mean/rstd are not written.
        With Z_REGS (not with SPLIT) every first GEMM reads z from registers (loaded once from its shared-memory copy)
        instead of shared memory: half the shared-memory operand traffic of those wgmmas, for BLOCK_L * C / 64
        registers a thread more."""
        gl.static_assert(STAGES >= 2, "the ring holds the chunk in use and the next one")
        gl.static_assert(not (Z_REGS and SPLIT), "z from registers is for one-pass dots")
        gl.static_assert(W1_STAGES >= STAGES, "the W1 ring is at least as deep as the W2 ring")
        gl.static_assert(BLOCK_L == 16 * num_warps, "one 16-row wgmma slice per warp")
        TILE: gl.constexpr = _tile_layout(BLOCK_L, C, num_warps)
        W1_LAYOUT: gl.constexpr = _row_major_layout(BLOCK_E, C, num_warps)
        W2_LAYOUT: gl.constexpr = _row_major_layout(C, BLOCK_E, num_warps)
        ACC: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                      instr_shape=[16, C, 16])
        PRE: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                      instr_shape=[16, BLOCK_E, 16])
        H_OPERAND: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=ACC, k_width=2)
        Z_OPERAND: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=PRE, k_width=2)
        DOT_T: gl.constexpr = w1_ptr.dtype.element_ty  # bf16 or fp16: the dots' operand type (z, h rounded to it)
        Z_SHARED: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_L, C], DOT_T)
        W1_SHARED: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_E, C], DOT_T)
        W2_SHARED: gl.constexpr = gl.NVMMASharedLayout.get_default_for([C, BLOCK_E], DOT_T)
        n_chunks: gl.constexpr = HIDDEN // BLOCK_E

        w1_smem = gl.allocate_shared_memory(DOT_T, [W1_STAGES, BLOCK_E, C], W1_SHARED)
        w2_smem = gl.allocate_shared_memory(DOT_T, [STAGES, C, BLOCK_E], W2_SHARED)
        z_smem = gl.allocate_shared_memory(DOT_T, [BLOCK_L, C], Z_SHARED)
        if SPLIT:  # the lo parts: rings beside the hi ones, and z's
            w1lo_smem = gl.allocate_shared_memory(DOT_T, [W1_STAGES, BLOCK_E, C], W1_SHARED)
            w2lo_smem = gl.allocate_shared_memory(DOT_T, [STAGES, C, BLOCK_E], W2_SHARED)
            zlo_smem = gl.allocate_shared_memory(DOT_T, [BLOCK_L, C], Z_SHARED)
        else:  # (never read)
            w1lo_smem = w1_smem
            w2lo_smem = w2_smem
            zlo_smem = z_smem
        HIDDEN_P2: gl.constexpr = _next_power_of_2(HIDDEN)  # gl.arange's length
        HIDDEN_ROW: gl.constexpr = gl.BlockedLayout([max(1, HIDDEN_P2 // (32 * num_warps))], [32], [num_warps], [0])
        offs_hidden = gl.arange(0, HIDDEN_P2, layout=HIDDEN_ROW)
        b1_smem = gl.allocate_shared_memory(  # b1 in fp32, read from here by every chunk's GELU
            gl.float32, [HIDDEN_P2], gl.SwizzledSharedLayout(1, 1, 1, order=[0]),
            gl.load(b1_ptr + offs_hidden, mask=offs_hidden < HIDDEN, other=0.0).to(gl.float32))
        # (the same bytes a row a chunk, for the chunk loop's run-time chunk index)
        b1_rows = _reinterpret(b1_smem, gl.float32, [HIDDEN_P2 // BLOCK_E, BLOCK_E],
                               gl.SwizzledSharedLayout(1, 1, 1, order=[0]))
        # Weight rings: W1[k] sits in slot k % W1_STAGES, W2[k] in slot k % STAGES. The first chunks of both load
        # under the conv + LayerNorm prologue, one commit group per chunk (W1_STAGES groups); after that each step
        # refills the W1 slot its first GEMM freed and the W2 slot the previous step's second GEMM freed, as one
        # group, with static wait_group counts (_mlp_step).
        for k in gl.static_range(W1_STAGES):
            if k < n_chunks:
                _load_w1(w1_smem, w1lo_smem, w1_ptr, w1_lo_ptr, k, W1_STAGES, C, BLOCK_E, W1_LAYOUT, SPLIT)
                if k < STAGES - LOOP:  # (the looped schedule's first step loads W2[STAGES - 1])
                    _load_w2(w2_smem, w2lo_smem, w2_ptr, w2_lo_ptr, k, STAGES, C, HIDDEN, BLOCK_E, W2_LAYOUT, SPLIT)
            async_copy.commit_group()

        # ---- conv + LayerNorm of this tile, fp32, (BLOCK_L, C) -------------------------------------------------
        pid = gl.program_id(0)
        num_l_blocks = gl.cdiv(L, BLOCK_L)
        n = pid // num_l_blocks
        offs_l = (pid % num_l_blocks) * BLOCK_L + gl.arange(0, BLOCK_L, layout=gl.SliceLayout(1, TILE))
        offs_c = gl.arange(0, C, layout=gl.SliceLayout(0, TILE))
        row = n.to(gl.int64) * C * L
        x_row = x_ptr + row
        in_range = gl.expand_dims(offs_l < L, 1) & gl.expand_dims(offs_c < C, 0)
        z, mean, rstd = _conv_norm_tile(x_row, offs_l, offs_c, in_range, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr, L,
                                        eps, C, KERNEL_SIZE, DILATION, EVEN_L, BLOCK_L, TILE)
        if TRAINING:  # the statistics (N, L) fp32 (the lanes across C hold copies: one store each)
            stat_offsets = n.to(gl.int64) * L + offs_l
            gl.store(mean_ptr + stat_offsets, mean, mask=offs_l < L)
            gl.store(rstd_ptr + stat_offsets, rstd, mask=offs_l < L)
        # the saved hidden layer's rows of this tile, (BLOCK_L, 1) pointers in the pre-activation's row layout
        offs_l_pre = (pid % num_l_blocks) * BLOCK_L + gl.arange(0, BLOCK_L, layout=gl.SliceLayout(1, PRE))
        hidden_rows = gl.expand_dims(hidden_ptr + (n.to(gl.int64) * L + offs_l_pre) * HIDDEN, 1)
        rows_in = gl.expand_dims(offs_l_pre < L, 1)
        z_hi = z.to(z_smem.dtype)
        z_smem.store(z_hi)
        if SPLIT:
            zlo_smem.store((z - z_hi.to(gl.float32)).to(z_smem.dtype))
        fence_async_shared()

        # ---- the MLP over hidden chunks: dot1(j+1) is in flight while chunk j's GELU runs ------------------------
        # Statically unrolled (straight-line code: no loop-carried copies), and no non-wgmma instruction may write
        # a wgmma accumulator while another wgmma is in flight, or ptxas serialises them all. So the output
        # accumulator starts as b2 (defined before any wgmma), chunk 0's first GEMM completes before
        # chunk 1's starts, and every later first GEMM writes over a finished pre-activation (see _first_gemm).
        # The residual is added after the last wgmma, not into the starting accumulator. With SPLIT this is for
        # accuracy: the tensor cores' fp32 accumulation truncates each partial sum to the accumulator's exponent, so
        # starting from x (|x| up to ~4) cost 2.4e-5 max-abs at C=128, E=512 (96 k-steps) against 8e-6 from b2 (H200,
        # session 21). It also leaves the prologue without the residual's shuffle into the accumulator's layout (fp32
        # inference went 1.056 -> 0.989 ms at N=512); x is read again at the end, from L2.
        offs_c_acc = gl.arange(0, C, layout=gl.SliceLayout(0, ACC))
        tile_offsets = gl.expand_dims(offs_c, 0) * L + gl.expand_dims(offs_l, 1)
        acc = gl.zeros([BLOCK_L, C], gl.float32, ACC) + gl.expand_dims(gl.load(b2_ptr + offs_c_acc).to(gl.float32), 0)
        acc = warpgroup_mma_init(acc)
        # both schedules start alike (with LOOP the rings are equally deep, W1_STAGES == STAGES)
        async_copy.wait_group(W1_STAGES - 2)  # chunks 0 and 1 (this thread's copies; W2[0] with them)
        _cta_barrier()  # everyone's copies, and all of z (fenced above for the tensor cores' async proxy)
        if Z_REGS:  # the first GEMMs' A operand, from registers from here on
            z_a = z_smem.load(Z_OPERAND)
        else:
            z_a = z_smem
        bias = _load_bias(b1_smem, 0, BLOCK_E, PRE)
        pre = _first_gemm(z_a, zlo_smem, w1_smem, w1lo_smem, 0, gl.zeros([BLOCK_L, BLOCK_E], gl.float32, PRE),
                          W1_STAGES, SPLIT)
        pre = warpgroup_mma_wait(num_outstanding=0, deps=(pre, ))
        if LOOP:
            # chunk t = 0 .. n_chunks - 1 by _loop_step: the steps whose refills all fall inside the hidden width
            # (t = 1 .. n_chunks - STAGES) as a loop of two steps an iteration (the two pre-activations swap
            # registers each step, so after two they are back in place: no copies), the others unrolled.
            pre, spare, acc, bias = _loop_step(
                pre, gl.zeros([BLOCK_L, BLOCK_E], gl.float32, PRE), acc, bias, 0, z_a, zlo_smem, w1_smem, w1lo_smem,
                w2_smem, w2lo_smem, w1_ptr, w1_lo_ptr, w2_ptr, w2_lo_ptr, b1_rows, hidden_rows, rows_in, C, HIDDEN,
                BLOCK_E, STAGES, PRE, H_OPERAND, W1_LAYOUT, W2_LAYOUT, SPLIT, TRAINING, EVEN_L, False, False, False,
                n_chunks > 1)
            PAIRS: gl.constexpr = max(0, n_chunks - STAGES) // 2
            for i in range(PAIRS):
                for half in gl.static_range(2):
                    pre, spare, acc, bias = _loop_step(
                        pre, spare, acc, bias, 1 + 2 * i + half, z_a, zlo_smem, w1_smem, w1lo_smem, w2_smem,
                        w2lo_smem, w1_ptr, w1_lo_ptr, w2_ptr, w2_lo_ptr, b1_rows, hidden_rows, rows_in, C, HIDDEN,
                        BLOCK_E, STAGES, PRE, H_OPERAND, W1_LAYOUT, W2_LAYOUT, SPLIT, TRAINING, EVEN_L, True, True,
                        True, True)
            for t in gl.static_range(1 + 2 * PAIRS, n_chunks):
                pre, spare, acc, bias = _loop_step(
                    pre, spare, acc, bias, t, z_a, zlo_smem, w1_smem, w1lo_smem, w2_smem, w2lo_smem, w1_ptr,
                    w1_lo_ptr, w2_ptr, w2_lo_ptr, b1_rows, hidden_rows, rows_in, C, HIDDEN, BLOCK_E, STAGES, PRE,
                    H_OPERAND, W1_LAYOUT, W2_LAYOUT, SPLIT, TRAINING, EVEN_L, True, t - 1 + STAGES < n_chunks,
                    t - 2 + STAGES < n_chunks, t + 1 < n_chunks)
        else:
            _cta_barrier()  # every warp group is done with W1[0]
            if W1_STAGES < n_chunks:
                _load_w1(w1_smem, w1lo_smem, w1_ptr, w1_lo_ptr, W1_STAGES, W1_STAGES, C, BLOCK_E, W1_LAYOUT, SPLIT)
            async_copy.commit_group()
            if n_chunks > 1:
                next_pre = _first_gemm(z_a, zlo_smem, w1_smem, w1lo_smem, 1,
                                       gl.zeros([BLOCK_L, BLOCK_E], gl.float32, PRE), W1_STAGES, SPLIT)
            if n_chunks > 1:
                next_bias = _load_bias(b1_smem, 1, BLOCK_E, PRE)
            acc = _second_gemm(pre, acc, 0, w2_smem, w2lo_smem, bias, hidden_rows, rows_in, STAGES, H_OPERAND, SPLIT,
                               TRAINING, EVEN_L, BLOCK_E, PRE, -1)
            if n_chunks > 1:
                bias = next_bias
            for j in gl.static_range(1, n_chunks - 1):
                next_pre, pre, acc, bias = _mlp_step(next_pre, pre, acc, bias, j, z_a, zlo_smem, w1_smem, w1lo_smem,
                                                     w2_smem, w2lo_smem, w1_ptr, w1_lo_ptr, w2_ptr, w2_lo_ptr, b1_smem,
                                                     hidden_rows, rows_in, n_chunks, C, HIDDEN, BLOCK_L, BLOCK_E, STAGES,
                                                     W1_STAGES, PRE, H_OPERAND, W1_LAYOUT, W2_LAYOUT, SPLIT, TRAINING,
                                                     EVEN_L)
            if n_chunks > 1:
                pre, acc = warpgroup_mma_wait(num_outstanding=0, deps=(next_pre, acc))
                async_copy.wait_group(0)  # W2 of the last chunk may be in the newest group
                _cta_barrier()
                acc = _second_gemm(pre, acc, n_chunks - 1, w2_smem, w2lo_smem, bias, hidden_rows, rows_in, STAGES,
                                   H_OPERAND, SPLIT, TRAINING, EVEN_L, BLOCK_E, PRE, -1)
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))
        async_copy.wait_group(0)

        # ---- store ---------------------------------------------------------------------------------------------
        out = gl.convert_layout(acc, TILE)
        out += _load_x_tile(x_row + tile_offsets, in_range, EVEN_L)  # the residual, again (L2: the prologue read it)
        if EVEN_L:
            gl.store(out_ptr + row + tile_offsets, out.to(out_ptr.dtype.element_ty))
        else:
            gl.store(out_ptr + row + tile_offsets, out.to(out_ptr.dtype.element_ty), mask=in_range)

    # Triton's own launch path costs tens of microseconds of host time a call, a visible part of small-N calls
    _LAUNCHER = FastLaunch(cheri_block_kernel)

    # ---- the warp-specialised, persistent version ----------------------------------------------------------------
    # One CTA per SM walks groups of CONSUMERS (2 or 3) (n, BLOCK_L positions) tiles. Partitions: CONSUMERS consumer
    # warp groups, one tile of each group each, and a producer warp group that streams W1/W2 chunks into a
    # STAGES-deep ring by cp.async. Each ring slot holds W1[k] and W2[k]; `ready[s]` completes when the producer's
    # copies into slot s land (one cp.async arrival per producer thread), `empty[s]` when every consumer is done with
    # it (one arrival each). So each weight chunk crosses L2 -> SM once per CONSUMERS * BLOCK_L positions
    # (cheri_block_kernel: once per BLOCK_L). A consumer runs each chunk in order (first GEMM, GELU, second GEMM) with
    # no overlap of its own: the overlap is between consumers, which synchronise only through the ring's mbarriers,
    # so one's GELU and conv run under another's GEMMs. The chunk loop is a loop, not unrolled: two unrolled,
    # software-pipelined consumers (6,000 SASS instructions each) missed the instruction cache and spilled (ncu,
    # session 15: 0.85 ms against the Gluon kernel's 0.50). This looped version takes 0.52 at best (session 16); a
    # consumer taking its chunks in pairs, the pair's GEMMs under its GELUs, took 0.58 (not kept; in git history).
    # With PIPELINE (the ws_pipeline tuning variant, _ws_step) each consumer runs the looped schedule of
    # cheri_block_kernel's LOOP instead, its slots released through the ring: 0.5016 ms at (64, 32, ring 8) against
    # one chunk at a time's 0.4922 and the default's 0.4431 (H200, N=512 bf16, session 28). ncu (session 28): the
    # consumers hardly wait for weights (about 1% of the stall samples); they wait on x's loads and their own wgmmas,
    # and the producer spends a fifth of all samples waiting for free slots.
    # With Z_PRODUCER (layout gluon_wsz, session 31) a fourth warp group computes every tile's conv + LayerNorm into
    # a ring of z tiles (_ws_z_producer), so the consumers run only the MLP and the residual: one chunk at a time
    # 0.4350 ms against 0.4953 without it and the default's 0.4445 (H200, N=512 bf16, ring 3). With PINGPONG 1 a
    # consumer issues chunk k's second GEMM with chunk k+1's first and waits once a chunk (0.4262 at ring 4); with 2 the
    # two consumers also take turns at issuing (0.4481: slower). ncu (session 31) then shows the consumers issuing or
    # eligible about 30% of their samples, waiting on their wgmmas 9-12% and on the weight ring 11%, the producer and the
    # z producer mostly idle; the degree-3 GELU (GELU_FIT 3, gelu="poly3") took N=512 bf16 to 0.4055.

    @gluon.jit
    def _ws_groups(num_tiles, CONSUMERS: gl.constexpr, BALANCE: gl.constexpr):
        """(num_groups, lone_start): this launch's groups, walked by every partition from the program id in steps of
        the grid, and the first lone group. Groups below lone_start hold CONSUMERS tiles each (group g: tiles
        CONSUMERS * g + c; the last one's missing tiles, when num_tiles does not divide, repeat the last tile);
        groups from lone_start on (BALANCE) hold one tile each, CONSUMERS * lone_start + (g - lone_start), for
        consumer 0 alone. With BALANCE, when the tiles left after the grid's whole rounds of CONSUMERS tiles a CTA are
        no more than the grid (N=512: 8192 tiles, 132 CTAs, 8 left), they go one a CTA instead of CONSUMERS a CTA, so
        that the last round takes one consumer's tile time instead of a group's; lone_start = the whole rounds'
        groups. Otherwise (and without BALANCE) lone_start = num_groups, no lone group."""
        num_groups = gl.cdiv(num_tiles, CONSUMERS)
        lone_start = num_groups
        if BALANCE:
            programs = gl.num_programs(0)
            paired = num_tiles // (CONSUMERS * programs) * programs  # the whole rounds' groups
            left = num_tiles - CONSUMERS * paired
            lone = left <= programs
            lone_start = gl.where(lone, paired, num_groups)
            num_groups = gl.where(lone, paired + left, num_groups)
        return num_groups, lone_start

    @gluon.jit
    def _ws_producer(w1_smem, w2_smem, ready, empty, w1_ptr, w2_ptr, num_tiles,
                     C: gl.constexpr, HIDDEN: gl.constexpr, BLOCK_E: gl.constexpr, STAGES: gl.constexpr,
                     CONSUMERS: gl.constexpr, WARPS: gl.constexpr, BALANCE: gl.constexpr, ready2=None, empty2=None,
                     SPLIT_RING: gl.constexpr = False):
        """The weight producer: every chunk of every group this CTA runs, W1[k] and W2[:, k] into ring slot count %
        STAGES once the consumers have released its previous fill. With SPLIT_RING the two halves have rings (barrier
        pairs) of their own, ready/empty for W1 and ready2/empty2 for W2, and W1 runs a chunk ahead: chunk c's W1, then
        chunk c-1's W2 (the consumers' step k needs W2[k] and W1[k+1] together) (_ws_split_producer)."""
        if SPLIT_RING:
            _ws_split_producer(w1_smem, w2_smem, ready, empty, ready2, empty2, w1_ptr, w2_ptr, num_tiles, C, HIDDEN,
                               BLOCK_E, STAGES, CONSUMERS, WARPS, BALANCE)
        else:
            _ws_joint_producer(w1_smem, w2_smem, ready, empty, w1_ptr, w2_ptr, num_tiles, C, HIDDEN, BLOCK_E, STAGES,
                               CONSUMERS, WARPS, BALANCE)

    @gluon.jit
    def _weight_offsets(C: gl.constexpr, HIDDEN: gl.constexpr, BLOCK_E: gl.constexpr, WARPS: gl.constexpr):
        """The weight producer's element offsets of one chunk: W1's (BLOCK_E, C) rows and W2's (C, BLOCK_E) columns,
        each read along its contiguous axis, 16 bytes a thread."""
        W1_LAYOUT: gl.constexpr = _row_major_layout(BLOCK_E, C, WARPS)
        W2_LAYOUT: gl.constexpr = _row_major_layout(C, BLOCK_E, WARPS)
        w1_rows = gl.arange(0, BLOCK_E, layout=gl.SliceLayout(1, W1_LAYOUT))
        w1_cols = gl.arange(0, C, layout=gl.SliceLayout(0, W1_LAYOUT))
        w2_rows = gl.arange(0, C, layout=gl.SliceLayout(1, W2_LAYOUT))
        w2_cols = gl.arange(0, BLOCK_E, layout=gl.SliceLayout(0, W2_LAYOUT))
        return (gl.expand_dims(w1_rows, 1) * C + gl.expand_dims(w1_cols, 0),
                gl.expand_dims(w2_rows, 1) * HIDDEN + gl.expand_dims(w2_cols, 0))

    @gluon.jit
    def _ws_split_producer(w1_smem, w2_smem, ready1, empty1, ready2, empty2, w1_ptr, w2_ptr, num_tiles,
                           C: gl.constexpr, HIDDEN: gl.constexpr, BLOCK_E: gl.constexpr, STAGES: gl.constexpr,
                           CONSUMERS: gl.constexpr, WARPS: gl.constexpr, BALANCE: gl.constexpr):
        """(SPLIT_RING) _ws_producer with a W1 ring and a W2 ring: chunk c's W1, then chunk c-1's W2, for every chunk
        c of the CTA's sequence (the chunk count runs on across tiles), then the last chunk's W2. A W1 slot is held by
        the consumers for one step (its first GEMM) and a W2 slot for one step (its second GEMM), where a joint slot is
        held for two: at the same shared memory the consumers may drift two chunks apart instead of one before the one
        ahead waits for the other's release."""
        n_chunks: gl.constexpr = HIDDEN // BLOCK_E
        w1_offsets, w2_offsets = _weight_offsets(C, HIDDEN, BLOCK_E, WARPS)
        count = 0  # chunks whose W1 is filled so far; W2 trails by one
        previous_k = 0  # the hidden chunk of fill count - 1 (its W2 is the next W2 fill)
        first = gl.program_id(0)
        num_groups, _ = _ws_groups(num_tiles, CONSUMERS, BALANCE)
        for group in range(first, num_groups, gl.num_programs(0)):
            for k in range(n_chunks):
                _fill_slot(w1_smem, empty1, ready1, w1_ptr + k * BLOCK_E * C + w1_offsets, count, STAGES)
                if count > 0:
                    _fill_slot(w2_smem, empty2, ready2, w2_ptr + previous_k * BLOCK_E + w2_offsets, count - 1, STAGES)
                previous_k = k
                count += 1
        if count > 0:  # the last chunk's W2
            _fill_slot(w2_smem, empty2, ready2, w2_ptr + previous_k * BLOCK_E + w2_offsets, count - 1, STAGES)

    @gluon.jit
    def _fill_slot(ring, empty, ready, ptrs, fill, STAGES: gl.constexpr):
        """(ws_split_ring) The ring's fill-th fill: slot fill % STAGES once the consumers have released its previous
        fill, loaded from ptrs by cp.async, its arrival on `ready`."""
        slot = fill % STAGES
        mbarrier.wait(empty.index(slot), ((fill // STAGES) & 1) ^ 1)
        _async_load(ring.index(slot), ptrs)
        async_copy.mbarrier_arrive(ready.index(slot), increment_count=False)

    @gluon.jit
    def _ws_joint_producer(w1_smem, w2_smem, ready, empty, w1_ptr, w2_ptr, num_tiles,
                           C: gl.constexpr, HIDDEN: gl.constexpr, BLOCK_E: gl.constexpr, STAGES: gl.constexpr,
                           CONSUMERS: gl.constexpr, WARPS: gl.constexpr, BALANCE: gl.constexpr):
        n_chunks: gl.constexpr = HIDDEN // BLOCK_E
        w1_offsets, w2_offsets = _weight_offsets(C, HIDDEN, BLOCK_E, WARPS)
        count = 0  # chunks filled so far: slot count % STAGES, its (count // STAGES)-th fill
        first = gl.program_id(0)  # (read before _ws_groups: in the other order the default's SASS moved, Triton 3.6)
        num_groups, _ = _ws_groups(num_tiles, CONSUMERS, BALANCE)
        for group in range(first, num_groups, gl.num_programs(0)):
            for k in range(n_chunks):
                slot = count % STAGES
                # the consumers' release of this slot's previous fill; the first round's waits (parity 1 of a fresh
                # barrier) pass at once
                mbarrier.wait(empty.index(slot), ((count // STAGES) & 1) ^ 1)
                _async_load(w1_smem.index(slot), w1_ptr + k * BLOCK_E * C + w1_offsets)
                _async_load(w2_smem.index(slot), w2_ptr + k * BLOCK_E + w2_offsets)
                async_copy.mbarrier_arrive(ready.index(slot), increment_count=False)
                count += 1

    @gluon.jit
    def _release(slot_empty, THREAD_RELEASE: gl.constexpr):
        """A consumer's release of a weight-ring slot (its `empty` barrier). Without THREAD_RELEASE one arrive for the
        warp group: Triton's shared-memory barrier pass puts a warp-group barrier before it (an arrive counts as
        touching all of shared memory) and another before the next shared access (Triton 3.6). With it every thread
        arrives once its own wgmma wait is behind it (`empty` counts CONSUMERS * 128 arrivals), through the
        cp.async-arrive form, which the pass does not treat so: the first of those barriers goes (offline, sm_90a;
        a consumer thread has no cp.async of its own in flight, so its arrival is immediate)."""
        if THREAD_RELEASE:
            async_copy.mbarrier_arrive(slot_empty, increment_count=False)
        else:
            mbarrier.arrive(slot_empty)

    @gluon.jit
    def _ws_step(pre, spare, acc, bias, t, count, z_a, w1_smem, w2_smem, b1_smem, ready, empty, dummy_rows,
                 dummy_in, BLOCK_E: gl.constexpr, STAGES: gl.constexpr, PRE: gl.constexpr, H_OPERAND: gl.constexpr,
                 HAS_NEXT: gl.constexpr, RELEASE: gl.constexpr, THREAD_RELEASE: gl.constexpr):
        """Chunk t of a pipelined consumer's tile (PIPELINE), whose first chunk is the ring's chunk `count`: `pre` is
        chunk t's finished pre-activation, `spare` a finished, dead one, `acc` the output accumulator with chunk t-1's
        second GEMM possibly in flight, `bias` b1[t]. With HAS_NEXT: wait until chunk t+1's slot has landed and issue
        its first GEMM into spare's registers, then chunk t's GELU and second GEMM, then a wgmma wait that leaves only
        that second GEMM in flight; chunk t-1's second GEMM is then done, so (RELEASE) its slot goes back to the
        producer. Without HAS_NEXT (the last chunk) only the GELU and second GEMM. The same schedule as _loop_step
        with the producer's ring in place of the refills and CTA barriers. Returns (chunk t+1's finished
        pre-activation, chunk t's, acc, b1[t+1])."""
        if HAS_NEXT:
            chunk = count + t + 1
            mbarrier.wait(ready.index(chunk % STAGES), (chunk // STAGES) & 1)
            next_pre = _first_gemm(z_a, z_a, w1_smem, w1_smem, chunk, spare, STAGES, False)
            next_bias = b1_smem.index(t + 1).load(gl.SliceLayout(0, PRE))
        else:
            next_pre = pre
            next_bias = bias
        acc = _second_gemm(pre, acc, count + t, w2_smem, w2_smem, bias, dummy_rows, dummy_in, STAGES, H_OPERAND, False,
                           False, True, BLOCK_E, PRE, -1)
        if HAS_NEXT:
            next_pre = warpgroup_mma_wait(num_outstanding=1, deps=(next_pre, ))
            if RELEASE:  # chunk t-1's second GEMM is done: its W1 and W2 are free
                _release(empty.index((count + t - 1) % STAGES), THREAD_RELEASE)
        return next_pre, pre, acc, next_bias

    @gluon.jit
    def _ws_first_gemm(pre, ones, z_a, b1_smem, w1_smem, k, slot, B1_MMA: gl.constexpr):
        """(gluon_wsz, pingpong / tail) chunk k's first GEMM into pre from the ring's `slot`, issued asynchronously;
        with B1_MMA after b1's k=16 wgmma (ones, a (BLOCK_L, 16) block whose column 0 is 1, against chunk k's b1
        block), which the GEMM accumulates onto."""
        if B1_MMA:
            pre = warpgroup_mma(ones, b1_smem.index(k).permute((1, 0)), pre, use_acc=False, is_async=True)
        return warpgroup_mma(z_a, w1_smem.index(slot).permute((1, 0)), pre, use_acc=B1_MMA, is_async=True)

    @gluon.jit
    def _hidden_value(pre, b1_row, FIT: gl.constexpr, B1_MMA: gl.constexpr):
        """GELU(pre + b1[chunk]) in fp32 (b1_row: the chunk's row of b1's fp32 copy in shared memory; with B1_MMA pre
        has b1 in it already and b1_row is not read)."""
        if not B1_MMA:
            pre = pre + gl.expand_dims(b1_row.load(gl.SliceLayout(0, pre.type.layout)), 0)
        return _gelu_poly(pre, FIT)

    @gluon.jit
    def _hidden_operand(pre, b1_row, DOT_T: gl.constexpr, H_OPERAND: gl.constexpr, FIT: gl.constexpr,
                        B1_MMA: gl.constexpr = False):
        """GELU(pre + b1[chunk]) (b1_row: the chunk's row of b1's fp32 copy in shared memory) rounded to the dots'
        type, as the second GEMM's A operand (registers). With B1_MMA pre has b1 in it already (b1_row not read)."""
        return gl.convert_layout(_hidden_value(pre, b1_row, FIT, B1_MMA).to(DOT_T), H_OPERAND)

    @gluon.jit
    def _take_turn(turn, turns, CONSUMER: gl.constexpr, PINGPONG: gl.constexpr):
        """With PINGPONG == 2: wait until the other consumer passes this one its turn number `turns` (consumer 0's
        first passes at once: parity 1 of a fresh barrier)."""
        if PINGPONG == 2:
            mbarrier.wait(turn.index(CONSUMER), (turns & 1) ^ (1 - CONSUMER))

    @gluon.jit
    def _pass_turn(turn, CONSUMER: gl.constexpr, PINGPONG: gl.constexpr):
        """With PINGPONG == 2: hand the other consumer its next turn."""
        if PINGPONG == 2:
            mbarrier.arrive(turn.index(1 - CONSUMER))

    @gluon.jit
    def _tile_place(tile, num_l_blocks, L, C: gl.constexpr, BLOCK_L: gl.constexpr, TILE: gl.constexpr,
                    PER_TILE: gl.constexpr):
        """Where tile `tile` lies in x (and out): its sequence's start (elements), its (BLOCK_L, C) element offsets from
        there in TILE, the in-sequence mask, and its positions. With PER_TILE the channel rows' offsets are computed
        from a value LLVM cannot hoist out of the tile loop: from the loop-invariant offs_c * L it kept 16 offsets a
        thread live across every tile, which ptxas spilled, so each tile's end waited for their reloads from the
        stack (an L1 round trip behind the z producer's loads; session 43's profile: 2.6% of a consumer's samples on
        one of them)."""
        n = tile // num_l_blocks
        offs_l = (tile % num_l_blocks) * BLOCK_L + gl.arange(0, BLOCK_L, layout=gl.SliceLayout(1, TILE))
        offs_c = gl.arange(0, C, layout=gl.SliceLayout(0, TILE))
        if PER_TILE:
            offs_c = gl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [offs_c], dtype=gl.int32, is_pure=False,
                                               pack=1)
        in_range = gl.expand_dims(offs_l < L, 1) & gl.expand_dims(offs_c < C, 0)
        offsets = gl.expand_dims(offs_c, 0) * L + gl.expand_dims(offs_l, 1)
        return n.to(gl.int64) * C * L, offsets, in_range, offs_l

    @gluon.jit
    def _ws_consumer(x_ptr, out_ptr, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr, b2_ptr, w1_smem, w2_smem, z_ring,
                     h_ring, b1_smem, b2_smem, ready, empty, z_ready, z_empty, turn, L, eps, num_tiles,
                     CONSUMER: gl.constexpr, CONSUMERS: gl.constexpr, C: gl.constexpr, HIDDEN: gl.constexpr,
                     KERNEL_SIZE: gl.constexpr, DILATION: gl.constexpr, EVEN_L: gl.constexpr, BLOCK_L: gl.constexpr,
                     BLOCK_E: gl.constexpr, STAGES: gl.constexpr, PIPELINE: gl.constexpr, Z_PRODUCER: gl.constexpr,
                     Z_STAGES: gl.constexpr, PINGPONG: gl.constexpr, Z_REGS: gl.constexpr, GELU_FIT: gl.constexpr,
                     B1_MMA: gl.constexpr, THREAD_RELEASE: gl.constexpr, WARPS: gl.constexpr, BALANCE: gl.constexpr,
                     LATE_RESIDUAL: gl.constexpr, ready2=None, empty2=None, SPLIT_RING: gl.constexpr = False,
                     CROSS_TILE: gl.constexpr = False, EPILOGUE16: gl.constexpr = False, FIRST_Z: gl.constexpr = False,
                     conv_smem=None, CONV_SMEM: gl.constexpr = False, X_SHUFFLE: gl.constexpr = False,
                     CONV_REGS: gl.constexpr = False, BF16_SHIFTS: gl.constexpr = False):
        """Consumer CONSUMER of every group of CONSUMERS tiles: tile CONSUMERS * group + CONSUMER, end to end. A
        group's missing tiles (at the end) are computed on the last tile and not stored, so that every consumer
        releases every ring slot. Without PIPELINE one chunk at a time (first GEMM, wait, GELU, second GEMM, wait,
        release); with it chunk t+1's first GEMM and chunk t-1's second GEMM run under chunk t's GELU (_ws_step).
        Without Z_PRODUCER the consumer computes its tile's z itself (conv + LayerNorm) into z_ring's slot CONSUMER;
        with it the z producer has (_ws_z_producer): its j-th tile of this CTA is in slot j % Z_STAGES of z_ring once
        z_ready says so, and the consumer hands the slot back through z_empty after its last first GEMM. With
        EPILOGUE16 (pingpong 1, z producer, early residual, 16-bit x) the residual goes to the accumulator's layout
        under the tile's last GEMM and the tile's 16-bit output, not its fp32 accumulator, through shared memory to
        OUT_TILE, 16 bytes a thread and channel. With FIRST_Z (z producer, not CROSS_TILE) consumer 1 computes its
        first tile's z itself, as the z producer would (_z_tile: the same layout and arithmetic, so the same bits),
        while the z producer computes consumer 0's: both consumers start after one tile's conv + LayerNorm instead of
        consumer 1 after two (the z producer skips that tile; conv_smem, CONV_SMEM, X_SHUFFLE, CONV_REGS and
        BF16_SHIFTS are its own)."""
        TILE: gl.constexpr = _tile_layout(BLOCK_L, C, WARPS)
        # (EPILOGUE16: the residual's loads and the output's stores 8 positions a thread, as the shuffled-taps tile)
        OUT_TILE: gl.constexpr = _shuffle_tile_layout(C, WARPS) if EPILOGUE16 else TILE
        ACC: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[WARPS, 1],
                                                      instr_shape=[16, C, 16])
        PRE: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[WARPS, 1],
                                                      instr_shape=[16, BLOCK_E, 16])
        H_OPERAND: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=ACC, k_width=2)
        n_chunks: gl.constexpr = HIDDEN // BLOCK_E
        num_l_blocks = gl.cdiv(L, BLOCK_L)
        offs_c = gl.arange(0, C, layout=gl.SliceLayout(0, TILE))
        offs_c_acc = gl.arange(0, C, layout=gl.SliceLayout(0, ACC))
        if B1_MMA:  # the A operand of b1's wgmma: a (BLOCK_L, 16) block whose column 0 is 1, the rest 0
            ONES: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=PRE, k_width=2)
            ones_cols = gl.arange(0, 16, layout=gl.SliceLayout(0, ONES))
            ones = gl.where(gl.expand_dims(ones_cols, 0) == 0, 1.0, 0.0) + gl.zeros([BLOCK_L, 16], gl.float32, ONES)
            ones = ones.to(w1_smem.dtype)
        else:
            ones = 0  # (not read)
        count = 0  # chunks consumed so far, as the producer counts them
        turns = 0  # with PINGPONG == 2: turns taken so far
        z_count = CONSUMER  # with Z_PRODUCER: this tile's place in the z producer's order (CONSUMERS a group)
        first = gl.program_id(0)
        num_groups, lone_start = _ws_groups(num_tiles, CONSUMERS, BALANCE)
        # (consumer 0 takes the lone groups' tiles too; the others stop before them)
        loop_end = num_groups if CONSUMER == 0 else lone_start
        if FIRST_Z and CONSUMER == 1:  # this consumer's first tile's z, by itself: slot z_count % Z_STAGES (never
            # used yet, so _z_tile's wait on z_empty passes at once), z_ready arrived on as the z producer would
            if first < loop_end:
                _z_tile_here(x_ptr, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr, z_ring, z_ready, z_empty, L, eps,
                             gl.minimum(CONSUMERS * first + CONSUMER, num_tiles - 1), z_count, num_l_blocks, C,
                             KERNEL_SIZE, DILATION, EVEN_L, BLOCK_L, Z_STAGES, WARPS, conv_smem, CONV_SMEM, X_SHUFFLE,
                             CONV_REGS, BF16_SHIFTS)
        if CROSS_TILE:  # (pingpong) each tile's first GEMM is issued with the previous tile's last second GEMM; the
            # first tile's here, before the loop
            pre = gl.zeros([BLOCK_L, BLOCK_E], gl.float32, PRE)
            if first < loop_end:
                mbarrier.wait(z_ready.index(z_count % Z_STAGES), (z_count // Z_STAGES) & 1)
                mbarrier.wait(ready.index(count % STAGES), (count // STAGES) & 1)
                pre = _ws_first_gemm(pre, ones, z_ring.index(z_count % Z_STAGES), b1_smem, w1_smem, 0, count % STAGES,
                                     B1_MMA)
                pre = warpgroup_mma_wait(num_outstanding=0, deps=(pre, ))
        for group in range(first, loop_end, gl.num_programs(0)):
            if BALANCE and CONSUMER == 0:
                tile = gl.where(group < lone_start, CONSUMERS * group, group + (CONSUMERS - 1) * lone_start)
            else:
                tile = CONSUMERS * group + CONSUMER
            valid = tile < num_tiles
            tile = gl.minimum(tile, num_tiles - 1)
            # b2 now, the residual after the products (as cheri_block_kernel does: the same output bit for bit); with
            # the z producer from the CTA's copy in shared memory (one global load a tile cost its L2 round trip
            # at each tile's start, behind the z producer's loads in L1: session 44's reading of session 43's profile)
            if Z_PRODUCER:
                b2 = b2_smem.load(gl.SliceLayout(0, ACC))
            else:
                b2 = gl.load(b2_ptr + offs_c_acc).to(gl.float32)
            if Z_PRODUCER:
                z_slot = z_count % Z_STAGES
                z_smem = z_ring.index(z_slot)
                acc = gl.zeros([BLOCK_L, C], gl.float32, ACC) + gl.expand_dims(b2, 0)
                if not CROSS_TILE:  # (with it the previous tile's last step waited for this z)
                    mbarrier.wait(z_ready.index(z_slot), (z_count // Z_STAGES) & 1)
            else:
                z_smem = z_ring.index(CONSUMER)
                row, tile_offsets, in_range, offs_l = _tile_place(tile, num_l_blocks, L, C, BLOCK_L, TILE,
                                                                    False)
                z, _, _ = _conv_norm_tile(x_ptr + row, offs_l, offs_c, in_range, conv_w_ptr, conv_b_ptr, gamma_ptr,
                                          beta_ptr, L, eps, C, KERNEL_SIZE, DILATION, EVEN_L, BLOCK_L, TILE)
                _cta_barrier()  # (this partition's warps) the previous tile's first GEMMs have all read z
                z_smem.store(z.to(z_smem.dtype))
                fence_async_shared()
                acc = gl.zeros([BLOCK_L, C], gl.float32, ACC) + gl.expand_dims(b2, 0)
                _cta_barrier()  # all of z is in shared memory
            if Z_REGS:  # the first GEMMs' A operand from registers: z read from shared memory once a tile
                z_a = z_smem.load(gl.DotOperandLayout(operand_index=0, parent=PRE, k_width=2))
                if Z_PRODUCER:  # its slot is free once every warp of this partition has read it
                    _cta_barrier()
                    mbarrier.arrive(z_empty.index(z_slot))
            else:
                z_a = z_smem
            if PIPELINE:
                acc = warpgroup_mma_init(acc)
                mbarrier.wait(ready.index(count % STAGES), (count // STAGES) & 1)
                bias = b1_smem.index(0).load(gl.SliceLayout(0, PRE))
                spare = gl.zeros([BLOCK_L, BLOCK_E], gl.float32, PRE)
                pre = _first_gemm(z_a, z_smem, w1_smem, w1_smem, count, spare, STAGES, False)
                pre = warpgroup_mma_wait(num_outstanding=0, deps=(pre, ))
                pre, spare, acc, bias = _ws_step(pre, spare, acc, bias, 0, count, z_a, w1_smem, w2_smem, b1_smem,
                                                 ready, empty, out_ptr, valid, BLOCK_E, STAGES, PRE, H_OPERAND,
                                                 n_chunks > 1, False, THREAD_RELEASE)
                # chunks from 1 on as a loop of two an iteration (pre and spare swap registers each step, so after two
                # they are back in place), at least the last three unrolled: with only the last one after the loop,
                # ptxas serialises every wgmma (C7513, Triton 3.6, offline)
                PAIRS: gl.constexpr = max(0, n_chunks - 4) // 2
                for i in range(PAIRS):
                    for half in gl.static_range(2):
                        pre, spare, acc, bias = _ws_step(pre, spare, acc, bias, 1 + 2 * i + half, count, z_a, w1_smem,
                                                         w2_smem, b1_smem, ready, empty, out_ptr, valid,
                                                         BLOCK_E, STAGES, PRE, H_OPERAND, True, True,
                                                         THREAD_RELEASE)
                for t in gl.static_range(1 + 2 * PAIRS, n_chunks):
                    pre, spare, acc, bias = _ws_step(pre, spare, acc, bias, t, count, z_a, w1_smem, w2_smem, b1_smem,
                                                     ready, empty, out_ptr, valid, BLOCK_E, STAGES, PRE,
                                                     H_OPERAND, t + 1 < n_chunks, True, THREAD_RELEASE)
                acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))
                if n_chunks > 1:  # the last two chunks' slots (the last step releases none)
                    _release(empty.index((count + n_chunks - 2) % STAGES), THREAD_RELEASE)
                _release(empty.index((count + n_chunks - 1) % STAGES), THREAD_RELEASE)
                count += n_chunks
            elif PINGPONG == 3:
                # the tail schedule: chunk k+1's first GEMM, then chunk k's second GEMM, a wait for the first only,
                # chunk k+1's GELU under the second, then the wait for it. The second GEMMs' A operand (the hidden
                # chunk) comes from shared memory, two slots a consumer (h_ring 2 * CONSUMER + k % 2), so that the GELU
                # writes no register an in-flight wgmma reads: from registers, ptxas waited for the second GEMM before
                # the GELU (it packed the next operand into the in-flight one's registers; Triton 3.6, offline).
                DOT_T: gl.constexpr = w2_smem.dtype
                h_slot = 2 * CONSUMER
                mbarrier.wait(ready.index(count % STAGES), (count // STAGES) & 1)
                pre = _ws_first_gemm(gl.zeros([BLOCK_L, BLOCK_E], gl.float32, PRE), ones, z_a, b1_smem, w1_smem, 0,
                                     count % STAGES, B1_MMA)
                pre = warpgroup_mma_wait(num_outstanding=0, deps=(pre, ))
                h_ring.index(h_slot).store(_hidden_value(pre, b1_smem.index(0), GELU_FIT, B1_MMA).to(DOT_T))
                fence_async_shared()
                _cta_barrier()  # (this partition's warps) all of the hidden chunk is in shared memory
                for k in range(n_chunks - 1):
                    chunk = count + k
                    mbarrier.wait(ready.index((chunk + 1) % STAGES), ((chunk + 1) // STAGES) & 1)
                    pre = _ws_first_gemm(pre, ones, z_a, b1_smem, w1_smem, k + 1, (chunk + 1) % STAGES, B1_MMA)
                    acc = warpgroup_mma(h_ring.index(h_slot + k % 2), w2_smem.index(chunk % STAGES).permute((1, 0)),
                                        acc, is_async=True)
                    pre = warpgroup_mma_wait(num_outstanding=1, deps=(pre, ))  # chunk k+1's first GEMM is done
                    # chunk k+1's hidden chunk to the other slot (chunk k-1's second GEMM, its last reader, is done)
                    h_ring.index(h_slot + (k + 1) % 2).store(
                        _hidden_value(pre, b1_smem.index(k + 1), GELU_FIT, B1_MMA).to(DOT_T))
                    acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))
                    _release(empty.index(chunk % STAGES), THREAD_RELEASE)  # chunk k's second GEMM is done
                    # (the fence after the wait: between the stores and the wait, ptxas 12.8 of Triton 3.6 crashed on
                    # ragged L and on C=64)
                    fence_async_shared()
                    _cta_barrier()  # all of chunk k+1's hidden chunk is in shared memory
                row, tile_offsets, in_range, _ = _tile_place(tile, num_l_blocks, L, C, BLOCK_L, TILE, True)
                residual = _load_x_tile(x_ptr + row + tile_offsets, in_range, EVEN_L, False)
                acc = warpgroup_mma(h_ring.index(h_slot + (n_chunks - 1) % 2),
                                    w2_smem.index((count + n_chunks - 1) % STAGES).permute((1, 0)), acc, is_async=True)
                acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))
                _release(empty.index((count + n_chunks - 1) % STAGES), THREAD_RELEASE)
                count += n_chunks
            elif PINGPONG:
                # chunk k's second GEMM and chunk k+1's first GEMM are issued together, then one wait for both, then
                # chunk k+1's GELU: the consumer's own tensor work comes in one block a chunk, and with PINGPONG == 2
                # the two consumers take turns at issuing those blocks (turn[c] is consumer c's), so that one's GELU
                # runs under the other's GEMMs. Every tile takes n_chunks + 1 turns in each consumer. Nothing is in
                # flight across the loop's back edge (its wait ends the body): a wgmma in flight there made ptxas
                # inject a wait and serialise them (C7517, C7515; Triton 3.6, offline).
                # (SPLIT_RING: W1 and W2 in rings of their own, ready/empty and ready2/empty2: each slot released as
                # soon as its one GEMM is done; see _ws_split_producer)
                if not CROSS_TILE:  # (with it `pre`, chunk 0's, came from the previous tile's last step)
                    mbarrier.wait(ready.index(count % STAGES), (count // STAGES) & 1)
                    _take_turn(turn, turns, CONSUMER, PINGPONG)
                    pre = _ws_first_gemm(gl.zeros([BLOCK_L, BLOCK_E], gl.float32, PRE), ones, z_a, b1_smem, w1_smem,
                                         0, count % STAGES, B1_MMA)
                    _pass_turn(turn, CONSUMER, PINGPONG)
                    turns += 1
                    pre = warpgroup_mma_wait(num_outstanding=0, deps=(pre, ))
                if SPLIT_RING:  # chunk 0's first GEMM is done: its W1 slot is free
                    _release(empty.index(count % STAGES), THREAD_RELEASE)
                for k in range(n_chunks - 1):
                    h = _hidden_operand(pre, b1_smem.index(k), w2_smem.dtype, H_OPERAND, GELU_FIT, B1_MMA)
                    chunk = count + k
                    if SPLIT_RING:
                        mbarrier.wait(ready2.index(chunk % STAGES), (chunk // STAGES) & 1)
                    mbarrier.wait(ready.index((chunk + 1) % STAGES), ((chunk + 1) // STAGES) & 1)
                    _take_turn(turn, turns, CONSUMER, PINGPONG)
                    acc = warpgroup_mma(h, w2_smem.index(chunk % STAGES).permute((1, 0)), acc, is_async=True)
                    pre = _ws_first_gemm(pre, ones, z_a, b1_smem, w1_smem, k + 1, (chunk + 1) % STAGES, B1_MMA)
                    _pass_turn(turn, CONSUMER, PINGPONG)
                    turns += 1
                    pre, acc = warpgroup_mma_wait(num_outstanding=0, deps=(pre, acc))
                    if SPLIT_RING:  # chunk k's second GEMM and chunk k+1's first are done
                        _release(empty2.index(chunk % STAGES), THREAD_RELEASE)
                        _release(empty.index((chunk + 1) % STAGES), THREAD_RELEASE)
                    else:
                        _release(empty.index(chunk % STAGES), THREAD_RELEASE)  # chunk k's second GEMM is done
                h = _hidden_operand(pre, b1_smem.index(n_chunks - 1), w2_smem.dtype, H_OPERAND, GELU_FIT, B1_MMA)
                if SPLIT_RING:
                    mbarrier.wait(ready2.index((count + n_chunks - 1) % STAGES), ((count + n_chunks - 1) // STAGES) & 1)
                # the residual's load issued before the tile's last GEMM, so that it lands under it (in x's type: half
                # the registers of fp32; issued after the GEMM, ptxas moved it past the wait, Triton 3.6); with
                # LATE_RESIDUAL after the accumulator's conversion, as before session 33
                if Z_PRODUCER:
                    row, tile_offsets, in_range, _ = _tile_place(tile, num_l_blocks, L, C, BLOCK_L, OUT_TILE,
                                                                   True)
                if not LATE_RESIDUAL:
                    residual = _load_x_tile(x_ptr + row + tile_offsets, in_range, EVEN_L, False)
                if CROSS_TILE:
                    # the next tile's chunk 0 first GEMM issued with this tile's last second GEMM, one wait for both;
                    # after this consumer's last tile a throwaway one on this tile's z and last W1 slot (both still
                    # held), so that no branch encloses a wgmma
                    next_z = z_count + CONSUMERS
                    has_next = group + gl.num_programs(0) < loop_end
                    if has_next:
                        mbarrier.wait(z_ready.index(next_z % Z_STAGES), (next_z // Z_STAGES) & 1)
                        mbarrier.wait(ready.index((count + n_chunks) % STAGES), ((count + n_chunks) // STAGES) & 1)
                    acc = warpgroup_mma(h, w2_smem.index((count + n_chunks - 1) % STAGES).permute((1, 0)), acc,
                                        is_async=True)
                    pre = _ws_first_gemm(pre, ones, z_ring.index(gl.where(has_next, next_z % Z_STAGES, z_slot)),
                                         b1_smem, w1_smem, 0,
                                         gl.where(has_next, count + n_chunks, count + n_chunks - 1) % STAGES, B1_MMA)
                    pre, acc = warpgroup_mma_wait(num_outstanding=0, deps=(pre, acc))
                else:
                    _take_turn(turn, turns, CONSUMER, PINGPONG)
                    acc = warpgroup_mma(h, w2_smem.index((count + n_chunks - 1) % STAGES).permute((1, 0)), acc,
                                        is_async=True)
                    _pass_turn(turn, CONSUMER, PINGPONG)
                    turns += 1
                    if EPILOGUE16:  # the residual to the accumulator's layout while the last GEMM runs
                        residual = gl.convert_layout(residual, ACC)
                    acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))
                if SPLIT_RING:
                    _release(empty2.index((count + n_chunks - 1) % STAGES), THREAD_RELEASE)
                else:
                    _release(empty.index((count + n_chunks - 1) % STAGES), THREAD_RELEASE)
                count += n_chunks
            else:
                for k in range(n_chunks):
                    slot = count % STAGES
                    mbarrier.wait(ready.index(slot), (count // STAGES) & 1)
                    pre = warpgroup_mma(z_a, w1_smem.index(slot).permute((1, 0)),
                                        gl.zeros([BLOCK_L, BLOCK_E], gl.float32, PRE), use_acc=False, is_async=True)
                    pre = warpgroup_mma_wait(num_outstanding=0, deps=(pre, ))
                    h = _hidden_operand(pre, b1_smem.index(k), w2_smem.dtype, H_OPERAND, GELU_FIT)
                    acc = warpgroup_mma(h, w2_smem.index(slot).permute((1, 0)), acc, is_async=True)
                    acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))
                    _release(empty.index(slot), THREAD_RELEASE)  # W1[k] and W2[k] are free
                    count += 1
            if Z_PRODUCER:  # every first GEMM of the tile has completed (waited for above): z's slot is free
                if not Z_REGS:
                    mbarrier.arrive(z_empty.index(z_slot))
                z_count += CONSUMERS
            if Z_PRODUCER and (PIPELINE or not PINGPONG):
                row, tile_offsets, in_range, _ = _tile_place(tile, num_l_blocks, L, C, BLOCK_L, TILE, True)
            if EPILOGUE16:  # the same sum and rounding in the accumulator's layout; half the bytes through shared memory
                out = gl.convert_layout((acc + residual.to(gl.float32)).to(out_ptr.dtype.element_ty), OUT_TILE)
                gl.store(out_ptr + row + tile_offsets, out, mask=in_range & valid)
            else:
                out = gl.convert_layout(acc, TILE)
                if not PINGPONG or LATE_RESIDUAL and PINGPONG != 3:  # (loaded after the conversion: before it, it
                    # spilled, Triton 3.6, offline)
                    residual = _load_x_tile(x_ptr + row + tile_offsets, in_range, EVEN_L, False)
                out += residual.to(gl.float32)
                gl.store(out_ptr + row + tile_offsets, out.to(out_ptr.dtype.element_ty), mask=in_range & valid)
        if BALANCE and CONSUMER > 0:  # this CTA's lone group, if it has one: consumer 0 alone computes it, this one
            # only releases each chunk's slot once it has landed (the producer's ring counts every consumer's release;
            # waiting for the fill first keeps this consumer from releasing a fill ahead of the one in use)
            if lone_start + first < num_groups:
                for k in range(n_chunks):
                    mbarrier.wait(ready.index(count % STAGES), (count // STAGES) & 1)
                    _release(empty.index(count % STAGES), THREAD_RELEASE)
                    if SPLIT_RING:  # (the W2 ring's fill of this chunk comes after the next chunk's W1)
                        mbarrier.wait(ready2.index(count % STAGES), (count // STAGES) & 1)
                        _release(empty2.index(count % STAGES), THREAD_RELEASE)
                    count += 1

    @gluon.jit
    def _prefetch_x_rows(x_ptr, tile, num_tiles, L, C: gl.constexpr, BLOCK_L: gl.constexpr, WARPS: gl.constexpr):
        """(ws_x_prefetch) Ask L2 for the line of x that tile `tile` (when it exists) starts in, in each of its C rows,
        one `prefetch.global.L2` a thread and row: at 64 positions of 2 bytes a tile that line holds the whole tile's
        row when L is a multiple of 64 (the conv's halo before it is the previous tile's, which this CTA's z producer
        prefetched too when it is the group's second tile). Nothing waits for it and nothing is written. Session 24's form
        (one cp.async.bulk.prefetch.L2 a row, halo included) takes a uniform address, so ptxas issued it lane by lane in
        a loop, and with two addresses a row the z producer spilled more (offline, sm_90a)."""
        if tile < num_tiles:
            num_l_blocks = gl.cdiv(L, BLOCK_L)
            rows = gl.arange(0, C, layout=gl.BlockedLayout([1], [32], [WARPS], [0]))
            offsets = ((tile // num_l_blocks).to(gl.int64) * C + rows) * L + (tile % num_l_blocks) * BLOCK_L
            gl.inline_asm_elementwise("prefetch.global.L2 [$1]; mov.u32 $0, 0;", "=r,l",
                                      [(x_ptr + offsets).to(gl.int64)], dtype=gl.int32, is_pure=False, pack=1)

    @gluon.jit
    def _stage_conv_taps(conv_w_ptr, C: gl.constexpr, KERNEL_SIZE: gl.constexpr, num_warps: gl.constexpr):
        """(ws_conv_smem) The conv's (C, 1, K) weight as K fp32 rows of C (one flat buffer) in shared memory, one load
        and one store by the whole CTA before the partitions start (as b1): the z producer then reads each tap by
        16-byte vectors, where the weight's own layout (stride K between channels) took 2-byte loads, every tile.
        Those were 9.4M of the z producer's 24.3M L1 tag requests (and 9.4M sectors over the ideal) in session 37's
        profile."""
        ROWS: gl.constexpr = _next_power_of_2(KERNEL_SIZE)  # (gl.arange's length; the rows past K are not read)
        offsets = gl.arange(0, ROWS * C, layout=gl.BlockedLayout([1], [32], [num_warps], [0]))
        tap = offsets // C
        weight = gl.load(conv_w_ptr + (offsets % C) * KERNEL_SIZE + tap, mask=tap < KERNEL_SIZE, other=0.0)
        return gl.allocate_shared_memory(gl.float32, [ROWS * C], gl.SwizzledSharedLayout(1, 1, 1, order=[0]),
                                         weight.to(gl.float32))

    @gluon.jit
    def _load_conv_taps(conv_w_ptr, offs_c, KERNEL_SIZE: gl.constexpr):
        """(ws_conv_regs) The conv's K taps of this thread's channels, fp32 in offs_c's layout, as a tuple: loaded once
        by the z producer and kept in registers across its tiles (K registers a channel a thread: 24 with the shuffled
        taps' 8 channels a thread at K=3), instead of K 2-byte loads at stride K a channel every tile."""
        taps = ()
        for k in gl.static_range(KERNEL_SIZE):
            taps = taps + (gl.load(conv_w_ptr + offs_c * KERNEL_SIZE + k).to(gl.float32), )
        return taps

    @gluon.jit
    def _ws_z_producer(x_ptr, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr, z_ring, z_ready, z_empty, L, eps,
                       num_tiles, CONSUMERS: gl.constexpr, C: gl.constexpr, KERNEL_SIZE: gl.constexpr,
                       DILATION: gl.constexpr, EVEN_L: gl.constexpr, BLOCK_L: gl.constexpr, Z_STAGES: gl.constexpr,
                       WARPS: gl.constexpr, BALANCE: gl.constexpr, X_PREFETCH: gl.constexpr = 0, conv_smem=None,
                       CONV_SMEM: gl.constexpr = False, X_SHUFFLE: gl.constexpr = False,
                       CONV_REGS: gl.constexpr = False, BF16_SHIFTS: gl.constexpr = False,
                       FIRST_Z: gl.constexpr = False):
        """The z producer (Z_PRODUCER): conv + LayerNorm of every tile of this CTA, in the consumers' order (group by
        group, consumer by consumer), into the z ring: tile j goes to slot j % Z_STAGES once its consumer has handed
        that slot back (z_empty), then z_ready[slot] completes. A group's missing tiles at the end repeat the last
        tile, as the consumers do. x's loads and the arithmetic come before the wait, so they run while the slot's
        previous tile is still in use. With X_PREFETCH > 0, after each tile it asks L2 for the x of the same
        consumer's tile X_PREFETCH groups later (_prefetch_x_rows). With CONV_SMEM the conv's taps come from
        `conv_smem` (_stage_conv_taps). With X_SHUFFLE x is loaded once a tile and the conv's shifted taps come from
        shuffles (_shuffle_tile_layout). With CONV_REGS the conv's taps are loaded once, into registers
        (_load_conv_taps), not every tile. With FIRST_Z it skips its first group's second tile (consumer 1 computes that
        one: _ws_consumer) and counts it as done."""
        if X_SHUFFLE:
            TILE: gl.constexpr = _shuffle_tile_layout(C, WARPS)
        else:
            TILE: gl.constexpr = _tile_layout(BLOCK_L, C, WARPS)
        num_l_blocks = gl.cdiv(L, BLOCK_L)
        offs_c = gl.arange(0, C, layout=gl.SliceLayout(0, TILE))
        if CONV_REGS:
            conv_regs = _load_conv_taps(conv_w_ptr, offs_c, KERNEL_SIZE)
        else:
            conv_regs = None
        count = 0
        first = gl.program_id(0)
        num_groups, lone_start = _ws_groups(num_tiles, CONSUMERS, BALANCE)
        for group in range(first, lone_start, gl.num_programs(0)):
            for consumer in gl.static_range(CONSUMERS):
                tile = gl.minimum(CONSUMERS * group + consumer, num_tiles - 1)
                # (two call sites, each under a constexpr test, so that with FIRST_Z off nothing here tests at run time)
                if FIRST_Z and consumer == 1:  # the first group's second tile is consumer 1's own (_ws_consumer)
                    if group != first:
                        _z_tile(x_ptr, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr, z_ring, z_ready, z_empty, L, eps,
                                tile, count, offs_c, num_l_blocks, C, KERNEL_SIZE, DILATION, EVEN_L, BLOCK_L, Z_STAGES,
                                TILE, conv_smem, CONV_SMEM, X_SHUFFLE, conv_regs, CONV_REGS, BF16_SHIFTS)
                else:
                    _z_tile(x_ptr, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr, z_ring, z_ready, z_empty, L, eps,
                            tile, count, offs_c, num_l_blocks, C, KERNEL_SIZE, DILATION, EVEN_L, BLOCK_L, Z_STAGES,
                            TILE, conv_smem, CONV_SMEM, X_SHUFFLE, conv_regs, CONV_REGS, BF16_SHIFTS)
                if X_PREFETCH > 0:  # (after the tile, where its registers are free: before it, the z producer spilled)
                    _prefetch_x_rows(x_ptr, CONSUMERS * (group + X_PREFETCH * gl.num_programs(0)) + consumer,
                                     num_tiles, L, C, BLOCK_L, WARPS)
                count += 1
        if BALANCE:  # this CTA's lone group, if it has one (the lone groups are one round): consumer 0's tile alone
            group = lone_start + first
            if group < num_groups:
                _z_tile(x_ptr, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr, z_ring, z_ready, z_empty, L, eps,
                        group + (CONSUMERS - 1) * lone_start, count, offs_c, num_l_blocks, C, KERNEL_SIZE, DILATION,
                        EVEN_L, BLOCK_L, Z_STAGES, TILE, conv_smem, CONV_SMEM, X_SHUFFLE, conv_regs, CONV_REGS,
                        BF16_SHIFTS)

    @gluon.jit
    def _z_tile_here(x_ptr, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr, z_ring, z_ready, z_empty, L, eps, tile, count,
                     num_l_blocks, C: gl.constexpr, KERNEL_SIZE: gl.constexpr, DILATION: gl.constexpr,
                     EVEN_L: gl.constexpr, BLOCK_L: gl.constexpr, Z_STAGES: gl.constexpr, WARPS: gl.constexpr,
                     conv_smem, CONV_SMEM: gl.constexpr, X_SHUFFLE: gl.constexpr, CONV_REGS: gl.constexpr,
                     BF16_SHIFTS: gl.constexpr):
        """(FIRST_Z) _z_tile of `tile` into slot count % Z_STAGES, by a partition other than the z producer: the z
        producer's layout, taps and arithmetic (CONV_REGS: the same fp32 taps, loaded here), so the same bits."""
        if X_SHUFFLE:
            TILE: gl.constexpr = _shuffle_tile_layout(C, WARPS)
        else:
            TILE: gl.constexpr = _tile_layout(BLOCK_L, C, WARPS)
        offs_c = gl.arange(0, C, layout=gl.SliceLayout(0, TILE))
        if CONV_REGS:
            conv_regs = _load_conv_taps(conv_w_ptr, offs_c, KERNEL_SIZE)
        else:
            conv_regs = None
        _z_tile(x_ptr, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr, z_ring, z_ready, z_empty, L, eps, tile, count,
                offs_c, num_l_blocks, C, KERNEL_SIZE, DILATION, EVEN_L, BLOCK_L, Z_STAGES, TILE, conv_smem, CONV_SMEM,
                X_SHUFFLE, conv_regs, CONV_REGS, BF16_SHIFTS)

    @gluon.jit
    def _z_tile(x_ptr, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr, z_ring, z_ready, z_empty, L, eps, tile, count,
                offs_c, num_l_blocks, C: gl.constexpr, KERNEL_SIZE: gl.constexpr, DILATION: gl.constexpr,
                EVEN_L: gl.constexpr, BLOCK_L: gl.constexpr, Z_STAGES: gl.constexpr, TILE: gl.constexpr, conv_smem,
                CONV_SMEM: gl.constexpr, X_SHUFFLE: gl.constexpr = False, conv_regs=None,
                CONV_REGS: gl.constexpr = False, BF16_SHIFTS: gl.constexpr = False):
        """The z producer's `count`-th tile (`tile`): its conv + LayerNorm into slot count % Z_STAGES of the z ring once
        that slot is free, then z_ready[slot] completes."""
        n = tile // num_l_blocks
        offs_l = (tile % num_l_blocks) * BLOCK_L + gl.arange(0, BLOCK_L, layout=gl.SliceLayout(1, TILE))
        in_range = gl.expand_dims(offs_l < L, 1) & gl.expand_dims(offs_c < C, 0)
        z, _, _ = _conv_norm_tile(x_ptr + n.to(gl.int64) * C * L, offs_l, offs_c, in_range, conv_w_ptr, conv_b_ptr,
                                  gamma_ptr, beta_ptr, L, eps, C, KERNEL_SIZE, DILATION, EVEN_L, BLOCK_L, TILE,
                                  conv_smem, CONV_SMEM, X_SHUFFLE, conv_regs, CONV_REGS, BF16_SHIFTS)
        slot = count % Z_STAGES
        # the slot's previous tile is done (the first round's waits, parity 1 of a fresh barrier, pass at once)
        mbarrier.wait(z_empty.index(slot), ((count // Z_STAGES) & 1) ^ 1)
        z_ring.index(slot).store(z.to(z_ring.dtype))
        fence_async_shared()
        _cta_barrier()  # (this partition's warps) all of the tile is in shared memory
        mbarrier.arrive(z_ready.index(slot))

    @gluon.jit
    def cheri_block_ws_kernel(
        x_ptr, out_ptr, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr, w1_ptr, b1_ptr, w2_ptr, b2_ptr,
        L, eps, num_tiles,
        C: gl.constexpr, HIDDEN: gl.constexpr, KERNEL_SIZE: gl.constexpr, DILATION: gl.constexpr,
        EVEN_L: gl.constexpr, BLOCK_L: gl.constexpr, BLOCK_E: gl.constexpr, STAGES: gl.constexpr,
        CONSUMERS: gl.constexpr, CONSUMER_REGS: gl.constexpr, PRODUCER_WARPS: gl.constexpr,
        PRODUCER_REGS: gl.constexpr, PIPELINE: gl.constexpr, Z_PRODUCER: gl.constexpr, Z_STAGES: gl.constexpr,
        Z_PRODUCER_REGS: gl.constexpr, PINGPONG: gl.constexpr, Z_REGS: gl.constexpr,
        GELU_FIT: gl.constexpr, B1_MMA: gl.constexpr, THREAD_RELEASE: gl.constexpr, BALANCE: gl.constexpr,
        LATE_RESIDUAL: gl.constexpr, num_warps: gl.constexpr, X_PREFETCH: gl.constexpr = 0,
        CONV_SMEM: gl.constexpr = False, X_SHUFFLE: gl.constexpr = False, SPLIT_RING: gl.constexpr = False,
        CROSS_TILE: gl.constexpr = False, EPILOGUE16: gl.constexpr = False, CONV_REGS: gl.constexpr = False,
        BF16_SHIFTS: gl.constexpr = False, FIRST_Z: gl.constexpr = False,
    ):
        """cheri_block_kernel's function, persistent and warp-specialised (see above); num_tiles = N * cdiv(L,
        BLOCK_L), BLOCK_L = 16 * num_warps, STAGES >= 2, CONSUMERS 2 or 3 (consumer warp groups). With Z_PRODUCER
        (2 consumers) a fourth warp group of Z_PRODUCER_REGS registers computes every tile's z into a Z_STAGES-deep ring
        (_ws_z_producer) and the consumers only run the MLP and the residual. With THREAD_RELEASE each consumer thread
        releases a ring slot by an arrive of its own (_release). With BALANCE a last round of few tiles goes one tile
        a CTA (_ws_groups). With SPLIT_RING (gluon_wsz, pingpong) W1 and W2 have barrier pairs of their own (ready /
        empty for W1, ready2 / empty2 for W2) over the same slots (_ws_split_producer). With CROSS_TILE (gluon_wsz,
        pingpong) each tile's first GEMM is issued with the previous tile's last second GEMM (_ws_consumer). With
        EPILOGUE16 (gluon_wsz, pingpong, early residual, 16-bit x) each tile's residual is added in the accumulator's
        layout and its 16-bit output goes through shared memory (_ws_consumer). With BF16_SHIFTS (Z_PRODUCER,
        X_SHUFFLE, bf16 x) the z producer widens x's taps by shifts (_widen). With CONV_REGS (Z_PRODUCER, not
        CONV_SMEM) the z producer keeps the conv's taps in registers across its tiles (_load_conv_taps). With FIRST_Z
        (Z_PRODUCER, not CROSS_TILE) consumer 1 computes its first tile's z itself (_ws_consumer)."""
        gl.static_assert(BLOCK_L == 16 * num_warps, "one 16-row wgmma slice per warp")
        gl.static_assert(STAGES >= 2, "the ring holds the chunk in use and the next one")
        gl.static_assert(CONSUMERS == 2 or CONSUMERS == 3, "two or three consumer warp groups")
        gl.static_assert(not Z_PRODUCER or CONSUMERS == 2, "the z producer serves two consumers")
        gl.static_assert(not Z_PRODUCER or Z_STAGES >= CONSUMERS, "a z slot for each consumer's tile")
        gl.static_assert(not PINGPONG or not PIPELINE, "one consumer schedule")
        gl.static_assert(GELU_FIT == 6 or not PIPELINE, "the pipelined consumers run the default GELU")
        gl.static_assert(not B1_MMA or (Z_PRODUCER and PINGPONG % 2 == 1), "b1's wgmma: gluon_wsz, pingpong or tail")
        gl.static_assert(PINGPONG != 3 or Z_PRODUCER, "the tail schedule: gluon_wsz")
        gl.static_assert(PINGPONG != 2 or (CONSUMERS == 2 and STAGES >= 3), "turns between two consumers, ring >= 3")
        gl.static_assert(not BALANCE or PINGPONG != 2, "lone tiles: no turns (the other consumer would wait for one)")
        gl.static_assert(not SPLIT_RING or (Z_PRODUCER and PINGPONG == 1), "split weight rings: gluon_wsz, pingpong")
        gl.static_assert(not CROSS_TILE or (Z_PRODUCER and PINGPONG == 1 and not Z_REGS and not SPLIT_RING),
                         "first GEMMs across tiles: gluon_wsz, pingpong, z from shared memory, one weight ring")
        gl.static_assert(not CONV_REGS or (Z_PRODUCER and not CONV_SMEM), "taps in registers: the z producer's, "
                         "not beside taps in shared memory")
        gl.static_assert(not BF16_SHIFTS or (Z_PRODUCER and X_SHUFFLE and x_ptr.dtype.element_ty == gl.bfloat16),
                         "bf16 taps widened by shifts: gluon_wsz's shuffled taps, bf16 x")
        gl.static_assert(not EPILOGUE16 or (Z_PRODUCER and PINGPONG == 1 and not LATE_RESIDUAL and not CROSS_TILE
                                            and x_ptr.dtype.element_ty.primitive_bitwidth == 16),
                         "the 16-bit epilogue: gluon_wsz, pingpong, the residual loaded early, 16-bit x")
        gl.static_assert(not FIRST_Z or (Z_PRODUCER and not CROSS_TILE),
                         "consumer 1's first z: gluon_wsz, not with first GEMMs across tiles")
        DOT_T: gl.constexpr = w1_ptr.dtype.element_ty  # bf16 or fp16: the dots' operand type (z, h rounded to it)
        Z_SHARED: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_L, C], DOT_T)
        W1_SHARED: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_E, C], DOT_T)
        W2_SHARED: gl.constexpr = gl.NVMMASharedLayout.get_default_for([C, BLOCK_E], DOT_T)
        w1_smem = gl.allocate_shared_memory(DOT_T, [STAGES, BLOCK_E, C], W1_SHARED)
        w2_smem = gl.allocate_shared_memory(DOT_T, [STAGES, C, BLOCK_E], W2_SHARED)
        if Z_PRODUCER:  # the z producer's ring
            z_ring = gl.allocate_shared_memory(DOT_T, [Z_STAGES, BLOCK_L, C], Z_SHARED)
        else:  # one tile per consumer
            z_ring = gl.allocate_shared_memory(DOT_T, [CONSUMERS, BLOCK_L, C], Z_SHARED)
        if PINGPONG == 3:  # the tail schedule's hidden operand (the second GEMMs' A), two buffers a consumer
            h_ring = gl.allocate_shared_memory(DOT_T, [2 * CONSUMERS, BLOCK_L, BLOCK_E],
                                               gl.NVMMASharedLayout.get_default_for([BLOCK_L, BLOCK_E], DOT_T))
        else:  # (not read)
            h_ring = z_ring
        # b1 goes to shared memory in one load and one store: a store a chunk made the compiler put a CTA barrier
        # between them, so the chunks' loads ran one after another before the partitions started (Triton 3.6, PTX)
        B1_CHUNKS: gl.constexpr = _next_power_of_2(HIDDEN // BLOCK_E)  # (gl.arange's length; the rows past HIDDEN: 0)
        if B1_MMA:  # b1 as the B operand of a k=16 wgmma a chunk (column 0 of each (BLOCK_E, 16) block; the rest 0)
            B1_SHARED: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_E, 16], DOT_T)
            B1_FILL: gl.constexpr = gl.BlockedLayout([1, 16], [32, 1], [num_warps, 1], [1, 0])
            b1_rows = gl.arange(0, B1_CHUNKS * BLOCK_E, layout=gl.SliceLayout(1, B1_FILL))
            b1 = gl.load(b1_ptr + b1_rows, mask=b1_rows < HIDDEN, other=0.0)
            b1_cols = gl.expand_dims(gl.arange(0, 16, layout=gl.SliceLayout(0, B1_FILL)), 0)
            b1_smem = gl.allocate_shared_memory(DOT_T, [B1_CHUNKS, BLOCK_E, 16], B1_SHARED)
            # (the same bytes as one (B1_CHUNKS * BLOCK_E, 16) block: the swizzle repeats within BLOCK_E rows)
            _reinterpret(b1_smem, DOT_T, [B1_CHUNKS * BLOCK_E, 16], B1_SHARED).store(
                gl.where(b1_cols == 0, gl.expand_dims(b1, 1), 0.0).to(DOT_T))
            fence_async_shared()
        else:  # b1 in fp32, one row per hidden chunk (the chunk loop indexes it)
            B1_ROW: gl.constexpr = gl.BlockedLayout([1], [32], [num_warps], [0])
            b1_rows = gl.arange(0, B1_CHUNKS * BLOCK_E, layout=B1_ROW)
            b1_smem = gl.allocate_shared_memory(gl.float32, [B1_CHUNKS * BLOCK_E],
                                                gl.SwizzledSharedLayout(1, 1, 1, order=[0]),
                                                gl.load(b1_ptr + b1_rows, mask=b1_rows < HIDDEN, other=0.0)
                                                .to(gl.float32))
            b1_smem = _reinterpret(b1_smem, gl.float32, [B1_CHUNKS, BLOCK_E],
                                   gl.SwizzledSharedLayout(1, 1, 1, order=[0]))
        if Z_PRODUCER:  # b2 in fp32, read by the consumers at each tile's start (C * 4 bytes: z_stages counts them)
            B2_ROW: gl.constexpr = gl.BlockedLayout([1], [32], [num_warps], [0])
            b2_smem = gl.allocate_shared_memory(gl.float32, [C], gl.SwizzledSharedLayout(1, 1, 1, order=[0]),
                                                gl.load(b2_ptr + gl.arange(0, C, layout=B2_ROW)).to(gl.float32))
        else:  # (not read)
            b2_smem = b1_smem
        ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        for s in gl.static_range(STAGES):
            mbarrier.init(ready.index(s), count=32 * PRODUCER_WARPS)  # the producer's cp.async arrivals, per thread
            # one arrival per consumer, or (THREAD_RELEASE) one per consumer thread
            mbarrier.init(empty.index(s), count=CONSUMERS * (32 * num_warps if THREAD_RELEASE else 1))
        if SPLIT_RING:  # W2's own ring of barriers (ready / empty then guard W1's slots only)
            ready2 = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
            empty2 = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
            for s in gl.static_range(STAGES):
                mbarrier.init(ready2.index(s), count=32 * PRODUCER_WARPS)
                mbarrier.init(empty2.index(s), count=CONSUMERS * (32 * num_warps if THREAD_RELEASE else 1))
        else:  # (not used)
            ready2 = ready
            empty2 = empty
        Z_BARRIERS: gl.constexpr = Z_STAGES if Z_PRODUCER else 1
        z_ready = gl.allocate_shared_memory(gl.int64, [Z_BARRIERS, 1], mbarrier.MBarrierLayout())
        z_empty = gl.allocate_shared_memory(gl.int64, [Z_BARRIERS, 1], mbarrier.MBarrierLayout())
        if Z_PRODUCER:
            for s in gl.static_range(Z_STAGES):
                mbarrier.init(z_ready.index(s), count=1)  # the z producer's arrival
                mbarrier.init(z_empty.index(s), count=1)  # the tile's consumer's
        turn = gl.allocate_shared_memory(gl.int64, [CONSUMERS, 1], mbarrier.MBarrierLayout())
        if PINGPONG == 2:
            for c in gl.static_range(CONSUMERS):
                mbarrier.init(turn.index(c), count=1)  # the other consumer's arrival
        if CONV_SMEM:
            gl.static_assert(Z_PRODUCER, "the conv's taps in shared memory: the z producer reads them")
            conv_smem = _stage_conv_taps(conv_w_ptr, C, KERNEL_SIZE, num_warps)
        else:  # (not read)
            conv_smem = b1_smem
        # (explicit tuples: a tuple built by + turns its constexprs into tensors)
        if Z_PRODUCER:
            gl.warp_specialize([
                (_ws_consumer, (x_ptr, out_ptr, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr, b2_ptr, w1_smem, w2_smem,
                                z_ring, h_ring, b1_smem, b2_smem, ready, empty, z_ready, z_empty, turn, L, eps,
                                num_tiles, 0,
                                CONSUMERS, C, HIDDEN, KERNEL_SIZE, DILATION, EVEN_L, BLOCK_L, BLOCK_E, STAGES, PIPELINE,
                                True, Z_STAGES, PINGPONG, Z_REGS, GELU_FIT, B1_MMA, THREAD_RELEASE,
                                num_warps, BALANCE, LATE_RESIDUAL, ready2, empty2, SPLIT_RING,
                                CROSS_TILE, EPILOGUE16, FIRST_Z, conv_smem, CONV_SMEM, X_SHUFFLE, CONV_REGS,
                                BF16_SHIFTS)),
                (_ws_consumer, (x_ptr, out_ptr, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr, b2_ptr, w1_smem, w2_smem,
                                z_ring, h_ring, b1_smem, b2_smem, ready, empty, z_ready, z_empty, turn, L, eps,
                                num_tiles, 1,
                                CONSUMERS, C, HIDDEN, KERNEL_SIZE, DILATION, EVEN_L, BLOCK_L, BLOCK_E, STAGES, PIPELINE,
                                True, Z_STAGES, PINGPONG, Z_REGS, GELU_FIT, B1_MMA, THREAD_RELEASE,
                                num_warps, BALANCE, LATE_RESIDUAL, ready2, empty2, SPLIT_RING,
                                CROSS_TILE, EPILOGUE16, FIRST_Z, conv_smem, CONV_SMEM, X_SHUFFLE, CONV_REGS,
                                BF16_SHIFTS)),
                (_ws_z_producer, (x_ptr, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr, z_ring, z_ready, z_empty, L,
                                  eps, num_tiles, CONSUMERS, C, KERNEL_SIZE, DILATION, EVEN_L, BLOCK_L, Z_STAGES,
                                  num_warps, BALANCE, X_PREFETCH, conv_smem, CONV_SMEM, X_SHUFFLE, CONV_REGS,
                                  BF16_SHIFTS, FIRST_Z)),
                (_ws_producer, (w1_smem, w2_smem, ready, empty, w1_ptr, w2_ptr, num_tiles, C, HIDDEN, BLOCK_E,
                                STAGES, CONSUMERS, PRODUCER_WARPS, BALANCE, ready2, empty2, SPLIT_RING)),
            ], [num_warps, num_warps, PRODUCER_WARPS], [CONSUMER_REGS, Z_PRODUCER_REGS, PRODUCER_REGS])
        elif CONSUMERS == 2:
            gl.warp_specialize([
                (_ws_consumer, (x_ptr, out_ptr, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr, b2_ptr, w1_smem, w2_smem,
                                z_ring, h_ring, b1_smem, b2_smem, ready, empty, z_ready, z_empty, turn, L, eps,
                                num_tiles, 0,
                                CONSUMERS, C, HIDDEN, KERNEL_SIZE, DILATION, EVEN_L, BLOCK_L, BLOCK_E, STAGES, PIPELINE,
                                False, 1, PINGPONG, Z_REGS, GELU_FIT, B1_MMA, THREAD_RELEASE,
                                num_warps, BALANCE, LATE_RESIDUAL, ready2, empty2, SPLIT_RING,
                                CROSS_TILE)),
                (_ws_consumer, (x_ptr, out_ptr, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr, b2_ptr, w1_smem, w2_smem,
                                z_ring, h_ring, b1_smem, b2_smem, ready, empty, z_ready, z_empty, turn, L, eps,
                                num_tiles, 1,
                                CONSUMERS, C, HIDDEN, KERNEL_SIZE, DILATION, EVEN_L, BLOCK_L, BLOCK_E, STAGES, PIPELINE,
                                False, 1, PINGPONG, Z_REGS, GELU_FIT, B1_MMA, THREAD_RELEASE,
                                num_warps, BALANCE, LATE_RESIDUAL, ready2, empty2, SPLIT_RING,
                                CROSS_TILE)),
                (_ws_producer, (w1_smem, w2_smem, ready, empty, w1_ptr, w2_ptr, num_tiles, C, HIDDEN, BLOCK_E,
                                STAGES, CONSUMERS, PRODUCER_WARPS, BALANCE, ready2, empty2, SPLIT_RING)),
            ], [num_warps, PRODUCER_WARPS], [CONSUMER_REGS, PRODUCER_REGS])
        else:
            gl.warp_specialize([
                (_ws_consumer, (x_ptr, out_ptr, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr, b2_ptr, w1_smem, w2_smem,
                                z_ring, h_ring, b1_smem, b2_smem, ready, empty, z_ready, z_empty, turn, L, eps,
                                num_tiles, 0,
                                CONSUMERS, C, HIDDEN, KERNEL_SIZE, DILATION, EVEN_L, BLOCK_L, BLOCK_E, STAGES, PIPELINE,
                                False, 1, PINGPONG, Z_REGS, GELU_FIT, B1_MMA, THREAD_RELEASE,
                                num_warps, BALANCE, LATE_RESIDUAL, ready2, empty2, SPLIT_RING,
                                CROSS_TILE)),
                (_ws_consumer, (x_ptr, out_ptr, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr, b2_ptr, w1_smem, w2_smem,
                                z_ring, h_ring, b1_smem, b2_smem, ready, empty, z_ready, z_empty, turn, L, eps,
                                num_tiles, 1,
                                CONSUMERS, C, HIDDEN, KERNEL_SIZE, DILATION, EVEN_L, BLOCK_L, BLOCK_E, STAGES, PIPELINE,
                                False, 1, PINGPONG, Z_REGS, GELU_FIT, B1_MMA, THREAD_RELEASE,
                                num_warps, BALANCE, LATE_RESIDUAL, ready2, empty2, SPLIT_RING,
                                CROSS_TILE)),
                (_ws_consumer, (x_ptr, out_ptr, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr, b2_ptr, w1_smem, w2_smem,
                                z_ring, h_ring, b1_smem, b2_smem, ready, empty, z_ready, z_empty, turn, L, eps,
                                num_tiles, 2,
                                CONSUMERS, C, HIDDEN, KERNEL_SIZE, DILATION, EVEN_L, BLOCK_L, BLOCK_E, STAGES, PIPELINE,
                                False, 1, PINGPONG, Z_REGS, GELU_FIT, B1_MMA, THREAD_RELEASE,
                                num_warps, BALANCE, LATE_RESIDUAL, ready2, empty2, SPLIT_RING,
                                CROSS_TILE)),
                (_ws_producer, (w1_smem, w2_smem, ready, empty, w1_ptr, w2_ptr, num_tiles, C, HIDDEN, BLOCK_E,
                                STAGES, CONSUMERS, PRODUCER_WARPS, BALANCE, ready2, empty2, SPLIT_RING)),
            ], [num_warps, num_warps, PRODUCER_WARPS], [CONSUMER_REGS, CONSUMER_REGS, PRODUCER_REGS])

    _WS_LAUNCHER = FastLaunch(cheri_block_ws_kernel)
