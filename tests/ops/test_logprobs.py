"""logprobs / linear_logprobs against the fp64 reference: values, entropy, gradients, layouts, bad input."""
import math
import re

import pytest
import torch

from greyhound.ops import _fp32_gemm

import greyhound
from greyhound.ops import logprobs as ops
from greyhound.ops.logprobs import linear_logprobs, linear_logprobs_reference, logprobs, logprobs_reference

GRAD_TOLERANCE = {torch.float32: 1e-5, torch.float16: 5e-3, torch.bfloat16: 2e-2}
# Small blocks make the kernel walk the vocabulary in many steps, so the online max/sum rescaling is exercised.
SMALL_BLOCKS = (128, 4, True)
SMALL_BLOCKS_NO_PREFETCH = (64, 2, False)


def rel_err(out, ref):
    out, ref = out.detach().double(), ref.detach().double()
    return ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()


@pytest.fixture
def forward_blocks(request, monkeypatch):
    """Parametrised with a (BLOCK_V, num_warps, PREFETCH) or None for the library's own choice."""
    if request.param is not None:
        monkeypatch.setattr(ops, "_forward_config", lambda vocab_size: request.param)
    return request.param


def make_case(shape, vocab, dtype, device, scale=3.0):
    logits = (torch.randn(*shape, vocab, device=device) * scale).to(dtype)
    target = torch.randint(0, vocab, shape, device=device)
    return logits, target


def check_against_reference(logits, target, *, temperature, with_entropy, entropy_grad=True, logprob_grad=True):
    """Values and gradients of greyhound vs the fp64 reference on the very same (rounded) logits."""
    dtype = logits.dtype
    ours_in = logits.detach().clone().requires_grad_()
    ref_in = logits.detach().double().requires_grad_()
    ours = logprobs(ours_in, target, temperature=temperature, return_entropy=with_entropy)
    ref = logprobs_reference(ref_in, target, temperature=temperature, return_entropy=with_entropy)
    ours, ref = (ours, ref) if with_entropy else ((ours,), (ref,))
    for out, expected in zip(ours, ref):
        assert out.dtype == torch.float32 and out.shape == target.shape
        assert rel_err(out, expected) < 1e-5  # same inputs, fp32 math: only rounding differs
    weights = [torch.randn(target.shape, dtype=torch.float64, device=logits.device) for _ in ours]
    use = [logprob_grad, entropy_grad and with_entropy][: len(ours)]
    loss_ours = sum((o * w.float()).sum() for o, w, u in zip(ours, weights, use) if u)
    loss_ref = sum((r * w).sum() for r, w, u in zip(ref, weights, use) if u)
    loss_ours.backward()
    loss_ref.backward()
    assert ours_in.grad.dtype == dtype and ours_in.grad.shape == logits.shape
    assert rel_err(ours_in.grad, ref_in.grad) < GRAD_TOLERANCE[dtype]
    return ours_in.grad


@pytest.mark.parametrize("forward_blocks", [None, SMALL_BLOCKS, SMALL_BLOCKS_NO_PREFETCH], indirect=True)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_values_entropy_and_grads(device, dtype, forward_blocks):
    logits, target = make_case((3, 17), 1031, dtype, device)
    check_against_reference(logits, target, temperature=1.0, with_entropy=True)


@pytest.mark.parametrize("temperature", [0.6, 1.7, 3])
@pytest.mark.parametrize("with_entropy", [False, True])
def test_temperature(device, temperature, with_entropy):
    logits, target = make_case((2, 9), 777, torch.float32, device)
    check_against_reference(logits, target, temperature=temperature, with_entropy=with_entropy)


@pytest.mark.parametrize("which", ["logprob only", "entropy only"])
def test_grads_of_one_output(device, which):
    """The backward runs with one of the two upstream gradients absent (None), not a zero tensor."""
    logits, target = make_case((4, 5), 300, torch.float32, device)
    check_against_reference(logits, target, temperature=0.8, with_entropy=True,
                            logprob_grad=which == "logprob only", entropy_grad=which == "entropy only")


