"""causal_conv1d / causal_conv1d_update against the fp64 reference: every option, layouts, gradients, packed
sequences, carried states, decoding steps, bad input. Sizes stay small: the CPU runs the kernels interpreted."""
import pytest
import torch

import greyhound
from greyhound import _tuning
from greyhound.ops import causal_conv1d as ops
from greyhound.ops.causal_conv1d import causal_conv1d, causal_conv1d_reference, causal_conv1d_update

VALUE_TOLERANCE = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1e-2}
GRAD_TOLERANCE = {torch.float32: 1e-5, torch.float16: 5e-3, torch.bfloat16: 2e-2}


def rel_err(out, ref):
    out, ref = out.detach().double(), ref.detach().double()
    return ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def make_x(batch, dim, seq_len, layout, device, dtype=torch.float32):
    """x (B, D, L) stored (B, D, L)-contiguous, channel-last (a transposed (B, L, D)), or as a strided slice."""
    if layout == "contiguous":
        return torch.randn(batch, dim, seq_len, device=device).to(dtype)
    if layout == "channel_last":
        return torch.randn(batch, seq_len, dim, device=device).to(dtype).transpose(1, 2)
    if layout == "sliced":  # every other channel, from an offset along L: not contiguous, read in place
        return torch.randn(batch, 2 * dim, seq_len + 3, device=device).to(dtype)[:, ::2, 3:]
    raise ValueError(layout)


def make_params(dim, width, device, dtype=torch.float32, with_bias=True):
    weight = (torch.randn(dim, width, device=device) / width**0.5).to(dtype)
    bias = torch.randn(dim, device=device).to(dtype) if with_bias else None
    return weight, bias


def check_against_reference(x, weight, bias, *, initial_states=None, grad_out="randn", **options):
    """Output and the gradient of every tensor input vs fp64 autograd of the reference on the same inputs."""
    tensors = {"x": x, "weight": weight, "bias": bias, "initial_states": initial_states}
    leaves = {n: t.detach().clone().requires_grad_() for n, t in tensors.items() if t is not None}
    refs = {n: t.detach().double().requires_grad_() for n, t in leaves.items()}
    out = causal_conv1d(leaves["x"], leaves["weight"], leaves.get("bias"),
                        initial_states=leaves.get("initial_states"), **options)
    ref = causal_conv1d_reference(refs["x"], refs["weight"], refs.get("bias"),
                                  initial_states=refs.get("initial_states"), **options)
    assert out.dtype == x.dtype and out.shape == x.shape
    assert rel_err(out, ref) < VALUE_TOLERANCE[x.dtype]
    if grad_out == "sum":  # a stride-0 expanded upstream gradient
        out.sum().backward()
        ref.sum().backward()
    else:
        weights = torch.randn_like(ref)
        out.backward(weights.to(out.dtype))
        ref.backward(weights)
    for name, leaf in leaves.items():
        assert leaf.grad.dtype == leaf.dtype and leaf.grad.shape == leaf.shape, name
        assert grad_err(leaf.grad, refs[name].grad) < GRAD_TOLERANCE[x.dtype], name
    return out


def grad_err(grad, ref):
    """rel_err with the reference's norm floored at 1: a gradient is a sum of terms of order 1 here (unit-scale x,
    upstream gradients, silu' <= 1.1), and where fresh inputs make a short sum cancel (D=1, L=3: a bias gradient of
    0.0012 from three terms) the fp32 rounding of its terms is still ~1e-7 absolute, not relative to the sum."""
    grad, ref = grad.detach().double(), ref.detach().double()
    return ((grad - ref).norm() / ref.norm().clamp_min(1.0)).item()


# ------------------------------------------------------------------------------------------------------------------
# Values and gradients
# ------------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("layout", ["contiguous", "channel_last", "sliced"])
@pytest.mark.parametrize("activation", [None, "silu"])
def test_layouts_and_activations(device, layout, activation):
    x = make_x(2, 37, 53, layout, device)
    weight, bias = make_params(37, 4, device)
    check_against_reference(x, weight, bias, activation=activation)


@pytest.mark.parametrize("width, dilation, layout, activation, with_bias", [
    (2, 1, "contiguous", "silu", True),
    (3, 2, "channel_last", None, False),
    (4, 3, "channel_last", "silu", False),
    (5, 3, "sliced", "silu", True),
    (6, 1, "contiguous", None, True),
    (7, 2, "channel_last", "silu", True),
    (8, 3, "contiguous", "silu", False),
    (8, 1, "channel_last", None, True),
])
def test_widths_and_dilations(device, width, dilation, layout, activation, with_bias):
    x = make_x(2, 21, 45, layout, device)
    weight, bias = make_params(21, width, device, with_bias=with_bias)
    check_against_reference(x, weight, bias, activation=activation, dilation=dilation)


@pytest.mark.parametrize("layout, extra, activation", [
    ("contiguous", "plain", None), ("contiguous", "seq_idx", None), ("contiguous", "initial_states", None),
    ("channel_last", "plain", None), ("channel_last", "walk", None), ("channel_last", "seq_idx", None),
    ("channel_last", "initial_states", None), ("contiguous", "plain", "silu"), ("channel_last", "walk", "silu"),
    ("contiguous", "seq_idx", "silu")])
