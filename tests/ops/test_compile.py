"""greyhound's registered ops inside torch.compile(fullgraph=True): no graph break, output (and gradients) equal to
eager. On the CPU the backend is aot_eager (dynamo and AOT autograd trace the graph through the ops' fake
implementations; the kernels run through the Triton interpreter); the GPU test uses inductor."""
import pytest
import torch

from greyhound import causal_conv1d, linear_logprobs, logprobs, newton_schulz


def _no_graph_break(fn, *args):
    explanation = torch._dynamo.explain(fn)(*args)
    assert explanation.graph_break_count == 0, explanation.break_reasons
    assert explanation.graph_count == 1


def test_newton_schulz_compiles_fullgraph(device):
    def step(G):  # a Muon-like update: orthogonalise, scale
        return 0.2 * newton_schulz(G, compute_dtype=torch.float32) * max(1.0, G.shape[-2] / G.shape[-1]) ** 0.5

    G = torch.randn(3, 24, 40, device=device)
    torch._dynamo.reset()
    _no_graph_break(step, G)
    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
    assert torch.equal(compiled(G), step(G))


@pytest.mark.parametrize("silu", [False, True])
def test_causal_conv1d_compiles_fullgraph_with_autograd(device, silu):
    weight = torch.randn(16, 4, device=device, requires_grad=True)
    bias = torch.randn(16, device=device, requires_grad=True)

    def block(y):  # (B, L, D) activations, as a model holds them: conv over time, residual
        out = causal_conv1d(y.transpose(1, 2), weight, bias, activation="silu" if silu else None, dilation=2)
        return (out.transpose(1, 2) + y).square().mean()

    y = torch.randn(2, 33, 16, device=device, requires_grad=True)
    torch._dynamo.reset()
    _no_graph_break(block, y)
    compiled = torch.compile(block, fullgraph=True, backend="aot_eager")
    loss_eager, loss_compiled = block(y), compiled(y)
    grads_eager = torch.autograd.grad(loss_eager, (y, weight, bias))
    grads_compiled = torch.autograd.grad(loss_compiled, (y, weight, bias))
    torch.testing.assert_close(loss_compiled, loss_eager)
    for got, want in zip(grads_compiled, grads_eager):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("with_entropy", [False, True])
def test_logprobs_compiles_fullgraph_with_autograd(device, with_entropy):
    def policy_loss(logits, target, advantages):  # a GRPO-style loss over per-token log-probabilities
        out = logprobs(logits[:, :-1], target, temperature=0.7, return_entropy=with_entropy)
        logprob, entropy = out if with_entropy else (out, None)
        loss = -(logprob * advantages).mean()
        return loss - 0.01 * entropy.mean() if with_entropy else loss

    logits = torch.randn(2, 9, 300, device=device, requires_grad=True)
    target = torch.randint(0, 300, (2, 8), device=device)
    advantages = torch.randn(2, 8, device=device)
    torch._dynamo.reset()
    _no_graph_break(policy_loss, logits, target, advantages)
    compiled = torch.compile(policy_loss, fullgraph=True, backend="aot_eager")
    loss_eager, loss_compiled = policy_loss(logits, target, advantages), compiled(logits, target, advantages)
    torch.testing.assert_close(loss_compiled, loss_eager)
    torch.testing.assert_close(torch.autograd.grad(loss_compiled, logits)[0], torch.autograd.grad(loss_eager, logits)[0])


def test_linear_logprobs_compiles_fullgraph_with_autograd(device):
    weight = torch.randn(300, 32, device=device, requires_grad=True)

    def loss(hidden, target):
        return -linear_logprobs(hidden, weight, target, chunk_size=5).mean()

    hidden = torch.randn(2, 7, 32, device=device, requires_grad=True)
    target = torch.randint(0, 300, (2, 7), device=device)
    torch._dynamo.reset()
    _no_graph_break(loss, hidden, target)
    compiled = torch.compile(loss, fullgraph=True, backend="aot_eager")
    loss_eager, loss_compiled = loss(hidden, target), compiled(hidden, target)
    torch.testing.assert_close(loss_compiled, loss_eager)
    for got, want in zip(torch.autograd.grad(loss_compiled, (hidden, weight)),
                         torch.autograd.grad(loss_eager, (hidden, weight))):
        torch.testing.assert_close(got, want)


@pytest.mark.gpu
def test_ops_compile_with_inductor_on_the_gpu():
    G = torch.randn(4, 256, 512, device="cuda", dtype=torch.bfloat16)
    compiled = torch.compile(lambda g: newton_schulz(g) * 2, fullgraph=True)
    torch.testing.assert_close(compiled(G), newton_schulz(G) * 2)
    x = torch.randn(2, 2048, 512, device="cuda", dtype=torch.bfloat16).transpose(1, 2).requires_grad_()
    weight = torch.randn(512, 4, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    fn = torch.compile(lambda x: causal_conv1d(x, weight, activation="silu").float().sum(), fullgraph=True)
    grad_compiled = torch.autograd.grad(fn(x), x)[0]
    grad_eager = torch.autograd.grad(causal_conv1d(x, weight, activation="silu").float().sum(), x)[0]
    torch.testing.assert_close(grad_compiled, grad_eager)
    logits = torch.randn(512, 32000, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    target = torch.randint(0, 32000, (512,), device="cuda")
    fn = torch.compile(lambda l: logprobs(l, target).sum(), fullgraph=True)
    torch.testing.assert_close(torch.autograd.grad(fn(logits), logits)[0],
                               torch.autograd.grad(logprobs(logits, target).sum(), logits)[0])