@pytest.mark.parametrize("shape, vocab", [((), 50), ((1,), 1), ((7,), 16), ((2, 1, 3, 4), 129), ((0, 5), 33)])
def test_leading_shapes(device, shape, vocab):
    logits, target = make_case(shape, vocab, torch.float32, device)
    if logits.numel() == 0:
        out, entropy = logprobs(logits, target, return_entropy=True)
        assert out.shape == entropy.shape == target.shape
        return
    check_against_reference(logits, target, temperature=1.0, with_entropy=True)


def test_large_vocab_many_blocks(device):
    """V > 262144, not a multiple of the block: the row is walked in 65 blocks of 4096."""
    vocab = 262144 + 77
    logits, target = make_case((2,), vocab, torch.bfloat16, device)
    target[0] = vocab - 1  # a token in the ragged last block
    check_against_reference(logits, target, temperature=1.0, with_entropy=True)


@pytest.mark.parametrize("forward_blocks", [SMALL_BLOCKS], indirect=True)
def test_running_max_rises_late_and_large_logits(device, forward_blocks):
    """Logits growing along V (each block raises the max) and of magnitude 1e4: no overflow, rescaling right."""
    vocab = 1000
    ramp = torch.linspace(-50.0, 50.0, vocab, device=device)
    logits = torch.stack([ramp, 1e4 + torch.randn(vocab, device=device) * 100, -ramp])
    target = torch.tensor([vocab - 1, 3, 0], device=device)
    check_against_reference(logits, target, temperature=1.0, with_entropy=True)


@pytest.mark.parametrize("forward_blocks", [None, SMALL_BLOCKS], indirect=True)
def test_masked_vocabulary_minus_inf(device, forward_blocks):
    """-inf logits (padding of the vocabulary, banned tokens), even filling whole first blocks, are probability 0."""
    logits, target = make_case((6,), 700, torch.float32, device)
    logits[:, :300] = float("-inf")
    logits[1, 450:] = float("-inf")
    target = torch.randint(300, 450, (6,), device=device)
    grad = check_against_reference(logits, target, temperature=0.9, with_entropy=True)
    assert torch.isfinite(grad).all() and (grad[:, :300] == 0).all()


def test_non_contiguous_logits_without_copy(device):
    """logits[:, :-1] (the usual shift for next-token log-probs) and transposed leading dims read in place."""
    full, _ = make_case((3, 12), 257, torch.float32, device)
    shifted = full[:, :-1]
    assert not shifted.is_contiguous() and ops._row_layout(shifted)[0].data_ptr() == full.data_ptr()
    target = torch.randint(0, 257, (3, 11), device=device)
    check_against_reference(shifted, target, temperature=1.0, with_entropy=True)
    transposed = full.transpose(0, 1)
    check_against_reference(transposed, target.new_zeros(12, 3).random_(0, 257), temperature=1.0, with_entropy=True)


def test_other_layouts(device):
    """A strided last dim and three non-mergeable leading dims fall back to a copy; a stride-0 expand reads in place."""
    base, _ = make_case((2, 3, 4), 130, torch.bfloat16, device)
    every_other = base[..., ::2]
    check_against_reference(every_other, torch.randint(0, 65, (2, 3, 4), device=device),
                            temperature=1.0, with_entropy=False)
    three_dims = base[:, :, :3]
    sliced_three = three_dims[:, 1:]
    check_against_reference(sliced_three, torch.randint(0, 130, (2, 2, 3), device=device),
                            temperature=1.0, with_entropy=True)
    row = torch.randn(1, 90, device=device)
    check_against_reference(row.expand(5, 90), torch.randint(0, 90, (5,), device=device),
                            temperature=1.0, with_entropy=True)


def test_int32_target_and_no_grad(device):
    logits, target = make_case((4, 3), 500, torch.float16, device)
    with torch.no_grad():
        out = logprobs(logits, target.int())
    assert not out.requires_grad
    assert rel_err(out, logprobs_reference(logits.double(), target)) < 1e-5


def test_inputs_untouched_and_grad_is_fresh(device):
    logits, target = make_case((5,), 300, torch.bfloat16, device)
    logits.requires_grad_()
    before = logits.detach().clone()
    out = logprobs(logits, target)
    (grad,) = torch.autograd.grad(out.sum(), logits)
    assert torch.equal(logits.detach(), before) and grad.data_ptr() != logits.data_ptr()