def test_inf_tap_gradients_match_reference(device, layout, extra, activation):
    """An inf tap: x's gradient is ±inf where a real output reads it through that tap and finite where none does
    (the last (W − 1)·dilation positions, the positions whose tap reaches into another sequence), as the reference
    and F.conv1d over a left-padded x; a 0-loaded grad_out past L times the tap gave nan there until session 55.
    With silu the tap makes the channel's pre-activation ±inf or nan, so its gradient is nan everywhere, in both."""
    dim, width, dilation, seq_len = 5, 4, 2, 23
    x = make_x(2, dim, seq_len, layout, device)
    weight, bias = make_params(dim, width, device)
    weight[1, 2] = float("inf")
    weight[3, 0] = float("-inf")
    options = dict(dilation=dilation, activation=activation)
    if extra == "seq_idx":
        options["seq_idx"] = torch.tensor([0] * 9 + [4] * 14, device=device)[None].expand(2, -1).contiguous()
    if extra == "initial_states":
        options["initial_states"] = torch.randn(2, dim, (width - 1) * dilation, device=device)
    leaves = {"x": x, "weight": weight, "bias": bias, **{k: v for k, v in options.items() if k == "initial_states"}}
    ours = {n: t.detach().clone().requires_grad_() for n, t in leaves.items()}
    refs = {n: t.detach().double().requires_grad_() for n, t in leaves.items()}
    rest = {k: v for k, v in options.items() if k != "initial_states"}
    with _tuning.override("causal_conv1d", walk=extra == "walk"):
        out = causal_conv1d(ours["x"], ours["weight"], ours["bias"], initial_states=ours.get("initial_states"),
                            **rest)
        grad_out = torch.randn(2, dim, seq_len, device=device)
        out.backward(grad_out)
    ref = causal_conv1d_reference(refs["x"], refs["weight"], refs["bias"], initial_states=refs.get("initial_states"),
                                  **rest)
    ref.backward(grad_out.double())
    for name in ("x", "initial_states"):
        if name in ours:
            torch.testing.assert_close(ours[name].grad, refs[name].grad.float(), equal_nan=True, msg=name)
    if activation == "silu":
        assert torch.isnan(ours["x"].grad[:, 1]).all() and torch.isfinite(ours["x"].grad[:, [0, 2, 4]]).all()
        return
    # the tail of channel 1's x gradient: finite (its reads through the inf tap fall past L)
    reach = (width - 1 - 2) * dilation
    assert torch.isfinite(ours["x"].grad[:, 1, seq_len - reach:]).all()
    assert torch.isinf(ours["x"].grad[:, 1, : seq_len - reach]).any()


def test_odd_sizes_and_summed_output(device):
    """B=1, D=1, L shorter than the kernel's reach, and a stride-0 upstream gradient from out.sum()."""
    for dim, seq_len, layout in [(1, 3, "contiguous"), (5, 1, "channel_last"), (3, 7, "channel_last")]:
        x = make_x(1, dim, seq_len, layout, device)
        weight, bias = make_params(dim, 4, device)
        check_against_reference(x, weight, bias, activation="silu", dilation=2, grad_out="sum")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_inputs(device, dtype):
    """fp16/bf16 are loaded and upcast before any arithmetic: fp32 math, outputs and gradients in the input dtype."""
    x = make_x(2, 24, 40, "channel_last", device, dtype)
    weight, bias = make_params(24, 4, device, dtype)
    init = torch.randn(2, 24, 3, device=device).to(dtype)
    check_against_reference(x, weight, bias, activation="silu", initial_states=init)


def test_output_keeps_the_layout_and_inputs_are_untouched(device):
    x = make_x(2, 16, 33, "channel_last", device)
    weight, bias = make_params(16, 3, device)
    before = x.clone()
    out = causal_conv1d(x, weight, bias, activation="silu")
    assert out.stride() == x.stride() and torch.equal(x, before)
    assert causal_conv1d(make_x(2, 16, 33, "sliced", device), weight).is_contiguous()


@pytest.mark.parametrize("needs", ["x", "weight", "bias", "weight+bias"])
def test_partial_gradients(device, needs):
    """Only some inputs require a gradient: the others get None and the kernel skips their work."""
    x = make_x(2, 19, 30, "contiguous", device)
    weight, bias = make_params(19, 3, device)
    leaves = {"x": x.clone(), "weight": weight.clone(), "bias": bias.clone()}
    for name in needs.split("+"):
        leaves[name].requires_grad_()
    out = causal_conv1d(leaves["x"], leaves["weight"], leaves["bias"], activation="silu", dilation=2)
    refs = {n: t.detach().double().requires_grad_(t.requires_grad) for n, t in leaves.items()}
    ref = causal_conv1d_reference(refs["x"], refs["weight"], refs["bias"], activation="silu", dilation=2)
    grad = torch.randn_like(ref)
    out.backward(grad.float())
    ref.backward(grad)
    for name, leaf in leaves.items():
        if name in needs.split("+"):
            assert rel_err(leaf.grad, refs[name].grad) < 1e-5, name
        else:
            assert leaf.grad is None, name


def test_no_grad_and_saved_tensors(device):
    """Nothing but the inputs is saved for the backward (the pre-activation is recomputed)."""
    x = make_x(2, 8, 20, "channel_last", device).requires_grad_()
    weight, bias = make_params(8, 4, device)
    with torch.no_grad():
        assert not causal_conv1d(x, weight, bias, activation="silu").requires_grad
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        causal_conv1d(x, weight, bias, activation="silu")
    assert {t.data_ptr() for t in saved} <= {x.data_ptr(), weight.data_ptr(), bias.data_ptr()}


@pytest.mark.parametrize("blocks", [ops._Blocks(8, 16, 4), ops._Blocks(4, 8, 1)])
def test_small_tiles_many_chunks(device, monkeypatch, blocks):
    """Tiny tiles: many L tiles per program, several programs along L, initial-state tiles, partial-row sums."""
    monkeypatch.setattr(ops, "_BLOCKS_OVERRIDE", blocks)
    monkeypatch.setattr(ops, "_sm_count", lambda device: 2)
    x = make_x(2, 11, 50, "channel_last", device)
    weight, bias = make_params(11, 4, device)
    seq_idx = torch.tensor([[0] * 20 + [1] * 30, [3] * 50], device=device)
    check_against_reference(x, weight, bias, activation="silu", dilation=3, seq_idx=seq_idx,
                            initial_states=torch.randn(2, 11, 9, device=device))


@pytest.mark.parametrize("layout", ["contiguous", "channel_last"])
@pytest.mark.parametrize("blocks", [None, ops._Blocks(4, 8, 1)])
def test_two_pass_backward_variant(device, monkeypatch, layout, blocks):
    """The bwd_two_pass tuning variant (g = grad_out·silu'(pre) into a buffer, then the activation-free backward):
    every gradient against fp64 with packed sequences, initial states and dilation, and the one-pass gradients."""
    from greyhound import _tuning
    if blocks is not None:
        monkeypatch.setattr(ops, "_BLOCKS_OVERRIDE", blocks)
        monkeypatch.setattr(ops, "_sm_count", lambda device: 2)
    x = make_x(2, 11, 50, layout, device)
    weight, bias = make_params(11, 4, device)
    seq_idx = torch.tensor([[0] * 20 + [1] * 30, [3] * 50], device=device)
    options = dict(activation="silu", dilation=3, seq_idx=seq_idx, initial_states=torch.randn(2, 11, 9, device=device))
    leaves = [t.detach().clone().requires_grad_() for t in (x, weight, bias, options["initial_states"])]
    grad_out = torch.randn(x.shape, device=device)

    def grads():
        for leaf in leaves:
            leaf.grad = None
        causal_conv1d(*leaves[:3], **{**options, "initial_states": leaves[3]}).backward(grad_out)
        return [leaf.grad.clone() for leaf in leaves]

    one_pass = grads()
    first_passes = []
    launch = ops._launch_silu_grad
    monkeypatch.setattr(ops, "_launch_silu_grad", lambda *args: first_passes.append(1) or launch(*args))
    with _tuning.override("causal_conv1d", bwd_two_pass=True):
        check_against_reference(x, weight, bias, **options)
        two_pass = grads()
    assert len(first_passes) == 2  # the variant ran (once per backward)
    for a, b in zip(one_pass, two_pass):
        assert rel_err(b, a) < 1e-6


