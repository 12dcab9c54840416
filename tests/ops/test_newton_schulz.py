"""newton_schulz against the fp64 reference: shapes, batches, coefficient sets, steps, singular values, bad input.

On the CPU the Triton interpreter multiplies bf16 wrongly, so these tests pass compute_dtype=torch.float32 (the
kernels then take fp32 operands, fp32 products) and, once, torch.float16; the bf16 default runs under -m gpu.
"""
import pytest
import torch

from greyhound.ops import newton_schulz as ops
from greyhound.ops.newton_schulz import (
    MUON_COEFFICIENTS, POLAR_EXPRESS_COEFFICIENTS, newton_schulz, newton_schulz_reference,
)

FP32 = dict(compute_dtype=torch.float32)
# fp32 products vs fp64, either iteration: measured 4e-7 .. 3e-6 at these sizes. (The Gram iteration measured 1e-5 ..
# 1.2e-4 while diagonal tiles of its products were not exactly symmetric: it reads them through their transposes.)
FP32_TOLERANCE = 2e-5
# Output singular values after 5 steps, for matrices with aspect ratio >= 2 (square ones keep a tail near 0): fp64
# reference over 300 Gaussian draws: Muon [0.682, 1.134], Polar Express [0.870, 1.124].
SV_RANGE = {"muon": (0.65, 1.15), "polar_express": (0.85, 1.13)}
SMALL_TILES = ((16, 16, 4, 3), (16, 16, 16, 2, 4, 3))  # symmetric and apply configs: several tiles at these sizes


def rel_err(out, ref):
    out, ref = out.detach().double(), ref.detach().double()
    return ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def singular_range(x):
    s = torch.linalg.svdvals(x.double().cpu())
    return s.min().item(), s.max().item()


def distance_from_orthogonal(x):
    """max |σ - 1| over the singular values: the spectral-norm distance to the polar factor U Vᵀ."""
    return (torch.linalg.svdvals(x.double().cpu()) - 1).abs().max().item()


@pytest.fixture
def small_tiles(monkeypatch):
    symmetric, apply = SMALL_TILES
    monkeypatch.setattr(ops, "_symmetric_config", lambda size, depth, dtype: symmetric)
    monkeypatch.setattr(ops, "_apply_config", lambda rows, cols, dtype: apply)


@pytest.mark.parametrize("method", ["auto", "standard", "gram"])
@pytest.mark.parametrize("coefficients", ["muon", "polar_express"])
@pytest.mark.parametrize("shape", [(37, 53), (53, 37), (3, 2, 24, 40), (64, 64), (1, 96), (96, 1)])
def test_matches_fp64_reference(device, shape, coefficients, method):
    G = torch.randn(*shape, device=device)
    out = newton_schulz(G, coefficients=coefficients, method=method, **FP32)
    assert out.shape == G.shape and out.dtype == G.dtype
    err = rel_err(out, newton_schulz_reference(G.double(), coefficients=coefficients))
    # Gram forced on a square Gaussian (singular values near 0, squared by R = X Xᵀ): Polar Express measured up to
    # 2.8e-5 over 15 draws at 64²; "auto" never takes it there.
    assert err < (1e-4 if method == "gram" and shape[-1] == shape[-2] else FP32_TOLERANCE)


@pytest.mark.parametrize("method", ["standard", "gram"])
@pytest.mark.parametrize("shape", [(53, 80), (2, 80, 37)])
def test_many_tiles_and_the_triangle_walk(device, shape, small_tiles, method):
    """16-wide tiles: 4-5 tile rows, so the upper-triangle walk, the mirrored stores and the edge masks all run."""
    G = torch.randn(*shape, device=device)
    out = newton_schulz(G, method=method, **FP32)
    assert rel_err(out, newton_schulz_reference(G.double())) < FP32_TOLERANCE


def test_auto_takes_the_gram_iteration_for_non_square_matrices(device):
    """auto == gram for a wide or tall G, == standard for a square one; the two differ only by rounding."""
    wide, square = torch.randn(24, 56, device=device), torch.randn(2, 32, 32, device=device)
    assert torch.equal(newton_schulz(wide, **FP32), newton_schulz(wide, method="gram", **FP32))
    assert torch.equal(newton_schulz(wide.mT, **FP32), newton_schulz(wide.mT, method="gram", **FP32))
    assert torch.equal(newton_schulz(square, **FP32), newton_schulz(square, method="standard", **FP32))
    gram, standard = newton_schulz(wide, method="gram", **FP32), newton_schulz(wide, method="standard", **FP32)
    assert not torch.equal(gram, standard) and rel_err(gram, standard) < FP32_TOLERANCE


