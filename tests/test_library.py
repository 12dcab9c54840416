"""greyhound._library: eager calls take the ops' autograd.Function twins (the same implementation and autograd formulas
without the torch.library dispatch), bit-identical to the registered ops; while torch.compile traces, the wrappers
take the registered ops."""
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import greyhound._library as library
from greyhound import chunked_linear_cross_entropy, cross_entropy_with_grad, linear_logprobs, logprobs, newton_schulz
from greyhound.ops.cheri_conv_norm import cheri_block_forward, conv_norm
from greyhound.ops.cross_entropy import REDUCTIONS

EAGER = "_eagerBackward"


class _RecordOps(TorchDispatchMode):
    """Records the name of every op that reaches the dispatcher (registered custom ops included)."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


@pytest.fixture
def compiling(monkeypatch):
    """Makes greyhound take its traced path (torch.compiler.is_compiling() True), as it does inside torch.compile."""
    monkeypatch.setattr(library.torch.compiler, "is_compiling", lambda: True)


# ---------------------------------------------------------------------------------------------- a small test op
_eager_flags = []


@torch.library.custom_op("greyhound_test::scaled", mutates_args=())
def _scaled(x: torch.Tensor, scale: float) -> torch.Tensor:
    return x * scale


@_scaled.register_fake
def _scaled_fake(x, scale):
    return torch.empty_like(x)


def _scaled_setup_context(ctx, inputs, output):
    ctx.scale = inputs[1]


def _scaled_backward(ctx, grad, eager=False):
    _eager_flags.append(eager)
    return grad * ctx.scale, None


_scaled.register_autograd(_scaled_backward, setup_context=_scaled_setup_context)
_scaled_eager = library.twin(_scaled, _scaled_setup_context, _scaled_backward)


def _call_scaled(x, twin):
    recorder = _RecordOps()
    _eager_flags.clear()
    with recorder:
        out = library.call(_scaled, twin, x, 3.0)
    return out, recorder.ops


def test_call_takes_the_twin_in_eager():
    x = torch.randn(5, requires_grad=True)
    out, ops = _call_scaled(x, _scaled_eager)
    assert type(out.grad_fn).__name__ == "scaled" + EAGER
    assert "greyhound_test.scaled.default" not in ops
    (grad,) = torch.autograd.grad(out, x, torch.ones_like(out))
    assert _eager_flags == [True] and torch.equal(grad, torch.full_like(x, 3.0))
    with torch.no_grad():  # no autograd node, the implementation still runs directly
        out, ops = _call_scaled(x, _scaled_eager)
    assert out.grad_fn is None and "greyhound_test.scaled.default" not in ops and torch.equal(out, x.detach() * 3)


def test_call_without_twin_calls_the_implementation():
    x = torch.randn(5)
    out, ops = _call_scaled(x, None)
    assert "greyhound_test.scaled.default" not in ops and torch.equal(out, x * 3)


def test_call_takes_the_registered_op_while_compiling(compiling):
    x = torch.randn(5, requires_grad=True)
    for twin in (_scaled_eager, None):
        out, ops = _call_scaled(x, twin)
        assert "greyhound_test.scaled.default" in ops
        assert not type(out.grad_fn).__name__.endswith(EAGER)
        (grad,) = torch.autograd.grad(out, x, torch.ones_like(out))
        assert _eager_flags == [False] and torch.equal(grad, torch.full_like(x, 3.0))


def test_run_picks_the_implementation_or_the_op():
    x = torch.randn(4)
    for eager, dispatched in ((True, False), (False, True)):
        recorder = _RecordOps()
        with recorder:
            out = library.run(_scaled, eager, x, 2.0)
        assert torch.equal(out, x * 2) and ("greyhound_test.scaled.default" in recorder.ops) == dispatched


def test_newton_schulz_takes_the_registered_op_only_while_compiling(device, monkeypatch):
    G = torch.randn(2, 12, 20, device=device)
    recorder = _RecordOps()
    with recorder:
        eager = newton_schulz(G, compute_dtype=torch.float32)
    assert "greyhound.newton_schulz.default" not in recorder.ops
    monkeypatch.setattr(library.torch.compiler, "is_compiling", lambda: True)
    recorder = _RecordOps()
    with recorder:
        via_op = newton_schulz(G, compute_dtype=torch.float32)
    assert "greyhound.newton_schulz.default" in recorder.ops
    assert torch.equal(eager, via_op)


# ------------------------------------------------------------------------------- bit-identical to the registered ops
def _grad_output(loss):
    """A random upstream gradient (not 1: the backward's rescaling runs)."""
    return torch.randn_like(loss) + 2.0


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_twin_equals_registered_op(device, dtype, reduction):
    rows, V = 7, 300
    logits = (torch.randn(rows, V, device=device) * 3).to(dtype)
    target = torch.randint(0, V, (rows,), device=device)
    target[2] = -100
    options = dict(ignore_index=-100, label_smoothing=0.1, softcap=20.0, lse_square_scale=1e-3)

    eager_leaf = logits.clone().requires_grad_()
    out = cross_entropy_with_grad(eager_leaf, target, reduction=reduction, return_lse=True, **options)
    assert type(out.loss.grad_fn).__name__ == "cross_entropy_fwd" + EAGER

    op_leaf = logits.clone().requires_grad_()
    loss, per_token_loss, lse, _ = torch.ops.greyhound.cross_entropy_fwd(
        op_leaf, target, REDUCTIONS.index(reduction), -100, 0.1, 20.0, 1e-3, True, True)
    assert not type(loss.grad_fn).__name__.endswith(EAGER)

    assert torch.equal(out.loss, loss) and torch.equal(out.lse, lse)
    grad_output = _grad_output(loss)
    out.loss.backward(grad_output)
    loss.backward(grad_output)
    assert eager_leaf.grad.dtype == dtype and torch.equal(eager_leaf.grad, op_leaf.grad)
    with pytest.raises(RuntimeError, match="backward ran twice"):  # the buffer was handed out
        out.loss.backward(grad_output)


@pytest.mark.parametrize("grad_vocab", [False, True])
@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_linear_cross_entropy_twin_equals_registered_op(device, reduction, with_bias, grad_vocab):
    rows, hidden, V, chunk = 13, 16, 40, 5
    x = torch.randn(rows, hidden, device=device)
    weight = torch.randn(V, hidden, device=device) * 0.5
    bias = torch.randn(V, device=device) if with_bias else None
    target = torch.randint(0, V, (rows,), device=device)
    target[3] = -100
    options = dict(label_smoothing=0.05, softcap=15.0, lse_square_scale=1e-3)

    def leaves():
        return [t.clone().requires_grad_() if t is not None else None for t in (x, weight, bias)]

    eager_inputs = leaves()
    out = chunked_linear_cross_entropy(eager_inputs[0], eager_inputs[1], target, eager_inputs[2],
                                       reduction=reduction, return_lse=True, chunk_size=chunk,
                                       grad_schedule="vocab" if grad_vocab else "rows", **options)
    assert type(out.loss.grad_fn).__name__ == "linear_cross_entropy_fwd" + EAGER

    op_inputs = leaves()
    needs_grad = [t is not None for t in op_inputs]
    loss, _, lse, *_ = torch.ops.greyhound.linear_cross_entropy_fwd(
        *op_inputs, target, REDUCTIONS.index(reduction), chunk, -100, 0.05, 15.0, 1e-3, grad_vocab, grad_vocab,
        needs_grad, True)
    assert not type(loss.grad_fn).__name__.endswith(EAGER)

    assert torch.equal(out.loss, loss) and torch.equal(out.lse, lse)
    grad_output = _grad_output(loss)
    out.loss.backward(grad_output, retain_graph=True)
    loss.backward(grad_output)
    for got, want in zip(eager_inputs, op_inputs):
        if got is not None:
            assert torch.equal(got.grad, want.grad)
    with pytest.raises(RuntimeError, match="backward ran twice"):
        out.loss.backward(grad_output)


# The other differentiable wrappers: eager (twin) against the same call taking the registered op (is_compiling
# patched: exactly the arguments torch.compile would trace).
def _logprobs_case(device):
    logits = torch.randn(3, 5, 70, device=device)
    target = torch.randint(0, 70, (3, 5), device=device)
    return [logits], lambda logits: logprobs(logits, target, temperature=0.7, return_entropy=True)


def _linear_logprobs_case(device):
    hidden, weight = torch.randn(2, 6, 16, device=device), torch.randn(50, 16, device=device)
    bias = torch.randn(50, device=device)
    target = torch.randint(0, 50, (2, 6), device=device)
    return [hidden, weight, bias], lambda h, w, b: linear_logprobs(h, w, target, b, temperature=1.3,
                                                                   return_entropy=True, chunk_size=5)


def _cheri_params(device, channels, expansion, kernel_size=3):
    return [torch.randn(channels, 1, kernel_size, device=device) * 0.5, torch.randn(channels, device=device),
            1 + 0.3 * torch.randn(channels, device=device), 0.2 * torch.randn(channels, device=device),
            torch.randn(channels * expansion, channels, device=device) * 0.2,
            torch.randn(channels * expansion, device=device) * 0.2,
            torch.randn(channels, channels * expansion, device=device) * 0.2, torch.randn(channels, device=device)]


def _conv_norm_case(device):
    tensors = [torch.randn(2, 12, 29, device=device)] + _cheri_params(device, 12, 4)[:4]
    return tensors, lambda *t: conv_norm(*t, dilation=2)


def _cheri_block_case(device):
    tensors = [torch.randn(2, 16, 24, device=device)] + _cheri_params(device, 16, 4)
    return tensors, lambda *t: cheri_block_forward(*t, dilation=2)


def _node_names(outs):
    """The class names of every autograd node behind `outs` (the ops' nodes sit behind the wrappers' views)."""
    names, stack = set(), [out.grad_fn for out in outs]
    while stack:
        node = stack.pop()
        if node is not None and type(node).__name__ not in names:
            names.add(type(node).__name__)
            stack.extend(next_node for next_node, _ in node.next_functions)
    return names


@pytest.mark.parametrize("case,node", [(_logprobs_case, "logprobs_fwd"),
                                       (_linear_logprobs_case, "linear_logprobs_fwd"),
                                       (_conv_norm_case, "conv_norm_fwd"), (_cheri_block_case, "cheri_block_fwd")])
def test_other_twins_equal_registered_ops(device, monkeypatch, case, node):
    tensors, fn = case(device)

    def run():
        leaves = [t.clone().requires_grad_() for t in tensors]
        outs = fn(*leaves)
        outs = outs if isinstance(outs, tuple) else (outs,)
        names = _node_names(outs)
        grads = torch.autograd.grad(outs, leaves, [torch.ones_like(out) + i for i, out in enumerate(outs)])
        return names, outs, grads

    eager_names, eager_outs, eager_grads = run()
    monkeypatch.setattr(library.torch.compiler, "is_compiling", lambda: True)
    op_names, op_outs, op_grads = run()
    assert f"{node}{EAGER}" in eager_names and not any(name.endswith(EAGER) for name in op_names)
    for got, want in zip((*eager_outs, *eager_grads), (*op_outs, *op_grads)):
        assert torch.equal(got, want)


# --- double backward (session 42's fuzzing: a gradient penalty through an op silently dropped its second-order term)
def _penalised_grad(make, device):
    """(penalty gradient call, its input): the op's gradient built with create_graph=True, then differentiated."""
    x = torch.randn(6, 16, device=device, requires_grad=True)
    out = make(x)
    (g,) = torch.autograd.grad(out.float().square().sum(), x, create_graph=True)
    return g, x


@pytest.mark.parametrize("name, make", [
    ("logprobs", lambda x: logprobs(x, torch.randint(0, 16, (6,), device=x.device))),
    ("cross_entropy_with_grad", lambda x: cross_entropy_with_grad(x * 1.0, torch.randint(0, 16, (6,), device=x.device),
                                                                   inplace_backward=True)),
    ("causal_conv1d", lambda x: __import__("greyhound").causal_conv1d(x.view(2, 3, 16), torch.randn(
        3, 4, device=x.device), None, activation="silu")),
])
def test_differentiating_an_ops_gradient_again_raises_naming_it(device, name, make):
    g, x = _penalised_grad(make, device)
    assert g.requires_grad  # before: False, and the penalty's second-order term was silently left out
    with pytest.raises(RuntimeError, match=f"greyhound.{name}.*backward is not differentiable"):
        torch.autograd.grad(g.square().sum(), x)  # (autograd.grad with inputs: it must reach the error node too)
    g, x = _penalised_grad(make, device)
    with pytest.raises(RuntimeError, match="backward is not differentiable"):
        (g.square().sum()).backward()


def test_a_gradient_built_with_create_graph_keeps_its_first_order_value(device):
    x = torch.randn(6, 16, device=device, requires_grad=True)
    target = torch.randint(0, 16, (6,), device=device)
    (g,) = torch.autograd.grad(logprobs(x, target).sum(), x, create_graph=True)
    (ref,) = torch.autograd.grad(torch.log_softmax(x.float(), -1).gather(1, target[:, None]).sum(), x)
    torch.testing.assert_close(g.detach(), ref, rtol=1e-5, atol=1e-5)
    x.grad = None
    logprobs(x, target).sum().backward()  # without create_graph nothing changes: a plain gradient
    assert not x.grad.requires_grad
