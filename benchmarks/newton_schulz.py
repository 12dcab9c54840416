"""newton_schulz (Muon's orthogonalisation, forward only): greyhound vs torch eager/compile (Muon's reference
code), dion's Triton kernels and gram-newton-schulz (its CuTe and its PyTorch backend).

Tracked (every commit): 4096², 16 × 1024², 4096 × 14336 and its transpose, Muon coefficients, bf16: greyhound,
torch.compile and gram-newton-schulz's PyTorch backend (the fastest peer at 16 × 1024² and the rectangular shapes on
the H200). Sweeps (nightly): square sizes 1024-8192, and the batch at 1024², every provider.
"""
import torch

from . import harness
from .harness import grid

PROVIDERS = ["greyhound", "torch-eager", "torch-compile", "dion", "gram-newton-schulz", "gram-newton-schulz-torch"]
# Kept here rather than imported from greyhound: a history run over commits before greyhound.newton_schulz still
# needs the reference and the torch providers.
COEFFICIENTS = {"muon": [(3.4445, -4.7750, 2.0315)] * 5}
# Relative Frobenius error against the fp64 iteration, whatever G's dtype: every peer iterates in 16-bit and the
# error compounds over 5 steps (torch's bf16 Muon: 0.019-0.036 at 32² .. 1792×512; gram-newton-schulz in fp16:
# 0.003-0.004), while one step too few or too many is 0.28-0.37 off and a transposed square result 1.41.
GATE_TOLERANCE = 0.08
# Peers whose kernels are bf16/fp16 CUDA code (the Triton interpreter's bf16 dot is wrong) or CUDA-graph compiled.
GPU_ONLY = ("dion", "gram-newton-schulz", "gram-newton-schulz-torch")


def _muon_iteration(G, coefficients, compute_dtype=torch.bfloat16):
    """Muon's zeropower_via_newtonschulz5 (github.com/KellerJordan/Muon) with a list of (a, b, c): cast, transpose
    a tall G, divide by ‖X‖_F + 1e-7, then X ← a·X + (b·A + c·A²)·X with A = X Xᵀ. Returns compute_dtype."""
    X = G.to(compute_dtype)
    tall = G.size(-2) > G.size(-1)
    if tall:
        X = X.mT
    X = X / (X.norm(dim=(-2, -1), keepdim=True) + 1e-7)
    for a, b, c in coefficients:
        A = X @ X.mT
        B = b * A + c * (A @ A)
        X = a * X + B @ X
    return X.mT if tall else X


def _dion_iteration(coefficients):
    """dion's Triton kernels (ns_line_1: X Xᵀ, ns_line_2: c·A Aᵀ + b·A, upper tiles mirrored) driven as its own
    newton_schulz_triton drives them (bf16, then B X + a·X by baddbmm), with these coefficients for its fixed ones."""
    try:
        from dion.newton_schulz_triton import ns_line_1, ns_line_2
    except ImportError as err:
        raise NotImplementedError(f"dion: no Triton Newton-Schulz kernels in this version ({err})") from None

    def run(G):
        X = G.to(torch.bfloat16)
        tall = G.size(-2) > G.size(-1)
        if tall:
            X = X.mT
        X = (X / (X.norm(dim=(-2, -1), keepdim=True) + 1e-7)).contiguous()
        A = torch.empty((*X.shape[:-1], X.size(-2)), device=X.device, dtype=X.dtype)
        B, C = torch.empty_like(A), torch.empty_like(X)
        add_product = torch.baddbmm if X.ndim > 2 else torch.addmm
        for a, b, c in coefficients:
            ns_line_1(X, out=A)
            ns_line_2(A, alpha=c, beta=b, out=B)
            add_product(X, B, X, beta=a, out=C)
            X, C = C, X
        return X.mT if tall else X
    return run


def _gram_newton_schulz(coefficients, use_kernels):
    """Dao-AILab's GramNewtonSchulz: fp16, the Gram iteration with a restart after step 2 for rectangular G (standard
    Newton-Schulz for square), compiled by itself with CUDA graphs (torch.compile mode="reduce-overhead")."""
    from gram_newton_schulz import GramNewtonSchulz
    try:
        return GramNewtonSchulz(ns_use_kernels=use_kernels, ns_coefficients=coefficients)
    except ImportError as err:  # the CuTe backend imports quack (nvidia-cutlass-dsl) here
        raise NotImplementedError(f"gram-newton-schulz: its CuTe backend needs quack ({err})") from None