def test_gram_product_kernel_with_two_operands_and_identity(device, small_tiles):
    """P = c·R R + b·R + a·I and Q P for commuting symmetric Q, P: both triangles, the identity on the diagonal only."""
    x = torch.randn(2, 53, 70, device=device)
    R = x.double() @ x.double().mT / 70
    poly = ops._launch_gram_product(R.float(), torch.full((2, 53, 53), float("nan"), device=device),
                                    alpha=2.0, beta=-3.0, addend=R.float(), gamma=1.5)
    expected = 2.0 * R @ R - 3.0 * R + 1.5 * torch.eye(53, dtype=torch.float64, device=device)
    assert rel_err(poly, expected) < 1e-6
    product = ops._launch_gram_product(R.float(), torch.full_like(poly, float("nan")), y=poly)
    assert rel_err(product, R @ expected) < 1e-6
    # exactly symmetric, diagonal tiles included (R P computed in fp32 is not: the Gram iteration relies on it)
    assert torch.equal(poly, poly.mT) and torch.equal(product, product.mT)
    assert not torch.equal(R.float() @ poly, (R.float() @ poly).mT)


def test_tuning_override_forces_the_method_and_tiles(device):
    from greyhound import _tuning
    G = torch.randn(40, 72, device=device)
    tiles = dict(sym_block=16, apply_block_m=16, apply_block_n=16)
    with _tuning.override("newton_schulz", **tiles):
        standard, gram = (newton_schulz(G, method=method, **FP32) for method in ("standard", "gram"))
    with _tuning.override("newton_schulz", gram="false", **tiles):
        forced = newton_schulz(G, **FP32)  # auto would take the Gram iteration
    assert torch.equal(forced, standard) and not torch.equal(forced, gram)
    assert rel_err(forced, newton_schulz_reference(G.double())) < FP32_TOLERANCE
    with pytest.raises(ValueError, match="no tunable 'tile'.*sym_block"):
        with _tuning.override("newton_schulz", tile=16):
            pass


def test_each_kernel_writes_its_whole_product(device, small_tiles):
    x = torch.randn(2, 53, 70, device=device)
    gram = ops._launch_symmetric_product(x, torch.full((2, 53, 53), float("nan"), device=device))
    expected_gram = x.double() @ x.double().mT
    assert rel_err(gram, expected_gram) < 1e-6  # both triangles: a tile never written would be nan
    poly = ops._launch_symmetric_product(gram, torch.empty_like(gram), alpha=-0.5, beta=2.0, addend=gram)
    assert rel_err(poly, -0.5 * expected_gram @ expected_gram + 2.0 * expected_gram) < 1e-6
    out = torch.empty(2, 70, 53, device=device).mT  # the last step writes a transposed view directly
    ops._launch_apply(poly, x, out, alpha=3.0)
    assert rel_err(out, poly.double() @ x.double() + 3.0 * x.double()) < 1e-6


@pytest.mark.parametrize("coefficients", ["muon", "polar_express"])
@pytest.mark.parametrize("steps", [1, 2, 3, 4, 5])
def test_every_step_count(device, steps, coefficients):
    G = torch.randn(2, 30, 45, device=device)
    out = newton_schulz(G, steps=steps, coefficients=coefficients, **FP32)  # Gram: restart at step 2 from 3 steps
    ref = newton_schulz_reference(G.double(), steps=steps, coefficients=coefficients)
    assert rel_err(out, ref) < FP32_TOLERANCE


def test_coefficient_sets_are_the_published_ones():
    assert ops._coefficient_schedule("muon", None) == ([(3.4445, -4.7750, 2.0315)] * 5, 1.0)
    schedule, norm_scale = ops._coefficient_schedule("polar_express", 10)
    assert norm_scale == 1.01 and schedule[:8] == list(POLAR_EXPRESS_COEFFICIENTS)
    assert schedule[0] == pytest.approx((8.28721201814563 / 1.01, -23.595886519098837 / 1.01**3,
                                         17.300387312530933 / 1.01**5), rel=1e-15)
    assert schedule[7:] == [(1.875, -1.25, 0.375)] * 3  # the last polynomial is unscaled and repeats