def test_reference_paths_agree(device):
    """The reference's F.conv1d path and its tap-by-tap seq_idx path give the same for one sequence per row."""
    x = torch.randn(2, 6, 30, dtype=torch.float64, device=device)
    weight, bias = torch.randn(6, 4, dtype=torch.float64, device=device), torch.randn(6, dtype=torch.float64,
                                                                                        device=device)
    init = torch.randn(2, 6, 6, dtype=torch.float64, device=device)
    one_sequence = torch.full((2, 30), 7, device=device)
    by_conv = causal_conv1d_reference(x, weight, bias, activation="silu", dilation=2, initial_states=init)
    by_taps = causal_conv1d_reference(x, weight, bias, activation="silu", dilation=2, initial_states=init,
                                      seq_idx=one_sequence)
    assert rel_err(by_taps, by_conv) < 1e-12


# ------------------------------------------------------------------------------------------------------------------
# Initial and final states, packed sequences
# ------------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("layout, dilation, seq_len", [("contiguous", 1, 40), ("channel_last", 2, 40),
                                                       ("channel_last", 3, 4)])
def test_initial_states_values_and_grads(device, layout, dilation, seq_len):
    """Initial states are the inputs before t = 0 (seq_len=4 < (W − 1)·dilation = 9: they feed every output)."""
    x = make_x(2, 13, seq_len, layout, device)
    weight, bias = make_params(13, 4, device)
    init = torch.randn(2, 13, 3 * dilation, device=device)
    check_against_reference(x, weight, bias, activation="silu", dilation=dilation, initial_states=init)


def test_initial_states_continue_the_sequence(device):
    """Running on x[..., s:] with the inputs before s as initial states gives the whole run's outputs from s on."""
    x = make_x(2, 10, 30, "channel_last", device)
    weight, bias = make_params(10, 3, device)
    whole = causal_conv1d(x, weight, bias, activation="silu", dilation=2)
    tail = causal_conv1d(x[..., 12:], weight, bias, activation="silu", dilation=2, initial_states=x[..., 8:12])
    assert rel_err(tail, whole[..., 12:]) < 1e-6


@pytest.mark.parametrize("layout, width, dilation, chunk_lengths", [
    ("channel_last", 4, 1, [5, 1, 2, 17, 9]),
    ("contiguous", 3, 3, [7, 4, 23]),
    ("sliced", 2, 2, [1, 1, 32]),
])
def test_chunked_with_carried_states_equals_whole(device, layout, width, dilation, chunk_lengths):
    x = make_x(2, 11, sum(chunk_lengths), layout, device)
    weight, bias = make_params(11, width, device)
    state_len = (width - 1) * dilation
    whole, final = causal_conv1d(x, weight, bias, activation="silu", dilation=dilation, return_final_states=True)
    assert final.shape == (2, 11, state_len) and torch.equal(final, x[..., -state_len:])
    states, outputs, start = None, [], 0
    for length in chunk_lengths:
        out, states = causal_conv1d(x[..., start:start + length], weight, bias, activation="silu", dilation=dilation,
                                    initial_states=states, return_final_states=True)
        outputs.append(out)
        start += length
        expected = torch.cat([x.new_zeros(2, 11, state_len), x[..., :start]], -1)[..., -state_len:]
        assert torch.equal(states, expected)  # the last inputs, reaching back into earlier chunks
    assert rel_err(torch.cat(outputs, -1), whole) < 1e-6


def test_final_states_gradients(device):
    """Final states are differentiable in x and in the initial states they still hold (L < (W − 1)·dilation)."""
    x = torch.randn(2, 5, 4, device=device, requires_grad=True)
    init = torch.randn(2, 5, 6, device=device, requires_grad=True)
    weight, _ = make_params(5, 4, device)
    out, final = causal_conv1d(x, weight, initial_states=init, dilation=2, return_final_states=True)
    assert torch.equal(final, torch.cat([init[..., 4:], x], -1))
    grad = torch.randn_like(final)
    (final * grad).sum().backward()
    assert torch.equal(x.grad, grad[..., 2:]) and torch.equal(init.grad[..., 4:], grad[..., :2])
    assert (init.grad[..., :4] == 0).all()


def pack(sequences, device):
    """(1, D, L) of the given (D, L_i) sequences back to back, and their seq_idx (ids need not start at 0)."""
    x = torch.cat(sequences, -1)[None]
    seq_idx = torch.cat([torch.full((s.shape[-1],), 3 + i, device=device) for i, s in enumerate(sequences)])[None]
    return x, seq_idx


@pytest.mark.parametrize("layout", ["contiguous", "channel_last"])
@pytest.mark.parametrize("seq_dtype", [torch.int32, torch.int64])
def test_seq_idx_equals_separate_runs(device, layout, seq_dtype):
    dim, width, dilation = 9, 4, 2
    lengths = [11, 1, 3, 20, 4]  # shorter than one step back (dilation 2), shorter than the reach (6)
    sequences = [torch.randn(dim, n, device=device) for n in lengths]
    x, seq_idx = pack(sequences, device)
    if layout == "channel_last":
        x = x.transpose(1, 2).contiguous().transpose(1, 2)
    weight, bias = make_params(dim, width, device)
    init = torch.randn(1, dim, (width - 1) * dilation, device=device)
    packed, final = causal_conv1d(x, weight, bias, activation="silu", dilation=dilation, seq_idx=seq_idx.to(seq_dtype),
                                  initial_states=init, return_final_states=True)
    start = 0
    for i, seq in enumerate(sequences):
        alone = causal_conv1d(seq[None], weight, bias, activation="silu", dilation=dilation,
                              initial_states=init if i == 0 else None)  # initial states: the first sequence only
        assert rel_err(packed[..., start:start + seq.shape[-1]], alone) < 1e-6, i
        start += seq.shape[-1]
    last = sequences[-1]
    expected_final = torch.cat([x.new_zeros(1, dim, 6), last[None]], -1)[..., -6:]  # earlier sequences': 0
    assert torch.equal(final, expected_final)
    check_against_reference(x, weight, bias, activation="silu", dilation=dilation, seq_idx=seq_idx,
                            initial_states=init)


