"""cross_entropy_with_grad against the fp64 reference (itself checked against F.cross_entropy): values, gradients,
every option, in-place semantics and argument errors. On CPU the kernels run through TRITON_INTERPRET=1."""
import re

import pytest
import torch
import triton
import torch.nn.functional as F

import greyhound.ops.cross_entropy as ce
from greyhound import _tuning
from greyhound.ops.cross_entropy import CrossEntropyOutput, cross_entropy_reference, cross_entropy_with_grad

TOLERANCE = {torch.float32: 1e-5, torch.float16: 5e-3, torch.bfloat16: 2e-2}


def rel_err(out, ref):
    out, ref = out.double(), ref.double()
    return ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()


@pytest.fixture
def small_blocks():
    """Force 128-wide loss blocks (prefetching) and 64-wide gradient blocks, so that small vocabularies still take
    several blocks plus a ragged tail."""
    with _tuning.override(ce.TUNING_OP, loss_block_v=128, loss_warps=4, prefetch=True, grad_block_v=64,
                          one_pass=False):
        yield


def make_inputs(rows, V, dtype, device, *, ignored=(), scale=3.0, target_dtype=torch.int64):
    logits = (torch.randn(rows, V, device=device) * scale).to(dtype)
    target = torch.randint(0, V, (rows,), device=device, dtype=target_dtype)
    for row in ignored:
        target[row] = -100
    return logits, target


def check_against_reference(logits, target, grad_output=None, **options):
    """Run ours and the fp64 reference on the same values; compare loss, outputs and the logits gradient."""
    dtype = logits.dtype
    ours_in = logits.clone().requires_grad_()
    ref_in = logits.detach().double().requires_grad_()
    out = cross_entropy_with_grad(ours_in, target, return_per_token_loss=True, return_lse=True, **options)
    ref = cross_entropy_reference(ref_in, target, return_per_token_loss=True, return_lse=True, **options)
    assert isinstance(out, CrossEntropyOutput) and out.loss.dtype == torch.float32
    assert out.loss.shape == ref.loss.shape
    if grad_output is None:  # random signs and sizes, away from 0: fp16 gradients scaled by ~1e-3 would underflow
        grad_output = (torch.rand_like(ref.loss) + 0.5) * torch.randint_like(ref.loss, 2).mul(2).sub(1)
    out.loss.backward(grad_output.float())
    ref.loss.backward(grad_output.double())
    assert ours_in.grad.dtype == dtype
    assert rel_err(out.loss, ref.loss) < 1e-5
    assert rel_err(out.per_token_loss, ref.per_token_loss) < 1e-5
    assert rel_err(out.lse, ref.lse) < 1e-5
    assert rel_err(ours_in.grad, ref_in.grad) < TOLERANCE[dtype]
    ignored = target == options.get("ignore_index", -100)
    assert torch.all(ours_in.grad[ignored] == 0) and torch.all(out.per_token_loss[ignored] == 0)
    return out, ours_in.grad