def test_custom_coefficient_list(device):
    G = torch.randn(33, 48, device=device)
    custom = [(3.0, -3.2, 1.2), [2.0, -1.5, 0.5], (1.875, -1.25, 0.375)]
    out = newton_schulz(G, coefficients=custom, **FP32)  # three steps: the list's length
    assert torch.equal(out, newton_schulz(G, coefficients=tuple(custom), steps=3, **FP32))
    assert rel_err(out, newton_schulz_reference(G.double(), coefficients=custom)) < FP32_TOLERANCE
    # Muon's coefficients as a list are Muon: the same launches, bit for bit.
    assert torch.equal(newton_schulz(G, coefficients=list(MUON_COEFFICIENTS) * 5, **FP32), newton_schulz(G, **FP32))


@pytest.mark.parametrize("coefficients", ["muon", "polar_express"])
@pytest.mark.parametrize("shape", [(40, 96), (96, 40), (4, 32, 64), (64, 64)])
def test_singular_values_land_near_one(device, shape, coefficients):
    G = torch.randn(*shape, device=device)
    low, high = singular_range(newton_schulz(G, coefficients=coefficients, **FP32))
    ref_low, ref_high = singular_range(newton_schulz_reference(G.double(), coefficients=coefficients))
    print(f"{coefficients} {shape}: singular values [{low:.4f}, {high:.4f}] (fp64 [{ref_low:.4f}, {ref_high:.4f}])")
    assert abs(low - ref_low) < 1e-4 and abs(high - ref_high) < 1e-4
    if shape[-1] == shape[-2]:  # a square Gaussian has singular values near 0 that 5 steps do not lift
        assert high <= SV_RANGE[coefficients][1] + 0.06  # Muon's polynomial peaks at 1.2
    else:
        assert SV_RANGE[coefficients][0] <= low and high <= SV_RANGE[coefficients][1]


def test_orthogonality_improves_with_steps(device):
    G = torch.randn(40, 72, device=device)
    muon = [distance_from_orthogonal(newton_schulz(G, steps=s, **FP32)) for s in (1, 3, 5)]
    polar = [distance_from_orthogonal(newton_schulz(G, steps=s, coefficients="polar_express", **FP32))
             for s in (3, 4, 5, 6, 8)]
    print(f"max |σ-1|: muon steps 1/3/5 {muon}, polar express steps 3/4/5/6/8 {polar}")
    # Muon's polynomial stops at a plateau (σ in [0.68, 1.2]); Polar Express converges.
    assert muon[2] < muon[0] and max(muon[1:]) < 0.33
    assert all(later < earlier for earlier, later in zip(polar, polar[1:])) and polar[-1] < 1e-3


def test_fp16_compute_and_fp16_input(device):
    G = torch.randn(2, 40, 56, device=device)
    ref = newton_schulz_reference(G.double())
    assert rel_err(newton_schulz(G, compute_dtype=torch.float16), ref) < 1e-2  # measured 1.7e-3
    G16 = G.half()
    out = newton_schulz(G16)  # fp16 G computes in fp16 by default
    assert out.dtype == torch.float16 and rel_err(out, newton_schulz_reference(G16.double())) < 1e-2


def test_layouts_empty_batch_and_zero_matrix(device, monkeypatch):
    base = torch.randn(3, 50, 44, device=device)
    for G in (base[:, ::2, :], base.mT, base[1]):  # strided rows, a transposed view (m > n flips), one matrix
        assert rel_err(newton_schulz(G, **FP32), newton_schulz_reference(G.double())) < FP32_TOLERANCE
    # views whose (batch, m * n) reshape is itself a strided view: every other matrix, every third column, an expanded
    # batch, and one matrix 1e6 times smaller than the rest (each matrix's own norm)
    scaled = base.clone()
    scaled[2] *= 1e-6
    for G in (base[::2], torch.randn(30, 120, device=device)[:, ::3], base[:1].expand(3, 50, 44), scaled[::2]):
        assert rel_err(newton_schulz(G, **FP32), newton_schulz_reference(G.double())) < FP32_TOLERANCE
    unsliced = newton_schulz(base, method="gram", steps=8, **FP32)
    monkeypatch.setattr(ops, "MAX_GRID_BATCH", 2)  # batches beyond the grid's third axis go in slices
    assert rel_err(newton_schulz(base, **FP32), newton_schulz_reference(base.double())) < FP32_TOLERANCE
    # the Gram iteration's products (two operands, an addend) and restarts, sliced the same way: the same bits
    assert torch.equal(newton_schulz(base, method="gram", steps=8, **FP32), unsliced)
    leaf = base[0].clone().requires_grad_()  # forward only: read, not differentiated
    assert not newton_schulz(leaf, **FP32).requires_grad
    empty = newton_schulz(torch.randn(0, 4, 6, device=device), **FP32)
    assert empty.shape == (0, 4, 6)
    assert torch.equal(newton_schulz(torch.zeros(5, 7, device=device), **FP32), torch.zeros(5, 7, device=device))