def test_seq_idx_batch_rows_and_chunks(device):
    """Two rows with their own boundaries, run in two chunks with carried states: equal to the whole run (the
    boundary at the chunk edge continues the same sequence id, as chunked varlen prefill does)."""
    x = make_x(2, 7, 36, "channel_last", device)
    weight, bias = make_params(7, 3, device)
    seq_idx = torch.tensor([[0] * 10 + [1] * 25 + [2] * 1, [5] * 3 + [6] * 33], device=device)
    whole, whole_final = causal_conv1d(x, weight, bias, activation="silu", seq_idx=seq_idx, return_final_states=True)
    first, states = causal_conv1d(x[..., :22], weight, bias, activation="silu", seq_idx=seq_idx[:, :22],
                                  return_final_states=True)
    second, final = causal_conv1d(x[..., 22:], weight, bias, activation="silu", seq_idx=seq_idx[:, 22:],
                                  initial_states=states, return_final_states=True)
    assert rel_err(torch.cat([first, second], -1), whole) < 1e-6 and torch.equal(final, whole_final)
    # row 0 ends with a one-step sequence: the input before it belongs to another sequence, so its slot is 0
    assert torch.equal(whole_final[0], torch.stack([x.new_zeros(7), x[0, :, -1]], -1))
    assert torch.equal(whole_final[1], x[1, :, -2:])


# ------------------------------------------------------------------------------------------------------------------
# causal_conv1d_update
# ------------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("width, dilation, activation, with_bias", [(4, 1, "silu", True), (2, 3, None, False),
                                                                     (7, 2, "silu", True)])
def test_update_equals_full_conv_last_step(device, width, dilation, activation, with_bias):
    batch, dim, steps = 2, 20, 6
    state_len = (width - 1) * dilation
    weight, bias = make_params(dim, width, device, with_bias=with_bias)
    history = torch.randn(batch, dim, state_len, device=device)
    inputs = torch.randn(batch, steps, dim, device=device)  # x_t = inputs[:, t] is a strided (B, D) view
    full = causal_conv1d_reference(inputs.transpose(1, 2).double(), weight.double(),
                                   None if bias is None else bias.double(), activation=activation,
                                   dilation=dilation, initial_states=history.double())
    conv_state = history.clone()
    version = conv_state._version
    for t in range(steps):
        out = causal_conv1d_update(inputs[:, t], conv_state, weight, bias, activation=activation, dilation=dilation)
        assert out.shape == (batch, dim) and rel_err(out, full[..., t]) < 1e-6, t
    expected_state = torch.cat([history, inputs.transpose(1, 2)], -1)[..., -state_len:]
    assert torch.equal(conv_state, expected_state) and conv_state._version > version


def test_update_strided_state_and_half_precision(device):
    """A non-contiguous conv_state (a slice of a larger cache) is rolled in place; fp16 math is fp32 inside."""
    weight, bias = make_params(12, 4, device, torch.float16)
    cache = torch.randn(3, 12, 8, device=device).half()
    conv_state = cache[:, :, 2:5]  # (B, D, 3), stride 8 along D
    x_t = torch.randn(3, 12, device=device).half()
    expected = causal_conv1d_reference(x_t[..., None].double(), weight.double(), bias.double(), activation="silu",
                                       initial_states=conv_state.double())[..., -1]
    untouched = cache[:, :, 5:].clone()
    before = conv_state.clone()
    out = causal_conv1d_update(x_t, conv_state, weight, bias, activation="silu")
    assert out.dtype == torch.float16 and rel_err(out, expected) < 2e-3
    assert torch.equal(conv_state, torch.cat([before[..., 1:], x_t[..., None]], -1))
    assert torch.equal(cache[:, :, 5:], untouched)


@pytest.mark.parametrize("bias_layout", ["strided", "expanded"])
def test_non_contiguous_bias(device, bias_layout):
    """The kernels index bias[d] at bias_ptr + d: a strided or expand()ed bias is read as the values it holds."""
    dim, width = 5, 4
    weight, _ = make_params(dim, width, device)
    if bias_layout == "strided":
        bias = torch.randn(2 * dim, device=device)[::2]
    else:
        bias = torch.randn(1, device=device).expand(dim)
    x = make_x(2, dim, 9, "contiguous", device)
    check_against_reference(x, weight, bias, activation="silu")
    conv_state = torch.randn(2, dim, width - 1, device=device)
    x_t = torch.randn(2, dim, device=device)
    expected = causal_conv1d_reference(x_t[..., None].double(), weight.double(), bias.double(),
                                       initial_states=conv_state.double())[..., -1]
    assert rel_err(causal_conv1d_update(x_t, conv_state, weight, bias), expected) < 1e-6


def test_update_refuses_an_overlapping_state(device):
    """conv_state is rolled in place: an expand()ed one (rows sharing memory) is refused, not silently mixed."""
    weight, bias = make_params(4, 3, device)
    conv_state = torch.randn(1, 4, 2, device=device).expand(3, 4, 2)
    with pytest.raises(ValueError, match="conv_state .*overlapping"):
        causal_conv1d_update(torch.randn(3, 4, device=device), conv_state, weight, bias)


def test_update_refuses_a_state_overlapping_without_a_zero_stride(device):
    """Rows sharing memory through as_strided (no zero stride; torch's own overlap check says "too hard") are refused;
    a permuted layout that does not overlap is rolled in place as before."""
    weight, bias = make_params(3, 4, device)
    x_t = torch.randn(2, 3, device=device)
    overlapping = torch.randn(20, device=device).as_strided((2, 3, 3), (3, 1, 1))
    with pytest.raises(ValueError, match=r"conv_state .*overlapping memory.*strides \(3, 1, 1\)"):
        causal_conv1d_update(x_t, overlapping, weight, bias)
    permuted = torch.randn(3, 3, 2, device=device).permute(2, 1, 0)  # (2, 3, 3), strides (1, 2, 6)
    expected = causal_conv1d_reference(x_t[..., None].double(), weight.double(), bias.double(),
                                       initial_states=permuted.double())[..., -1]
    assert rel_err(causal_conv1d_update(x_t, permuted, weight, bias), expected) < 1e-6