def test_public_namespace():
    assert greyhound.logprobs is logprobs and greyhound.linear_logprobs is linear_logprobs


@pytest.mark.parametrize("bad, error, words", [
    (dict(logits=torch.randint(0, 5, (2, 7))), TypeError, "logits"),
    (dict(logits=torch.randn(2, 7, dtype=torch.float64)), TypeError, "logits"),
    (dict(logits=torch.randn(2, 0)), ValueError, "logits"),
    (dict(target=torch.zeros(2, dtype=torch.float32)), TypeError, "target"),
    (dict(target=torch.zeros(3, dtype=torch.int64)), ValueError, "target"),
    (dict(target=torch.tensor([0, 7])), ValueError, "target"),
    (dict(target=torch.tensor([-1, 0])), ValueError, "target"),
    (dict(target=torch.zeros(2, dtype=torch.int64, device="meta")), ValueError, "target"),
    (dict(temperature=0.0), ValueError, "temperature"),
    (dict(temperature=-1.0), ValueError, "temperature"),
    (dict(temperature=math.nan), ValueError, "temperature"),
    (dict(temperature="1"), TypeError, "temperature"),
    (dict(temperature=True), TypeError, "temperature"),
])
def test_bad_input(device, bad, error, words):
    args = dict(logits=torch.randn(2, 7), target=torch.tensor([0, 6]), temperature=1.0)
    args.update(bad)
    for key in ("logits", "target"):
        if args[key].device.type != "meta":
            args[key] = args[key].to(device)
    with pytest.raises(error, match=words):
        logprobs(args["logits"], args["target"], temperature=args["temperature"])