@pytest.mark.parametrize("chunk", [65536, 2])
@pytest.mark.parametrize("method", ["standard", "gram"])
@pytest.mark.parametrize("scale_exponent", [70, 125, -70])
def test_normalisation_holds_any_finite_scale(device, monkeypatch, method, scale_exponent, chunk):
    """G · 2^k normalises to G's X (a power of two is exact in fp32): past ‖G‖_F ~1.8e19 an fp32 sum of squares
    overflowed, the norm read inf and the result was all zeros. 2^125 puts the norm itself past fp32's range. With
    chunks of 2 elements the fp64 sum of squares runs 480 programs a matrix, and the divisor kernel sums their partials
    over two of its 256-wide steps."""
    monkeypatch.setattr(ops, "NORM_CHUNK", chunk)
    G = torch.randn(24, 40, device=device)
    scaled = G * 2.0**scale_exponent
    assert torch.isfinite(scaled).all()
    expect = newton_schulz(G, method=method, eps=0.0, **FP32)
    out = newton_schulz(scaled, method=method, eps=0.0, **FP32)
    assert out.abs().max() > 0.1 and rel_err(out, expect) < 1e-6
    ref = newton_schulz_reference(scaled, eps=0.0, compute_dtype=torch.float32)
    assert rel_err(ref, newton_schulz_reference(G, eps=0.0, compute_dtype=torch.float32)) < 1e-6


@pytest.mark.parametrize("eps", [1e-50, 1e-40, 1e-7, 1e300])
def test_any_finite_eps(device, eps):
    """eps goes to the divisor kernel as two fp32 halves where fp32 holds it as a normal number, else it is added in
    fp64 after the kernel: a zero matrix stays zero for any eps > 0, and a huge eps only shrinks X."""
    zero = torch.zeros(6, 9, device=device)
    assert torch.equal(newton_schulz(zero, eps=eps, **FP32), zero)
    G = torch.randn(6, 9, device=device)
    out = newton_schulz(G, eps=eps, **FP32)
    assert torch.isfinite(out).all()
    assert rel_err(out, newton_schulz_reference(G.double(), eps=eps)) < FP32_TOLERANCE


@pytest.mark.parametrize("bad, error, words", [
    (dict(G=torch.randn(5)), ValueError, "G must be a matrix"),
    (dict(G=torch.tensor(1.0)), ValueError, "G must be a matrix"),
    (dict(G=torch.ones(4, 4, dtype=torch.int64)), TypeError, "G must have dtype"),
    (dict(G=torch.randn(4, 4, dtype=torch.float64)), TypeError, "G must have dtype"),
    (dict(G=[[1.0, 2.0]]), TypeError, "G must be a torch.Tensor"),
    (dict(G=torch.randn(0, 4)), ValueError, "G must hold non-empty matrices"),
    (dict(G=torch.randn(3, 4, 0)), ValueError, "G must hold non-empty matrices"),
    (dict(coefficients="jordan"), ValueError, "coefficients must be one of 'muon', 'polar_express', got 'jordan'"),
    (dict(coefficients=3), TypeError, "coefficients must be one of"),
    (dict(coefficients=[]), ValueError, "coefficients must be .* got an empty list"),
    (dict(coefficients=[(1.0, 2.0)]), ValueError, r"coefficients\[0\] must be an \(a, b, c\) tuple"),
    (dict(coefficients=[(1, 2, 3), (1, 2, 3, 4)]), ValueError, r"coefficients\[1\] must be"),
    (dict(coefficients=[(1.0, 2.0, float("nan"))]), ValueError, r"coefficients\[0\] must be .* finite"),
    (dict(coefficients=(3.4445, -4.7750, 2.0315)), ValueError, r"coefficients\[0\] must be an \(a, b, c\)"),
    (dict(steps=0), ValueError, "steps must be a positive int"),
    (dict(steps=2.5), TypeError, "steps must be a positive int"),
    (dict(steps=True), TypeError, "steps must be a positive int"),
    (dict(coefficients=[(3.0, -3.0, 1.0)] * 3, steps=5), ValueError, r"steps must be None or len\(coefficients\) = 3"),
    (dict(eps=-1e-7), ValueError, "eps must be a finite float >= 0"),
    (dict(eps="1e-7"), TypeError, "eps must be"),
    # session 57's fuzzing: 10**7 steps built a schedule for seconds, 10**400 never returned; ints past a float's
    # range raised a bare OverflowError naming no argument
    (dict(steps=10**7), ValueError, "steps must be a positive int of at most 1000"),
    (dict(steps=10**400), ValueError, "steps must be a positive int of at most 1000"),
    (dict(eps=10**400), ValueError, "eps must be a finite float >= 0"),
    (dict(coefficients=[(10**400, 0, 0)]), ValueError, r"coefficients\[0\] must be .* finite"),
    (dict(compute_dtype=torch.float64), TypeError, "compute_dtype must be None or one of"),
    (dict(compute_dtype="bfloat16"), TypeError, "compute_dtype must be None or one of"),
    (dict(method="polar"), ValueError, "method must be one of .*'gram'.* got 'polar'"),
])
def test_bad_input(device, bad, error, words):
    args = dict(G=torch.randn(6, 9), compute_dtype=torch.float32)
    args.update(bad)
    if isinstance(args["G"], torch.Tensor):
        args["G"] = args["G"].to(device)
    with pytest.raises(error, match=words):
        newton_schulz(args.pop("G"), **args)


