"""Cross-entropy loss and gradient in one pass over HBM, for Hopper, in Gluon (Triton's explicit-layout dialect).

The two-kernel path (loss kernel, then gradient kernel) reads the logits twice from HBM and writes the gradient
once: 6.3 GB at BT=8192, V=128256 bf16, 1.48 ms at the H200's copy rate. This kernel reads them from HBM once. Each
program is persistent and walks whole rows; for each row it streams the tiles of the row twice:

  * sweep 1, tiles in order, loaded `evict_last`: the row's online max and sum of exp (and for label smoothing the
    sum of the logits), per thread, then one cross-warp combine: the lse, the loss;
  * sweep 2, tiles in reverse order (the freshest in L2 first), loaded `evict_first`: the gradient, stored
    `evict_first`. Its first tile, the row's last, is not loaded again: it is still in the ring slot sweep 1 read it
    from (REUSE_LAST; −2.5% at BT=8192, V=128256 bf16, and a row of one tile is read once).

HOLD (the default where a row is longer than one ring tile and fits on chip: up to 131072 bf16 entries or 65536
fp32 ones) reads each row from HBM once: a row is cut into n tiles (32 KB where that makes n >= 3; see
held_geometry), the first tiles are kept in registers (two by default: `hold`) and the rest stay in a ring of n - 1
slots until sweep 2 has written their gradient (_held_rows); each held tile past the first leaves a slot for the next
row's tiles. HBM then moves the floor's bytes (2.1 + 2.1 GB at BT=8192, V=128256 bf16): 1.148 ms with two held
tiles, 1.240 with one, against the ring's 1.34 (H200, sessions 26 and 29).

The two load hints reach the PTX only from Triton 3.9 on (cp.async...L2::cache_hint); Triton 3.6, the H200's, drops a
cp.async's eviction_policy, so every figure measured so far ran the loads without them (the stores' hint is emitted by
both). Giving sweep 1 an evict_last priority there through bulk L2 prefetches measured 6% slower, the same as the
prefetches with no priority (docs/perf/cross_entropy.md, session 23).

Tiles reach shared memory by cp.async, STAGES - 1 items ahead along the program's whole stream of (row, sweep,
tile) items, so the next row's first tiles are in flight while this row's gradient is written; registers hold only
the tile being worked on. Each thread reads back exactly the bytes it copied (the same layout for the copy and the
read), so `wait_group` on the thread's own copies would order the ring (Triton's membar pass still adds two CTA
barriers a tile).

The sweep-2 re-read hits L2 only while the row is still there: rows in flight x row bytes (132 x 250 KB at
BT=8192, V=128256 bf16: 33 MB) against the H200's 50 MB L2, so the grid is one program per SM and the caller takes
this kernel only where that product fits in L2. Even then ncu found about half of the re-reads hitting (1.37 ms
against 1.61 for two kernels; docs/perf/cross_entropy.md, session 14).

Only for CUDA devices of compute capability 9.x with a Triton that has Gluon; the caller runs the two-kernel path
otherwise, and when this kernel fails to compile (Gluon's API moves between Triton releases).
"""
import functools

import torch
import triton

from greyhound._launch import FastLaunch
from greyhound.ops._gluon import async_copy, async_load as _async_load, gl, gluon, reinterpret as _reinterpret
from greyhound.ops._gluon import warn_fallback as _warn_fallback, why_not_hopper

_WARNED = set()

# The soft-cap's tanh (this kernel's _tanh and cross_entropy._tanh): below |x| = TANH_SERIES_BOUND the odd Taylor
# series x * (c0 + c1 x^2 + ... + c5 x^10) (truncation < 3e-8 relative there), where 1 - 2 / (1 + e^2x) cancels
# (relative error ~1/|x| ulps: a soft-cap of 1e5 put 7e-3 into the loss); 3.8e-7 relative at most over fp32
TANH_SERIES = triton.language.constexpr((1.0, -1.0 / 3.0, 2.0 / 15.0, -17.0 / 315.0, 62.0 / 2835.0,
                                         -1382.0 / 155925.0))
TANH_SERIES_BOUND = triton.language.constexpr(0.4)


def available():
    return gluon is not None


@functools.lru_cache(maxsize=None)
def _shared_memory(device_index):
    return torch.cuda.get_device_properties(device_index).shared_memory_per_block_optin


# the H200's (any Hopper's) shared memory a block can opt into, less the cross-warp reductions' scratch
_HOPPER_RING_BYTES = 232448 - 1024


