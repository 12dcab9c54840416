"""greyhound's registered ops inside torch.compile(fullgraph=True): no graph break, output (and gradients) equal to
eager. On the CPU the backend is aot_eager (dynamo and AOT autograd trace the graph through the ops' fake
implementations; the kernels run through the Triton interpreter); the GPU test uses inductor."""
import pytest
import torch

from greyhound import (CheriBlock, causal_conv1d, causal_conv1d_update, chunked_linear_cross_entropy,
                       cross_entropy_with_grad, linear_logprobs, logprobs, newton_schulz)


def _no_graph_break(fn, *args):
    explanation = torch._dynamo.explain(fn)(*args)
    assert explanation.graph_break_count == 0, explanation.break_reasons
    assert explanation.graph_count == 1


def _assert_compiled_equals_eager(fn, args, wrt):
    """fn compiled (fullgraph, aot_eager) gives eager's output and eager's gradients w.r.t. `wrt`."""
    compiled = torch.compile(fn, fullgraph=True, backend="aot_eager")
    out_eager, out_compiled = fn(*args), compiled(*args)
    torch.testing.assert_close(out_compiled, out_eager)
    for got, want in zip(torch.autograd.grad(out_compiled, wrt), torch.autograd.grad(out_eager, wrt)):
        torch.testing.assert_close(got, want)


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


@pytest.mark.parametrize("silu", [False, True])
def test_causal_conv1d_update_compiles_fullgraph_and_updates_the_state(device, silu):
    """A decoding step (the conv's one new token, then a projection) compiles without a graph break; run for a few
    steps, compiled and eager give the same outputs, and the conv_state each was handed ends the same (the op
    mutates it in place: a compiled graph that dropped the mutation, or applied it to a copy, would leave it
    stale)."""
    dim, width, dilation = 24, 4, 2
    weight, bias = torch.randn(dim, width, device=device), torch.randn(dim, device=device)
    proj = torch.randn(dim, dim, device=device)

    def step(x_t, conv_state):
        y = causal_conv1d_update(x_t, conv_state, weight, bias, activation="silu" if silu else None,
                                 dilation=dilation)
        return y @ proj

    state0 = torch.randn(3, dim, (width - 1) * dilation, device=device)
    tokens = torch.randn(5, 3, dim, device=device)
    torch._dynamo.reset()
    _no_graph_break(step, tokens[0], state0.clone())
    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
    state_eager, state_compiled = state0.clone(), state0.clone()
    for x_t in tokens:
        torch.testing.assert_close(compiled(x_t, state_compiled), step(x_t, state_eager))
    assert torch.equal(state_compiled, state_eager) and not torch.equal(state_eager, state0)
    assert torch.equal(state_eager[..., -1], tokens[-1])  # the newest input is the state's last column


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


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_cross_entropy_compiles_fullgraph_with_autograd(device, reduction):
    weight = torch.randn(90, 16, device=device, requires_grad=True)

    def loss_fn(hidden, target):  # lm head, soft-capped cross-entropy with z-loss; the lse logged beside it
        out = cross_entropy_with_grad(hidden @ weight.t(), target, reduction=reduction, softcap=8.0,
                                      label_smoothing=0.1, lse_square_scale=1e-3, return_lse=True)
        loss = out.loss if reduction == "mean" else (out.loss * torch.linspace(0.5, 1.5, 7, device=device)).sum()
        return loss + 0.0 * out.lse.mean()

    hidden = torch.randn(7, 16, device=device, requires_grad=True)
    target = torch.randint(0, 90, (7,), device=device)
    target[3] = -100
    torch._dynamo.reset()
    _no_graph_break(loss_fn, hidden, target)
    _assert_compiled_equals_eager(loss_fn, (hidden, target), (hidden, weight))


def test_cross_entropy_inplace_backward_under_compile_falls_back_out_of_place(device):
    def loss_fn(logits, target):
        return cross_entropy_with_grad(logits * 1.0, target, inplace_backward=True) * 2.0

    logits = torch.randn(5, 70, device=device, requires_grad=True)
    target = torch.randint(0, 70, (5,), device=device)
    torch._dynamo.reset()
    _no_graph_break(loss_fn, logits, target)
    _assert_compiled_equals_eager(loss_fn, (logits, target), (logits,))
    scaled = logits.detach() * 1.0
    scaled.requires_grad_()
    before = scaled.detach().clone()
    torch.compile(lambda l: cross_entropy_with_grad(l, target, inplace_backward=True), fullgraph=True,
                  backend="aot_eager")(scaled).backward()
    assert torch.equal(scaled.detach(), before)  # documented: the compiled path does not write the logits


def test_cross_entropy_compiled_checks_targets_when_it_runs(device):
    compiled = torch.compile(lambda l, t: cross_entropy_with_grad(l, t), fullgraph=True, backend="aot_eager")
    logits = torch.randn(4, 20, device=device)
    target = torch.randint(0, 20, (4,), device=device)
    torch._dynamo.reset()
    torch.testing.assert_close(compiled(logits, target), cross_entropy_with_grad(logits, target))
    target[2] = 20
    with pytest.raises(ValueError, match="target"):
        compiled(logits, target)


@pytest.mark.parametrize("reduction,schedule,grad_schedule", [("mean", "rows", "rows"), ("none", "vocab", "rows"),
                                                             ("mean", "vocab", "vocab"), ("none", "auto", "vocab")])