# ------------------------------------------------------------------------------------------------------------------
# Bad input
# ------------------------------------------------------------------------------------------------------------------
def test_public_namespace():
    assert greyhound.causal_conv1d is causal_conv1d and greyhound.causal_conv1d_update is causal_conv1d_update


@pytest.mark.parametrize("bad, error, words", [
    (dict(x=torch.randn(4, 10)), ValueError, "x must be 3-D"),
    (dict(x=torch.randint(0, 3, (2, 4, 10))), TypeError, "x must have dtype"),
    (dict(x=torch.randn(2, 4, 10, dtype=torch.float64)), TypeError, "x must have dtype"),
    (dict(weight=torch.randn(4, 3, dtype=torch.float16)), TypeError, "weight must have x's dtype"),
    (dict(weight=torch.randn(4, 1, 3)), ValueError, "weight must be 2-D"),
    (dict(weight=torch.randn(5, 3)), ValueError, r"weight must have shape \(D, W\) = \(4, W\)"),
    (dict(weight=torch.randn(4, 1)), ValueError, r"W in \[2, 8\]"),
    (dict(weight=torch.randn(4, 9)), ValueError, r"W in \[2, 8\]"),
    (dict(bias=torch.randn(5)), ValueError, "bias must have shape"),
    (dict(bias=torch.randn(4, dtype=torch.bfloat16)), TypeError, "bias must have x's dtype"),
    (dict(activation="gelu"), ValueError, "activation must be one of None, 'silu'"),
    (dict(dilation=0), ValueError, "dilation must be an int >= 1"),
    (dict(dilation=2.0), TypeError, "dilation"),
    (dict(dilation=True), TypeError, "dilation"),
    (dict(seq_idx=torch.zeros(2, 10)), TypeError, "seq_idx must have dtype"),
    (dict(seq_idx=torch.zeros(2, 9, dtype=torch.int32)), ValueError, r"seq_idx must have shape \(B, L\)"),
    (dict(seq_idx=torch.tensor([[0] * 5 + [1] * 5, [0] * 4 + [2, 1] + [2] * 4])), ValueError,
     r"non-decreasing along L, got seq_idx\[1, 5\] = 1 after 2"),
    (dict(initial_states=torch.randn(2, 4, 3)), ValueError, r"initial_states must have shape .* = \(2, 4, 2\)"),
    (dict(initial_states=torch.randn(2, 4, 2, dtype=torch.float16)), TypeError, "initial_states must have x's"),
    (dict(return_final_states="yes"), TypeError, "return_final_states"),
])
def test_bad_input(device, bad, error, words):
    args = dict(x=torch.randn(2, 4, 10), weight=torch.randn(4, 3), bias=torch.randn(4), activation=None,
                dilation=1, seq_idx=None, initial_states=None, return_final_states=False)
    args.update(bad)
    args = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in args.items()}
    with pytest.raises(error, match=words):
        causal_conv1d(args.pop("x"), args.pop("weight"), args.pop("bias"), **args)


@pytest.mark.parametrize("bad, error, words", [
    (dict(x_t=torch.randn(2, 4, 1)), ValueError, "x_t must be 2-D"),
    (dict(conv_state=torch.randn(2, 4, 3)), ValueError, r"conv_state must have shape .* = \(2, 4, 2\)"),
    (dict(conv_state=torch.randn(2, 4, 2).half()), TypeError, "conv_state must have x_t's dtype"),
    (dict(weight=torch.randn(3, 3)), ValueError, r"x_t's D is 4"),
    (dict(dilation=2), ValueError, "conv_state must have shape"),
    (dict(activation="relu"), ValueError, "activation"),
])
def test_update_bad_input(device, bad, error, words):
    args = dict(x_t=torch.randn(2, 4), conv_state=torch.randn(2, 4, 2), weight=torch.randn(4, 3), bias=None,
                activation=None, dilation=1)
    args.update(bad)
    args = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in args.items()}
    with pytest.raises(error, match=words):
        causal_conv1d_update(**args)


def test_cpu_tensor_without_interpreter_is_refused(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(ValueError, match="x must be a CUDA tensor"):
        causal_conv1d(torch.randn(1, 2, 5), torch.randn(2, 3))


# ------------------------------------------------------------------------------------------------------------------
# GPU only: the tracked shape in bf16 with compiled kernels (vectorised loads, real block sizes)
# ------------------------------------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["channel_last", "contiguous"])
def test_gpu_bf16_tracked_shape(layout):
    x = make_x(8, 4096, 2048, layout, "cuda", torch.bfloat16)
    weight, bias = make_params(4096, 4, "cuda", torch.bfloat16)
    leaves = [t.detach().clone().requires_grad_() for t in (x, weight, bias)]
    refs = [t.detach().double().requires_grad_() for t in leaves]
    out = causal_conv1d(*leaves, activation="silu")
    ref = causal_conv1d_reference(*refs, activation="silu")
    assert rel_err(out, ref) < 1e-2
    grad = torch.randn_like(ref)
    out.backward(grad.bfloat16())
    ref.backward(grad)
    for name, leaf, ref_leaf in zip(("x", "weight", "bias"), leaves, refs):
        assert rel_err(leaf.grad, ref_leaf.grad) < 1e-2, name


@pytest.mark.gpu
def test_gpu_bf16_options():
    """seq_idx, initial states and dilation at a moderate size, with compiled kernels."""
    x = make_x(2, 1024, 777, "channel_last", "cuda", torch.bfloat16)
    weight, bias = make_params(1024, 4, "cuda", torch.bfloat16)
    seq_idx = torch.repeat_interleave(torch.arange(3, device="cuda"), torch.tensor([100, 400, 277], device="cuda"))
    check_against_reference(x, weight, bias, activation="silu", dilation=2, seq_idx=seq_idx.expand(2, -1),
                            initial_states=torch.randn(2, 1024, 6, device="cuda").bfloat16())


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["contiguous", "channel_last"])
def test_gpu_bf16_two_pass_backward_variant(layout):
    """The bwd_two_pass tuning variant with compiled kernels: g rounded to bf16 once, gradients within bf16's
    tolerance of fp64."""
    from greyhound import _tuning
    x = make_x(2, 1024, 777, layout, "cuda", torch.bfloat16)
    weight, bias = make_params(1024, 4, "cuda", torch.bfloat16)
    seq_idx = torch.repeat_interleave(torch.arange(3, device="cuda"), torch.tensor([100, 400, 277], device="cuda"))
    with _tuning.override("causal_conv1d", bwd_two_pass=True):
        check_against_reference(x, weight, bias, activation="silu", dilation=2, seq_idx=seq_idx.expand(2, -1),
                                initial_states=torch.randn(2, 1024, 6, device="cuda").bfloat16())


