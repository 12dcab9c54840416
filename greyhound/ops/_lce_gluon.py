"""The linear cross-entropy's loss-only pass as one GEMM with the log-sum-exp in its epilogue, for Hopper, in Gluon.

The vocab schedule of `chunked_linear_cross_entropy` (greyhound/ops/linear_cross_entropy.py) makes the logits a
chunk of the vocabulary at a time with cuBLAS, writes them (2.1 GB at BT=8192, V=128256 bf16), and reads them back
with a row kernel: on the H200 that pass runs at the board's power-limited GEMM rate (13.5-13.6 ms, session 12),
where the logits' HBM round trip and the row kernels (~0.95 ms of kernel time) are energy the GEMM cannot spend.
This kernel never writes a logit. It is a persistent GEMM (TMA loads into a STAGES-deep ring of shared-memory
buffers, asynchronous wgmma, one warpgroup per 64 rows of a BLOCK_M x BLOCK_N tile) whose epilogue, on the fp32
accumulator still in registers, does what the row kernel did with the tile's logits:

  * add the bias, round to the inputs' dtype (the logits cuBLAS would have written, so that the results are those
    of the cuBLAS path up to the GEMM's summation order), apply the soft-cap;
  * the tile's per-row max and sum of exp (and, for label smoothing, the sum of the logits), stored as partials
    [n_tiles_n, rows] in fp32;
  * the target logit of each row whose target falls in the tile.

`_merge_lse_partials` (linear_cross_entropy.py) then folds each row's partials into its max and sum of exp, and the
loss is finished on [BT] vectors as in the vocab schedule. The partials take n_tiles_n x rows x 8 (12 with label
smoothing) bytes (32.8 MB at the issue's shape, against the 64 MiB the forward may use); the caller runs the rows in
chunks when they would take more.

The loop is one stream of (tile, k-step) items, so the loads of the next tile's first k-steps are in flight while a
tile's epilogue runs; the tiles of a program are tile_id = program, program + programs, ... in an order that walks
GROUP_N vocabulary tiles for every row block before moving on (the weight's GROUP_N x BLOCK_N rows stay in L2 while
x streams past them; the x block a wave shares is read from L2 by GROUP_N programs).

Only for CUDA devices of compute capability 9.x with a Triton that has Gluon's Hopper TMA API, bf16/fp16 inputs whose
rows are 16-byte aligned (TMA's rule); the caller runs the cuBLAS vocab schedule otherwise, and when this kernel fails
to compile.
"""
import torch

from greyhound._launch import cdiv, multiprocessor_count
from greyhound.ops._gluon import gl, gluon, warn_fallback as _warn_fallback, why_not_hopper

try:  # the Hopper part of Gluon's API, on top of what greyhound.ops._gluon imports
    from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    # TMA global -> shared: `async_load` in newer Tritons (3.9, where the old name raises), `async_copy_global_to_shared`
    # in 3.6
    _tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
    _HOPPER_ERROR = None
except Exception as error:  # pragma: no cover - depends on the installed Triton
    _HOPPER_ERROR = error

_WARNED = set()

# (BLOCK_M, BLOCK_N, BLOCK_K, STAGES, GROUP_N, num_warps): 128 x 256 tiles, the largest wgmma shape, 8 warps (two
# warpgroups of 64 rows; 128 fp32 accumulator registers a thread); 3 stages of 48 KB; 8 vocabulary tiles a group.
# H200, BT=8192, V=128256 bf16, forward, sweep CLI (docs/perf/cross_entropy.md, session 30): GROUP_N 8 12.76-13.00 ms
# at d_model 4096 against 16's 13.59, 4's 13.04, 6's 12.90, 12's 12.94, 1's 13.71, 32's 18.8; 3 stages against 4:
# level at d_model 4096 (13.08 against 13.07 averaged over three processes), 2% faster at 8192 in three of three
DEFAULT_CONFIG = dict(block_m=128, block_n=256, block_k=64, stages=3, group_n=8, num_warps=8)


def available():
    return gluon is not None and _HOPPER_ERROR is None


def partial_vectors(label_smoothing):
    """fp32 [n_tiles_n, rows] partial arrays the kernel writes: max, sum of exp[, sum of logits]."""
    return 3 if label_smoothing > 0 else 2