def test_reference_matches_torch():
    logits, target = make_inputs(13, 301, torch.float64, "cpu", ignored=(2, 7))
    for reduction in ("mean", "sum", "none"):
        for smoothing in (0.0, 0.3):
            ours = cross_entropy_reference(logits, target, reduction=reduction, label_smoothing=smoothing)
            torch.testing.assert_close(
                ours, F.cross_entropy(logits, target, reduction=reduction, label_smoothing=smoothing))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("options", [
    {},
    {"label_smoothing": 0.1},
    {"softcap": 4.0},
    {"lse_square_scale": 1e-2},
    {"label_smoothing": 0.2, "softcap": 7.5, "lse_square_scale": 3e-3, "ignore_index": 5},
], ids=["plain", "smoothing", "softcap", "zloss", "all"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_matches_reference(device, small_blocks, dtype, options, reduction):
    logits, target = make_inputs(11, 517, dtype, device, ignored=(0, 7))
    if "ignore_index" in options:
        target[target == -100] = options["ignore_index"]
    check_against_reference(logits, target, reduction=reduction, **options)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_plain_loop_matches_reference(device, dtype):
    logits, target = make_inputs(11, 517, dtype, device, ignored=(3,))
    with _tuning.override(ce.TUNING_OP, loss_block_v=128, loss_warps=4, prefetch=False, grad_block_v=256):
        assert ce._launch_config(517) == ce._Config(128, 4, False, 256)  # the loss loop without a prefetch
        check_against_reference(logits, target, label_smoothing=0.1, softcap=8.0, lse_square_scale=1e-3)


@pytest.mark.parametrize("V", [1, 7, 1000, 2999, 9001])
def test_default_config_odd_vocab(device, V):
    # 9001 > 8192: the default BLOCK_V takes two blocks, the second mostly masked
    logits, target = make_inputs(5, V, torch.float32, device, ignored=(1,))
    check_against_reference(logits, target)


def test_matches_torch_cross_entropy(device):
    logits, target = make_inputs(23, 1031, torch.float32, device, ignored=(4,))
    ours_in = logits.clone().requires_grad_()
    torch_in = logits.clone().requires_grad_()
    loss = cross_entropy_with_grad(ours_in, target, label_smoothing=0.05)
    expected = F.cross_entropy(torch_in, target, label_smoothing=0.05)
    loss.backward()
    expected.backward()
    torch.testing.assert_close(loss, expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(ours_in.grad, torch_in.grad, rtol=1e-5, atol=1e-7)


def test_int32_target_and_scalar_grad_output(device, small_blocks):
    logits, target = make_inputs(9, 300, torch.float16, device, ignored=(3,), target_dtype=torch.int32)
    for reduction in ("mean", "sum"):
        check_against_reference(logits, target, grad_output=torch.tensor(-2.5), reduction=reduction)


def test_neg_inf_logits(device, small_blocks):
    # masked vocabulary entries: whole leading blocks of -inf must not turn the online max into nan
    logits, target = make_inputs(6, 600, torch.float32, device)
    logits[:, :300] = float("-inf")
    target = torch.randint(300, 600, (6,), device=device)
    out, grad = check_against_reference(logits, target, label_smoothing=0.0, softcap=None)
    assert torch.all(grad[:, :300] == 0) and torch.isfinite(out.loss)




POS_INF_OPTIONS = [{}, {"label_smoothing": 0.1}, {"lse_square_scale": 1e-4}]


def check_pos_inf_logits(device, vocab=300, **options):
    """A row holding +inf: its loss and gradient nan, as F.cross_entropy's, and its lse +inf, as torch.logsumexp's
    (the reference gives both); a row of -inf: lse -inf, loss and gradient nan; the other rows untouched."""
    logits, target = make_inputs(6, vocab, torch.float32, device)
    logits[0, 7] = float("inf")
    logits[1, target[1]] = float("inf")
    logits[2, 280:] = float("inf")
    logits[3, :] = float("-inf")
    ours_in, ref_in = logits.clone().requires_grad_(), logits.double().requires_grad_()
    out = cross_entropy_with_grad(ours_in, target, reduction="none", return_per_token_loss=True, return_lse=True,
                                  **options)
    ref = cross_entropy_reference(ref_in, target, reduction="none", return_per_token_loss=True, return_lse=True,
                                  **options)
    torch.testing.assert_close(out.lse, ref.lse.float(), equal_nan=True)
    torch.testing.assert_close(out.per_token_loss, ref.per_token_loss.float(), equal_nan=True)
    assert out.lse[0] == float("inf") and out.lse[3] == float("-inf") and torch.isnan(out.loss[:4]).all()
    assert torch.isfinite(out.loss[4:]).all()
    grad_output = torch.rand(6, device=device) + 0.5
    out.loss.backward(grad_output)
    ref.loss.backward(grad_output.double())
    torch.testing.assert_close(ours_in.grad, ref_in.grad.float(), equal_nan=True)
    assert torch.isnan(ours_in.grad[:4]).all() and torch.isfinite(ours_in.grad[4:]).all()
    if not options:  # the reference agrees with torch's own ops here
        torch_in = logits.clone().requires_grad_()
        expected = F.cross_entropy(torch_in, target, reduction="none")
        expected.backward(grad_output)
        torch.testing.assert_close(out.loss, expected.detach(), equal_nan=True)
        torch.testing.assert_close(ours_in.grad, torch_in.grad, equal_nan=True)
        torch.testing.assert_close(out.lse, torch.logsumexp(logits, dim=-1), equal_nan=True)


@pytest.mark.parametrize("options", POS_INF_OPTIONS)
def test_pos_inf_logit_matches_reference(device, small_blocks, options):
    check_pos_inf_logits(device, **options)


def test_all_ignored_mean_is_nan_with_zero_grad(device):
    logits, target = make_inputs(4, 50, torch.float32, device, ignored=range(4))
    ours_in = logits.clone().requires_grad_()
    torch_in = logits.clone().requires_grad_()
    loss = cross_entropy_with_grad(ours_in, target, label_smoothing=0.1)
    expected = F.cross_entropy(torch_in, target, label_smoothing=0.1)
    assert torch.isnan(loss) and torch.isnan(expected)  # 0 / 0, as torch
    loss.backward()
    expected.backward()
    assert torch.all(ours_in.grad == 0) and torch.all(torch_in.grad == 0)
    assert cross_entropy_with_grad(logits, target, reduction="sum").item() == 0.0


def test_empty_batch(device):
    logits = torch.randn(0, 10, device=device, requires_grad=True)
    target = torch.zeros(0, dtype=torch.long, device=device)
    assert torch.isnan(cross_entropy_with_grad(logits, target))
    loss = cross_entropy_with_grad(logits, target, reduction="sum")
    loss.backward()
    assert loss.item() == 0.0 and logits.grad.shape == (0, 10)


def test_return_types(device):
    logits, target = make_inputs(5, 40, torch.float32, device)
    assert isinstance(cross_entropy_with_grad(logits, target), torch.Tensor)
    out = cross_entropy_with_grad(logits, target, return_lse=True)
    assert out.per_token_loss is None and out.lse.shape == (5,) and out.loss.dim() == 0
    out = cross_entropy_with_grad(logits.requires_grad_(), target, reduction="none", return_per_token_loss=True)
    assert out.lse is None and out.loss.shape == (5,) and out.loss.requires_grad
    assert not out.per_token_loss.requires_grad and torch.equal(out.per_token_loss, out.loss.detach())


def test_no_grad_path_matches_and_writes_nothing(device, small_blocks):
    logits, target = make_inputs(8, 333, torch.bfloat16, device)
    leaf = logits.clone().requires_grad_()
    before = leaf.detach().clone()
    with torch.no_grad():
        loss = cross_entropy_with_grad(leaf, target, softcap=3.0, inplace_backward=True)
    assert not loss.requires_grad and torch.equal(leaf.detach(), before)
    expected = cross_entropy_reference(logits.double(), target, softcap=3.0)
    assert rel_err(loss, expected) < 1e-5


def test_noncontiguous_logits(device, small_blocks):
    logits, target = make_inputs(11, 300, torch.float32, device)
    transposed = logits.t().contiguous().t()  # strides (1, 11): not unit stride along V
    assert transposed.stride(1) != 1
    check_against_reference(transposed, target)


def test_logits_untouched_without_inplace(device, small_blocks):
    logits, target = make_inputs(7, 260, torch.float32, device)
    leaf = logits.clone().requires_grad_()
    cross_entropy_with_grad(leaf, target).backward()
    assert torch.equal(leaf.detach(), logits)


def test_inplace_backward_writes_gradient_into_logits(device, small_blocks):
    hidden = torch.randn(11, 16, device=device, requires_grad=True)
    weight = torch.randn(390, 16, device=device, requires_grad=True)
    target = torch.randint(0, 390, (11,), device=device)
    target[2] = -100
    logits = hidden @ weight.t()
    logits_before = logits.detach().clone()
    loss = cross_entropy_with_grad(logits, target, softcap=6.0, label_smoothing=0.1, inplace_backward=True)
    assert not torch.equal(logits.detach(), logits_before)  # the storage now holds the gradient
    loss.backward(torch.tensor(0.5))
    ref_hidden = hidden.detach().double().requires_grad_()
    ref_weight = weight.detach().double().requires_grad_()
    expected = cross_entropy_reference(ref_hidden @ ref_weight.t(), target, softcap=6.0, label_smoothing=0.1)
    (0.5 * expected).backward()
    assert rel_err(loss, expected) < 1e-5
    assert rel_err(hidden.grad, ref_hidden.grad) < 1e-5 and rel_err(weight.grad, ref_weight.grad) < 1e-5


def test_inplace_backward_with_a_single_class_of_any_stride(device):
    """V = 1: the loss is 0 and the gradient 0 for every kept row. A (1, BT) tensor's .mT has strides (1, BT); its
    class stride means nothing, and inplace_backward used to refuse it as not unit-stride."""
    rows = 9
    source = torch.randn(1, rows, device=device)
    target = torch.zeros(rows, dtype=torch.int64, device=device)
    target[3] = -100
    leaf = source.clone().requires_grad_()
    logits = leaf.mT * 2.0  # strides (1, 9)
    assert logits.stride(1) != 1
    loss = cross_entropy_with_grad(logits, target, inplace_backward=True)
    loss.backward()
    ref_leaf = source.double().requires_grad_()
    expected = cross_entropy_reference(ref_leaf.mT * 2.0, target)
    expected.backward()
    assert abs(loss.item() - expected.item()) < 1e-6
    assert torch.allclose(leaf.grad.double(), ref_leaf.grad, atol=1e-6)


def test_inplace_backward_bumps_version_for_other_users(device):
    logits = torch.randn(6, 80, device=device).requires_grad_()
    target = torch.randint(0, 80, (6,), device=device)
    scaled = logits * 1.0
    other_user = (scaled ** 2).sum()  # pow saves `scaled`, which the loss below overwrites
    version = scaled._version
    loss = cross_entropy_with_grad(scaled, target, inplace_backward=True)
    assert scaled._version > version
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        (loss + other_user).backward()


def test_inplace_backward_later_modification_raises(device):
    logits = torch.randn(6, 80, device=device).requires_grad_()
    target = torch.randint(0, 80, (6,), device=device)
    scaled = logits * 1.0
    loss = cross_entropy_with_grad(scaled, target, inplace_backward=True)
    scaled.mul_(2.0)  # overwrites the saved gradient
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_backward_twice_raises(device):
    logits = torch.randn(4, 30, device=device, requires_grad=True)
    target = torch.randint(0, 30, (4,), device=device)
    loss = cross_entropy_with_grad(logits, target)
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="backward ran twice"):
        loss.backward()


def test_gradient_is_not_copied(device, monkeypatch):
    # the kernel's gradient buffer becomes logits.grad as is: full mode costs BT x V once, no clone
    buffers = []
    launch = ce._cross_entropy_rows
    monkeypatch.setattr(ce, "_cross_entropy_rows",
                        lambda logits, target, grad=None, *a, **k: buffers.append(grad) or launch(logits, target, grad,
                                                                                              *a, **k))
    logits = torch.randn(4, 30, device=device, requires_grad=True)
    cross_entropy_with_grad(logits, torch.randint(0, 30, (4,), device=device)).backward()
    assert logits.grad.data_ptr() == buffers[0].data_ptr()


@pytest.mark.parametrize("bad_target", [10, -1, -101])
def test_out_of_range_target_raises(device, bad_target):
    logits, target = make_inputs(4, 10, torch.float32, device)
    target[1] = bad_target
    with pytest.raises(ValueError, match="target"):
        cross_entropy_with_grad(logits, target)
    with pytest.raises(ValueError, match="target"):
        cross_entropy_with_grad(logits.requires_grad_(), target)


@pytest.mark.parametrize("reduction", ["mean", "none"])
@pytest.mark.parametrize("with_grad", [False, True])
def test_unchecked_out_of_range_target_gives_nan(device, small_blocks, reduction, with_grad):
    # check_target=False: no error and no out-of-bounds read; bad rows are nan, the other rows stay exact
    logits, target = make_inputs(9, 300, torch.float32, device, ignored=(4,))
    target[2], target[6] = 300, -7
    leaf = logits.clone().requires_grad_(with_grad)
    out = cross_entropy_with_grad(leaf, target, reduction=reduction, check_target=False,
                                  return_per_token_loss=True, return_lse=True)
    bad = torch.zeros(9, dtype=torch.bool, device=device)
    bad[[2, 6]] = True
    assert torch.isnan(out.per_token_loss[bad]).all() and torch.isnan(out.lse[bad]).all()
    good_target = torch.where(bad, 0, target)
    ref = cross_entropy_reference(logits.double(), good_target, reduction="none", return_per_token_loss=True,
                                  return_lse=True)
    assert rel_err(out.per_token_loss[~bad], ref.per_token_loss[~bad]) < 1e-5
    assert rel_err(out.lse[~bad], ref.lse[~bad]) < 1e-5
    assert torch.isnan(out.loss).any()
    if with_grad:
        out.loss.backward(torch.ones_like(out.loss))
        assert torch.isnan(leaf.grad[bad]).all() and torch.isfinite(leaf.grad[~bad]).all()
        ref_leaf = logits.double().requires_grad_()
        expected = cross_entropy_reference(ref_leaf, good_target, reduction=reduction)
        expected.backward(torch.ones_like(expected))
        assert rel_err(leaf.grad[~bad], ref_leaf.grad[~bad]) < 1e-5


def test_unchecked_path_never_syncs(device, small_blocks, monkeypatch):
    # forward and backward with check_target=False read no device value on the host (grad_output 1 included)
    logits, target = make_inputs(7, 260, torch.bfloat16, device, ignored=(1,))
    leaf = logits.clone().requires_grad_()

    def no_sync(*args, **kwargs):
        raise AssertionError("host sync")

    for name in ("__bool__", "item", "__int__", "__float__", "tolist"):
        monkeypatch.setattr(torch.Tensor, name, no_sync)
    loss = cross_entropy_with_grad(leaf, target, check_target=False)
    loss.backward()
    monkeypatch.undo()
    ref_leaf = logits.double().requires_grad_()
    expected = cross_entropy_reference(ref_leaf, target)
    expected.backward()
    assert rel_err(loss, expected) < 1e-5 and rel_err(leaf.grad, ref_leaf.grad) < TOLERANCE[torch.bfloat16]


@pytest.mark.parametrize("chunk", [16384, 7])
@pytest.mark.parametrize("target_dtype", [torch.int64, torch.int32])
def test_valid_targets_counts_and_checks_in_one_kernel(device, monkeypatch, chunk, target_dtype):
    """One kernel counts the targets that are not ignore_index and flags a kept one outside [0, V); the check then
    reads the flag in one host sync. With a small chunk several programs add into the count (atomics): a bad target
    in the last chunk still raises, and an ignored one past V never does."""
    monkeypatch.setattr(ce, "_TARGET_CHUNK", chunk)
    V, ignore_index = 40, -100
    target = torch.randint(0, V, (53,), device=device).to(target_dtype)
    target[[3, 17, 52]] = ignore_index
    n_valid = ce._valid_targets(target, V, ignore_index)
    assert n_valid.dtype == torch.int64 and n_valid.item() == 50
    syncs = []
    monkeypatch.setattr(torch.Tensor, "item", lambda t: syncs.append(1) or 0)
    ce._valid_targets(target, V, ignore_index)
    assert len(syncs) == 1
    monkeypatch.undo()
    monkeypatch.setattr(ce, "_TARGET_CHUNK", chunk)
    target[51] = V
    with pytest.raises(ValueError, match=r"target must hold class indices in \[0, 40\) or ignore_index=-100, got 40 "
                                         r"\(1 of 53 entries out of range\)"):
        ce._valid_targets(target, V, ignore_index)
    assert ce._valid_targets(target, V, ignore_index, check_target=False).item() == 50  # counted, not checked
    relabelled = torch.where(target == ignore_index, V, target)  # V as the ignore_index: 4 ignored, no error
    assert ce._valid_targets(relabelled, V, V).item() == 49
    assert ce._valid_targets(target[:0], V, ignore_index).item() == 0


def test_kernel_flags_bad_targets(device):
    logits, target = make_inputs(6, 50, torch.float32, device, ignored=(0,))
    flag = ce._target_flag(target, True)
    ce._cross_entropy_rows(logits, target, bad_target_flag=flag)
    assert flag.item() == 0  # ignore_index is not out of range
    target[4] = 50
    ce._cross_entropy_rows(logits, target, torch.empty_like(logits), bad_target_flag=flag)
    assert flag.item() == 1


def test_target_check_skipped_while_compiling(device):
    """While torch.compile traces, no host-synced target check (it would break a fullgraph trace); the compiled graph
    checks when it runs, inside the op (check_target=True), or gives NaN rows (check_target=False). A real compile:
    faking torch.compiler.is_compiling() for the process (monkeypatch) also fooled torch's and Triton's own checks,
    and every later fullgraph compile in the process failed."""
    logits, target = make_inputs(4, 10, torch.float32, device)
    torch._dynamo.reset()
    compiled = torch.compile(lambda lg, t, check: cross_entropy_with_grad(lg, t, reduction="none", check_target=check),
                             fullgraph=True)
    assert torch.isfinite(compiled(logits, target, True)).all()
    target[1] = 10
    with pytest.raises(ValueError, match=r"target must hold class indices in \[0, 10\)"):
        compiled(logits, target, True)
    per_token = compiled(logits, target, False)
    assert torch.isnan(per_token[1]) and torch.isfinite(per_token[[0, 2, 3]]).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_scale_rows_skips_rows_scaled_by_one(device, dtype):
    grad = torch.randn(6, 700, device=device).to(dtype)
    scales = torch.tensor([1.0, -2.0, 1.0, 0.5, 4.0, 1.0], device=device)  # powers of 2: exact in any dtype
    expected = (grad.float() * scales[:, None]).to(dtype)
    scaled = ce._scale_rows_(grad.clone(), scales)
    assert torch.equal(scaled, expected)
    assert torch.equal(ce._scale_rows_(grad.clone(), torch.tensor(1.0, device=device)), grad)
    assert torch.equal(ce._scale_rows_(grad.clone(), torch.tensor(-0.25, device=device)),
                       (grad.float() * -0.25).to(dtype))
    # a stride-0 expand (what sum().backward() hands a reduction="none" loss) is one scale for every row
    assert torch.equal(ce._scale_rows_(grad.clone(), torch.tensor(2.0, device=device).expand(6)),
                       (grad.float() * 2).to(dtype))


def test_inplace_backward_checks_targets_before_writing(device):
    logits, target = make_inputs(5, 60, torch.float32, device)
    target[2] = 60
    scaled = logits.clone().requires_grad_() * 1.0
    before = scaled.detach().clone()
    with pytest.raises(ValueError, match="target"):
        cross_entropy_with_grad(scaled, target, inplace_backward=True)
    assert torch.equal(scaled.detach(), before)


def test_launch_config():
    # the H200's best at V=128256: 2048-wide blocks, 4 warps, prefetch, for the loss and for the gradient
    assert ce._launch_config(128256) == ce._Config(2048, 4, True, 2048)
    assert ce._launch_config(300) == ce._Config(512, 1, False, 512)
    assert ce._launch_config(1) == ce._Config(1, 1, False, 1)


def test_tuning_overrides_the_launch_config():
    with _tuning.override(ce.TUNING_OP, loss_block_v=4096, loss_warps=8):  # prefetch and gradient: the rule's
        assert ce._launch_config(128256) == ce._Config(4096, 8, True, 2048)
    with _tuning.override(ce.TUNING_OP, grad_block_v=1024, prefetch="false"):
        assert ce._launch_config(128256) == ce._Config(2048, 4, False, 1024)
    assert ce._launch_config(128256) == ce._Config(2048, 4, True, 2048)
    with _tuning.override(ce.TUNING_OP, loss_block_v=3000), pytest.raises(ValueError, match="loss_block_v"):
        ce._launch_config(128256)
    with pytest.raises(ValueError, match="no tunable 'block_v'"):
        with _tuning.override(ce.TUNING_OP, block_v=1024):
            pass


def test_bad_arguments(device):
    logits, target = make_inputs(4, 10, torch.float32, device)
    cases = [
        (TypeError, "logits", dict(logits=logits.double())),
        (TypeError, "logits", dict(logits=logits.long())),
        (ValueError, "logits", dict(logits=logits[0])),
        (ValueError, "logits", dict(logits=logits[:, :0])),
        (TypeError, "target", dict(target=target.float())),
        (ValueError, "target", dict(target=target[:3])),
        (ValueError, "target", dict(target=target[:, None])),
        (ValueError, "target", dict(target=target.to("meta"))),
        (ValueError, "reduction", dict(reduction="avg")),
        (ValueError, "label_smoothing", dict(label_smoothing=1.5)),
        (ValueError, "label_smoothing", dict(label_smoothing=-0.1)),
        (ValueError, "softcap", dict(softcap=0.0)),
        (ValueError, "softcap", dict(softcap=-2.0)),
        (ValueError, "lse_square_scale", dict(lse_square_scale=-1e-4)),
        # session 57: 1e39 is inf in the kernels' fp32 (an inf loss, no error); 10**400 a bare OverflowError
        (ValueError, "lse_square_scale must be a finite float >= 0 that fits fp32", dict(lse_square_scale=1e39)),
        (ValueError, "lse_square_scale must be a finite float >= 0 that fits fp32", dict(lse_square_scale=10**400)),
        (TypeError, "ignore_index", dict(ignore_index=-100.0)),
        (ValueError, "ignore_index", dict(ignore_index=2**64)),
    ]
    for error, name, change in cases:
        args = {"logits": logits, "target": target, **change}
        with pytest.raises(error, match=name):
            cross_entropy_with_grad(args.pop("logits"), args.pop("target"), **args)
    strided = torch.randn(10, 4, device=device).t().requires_grad_()
    with pytest.raises(ValueError, match="inplace_backward"):
        cross_entropy_with_grad(strided * 1.0, target, inplace_backward=True)
    # rows sharing memory (an expand()ed row): the gradient written into them would mix the rows
    row = torch.randn(1, 10, device=device, requires_grad=True)
    with pytest.raises(ValueError, match="logits must not have overlapping rows"):
        cross_entropy_with_grad(row.expand(4, 10), target, inplace_backward=True)
    if device == "cpu":
        import greyhound._validate as validate
        assert validate.triton_interpreting()


def test_inplace_backward_refuses_a_leaf_that_requires_grad(device):
    """A parameter (or a view of one) as logits: its values were replaced by its gradient after backward, where
    torch refuses in-place writes to such a leaf. Refused before anything is written; out of place it still runs."""
    logits, target = make_inputs(5, 40, torch.float32, device)
    parameter = torch.nn.Parameter(logits.clone())
    for given in (parameter, parameter[1:], parameter.view(5, 40)):
        with pytest.raises(ValueError, match="inplace_backward=True would write the gradient into logits, which is "
                                             "(a view of )?a leaf that requires grad"):
            cross_entropy_with_grad(given, target[:given.shape[0]], inplace_backward=True)
        assert torch.equal(parameter.detach(), logits)
    cross_entropy_with_grad(parameter, target).backward()
    assert torch.equal(parameter.detach(), logits)
    expected = cross_entropy_reference(logits.double().requires_grad_(), target)
    expected.backward()
    with torch.no_grad():  # no gradient: nothing is written, nothing to refuse
        assert rel_err(cross_entropy_with_grad(parameter, target, inplace_backward=True), expected.detach()) < 1e-5


@pytest.mark.parametrize("flag", ["return_per_token_loss", "return_lse", "inplace_backward", "check_target"])
@pytest.mark.parametrize("value", [None, "no", 1])
def test_flags_must_be_bools(device, flag, value):
    """Taken by truthiness, check_target=None turned the target check off and return_lse="no" the lse on."""
    logits, target = make_inputs(4, 10, torch.float32, device)
    with pytest.raises(TypeError, match=f"{flag} must be a bool, got {type(value).__name__}"):
        cross_entropy_with_grad(logits.requires_grad_(), target, **{flag: value})


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_gpu_large_vocab(dtype):
    logits, target = make_inputs(64, 262144, dtype, "cuda", ignored=(3,))
    check_against_reference(logits, target, label_smoothing=0.1, softcap=30.0, lse_square_scale=1e-4)


@pytest.mark.gpu
def test_gpu_beyond_int32_elements():
    # BT x V = 16400 x 131072 > 2**31: row offsets must be int64
    rows, V = 16400, 131072
    logits = torch.randn(rows, V, device="cuda", dtype=torch.bfloat16)
    target = torch.randint(0, V, (rows,), device="cuda")
    tail_ref = cross_entropy_reference(logits[-64:].double(), target[-64:], reduction="none")
    tail_logits = logits[-64:].double().requires_grad_()
    cross_entropy_reference(tail_logits, target[-64:], reduction="sum").backward()
    with torch.no_grad():
        per_token = cross_entropy_with_grad(logits, target, reduction="none")
    assert rel_err(per_token[-64:], tail_ref) < 1e-5
    # the gradient goes into a copy (a non-leaf): a leaf's own values would be lost, which inplace_backward refuses
    # (session 57 on an H100: this test still wrote into the leaf and failed on that refusal)
    leaf = logits.requires_grad_()
    loss = cross_entropy_with_grad(leaf * 1, target, reduction="sum", inplace_backward=True)
    loss.backward()
    assert rel_err(loss, per_token.double().sum()) < 1e-5
    assert rel_err(leaf.grad[-64:], tail_logits.grad) < TOLERANCE[torch.bfloat16]


# ------------------------------------------------------------------------------------------------------------------
# GPU only (moved from the former H200 check script): realistic vocabularies, every option, tuning variants
# ------------------------------------------------------------------------------------------------------------------
ALL_OPTIONS = dict(label_smoothing=0.1, softcap=30.0, lse_square_scale=1e-4)


@pytest.mark.gpu
@pytest.mark.parametrize("one_pass", [True, False], ids=["one-pass", "two-kernels"])
@pytest.mark.parametrize("vocab", [32768, 128256])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_gpu_vocabularies(dtype, vocab, one_pass):
    # the default (the one-pass kernel on Hopper) and the two-kernel path it replaces there
    logits, target = make_inputs(64, vocab, dtype, "cuda", ignored=(5,))
    with _tuning.override(ce.TUNING_OP, one_pass=one_pass):
        check_against_reference(logits, target)
        if dtype == torch.bfloat16:
            check_against_reference(logits, target, reduction="sum", **ALL_OPTIONS)


@pytest.mark.gpu
@pytest.mark.parametrize("reduction,grad_output", [("none", None), ("mean", 0.5), ("mean", 1.0)])
def test_gpu_upstream_gradients(reduction, grad_output):
    # a per-token grad_output, a scalar one, and 1.0 (the scale kernel skips every row)
    logits, target = make_inputs(48, 128256, torch.bfloat16, "cuda")
    scale = None if grad_output is None else torch.tensor(grad_output, device="cuda")
    check_against_reference(logits, target, grad_output=scale, reduction=reduction,
                            **(ALL_OPTIONS if reduction == "none" else {}))


@pytest.mark.gpu
@pytest.mark.parametrize("options", [dict(loss_block_v=4096, loss_warps=8), dict(grad_block_v=1024),
                                     dict(loss_block_v=1024, loss_warps=2)])
def test_gpu_tuning_variants(options):
    # the config variants a sweep times (`greyhound[loss_block_v=4096,loss_warps=8]`, ...) give the same results
    logits, target = make_inputs(48, 128256, torch.bfloat16, "cuda", ignored=(7,))
    with _tuning.override(ce.TUNING_OP, one_pass=False, **options):
        check_against_reference(logits, target, **ALL_OPTIONS)


@pytest.mark.gpu
def test_gpu_unchecked_out_of_range_targets():
    logits, target = make_inputs(48, 128256, torch.bfloat16, "cuda")
    bad_target = target.clone()
    bad_target[[3, 17]] = torch.tensor([128256, -5], device="cuda")
    leaf = logits.clone().requires_grad_()
    out = cross_entropy_with_grad(leaf, bad_target, reduction="none", return_lse=True, check_target=False)
    out.loss.sum().backward()
    good = torch.ones(48, dtype=torch.bool, device="cuda")
    good[[3, 17]] = False
    ref_leaf = logits.double().requires_grad_()
    ref = cross_entropy_reference(ref_leaf, target, reduction="none", return_lse=True)
    ref.loss.sum().backward()
    assert out.loss[~good].isnan().all() and out.lse[~good].isnan().all() and leaf.grad[~good].isnan().all()
    assert rel_err(out.loss[good], ref.loss[good]) < 1e-5
    assert rel_err(leaf.grad[good], ref_leaf.grad[good]) < TOLERANCE[torch.bfloat16]


@pytest.mark.gpu
def test_gpu_inplace_backward():
    logits, target = make_inputs(48, 128256, torch.bfloat16, "cuda", ignored=(9,))
    ref_leaf = logits.double().requires_grad_()
    expected = cross_entropy_reference(ref_leaf, target, **ALL_OPTIONS)
    expected.backward()
    leaf = logits.clone().requires_grad_()
    scaled = leaf * 1.0
    loss = cross_entropy_with_grad(scaled, target, inplace_backward=True, **ALL_OPTIONS)
    loss.backward()
    assert rel_err(loss, expected) < 1e-5
    assert rel_err(leaf.grad, ref_leaf.grad) < TOLERANCE[torch.bfloat16]
    assert torch.equal(scaled.detach(), leaf.grad)  # the gradient was written into the logits' own storage


# ------------------------------------------------------------------------------------------------------------------
# The one-pass Gluon kernel (greyhound/ops/_ce_gluon.py): Hopper only
# ------------------------------------------------------------------------------------------------------------------
def test_one_pass_default_config():
    # rows longer than one 64 KB ring tile are held on chip where they fit: 32 KB tiles, all but one in the ring
    config = ce._one_pass_config(128256, 2)
    assert config.enabled is None and (config.num_warps, config.split) == (16, 1)
    assert config.hold and (config.tile_rows, config.stages) == (4, 7)
    assert ce._one_pass_config(65536, 2)[1:4] == (4, 16, 3) and ce._one_pass_config(32768, 4)[1:4] == (2, 16, 3)
    # fp32 rows of 128256 do not fit: the ring of 64 KB tiles (8 slabs of bf16, 4 of fp32), 3 deep, which reads each
    # row twice (sweep 2 takes the row's last tile from the ring); fewer slabs for short rows, which it reads once
    config = ce._one_pass_config(128256, 4)
    assert not config.hold and (config.tile_rows, config.stages) == (4, 3) and config.reuse_last
    for V, tile_rows in ((32768, 8), (5000, 2), (4096, 1)):
        config = ce._one_pass_config(V, 2)
        assert not config.hold and config.tile_rows == tile_rows, V
    with _tuning.override(ce.TUNING_OP, one_pass=False, one_pass_tile_rows=2, one_pass_split=2, one_pass_reuse=False):
        config = ce._one_pass_config(128256, 2)
        assert not config.enabled and config.tile_rows == 2 and config.split == 2 and not config.reuse_last
        assert not config.hold  # split rows are not held
    with _tuning.override(ce.TUNING_OP, one_pass_hold=False):
        assert ce._one_pass_config(128256, 2)[1:4] == (8, 16, 3) and not ce._one_pass_config(128256, 2).hold


def test_one_pass_held_geometry():
    # the largest tile that cuts the row into n >= 3 tiles whose last n - 1 fit the ring; none for longer rows
    geometry = ce._ce_gluon.held_geometry
    assert geometry(128256, 2, 16) == (4, 7)  # 8 tiles of 32 KB: one in registers, seven in the ring
    assert geometry(50304, 2, 16) == (4, 3) and geometry(40000, 2, 16) == (4, 2)
    assert geometry(65536, 4, 16) == (2, 7)  # fp32: 8 tiles of 32 KB
    assert geometry(128256, 4, 16) is None and geometry(151936, 2, 16) is None  # 16 and 10 tiles of 32 KB
    assert geometry(20000, 2, 16) == (2, 2)  # 16 KB tiles: 32 KB ones would be fewer than 3
    assert geometry(128256, 2, 8) == (8, 7)  # 32 KB tiles at 8 warps
    assert geometry(4096, 2, 16) is None  # shorter than three of the smallest tiles
    assert geometry(128256, 2, 16, 8) == (8, 3) and geometry(128256, 2, 16, 2) is None  # a tile asked for
    for V, size in ((128256, 2), (50304, 2), (40000, 2), (65536, 4), (20000, 2), (131072, 2), (49153, 2)):
        tile_rows, stages = geometry(V, size, 16)
        tile = tile_rows * 256 * 16
        assert stages * tile < V <= (stages + 1) * tile and stages * tile * size <= 232448 - 1024


def test_one_pass_hold_config():
    # one_pass_hold picks the tile and ring depth where the row fits on chip, and stays off where it does not
    with _tuning.override(ce.TUNING_OP, one_pass_hold=True):
        config = ce._one_pass_config(50304, 2)
        assert config.hold and (config.tile_rows, config.stages) == (4, 3)
        assert not ce._one_pass_config(128256, 4).hold  # fp32 rows of 128256 do not fit
        config = ce._one_pass_config(20000, 2)  # held even within one ring tile, when asked for
        assert config.hold and (config.tile_rows, config.stages) == (2, 2)
    with _tuning.override(ce.TUNING_OP, one_pass_hold=True, one_pass_tile_rows=8):
        config = ce._one_pass_config(128256, 2)
        assert config.hold and (config.tile_rows, config.stages) == (8, 3)
    with _tuning.override(ce.TUNING_OP, one_pass_hold=True, one_pass_split=2):
        assert not ce._one_pass_config(50304, 2).hold  # split rows are not held
    assert not ce._one_pass_config(20000, 2).hold
    # two tiles in registers by default; one for 16-bit logits with a soft-cap (two spill there)
    assert ce._one_pass_config(128256, 2).hold == 2 and ce._one_pass_config(65536, 4).hold == 2
    assert ce._one_pass_config(128256, 2, softcap=True).hold == 1 and ce._one_pass_config(65536, 4, True).hold == 2
    with _tuning.override(ce.TUNING_OP, one_pass_held_tiles=1):
        assert ce._one_pass_config(128256, 2).hold == 1
    with _tuning.override(ce.TUNING_OP, one_pass_held_tiles=3):
        assert ce._one_pass_config(128256, 2).hold == 3
        assert ce._one_pass_config(40000, 2).hold == 2  # 3 tiles of 16384: a ring of 2, so 2 held at most


def test_one_pass_held_tiles_out_of_range_says_why():
    logits = torch.empty(2, 128256, dtype=torch.bfloat16)
    for hold in (4, 8):
        why = ce._ce_gluon.unsupported(logits, logits, 4, 16, 7, 1, hold)
        assert why is not None and "must be 1 to 3" in why and f"got {hold}" in why
    why = ce._ce_gluon.unsupported(torch.empty(2, 40000, dtype=torch.bfloat16), torch.empty(2, 40000), 4, 16, 2, 1, 3)
    assert why is not None


@pytest.mark.parametrize("tile_rows,stages,split,V,grad_dtype,expected", [
    (8, 3, 1, 131073, torch.bfloat16, "V <= 131072"), (8, 3, 1, 32768, torch.bfloat16, "32768 < V"),
    (8, 3, 2, 100000, torch.bfloat16, "split 2"), (1, 3, 1, 10000, torch.bfloat16, "tile_rows 1"),
    (8, 3, 1, 100000, torch.float32, "gradient torch.float32")])
def test_one_pass_hold_says_why_it_cannot_hold(tile_rows, stages, split, V, grad_dtype, expected):
    logits = torch.empty(2, V, dtype=torch.bfloat16)
    why = ce._ce_gluon.unsupported(logits, torch.empty(2, V, dtype=grad_dtype), tile_rows, 16, stages, split, True)
    assert why is not None and "holding a row needs" in why and expected in why


def test_one_pass_kernel_says_why_it_cannot_run():
    logits = torch.randn(4, 64)
    why = ce._ce_gluon.unsupported(logits, logits, 8, 8, 4)
    assert why is not None and ("compute capability" in why or "Gluon" in why)


def test_one_pass_forced_on_cpu_falls_back_with_a_warning(device):
    if device != "cpu":
        pytest.skip("the CPU fallback")
    logits, target = make_inputs(5, 300, torch.float32, device, ignored=(1,))
    ce._ce_gluon._WARNED.clear()
    with _tuning.override(ce.TUNING_OP, one_pass=True), \
            pytest.warns(RuntimeWarning, match="compute capability|no Gluon"):
        check_against_reference(logits, target, label_smoothing=0.1)


def _one_pass(**options):
    """Forces the one-pass kernel; any fallback warning becomes an error, so a test cannot pass on the two-kernel
    path by accident. The fallback warns once per kind of failure, so the record of kinds already warned about is
    cleared: otherwise every test after the first that fell back would pass silently on the two-kernel path."""
    import contextlib
    import warnings
    ce._ce_gluon._WARNED.clear()
    stack = contextlib.ExitStack()
    stack.enter_context(_tuning.override(ce.TUNING_OP, one_pass=True, **options))
    stack.enter_context(warnings.catch_warnings())
    warnings.simplefilter("error", RuntimeWarning)
    return stack


@pytest.mark.gpu
@pytest.mark.parametrize("options", POS_INF_OPTIONS)
def test_gpu_one_pass_pos_inf_logit_matches_reference(options):
    with _one_pass():
        check_pos_inf_logits("cuda", vocab=4096, **options)  # the one-pass kernel: V a multiple of 16


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("rows,vocab", [(3, 128256), (300, 32768), (140, 50304), (9, 16)])
@pytest.mark.parametrize("options", [{}, ALL_OPTIONS, {"label_smoothing": 0.2}, {"softcap": 5.0},
                                     {"lse_square_scale": 1e-3}], ids=["plain", "all", "smoothing", "softcap", "zloss"])
@pytest.mark.parametrize("hold", [None, False], ids=["default", "ring"])
def test_gpu_one_pass_matches_reference(dtype, rows, vocab, options, hold):
    # rows below and above the grid (programs walk several rows), vocabularies of several tiles, a ragged last tile
    # (50304 = 3 x 16384 + 1152) and a vocabulary smaller than one tile; by default (rows held on chip where they fit)
    # and on the ring that reads each row twice
    logits, target = make_inputs(rows, vocab, dtype, "cuda", ignored=(1,))
    target[-1] = vocab - 1  # the last entry of the last tile
    with _one_pass(**({} if hold is None else {"one_pass_hold": hold})):
        check_against_reference(logits, target, reduction="none", **options)
        check_against_reference(logits, target, reduction="mean", **options)


@pytest.mark.gpu
@pytest.mark.parametrize("config", [dict(one_pass_tile_rows=4, one_pass_warps=4, one_pass_stages=3),
                                    dict(one_pass_tile_rows=8, one_pass_warps=16, one_pass_stages=2, one_pass_hold=0),
                                    dict(one_pass_programs=7), dict(one_pass_tile_rows=1, one_pass_stages=6),
                                    dict(one_pass_policy=8), dict(one_pass_policy=2),
                                    dict(one_pass_reuse=False, one_pass_hold=False),
                                    dict(one_pass_reuse=False, one_pass_stages=2, one_pass_split=2),
                                    dict(one_pass_hold=True, one_pass_tile_rows=8), dict(one_pass_warps=8),
                                    dict(one_pass_programs=7, one_pass_hold=False)])
def test_gpu_one_pass_tuning_variants(config):
    logits, target = make_inputs(64, 128256, torch.bfloat16, "cuda", ignored=(3,), target_dtype=torch.int32)
    with _one_pass(**config):
        check_against_reference(logits, target, **ALL_OPTIONS)


@pytest.mark.gpu
@pytest.mark.parametrize("split", [2, 4])
@pytest.mark.parametrize("rows,vocab", [(3, 128256), (300, 50304), (9, 16), (200, 32768)])
@pytest.mark.parametrize("options", [{}, ALL_OPTIONS], ids=["plain", "all"])
def test_gpu_one_pass_split_rows(split, rows, vocab, options):
    # programs sharing a row exchange their partials: ranks with no tile (V = 16 is one tile), fewer rows than
    # groups, programs walking several rows, a group's ranks with unequal tile counts (50304: 4 tiles of 16384)
    logits, target = make_inputs(rows, vocab, torch.bfloat16, "cuda", ignored=(1,))
    with _one_pass(one_pass_split=split, one_pass_programs=16 * split):
        check_against_reference(logits, target, reduction="none", **options)
    with _one_pass(one_pass_split=split):
        check_against_reference(logits, target, reduction="mean", **options)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("rows,vocab", [(3, 128256), (300, 50304), (140, 40000), (9, 65536), (200, 20000)])
@pytest.mark.parametrize("options", [{}, ALL_OPTIONS, {"label_smoothing": 0.2}, {"softcap": 5.0},
                                     {"lse_square_scale": 1e-3}], ids=["plain", "all", "smoothing", "softcap", "zloss"])
def test_gpu_one_pass_held_rows(dtype, rows, vocab, options):
    # rows held on chip: 4 tiles (the last ragged), 3 tiles, fewer rows than programs and programs walking several
    # rows; targets in both halves of the tile held in registers and in the last entry. fp32 rows of 128256 do not
    # fit, so they run (and are checked) on the ring
    logits, target = make_inputs(rows, vocab, dtype, "cuda", ignored=(1,))
    config = ce._one_pass_config(vocab, logits.element_size())._replace(hold=True)
    geometry = ce._ce_gluon.held_geometry(vocab, logits.element_size(), config.num_warps)
    half_tile = geometry[0] * 128 * config.num_warps if geometry else 1
    target[0], target[-1] = 3, vocab - 1
    target[2 % rows] = half_tile + 5
    with _one_pass(one_pass_hold=True):
        assert bool(ce._one_pass_config(vocab, logits.element_size()).hold) == (geometry is not None)
        check_against_reference(logits, target, reduction="none", **options)
        check_against_reference(logits, target, reduction="mean", **options)
    assert (geometry is None) == (dtype == torch.float32 and vocab == 128256)


@pytest.mark.gpu
@pytest.mark.parametrize("held", [2, 3])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("rows,vocab", [(3, 128256), (300, 50304), (140, 40000), (400, 65536)])
@pytest.mark.parametrize("options", [{}, ALL_OPTIONS], ids=["plain", "all"])
def test_gpu_one_pass_held_tiles(held, dtype, rows, vocab, options):
    # more than one tile of each row in registers, each freeing a ring slot for the next row's tiles: targets in every
    # held tile, in the ring's first tile and in the last entry; rows of 3 tiles (a ring of 2: at most 2 held), 4 and
    # 8; programs walking several rows
    logits, target = make_inputs(rows, vocab, dtype, "cuda", ignored=(1,))
    with _one_pass(one_pass_hold=True, one_pass_held_tiles=held):
        config = ce._one_pass_config(vocab, logits.element_size())
        if not config.hold:
            assert dtype == torch.float32 and vocab == 128256  # does not fit on chip: the ring
        tile = config.tile_rows * 256 * config.num_warps
        for i, column in enumerate((3, tile + 7, 2 * tile + 11, 3 * tile - 1, vocab - 1)):
            target[(2 + i) % rows] = min(column, vocab - 1)
        check_against_reference(logits, target, reduction="none", **options)
        check_against_reference(logits, target, reduction="mean", **options)


@pytest.mark.gpu
def test_gpu_one_pass_held_rows_inplace():
    # the gradient written over the logits while the next rows are in flight
    logits, target = make_inputs(300, 128256, torch.bfloat16, "cuda", ignored=(9,))
    ref_leaf = logits.double().requires_grad_()
    expected = cross_entropy_reference(ref_leaf, target, reduction="none", **ALL_OPTIONS)
    expected.sum().backward()
    for held in (1, 2):
        leaf = logits.clone().requires_grad_()
        scaled = leaf * 1.0
        with _one_pass(one_pass_hold=True, one_pass_held_tiles=held):
            loss = cross_entropy_with_grad(scaled, target, reduction="none", inplace_backward=True, **ALL_OPTIONS)
        loss.sum().backward()
        torch.testing.assert_close(scaled.detach(), leaf.grad, rtol=0, atol=0)
        assert rel_err(loss, expected) < 1e-5
        assert rel_err(leaf.grad, ref_leaf.grad) < TOLERANCE[torch.bfloat16]


@pytest.mark.gpu
def test_gpu_one_pass_inplace_and_unchecked_targets():
    logits, target = make_inputs(48, 128256, torch.bfloat16, "cuda", ignored=(9,))
    bad_target = target.clone()
    bad_target[[3, 17]] = torch.tensor([128256, -5], device="cuda")
    good = torch.ones(48, dtype=torch.bool, device="cuda")
    good[[3, 17]] = False
    ref_leaf = logits.double().requires_grad_()
    expected = cross_entropy_reference(ref_leaf, target, reduction="none", **ALL_OPTIONS)
    expected.sum().backward()
    leaf = logits.clone().requires_grad_()
    scaled = leaf * 1.0
    with _one_pass():
        loss = cross_entropy_with_grad(scaled, bad_target, reduction="none", inplace_backward=True,
                                       check_target=False, **ALL_OPTIONS)
    loss.sum().backward()
    # written into the logits' own storage (nan rows included)
    torch.testing.assert_close(scaled.detach(), leaf.grad, rtol=0, atol=0, equal_nan=True)
    assert loss[~good].isnan().all() and leaf.grad[~good].isnan().all()
    assert rel_err(loss[good], expected[good]) < 1e-5
    assert rel_err(leaf.grad[good], ref_leaf.grad[good]) < TOLERANCE[torch.bfloat16]


@pytest.mark.gpu
def test_gpu_one_pass_unaligned_vocab_takes_two_kernels():
    # V = 1001: rows are not 16-byte aligned, so the default path runs the two kernels, silently; forced, it warns
    logits, target = make_inputs(16, 1001, torch.bfloat16, "cuda")
    ce._ce_gluon._WARNED.clear()
    with _tuning.override(ce.TUNING_OP, one_pass=True), pytest.warns(RuntimeWarning, match="multiple of 16"):
        check_against_reference(logits, target)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,expected", [(torch.bfloat16, True), (torch.float32, False)])
def test_gpu_default_takes_one_pass_where_rows_fit_l2(monkeypatch, dtype, expected):
    # 132 bf16 rows of V=128256 (33 MB) fit the H200's 50 MB L2: one pass; fp32 rows (66 MB) do not: two kernels
    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("the one-pass kernel is for Hopper")
    calls = []
    launch = ce._ce_gluon.launch
    monkeypatch.setattr(ce._ce_gluon, "launch", lambda *args, **kwargs: calls.append(1) or launch(*args, **kwargs))
    logits, target = make_inputs(32, 128256, dtype, "cuda", ignored=(2,))
    fits = ce._sm_count(logits.device) * 128256 * logits.element_size() <= ce._l2_bytes(logits.device)
    assert fits == expected
    check_against_reference(logits, target)
    assert bool(calls) == expected


def _one_pass_kernel_types(dtype):
    """The one-pass kernel's argument types for compile_for_hopper, logits and gradient of `dtype` ("bf16", "fp32")."""
    return dict(logits_ptr=f"*{dtype}", logits_row_stride="i32", grad_ptr=f"*{dtype}", grad_row_stride="i32",
                target_ptr="*i64", per_token_loss_ptr="*fp32", lse_ptr="*fp32", grad_scale_ptr="*fp32",
                grad_scale_stride="i32", partial_ptr="*i64", n_rows="i32", V="i32",
                ignore_index="i32", label_smoothing="fp32", softcap="fp32", lse_square_scale="fp32")


@pytest.mark.parametrize("dtype,tile_rows,split,reuse,hold", [("bf16", 8, 1, 1, 0), ("fp32", 4, 2, 0, 0),
                                                              ("bf16", 8, 1, 1, 1), ("fp32", 4, 1, 1, 1)])
def test_one_pass_kernel_compiles_for_hopper(dtype, tile_rows, split, reuse, hold):
    # the default config (and a split, fp32 one that loads each tile twice), every option on: valid for this Triton's
    # Gluon, 16-byte copies only, the ring within the H200's shared memory
    from tests.gluon_compile import compile_for_hopper
    types = _one_pass_kernel_types(dtype)
    constexprs = dict(HAS_SOFTCAP=True, HAS_SMOOTHING=True, HAS_Z_LOSS=True, TILE_R=tile_rows, STAGES=3,
                      SPLIT=split, POLICY=7, REUSE_LAST=reuse, HOLD=hold, num_warps=16)
    facts = compile_for_hopper("greyhound.ops._ce_gluon", "cross_entropy_one_pass_kernel", types, constexprs, 16,
                               divisible=("V", "logits_row_stride", "grad_row_stride"))
    tile_bytes = tile_rows * 256 * 16 * (2 if dtype == "bf16" else 4)
    assert facts["cubin"] and facts["copy_bytes"] == [16] and facts["copies"] > 0
    assert 3 * tile_bytes <= facts["shared"] <= 232448
    # programs sharing a row exchange partials by relaxed 64-bit exchanges: no fence, which would wait for every copy
    # and store the program has in flight
    assert facts["acquire_release"] == 0 and facts["fences"] == 0
    assert (facts["exchanges"] > 0) == (split > 1)


@pytest.mark.parametrize("held,softcap", [(2, False), (1, True)])
def test_held_rows_kernel_keeps_its_tiles_in_registers(held, softcap):
    # the held geometry at BT x 128256 bf16 (32 KB tiles, a ring of 7): the default number of tiles held as 32-bit
    # words fits the 128 registers a thread of 16 warps has, without spilling: 2, and 1 with a soft-cap (2 spill
    # there, and 3 spill without one: they stay tuning variants)
    from tests.gluon_compile import compile_for_hopper
    types = _one_pass_kernel_types("bf16")
    tile_rows, stages = ce._ce_gluon.held_geometry(128256, 2, 16)
    assert ce._one_pass_config(128256, 2, softcap).hold == held
    constexprs = dict(HAS_SOFTCAP=softcap, HAS_SMOOTHING=True, HAS_Z_LOSS=True, TILE_R=tile_rows, STAGES=stages,
                      SPLIT=1, POLICY=7, REUSE_LAST=1, HOLD=held, num_warps=16)
    facts = compile_for_hopper("greyhound.ops._ce_gluon", "cross_entropy_one_pass_kernel", types, constexprs, 16,
                               divisible=("V", "logits_row_stride", "grad_row_stride"), ptxas_report=True)
    assert facts["cubin"] and facts["ptxas_ran"] and facts["copy_bytes"] == [16]
    assert stages * tile_rows * 256 * 16 * 2 <= facts["shared"] <= 232448
    # the H200's Triton 3.6 spills 4 bytes at the soft-cap's one held tile (session 55), CI's 3.9 none
    old_triton = tuple(int(part) for part in triton.__version__.split(".")[:2]) < (3, 9)
    assert facts["spill_bytes"] <= (4 if softcap and old_triton else 0)


def test_one_pass_variant_that_cannot_run_warns_every_time(device):
    """A forced one_pass_* tunable the kernel cannot take (4 held tiles of a row of 5 fp32 tiles: the ring has 4
    stages, the kernel holds at most 3) warns on every call, naming the tunables and why, so a tuning sweep never
    labels the two-kernel path with the variant's name."""
    logits, target = make_inputs(5, 40000, torch.float32, device, ignored=(1,))
    assert ce._ce_gluon.held_geometry(40000, 4, 16) == (2, 4)
    for _ in range(2):
        with _tuning.override(ce.TUNING_OP, one_pass_hold=True, one_pass_held_tiles=4), \
                pytest.warns(RuntimeWarning, match="one_pass_held_tiles, one_pass_hold forced .*1 to 3"):
            check_against_reference(logits, target)


@pytest.mark.parametrize("softcap", [30.0, 1e4, 1e5])
def test_a_large_softcap_keeps_fp32_accuracy(device, softcap):
    # session 42's fuzzing: tanh as 1 - 2 / (1 + e^2x) cancels for the small arguments a large soft-cap gives (loss
    # error 4.4e-4 at 1e4, 7e-3 at 1e5, where torch's fp32 is within 4e-7); the series below |x| = 0.4 fixes it
    logits = torch.randn(8, 32, device=device)
    target = torch.randint(0, 32, (8,), device=device)
    leaf = logits.clone().requires_grad_(True)
    loss = cross_entropy_with_grad(leaf, target, softcap=softcap, reduction="none")
    loss.sum().backward()
    ref_leaf = logits.double().requires_grad_(True)
    ref = cross_entropy_reference(ref_leaf, target, softcap=softcap, reduction="none")
    ref.sum().backward()
    assert (loss.double() - ref).abs().max().item() < 2e-6
    assert (leaf.grad.double() - ref_leaf.grad).abs().max().item() < 1e-6


@pytest.mark.gpu
@pytest.mark.parametrize("one_pass", [True, False], ids=["one-pass", "two-kernels"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gpu_large_softcap_keeps_fp32_accuracy(dtype, one_pass):
    # the same series in the Gluon one-pass kernel (the default on Hopper) and the two Triton kernels, at a real
    # vocabulary: without it a soft-cap of 1e5 put each capped logit ~6e-3 off and the loss ~1e-3 off
    logits, target = make_inputs(64, 128256, dtype, "cuda", ignored=(5,))
    for softcap in (1e4, 1e5):
        with _tuning.override(ce.TUNING_OP, one_pass=one_pass):
            out, _ = check_against_reference(logits, target, reduction="none", softcap=softcap)
        ref = cross_entropy_reference(logits.double(), target, reduction="none", softcap=softcap)
        assert (out.loss.double() - ref).abs().max().item() < 2e-5 * ref.abs().max().item()


def test_label_smoothing_of_one_matches_torch(device):
    # session 42's fuzzing: [0, 1) was enforced where F.cross_entropy takes [0, 1] (1.0: the uniform target alone)
    logits = torch.randn(8, 32, device=device, requires_grad=True)
    target = torch.randint(0, 32, (8,), device=device)
    loss = cross_entropy_with_grad(logits, target, label_smoothing=1.0)
    (grad,) = torch.autograd.grad(loss, logits)
    ref_logits = logits.detach().double().requires_grad_(True)
    ref = F.cross_entropy(ref_logits, target, label_smoothing=1.0)
    (ref_grad,) = torch.autograd.grad(ref, ref_logits)
    torch.testing.assert_close(loss.double(), ref, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(grad.double(), ref_grad, rtol=1e-5, atol=1e-7)


# the loss kernel's blocks as small_blocks sets them (several per row, a running max that moves), and the defaults
BLOCK_CONFIGS = [dict(loss_block_v=128, loss_warps=4, prefetch=True, grad_block_v=64, one_pass=False), {}]


@pytest.mark.parametrize("blocks", BLOCK_CONFIGS, ids=["small-blocks", "default"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
@pytest.mark.parametrize("offset", [1e3, 1e4, 6e4])
def test_large_logits_keep_fp32_accuracy(device, blocks, label_smoothing, offset):
    # the fuzzer's finding: the gradient kernel took p_j = exp2((z_j - lse) log2(e)) from one fp32 lse per row, whose
    # rounding (an ulp of the max logit: 1e-3 at 1e4) went into every p_j: 5.6e-5 relative at logits + 1e4 (torch's
    # fp32 4e-8); the loss lse - z_target carried it too. Now p_j = exp2((z_j - row_max) log2(e) - log2_sum) and the
    # loss (row_max - z_target) + log(sum), exact near the max
    rows, V = 8, 1000
    logits = torch.randn(rows, V, device=device) * 3 + offset  # fp32: the same softmax, shifted
    target = torch.randint(0, V, (rows,), device=device)
    leaf = logits.clone().requires_grad_(True)
    with _tuning.override(ce.TUNING_OP, **blocks):
        loss = cross_entropy_with_grad(leaf, target, reduction="none", label_smoothing=label_smoothing)
    grad_output = torch.rand(rows, device=device) + 0.5
    loss.backward(grad_output)
    ref_leaf = logits.double().requires_grad_(True)
    ref = F.cross_entropy(ref_leaf, target, reduction="none", label_smoothing=label_smoothing)
    ref.backward(grad_output.double())
    assert (loss.double() - ref).abs().max().item() < 1e-6 * ref.abs().max().item()
    assert (leaf.grad.double() - ref_leaf.grad).abs().max().item() < 1e-6 * ref_leaf.grad.abs().max().item()


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # the interpreter's numpy
@pytest.mark.parametrize("blocks", BLOCK_CONFIGS, ids=["small-blocks", "default"])
def test_label_smoothing_with_huge_logits_does_not_overflow(device, blocks):
    # the fuzzer's finding: the smoothing term summed the raw logits in fp32, which overflowed (z = [3e38, 3e38, 1],
    # target 0, label_smoothing 0.5: -inf, where F.cross_entropy gives 5e37); now the sum of z_j - row_max
    z = torch.tensor([[3e38, 3e38, 1.0]], device=device)
    with _tuning.override(ce.TUNING_OP, **blocks):
        loss = cross_entropy_with_grad(z, torch.tensor([0], device=device), label_smoothing=0.5)
    expected = F.cross_entropy(z.double(), torch.tensor([0], device=device), label_smoothing=0.5)
    assert abs(loss.item() - expected.item()) < 1e-6 * expected.item()
    # random rows around 3e38 (their sum overflows fp32; every z_j - row_max, and their sum, is finite), the max
    # moving between blocks, an ignored row, and one row of moderate logits with a large offset
    rows, V = 6, 300
    logits = (torch.randn(rows, V, device=device, dtype=torch.float64) * 1e35 + 3e38).float()
    logits[4] = torch.randn(V, device=device) * 3 + 1e4
    target = torch.randint(0, V, (rows,), device=device)
    target[1] = -100
    leaf = logits.clone().requires_grad_(True)
    with _tuning.override(ce.TUNING_OP, **blocks):
        out = cross_entropy_with_grad(leaf, target, label_smoothing=0.3, reduction="none")
    out.sum().backward()
    ref_leaf = logits.double().requires_grad_(True)
    ref = F.cross_entropy(ref_leaf, target, label_smoothing=0.3, reduction="none")
    ref.sum().backward()
    assert torch.isfinite(out).all()
    assert ((out.double() - ref).abs() <= 1e-6 * ref.abs()).all()
    assert (leaf.grad.double() - ref_leaf.grad).abs().max().item() < 1e-6


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # the interpreter's numpy
def test_softcap_must_be_a_normal_fp32(device):
    # the fuzzer's finding: softcap=1e39 was taken, and is inf in the kernels' fp32: every output nan. Below the
    # smallest normal fp32 it can flush to 0 (1e-46 is 0 in fp32: 0 / 0 at a zero logit). Both bounds themselves run.
    # chunked_linear_cross_entropy shares the check (cross_entropy._check_options)
    from greyhound.ops.linear_cross_entropy import chunked_linear_cross_entropy
    logits, target = make_inputs(4, 10, torch.float32, device)
    for softcap in (1e39, 3.5e38, float("inf"), float("nan"), 1e-39, 1e-46):
        message = (r"softcap must be None or a finite float > 0 that is a normal fp32 number \(in \[1.1755e-38, "
                   r"3.4028e\+38\]\), got " + re.escape(repr(softcap)))
        with pytest.raises(ValueError, match=message):
            cross_entropy_with_grad(logits, target, softcap=softcap)
        with pytest.raises(ValueError, match="softcap must be None or a finite float > 0 that is a normal fp32"):
            chunked_linear_cross_entropy(logits, torch.randn(7, 10, device=device), target[:4] % 7, softcap=softcap)
    for softcap in (torch.finfo(torch.float32).max, torch.finfo(torch.float32).tiny):
        check_against_reference(logits, target, softcap=softcap)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_inplace_backward_with_no_rows_of_any_stride(device, reduction):
    # the fuzzer's finding: a (0, V) tensor with strides (1, 0) (rows of an expand()ed column, sliced to none) was
    # refused for inplace_backward=True as not unit-stride along the vocabulary; with no rows nothing is written, and
    # it now gives what inplace_backward=False gives
    target = torch.zeros(0, dtype=torch.int64, device=device)
    results = []
    for inplace in (False, True):
        column = torch.randn(5, 1, device=device, requires_grad=True)
        logits = (column * 2.0).expand(5, 10)[:0]
        assert logits.shape == (0, 10) and logits.stride() == (1, 0)
        out = cross_entropy_with_grad(logits, target, reduction=reduction, inplace_backward=inplace,
                                      return_per_token_loss=True, return_lse=True)
        out.loss.sum().backward()
        results.append((out, column.grad))
    (plain, plain_grad), (inplace, inplace_grad) = results
    if reduction == "mean":  # 0 / 0, as torch gives
        assert plain.loss.isnan().item() and inplace.loss.isnan().item()
    else:
        assert torch.equal(plain.loss, inplace.loss)
    assert inplace.per_token_loss.shape == plain.per_token_loss.shape == (0,) and inplace.lse.shape == (0,)
    assert torch.equal(inplace_grad, torch.zeros(5, 1, device=device)) and torch.equal(plain_grad, inplace_grad)


@pytest.mark.gpu
@pytest.mark.parametrize("config", [dict(one_pass=True), dict(one_pass=True, one_pass_hold=False),
                                    dict(one_pass=True, one_pass_hold=False, one_pass_split=2), dict(one_pass=False)],
                         ids=["one-pass-held", "one-pass-ring", "one-pass-split", "two-kernels"])
def test_gpu_large_logits_keep_fp32_accuracy(config):
    # test_large_logits_keep_fp32_accuracy and test_label_smoothing_with_huge_logits_does_not_overflow on the
    # compiled kernels, the one-pass Gluon kernel's three layouts included (its sweep 1 took exp2(z log2(e) -
    # max log2(e)), whose rounding of max log2(e) went into the sum, and its sweep 2 exp2(z log2(e) - lse log2(e)))
    if config["one_pass"] and torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("the one-pass kernel is for Hopper")
    rows, V = 64, 50304  # a ragged last tile
    for label_smoothing, offset in ((0.0, 1e4), (0.1, 6e4)):
        logits = torch.randn(rows, V, device="cuda") * 3 + offset
        target = torch.randint(0, V, (rows,), device="cuda")
        leaf = logits.clone().requires_grad_(True)
        with _tuning.override(ce.TUNING_OP, **config):
            loss = cross_entropy_with_grad(leaf, target, reduction="none", label_smoothing=label_smoothing)
        loss.sum().backward()
        ref_leaf = logits.double().requires_grad_(True)
        ref = F.cross_entropy(ref_leaf, target, reduction="none", label_smoothing=label_smoothing)
        ref.sum().backward()
        assert (loss.double() - ref).abs().max().item() < 1e-6 * ref.abs().max().item()
        assert (leaf.grad.double() - ref_leaf.grad).abs().max().item() < 1e-6 * ref_leaf.grad.abs().max().item()
    # logits around 3e38: their sum overflows fp32, every z_j - row_max and their sum does not
    logits = (torch.randn(rows, V, device="cuda", dtype=torch.float64) * 1e32 + 3e38).float()
    target = torch.randint(0, V, (rows,), device="cuda")
    with _tuning.override(ce.TUNING_OP, **config):
        loss = cross_entropy_with_grad(logits, target, reduction="none", label_smoothing=0.3)
    ref = F.cross_entropy(logits.double(), target, reduction="none", label_smoothing=0.3)
    assert torch.isfinite(loss).all() and ((loss.double() - ref).abs() <= 1e-6 * ref.abs()).all()