def test_chunked_linear_cross_entropy_compiles_fullgraph_with_autograd(device, reduction, schedule, grad_schedule):
    weight = torch.randn(130, 16, device=device, requires_grad=True)
    bias = torch.randn(130, device=device, requires_grad=True)

    def loss_fn(hidden, target):
        loss = chunked_linear_cross_entropy(hidden, weight, target, bias, reduction=reduction, softcap=8.0,
                                            chunk_size=4, forward_schedule=schedule, grad_schedule=grad_schedule)
        return loss if reduction == "mean" else loss.square().mean()

    hidden = torch.randn(9, 16, device=device, requires_grad=True)
    target = torch.randint(0, 130, (9,), device=device)
    target[0] = -100
    torch._dynamo.reset()
    _no_graph_break(loss_fn, hidden, target)
    _assert_compiled_equals_eager(loss_fn, (hidden, target), (hidden, weight, bias))


@pytest.mark.parametrize("expansion", [4, 3])  # fused block kernel; E % 16 != 0: conv + LayerNorm op, eager MLP
def test_cheri_block_compiles_fullgraph_training_and_inference(device, expansion):
    block = CheriBlock(16, kernel_size=3, dilation=2, expansion=expansion, device=device)

    def step(x):  # training: the fused forward and its backward
        return block(x).square().mean()

    x = torch.randn(2, 16, 20, device=device, requires_grad=True)
    torch._dynamo.reset()
    _no_graph_break(step, x)
    _assert_compiled_equals_eager(step, (x,), (x, *block.parameters()))
    with torch.no_grad():  # inference: the megakernel (train mode: inline weight cast; eval: cast in the graph)
        for mode in (block.train, block.eval):
            mode()
            torch._dynamo.reset()
            _no_graph_break(block, x)
            compiled = torch.compile(block, fullgraph=True, backend="aot_eager")
            torch.testing.assert_close(compiled(x), block(x))


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
    state_eager = torch.randn(2, 512, 3, device="cuda", dtype=torch.bfloat16)
    state_compiled = state_eager.clone()
    fn = torch.compile(lambda x_t, state: causal_conv1d_update(x_t, state, weight.detach(), activation="silu") * 2,
                       fullgraph=True)
    for x_t in torch.randn(3, 2, 512, device="cuda", dtype=torch.bfloat16):
        torch.testing.assert_close(fn(x_t, state_compiled),
                                   causal_conv1d_update(x_t, state_eager, weight.detach(), activation="silu") * 2)
    assert torch.equal(state_compiled, state_eager)  # inductor kept the in-place update of the state
    logits = torch.randn(512, 32000, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    target = torch.randint(0, 32000, (512,), device="cuda")
    fn = torch.compile(lambda l: logprobs(l, target).sum(), fullgraph=True)
    torch.testing.assert_close(torch.autograd.grad(fn(logits), logits)[0],
                               torch.autograd.grad(logprobs(logits, target).sum(), logits)[0])
    fn = torch.compile(lambda l: cross_entropy_with_grad(l * 1.0, target, softcap=30.0) * 2, fullgraph=True)
    torch.testing.assert_close(torch.autograd.grad(fn(logits), logits)[0],
                               torch.autograd.grad(cross_entropy_with_grad(logits * 1.0, target, softcap=30.0) * 2,
                                                   logits)[0])
    hidden = torch.randn(512, 1024, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    head = torch.randn(32000, 1024, device="cuda", dtype=torch.bfloat16) / 32
    head.requires_grad_()
    fn = torch.compile(lambda h: chunked_linear_cross_entropy(h, head, target), fullgraph=True)
    for got, want in zip(torch.autograd.grad(fn(hidden), (hidden, head)),
                         torch.autograd.grad(chunked_linear_cross_entropy(hidden, head, target), (hidden, head))):
        torch.testing.assert_close(got, want)
    block = CheriBlock(128, kernel_size=3, dilation=4, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(8, 128, 1024, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    fn = torch.compile(lambda x: block(x).float().square().mean(), fullgraph=True)
    grads_compiled = torch.autograd.grad(fn(x), (x, *block.parameters()))
    grads_eager = torch.autograd.grad(block(x).float().square().mean(), (x, *block.parameters()))
    for got, want in zip(grads_compiled, grads_eager):
        torch.testing.assert_close(got, want)
    with torch.no_grad():
        block.eval()
        torch.testing.assert_close(torch.compile(block, fullgraph=True)(x), block(x))


def _fake_and_real_layouts_agree(op, args):
    """The op's fake implementation gives each output the shape, dtype and strides the real one allocates (inductor
    reads the real outputs with the fake's strides: a mismatch was an assertion, or a wrong gradient without it)."""
    torch.library.opcheck(op, args, test_utils=("test_faketensor",))


def test_backward_fakes_lay_out_gradients_as_the_kernels_do(device):
    # session 42's fuzzing: logprobs_bwd's fake kept a transposed logits' strides and causal_conv1d_bwd's a transposed
    # weight's and initial state's, while the kernels allocate those gradients contiguous
    from greyhound.ops import causal_conv1d as conv_ops
    from greyhound.ops import logprobs as logprobs_ops
    logits = torch.randn(10, 6, device=device).t()  # (6, 10), strides (1, 6)
    target = torch.randint(0, 10, (6,), device=device)
    _, row_max, log2_sum, _ = logprobs_ops._logprobs_fwd(logits, target, 1.0, False, False)
    _fake_and_real_layouts_agree(logprobs_ops._logprobs_bwd,
                                 (logits, target, row_max, log2_sum, None, torch.randn(6, device=device), None, 1.0))
    x = torch.randn(2, 4, 12, device=device)
    weight = torch.randn(3, 4, device=device).t()  # (4, 3), transposed
    initial_states = torch.randn(2, 2, 4, device=device).transpose(1, 2)  # (2, 4, 2), transposed
    _fake_and_real_layouts_agree(conv_ops._causal_conv1d_bwd,
                                 (x, weight, torch.randn(4, device=device), None, initial_states,
                                  torch.randn(2, 4, 12, device=device), True, 1, [True, True, True, True]))