def test_eager_path_skips_the_op_dispatch(device):
    # eager calls take the eager twin (greyhound._library: the launchers without the torch.library dispatch); both
    # give the registered op's results, and a second-order gradient is refused rather than silently wrong
    x = torch.randn(2, 24, 37, device=device).requires_grad_()
    weight = torch.randn(24, 4, device=device).requires_grad_()
    out = causal_conv1d(x, weight, activation="silu", dilation=2)
    assert type(out.grad_fn).__name__ == "causal_conv1d_fwd_eagerBackward"
    via_op = torch.ops.greyhound.causal_conv1d_fwd(x, weight, None, None, None, True, 2)
    assert type(via_op.grad_fn).__name__ != "causal_conv1d_fwd_eagerBackward"
    grad = torch.randn_like(out)
    eager_grads = torch.autograd.grad(out, (x, weight), grad)
    op_grads = torch.autograd.grad(via_op, (x, weight), grad)
    for eager, op in zip((out, *eager_grads), (via_op, *op_grads)):
        torch.testing.assert_close(eager, op, rtol=0, atol=0)
    with torch.no_grad():
        torch.testing.assert_close(causal_conv1d(x, weight, activation="silu", dilation=2), out.detach(), rtol=0, atol=0)
    (grad_x,) = torch.autograd.grad(causal_conv1d(x, weight).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="greyhound.causal_conv1d_fwd: its backward is not differentiable"):
        torch.autograd.grad(grad_x.sum(), x)


@pytest.mark.parametrize("scratch", [False, True], ids=["gather", "scratch"])
@pytest.mark.parametrize("layout", ["contiguous", "channel_last", "sliced"])
@pytest.mark.parametrize("width,dilation,block_l", [(4, 1, None), (2, 1, 4), (3, 2, 8), (8, 1, 16), (4, 5, None)])
def test_gather_backward_variant(device, monkeypatch, layout, width, dilation, block_l, scratch):
    """The bwd_gather tuning variant (g once per position, shifted reads gathered along L): every gradient against
    fp64 and against the general kernel, tiles whose halo rows cross tile and sequence ends, many chunks."""
    from greyhound import _tuning
    monkeypatch.setattr(ops, "_sm_count", lambda device: 2)
    x = make_x(2, 13, 61, layout, device)
    weight, bias = make_params(13, width, device)
    grad_out = torch.randn(x.shape, device=device)

    def grads():
        leaves = [t.detach().clone().requires_grad_() for t in (x, weight, bias)]
        causal_conv1d(*leaves, activation="silu", dilation=dilation).backward(grad_out)
        return [leaf.grad for leaf in leaves]

    with _tuning.override("causal_conv1d", bwd_gather=False):
        general = grads()
    launches = []
    launch = ops._launch_gather_backward
    monkeypatch.setattr(ops, "_launch_gather_backward", lambda *args: launches.append(args[-1]) or launch(*args))
    tuning = dict(bwd_gather=True, bwd_gather_scratch=scratch)
    if block_l is not None:
        tuning["bwd_gather_block_l"] = block_l
    with _tuning.override("causal_conv1d", **tuning):
        check_against_reference(x, weight, bias, activation="silu", dilation=dilation)
        gathered = grads()
        # only x needs a gradient; then only weight
        x_only = x.detach().clone().requires_grad_()
        causal_conv1d(x_only, weight, bias, activation="silu", dilation=dilation).backward(grad_out)
        weight_only = weight.detach().clone().requires_grad_()
        causal_conv1d(x, weight_only, bias, activation="silu", dilation=dilation).backward(grad_out)
        # not taken without the activation: the general kernel runs
        causal_conv1d(x.detach().clone().requires_grad_(), weight, bias, dilation=dilation).sum().backward()
    assert len(launches) == 4 and all(b == (block_l or launches[0]) for b in launches)
    for a, b in zip(general, gathered):
        assert rel_err(b, a) < 1e-6
    assert rel_err(x_only.grad, general[0]) < 1e-6
    assert rel_err(weight_only.grad, general[1]) < 1e-6


def test_gather_backward_falls_back_for_a_wide_halo(device, monkeypatch):
    from greyhound import _tuning
    # by default: the gather kernel for contiguous x with silu and neither seq_idx nor initial states
    taken = []
    monkeypatch.setattr(ops, "_launch_gather_backward", lambda *args: taken.append(args[0].is_contiguous()))
    for layout in ("contiguous", "channel_last"):
        ops._launch_backward(make_x(1, 4, 40, layout, device), torch.randn(4, 4, device=device), None, None, None,
                             torch.randn(1, 4, 40, device=device), True, 1, (True, True, False, False))
    assert taken == [True]
    with _tuning.override("causal_conv1d", bwd_two_pass=True):  # a forced two-pass run is not taken over
        ops._launch_backward(make_x(1, 4, 40, "contiguous", device), torch.randn(4, 4, device=device), None, None,
                             None, torch.randn(1, 4, 40, device=device), True, 1, (True, True, False, False))
    assert taken == [True]
    x = make_x(1, 4, 40, "channel_last", device)
    with _tuning.override("causal_conv1d", bwd_gather=True, bwd_gather_block_l=8):
        assert ops._gather_backward_block_l(x, 4, 3) == 0  # halo 9 >= 8 rows: the general kernel
        assert ops._gather_backward_block_l(x, 4, 2) == 8
    with _tuning.override("causal_conv1d", bwd_gather_block_l=12), pytest.raises(ValueError, match="power of 2"):
        ops._gather_backward_block_l(x, 4, 1)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["contiguous", "channel_last"])
@pytest.mark.parametrize("tuning", [dict(bwd_gather=True), dict(bwd_gather=True, bwd_gather_scratch=True),
                                    dict(bwd_gather=True, bwd_gather_scratch=True, bwd_gather_block_l=32)])