def test_cpu_tensor_without_interpreter_is_refused(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(ValueError, match="logits must be a CUDA tensor"):
        logprobs(torch.randn(2, 7), torch.tensor([0, 1]))


def test_kernel_writes_nan_for_out_of_range_target(device):
    """The in-kernel guard (used when the host check cannot run: tracing, graph capture) never reads out of bounds."""
    logits, _ = make_case((3,), 40, torch.float32, device)
    target = torch.tensor([5, 40, -3], device=device)
    flag = ops._target_flag(target)
    logprob, row_max, log2_sum, _ = ops._launch_forward(logits, target, 1.0, ops._forward_outputs(3, False, device),
                                                        bad_target_flag=flag)
    assert torch.isnan(logprob[1:]).all() and flag.item() == 1  # what check_target=True raises on
    clean_flag = ops._target_flag(target[:1])
    ops._launch_forward(logits[:1], target[:1], 1.0, ops._forward_outputs(1, False, device), bad_target_flag=clean_flag)
    assert clean_flag.item() == 0
    assert rel_err(logprob[:1], logprobs_reference(logits[:1].double(), target[:1])) < 1e-6
    lse = row_max.double() + log2_sum.double() * math.log(2)
    assert torch.equal(row_max, logits.max(-1).values) and rel_err(lse, torch.logsumexp(logits.double(), -1)) < 1e-6


def test_default_configs():
    # the H200's best at V=128256 (docs/perf/logprobs.md); small vocabularies take one block of their size
    assert ops._forward_config(128256) == (2048, 4, True) and ops._backward_config(128256) == (2048, 4)
    assert ops._forward_config(300) == (512, 1, True) and ops._backward_config(16) == (16, 1)


def test_tuning_overrides_the_kernel_configs(device):
    from greyhound import _tuning
    with _tuning.override(ops.TUNING_OP, fwd_block_v=4096, fwd_warps=8, bwd_block_v=1024, prefetch="0"):
        assert ops._forward_config(128256) == (4096, 8, False) and ops._backward_config(128256) == (1024, 2)
        logits, target = make_case((3,), 700, torch.float32, device)  # one 4096-wide block, 1024-wide backward
        check_against_reference(logits, target, temperature=1.0, with_entropy=True)
    with _tuning.override(ops.TUNING_OP, bwd_block_v=100), pytest.raises(ValueError, match="bwd_block_v"):
        ops._backward_config(128256)
    calls = []
    launch = ops._launch_forward
    hidden = torch.randn(10, 8, device=device)
    weight = torch.randn(50, 8, device=device)
    target = torch.randint(0, 50, (10,), device=device)
    with _tuning.override(ops.TUNING_OP, linear_chunk_rows=3):
        ops._launch_forward = lambda logits, *a, **k: calls.append(logits.shape[0]) or launch(logits, *a, **k)
        try:
            linear_logprobs(hidden, weight, target)
        finally:
            ops._launch_forward = launch
    assert calls == [3, 3, 3, 1]


@pytest.mark.parametrize("with_entropy", [False, True])
def test_unchecked_out_of_range_target_gives_nan(device, with_entropy):
    logits, target = make_case((2, 5), 90, torch.float32, device)
    target[0, 1], target[1, 3] = 90, -1
    bad = (target < 0) | (target >= 90)
    leaf = logits.clone().requires_grad_()
    out = logprobs(leaf, target, return_entropy=with_entropy, check_target=False)
    logprob = out[0] if with_entropy else out
    assert torch.isnan(logprob[bad]).all()
    ref_in = logits.double().requires_grad_()
    ref = logprobs_reference(ref_in, torch.where(bad, 0, target), return_entropy=with_entropy)
    ref_logprob = ref[0] if with_entropy else ref
    assert rel_err(logprob[~bad], ref_logprob[~bad]) < 1e-5
    if with_entropy:
        assert rel_err(out[1], ref[1]) < 1e-5  # the entropy does not depend on the target
    logprob.backward(torch.ones_like(logprob))
    ref_logprob.backward(torch.ones_like(ref_logprob))
    assert torch.isnan(leaf.grad[bad]).all() and rel_err(leaf.grad[~bad], ref_in.grad[~bad]) < 1e-5


def test_unchecked_path_never_syncs(device, monkeypatch):
    logits, target = make_case((3, 4), 200, torch.bfloat16, device)
    leaf = logits.clone().requires_grad_()

    def no_sync(*args, **kwargs):
        raise AssertionError("host sync")

    for name in ("__bool__", "item", "__int__", "__float__", "tolist"):
        monkeypatch.setattr(torch.Tensor, name, no_sync)
    out = logprobs(leaf, target, check_target=False)
    out.sum().backward()
    monkeypatch.undo()
    ref_in = logits.double().requires_grad_()
    ref = logprobs_reference(ref_in, target)
    ref.sum().backward()
    assert rel_err(out, ref) < 1e-5 and rel_err(leaf.grad, ref_in.grad) < GRAD_TOLERANCE[torch.bfloat16]
    with pytest.raises(ValueError, match="target"):  # the default still checks
        logprobs(leaf, torch.full_like(target, 200))


# ------------------------------------------------------------------------------------------------------------------
# linear_logprobs
# ------------------------------------------------------------------------------------------------------------------
def check_linear(hidden, weight, bias, target, *, temperature, with_entropy, chunk_size, value_tol, grad_tol):
    leaves = [t.detach().clone().requires_grad_() for t in (hidden, weight) + ((bias,) if bias is not None else ())]
    refs = [t.detach().double().requires_grad_() for t in leaves]
    ours = linear_logprobs(leaves[0], leaves[1], target, *leaves[2:], temperature=temperature,
                           return_entropy=with_entropy, chunk_size=chunk_size)
    ref = linear_logprobs_reference(refs[0], refs[1], target, *refs[2:], temperature=temperature,
                                    return_entropy=with_entropy)
    ours, ref = (ours, ref) if with_entropy else ((ours,), (ref,))
    for out, expected in zip(ours, ref):
        assert out.dtype == torch.float32 and out.shape == target.shape
        assert rel_err(out, expected) < value_tol
    weights = [torch.randn(target.shape, dtype=torch.float64, device=hidden.device) for _ in ours]
    sum((o * w.float()).sum() for o, w in zip(ours, weights)).backward()
    sum((r * w).sum() for r, w in zip(ref, weights)).backward()
    for name, leaf, ref_leaf in zip(("hidden", "weight", "bias"), leaves, refs):
        assert leaf.grad.dtype == leaf.dtype and leaf.grad.shape == leaf.shape, name
        assert rel_err(leaf.grad, ref_leaf.grad) < grad_tol, name


@pytest.mark.parametrize("chunk_size", [1, 7, 16, None, 1000])
@pytest.mark.parametrize("with_bias", [False, True])
def test_linear_values_and_grads_fp32(device, chunk_size, with_bias):
    rows, hidden_size, vocab = (2, 13), 24, 1031
    hidden = torch.randn(*rows, hidden_size, device=device)
    weight = torch.randn(vocab, hidden_size, device=device) / hidden_size**0.5
    bias = torch.randn(vocab, device=device) if with_bias else None
    target = torch.randint(0, vocab, rows, device=device)
    check_linear(hidden, weight, bias, target, temperature=0.8, with_entropy=True, chunk_size=chunk_size,
                 value_tol=1e-5, grad_tol=1e-5)


@pytest.mark.parametrize("dtype, tol", [(torch.float16, 5e-3), (torch.bfloat16, 2e-2)])
@pytest.mark.parametrize("with_entropy", [False, True])
def test_linear_low_precision(device, dtype, tol, with_entropy):
    """fp16/bf16 operands: the logits are rounded to that dtype (as an lm head gives them), the math is fp32."""
    hidden = torch.randn(3, 11, 32, device=device).to(dtype)
    weight = (torch.randn(600, 32, device=device) / 32**0.5).to(dtype)
    bias = torch.randn(600, device=device).to(dtype)
    target = torch.randint(0, 600, (3, 11), device=device)
    check_linear(hidden, weight, bias, target, temperature=1.0, with_entropy=with_entropy, chunk_size=8,
                 value_tol=tol, grad_tol=tol)


def test_linear_frozen_weight_and_one_dim_hidden(device):
    weight = torch.randn(200, 16, device=device)
    hidden = torch.randn(16, device=device, requires_grad=True)
    target = torch.tensor(42, device=device)
    out = linear_logprobs(hidden, weight, target)
    (grad,) = torch.autograd.grad(out, hidden)
    ref_hidden = hidden.detach().double().requires_grad_()
    (ref_grad,) = torch.autograd.grad(linear_logprobs_reference(ref_hidden, weight.double(), target), ref_hidden)
    assert out.shape == () and rel_err(grad, ref_grad) < 1e-5


def test_linear_empty_hidden_size(device):
    """H = 0: the logits are the bias (a reshape to (-1, 0) is ambiguous, so the rows are counted from target)."""
    bias = torch.randn(7, device=device, requires_grad=True)
    hidden = torch.randn(2, 3, 0, device=device)
    target = torch.randint(0, 7, (2, 3), device=device)
    out = linear_logprobs(hidden, torch.randn(7, 0, device=device), target, bias)
    expected = torch.log_softmax(bias.detach().double(), -1)[target]
    assert out.shape == (2, 3) and rel_err(out, expected) < 1e-6


def test_linear_fp32_accumulation_helper(device):
    """grad_hidden's accumulator: fp32 += a @ b for fp32 and for bf16 operands (fused GEMM or fallback)."""
    accumulator = torch.randn(9, 5, device=device)
    expected = accumulator.double().clone()
    for dtype in (torch.float32, torch.bfloat16):
        a, b = torch.randn(9, 7, device=device).to(dtype), torch.randn(7, 5, device=device).to(dtype)
        _fp32_gemm._addmm_into_fp32_(accumulator, a, b)
        expected += a.double() @ b.double()
    assert accumulator.dtype == torch.float32 and rel_err(accumulator, expected) < 1e-2


def test_linear_unchecked_out_of_range_target_gives_nan(device):
    hidden = torch.randn(7, 12, device=device, requires_grad=True)
    weight = torch.randn(150, 12, device=device, requires_grad=True)
    target = torch.randint(0, 150, (7,), device=device)
    target[4] = 150
    out = linear_logprobs(hidden, weight, target, check_target=False, chunk_size=3)
    assert torch.isnan(out[4]) and torch.isfinite(out[torch.arange(7, device=device) != 4]).all()
    out.backward(torch.ones_like(out))
    assert torch.isnan(hidden.grad[4]).all() and torch.isfinite(hidden.grad[:4]).all()
    with pytest.raises(ValueError, match="target"):
        linear_logprobs(hidden, weight, target, chunk_size=3)


@pytest.mark.parametrize("bad, error, words", [
    (dict(hidden=torch.randn(4, 8, dtype=torch.float64)), TypeError, "hidden"),
    (dict(weight=torch.randn(50, 8, dtype=torch.float16)), TypeError, "weight"),
    (dict(weight=torch.randn(50, 9)), ValueError, "weight"),
    (dict(weight=torch.randn(50)), ValueError, "weight"),
    (dict(bias=torch.randn(49)), ValueError, "bias"),
    (dict(bias=torch.randn(50, dtype=torch.bfloat16)), TypeError, "bias"),
    (dict(target=torch.tensor([0, 1, 2, 50])), ValueError, "target"),
    (dict(target=torch.tensor([0, 1, 2])), ValueError, "target"),
    (dict(chunk_size=0), ValueError, "chunk_size"),
    (dict(chunk_size=2.0), ValueError, "chunk_size"),
    (dict(temperature=0), ValueError, "temperature"),
])
def test_linear_bad_input(device, bad, error, words):
    args = dict(hidden=torch.randn(4, 8), weight=torch.randn(50, 8), bias=None, target=torch.tensor([0, 1, 2, 49]),
                chunk_size=None, temperature=1.0)
    args.update(bad)
    tensors = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in args.items()}
    with pytest.raises(error, match=words):
        linear_logprobs(tensors["hidden"], tensors["weight"], tensors["target"], tensors["bias"],
                        temperature=tensors["temperature"], chunk_size=tensors["chunk_size"])