def unsupported(x, weight, config):
    """Why this kernel cannot run on these inputs with this config (a string), or None when it can. The config is
    checked first, so that a bad tuning value is named wherever it is forced."""
    block_m, block_n, block_k = config["block_m"], config["block_n"], config["block_k"]
    stages, warps = config["stages"], config["num_warps"]
    if block_m != 16 * warps or warps not in (4, 8) or block_n not in (64, 128, 256) or block_k not in (32, 64, 128):
        return f"needs block_m = 16 x num_warps with 4 or 8 warps, block_n in (64, 128, 256) and block_k in " \
               f"(32, 64, 128), got {block_m}, {warps}, {block_n}, {block_k}"
    ring = stages * (block_m + block_n) * block_k * x.element_size()
    if stages < 2 or ring > 227 * 1024 - 8 * 1024:
        return f"the ring ({stages} stages of {(block_m + block_n) * block_k * x.element_size()} bytes) must have " \
               f"at least 2 stages and fit in shared memory"
    if config["group_n"] < 1:
        return f"group_n must be at least 1, got {config['group_n']}"
    if not available():
        return f"this Triton lacks Gluon's Hopper TMA API ({_HOPPER_ERROR})"
    why_not = why_not_hopper(x.device)
    if why_not is not None:
        return why_not
    if x.dtype not in (torch.bfloat16, torch.float16) or weight.dtype != x.dtype:
        return f"needs bf16 or fp16 x and weight of one dtype, got {x.dtype} and {weight.dtype}"
    for name, tensor in (("x", x), ("weight", weight)):
        if tensor.stride(1) != 1 or (tensor.stride(0) * tensor.element_size()) % 16 or tensor.data_ptr() % 16:
            return f"TMA needs {name} with unit column stride, a row stride of a multiple of 16 bytes and a 16-byte " \
                   f"aligned base, got strides {tuple(tensor.stride())} and {tensor.data_ptr() % 16} bytes past"
    return None


def warn_fallback(error):
    """Once per kind of failure: the Gluon kernel did not run and the cuBLAS vocab schedule runs instead."""
    _warn_fallback(_WARNED, "linear cross-entropy loss", "the cuBLAS vocab schedule", error)


def descriptor_type(block_shape, dtype):
    """The signature type of a TMA descriptor argument of `block_shape` over `dtype` ("bf16" or "fp16") as Triton
    specialises it at launch (for compiling the kernel without a GPU: tests/gluon_compile.py)."""
    layout = gl.NVMMASharedLayout.get_default_for(block_shape, gl.bfloat16 if dtype == "bf16" else gl.float16)
    return f"tensordesc<{dtype}[{block_shape[0]}, {block_shape[1]}],{layout!r}>"


def launch(x, weight, bias, target, partials, target_z, softcap, label_smoothing, config):
    """One launch over the rows of `x` [rows, H]: partials [vectors, n_tiles_n, rows] (max, sum of exp[, sum of
    logits]; the rows' axis contiguous) and target_z [rows] (the target logit of each row whose target is in [0, V);
    other rows untouched). `bias` [V] any stride (a copy when it is not contiguous)."""
    rows, V = x.shape[0], weight.shape[0]
    if bias is not None:
        bias = bias.contiguous()  # the epilogue reads it with unit stride
    block_m, block_n, block_k = config["block_m"], config["block_n"], config["block_k"]
    dtype = gl.bfloat16 if x.dtype == torch.bfloat16 else gl.float16
    x_desc = TensorDescriptor.from_tensor(x, [block_m, block_k],
                                          gl.NVMMASharedLayout.get_default_for([block_m, block_k], dtype))
    w_desc = TensorDescriptor.from_tensor(weight, [block_n, block_k],
                                          gl.NVMMASharedLayout.get_default_for([block_n, block_k], dtype))
    tiles = cdiv(rows, block_m) * cdiv(V, block_n)
    programs = min(tiles, multiprocessor_count(x.device.index))
    linear_lse_partials_kernel[(programs,)](
        x_desc, w_desc, bias if bias is not None else target_z, target, partials, target_z, rows, V,
        partials.stride(0), partials.stride(1), float(softcap or 1.0),
        HAS_BIAS=bias is not None, HAS_SOFTCAP=softcap is not None, HAS_SMOOTHING=label_smoothing > 0,
        STAGES=config["stages"], GROUP_N=config["group_n"], num_warps=config["num_warps"])