def test_gpu_bf16_gather_backward_variant(layout, tuning):
    """The bwd_gather variants with compiled kernels (tl.gather / the scratch tile's barriers on real warps):
    gradients within bf16's tolerance of fp64 and within fp32 rounding of the general kernel."""
    from greyhound import _tuning
    x = make_x(2, 1024, 777, layout, "cuda", torch.bfloat16)
    weight, bias = make_params(1024, 4, "cuda", torch.bfloat16)
    grad_out = torch.randn(x.shape, device="cuda", dtype=torch.bfloat16)

    def grads(dilation):
        leaves = [t.detach().clone().requires_grad_() for t in (x, weight, bias)]
        causal_conv1d(*leaves, activation="silu", dilation=dilation).backward(grad_out)
        return [leaf.grad.float() for leaf in leaves]

    for dilation in (1, 3):
        with _tuning.override("causal_conv1d", bwd_gather=False):
            general = grads(dilation)
        with _tuning.override("causal_conv1d", **tuning):
            check_against_reference(x, weight, bias, activation="silu", dilation=dilation)
            for a, b in zip(general, grads(dilation)):
                assert rel_err(b, a) < 1e-2


_CARRIES_SCRIPT = """
import json, re, sys, triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from greyhound.ops import causal_conv1d as ops

def carried(kernel, **constexprs):
    kinds = {n: "constexpr" if n in constexprs else "*fp32" if n.endswith("_ptr") else "i32" for n in kernel.arg_names}
    compiled = triton.compile(ASTSource(kernel, kinds, constexprs=constexprs), target=GPUTarget("cuda", 90, 32),
                              options=dict(num_warps=1))
    loops = re.findall(r"scf.for .* iter_args\\((.*?)\\) ->", compiled.asm["ttir"])
    return [len(loop.split(",")) for loop in loops]

cases = [tuple(map(int, case.split(","))) for case in sys.argv[1:]]
print(json.dumps([(carried(ops._causal_conv1d_walk_forward_kernel, WIDTH=width, HAS_BIAS=True, SILU=True,
                           GROUP=group, BLOCK_D=16),
                   carried(ops._causal_conv1d_walk_backward_kernel, WIDTH=width, HAS_BIAS=True, SILU=True,
                           GRAD_X=True, GRAD_PARAMS=True, GROUP=group, BLOCK_D=16)) for width, group in cases]))
"""