def both_forms(device, **options):
    """logprobs and linear_logprobs of one random case, each called with `options`."""
    hidden, weight = torch.randn(3, 8, device=device), torch.randn(7, 8, device=device)
    target = torch.randint(0, 7, (3,), device=device)
    return (lambda: logprobs(hidden @ weight.t(), target, **options),
            lambda: linear_logprobs(hidden, weight, target, **options))


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # the interpreter's numpy, at the bound
def test_temperature_whose_kernel_scale_overflows_fp32_is_refused(device):
    """log2(e) / temperature is the kernels' fp32 scale: below ops.MIN_TEMPERATURE it was inf and every output nan."""
    for temperature in (4.2e-39, 1e-40, 5e-324):
        for call in both_forms(device, temperature=temperature):
            with pytest.raises(ValueError, match=r"temperature must be >= 4.24e-39 \(log2\(e\) / temperature .*fp32\), "
                               f"got {temperature!r}"):
                call()
    for call in both_forms(device, temperature=ops.MIN_TEMPERATURE, return_entropy=True):  # the bound itself runs
        logprob, entropy = call()
        assert not logprob.isnan().any() and not entropy.isnan().any()


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # the interpreter's numpy, far outside
def test_temperature_whose_kernel_scales_underflow_fp32_is_refused(device):
    """The fuzzer's finding: above ~1e45 log2(e) / temperature was 0 in fp32 and every output nan (torch: -log V).
    Refused above ops.MAX_TEMPERATURE = 2**126, the largest whose 1 / temperature is a normal fp32 number."""
    assert ops.MAX_TEMPERATURE == 2.0**126
    for temperature in (math.nextafter(ops.MAX_TEMPERATURE, math.inf), 1e39, 1e46, 1e300):
        for call in both_forms(device, temperature=temperature):
            with pytest.raises(ValueError, match=r"temperature must be <= 8.507e\+37 \(1 / temperature and log2\(e\) / "
                               r"temperature must be normal fp32 numbers\), got " + re.escape(repr(temperature))):
                call()
    for call in both_forms(device, temperature=10**400):  # session 57: a bare OverflowError, naming no argument
        with pytest.raises(ValueError, match="temperature must be a positive finite float"):
            call()