def test_bf16_compute_is_refused_by_the_cpu_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # a CPU tensor reaches the dtype check on a GPU machine too
    with pytest.raises(ValueError, match="compute_dtype bfloat16 .* needs a CUDA tensor"):
        newton_schulz(torch.randn(6, 6))  # square fp32 G: the standard iteration, bf16 compute by default
    with pytest.raises(ValueError, match="compute_dtype bfloat16 .* needs a CUDA tensor"):
        newton_schulz(torch.randn(6, 9), compute_dtype=torch.bfloat16)


def test_gram_iteration_computes_in_fp16_by_default(device):
    """Non-square G takes the Gram iteration in fp16 (bf16 rounding hurts its recurrence): the same result as an
    explicit fp16 Gram call, within fp16's error of the fp64 reference."""
    G = torch.randn(2, 24, 72, device=device)
    out = newton_schulz(G)
    assert out.dtype == torch.float32
    assert torch.equal(out, newton_schulz(G, method="gram", compute_dtype=torch.float16))
    assert rel_err(out, newton_schulz_reference(G.double())) < 1e-2


def test_cpu_tensor_without_interpreter_is_refused(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(ValueError, match="G must be a CUDA tensor"):
        newton_schulz(torch.randn(6, 9), **FP32)


@pytest.mark.gpu
def test_bf16_4096_square_against_fp64():
    """The default bf16 iteration (errors compound over 5 steps: torch's bf16 Muon measures 0.019-0.030 relative
    to fp64 at 256² .. 1792×512; one step too few or many 0.28-0.37)."""
    G = torch.randn(4096, 4096, device="cuda")
    out = newton_schulz(G.bfloat16())
    ref = newton_schulz_reference(G.bfloat16().double())
    low, high = singular_range(out)
    ref_low, ref_high = singular_range(ref)
    err = rel_err(out, ref)
    print(f"bf16 4096²: relative error {err:.4f}, singular values [{low:.4f}, {high:.4f}] "
          f"(fp64 [{ref_low:.4f}, {ref_high:.4f}])")
    assert out.dtype == torch.bfloat16 and err < 0.08
    assert high <= 1.25 and abs(high - ref_high) < 0.05


@pytest.mark.gpu
@pytest.mark.parametrize("coefficients", ["muon", "polar_express"])
@pytest.mark.parametrize("shape", [(1024, 3584), (3584, 1024), (8, 256, 640)])
def test_bf16_gram_iteration_against_fp64(shape, coefficients):
    """The default path for non-square G (the Gram iteration, bf16): error and singular values beside the standard
    bf16 iteration's (both printed for the kernel page)."""
    G = torch.randn(*shape, device="cuda").bfloat16()
    ref = newton_schulz_reference(G.double(), coefficients=coefficients)
    gram = newton_schulz(G, coefficients=coefficients)
    standard = newton_schulz(G, coefficients=coefficients, method="standard")
    (low, high), (s_low, s_high) = singular_range(gram), singular_range(standard)
    ref_low, ref_high = singular_range(ref)
    err, s_err = rel_err(gram, ref), rel_err(standard, ref)
    print(f"bf16 {shape} {coefficients}: Gram error {err:.4f} σ [{low:.4f}, {high:.4f}]; standard error {s_err:.4f} "
          f"σ [{s_low:.4f}, {s_high:.4f}]; fp64 σ [{ref_low:.4f}, {ref_high:.4f}]")
    assert gram.dtype == torch.bfloat16 and err < 0.08 and err < s_err  # fp16 Gram vs bf16 standard
    assert abs(low - ref_low) < 0.05 and abs(high - ref_high) < 0.05