class NewtonSchulzTracked(harness.KernelSuite):
    kernel_name = "newton_schulz"
    x_name = "rows"
    providers = ["greyhound", "torch-compile", "gram-newton-schulz-torch"]
    modes = ["forward"]
    tuning_module = "greyhound.ops.newton_schulz"  # greyhound[gram=0,sym_block=...] variants (sweep CLI)
    gpu_shapes = [
        dict(batch=1, rows=4096, cols=4096, coefficients="muon", dtype="bfloat16"),
        dict(batch=16, rows=1024, cols=1024, coefficients="muon", dtype="bfloat16"),
        dict(batch=1, rows=4096, cols=14336, coefficients="muon", dtype="bfloat16"),
        dict(batch=1, rows=14336, cols=4096, coefficients="muon", dtype="bfloat16"),
    ]
    cpu_shapes = [dict(batch=2, rows=48, cols=80, coefficients="muon", dtype="float32")]

    @classmethod
    def serves(cls, provider, mode, shape):
        return harness.ON_GPU or provider not in GPU_ONLY

    def make_inputs(self, batch, rows, cols, coefficients, dtype):
        if coefficients not in COEFFICIENTS:
            raise ValueError(f"coefficients must be one of {list(COEFFICIENTS)}, got {coefficients!r}")
        self.coefficients = COEFFICIENTS[coefficients]  # reference() receives G only
        shape = (rows, cols) if batch == 1 else (batch, rows, cols)
        return {"G": torch.randn(*shape, device=harness.DEVICE, dtype=harness.DTYPES[dtype])}, []

    def reference(self, G):
        return _muon_iteration(G, self.coefficients, compute_dtype=torch.float64)

    @classmethod
    def work(cls, mode, shape):
        """FLOPs of the cheaper of two formulations, a symmetric product (one triangle) counted at half a GEMM's, on
        the short side s and long side l: the standard iteration, per step A = X Xᵀ (s²·l), B = c·A² + b·A (s³) and
        B X (2·s²·l); the Gram iteration (5 steps, one restart: 6·s²·l + 14·s³ in all). G read and the result
        written once."""
        short, long_ = sorted((shape["rows"], shape["cols"]))
        steps = len(COEFFICIENTS[shape["coefficients"]])
        standard = steps * (3 * short * short * long_ + short**3)
        gram = 6 * short * short * long_ + 14 * short**3 if steps == 5 else standard
        flops = shape["batch"] * min(standard, gram)
        return 2 * shape["batch"] * short * long_ * harness.dtype_bytes(shape["dtype"]), flops

    def check_output(self, provider, out, ref, dtype):
        """Same shape, relative Frobenius error within GATE_TOLERANCE of the fp64 iteration (see its comment)."""
        (out,), (ref,) = out, ref  # the gate hands every suite its outputs as tuples
        if out.shape != ref.shape:
            raise AssertionError(f"newton_schulz/{provider}: output shape {tuple(out.shape)}, expected "
                                 f"{tuple(ref.shape)}")
        err = harness.relative_error(out, ref)
        if not err <= GATE_TOLERANCE:
            raise AssertionError(f"newton_schulz/{provider}: relative error {err:.3g} > {GATE_TOLERANCE:g}")

    def provider_fn(self, provider, coefficients, **shape):
        schedule = COEFFICIENTS[coefficients]
        if provider == "greyhound":
            newton_schulz = harness.greyhound_op("newton_schulz")
            # The CPU interpreter's bf16 dot is wrong: CPU smoke figures iterate in fp32, the GPU in bf16 (default).
            compute_dtype = None if harness.ON_GPU else torch.float32
            return lambda G: newton_schulz(G, coefficients=coefficients, compute_dtype=compute_dtype)
        if provider in ("torch-eager", "torch-compile"):
            def muon(G):
                return _muon_iteration(G, schedule)
            return muon if provider == "torch-eager" else self.compile(muon)
        if provider == "dion":
            return _dion_iteration(schedule)
        if provider in ("gram-newton-schulz", "gram-newton-schulz-torch"):
            self._compiled = True  # it compiles itself: reset dynamo after the combination like torch-compile
            return _gram_newton_schulz(schedule, use_kernels=provider == "gram-newton-schulz")
        raise ValueError(f"provider {provider!r} is not one of {PROVIDERS}")


class NewtonSchulzSquareSweep(NewtonSchulzTracked):
    tier = "sweep"
    providers = PROVIDERS
    gpu_shapes = [dict(batch=1, rows=size, cols=size, coefficients="muon", dtype="bfloat16")
                  for size in (1024, 2048, 4096, 8192)]
    cpu_shapes = [dict(batch=1, rows=size, cols=size, coefficients="muon", dtype="float32") for size in (32, 64)]

    def setup_cache(self):
        return self.measure_suite()


class NewtonSchulzBatchSweep(NewtonSchulzTracked):
    tier = "sweep"
    x_name = "batch"
    providers = PROVIDERS
    gpu_shapes = grid(batch=[1, 8, 32], rows=[1024], cols=[1024], coefficients=["muon"], dtype=["bfloat16"])
    cpu_shapes = grid(batch=[1, 4], rows=[32], cols=[32], coefficients=["muon"], dtype=["float32"])

    def setup_cache(self):
        return self.measure_suite()