def test_linear_logprobs_names_hidden_in_a_target_shape_error(device):
    hidden, weight = torch.randn(3, 8, device=device), torch.randn(7, 8, device=device)
    with pytest.raises(ValueError, match=r"target must have shape \(3,\) \(the leading dims of hidden\), got \(4,\)"):
        linear_logprobs(hidden, weight, torch.randint(0, 7, (4,), device=device))


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # the interpreter's numpy (-FLT_MAX - max)
@pytest.mark.parametrize("bound", ["min", "max"])
def test_temperature_just_inside_either_bound_matches_torch(device, bound):
    """Just inside ops.MIN_TEMPERATURE and ops.MAX_TEMPERATURE the logprob, the entropy and the gradient match fp64
    torch (logits of the temperature's scale, so that logits / temperature is O(1) at either bound: ~T at the small
    one, ~3e37 at the large one, whose differences stay finite in fp32)."""
    inside = 1.01 * ops.MIN_TEMPERATURE if bound == "min" else ops.MAX_TEMPERATURE
    for temperature in (inside, math.nextafter(inside, 0.0) if bound == "max" else inside * 1.5):
        z, target = make_case((3,), 50, torch.float32, device, scale=1.0)
        logits = (z.double() * temperature).float() if bound == "min" else z * 3e37
        leaf = logits.clone().requires_grad_(True)
        logprob, entropy = logprobs(leaf, target, temperature=temperature, return_entropy=True)
        grad_logprob, grad_entropy = torch.rand(3, device=device) + 0.5, torch.rand(3, device=device) + 0.5
        if bound == "min":  # the gradient is ~upstream x (1 + |log p + H|) / T, and 1 / T is ~2.3e38 here: upstream
            # gradients of O(1) put it past fp32's range for some draws (inf where fp64 torch is finite; CI, session
            # 57), so they are scaled to [0.05, 0.15]: the gradient stays within 2.0e38 for any draw
            grad_logprob, grad_entropy = grad_logprob * 0.1, grad_entropy * 0.1
        (logprob * grad_logprob + entropy * grad_entropy).sum().backward()
        ref_leaf = logits.double().requires_grad_(True)
        log_p = torch.log_softmax(ref_leaf / temperature, dim=-1)
        ref_logprob = log_p.gather(-1, target[:, None])[:, 0]
        ref_entropy = -(log_p.exp() * log_p).sum(-1)
        (ref_logprob * grad_logprob.double() + ref_entropy * grad_entropy.double()).sum().backward()
        assert rel_err(logprob, ref_logprob) < 1e-5 and rel_err(entropy, ref_entropy) < 1e-5
        assert rel_err(leaf.grad, ref_leaf.grad) < 1e-5