if gluon is not None and _HOPPER_ERROR is None:
    from greyhound.ops._ce_gluon import _tanh  # the soft-cap's tanh, as the one-pass CE kernel evaluates it

    @gluon.jit
    def _round_to(z, DTYPE: gl.constexpr):
        """fp32 `z` rounded to DTYPE (nearest, ties to even) and back. fp16 by integer arithmetic on the fp32 bits
        (10 mantissa bits kept; beyond fp16's largest finite value, +-inf as a conversion gives; below its
        smallest normal, fp32's exponent range is kept): ptxas serialises the wgmmas of a kernel whose epilogue
        converts the accumulator to fp16 (C7514, Triton 3.6 and 3.9), not for bf16."""
        if DTYPE == gl.float16:
            bits = z.to(gl.int32, bitcast=True)
            bits = (bits + (0x0FFF + ((bits >> 13) & 1))) & -8192  # -8192: ~0x1FFF
            rounded = bits.to(gl.float32, bitcast=True)
            rounded = gl.where(gl.abs(rounded) > 65504.0, rounded * float("inf"), rounded)
            return gl.where(z == z, rounded, z)  # nan stays nan
        else:
            return z.to(DTYPE).to(gl.float32)

    @gluon.jit
    def _tile_of(t, n_m, n_n, GROUP_N: gl.constexpr):
        """(row block, vocabulary block) of tile t: groups of GROUP_N vocabulary blocks, each walked for every row
        block in turn, vocabulary block fastest."""
        per_group = GROUP_N * n_m
        group = t // per_group
        first_n = group * GROUP_N
        size = gl.minimum(n_n - first_n, GROUP_N)
        within = t - group * per_group
        return within // size, first_n + within % size

    @gluon.jit
    def _issue(item, x_desc, w_desc, ready, x_ring, w_ring, program, programs, n_k, n_m, n_n, pred,
               STAGES: gl.constexpr, GROUP_N: gl.constexpr):
        """TMA loads of item `item` of this program's stream (its tile item // n_k, k-step item % n_k) into ring
        slot item % STAGES, both arriving on that slot's `ready` barrier; nothing when `pred` is false."""
        BLOCK_M: gl.constexpr = x_desc.block_type.shape[0]
        BLOCK_N: gl.constexpr = w_desc.block_type.shape[0]
        BLOCK_K: gl.constexpr = x_desc.block_type.shape[1]
        local = item // n_k
        k = item - local * n_k
        pid_m, pid_n = _tile_of(program + local * programs, n_m, n_n, GROUP_N)
        slot = item % STAGES
        bar = ready.index(slot)
        mbarrier.expect(bar, x_desc.block_type.nbytes + w_desc.block_type.nbytes, pred=pred)
        _tma_load(x_desc, [pid_m * BLOCK_M, k * BLOCK_K], bar, x_ring.index(slot), pred)
        _tma_load(w_desc, [pid_n * BLOCK_N, k * BLOCK_K], bar, w_ring.index(slot), pred)

    @gluon.jit
    def _epilogue(acc, pid_m, pid_n, bias_ptr, target_ptr, partials_ptr, target_z_ptr, rows, V, vector_stride,
                  tile_stride, softcap, HAS_BIAS: gl.constexpr, HAS_SOFTCAP: gl.constexpr,
                  HAS_SMOOTHING: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                  DTYPE: gl.constexpr, ACC: gl.constexpr):
        """A tile's partials from its fp32 accumulator: per row, max and sum of exp over the tile's vocabulary
        entries (and their sum), and the target logit where the target is one of them."""
        ROWS: gl.constexpr = gl.SliceLayout(1, ACC)
        COLS: gl.constexpr = gl.SliceLayout(0, ACC)
        row = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=ROWS)
        local_col = gl.arange(0, BLOCK_N, layout=COLS)
        col_ok = pid_n * BLOCK_N + local_col < V
        z = acc
        if HAS_BIAS:
            b = gl.load(bias_ptr + pid_n * BLOCK_N + local_col, mask=col_ok, other=0.0)
            z = z + gl.expand_dims(b.to(gl.float32), 0)
        z = _round_to(z, DTYPE)  # the logit cuBLAS would have written
        if HAS_SOFTCAP:
            z = softcap * _tanh(z / softcap)
        z = gl.where(gl.expand_dims(col_ok, 0), z, float("-inf"))
        row_ok = row < rows
        target = gl.load(target_ptr + row, mask=row_ok, other=-1).to(gl.int64)
        local_target = target - pid_n * BLOCK_N
        in_tile = row_ok & (local_target >= 0) & (local_target < BLOCK_N) & (target < V)
        hit = gl.expand_dims(local_col, 0) == gl.expand_dims(gl.where(in_tile, local_target, -1).to(gl.int32), 1)
        z_target = gl.sum(gl.where(hit, z, 0.0), axis=1)
        gl.store(target_z_ptr + row, z_target, mask=in_tile)
        if HAS_SMOOTHING:
            z_sum = gl.sum(gl.where(gl.expand_dims(col_ok, 0), z, 0.0), axis=1)
            gl.store(partials_ptr + 2 * vector_stride + pid_n * tile_stride + row, z_sum, mask=row_ok)
        z_max = gl.max(z, axis=1)
        sum_exp = gl.sum(gl.exp2(z * 1.4426950408889634 - gl.expand_dims(z_max * 1.4426950408889634, 1)), axis=1)
        gl.store(partials_ptr + pid_n * tile_stride + row, z_max, mask=row_ok)
        gl.store(partials_ptr + vector_stride + pid_n * tile_stride + row, sum_exp, mask=row_ok)

    @gluon.jit
    def linear_lse_partials_kernel(
        x_desc, w_desc, bias_ptr, target_ptr, partials_ptr, target_z_ptr, rows, V, vector_stride, tile_stride,
        softcap, HAS_BIAS: gl.constexpr, HAS_SOFTCAP: gl.constexpr, HAS_SMOOTHING: gl.constexpr,
        STAGES: gl.constexpr, GROUP_N: gl.constexpr, num_warps: gl.constexpr,
    ):
        """Persistent: program p takes tiles p, p + programs, ...; its (tile, k-step) items stream through the
        ring STAGES - 1 ahead of the wgmma, across tile boundaries. Each step waits for its slot's loads, issues its
        wgmma, waits for the previous step's (which frees that step's slot) and refills that slot."""
        BLOCK_M: gl.constexpr = x_desc.block_type.shape[0]
        BLOCK_N: gl.constexpr = w_desc.block_type.shape[0]
        BLOCK_K: gl.constexpr = x_desc.block_type.shape[1]
        DTYPE: gl.constexpr = x_desc.dtype
        ACC: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                      instr_shape=[16, BLOCK_N, 16])
        x_ring = gl.allocate_shared_memory(DTYPE, [STAGES, BLOCK_M, BLOCK_K], x_desc.layout)
        w_ring = gl.allocate_shared_memory(DTYPE, [STAGES, BLOCK_N, BLOCK_K], w_desc.layout)
        ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        for s in gl.static_range(STAGES):
            mbarrier.init(ready.index(s), count=1)

        program = gl.program_id(0)
        programs = gl.num_programs(0)
        K = x_desc.shape[1]
        n_k = gl.cdiv(K, BLOCK_K)
        n_m = gl.cdiv(rows, BLOCK_M)
        n_n = gl.cdiv(V, BLOCK_N)
        my_tiles = gl.cdiv(n_m * n_n - program, programs)
        total = my_tiles * n_k
        for i in gl.static_range(STAGES - 1):
            _issue(i, x_desc, w_desc, ready, x_ring, w_ring, program, programs, n_k, n_m, n_n, i < total,
                   STAGES, GROUP_N)
        acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, ACC)
        item = 0
        for local in range(my_tiles):
            # the k loop carries the accumulator alone: merged through a branch, ptxas would wait for every wgmma
            # at the loop's back edge (its C7517 "warpgroup.wait is injected")
            for k in range(n_k):
                slot = item % STAGES
                mbarrier.wait(ready.index(slot), (item // STAGES) & 1)
                acc = warpgroup_mma(x_ring.index(slot), w_ring.index(slot).permute((1, 0)), acc, use_acc=k > 0,
                                    is_async=True)
                # the previous step's wgmma is done: its slot, (item + STAGES - 1) % STAGES, takes that item
                acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc, ))
                _issue(item + STAGES - 1, x_desc, w_desc, ready, x_ring, w_ring, program, programs, n_k, n_m, n_n,
                       item + STAGES - 1 < total, STAGES, GROUP_N)
                item += 1
            acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc, ))
            pid_m, pid_n = _tile_of(program + local * programs, n_m, n_n, GROUP_N)
            _epilogue(acc, pid_m, pid_n, bias_ptr, target_ptr, partials_ptr, target_z_ptr, rows, V, vector_stride,
                      tile_stride, softcap, HAS_BIAS, HAS_SOFTCAP, HAS_SMOOTHING, BLOCK_M, BLOCK_N, DTYPE, ACC)
            # a fresh accumulator: the finished one dies in the epilogue, whose values reuse its registers
            acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, ACC)
        for s in gl.static_range(STAGES):
            mbarrier.invalidate(ready.index(s))