def held_geometry(V, element_size, num_warps, tile_rows=None):
    """(tile_rows, stages) for HOLD, or None when the row does not fit on chip (longer than about 8 tiles of 32 KB:
    131072 bf16 entries or 65536 fp32 ones at 16 warps). The tile: `tile_rows` when given, else the first of 32 KB,
    64 KB and 16 KB tiles (tile_rows a power of 2 in [2, 16 / element_size]) that cuts the row into n >= 3 tiles
    whose last n - 1 fit the ring (stages = n - 1; tile 0 is held in registers). 32 KB first: at BT=8192 bf16 it was
    the fastest measured, V=128256 1.242 ms against 1.379 with 64 KB tiles; V=65536 0.682 against 0.765 with 16 KB
    (H200, docs/perf/cross_entropy.md, session 26)."""
    most = 16 // element_size
    per_32kb = max(1, 32768 // (256 * num_warps * element_size))
    for rows in (tile_rows,) if tile_rows else (per_32kb, 2 * per_32kb, per_32kb // 2):
        tile = rows * 256 * num_warps
        n = -(-V // tile)
        if 2 <= rows <= most and n >= 3 and (n - 1) * tile * element_size <= _HOPPER_RING_BYTES:
            return rows, n - 1
    return None


def unsupported(logits, grad, tile_rows, num_warps, stages, split=1, hold=0):
    """Why this kernel cannot run this call (a string), or None when it can. Its 16-byte copies need the vocabulary
    and both row strides to be multiples of 16 elements (what Triton's argument specialisation proves) and both base
    addresses 16-byte aligned. `hold` (the tiles held in registers; 0 or False: the ring) needs a row of more than
    one and at most stages + 1 tiles, one program a row, a gradient of the logits' dtype, and 1 to 3 held tiles that
    leave at least one of the row's tiles to the ring."""
    V = logits.shape[1]
    if hold:
        tile = tile_rows * 256 * num_warps
        if not tile < V <= (stages + 1) * tile or split != 1 or tile_rows < 2 or grad.dtype != logits.dtype:
            return f"holding a row needs tile_rows >= 2, one program a row, a gradient of the logits' dtype and " \
                   f"{tile} < V <= {(stages + 1) * tile} (stages + 1 tiles of {tile} entries), got tile_rows " \
                   f"{tile_rows}, split {split}, gradient {grad.dtype} for logits {logits.dtype}, V {V}"
        if not 1 <= int(hold) <= min(3, stages):
            return f"the tiles held in registers must be 1 to 3 and at most the ring's {stages} stages, got {int(hold)}"
    why_not = why_not_hopper(logits.device)
    if why_not is not None:
        return why_not
    for name, value in (("the vocabulary size", V), ("the logits' row stride", logits.stride(0)),
                        ("the gradient's row stride", grad.stride(0))):
        if value % 16:
            return f"{name} must be a multiple of 16 for 16-byte copies, got {value}"
    for name, tensor in (("logits'", logits), ("gradient's", grad)):
        if tensor.data_ptr() % 16:
            return f"the {name} base address must be 16-byte aligned, got {tensor.data_ptr() % 16} bytes past"
    if num_warps not in (4, 8, 16, 32) or tile_rows & (tile_rows - 1) or not 1 <= tile_rows <= 16 or stages < 2:
        return f"needs num_warps in (4, 8, 16, 32), a power-of-2 tile_rows <= 16 and stages >= 2, got {num_warps}, " \
               f"{tile_rows}, {stages}"
    if split & (split - 1) or not 1 <= split <= 8:
        return f"the programs sharing a row (split) must be a power of 2 in [1, 8], got {split}"
    tile_bytes = tile_rows * 8 * 32 * num_warps * logits.element_size()
    limit = _shared_memory(logits.device.index) - 1024  # the cross-warp reductions' scratch
    if stages * tile_bytes > limit:
        return f"the tile ring ({stages} x {tile_bytes} bytes) does not fit in {limit} bytes of shared memory"
    return None


def warn_fallback(error):
    """Once per kind of failure: the Gluon kernel did not run and the two-kernel path runs instead."""
    _warn_fallback(_WARNED, "one-pass cross-entropy", "the two-kernel path", error)


def launch(logits, grad, target, per_token_loss, lse, grad_scale, grad_scale_stride, ignore_index,
           label_smoothing, softcap, lse_square_scale, programs, tile_rows, num_warps, stages, policy=7, split=1,
           reuse_last=True, hold=0):
    """One launch: loss, lse and grad_scale * d loss / d logits of every row (see cross_entropy._cross_entropy_rows
    for the arguments' meaning; `softcap` None for none). `programs` at most the number that can be resident at
    once when split > 1 (a group's programs wait for each other). `reuse_last`: sweep 2 takes each row's last tile
    from the ring slot sweep 1 left it in instead of loading it again. `hold`: each row read once and held on chip, its
    first `hold` tiles in registers (an int, 1 to 3; True is 1; see _held_rows; the row must be stages + 1 tiles, see
    held_geometry)."""
    rows, V = logits.shape
    programs = max(1, min(programs // split, rows)) * split
    if split > 1:  # every slot starts empty (-1: no pair of fp32 values a program publishes has these bits)
        partials = torch.full((rows * 2 * split,), -1, device=logits.device, dtype=torch.int64)
    else:
        partials = lse  # unused
    _LAUNCHER[(programs,)](
        logits, logits.stride(0), grad, grad.stride(0), target, per_token_loss, lse, grad_scale, grad_scale_stride,
        partials, rows, V, ignore_index, float(label_smoothing), float(softcap or 1.0),
        float(lse_square_scale),
        HAS_SOFTCAP=softcap is not None, HAS_SMOOTHING=label_smoothing > 0, HAS_Z_LOSS=lse_square_scale > 0,
        TILE_R=tile_rows, STAGES=stages, SPLIT=split, POLICY=policy, REUSE_LAST=int(bool(reuse_last)),
        HOLD=int(hold), num_warps=num_warps)


if gluon is not None:

    @gluon.constexpr_function
    def _tile_layout(tile_r, num_warps):
        """(TILE_R, 32 * num_warps, 8) tiles, row-major over one row's TILE contiguous entries: each thread holds 8
        contiguous entries (16 bytes of bf16) in each of TILE_R slabs, so copies and stores are 16-byte vectors,
        coalesced per warp, and a thread's reductions over axes 0 and 2 stay in its registers."""
        return gl.BlockedLayout([tile_r, 1, 8], [1, 32, 1], [1, num_warps, 1], [2, 1, 0])

    @gluon.jit
    def _tanh(x):
        # TANH_SERIES below its bound, else the exp2 form (as cross_entropy._tanh)
        x2 = x * x
        series = x2 * TANH_SERIES[5] + TANH_SERIES[4]
        for k in gl.static_range(4):
            series = series * x2 + TANH_SERIES[3 - k]
        return gl.where(gl.abs(x) < TANH_SERIES_BOUND, x * series,
                        1.0 - 2.0 / (1.0 + gl.exp2(x * 2.8853900817779268)))  # 2 * log2(e)

    @gluon.jit
    def _tile_offsets(TILE_R: gl.constexpr, num_warps: gl.constexpr, LAYOUT: gl.constexpr):
        """Entry offsets of a tile within its row, in LAYOUT."""
        r = gl.arange(0, TILE_R, layout=gl.SliceLayout(1, gl.SliceLayout(2, LAYOUT)))
        t = gl.arange(0, 32 * num_warps, layout=gl.SliceLayout(0, gl.SliceLayout(2, LAYOUT)))
        e = gl.arange(0, 8, layout=gl.SliceLayout(0, gl.SliceLayout(1, LAYOUT)))
        slab = gl.expand_dims(gl.expand_dims(r, 1), 2) * (256 * num_warps)
        return slab + gl.expand_dims(gl.expand_dims(t, 0), 2) * 8 + gl.expand_dims(gl.expand_dims(e, 0), 1)

    @gluon.constexpr_function
    def _policy(policy, bit, hint):
        """The eviction hint of one access kind: `hint` when its bit is set in POLICY (1: sweep-1 loads, 2: sweep-2
        loads, 4: gradient stores), else none."""
        return hint if policy & bit else ""

    @gluon.jit
    def _issue(ring, logits_ptr, stride, item, n_items, first_row, n_groups, n_tiles, rank, V,
               TILE_R: gl.constexpr, STAGES: gl.constexpr, SPLIT: gl.constexpr, num_warps: gl.constexpr,
               LAYOUT: gl.constexpr, POLICY: gl.constexpr, REUSE_LAST: gl.constexpr):
        """cp.async of stream item `item` into ring slot item % STAGES, as one commit group (empty past the stream's
        end, so that wait_group counts stay static). The program's stream: rows first_row, first_row + n_groups,
        ...; in each, its n_tiles tiles (row tiles rank, rank + SPLIT, ...) in order (sweep 1), then in reverse
        order (sweep 2), without the last tile when REUSE_LAST (sweep 2 reads it from sweep 1's slot)."""
        TILE: gl.constexpr = TILE_R * 256 * num_warps
        if item < n_items:
            per_row = 2 * n_tiles - REUSE_LAST
            row = first_row + (item // per_row) * n_groups
            within = item % per_row
            tile = rank + SPLIT * gl.where(within < n_tiles, within, per_row - 1 - within)
            offsets = tile * TILE + _tile_offsets(TILE_R, num_warps, LAYOUT)
            pointers = logits_ptr + row.to(gl.int64) * stride + offsets
            slot = ring.index(item % STAGES)
            if within < n_tiles:  # sweep 1: kept in L2 for sweep 2
                _async_load(slot, pointers, mask=offsets < V,
                                                       eviction_policy=_policy(POLICY, 1, "evict_last"))
            else:  # sweep 2: the last use
                _async_load(slot, pointers, mask=offsets < V,
                                                       eviction_policy=_policy(POLICY, 2, "evict_first"))
        async_copy.commit_group()

    @gluon.jit
    def _filled(slots):
        """The group's partials in these int64 slots, read (volatile: from L2) until none is empty (-1) any more."""
        packed = gl.load(slots, volatile=True)
        while gl.sum((packed == -1).to(gl.int32), axis=0) > 0:
            packed = gl.load(slots, volatile=True)
        return packed

    @gluon.jit
    def _sweep1_tile(z, offsets, V, col_max, sum_exp, sum_z, count, softcap, MASKED: gl.constexpr,
                     HAS_SOFTCAP: gl.constexpr, HAS_SMOOTHING: gl.constexpr):
        """Folds one tile (fp32, LAYOUT) into the thread's running max and sum of exp and, for label smoothing, its
        sum of z - col_max over the `count` entries it has folded.

        Each exponent is (z - max) * log2(e), not z * log2(e) - max * log2(e) (one FMA): the rounding of
        max * log2(e), half an ulp of the max's exponent (5e-4 at logits of 1e4), went into the sum, so into the loss
        and every gradient entry; z - max is exact near the max (Sterbenz). The smoothing sum takes the same z - max:
        the logits' own sum overflows where two are 3e38, although every z - max is finite; kept relative to the
        thread's running max (moved by count * the max's move), every term is <= 0, so no partial sum exceeds the
        final one."""
        if HAS_SOFTCAP:
            z = softcap * _tanh(z / softcap)
        if MASKED:
            z = gl.where(offsets < V, z, float("-inf"))
        new_max = gl.maximum(col_max, gl.max(gl.max(z, axis=2), axis=0))
        moved = col_max - new_max
        # clamped so that -FLT_MAX - max never overflows; exp2 of it is 0 either way
        rescale = gl.exp2(gl.maximum(moved, -1000.0) * 1.4426950408889634)
        d = z - gl.expand_dims(gl.expand_dims(new_max, 0), 2)
        p = gl.exp2(d * 1.4426950408889634)
        sum_exp = sum_exp * rescale + gl.sum(gl.sum(p, axis=2), axis=0)
        if HAS_SMOOTHING:
            if MASKED:
                d = gl.where(offsets < V, d, 0.0)
                folded = gl.sum(gl.sum((offsets < V).to(gl.float32), axis=2), axis=0)
            else:
                folded = z.shape[0] * z.shape[2]  # the thread's entries of a tile
            # the earlier entries moved to the new max (clamped: 0 entries times the -2.3e38 start's move, which can
            # overflow to -inf, is 0, not nan)
            sum_z = sum_z + count * gl.maximum(moved, -3.4028234663852886e38) + gl.sum(gl.sum(d, axis=2), axis=0)
            count += folded
        return new_max, sum_exp, sum_z, count

    @gluon.jit
    def _sweep2_tile(x, offsets, tile_start, target, row_max, log2_sum, softmax_coef, target_coef, uniform, softcap,
                     TILE: gl.constexpr, HAS_SOFTCAP: gl.constexpr):
        """The gradient of one tile (fp32, LAYOUT): p * softmax_coef - uniform - target_coef [j = target], times the
        soft-cap's derivative. p = exp2((z - row_max) log2(e) - log2_sum), not exp2(z log2(e) - lse log2(e)): lse's
        rounding (an ulp of the max logit, 1e-3 at 1e4) went into every p; z - row_max is exact near the max. One
        more FADD an entry."""
        z = x
        if HAS_SOFTCAP:
            capped = _tanh(x / softcap)
            z = softcap * capped
        grad = gl.exp2((z - row_max) * 1.4426950408889634 - log2_sum) * softmax_coef - uniform
        local_target = target - tile_start
        if (local_target >= 0) & (local_target < TILE):  # the target's tile only
            grad = gl.where(offsets == local_target.to(gl.int32), grad - target_coef, grad)
        if HAS_SOFTCAP:
            grad = grad * (1.0 - capped * capped)
        return grad

    @gluon.jit
    def _gradient_tile(x, grad_row, t, n_full, V, offsets, target, row_max, log2_sum, softmax_coef, target_coef,
                       uniform, softcap, TILE: gl.constexpr, HAS_SOFTCAP: gl.constexpr, POLICY: gl.constexpr):
        """Sweep 2's work on row tile t, whose entries are x (fp32, LAYOUT): its gradient, stored."""
        grad = _sweep2_tile(x, offsets, t * TILE, target, row_max, log2_sum, softmax_coef, target_coef, uniform,
                            softcap, TILE, HAS_SOFTCAP)
        pointers = grad_row + t * TILE + offsets
        if t < n_full:
            gl.store(pointers, grad.to(grad_row.dtype.element_ty), eviction_policy=_policy(POLICY, 4, "evict_first"))
        else:
            gl.store(pointers, grad.to(grad_row.dtype.element_ty), mask=offsets < V - t * TILE,
                     eviction_policy=_policy(POLICY, 4, "evict_first"))

    @gluon.jit
    def _target_logit(logits_ptr, logits_row_stride, row, target, V, ignore_index):
        """The row's logit at its target (fp32; 0, never read, for an ignored or out-of-range target)."""
        in_range = (target >= 0) & (target < V)
        return gl.load(logits_ptr + row * logits_row_stride + gl.where(in_range, target, 0),
                       mask=(target != ignore_index) & in_range, other=0.0).to(gl.float32)

    @gluon.jit
    def _row_end(per_token_loss_ptr, lse_ptr, row, target, z_target, row_scale, row_max, row_sum, row_sum_z, V,
                 ignore_index, label_smoothing, softcap, lse_square_scale, writer, HAS_SOFTCAP: gl.constexpr,
                 HAS_SMOOTHING: gl.constexpr, HAS_Z_LOSS: gl.constexpr):
        """The row's loss and lse from its max, sum of exp, sum of z - row_max (label smoothing) and target logit
        (_target_logit), stored when `writer`; returns sweep 2's coefficients (row_max, log2 of the sum of exp: nan
        for a bad target, softmax_coef, target_coef, uniform; see _sweep2_tile)."""
        log_sum = gl.log(row_sum)
        lse = row_max + log_sum  # nan for a row holding +inf (inf - inf): so are its loss and gradient
        is_valid = target != ignore_index
        is_bad = is_valid & ((target < 0) | (target >= V))
        if HAS_SOFTCAP:
            z_target = softcap * _tanh(z_target / softcap)
        # lse - (1 - eps) z_target - eps mean_j z_j with lse = row_max + log_sum: the large parts cancel exactly first
        # (row_max - z_target), so the loss does not carry lse's rounding; row_sum_z = sum_j (z_j - row_max)
        loss = (1.0 - label_smoothing) * (row_max - z_target) + log_sum
        if HAS_SMOOTHING:
            loss -= label_smoothing * (row_sum_z / V)
        if HAS_Z_LOSS:
            loss += lse_square_scale * lse * lse
        lse = gl.where(is_bad, float("nan"), lse)
        gl.store(per_token_loss_ptr + row, gl.where(is_bad, float("nan"), gl.where(is_valid, loss, 0.0)), mask=writer)
        # a row holding +inf: its loss and gradient nan as F.cross_entropy's, its lse +inf as torch.logsumexp's
        gl.store(lse_ptr + row, gl.where(row_max == float("inf"), row_max, lse), mask=writer)
        row_scale = gl.where(is_valid, row_scale, 0.0)
        softmax_coef = row_scale
        if HAS_Z_LOSS:
            softmax_coef = row_scale * (1.0 + 2.0 * lse_square_scale * lse)
        target_coef = row_scale * (1.0 - label_smoothing)
        uniform = row_scale * label_smoothing / V
        return row_max, gl.where(is_bad, float("nan"), gl.log2(row_sum)), softmax_coef, target_coef, uniform

    @gluon.jit
    def _row_stats(col_max, sum_exp, sum_z, count):
        """The row's max, sum of exp, sum of z - row_max and count of entries from the threads' running ones (each
        thread's sum of z - col_max moved to the row's max: count * the difference, clamped as in _sweep1_tile)."""
        row_max = gl.max(col_max, axis=0)
        moved = col_max - row_max
        row_sum = gl.sum(sum_exp * gl.exp2(gl.maximum(moved, -1000.0) * 1.4426950408889634), axis=0)
        row_sum_z = gl.sum(sum_z + count * gl.maximum(moved, -3.4028234663852886e38), axis=0)
        return row_max, row_sum, row_sum_z, gl.sum(count, axis=0)

    @gluon.jit
    def _issue_held(ring, logits_ptr, stride, item, n_items, first_row, n_groups, V, TILE_R: gl.constexpr,
                    STAGES: gl.constexpr, num_warps: gl.constexpr, LAYOUT: gl.constexpr, POLICY: gl.constexpr):
        """HOLD's stream: item k is tile k % (STAGES + 1) of the program's row k // (STAGES + 1), copied into ring
        slot k % STAGES as one commit group (empty past the stream's end). Each tile is loaded once: its last use."""
        TILE: gl.constexpr = TILE_R * 256 * num_warps
        if item < n_items:
            row = first_row + (item // (STAGES + 1)) * n_groups
            offsets = (item % (STAGES + 1)) * TILE + _tile_offsets(TILE_R, num_warps, LAYOUT)
            _async_load(ring.index(item % STAGES), logits_ptr + row.to(gl.int64) * stride + offsets, mask=offsets < V,
                        eviction_policy=_policy(POLICY, 2, "evict_first"))
        async_copy.commit_group()

    @gluon.constexpr_function
    def _word_layout(tile_r, num_warps):
        """_tile_layout's tile seen as 32-bit words: each thread's 8 16-bit entries of a slab are 4 words."""
        return gl.BlockedLayout([tile_r, 1, 4], [1, 32, 1], [1, num_warps, 1], [2, 1, 0])

    @gluon.jit
    def _held_words(slot, TILE_R: gl.constexpr, num_warps: gl.constexpr):
        """A ring slot of 16-bit entries, loaded as the 32-bit words that hold them: held in registers, two entries
        a register (a tensor of 16-bit entries is held one a register)."""
        WORDS: gl.constexpr = _word_layout(TILE_R, num_warps)
        return _reinterpret(slot, gl.int32, [TILE_R, 32 * num_warps, 4],
                            gl.SwizzledSharedLayout(1, 1, 1, [2, 1, 0])).load(WORDS)

    @gluon.jit
    def _entry(words, SHIFT: gl.constexpr, DTYPE: gl.constexpr):
        """The 16-bit entries in bits SHIFT.. of 32-bit words, as fp32."""
        return (words >> SHIFT).to(gl.int16).to(DTYPE, bitcast=True).to(gl.float32)

    @gluon.jit
    def _bits(x, DTYPE: gl.constexpr):
        """fp32 values rounded to the 16-bit DTYPE, as the low 16 bits of int32s (the rest 0)."""
        return x.to(DTYPE).to(gl.int16, bitcast=True).to(gl.int32) & 0xFFFF

    @gluon.jit
    def _gradient_words(words, grad_row, start, target, row_max, log2_sum, softmax_coef, target_coef, uniform, softcap,
                        TILE_R: gl.constexpr, num_warps: gl.constexpr, HAS_SOFTCAP: gl.constexpr,
                        POLICY: gl.constexpr, DTYPE: gl.constexpr):
        """Sweep 2's work on a full chunk of a row (TILE_R slabs from entry `start`) held as the 32-bit words of its
        16-bit DTYPE entries: its gradient, stored as words (a word's low half is the earlier entry)."""
        WORDS: gl.constexpr = _word_layout(TILE_R, num_warps)
        r = gl.arange(0, TILE_R, layout=gl.SliceLayout(1, gl.SliceLayout(2, WORDS)))
        t = gl.arange(0, 32 * num_warps, layout=gl.SliceLayout(0, gl.SliceLayout(2, WORDS)))
        w = gl.arange(0, 4, layout=gl.SliceLayout(0, gl.SliceLayout(1, WORDS)))
        word_offsets = (gl.expand_dims(gl.expand_dims(r, 1), 2) * (128 * num_warps)
                        + gl.expand_dims(gl.expand_dims(t, 0), 2) * 4 + gl.expand_dims(gl.expand_dims(w, 0), 1))
        TILE: gl.constexpr = TILE_R * 256 * num_warps
        low = _sweep2_tile(_entry(words, 0, DTYPE), 2 * word_offsets, start, target, row_max, log2_sum, softmax_coef,
                           target_coef, uniform, softcap, TILE, HAS_SOFTCAP)
        high = _sweep2_tile(_entry(words, 16, DTYPE), 2 * word_offsets + 1, start, target, row_max, log2_sum,
                            softmax_coef, target_coef, uniform, softcap, TILE, HAS_SOFTCAP)
        gl.store(grad_row.to(gl.pointer_type(gl.int32)) + start // 2 + word_offsets,
                 _bits(low, grad_row.dtype.element_ty) | (_bits(high, grad_row.dtype.element_ty) << 16),
                 eviction_policy=_policy(POLICY, 4, "evict_first"))

    @gluon.jit
    def _hold(slot, WORDS: gl.constexpr, HALF: gl.constexpr, LAYOUT: gl.constexpr, num_warps: gl.constexpr):
        """A chunk (a half-tile slot) kept in registers across the row: as its 32-bit words when its entries are
        16-bit (two a register; a tensor of 16-bit entries takes one register each), else as loaded."""
        if WORDS:
            return _held_words(slot, HALF, num_warps)
        else:
            return slot.load(LAYOUT)

    @gluon.jit
    def _gradient_held(held, grad_row, q, n_full, V, offsets, target, row_max, log2_sum, softmax_coef, target_coef,
                       uniform, softcap, WORDS: gl.constexpr, HALF: gl.constexpr, num_warps: gl.constexpr,
                       HAS_SOFTCAP: gl.constexpr, POLICY: gl.constexpr, DTYPE: gl.constexpr):
        """Sweep 2's work on held chunk q (full)."""
        CHUNK: gl.constexpr = HALF * 256 * num_warps
        if WORDS:
            _gradient_words(held, grad_row, q * CHUNK, target, row_max, log2_sum, softmax_coef, target_coef, uniform,
                            softcap, HALF, num_warps, HAS_SOFTCAP, POLICY, DTYPE)
        else:
            _gradient_tile(held.to(gl.float32), grad_row, q, n_full, V, offsets, target, row_max, log2_sum,
                           softmax_coef, target_coef, uniform, softcap, CHUNK, HAS_SOFTCAP, POLICY)

    @gluon.jit
    def _fold_tile(z, q, n_full, V, offsets, col_max, sum_exp, sum_z, count, softcap, TILE: gl.constexpr,
                   HAS_SOFTCAP: gl.constexpr, HAS_SMOOTHING: gl.constexpr):
        """Sweep 1's work on the row's q-th tile of TILE entries (z fp32; n_full = V // TILE): masked only when it is
        not full."""
        if q < n_full:
            return _sweep1_tile(z, offsets, V - q * TILE, col_max, sum_exp, sum_z, count, softcap, False, HAS_SOFTCAP,
                                HAS_SMOOTHING)
        else:
            return _sweep1_tile(z, offsets, V - q * TILE, col_max, sum_exp, sum_z, count, softcap, True, HAS_SOFTCAP,
                                HAS_SMOOTHING)

    @gluon.jit
    def _held_tile(ring, logits_ptr, stride, base, t, n_items, first_row, n_groups, offsets, V, col_max, sum_exp,
                   sum_z, count, softcap, WORDS: gl.constexpr, TILE_R: gl.constexpr, STAGES: gl.constexpr,
                   LAYOUT: gl.constexpr, COPY: gl.constexpr, POLICY: gl.constexpr, num_warps: gl.constexpr,
                   HAS_SOFTCAP: gl.constexpr, HAS_SMOOTHING: gl.constexpr):
        """Sweep 1's work on the row's tile t, one of its first HELD (full) tiles, kept in registers: waits for its
        copies, holds its two halves (see _hold), folds it into the running values, then refills its slot with the
        item STAGES on (see _held_rows)."""
        HALF: gl.constexpr = TILE_R // 2
        async_copy.wait_group(STAGES - 1)
        slot = ring.index((base + t) % STAGES)
        held0 = _hold(slot.slice(0, HALF), WORDS, HALF, LAYOUT, num_warps)
        held1 = _hold(slot.slice(HALF, HALF), WORDS, HALF, LAYOUT, num_warps)
        first0 = slot.slice(0, HALF).load(LAYOUT).to(gl.float32)
        first1 = slot.slice(HALF, HALF).load(LAYOUT).to(gl.float32)
        start = t * (TILE_R * 256 * num_warps)
        col_max, sum_exp, sum_z, count = _sweep1_tile(first0, offsets, V - start, col_max, sum_exp, sum_z, count,
                                                      softcap, False, HAS_SOFTCAP, HAS_SMOOTHING)
        col_max, sum_exp, sum_z, count = _sweep1_tile(first1, offsets, V - start - HALF * 256 * num_warps, col_max,
                                                      sum_exp, sum_z, count, softcap, False, HAS_SOFTCAP,
                                                      HAS_SMOOTHING)
        _issue_held(ring, logits_ptr, stride, base + STAGES + t, n_items, first_row, n_groups, V, TILE_R, STAGES,
                    num_warps, COPY, POLICY)
        return held0, held1, col_max, sum_exp, sum_z, count

    @gluon.jit
    def _held_rows(ring, logits_ptr, logits_row_stride, grad_ptr, grad_row_stride, target_ptr, per_token_loss_ptr,
                   lse_ptr, grad_scale_ptr, grad_scale_stride, n_rows, V, ignore_index, label_smoothing, softcap,
                   lse_square_scale, HAS_SOFTCAP: gl.constexpr, HAS_SMOOTHING: gl.constexpr,
                   HAS_Z_LOSS: gl.constexpr, TILE_R: gl.constexpr, STAGES: gl.constexpr, POLICY: gl.constexpr,
                   HELD: gl.constexpr, num_warps: gl.constexpr):
        """HOLD: each row is read from HBM once and held on chip until its gradient is written. A row is exactly
        STAGES + 1 tiles (the caller's choice of tile): its first HELD tiles in registers (1 to 3), the other
        STAGES + 1 - HELD in the ring's STAGES slots, which leaves HELD - 1 slots for the next row's first tiles.

        The program's stream is its rows' tiles in order, item k in slot k % STAGES. Slots are given back in the same
        order, and each gets the item STAGES further on at once: a held tile's slot as soon as the tile is in
        registers (sweep 1), a ring tile's slot after its gradient is written (sweep 2; the held tiles' gradients come
        last, from registers). So with HELD = 1 the first slot takes this row's last tile, and sweep 1 ends with
        nothing in flight until sweep 2 gives back its first slot; each further held tile puts one of the next row's
        tiles in flight over the end of sweep 1 and the row's reductions.

        Every step commits one group (a ring tile in sweep 1 commits an empty one), so that each wait in sweep 1 can
        leave STAGES - 1 groups in flight: counted step by step, at least STAGES - 1 groups follow the awaited tile's.

        Registers: the work goes by half tiles (chunks of TILE_R / 2 slabs, each thread's own bytes still), and a
        held tile of 16-bit entries as the 32-bit words that hold them (a 32 KB tile at 16 warps: 16 registers a
        thread): with whole 64 KB tiles in 16-bit registers one held tile spilled 168 bytes a thread at 16 warps
        (ptxas, Triton 3.6)."""
        HALF: gl.constexpr = TILE_R // 2
        COPY: gl.constexpr = _tile_layout(TILE_R, num_warps)  # a whole tile's copies
        LAYOUT: gl.constexpr = _tile_layout(HALF, num_warps)  # the work, by half tiles
        COLS: gl.constexpr = gl.SliceLayout(0, gl.SliceLayout(2, LAYOUT))
        CHUNK: gl.constexpr = HALF * 256 * num_warps
        N_T: gl.constexpr = STAGES + 1
        WORDS: gl.constexpr = logits_ptr.dtype.element_ty.primitive_bitwidth == 16
        DTYPE: gl.constexpr = logits_ptr.dtype.element_ty
        gl.static_assert(TILE_R >= 2, "a held tile is worked on in halves")
        gl.static_assert((HELD >= 1) & (HELD <= 3) & (HELD <= STAGES), "1 to 3 held tiles, and at least one in the ring")
        offsets = _tile_offsets(HALF, num_warps, LAYOUT)
        pid = gl.program_id(0)
        n_programs = gl.num_programs(0)
        n_full = V // CHUNK
        my_rows = gl.cdiv(gl.maximum(n_rows - pid, 0), n_programs)
        n_items = my_rows * N_T
        for s in gl.static_range(STAGES):
            _issue_held(ring, logits_ptr, logits_row_stride, s, n_items, pid, n_programs, V, TILE_R, STAGES,
                        num_warps, COPY, POLICY)
        for i in range(my_rows):
            row = (pid + i * n_programs).to(gl.int64)
            base = i * N_T
            target = gl.load(target_ptr + row).to(gl.int64)
            row_scale = gl.load(grad_scale_ptr + row * grad_scale_stride).to(gl.float32)
            # issued at the row's start, used at its end: these two dependent loads then run under sweep 1 (at the
            # row's end nothing else is in flight; measured level, 1.379 against 1.370 ms with 64 KB tiles)
            z_target = _target_logit(logits_ptr, logits_row_stride, row, target, V, ignore_index)
            col_max = gl.full([32 * num_warps], -2.3e38, gl.float32, COLS)  # see the kernel's note
            sum_exp = gl.zeros([32 * num_warps], gl.float32, COLS)
            sum_z = gl.zeros([32 * num_warps], gl.float32, COLS)  # label smoothing: sum of z - col_max
            count = gl.zeros([32 * num_warps], gl.float32, COLS)  # its entries
            # ---- sweep 1: the first HELD tiles into registers, each slot refilled at once; then the ring's tiles --
            # (V > STAGES x TILE: the held tiles are full)
            a0, a1, col_max, sum_exp, sum_z, count = _held_tile(
                ring, logits_ptr, logits_row_stride, base, 0, n_items, pid, n_programs, offsets, V, col_max, sum_exp,
                sum_z, count, softcap, WORDS, TILE_R, STAGES, LAYOUT, COPY, POLICY, num_warps, HAS_SOFTCAP,
                HAS_SMOOTHING)
            if HELD >= 2:
                b0, b1, col_max, sum_exp, sum_z, count = _held_tile(
                    ring, logits_ptr, logits_row_stride, base, 1, n_items, pid, n_programs, offsets, V, col_max,
                    sum_exp, sum_z, count, softcap, WORDS, TILE_R, STAGES, LAYOUT, COPY, POLICY, num_warps, HAS_SOFTCAP,
                    HAS_SMOOTHING)
            if HELD >= 3:
                c0, c1, col_max, sum_exp, sum_z, count = _held_tile(
                    ring, logits_ptr, logits_row_stride, base, 2, n_items, pid, n_programs, offsets, V, col_max,
                    sum_exp, sum_z, count, softcap, WORDS, TILE_R, STAGES, LAYOUT, COPY, POLICY, num_warps, HAS_SOFTCAP,
                    HAS_SMOOTHING)
            for t in range(HELD, N_T):
                async_copy.wait_group(STAGES - 1)  # tile t's copies (the count: see above)
                slot = ring.index((base + t) % STAGES)
                for c in gl.static_range(2):
                    z = slot.slice(c * HALF, HALF).load(LAYOUT).to(gl.float32)
                    col_max, sum_exp, sum_z, count = _fold_tile(z, 2 * t + c, n_full, V, offsets, col_max, sum_exp,
                                                                sum_z, count, softcap, CHUNK, HAS_SOFTCAP,
                                                                HAS_SMOOTHING)
                async_copy.commit_group()
            row_max, row_sum, row_sum_z, row_count = _row_stats(col_max, sum_exp, sum_z, count)
            row_max, log2_sum, softmax_coef, target_coef, uniform = _row_end(
                per_token_loss_ptr, lse_ptr, row, target, z_target, row_scale, row_max, row_sum, row_sum_z, V,
                ignore_index, label_smoothing, softcap, lse_square_scale, True, HAS_SOFTCAP, HAS_SMOOTHING,
                HAS_Z_LOSS)
            # ---- sweep 2: the ring's tiles, each slot refilled with the item STAGES on; the held tiles last -------
            grad_row = grad_ptr + row * grad_row_stride
            for t in range(HELD, N_T):
                slot = ring.index((base + t) % STAGES)
                x = slot.slice(0, HALF).load(LAYOUT).to(gl.float32)
                _gradient_tile(x, grad_row, 2 * t, n_full, V, offsets, target, row_max, log2_sum, softmax_coef,
                               target_coef, uniform, softcap, CHUNK, HAS_SOFTCAP, POLICY)
                x = slot.slice(HALF, HALF).load(LAYOUT).to(gl.float32)
                _issue_held(ring, logits_ptr, logits_row_stride, base + STAGES + t, n_items, pid, n_programs, V,
                            TILE_R, STAGES, num_warps, COPY, POLICY)
                _gradient_tile(x, grad_row, 2 * t + 1, n_full, V, offsets, target, row_max, log2_sum, softmax_coef,
                               target_coef, uniform, softcap, CHUNK, HAS_SOFTCAP, POLICY)
            _gradient_held(a0, grad_row, 0, n_full, V, offsets, target, row_max, log2_sum, softmax_coef, target_coef,
                           uniform, softcap, WORDS, HALF, num_warps, HAS_SOFTCAP, POLICY, DTYPE)
            _gradient_held(a1, grad_row, 1, n_full, V, offsets, target, row_max, log2_sum, softmax_coef, target_coef,
                           uniform, softcap, WORDS, HALF, num_warps, HAS_SOFTCAP, POLICY, DTYPE)
            if HELD >= 2:
                _gradient_held(b0, grad_row, 2, n_full, V, offsets, target, row_max, log2_sum, softmax_coef,
                               target_coef, uniform, softcap, WORDS, HALF, num_warps, HAS_SOFTCAP, POLICY, DTYPE)
                _gradient_held(b1, grad_row, 3, n_full, V, offsets, target, row_max, log2_sum, softmax_coef,
                               target_coef, uniform, softcap, WORDS, HALF, num_warps, HAS_SOFTCAP, POLICY, DTYPE)
            if HELD >= 3:
                _gradient_held(c0, grad_row, 4, n_full, V, offsets, target, row_max, log2_sum, softmax_coef,
                               target_coef, uniform, softcap, WORDS, HALF, num_warps, HAS_SOFTCAP, POLICY, DTYPE)
                _gradient_held(c1, grad_row, 5, n_full, V, offsets, target, row_max, log2_sum, softmax_coef,
                               target_coef, uniform, softcap, WORDS, HALF, num_warps, HAS_SOFTCAP, POLICY, DTYPE)
        async_copy.wait_group(0)

    @gluon.jit
    def cross_entropy_one_pass_kernel(
        logits_ptr, logits_row_stride, grad_ptr, grad_row_stride, target_ptr, per_token_loss_ptr, lse_ptr,
        grad_scale_ptr, grad_scale_stride, partial_ptr, n_rows, V, ignore_index, label_smoothing,
        softcap, lse_square_scale,
        HAS_SOFTCAP: gl.constexpr, HAS_SMOOTHING: gl.constexpr, HAS_Z_LOSS: gl.constexpr,
        TILE_R: gl.constexpr, STAGES: gl.constexpr, SPLIT: gl.constexpr, POLICY: gl.constexpr,
        REUSE_LAST: gl.constexpr, HOLD: gl.constexpr, num_warps: gl.constexpr,
    ):
        """Per-token loss, lse (fp32) and grad_scale[row] * d loss / d logits. SPLIT programs (a group: pid // SPLIT,
        ranks pid % SPLIT) share each of the group's rows g, g + G / SPLIT, ... (G the grid, a multiple of SPLIT),
        rank r taking the row's tiles r, r + SPLIT, ...; with SPLIT > 1 they exchange their sweep-1 partials through
        partial_ptr (int64 [rows, 2, SPLIT], every slot -1 before the launch), all of a group's programs being
        resident together. Same contract as cross_entropy._cross_entropy_kernel +
        _gradient_kernel: an ignored row has loss 0 and a 0 gradient; a target outside [0, V) that is not
        ignore_index gives nan loss, lse and gradient, and is never read. grad_ptr may equal logits_ptr (each tile
        is read before it is written)."""
        gl.static_assert(STAGES >= 2, "the ring holds the tile in use and the next one")
        LAYOUT: gl.constexpr = _tile_layout(TILE_R, num_warps)
        COLS: gl.constexpr = gl.SliceLayout(0, gl.SliceLayout(2, LAYOUT))
        TILE: gl.constexpr = TILE_R * 256 * num_warps
        ring = gl.allocate_shared_memory(logits_ptr.dtype.element_ty, [STAGES, TILE_R, 32 * num_warps, 8],
                                         gl.SwizzledSharedLayout(1, 1, 1, [2, 1, 0]))
        if HOLD:
            gl.static_assert(SPLIT == 1, "a held row is one program's")
            _held_rows(ring, logits_ptr, logits_row_stride, grad_ptr, grad_row_stride, target_ptr, per_token_loss_ptr,
                       lse_ptr, grad_scale_ptr, grad_scale_stride, n_rows, V, ignore_index, label_smoothing, softcap,
                       lse_square_scale, HAS_SOFTCAP, HAS_SMOOTHING, HAS_Z_LOSS, TILE_R, STAGES, POLICY, HOLD,
                       num_warps)
            return
        offsets = _tile_offsets(TILE_R, num_warps, LAYOUT)

        SLOTS: gl.constexpr = gl.BlockedLayout([1], [32], [num_warps], [0])
        pid = gl.program_id(0)
        group = pid // SPLIT
        rank = pid % SPLIT
        n_groups = gl.num_programs(0) // SPLIT
        n_full = V // TILE
        n_tiles = gl.cdiv(gl.maximum(gl.cdiv(V, TILE) - rank, 0), SPLIT)  # this program's tiles of a row
        my_rows = gl.cdiv(gl.maximum(n_rows - group, 0), n_groups)
        n_items = my_rows * gl.maximum(2 * n_tiles - REUSE_LAST, 0)
        for s in gl.static_range(STAGES - 1):
            _issue(ring, logits_ptr, logits_row_stride, s, n_items, group, n_groups, n_tiles, rank, V, TILE_R, STAGES,
                   SPLIT, num_warps, LAYOUT, POLICY, REUSE_LAST)
        item = 0
        for i in range(my_rows):
            row = (group + i * n_groups).to(gl.int64)
            target = gl.load(target_ptr + row).to(gl.int64)
            row_scale = gl.load(grad_scale_ptr + row * grad_scale_stride).to(gl.float32)
            # finite, and finite times log2(e) too: -inf logits then give exp2(-inf) = 0, never inf - inf = nan
            col_max = gl.full([32 * num_warps], -2.3e38, gl.float32, COLS)
            sum_exp = gl.zeros([32 * num_warps], gl.float32, COLS)
            sum_z = gl.zeros([32 * num_warps], gl.float32, COLS)  # label smoothing: sum of z - col_max
            count = gl.zeros([32 * num_warps], gl.float32, COLS)  # its entries
            # ---- sweep 1: the row's max and sum of exp -------------------------------------------------------
            for j in range(n_tiles):
                t = rank + SPLIT * j
                _issue(ring, logits_ptr, logits_row_stride, item + STAGES - 1, n_items, group, n_groups, n_tiles, rank,
                       V, TILE_R, STAGES, SPLIT, num_warps, LAYOUT, POLICY, REUSE_LAST)
                async_copy.wait_group(STAGES - 1)  # item's copies (this thread's, the only ones it reads)
                z = ring.index(item % STAGES).load(LAYOUT).to(gl.float32)
                col_max, sum_exp, sum_z, count = _fold_tile(z, t, n_full, V, offsets, col_max, sum_exp, sum_z, count,
                                                            softcap, TILE, HAS_SOFTCAP, HAS_SMOOTHING)
                item += 1
            row_max, row_sum, row_sum_z, row_count = _row_stats(col_max, sum_exp, sum_z, count)
            if SPLIT > 1:
                # Publish this program's partials and wait for the group's others. Each slot is one relaxed 64-bit
                # exchange that carries the values themselves (max and sum of exp as two fp32 bit patterns; the sum
                # of z - max and the count of entries in a second slot), so no release/acquire fence is needed: a
                # fence (MEMBAR.GPU) would wait for every copy and store this program has in flight, the ring's
                # look-ahead included.
                slot_row = partial_ptr + row * (2 * SPLIT)
                gl.atomic_xchg(slot_row + rank, (row_max.to(gl.int32, bitcast=True).to(gl.int64) << 32)
                               | (row_sum.to(gl.int32, bitcast=True).to(gl.int64) & 0xFFFFFFFF), sem="relaxed",
                               scope="gpu")
                if HAS_SMOOTHING:
                    gl.atomic_xchg(slot_row + SPLIT + rank, (row_sum_z.to(gl.int32, bitcast=True).to(gl.int64) << 32)
                                   | (row_count.to(gl.int32, bitcast=True).to(gl.int64) & 0xFFFFFFFF), sem="relaxed",
                                   scope="gpu")
                slots = gl.arange(0, SPLIT, layout=SLOTS)
                packed = _filled(slot_row + slots)
                maxes = (packed >> 32).to(gl.int32).to(gl.float32, bitcast=True)
                sums = packed.to(gl.int32).to(gl.float32, bitcast=True)
                row_max = gl.max(maxes, axis=0)
                row_sum = gl.sum(sums * gl.exp2(gl.maximum(maxes - row_max, -1000.0) * 1.4426950408889634), axis=0)
                if HAS_SMOOTHING:
                    # each program's sum of z - its max, moved to the row's: count * the difference (a program with
                    # no entries: 0, its -2.3e38 start's difference clamped off -inf)
                    packed = _filled(slot_row + SPLIT + slots)
                    counts = packed.to(gl.int32).to(gl.float32, bitcast=True)
                    row_sum_z = gl.sum((packed >> 32).to(gl.int32).to(gl.float32, bitcast=True)
                                       + counts * gl.maximum(maxes - row_max, -3.4028234663852886e38), axis=0)
            z_target = _target_logit(logits_ptr, logits_row_stride, row, target, V, ignore_index)
            row_max, log2_sum, softmax_coef, target_coef, uniform = _row_end(
                per_token_loss_ptr, lse_ptr, row, target, z_target, row_scale, row_max, row_sum, row_sum_z, V,
                ignore_index, label_smoothing, softcap, lse_square_scale, rank == 0, HAS_SOFTCAP, HAS_SMOOTHING,
                HAS_Z_LOSS)
            # ---- sweep 2: the gradient, tiles in reverse order --------------------------------------------------
            grad_row = grad_ptr + row * grad_row_stride
            if REUSE_LAST:
                if n_tiles > 0:
                    # The row's last tile is still in the slot sweep 1 read it from (item - 1): the copy issued in a
                    # step goes to the slot read one step earlier, so that slot is refilled only in the next step.
                    _gradient_tile(ring.index((item - 1) % STAGES).load(LAYOUT).to(gl.float32), grad_row,
                                   rank + SPLIT * (n_tiles - 1), n_full, V, offsets, target, row_max, log2_sum,
                                   softmax_coef, target_coef, uniform, softcap, TILE, HAS_SOFTCAP, POLICY)
            for j2 in range(REUSE_LAST, n_tiles):
                _issue(ring, logits_ptr, logits_row_stride, item + STAGES - 1, n_items, group, n_groups, n_tiles, rank,
                       V, TILE_R, STAGES, SPLIT, num_warps, LAYOUT, POLICY, REUSE_LAST)
                async_copy.wait_group(STAGES - 1)
                _gradient_tile(ring.index(item % STAGES).load(LAYOUT).to(gl.float32), grad_row,
                               rank + SPLIT * (n_tiles - 1 - j2), n_full, V, offsets, target, row_max, log2_sum,
                               softmax_coef, target_coef, uniform, softcap, TILE, HAS_SOFTCAP, POLICY)
                item += 1
        async_copy.wait_group(0)

    _LAUNCHER = FastLaunch(cross_entropy_one_pass_kernel)