@pytest.mark.parametrize("flag", ["return_entropy", "check_target"])
@pytest.mark.parametrize("value", [None, "no", 1])
def test_flags_must_be_bools(device, flag, value):
    """Taken by truthiness, check_target=None turned the target check off and return_entropy="no" the entropy on."""
    for call in both_forms(device, **{flag: value}):
        with pytest.raises(TypeError, match=f"{flag} must be a bool, got {type(value).__name__}"):
            call()


# ------------------------------------------------------------------------------------------------------------------
# GPU only: the H200 shapes' vocabulary with real CUDA kernels (compiled, vectorised loads), all dtypes
# ------------------------------------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_gpu_llama_vocabulary(dtype):
    logits, target = make_case((4, 33), 128256, dtype, "cuda")
    check_against_reference(logits, target, temperature=0.9, with_entropy=True)


@pytest.mark.gpu
def test_gpu_linear_bf16():
    hidden = torch.randn(2, 300, 256, device="cuda").bfloat16()
    weight = (torch.randn(32000, 256, device="cuda") / 16).bfloat16()
    target = torch.randint(0, 32000, (2, 300), device="cuda")
    check_linear(hidden, weight, None, target, temperature=1.0, with_entropy=True, chunk_size=128,
                 value_tol=2e-2, grad_tol=2e-2)