def test_walk_kernels_carry_their_windows():
    """The walk kernels' register windows survive compilation (the interpreter cannot show this: it runs the Python
    as written). Compiled for sm_90 on this machine, without the interpreter, each walk loop must carry: forward, the
    W − 1 window values it reads back, the group's position and its G prefetched rows; backward, W − 1 of x, W − 1
    of g, W tap sums, the bias sum, two positions and 2G prefetched rows (x and grad_out). Slots that start as one tensor are dropped from the loop by Triton (they
    stay zero): the first GPU run of these kernels lost every tap but two that way."""
    import json
    import os
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    cases = [(2, 1), (4, 8), (8, 3)]  # (W, group)
    done = subprocess.run([sys.executable, "-c", _CARRIES_SCRIPT, *(f"{w},{g}" for w, g in cases)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    carries = json.loads(done.stdout.strip().splitlines()[-1])
    for (width, group), (forward, backward) in zip(cases, carries):
        assert forward == [width + group], (width, group, forward)
        assert backward == [3 * width + 1 + 2 * group], (width, group, backward)


@pytest.mark.parametrize("batch,width,dilation,steps,block_d,group,activation", [
    (1, 4, 1, 64, None, 8, "silu"), (2, 3, 2, 5, 8, 2, "silu"), (1, 8, 1, 4, 16, 3, None), (1, 5, 3, 2, 16, 1, "silu"),
    (1, 2, 1, 7, 8, 5, "silu")])
def test_walk_variant(device, batch, width, dilation, steps, block_d, group, activation):
    """The walk kernels (channel-last x walked one row at a time, register windows of x and g; the default for
    channel-last x): output and every gradient against fp64 and the tiled kernels (walk forced off); chunks shorter
    than the halo, residue classes of a dilation, a ragged last chunk, several channel blocks, groups of rows that
    do not divide the walk; other layouts keep the tiled kernels. (Small: the interpreter runs the walk one row at a
    time.)"""
    from greyhound import _tuning
    x = make_x(batch, 13, 29, "channel_last", device)
    weight, bias = make_params(13, width, device)
    grad_out = torch.randn(x.shape, device=device)

    def run(*tensors):
        leaves = [t.detach().clone().requires_grad_() for t in tensors]
        function = causal_conv1d if leaves[0].dtype != torch.float64 else causal_conv1d_reference
        out = function(*leaves, activation=activation, dilation=dilation)
        out.backward(grad_out.to(out.dtype))
        return [out.detach()] + [leaf.grad for leaf in leaves]

    with _tuning.override("causal_conv1d", walk=False):
        assert ops._walk_config(x, None, None) is None and ops._walk_config(x, None, None, backward=True) is None
        tiled = run(x, weight, bias)
    reference = run(x.double(), weight.double(), bias.double())
    tuning = dict(walk=True, walk_steps=steps, walk_group=group, walk_bwd_steps=steps, walk_bwd_group=9 - group)
    if block_d is not None:
        tuning.update(walk_block_d=block_d, walk_bwd_block_d=block_d)
    with _tuning.override("causal_conv1d", **tuning):
        for backward in (False, True):
            assert ops._walk_config(x, None, None, backward) is not None
            assert ops._walk_config(x.contiguous(), None, None, backward) is None
            assert ops._walk_config(x, torch.zeros(batch, 29, dtype=torch.long, device=device), None, backward) is None
        walked = run(x, weight, bias)
        x_only = x.detach().clone().requires_grad_()  # only x's gradient: the kernel without the partial sums
        causal_conv1d(x_only, weight, None, activation=activation, dilation=dilation).backward(grad_out)
    for name, a, b, ref in zip(("out", "x", "weight", "bias"), tiled, walked, reference):
        assert rel_err(b, ref) < VALUE_TOLERANCE[torch.float32], name
        assert rel_err(b, a) < 1e-6, name
    x_ref = x.detach().double().requires_grad_()
    causal_conv1d_reference(x_ref, weight.double(), None, activation=activation, dilation=dilation).backward(
        grad_out.double())
    assert rel_err(x_only.grad, x_ref.grad) < GRAD_TOLERANCE[torch.float32]


def test_walk_is_the_channel_last_default_unless_a_tiled_kernel_is_asked_for(monkeypatch):
    """On the GPU, channel-last x without seq_idx / initial states takes the walk kernels by default; forcing `walk`
    off or any tiled-kernel tunable of one direction gives that direction the tiled kernel and leaves the other
    walking; bad walk tunables are refused. On the CPU interpreter the walk runs only when forced."""
    from greyhound import _tuning
    x = make_x(2, 13, 29, "channel_last", "cpu")
    assert ops._walk_config(x, None, None) is None and ops._walk_config(x, None, None, backward=True) is None
    with _tuning.override("causal_conv1d", walk=True):
        assert ops._walk_config(x, None, None) == (64, 16, 1, 4)
    with _tuning.override("causal_conv1d", block_l=16):
        assert ops._walk_config(x, None, None, backward=True) is None
    monkeypatch.setattr(ops, "_walks_by_default", lambda x: True)  # what a CUDA tensor gets
    assert ops._walk_config(x, None, None) == (64, 16, 1, 4)
    assert ops._walk_config(x, None, None, backward=True) == (128, 16, 1, 4)
    assert ops._walk_config(make_x(2, 1000, 29, "channel_last", "cpu"), None, None) == (64, 256, 2, 4)
    assert ops._walk_config(make_x(2, 1000, 29, "channel_last", "cpu"), None, None, backward=True) == (128, 64, 1, 4)
    for forced, walks_forward, walks_backward in [
            (dict(walk=False), False, False), (dict(block_l=16), False, True), (dict(warps=2), False, True),
            (dict(bwd_block_d=32), True, False), (dict(bwd_gather=True), True, False),
            (dict(bwd_two_pass=True), True, False), (dict(walk=True, block_d=32), True, True)]:
        with _tuning.override("causal_conv1d", **forced):
            assert (ops._walk_config(x, None, None) is not None) == walks_forward, forced
            assert (ops._walk_config(x, None, None, backward=True) is not None) == walks_backward, forced
    for bad, match in [(dict(walk_block_d=48), "walk_block_d must be a power of 2"),
                       (dict(walk_bwd_group=9), "walk_bwd_group must be from 1 to 8"),
                       (dict(walk_group=12), "walk_group must be from 1 to 8")]:
        with _tuning.override("causal_conv1d", **bad), pytest.raises(ValueError, match=match):
            ops._walk_config(x, None, None, backward="bwd" in match)


@pytest.mark.gpu
@pytest.mark.parametrize("tuning", [dict(), dict(walk_warps=1, walk_steps=32, walk_bwd_group=8, walk_bwd_steps=32),
                                    dict(walk_block_d=128, walk_steps=128, walk_bwd_block_d=128, walk_bwd_warps=2)])
def test_gpu_bf16_walk_variant(tuning):
    """The walk kernels compiled: outputs and gradients within bf16's tolerance of fp64 and within fp32 rounding of
    the tiled kernels, dilation 1 and 3, a ragged last chunk."""
    from greyhound import _tuning
    x = make_x(2, 1024, 777, "channel_last", "cuda", torch.bfloat16)
    weight, bias = make_params(1024, 4, "cuda", torch.bfloat16)
    grad_out = torch.randn(x.shape, device="cuda", dtype=torch.bfloat16)

    def run(dilation):
        leaves = [t.detach().clone().requires_grad_() for t in (x, weight, bias)]
        out = causal_conv1d(*leaves, activation="silu", dilation=dilation)
        out.backward(grad_out)
        return [out.float()] + [leaf.grad.float() for leaf in leaves]

    for dilation in (1, 3):
        with _tuning.override("causal_conv1d", walk=False):
            tiled = run(dilation)
        with _tuning.override("causal_conv1d", **tuning):
            check_against_reference(x, weight, bias, activation="silu", dilation=dilation)
            for a, b in zip(tiled, run(dilation)):
                assert rel_err(b, a) < 1e-2


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["channel_last", "contiguous"])
def test_gpu_fast_launch_equals_triton_launch(layout, monkeypatch):
    """Repeat calls take FastLaunch (greyhound/_launch.py) and give bitwise the results of Triton's own launch path,
    also for a view whose address is not 16-byte aligned (another launch key: its own compiled kernel)."""
    from greyhound import _launch
    weight, bias = make_params(1024, 4, "cuda", torch.bfloat16)
    grad_out = torch.randn(2, 1024, 777, device="cuda", dtype=torch.bfloat16)

    def run(x):
        leaves = [t.detach().clone().requires_grad_() for t in (x, weight, bias)]
        out = causal_conv1d(*leaves, activation="silu", dilation=2)
        out.backward(grad_out)
        return [out] + [leaf.grad for leaf in leaves]

    aligned = make_x(2, 1024, 777, layout, "cuda", torch.bfloat16)
    # the same layout one element (2 bytes) into its storage
    misaligned = torch.empty(aligned.numel() + 1, device="cuda", dtype=torch.bfloat16)[1:].as_strided(
        aligned.shape, aligned.stride()).copy_(aligned)
    assert misaligned.data_ptr() % 16 and misaligned.stride() == aligned.stride()
    for x in (aligned, misaligned):
        before = sum(launcher.fast_launches for launcher in vars(ops).values()
                     if isinstance(launcher, _launch.FastLaunch))
        fast = [run(x) for _ in range(3)][-1]
        after = sum(launcher.fast_launches for launcher in vars(ops).values()
                    if isinstance(launcher, _launch.FastLaunch))
        assert after > before
        monkeypatch.setattr(_launch, "ENABLED", False)
        slow = run(x)
        monkeypatch.setattr(_launch, "ENABLED", True)
        for a, b in zip(fast, slow):
            assert torch.equal(a, b)


def test_update_refuses_inputs_that_require_grad_while_grad_is_on(device):
    # session 42's fuzzing: a conv_state leaf requiring grad was written in place, and an x_t requiring grad gave an
    # output without grad (the gradient silently cut); under no_grad (a decoding step) the same call runs
    x_t = torch.randn(2, 8, device=device)
    weight, bias = torch.randn(8, 4, device=device), torch.randn(8, device=device)
    for name in ("x_t", "conv_state", "weight"):
        tensors = {"x_t": x_t.clone(), "conv_state": torch.randn(2, 8, 3, device=device), "weight": weight.clone()}
        tensors[name].requires_grad_(True)
        with pytest.raises(RuntimeError, match=f"not differentiable, and {name} require grad"):
            causal_conv1d_update(tensors["x_t"], tensors["conv_state"], tensors["weight"], bias)
        with torch.no_grad():
            out = causal_conv1d_update(tensors["x_t"], tensors["conv_state"], tensors["weight"], bias)
        assert out.shape == (2, 8) and torch.isfinite(out).all()