# (moved from the former H200 check script) kernel specialisations, large and odd vocabularies, layouts, > 2^31
@pytest.mark.gpu
@pytest.mark.parametrize("temperature,grads", [(0.7, "logprob"), (1.3, "entropy")])
def test_gpu_one_upstream_gradient(temperature, grads):
    logits, target = make_case((4, 65), 128256, torch.bfloat16, "cuda")
    check_against_reference(logits, target, temperature=temperature, with_entropy=True,
                            logprob_grad=grads == "logprob", entropy_grad=grads == "entropy")


@pytest.mark.gpu
def test_gpu_large_odd_vocabulary():
    logits, target = make_case((64,), 262144 + 77, torch.bfloat16, "cuda")
    check_against_reference(logits, target, temperature=1.0, with_entropy=True)


@pytest.mark.gpu
def test_gpu_strided_logits_and_masked_vocabulary():
    full, target = make_case((4, 130), 50257, torch.bfloat16, "cuda")  # odd V: unaligned rows, scalar loads
    check_against_reference(full[:, :-1], target[:, :-1], temperature=1.0, with_entropy=True)
    logits, _ = make_case((256,), 50257, torch.float32, "cuda")
    logits[:, : 50257 // 8] = float("-inf")
    target = torch.randint(50257 // 8, 50257, (256,), device="cuda")
    check_against_reference(logits, target, temperature=1.0, with_entropy=True)


@pytest.mark.gpu
def test_gpu_unchecked_out_of_range_targets():
    logits, target = make_case((8, 257), 128256, torch.bfloat16, "cuda")
    bad = target.clone()
    bad[0, 5], bad[3, 7] = 128256, -1
    is_bad = (bad < 0) | (bad >= 128256)
    leaf = logits.clone().requires_grad_()
    out = logprobs(leaf, bad, check_target=False)
    out.sum().backward()
    ref_in = logits.double().requires_grad_()
    ref = logprobs_reference(ref_in, torch.where(is_bad, 0, bad))
    ref.sum().backward()
    assert out[is_bad].isnan().all() and leaf.grad[is_bad].isnan().all()
    assert rel_err(out[~is_bad], ref[~is_bad]) < 1e-5
    assert rel_err(leaf.grad[~is_bad], ref_in.grad[~is_bad]) < GRAD_TOLERANCE[torch.bfloat16]


@pytest.mark.gpu
def test_gpu_beyond_int32_elements():
    # 16400 x 131072 bf16 logits > 2^31 elements: int64 offsets; checked on the first and last rows (fp64 reference)
    rows, vocab = 16400, 131072
    huge = torch.randn(rows, vocab, device="cuda", dtype=torch.bfloat16).requires_grad_()
    target = torch.randint(0, vocab, (rows,), device="cuda")
    out = logprobs(huge, target)
    (grad,) = torch.autograd.grad(out, huge, torch.ones_like(out))
    ends = torch.cat([torch.arange(4, device="cuda"), torch.arange(rows - 4, rows, device="cuda")])
    ref_in = huge.detach()[ends].double().requires_grad_()
    ref = logprobs_reference(ref_in, target[ends])
    ref.sum().backward()
    assert rel_err(out[ends], ref) < 1e-5
    assert rel_err(grad[ends], ref_in.grad) < GRAD_TOLERANCE[torch.bfloat16]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,rows,hidden_size,vocab", [(torch.bfloat16, 1000, 4096, 128256),
                                                         (torch.float16, 300, 1024, 50257),
                                                         (torch.float32, 300, 512, 50257)])
@pytest.mark.parametrize("chunk_size", [None, 128])
def test_gpu_linear_with_bias(dtype, rows, hidden_size, vocab, chunk_size):
    hidden = torch.randn(rows, hidden_size, device="cuda").to(dtype)
    weight = (torch.randn(vocab, hidden_size, device="cuda") / hidden_size**0.5).to(dtype)
    bias = torch.randn(vocab, device="cuda").to(dtype)
    target = torch.randint(0, vocab, (rows,), device="cuda")
    tolerance = GRAD_TOLERANCE[dtype]
    check_linear(hidden, weight, bias, target, temperature=0.9, with_entropy=True, chunk_size=chunk_size,
                 value_tol=tolerance, grad_tol=tolerance)
