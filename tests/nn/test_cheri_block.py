"""CheriBlock: every path against an fp64 reference, the dispatch rule, the eval-mode weight cache, bad input.

On CPU the Triton kernels run in the interpreter; there the megakernel's bf16 dots run as fp32 dots on
bf16-rounded operands (same products, exact in fp32). The real bf16 tl.dot is checked by the `gpu` tests.
"""
import math
import re
import numpy as np
import pytest
import torch

import greyhound.nn.cheri_block as cheri_module
import greyhound.ops.cheri_conv_norm as cheri_ops
from greyhound import CheriBlock
from greyhound.nn.cheri_block import CheriBlockReference

# Megakernel max-abs drift vs fp64 at unit scale. The issue quotes "about 3e-2 and 4e-3" (bf16 / fp16 models);
# fp16 models multiply fp16 operands (their output's own rounding is ~2e-3 at |out| in [4, 8)), kept at 5e-3.
HALF_BOUNDS = {torch.bfloat16: 3e-2, torch.float16: 5e-3}


def rel_err(out, ref):
    return ((out.double() - ref.double()).norm() / ref.double().norm()).item()


def max_abs(out, ref):
    return (out.double() - ref.double()).abs().max().item()


def make_block(n_filters=20, kernel_size=3, dilation=2, expansion=4, dtype=torch.float32, device="cpu", **kwargs):
    """A block with fresh random weights (default init, then LayerNorm affine and biases moved off 1 and 0)."""
    block = CheriBlock(n_filters, kernel_size, dilation, expansion, device=device, **kwargs)
    with torch.no_grad():
        block.norm.weight.copy_(1 + 0.3 * torch.randn(n_filters))
        for bias in (block.conv.bias, block.norm.bias, block.fc1.bias, block.fc2.bias):
            bias.add_(0.2 * torch.randn_like(bias))
    return block.to(dtype)


def fp64_twin(block):
    twin = CheriBlock(block.n_filters, block.kernel_size, block.dilation, block.expansion, eps=block.norm.eps,
                      device=block.fc1.weight.device, dtype=torch.float64)
    twin.load_state_dict({k: v.double() for k, v in block.state_dict().items()})
    return twin


class CallRecorder:
    """Wraps a module-level function and counts calls (the dispatch and cache tests spy with it)."""

    def __init__(self, monkeypatch, module, name):
        self.calls = 0
        original = getattr(module, name)

        def wrapper(*args, **kwargs):
            self.calls += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, wrapper)


# ------------------------------------------------------------------------------------------------ training path
@pytest.mark.parametrize("dtype,value_tol,grad_tol", [(torch.float32, 1e-5, 1e-5), (torch.float16, 5e-3, 1e-2),
                                                       (torch.bfloat16, 2e-2, 3e-2)])
@pytest.mark.parametrize("kernel_size,dilation", [(3, 2), (2, 5), (1, 1)])
def test_training_path_values_and_gradients_match_fp64(device, dtype, value_tol, grad_tol, kernel_size, dilation):
    block = make_block(20, kernel_size, dilation, expansion=4, dtype=dtype, device=device)
    twin = fp64_twin(block)
    x = torch.randn(2, 20, 37, device=device, dtype=dtype, requires_grad=True)
    out = block(x)
    x64 = x.detach().double().requires_grad_()
    ref = twin.reference_forward(x64)
    assert out.dtype == dtype and out.shape == x.shape
    assert rel_err(out, ref) < value_tol
    grad_out = torch.randn_like(out)
    out.backward(grad_out)
    ref.backward(grad_out.double())
    assert rel_err(x.grad, x64.grad) < grad_tol
    for (name, p), (_, p64) in zip(block.named_parameters(), twin.named_parameters()):
        assert p.grad is not None and p.grad.dtype == dtype, name
        assert rel_err(p.grad, p64.grad) < grad_tol, name


def test_training_path_uses_the_fused_kernel_and_saves_only_its_outputs(device, monkeypatch):
    """Grad enabled and E % 16 == 0: one fused forward (training mode), no eager MLP; E % 16 != 0: the eager MLP."""
    fused = CallRecorder(monkeypatch, cheri_ops, "run_fused")
    eager_mlp = CallRecorder(monkeypatch, cheri_ops, "mlp_residual")
    block = make_block(16, 3, 2, expansion=4, device=device)
    x = torch.randn(2, 16, 24, device=device, requires_grad=True)
    block(x).sum().backward()
    assert (fused.calls, eager_mlp.calls) == (1, 0) and x.grad is not None
    odd = make_block(12, 3, 2, expansion=3, device=device)
    odd(torch.randn(2, 12, 24, device=device, requires_grad=True)).sum().backward()
    assert (fused.calls, eager_mlp.calls) == (1, 1)


def test_fp32_one_pass_option(device):
    """fp32_dot="bf16": an fp32 model multiplying one bf16 pass; bf16-class agreement, training and inference."""
    block = make_block(32, 3, 4, expansion=4, device=device, fp32_dot="bf16")
    x = torch.randn(2, 32, 45, device=device, requires_grad=True)
    ref = fp64_twin(block).reference_forward(x.detach().double())
    out = block(x)
    out.sum().backward()
    with torch.no_grad():
        mega = block.eval()(x.detach())
    assert out.dtype == mega.dtype == torch.float32
    for result in (out, mega):
        assert 1e-6 < max_abs(result, ref) < 2e-2
    assert block._mlp_fc1_hi.dtype == torch.bfloat16 and block._mlp_fc1_lo is None


@pytest.mark.parametrize("programs,length", [(1, 64), (3, 64), (5, 80)])
def test_conv_norm_backward_across_tiles_matches_fp64(device, programs, length):
    """Small tiles and few programs: dx needs dy from the next tile (shift = 2*dilation), partials loop, and at
    L=80 (5 tiles, 3 a program) the last program of a row has tiles past L (they must stay masked)."""
    channels, dilation = 24, 3
    block = make_block(channels, 3, dilation, device=device)
    params = [p.detach() for p in (block.conv.weight, block.conv.bias, block.norm.weight, block.norm.bias)]
    x = torch.randn(2, channels, length, device=device)
    z, mean, rstd = cheri_ops._conv_norm_forward(x, *params, dilation, 1e-5, save_stats=True, block_l=16)
    dz = torch.randn_like(z)
    grads = cheri_ops._conv_norm_backward(dz, x, params[0], params[1], params[2], mean, rstd, dilation,
                                          block_l=16, target_programs=programs)
    leaves = [t.double().requires_grad_() for t in (x, *params)]
    y = cheri_ops.causal_depthwise_conv(leaves[0], leaves[1], leaves[2], dilation)
    z64 = torch.nn.functional.layer_norm(y.transpose(1, 2), (channels,), leaves[3], leaves[4], 1e-5)
    assert rel_err(z, z64) < 1e-6
    z64.backward(dz.double())
    for name, grad, leaf in zip(("x", "conv_w", "conv_b", "gamma", "beta"), grads, leaves):
        assert rel_err(grad, leaf.grad) < 1e-5, name


def test_conv_norm_parameter_gradients_over_many_partials_and_channel_blocks(device):
    """The parameter-gradient kernel's own loops: 120 per-program partials (past its 64-row step) and 100 channels
    (four 32-channel programs, the last one masked), K=5 taps, against fp64."""
    channels, kernel_size, dilation = 100, 5, 2
    block = make_block(channels, kernel_size, dilation, device=device)
    params = [p.detach() for p in (block.conv.weight, block.conv.bias, block.norm.weight, block.norm.bias)]
    x = torch.randn(40, channels, 40, device=device)
    z, mean, rstd = cheri_ops._conv_norm_forward(x, *params, dilation, 1e-5, save_stats=True, block_l=16)
    dz = torch.randn_like(z)
    grads = cheri_ops._conv_norm_backward(dz, x, params[0], params[1], params[2], mean, rstd, dilation, block_l=16,
                                          target_programs=120)
    leaves = [t.double().requires_grad_() for t in (x, *params)]
    y = cheri_ops.causal_depthwise_conv(leaves[0], leaves[1], leaves[2], dilation)
    torch.nn.functional.layer_norm(y.transpose(1, 2), (channels,), leaves[3], leaves[4], 1e-5).backward(dz.double())
    for name, grad, leaf in zip(("x", "conv_w", "conv_b", "gamma", "beta"), grads, leaves):
        assert grad.shape == leaf.shape and rel_err(grad, leaf.grad) < 1e-5, name


def test_conv_norm_parameter_gradients_each_in_its_own_dtype(device):
    """The parameter gradients are reduced from the per-program partials in fp32 and stored once, each as its own
    contiguous tensor in its parameter's dtype (one launch: no fp32 sum followed by casting copies), also when the
    parameters' dtypes differ; neither aliases another (a registered op's outputs may not)."""
    channels, dilation = 24, 2
    x = torch.randn(3, channels, 50, device=device, requires_grad=True)
    dtypes = (torch.bfloat16, torch.float16, torch.float32, torch.bfloat16)
    params = [(torch.randn(channels, 1, 3, device=device) * 0.5).to(dtypes[0]),
              (0.1 * torch.randn(channels, device=device)).to(dtypes[1]),
              (1 + 0.3 * torch.randn(channels, device=device)).to(dtypes[2]),
              (0.2 * torch.randn(channels, device=device)).to(dtypes[3])]
    leaves = [p.detach().clone().requires_grad_() for p in params]
    z = cheri_ops.conv_norm(x, *leaves, dilation=dilation)
    dz = torch.randn_like(z)
    z.backward(dz)
    refs = [t.detach().double().requires_grad_() for t in (x, *params)]
    y = cheri_ops.causal_depthwise_conv(refs[0], refs[1], refs[2], dilation)
    torch.nn.functional.layer_norm(y.transpose(1, 2), (channels,), refs[3], refs[4], 1e-5).backward(dz.double())
    assert rel_err(x.grad, refs[0].grad) < 1e-5
    storages = {x.grad.untyped_storage().data_ptr()}
    for leaf, ref, dtype in zip(leaves, refs[1:], dtypes):
        assert leaf.grad.dtype == dtype and leaf.grad.shape == leaf.shape and leaf.grad.is_contiguous()
        assert rel_err(leaf.grad, ref.grad) < {torch.float32: 1e-5, torch.float16: 1e-3, torch.bfloat16: 8e-3}[dtype]
        storages.add(leaf.grad.untyped_storage().data_ptr())
    assert len(storages) == 5


# ------------------------------------------------------------------------------------------------ megakernel
@pytest.mark.parametrize("fp32_dot", ["bf16x3", "tf32x3", "ieee"])
def test_megakernel_fp32_agrees_with_training_forward(device, fp32_dot):
    block = make_block(32, 3, 4, expansion=4, device=device, fp32_dot=fp32_dot)
    x = torch.randn(2, 32, 45, device=device)
    ref = fp64_twin(block).reference_forward(x.double())
    training_fwd = block(x)  # grad enabled
    with torch.no_grad():
        mega_no_eval = block(x)
        block.eval()
        mega_eval = block(x)
    assert max_abs(training_fwd, ref) < 1e-5
    assert max_abs(mega_eval, training_fwd) < 1e-5
    assert max_abs(mega_eval, ref) < 1e-5
    assert torch.equal(mega_eval, mega_no_eval)  # the cache holds exactly the inline cast


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_megakernel_half_models_within_drift_bounds(device, dtype):
    block = make_block(32, 3, 4, expansion=4, dtype=dtype, device=device)
    x = torch.randn(2, 32, 45, device=device, dtype=dtype)
    ref = fp64_twin(block).reference_forward(x.double())
    with torch.no_grad():
        block.eval()
        out = block(x)
    assert out.dtype == dtype
    assert max_abs(out, ref) < HALF_BOUNDS[dtype]
    assert rel_err(out, ref) < (2e-2 if dtype == torch.bfloat16 else 5e-3)
    assert max_abs(out, ref) > 1e-6  # the MLP really ran on rounded operands, not an fp64 shortcut
    # the megakernel rounds the dot operands as the training forward does (bf16 models bf16, fp16 models fp16)
    train_out = block.train()(x).detach()
    assert rel_err(out.float() - x.float(), train_out.float() - x.float()) < 2e-3


def test_megakernel_functional_config_and_cached_weights(device):
    """A fixed tile config and precomputed weights give the same answer as the default launch."""
    block = make_block(16, 3, 1, expansion=2, device=device)
    params = block._params()
    x = torch.randn(1, 16, 40, device=device)
    with torch.no_grad():
        weights = cheri_ops.prepare_mlp_weights(block.fc1.weight, block.fc2.weight)
        a = cheri_ops.cheri_block_megakernel(x, *params, dilation=1, mlp_weights=weights)
        b = cheri_ops.cheri_block_megakernel(x, *params, dilation=1, config=(16, 16, 4, 1))
    ref = fp64_twin(block).reference_forward(x.double())
    assert max_abs(a, ref) < 1e-5 and max_abs(b, ref) < 1e-5


@pytest.mark.parametrize("channels,hidden", [(128, 512), (12, 48), (16, 80), (1024, 4096), (20, 36 * 16)])
@pytest.mark.parametrize("dot_mode", ["bf16", "fp16", "bf16x3", "tf32x3", "ieee"])
@pytest.mark.parametrize("training", [False, True])
def test_default_tile_config_fits_the_shape(channels, hidden, dot_mode, training):
    block_l, block_e, num_warps, num_stages, layout, _ = cheri_ops._default_config(channels, hidden, dot_mode,
                                                                                  training)
    assert hidden % block_e == 0 and block_e >= 16
    assert block_l * cheri_ops._channel_block(channels) <= 16384 and layout in cheri_ops._KERNELS
    assert all(hidden % c[1] == 0 or hidden % 16 == 0 for c in cheri_ops._FALLBACK_CONFIGS)


def test_fused_kernel_layouts_and_ragged_tiles_stay_in_bounds(device):
    """Every tile layout (split included), L not a multiple of the tile, C below the padded width, inference and training outputs;
    x sits between NaN guards, so a read outside the tensor would poison the result (the interpreter also raises)."""
    channels, length, hidden = 24, 37, 96
    block = make_block(channels, 3, 2, expansion=hidden // channels, device=device)
    params = [t.detach() for t in block._params()]
    guard = torch.full((2 * channels * length + 8192,), float("nan"), device=device)
    x = guard[4096:4096 + 2 * channels * length].view(2, channels, length)
    x.copy_(torch.randn(2, channels, length, device=device))
    ref = cheri_ops.cheri_block_reference(x.double(), *[t.double() for t in params], dilation=2)
    for training in (False, True):
        weights = cheri_ops.prepare_mlp_weights(params[4], params[6], training=training)
        for config in ((16, 32, 4, 1, "lc"), (16, 32, 4, 1, "cl"), (32, 16, 4, 1, "lc"), (16, 32, 4, 1, "split")):
            result = cheri_ops.run_fused(x, *params[:4], params[5], params[7], weights, 2, 1e-5, training=training,
                                         config=config)
            out = result[0] if training else result
            assert max_abs(out, ref) < 1e-5, (training, config)
            if training:
                y = cheri_ops.causal_depthwise_conv(x.double(), params[0].double(), params[1].double(), 2)
                z = torch.nn.functional.layer_norm(y.transpose(1, 2), (channels,), params[2].double(),
                                                   params[3].double())
                hidden_ref = torch.nn.functional.gelu(z @ params[4].double().t() + params[5].double())
                assert max_abs(result[1], hidden_ref) < 3e-5  # bf16x3 pre-activation, |u| up to ~4
                assert max_abs(result[2], y.mean(dim=1)) < 1e-5
                assert max_abs(result[3], y.var(dim=1, unbiased=False).add(1e-5).rsqrt()) < 1e-4


def test_gelu_polynomial_matches_exact_erf_gelu(device):
    """The kernels' GELU (degree-7 polynomial in the exponent of erfc) against fp64 erf-GELU: ~8e-7 absolute,
    and relative accuracy in the negative tail where GELU is tiny (no cancellation)."""
    import triton
    import triton.language as tl

    @triton.jit
    def gelu_kernel(u_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        u = tl.load(u_ptr + offs, mask=offs < n, other=0.0)
        out = cheri_ops._gelu_erf(u[None, :], tl.zeros([1, BLOCK], dtype=tl.float32), 0)
        tl.store(out_ptr + offs[None, :], out, mask=(offs < n)[None, :])

    u = torch.cat([torch.linspace(-12, 12, 20001), -torch.logspace(-6, 0.74, 2001), torch.logspace(-6, 3, 2001),
                   torch.randn(4000) * 3]).to(device)
    out = torch.empty_like(u)
    gelu_kernel[(triton.cdiv(u.numel(), 1024),)](u, out, u.numel(), BLOCK=1024)
    ref = torch.nn.functional.gelu(u.double())
    err = (out.double() - ref).abs()
    assert err.max().item() < 1e-6 * max(1.0, u.abs().max().item() / 12)
    tail = (u < -0.5) & (u > -5.0)
    assert (err[tail] / ref[tail].abs()).max().item() < 2e-5
    assert torch.equal(out[u == 0], torch.zeros_like(out[u == 0]))


def test_gelu_tanh_variant_is_within_a_thousandth_of_erf_gelu(device):
    """gelu=tanh (the tanh form; tanh.approx.f32 on the GPU, an exact tanh in the interpreter) against fp64
    erf-GELU: within 1e-3 absolute everywhere (the tanh form's own deviation is ~3e-4), exact 0 at u = 0."""
    import triton
    import triton.language as tl

    @triton.jit
    def gelu_kernel(u_ptr, out_ptr, n, BLOCK: tl.constexpr, EMULATE: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        u = tl.load(u_ptr + offs, mask=offs < n, other=0.0)
        out = cheri_ops._gelu_erf(u[None, :], tl.zeros([1, BLOCK], dtype=tl.float32), 3, EMULATE)
        tl.store(out_ptr + offs[None, :], out, mask=(offs < n)[None, :])

    u = torch.cat([torch.linspace(-12, 12, 20001), torch.randn(4000) * 3]).to(device)
    out = torch.empty_like(u)
    gelu_kernel[(triton.cdiv(u.numel(), 1024),)](u, out, u.numel(), BLOCK=1024, EMULATE=u.device.type == "cpu")
    err = (out.double() - torch.nn.functional.gelu(u.double())).abs()
    assert err.max().item() < 1e-3
    assert err.max().item() > 1e-5  # it is the approximation, not the exact form
    assert torch.equal(out[u == 0], torch.zeros_like(out[u == 0]))


# ------------------------------------------------------------------------------------------------ dispatch
@pytest.mark.parametrize("n_filters,expansion,expect_megakernel", [(12, 3, False), (12, 4, True), (20, 4, True)])
def test_dispatch_rule(device, monkeypatch, n_filters, expansion, expect_megakernel):
    mega = CallRecorder(monkeypatch, cheri_module, "run_megakernel")
    train = CallRecorder(monkeypatch, cheri_module, "train_forward")
    block = make_block(n_filters, 3, 2, expansion=expansion, device=device)
    x = torch.randn(2, n_filters, 30, device=device)
    ref = fp64_twin(block).reference_forward(x.double())
    out_grad = block(x)
    assert (mega.calls, train.calls) == (0, 1)  # grad enabled: always the training-fwd path
    with torch.no_grad():
        out = block(x)
    assert block.uses_megakernel_when_no_grad == expect_megakernel
    assert (mega.calls, train.calls) == ((1, 1) if expect_megakernel else (0, 2))
    with torch.inference_mode():
        block.eval()
        out_eval = block(x)
    assert mega.calls == (2 if expect_megakernel else 0)
    for result in (out_grad, out, out_eval):
        assert max_abs(result, ref) < 1e-5


# ------------------------------------------------------------------------------------------------ cache lifecycle
def test_eval_cache_lifecycle(device, monkeypatch):
    prepare = CallRecorder(monkeypatch, cheri_module, "prepare_mlp_weights")  # cache builds and inline casts
    block = make_block(16, 3, 2, expansion=4, device=device)
    x = torch.randn(1, 16, 24, device=device)
    assert block._mlp_fc1_hi is None
    block.eval()  # builds the cast here, outside forward
    assert prepare.calls == 1 and block._mlp_fc1_hi.dtype == torch.bfloat16 and block._mlp_fc1_lo is not None
    cached = block._mlp_fc1_hi
    with torch.no_grad():
        first = block(x)
        second = block(x)
    assert prepare.calls == 1 and block._mlp_fc1_hi is cached and torch.equal(first, second)  # reused
    assert not any(k.startswith("_mlp") for k in block.state_dict())  # non-persistent

    # An optimizer step changes the weights in place: the next eval forward rebuilds and sees them.
    optimizer = torch.optim.SGD(block.parameters(), lr=0.01)
    block(x).sum().backward()  # eval mode with grad: training-fwd, no cache use
    assert prepare.calls == 1
    optimizer.step()
    with torch.no_grad():
        after_step = block(x)
    assert prepare.calls == 2
    assert rel_err(after_step, fp64_twin(block).reference_forward(x.double())) < 1e-5
    assert rel_err(after_step, first) > 1e-3

    # load_state_dict copies in place: rebuilt again.
    other = make_block(16, 3, 2, expansion=4, device=device)
    block.load_state_dict(other.state_dict())
    with torch.no_grad():
        loaded = block(x)
    assert prepare.calls == 3
    assert rel_err(loaded, fp64_twin(other).reference_forward(x.double())) < 1e-5

    # train() drops the cache; no_grad in train mode casts inline every call and caches nothing.
    block.train()
    assert all(getattr(block, name) is None for name in cheri_module._CACHE_BUFFERS)
    with torch.no_grad():
        inline = block(x)
        block(x)
    assert prepare.calls == 5 and block._mlp_fc1_hi is None  # two inline casts, nothing kept
    assert torch.equal(inline, loaded)


def test_training_never_uses_cache(device, monkeypatch):
    block = make_block(16, 3, 2, expansion=4, device=device).eval()
    cache = CallRecorder(monkeypatch, CheriBlock, "_cached_mlp_weights")
    x = torch.randn(1, 16, 24, device=device, requires_grad=True)
    block(x).sum().backward()
    block.train()
    block(x).sum().backward()
    assert cache.calls == 0


def test_dtype_change_rebuilds_cache(device):
    block = make_block(16, 3, 2, expansion=4, device=device).eval()
    x = torch.randn(1, 16, 24, device=device)
    block.half()  # also casts the cached buffers: the key must notice the new weights
    with torch.no_grad():
        out = block(x.half())
    # an fp16 model multiplies fp16 operands: its own weights, no copy
    assert block._mlp_fc1_hi.dtype == torch.float16 and block._mlp_fc1_lo is None
    assert block._mlp_fc1_hi.data_ptr() == block.fc1.weight.data_ptr()
    assert max_abs(out, fp64_twin(block).reference_forward(x.half().double())) < HALF_BOUNDS[torch.float16]


# ------------------------------------------------------------------------------------------------ CPU eager path
@pytest.mark.skipif(torch.cuda.is_available(), reason="runs the kernels on CPU tensors through Triton's interpreter, "
                    "which conftest turns on only where there is no CUDA device")
def test_cpu_eager_path_matches_kernels(monkeypatch):
    """CPU tensors without TRITON_INTERPRET run eager PyTorch with the kernels' numerics."""
    x = torch.randn(2, 32, 33)
    results = {}
    for interpreting in (True, False):
        monkeypatch.setattr(cheri_ops, "triton_interpreting", lambda value=interpreting: value)
        torch.manual_seed(7)
        for dtype in (torch.float32, torch.bfloat16):
            block = make_block(32, 3, 3, expansion=4, dtype=dtype)
            xg = x.to(dtype).clone().requires_grad_()
            out = block(xg)
            out.float().square().sum().backward()
            with torch.no_grad():
                mega = block.eval()(x.to(dtype))
            results[interpreting, dtype] = (out, xg.grad, block.fc1.weight.grad, mega, block)
    for dtype, tol in ((torch.float32, 1e-5), (torch.bfloat16, 2e-2)):
        kernel, eager = results[True, dtype], results[False, dtype]
        ref = fp64_twin(eager[4]).reference_forward(x.double())
        for a, b in zip(kernel[:4], eager[:4]):
            assert rel_err(a, b) < tol
        assert max_abs(eager[3], ref) < (1e-5 if dtype == torch.float32 else HALF_BOUNDS[dtype])


def test_reference_module_shares_parameters(device):
    block = make_block(16, 2, 3, expansion=2, device=device)
    reference = CheriBlockReference(block)
    x = torch.randn(2, 16, 20, device=device)
    assert rel_err(reference(x), fp64_twin(block).reference_forward(x.double())) < 1e-6
    assert {n for n, _ in reference.named_parameters()} == {f"block.{n}" for n, _ in block.named_parameters()}


def test_empty_input(device):
    block = make_block(16, device=device)
    for shape in ((0, 16, 10), (2, 16, 0)):
        x = torch.randn(shape, device=device)
        assert block(x).shape == shape
        with torch.no_grad():
            assert block.eval()(x).shape == shape
        block.train()


# ------------------------------------------------------------------------------------------------ bad input
def test_bad_inputs(device):
    block = make_block(16, device=device)
    with pytest.raises(ValueError, match="x must be 3-D"):
        block(torch.randn(16, 10, device=device))
    with pytest.raises(ValueError, match=r"x must have shape \(N, 16, L\)"):
        block(torch.randn(2, 15, 10, device=device))
    with pytest.raises(TypeError, match="x must have dtype in \\(float32\\), got float16"):
        block(torch.randn(2, 16, 10, device=device, dtype=torch.float16))
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        block([[1.0]])
    with pytest.raises(ValueError, match="x must be on"):
        block(torch.randn(2, 16, 10, device="meta"))
    with pytest.raises(ValueError, match="fp32_dot must be one of"):
        CheriBlock(16, fp32_dot="tf32")
    with pytest.raises(ValueError, match="n_filters must be a positive int"):
        CheriBlock(0)
    with pytest.raises(ValueError, match="dilation must be a positive int"):
        CheriBlock(16, dilation=1.5)
    for dtype in (torch.int32, torch.bool, "float32"):  # (session 56's fuzzing: torch's "Only Tensors of floating
        # point ... can require gradients" named no argument)
        with pytest.raises(TypeError, match="dtype must be None or a floating-point torch.dtype"):
            CheriBlock(16, dtype=dtype)
    for eps in ("1e-5", -1e-5, 0.0, float("nan"), True, 10**400):  # not left to a deep float() or a silent nan output
        with pytest.raises(ValueError, match="eps must be a positive finite float"):
            CheriBlock(16, eps=eps)
    twin = CheriBlock(16, device=device, dtype=torch.float64)  # an fp64 oracle: reference_forward only
    twin.eval()  # no MLP weight cast to build for it
    x64 = torch.randn(2, 16, 10, device=device, dtype=torch.float64)
    for grad in (True, False):  # the training forward would multiply an fp64 model in bf16, in silence
        with torch.set_grad_enabled(grad), pytest.raises(TypeError, match="got a float64 model"):
            twin(x64.requires_grad_(grad))
    assert twin.reference_forward(x64).dtype == torch.float64
    huge = torch.randn(1, 16, 1, device=device).expand(1, 16, 2**27)  # C * L = 2**31, no memory behind it
    for grad in (True, False):  # both the training forward and the megakernel (int32 in-row offsets)
        with torch.set_grad_enabled(grad), pytest.raises(ValueError, match=r"n_filters \* L < 2\*\*31"):
            block(huge)


def test_functional_bad_inputs(device):
    block = make_block(12, 3, 2, expansion=3, device=device)
    params = block._params()
    x = torch.randn(1, 12, 10, device=device)
    with torch.no_grad():
        with pytest.raises(ValueError, match="multiple of 16"):
            cheri_ops.cheri_block_megakernel(x, *params)
        with pytest.raises(ValueError, match=r"conv_weight must have shape \(12, 1, kernel_size\)"):
            cheri_ops.conv_norm(x, torch.randn(12, 2, 3, device=device), *params[1:4])
        with pytest.raises(ValueError, match=r"norm_weight must have shape \(12,\)"):
            cheri_ops.conv_norm(x, params[0], params[1], torch.randn(11, device=device), params[3])
        fc1_weight, fc1_bias, fc2_weight, fc2_bias = params[4:]
        for grad in (True, False):  # the training forward checks the MLP's shapes as the megakernel does
            with torch.set_grad_enabled(grad):
                with pytest.raises(ValueError, match=r"fc1_weight must have shape \(36, 12\)"):
                    cheri_ops.cheri_block_forward(x, *params[:4], fc1_weight[:, :11], fc1_bias, fc2_weight, fc2_bias)
                with pytest.raises(ValueError, match=r"fc2_bias must have shape \(12,\)"):
                    cheri_ops.cheri_block_forward(x, *params[:4], fc1_weight, fc1_bias, fc2_weight, fc2_bias[:5])
                with pytest.raises(TypeError, match="fc2_weight must have dtype"):
                    cheri_ops.cheri_block_forward(x, *params[:4], fc1_weight, fc1_bias, fc2_weight.long(), fc2_bias)
        wide = make_block(16, device=device)
        weights = cheri_ops.prepare_mlp_weights(wide.fc1.weight, wide.fc2.weight, "tf32x3")
        with pytest.raises(ValueError, match="mlp_weights must be prepare_mlp_weights"):
            cheri_ops.cheri_block_megakernel(torch.randn(1, 16, 10, device=device), *wide._params(),
                                             mlp_weights=weights)


def test_functional_config_and_eps_are_checked_by_name(device):
    """Session 52's fuzzing: cheri_block_forward passed `config` on unchecked ((16, 16) failed unpacking 6 values,
    "fast" a modulo, (16, 7, 4, 1) in the kernel's arange, an unknown layout a KeyError), and conv_norm's eps=None
    compared None with 0 while eps=inf and eps=True were taken, where the module refuses both."""
    block = make_block(16, 3, 2, expansion=4, device=device)
    params = block._params()
    x = torch.randn(1, 16, 10, device=device)
    bad_configs = [((16, 16), "config must be None or"), ("fast", "config must be None or"),
                   ((16, 7, 4, 1), "BLOCK_E must be a power of 2 >= 16, got 7"),
                   ((8, 16, 4, 1), "BLOCK_L must be a power of 2 >= 16, got 8"),
                   ((16, 128, 4, 1), "BLOCK_E must divide the hidden width 64, got 128"),
                   ((16, 16, 3, 1), "num_warps must be 1, 2, 4, 8 or 16, got 3"),
                   ((16, 16, 4, 0), "num_stages must be a positive int, got 0"),
                   ((16, 16, 4, 1, "xx"), "layout must be one of"),
                   ((16.0, 16, 4, 1), "BLOCK_L must be a power of 2 >= 16, got 16.0")]
    for config, message in bad_configs:
        for grad in (True, False):
            with torch.set_grad_enabled(grad), pytest.raises(ValueError, match=re.escape(message)):
                cheri_ops.cheri_block_forward(x, *params, dilation=2, config=config)
        with torch.no_grad(), pytest.raises(ValueError, match=re.escape(message)):
            cheri_ops.cheri_block_megakernel(x, *params, dilation=2, config=config)
    with pytest.raises(ValueError, match="max_registers must be None or a positive int, got -1"):
        cheri_ops.cheri_block_forward(x, *params, dilation=2, config=(16, 16, 4, 1, "lc", -1))
    with torch.no_grad(), pytest.raises(ValueError, match="config must be None or"):  # the megakernel takes 4 or 5
        cheri_ops.cheri_block_megakernel(x, *params, dilation=2, config=(16, 16, 4, 1, "lc", 160))
    for eps in (None, "1e-5", float("inf"), float("nan"), True, 0.0, -1e-5):
        for call in (lambda: cheri_ops.conv_norm(x, *params[:4], dilation=2, eps=eps),
                     lambda: cheri_ops.cheri_block_forward(x, *params, dilation=2, eps=eps)):
            with pytest.raises(ValueError, match="eps must be a positive finite float"):
                call()
        with torch.no_grad(), pytest.raises(ValueError, match="eps must be a positive finite float"):
            cheri_ops.cheri_block_megakernel(x, *params, dilation=2, eps=eps)
    with torch.no_grad():  # a good config still runs, and matches the default
        torch.testing.assert_close(cheri_ops.cheri_block_megakernel(x, *params, dilation=2, config=(16, 16, 4, 1)),
                                   cheri_ops.cheri_block_megakernel(x, *params, dilation=2))


def test_repeated_calls_launch_from_the_shape_plan(device, monkeypatch):
    """The default path keeps one launch plan per shape: a repeated call launches without the candidate walk and gives
    the same output; another shape, the training forward or a tuning override do not reuse it. A tuning variant keeps
    a plan of its own, by what it forces: its repeated calls launch directly too, another variant or shape walks
    again, and the default never takes the variant's."""
    from greyhound import _tuning
    monkeypatch.setattr(cheri_ops, "_plans", {})
    monkeypatch.setattr(cheri_ops, "_variant_plans", {})
    made = CallRecorder(monkeypatch, cheri_ops, "_make_plan")
    block = make_block(16, 3, 2, expansion=4, device=device)
    x = torch.randn(2, 16, 24, device=device)
    ref = fp64_twin(block).reference_forward(x.double())
    with torch.no_grad():
        first, second = block(x), block(x)
    assert made.calls == 1 and len(cheri_ops._plans) == 1 and torch.equal(first, second)
    for _ in range(2):  # the training forward (its kernel writes the hidden layer): a plan of its own
        out = block(x)
        out.backward(torch.randn_like(out))
    assert made.calls == 2 and max_abs(out, ref) < 1e-5
    with torch.no_grad():
        other = block(torch.randn(3, 16, 40, device=device))
    assert made.calls == 3 and other.shape == (3, 16, 40)
    with _tuning.override("cheri_block", block_l=16), torch.no_grad():
        tuned, tuned_again = block(x), block(x)
    assert made.calls == 4 and len(cheri_ops._plans) == 3  # a variant is never the shape's plan
    assert len(cheri_ops._variant_plans) == 1 and torch.equal(tuned, tuned_again)
    assert max_abs(tuned, ref) < 1e-5 and max_abs(first, ref) < 1e-5
    with _tuning.override("cheri_block", block_l=32), torch.no_grad():  # another variant: its own walk and plan
        narrow = block(x)
    assert made.calls == 5 and len(cheri_ops._variant_plans) == 2 and max_abs(narrow, ref) < 1e-5
    with _tuning.override("cheri_block", block_l=16), torch.no_grad():
        block(torch.randn(3, 16, 40, device=device))  # the first variant at another shape
    assert made.calls == 6 and len(cheri_ops._variant_plans) == 3
    with torch.no_grad():  # the default after the variants: its own plan, as before them
        assert torch.equal(block(x), first)
    assert made.calls == 6 and len(cheri_ops._plans) == 3


def test_small_training_forwards_take_the_single_kernel():
    # bf16/fp16 training forwards of at most _SMALL_TRAINING_ROWS positions run one fused kernel (no split: one launch
    # fewer); larger ones keep the split layout; fp32 training and bf16 inference are unaffected
    rows = cheri_ops._SMALL_TRAINING_ROWS
    assert rows == 64 * 1024
    for mode in ("bf16", "fp16"):
        assert cheri_ops._candidate_configs(128, 512, mode, True, True)[0][4] == "lc"
        assert cheri_ops._candidate_configs(128, 512, mode, True, False)[0][4] == "split"
    assert cheri_ops._candidate_configs(128, 512, "bf16x3", True, True) == \
        cheri_ops._candidate_configs(128, 512, "bf16x3", True, False)
    assert cheri_ops._candidate_configs(128, 512, "bf16", False, True) == \
        cheri_ops._candidate_configs(128, 512, "bf16", False, False)


def test_calls_are_sized_by_their_positions(monkeypatch):
    # the size class run_fused asks _candidate_configs for: tiny (2) only for inference, small (1) up to each mode's
    # bound, large (0) above; the spy stops the call before any kernel runs
    seen = []

    class Stop(Exception):
        pass

    def spy(channels, hidden_width, dot_mode, training, small=0):
        seen.append(small)
        raise Stop
    monkeypatch.setattr(cheri_ops, "_candidate_configs", spy)
    monkeypatch.setattr(cheri_ops, "_plans", {})
    block = make_block(8, 3, 2, expansion=2)
    for length, training, expected in ((16 * 1024, False, 2), (16 * 1024 + 1, False, 1), (96 * 1024, False, 1),
                                       (96 * 1024 + 1, False, 0), (16 * 1024, True, 1), (64 * 1024 + 1, True, 0)):
        block.train(training)
        with torch.set_grad_enabled(training), pytest.raises(Stop):
            block(torch.randn(1, 8, length, requires_grad=training))
        assert seen[-1] == expected, (length, training)


def test_shape_plans_are_bounded(device, monkeypatch):
    monkeypatch.setattr(cheri_ops, "_plans", {})
    monkeypatch.setattr(cheri_ops, "_MAX_PLANS", 2)
    block = make_block(16, 3, 2, expansion=4, device=device)
    with torch.no_grad():
        for length in (8, 9, 10):
            block(torch.randn(1, 16, length, device=device))
    assert [key[0][2] for key in cheri_ops._plans] == [9, 10]


# ------------------------------------------------------------------------------------------------ GPU only
@pytest.mark.gpu
def test_cached_compiled_kernel_launch_matches_triton_launch():
    """The fast launch path (cached CompiledKernel) gives bit-identical output to Triton's own launch."""
    block = make_block(128, 3, 4, expansion=4, dtype=torch.bfloat16, device="cuda").eval()
    x = torch.randn(2, 128, 1024, device="cuda", dtype=torch.bfloat16)
    params = block._params()
    weights = block._cached_mlp_weights(params[4], params[6])
    block_l, block_e, warps, stages, layout, _ = cheri_ops._default_config(128, 512, "bf16", False)
    outs = [torch.empty_like(x) for _ in range(2)]
    constexprs = dict(C=128, HIDDEN=512, KERNEL_SIZE=3, DILATION=4, EVEN_L=True, DOT_MODE=0, TRAINING=False,
                      GELU_VARIANT=0, EMULATE_DOT=False, Z_PRECOMPUTED=False, BLOCK_L=block_l, BLOCK_C=128,
                      BLOCK_E=block_e)
    launcher = cheri_ops._RUN_KERNELS[layout]
    for out, launch in zip(outs, ("triton", "fast")):
        args = (x, out, out, out, out, *params[:4], weights.fc1_hi, weights.fc1_hi, params[5], weights.fc2_hi,
                weights.fc2_hi, params[7], out, 1024, block.norm.eps)
        grid = (2 * 1024 // block_l,)
        options = dict(num_warps=warps, num_stages=stages)
        if launch == "triton":
            cheri_ops._KERNELS[layout][grid](*args, **constexprs, **options)
        else:
            before = launcher.fast_launches
            for _ in range(2):  # a new launch key goes through Triton once, then the fast path
                launcher[grid](*args, **constexprs, **options)
            assert launcher.fast_launches > before
    assert torch.equal(outs[0], outs[1])



@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_megakernel_real_bf16_dots_on_gpu(dtype, monkeypatch):
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)  # fp32 eager matmuls must be fp32
    block = make_block(128, 3, 4, expansion=4, dtype=dtype, device="cuda")
    x = torch.randn(4, 128, 1024, device="cuda", dtype=dtype)
    ref = fp64_twin(block).reference_forward(x.double())
    training_fwd = block(x)
    with torch.no_grad():
        mega = block.eval()(x)
    bound = 1e-5 if dtype == torch.float32 else HALF_BOUNDS[dtype]
    assert max_abs(mega, ref) < bound
    if dtype == torch.float32:
        assert max_abs(mega, training_fwd) < 1e-5


# ------------------------------------------------------------------------------------------------ tuning variants
@pytest.mark.parametrize("options", [dict(layout="cl", block_e=64), dict(layout="split", block_l=16, warps=2),
                                     dict(block_l=64, block_e=16, stages=2), dict(norm_block_l=16, norm_bwd_block_l=16,
                                                                                 norm_dx_block_l=32)])
def test_tuning_overrides_force_the_fused_config(device, monkeypatch, options):
    """greyhound._tuning variants of op "cheri_block" (how `python -m benchmarks cheri_block --providers
    'greyhound-megakernel[layout=cl]'` tunes): the forced fields reach the launch, the others keep the default,
    nothing is remembered as the shape's choice, and both paths stay within their fp64 bounds."""
    from greyhound import _tuning
    launches = []

    class Spy:  # the fused kernels' launchers, with each launch's kernel and keywords recorded
        def __init__(self, launcher):
            self.launcher = launcher

        def __getitem__(self, grid):
            def run(*args, **kwargs):
                launches.append((self.launcher.kernel, kwargs, kwargs))
                return self.launcher[grid](*args, **kwargs)
            return run

    for layout, launcher in list(cheri_ops._RUN_KERNELS.items()):
        monkeypatch.setitem(cheri_ops._RUN_KERNELS, layout, Spy(launcher))
    block = make_block(16, 3, 2, expansion=4, device=device)
    x = torch.randn(2, 16, 40, device=device, requires_grad=True)
    twin = fp64_twin(block)
    x64 = x.detach().double().requires_grad_()
    ref = twin.reference_forward(x64)
    chosen = dict(cheri_ops._chosen_configs)
    with _tuning.override(cheri_ops.TUNING_OP, **options):
        out = block(x)
        out.backward(torch.ones_like(out))
        with torch.no_grad():
            mega = block.eval()(x)
    ref.backward(torch.ones_like(ref))
    assert cheri_ops._chosen_configs == chosen
    assert max_abs(out, ref) < 1e-5 and max_abs(mega, ref) < 1e-5
    assert rel_err(x.grad, x64.grad) < 1e-5
    for kernel, constexprs, opts in launches:
        if "layout" in options:
            assert kernel is cheri_ops._KERNELS[options["layout"]]
            assert constexprs["Z_PRECOMPUTED"] == (options["layout"] == "split")
        for name, key in (("block_l", "BLOCK_L"), ("block_e", "BLOCK_E")):
            if name in options:
                assert constexprs[key] == options[name]
        if "warps" in options:
            assert opts["num_warps"] == options["warps"]
    assert len(launches) == 2


def test_gluon_plan_reads_z_from_registers_for_half_dots_by_default():
    # bf16/fp16 dots: on unless turned off by name; an fp32 model's bf16x3 keeps z (and its lo part) in shared memory
    from greyhound import _tuning
    x = torch.randn(2, 128, 256)
    tile = (64, 32, 4, 2, "gluon", 168)
    for mode, expected in (("bf16", True), ("fp16", True), ("bf16x3", False)):
        assert cheri_ops._make_plan(tile, x, 512, 3, mode, False, 4, "poly").kwargs["z_regs"] is expected, mode
    # at 64 hidden columns a chunk (the tiny-call tile) z stays in shared memory: there it measured level or slower
    assert cheri_ops._make_plan((64, 64, 4, 2, "gluon", None), x, 512, 3, "bf16", False, 4,
                                "poly").kwargs["z_regs"] is False
    with _tuning.override(cheri_ops.TUNING_OP, z_regs=False):
        assert cheri_ops._make_plan(tile, x, 512, 3, "bf16", False, 4, "poly").kwargs["z_regs"] is False
    with _tuning.override(cheri_ops.TUNING_OP, z_regs=True), pytest.raises(ValueError, match="z_regs .* bf16x3 dots"):
        cheri_ops._make_plan(tile, x, 512, 3, "bf16x3", False, 4, "poly")
    # the warp-specialised kernels: off unless asked for by name
    ws_tile = (64, 32, 4, 4, "gluon_wsz", None)
    assert cheri_ops._make_plan(ws_tile, x, 512, 3, "bf16", False, 4, "poly").kwargs["z_regs"] is False
    with _tuning.override(cheri_ops.TUNING_OP, z_regs=True):
        assert cheri_ops._make_plan(ws_tile, x, 512, 3, "bf16", False, 4, "poly").kwargs["z_regs"] is True


def test_gluon_plan_takes_the_chunk_loop_by_name_only():
    # the looped chunk schedule: off unless asked for; it needs one ring depth of at least 3, refused before launch
    from greyhound import _tuning
    x = torch.randn(2, 128, 256)
    assert cheri_ops._make_plan((64, 32, 4, 3, "gluon", 168), x, 512, 3, "bf16", False, 4,
                                "poly").kwargs["loop"] is False
    with _tuning.override(cheri_ops.TUNING_OP, loop=True):
        assert cheri_ops._make_plan((64, 32, 4, 3, "gluon", 168), x, 512, 3, "bf16", False, 4,
                                    "poly").kwargs["loop"] is True
        with pytest.raises(ValueError, match=r"loop needs stages >= 3 .* got stages=2, w1_stages=None"):
            cheri_ops._make_plan((64, 32, 4, 2, "gluon", 168), x, 512, 3, "bf16", False, 4, "poly")
    with _tuning.override(cheri_ops.TUNING_OP, loop=True, w1_stages=4):
        with pytest.raises(ValueError, match=r"loop needs stages >= 3 .* got stages=3, w1_stages=4"):
            cheri_ops._make_plan((64, 32, 4, 3, "gluon", 168), x, 512, 3, "bf16", False, 4, "poly")


def test_warp_specialised_plan_takes_the_pipelined_consumers_by_name_only():
    # the pipelined consumers: off unless asked for, and only for the warp-specialised layouts
    from greyhound import _tuning
    x = torch.randn(2, 128, 256)

    def plan_of(layout, stages=4, mode="bf16", block_e=64, max_registers=None, x_dtype=None):  # a 64-position tile
        # x of the model's dtype: bf16 for bf16 dots unless x_dtype says otherwise (an fp32 model's bf16 dots)
        x_dtype = x_dtype or {"bf16": torch.bfloat16, "fp16": torch.float16}.get(mode, torch.float32)
        return cheri_ops._make_plan((64, block_e, 4, stages, layout, max_registers), x.to(x_dtype), 512, 3, mode,
                                    False, 4, "poly")

    for layout in ("gluon_ws", "gluon_ws3"):
        plan = plan_of(layout, block_e=32)
        assert plan.kwargs["pipeline"] is False and plan.kwargs["consumers"] == {"gluon_ws": 2, "gluon_ws3": 3}[layout]
        assert plan.kwargs["z_producer"] is False
        with _tuning.override(cheri_ops.TUNING_OP, ws_pipeline=True):
            assert plan_of(layout, block_e=32).kwargs["pipeline"] is True
    with _tuning.override(cheri_ops.TUNING_OP, ws_pipeline=True):
        with pytest.raises(ValueError, match="ws_pipeline applies to the gluon_ws, gluon_ws3 and gluon_wsz layouts only; "
                                             "this call runs layout gluon"):
            plan_of("gluon", stages=3, block_e=32, max_registers=168)
    # the z producer's layout: two consumers beside it
    plan = plan_of("gluon_wsz")
    assert plan.kwargs["z_producer"] is True and plan.kwargs["consumers"] == 2 and plan.kwargs["pipeline"] is False
    assert plan.kwargs["pingpong"] == 1  # its default schedule; one chunk at a time by name
    assert plan.kwargs["b1_mma"] is True  # b1 by wgmma: on with the pingpong schedule, off by name or elsewhere
    with _tuning.override(cheri_ops.TUNING_OP, b1_mma=False):
        assert plan_of("gluon_wsz", stages=3).kwargs["b1_mma"] is False
    with _tuning.override(cheri_ops.TUNING_OP, b1_mma=True):
        with pytest.raises(ValueError, match="b1_mma applies to the gluon_wsz layout only; this call runs layout "
                                             "gluon_ws"):
            plan_of("gluon_ws", stages=3)
    with _tuning.override(cheri_ops.TUNING_OP, ws_schedule="chunk"):
        plan = plan_of("gluon_wsz", stages=3)
        assert plan.kwargs["pingpong"] == 0 and plan.kwargs["b1_mma"] is False
    # lone last-round tiles: on by default where measured (gluon_wsz on the ping-pong schedule), off on the others
    # unless asked for, and off when asked to be
    assert plan.kwargs["balance"] is False
    assert plan_of("gluon_wsz").kwargs["balance"] is True
    assert plan_of("gluon_ws", stages=3, block_e=32).kwargs["balance"] is False
    with _tuning.override(cheri_ops.TUNING_OP, ws_balance=False):
        assert plan_of("gluon_wsz").kwargs["balance"] is False
    for schedule in ("tail", "turns"):
        with _tuning.override(cheri_ops.TUNING_OP, ws_schedule=schedule):
            assert plan_of("gluon_wsz", stages=3).kwargs["balance"] is False
    with _tuning.override(cheri_ops.TUNING_OP, ws_balance=True):
        assert plan_of("gluon_ws").kwargs["balance"] is True
    # the residual's load after the last GEMM: by default gluon_wsz's on the ping-pong schedule with fp16 dots (where
    # it was measured faster), not with bf16 dots (slower) nor on the other layouts; the ping-pong and turns schedules
    # only; not where fp16's default ws_epilogue16 adds an early residual (the shuffled taps' shapes, K=3 here)
    assert plan_of("gluon_wsz", mode="fp16").kwargs["late_residual"] is False
    with _tuning.override(cheri_ops.TUNING_OP, ws_epilogue16=False):
        assert plan_of("gluon_wsz", mode="fp16").kwargs["late_residual"] is True
    assert cheri_ops._make_plan((64, 64, 4, 4, "gluon_wsz", None), x.half(), 512, 5, "fp16", False, 4,
                                "poly").kwargs["late_residual"] is True  # K=5 at dilation 4: no shuffles, no epilogue16
    assert plan_of("gluon_wsz").kwargs["late_residual"] is False
    assert plan_of("gluon_ws", mode="fp16").kwargs["late_residual"] is False
    with _tuning.override(cheri_ops.TUNING_OP, ws_late_residual=False):
        assert plan_of("gluon_wsz", mode="fp16").kwargs["late_residual"] is False
    with _tuning.override(cheri_ops.TUNING_OP, ws_late_residual=True):
        assert plan_of("gluon_wsz").kwargs["late_residual"] is True
    with _tuning.override(cheri_ops.TUNING_OP, ws_schedule="tail"):  # the default stays off where it cannot run
        assert plan_of("gluon_wsz", stages=3, mode="fp16").kwargs["late_residual"] is False
    for schedule in ("tail", "chunk"):
        with _tuning.override(cheri_ops.TUNING_OP, ws_late_residual=True, ws_schedule=schedule):
            with pytest.raises(ValueError, match=f"ws_late_residual applies to the pingpong and turns schedules only; "
                                                 f"this call runs ws_schedule={schedule}"):
                plan_of("gluon_wsz", stages=3, mode="fp16")
    # the z producer's L2 prefetch of x: by default 1 group ahead in gluon_wsz on the ping-pong schedule for a bf16
    # model whose taps are not shuffled (measured faster there with the taps in shared memory, slower beside shuffled
    # taps); none for an fp16 model (slower), an fp32 model's bf16 dots or the other schedules (unmeasured); gluon_wsz
    # only, 0..8 groups ahead (0: none)
    assert plan_of("gluon_wsz").kwargs["x_prefetch"] == 0  # K=3 at dilation 4: shuffled taps
    with _tuning.override(cheri_ops.TUNING_OP, ws_x_shuffle=False):
        assert plan_of("gluon_wsz").kwargs["x_prefetch"] == 1
    assert cheri_ops._make_plan((64, 64, 4, 4, "gluon_wsz", None), x.bfloat16(), 512, 4, "bf16", False, 4,
                                "poly").kwargs["x_prefetch"] == 1  # K=4 at dilation 4: a tap 12 positions back
    assert plan_of("gluon_wsz", mode="fp16").kwargs["x_prefetch"] == 0
    assert plan_of("gluon_wsz", x_dtype=torch.float32).kwargs["x_prefetch"] == 0
    assert plan_of("gluon_ws", stages=3, block_e=32).kwargs["x_prefetch"] == 0
    for schedule in ("tail", "turns", "chunk"):
        with _tuning.override(cheri_ops.TUNING_OP, ws_schedule=schedule):
            plan = plan_of("gluon_wsz", stages=3)
            assert plan.kwargs["x_prefetch"] == 0 and plan.kwargs["conv_smem"] is False
    with _tuning.override(cheri_ops.TUNING_OP, ws_x_prefetch=2):
        assert plan_of("gluon_wsz").kwargs["x_prefetch"] == 2
    with _tuning.override(cheri_ops.TUNING_OP, ws_x_prefetch=0):
        assert plan_of("gluon_wsz").kwargs["x_prefetch"] == 0
    with _tuning.override(cheri_ops.TUNING_OP, ws_x_prefetch="1"):
        assert plan_of("gluon_wsz", mode="fp16").kwargs["x_prefetch"] == 1
    with _tuning.override(cheri_ops.TUNING_OP, ws_x_prefetch=9):
        with pytest.raises(ValueError, match=r"ws_x_prefetch is a number of groups ahead in \[0, 8\] \(0: none; not "
                                             r"set: 1 for a bf16 model on the ping-pong schedule whose conv taps are "
                                             r"not shuffled, else none\), got 9"):
            plan_of("gluon_wsz")
    for bad in (-1, "-2"):
        with pytest.raises(ValueError, match=r"ws_x_prefetch must be an int >= 0 \(0: off\), got "):
            with _tuning.override(cheri_ops.TUNING_OP, ws_x_prefetch=bad):
                pass
    with pytest.raises(ValueError, match="ws_x_prefetch must be an int >= 0, got 'one'"):
        with _tuning.override(cheri_ops.TUNING_OP, ws_x_prefetch="one"):
            pass
    # the conv's taps in shared memory: by default where the prefetch is (a bf16 model, gluon_wsz, ping-pong, taps
    # not shuffled) and the taps leave the z ring as deep as without them; asked for by name, gluon_wsz only (any
    # dtype, any schedule)
    assert plan_of("gluon_wsz").kwargs["conv_smem"] is False  # K=3 at dilation 4: shuffled taps
    with _tuning.override(cheri_ops.TUNING_OP, ws_x_shuffle=False):
        assert plan_of("gluon_wsz").kwargs["conv_smem"] is True
    assert plan_of("gluon_wsz", mode="fp16").kwargs["conv_smem"] is False
    assert plan_of("gluon_wsz", x_dtype=torch.float32).kwargs["conv_smem"] is False
    assert plan_of("gluon_ws", stages=3, block_e=32).kwargs["conv_smem"] is False
    with _tuning.override(cheri_ops.TUNING_OP, ws_conv_smem=False):
        assert plan_of("gluon_wsz").kwargs["conv_smem"] is False
    # K=5: 8 fp32 rows (4 KiB) beside a weight ring of 4 leave 3 z slots instead of 4, so the default leaves the taps
    # in global memory; beside a ring of 3 the z ring keeps its 4 slots and the taps go to shared memory
    def plan_k(kernel_size, stages):
        return cheri_ops._make_plan((64, 64, 4, stages, "gluon_wsz", None), x.bfloat16(), 512, kernel_size, "bf16",
                                    False, 4, "poly")
    assert plan_k(4, 4).kwargs["conv_smem"] is True and plan_k(5, 4).kwargs["conv_smem"] is False
    assert plan_k(5, 3).kwargs["conv_smem"] is True
    with _tuning.override(cheri_ops.TUNING_OP, ws_conv_smem=True):
        assert plan_k(5, 4).kwargs["conv_smem"] is True
    with _tuning.override(cheri_ops.TUNING_OP, ws_conv_smem=True):
        assert plan_of("gluon_wsz").kwargs["conv_smem"] is True
        assert plan_of("gluon_wsz", mode="fp16").kwargs["conv_smem"] is True
    # the z producer's shuffled conv taps (ws_x_shuffle): by default for a 16-bit model in gluon_wsz on the ping-pong
    # schedule where the shuffles can take the taps (measured faster there: fp16 in session 44, bf16 with fp16's whole
    # configuration in session 47), off elsewhere (an fp32 model's bf16 or fp16 dots: x of 4 bytes); asked for by
    # name, gluon_wsz only, 16-bit x, taps an even number of positions back and at most 8, C a multiple of 16
    assert plan_of("gluon_wsz").kwargs["x_shuffle"] is True
    assert plan_of("gluon_wsz", mode="fp16").kwargs["x_shuffle"] is True
    assert plan_of("gluon_wsz", x_dtype=torch.float32).kwargs["x_shuffle"] is False
    assert plan_of("gluon_wsz", mode="fp16", x_dtype=torch.float32).kwargs["x_shuffle"] is False
    assert cheri_ops._make_plan((64, 64, 4, 4, "gluon_wsz", None), x.half(), 512, 5, "fp16", False, 4,
                                "poly").kwargs["x_shuffle"] is False  # K=5 at dilation 4: a tap 16 positions back
    for schedule in ("tail", "turns", "chunk"):
        with _tuning.override(cheri_ops.TUNING_OP, ws_schedule=schedule):
            assert plan_of("gluon_wsz", stages=3, mode="fp16").kwargs["x_shuffle"] is False
    with _tuning.override(cheri_ops.TUNING_OP, ws_x_shuffle=True):
        assert plan_of("gluon_wsz").kwargs["x_shuffle"] is True
        assert plan_of("gluon_wsz", mode="fp16").kwargs["x_shuffle"] is True
        with pytest.raises(ValueError, match=r"ws_x_shuffle cannot run this call: x of a 16-bit type \(bf16 or "
                                             r"fp16\), got torch.float32"):
            plan_of("gluon_wsz", x_dtype=torch.float32)
        with pytest.raises(ValueError, match=r"ws_x_shuffle cannot run this call: every conv tap an even number of "
                                             r"positions back and at most 8 .*got K=5, dilation=4"):
            plan_k(5, 4)
    with _tuning.override(cheri_ops.TUNING_OP, ws_x_shuffle=False):
        assert plan_of("gluon_wsz").kwargs["x_shuffle"] is False
        assert plan_of("gluon_wsz", mode="fp16").kwargs["x_shuffle"] is False
    # W1 and W2 in weight rings of their own (ws_split_ring) and the 16-bit tile tail (ws_epilogue16): by default
    # together where a 16-bit model's taps come by shuffles (measured faster there, session 47; each slower for bf16
    # with its taps in shared memory), not beside ws_cross_tile (one ring), epilogue16 not beside a late residual
    # asked for; off elsewhere; asked for by name on the pingpong schedule of gluon_wsz
    for mode in ("bf16", "fp16"):
        plan = plan_of("gluon_wsz", mode=mode)
        assert (plan.kwargs["x_shuffle"], plan.kwargs["split_ring"], plan.kwargs["epilogue16"],
                plan.kwargs["conv_smem"], plan.kwargs["x_prefetch"], plan.kwargs["late_residual"]) == \
            (True, True, True, False, 0, False)
        plan = plan_of("gluon_wsz", mode=mode, x_dtype=torch.float32)  # an fp32 model's 16-bit dots: none of them
        assert (plan.kwargs["x_shuffle"], plan.kwargs["split_ring"], plan.kwargs["epilogue16"]) == (False,) * 3
    for dtype, mode in ((torch.bfloat16, "bf16"), (torch.float16, "fp16")):
        for kernel_size in (3, 4, 5):  # K=4 and 5 at dilation 4: a tap 12 or 16 positions back, no shuffles: neither
            plan = cheri_ops._make_plan((64, 64, 4, 4, "gluon_wsz", None), x.to(dtype), 512, kernel_size, mode, False,
                                        4, "poly")
            shuffled = kernel_size == 3
            assert (plan.kwargs["x_shuffle"], plan.kwargs["split_ring"], plan.kwargs["epilogue16"]) == (shuffled,) * 3
            # bf16 without shuffles keeps its taps in shared memory (K=4; K=5 would cost a z slot) and the prefetch
            assert plan.kwargs["x_prefetch"] == int(mode == "bf16" and not shuffled)
            assert plan.kwargs["conv_smem"] is (mode == "bf16" and kernel_size == 4)
    assert plan_of("gluon_wsz", mode="fp16", x_dtype=torch.float32).kwargs["split_ring"] is False
    assert plan_of("gluon_wsz", mode="fp16", x_dtype=torch.float32).kwargs["epilogue16"] is False
    with _tuning.override(cheri_ops.TUNING_OP, ws_schedule="tail"):
        plan = plan_of("gluon_wsz", stages=3, mode="fp16")
        assert plan.kwargs["split_ring"] is False and plan.kwargs["epilogue16"] is False
    with _tuning.override(cheri_ops.TUNING_OP, ws_x_shuffle=False):
        plan = plan_of("gluon_wsz", mode="fp16")
        assert plan.kwargs["split_ring"] is False and plan.kwargs["epilogue16"] is False
    with _tuning.override(cheri_ops.TUNING_OP, ws_cross_tile=True):
        plan = plan_of("gluon_wsz", mode="fp16")
        assert (plan.kwargs["cross_tile"], plan.kwargs["split_ring"], plan.kwargs["epilogue16"]) == (True, False, False)
    with _tuning.override(cheri_ops.TUNING_OP, ws_late_residual=True):
        plan = plan_of("gluon_wsz", mode="fp16")
        assert (plan.kwargs["late_residual"], plan.kwargs["split_ring"], plan.kwargs["epilogue16"]) == \
            (True, True, False)
    for name in ("ws_split_ring", "ws_epilogue16"):
        with _tuning.override(cheri_ops.TUNING_OP, **{name: False}):
            plan = plan_of("gluon_wsz", mode="fp16")
            assert plan.kwargs[name[3:]] is False and plan.kwargs[{"ws_split_ring": "epilogue16",
                                                                    "ws_epilogue16": "split_ring"}[name]] is True
    with _tuning.override(cheri_ops.TUNING_OP, ws_split_ring=True):
        assert plan_of("gluon_wsz").kwargs["split_ring"] is True
        assert plan_of("gluon_wsz", mode="fp16").kwargs["split_ring"] is True
    for schedule in ("tail", "turns", "chunk"):
        for name in ("ws_split_ring", "ws_cross_tile", "ws_epilogue16"):
            with _tuning.override(cheri_ops.TUNING_OP, ws_schedule=schedule, **{name: True}):
                with pytest.raises(ValueError, match=f"{name} applies to the pingpong schedule only; this call runs "
                                                     f"ws_schedule={schedule}"):
                    plan_of("gluon_wsz", stages=3)
    # each tile's first GEMM with the previous tile's last one (ws_cross_tile): by name only (not yet timed); its
    # residual loads late unless asked otherwise (beside an early one the consumers spilled 900 bytes, offline)
    assert plan_of("gluon_wsz").kwargs["cross_tile"] is False
    with _tuning.override(cheri_ops.TUNING_OP, ws_cross_tile=True):
        plan = plan_of("gluon_wsz")
        assert plan.kwargs["cross_tile"] is True and plan.kwargs["late_residual"] is True
    with _tuning.override(cheri_ops.TUNING_OP, ws_cross_tile=True, ws_late_residual=False):
        assert plan_of("gluon_wsz").kwargs["late_residual"] is False
    for other in (dict(ws_split_ring=True), dict(z_regs=True)):
        with _tuning.override(cheri_ops.TUNING_OP, ws_cross_tile=True, **other):
            with pytest.raises(ValueError, match="ws_cross_tile runs with one weight ring and z from shared memory: "
                                                 "not with ws_split_ring or z_regs"):
                plan_of("gluon_wsz")
    # the residual added in the accumulator's layout, the 16-bit output through shared memory (ws_epilogue16), asked
    # for by name: it takes the early residual for every dtype (fp16's default without it is late), and refuses a
    # late one, ws_cross_tile (whose residual is late) and x of 4 bytes, naming them
    with _tuning.override(cheri_ops.TUNING_OP, ws_x_shuffle=False):
        assert plan_of("gluon_wsz").kwargs["epilogue16"] is False
    with _tuning.override(cheri_ops.TUNING_OP, ws_epilogue16=True):
        for mode in ("bf16", "fp16"):
            plan = plan_of("gluon_wsz", mode=mode)
            assert plan.kwargs["epilogue16"] is True and plan.kwargs["late_residual"] is False
        with pytest.raises(ValueError, match=r"ws_epilogue16 adds the residual .* got ws_cross_tile=None, "
                                             r"ws_late_residual=None, x of torch.float32"):
            plan_of("gluon_wsz", x_dtype=torch.float32)
    for other in (dict(ws_cross_tile=True), dict(ws_late_residual=True)):
        with _tuning.override(cheri_ops.TUNING_OP, ws_epilogue16=True, **other):
            with pytest.raises(ValueError, match=r"ws_epilogue16 adds the residual loaded before the tile's last GEMM "
                                                 r"to a 16-bit output: not with ws_cross_tile or ws_late_residual=True"):
                plan_of("gluon_wsz")
    with _tuning.override(cheri_ops.TUNING_OP, ws_epilogue16=False, ws_late_residual=True):
        assert plan_of("gluon_wsz").kwargs["late_residual"] is True
    # the consumers' registers: 160 by default for an fp16 model with its whole shuffled configuration, beside a
    # weight producer of 24 (measured faster there, sessions 49 and 50; bf16 slower with either), launch_ws's
    # defaults (None: 152 and 40) elsewhere; a config's own cap wins, and leaves the weight producer its default
    plan = plan_of("gluon_wsz", mode="fp16")
    assert (plan.kwargs["consumer_regs"], plan.kwargs["producer_regs"]) == (160, 24)
    for cap in (152, 160, 176):
        plan = plan_of("gluon_wsz", mode="fp16", max_registers=cap)
        assert (plan.kwargs["consumer_regs"], plan.kwargs["producer_regs"]) == (cap, None)
    assert plan_of("gluon_wsz").kwargs["consumer_regs"] is None  # bf16
    assert plan_of("gluon_wsz", mode="fp16", x_dtype=torch.float32).kwargs["consumer_regs"] is None
    assert cheri_ops._make_plan((64, 64, 4, 4, "gluon_wsz", None), x.half(), 512, 5, "fp16", False, 4,
                                "poly").kwargs["consumer_regs"] is None  # K=5 at dilation 4: no shuffles
    for other in (dict(ws_x_shuffle=False), dict(ws_split_ring=False), dict(ws_epilogue16=False)):
        with _tuning.override(cheri_ops.TUNING_OP, **other):
            plan = plan_of("gluon_wsz", mode="fp16")
            assert (plan.kwargs["consumer_regs"], plan.kwargs["producer_regs"]) == (None, None), other
    with _tuning.override(cheri_ops.TUNING_OP, ws_schedule="tail"):
        plan = plan_of("gluon_wsz", stages=3, mode="fp16")
        assert (plan.kwargs["consumer_regs"], plan.kwargs["producer_regs"]) == (None, None)
    plan = plan_of("gluon_ws", mode="fp16", stages=3, block_e=32)
    assert (plan.kwargs["consumer_regs"], plan.kwargs["producer_regs"]) == (None, None)
    # the weight producer's registers (ws_producer_regs): by name only, the warp-specialised layouts only; fp16's
    # consumers keep their 160 beside a producer that leaves room for them, 152 where it does not
    assert plan_of("gluon_wsz").kwargs["producer_regs"] is None
    with _tuning.override(cheri_ops.TUNING_OP, ws_producer_regs=24):
        assert plan_of("gluon_wsz").kwargs["producer_regs"] == 24
        plan = plan_of("gluon_wsz", mode="fp16")
        assert (plan.kwargs["producer_regs"], plan.kwargs["consumer_regs"]) == (24, 160)
        assert plan_of("gluon_ws", stages=3, block_e=32).kwargs["producer_regs"] == 24
        with pytest.raises(ValueError, match="ws_producer_regs applies to the gluon_ws, gluon_ws3 and gluon_wsz layouts "
                                             "only; this call runs layout gluon"):
            plan_of("gluon", stages=3, block_e=32, max_registers=168)
    with _tuning.override(cheri_ops.TUNING_OP, ws_producer_regs=40):  # session 49's fp16 default
        plan = plan_of("gluon_wsz", mode="fp16")
        assert (plan.kwargs["consumer_regs"], plan.kwargs["producer_regs"]) == (160, 40)
    with _tuning.override(cheri_ops.TUNING_OP, ws_producer_regs=120):
        plan = plan_of("gluon_wsz", mode="fp16")
        assert (plan.kwargs["consumer_regs"], plan.kwargs["producer_regs"]) == (None, 120)
    # the z producer's variants and the ring ones are gluon_wsz's alone: asked for in another layout, refused by name
    for variant in (dict(ws_x_prefetch=2), dict(ws_conv_smem=True), dict(ws_x_shuffle=True), dict(ws_split_ring=True),
                    dict(ws_cross_tile=True), dict(ws_epilogue16=True), dict(ws_conv_regs=True),
                    dict(ws_bf16_shifts=True), dict(ws_first_z=True)):
        with _tuning.override(cheri_ops.TUNING_OP, **variant):
            with pytest.raises(ValueError, match=f"{next(iter(variant))} applies to the gluon_wsz layout only; this "
                                                 f"call runs layout gluon_ws"):
                plan_of("gluon_ws", stages=3, block_e=32)
    # the conv's taps in the z producer's registers (ws_conv_regs): by name only (not yet timed); they replace the taps
    # in shared memory where those are a default (bf16 with loaded taps), and are refused beside them asked for by name
    for mode in ("bf16", "fp16"):
        assert plan_of("gluon_wsz", mode=mode).kwargs["conv_regs"] is False
        with _tuning.override(cheri_ops.TUNING_OP, ws_conv_regs=True):
            plan = plan_of("gluon_wsz", mode=mode)
            assert (plan.kwargs["conv_regs"], plan.kwargs["conv_smem"], plan.kwargs["x_shuffle"]) == (True, False, True)
    with _tuning.override(cheri_ops.TUNING_OP, ws_x_shuffle=False):
        assert plan_of("gluon_wsz").kwargs["conv_smem"] is True  # (the loaded taps' bf16 default)
        with _tuning.override(cheri_ops.TUNING_OP, ws_conv_regs=True):
            plan = plan_of("gluon_wsz")
            assert (plan.kwargs["conv_regs"], plan.kwargs["conv_smem"]) == (True, False)
    with _tuning.override(cheri_ops.TUNING_OP, ws_conv_regs=True, ws_conv_smem=True):
        with pytest.raises(ValueError, match=r"ws_conv_regs keeps the conv's taps in the z producer's registers: not "
                                             r"with ws_conv_smem=True"):
            plan_of("gluon_wsz")
    # a bf16 x's shuffled taps widened by shifts (ws_bf16_shifts): by name only (measured slower, session 53), where it
    # applies (bf16 x, shuffled taps); asked for elsewhere (fp16, loaded taps), refused by name
    for mode in ("bf16", "fp16"):
        assert plan_of("gluon_wsz", mode=mode).kwargs["bf16_shifts"] is False
    with _tuning.override(cheri_ops.TUNING_OP, ws_bf16_shifts=False):
        assert plan_of("gluon_wsz").kwargs["bf16_shifts"] is False
    with _tuning.override(cheri_ops.TUNING_OP, ws_x_shuffle=False):
        assert plan_of("gluon_wsz").kwargs["bf16_shifts"] is False
        with _tuning.override(cheri_ops.TUNING_OP, ws_bf16_shifts=True):
            with pytest.raises(ValueError, match=r"ws_bf16_shifts widens a bf16 x's shuffled conv taps: it needs x of "
                                                 r"torch.bfloat16 and shuffled taps \(ws_x_shuffle\), got x of "
                                                 r"torch.bfloat16, shuffled taps False"):
                plan_of("gluon_wsz")
    with _tuning.override(cheri_ops.TUNING_OP, ws_bf16_shifts=True):
        assert plan_of("gluon_wsz").kwargs["bf16_shifts"] is True
        with pytest.raises(ValueError, match=r"got x of torch.float16, shuffled taps True"):
            plan_of("gluon_wsz", mode="fp16")
    # consumer 1's first z (ws_first_z): by name only (N=512 level or slower on an H100, session 54), both 16-bit modes
    # and fp32's bf16x3; refused by name beside ws_cross_tile (whose first tile's first GEMM is issued before the tile
    # loop)
    for mode in ("bf16", "fp16", "bf16x3"):
        assert plan_of("gluon_wsz", mode=mode).kwargs["first_z"] is False
        with _tuning.override(cheri_ops.TUNING_OP, ws_first_z=True):
            assert plan_of("gluon_wsz", mode=mode).kwargs["first_z"] is True
    with _tuning.override(cheri_ops.TUNING_OP, ws_first_z=True, ws_cross_tile=True):
        with pytest.raises(ValueError, match=r"ws_first_z has consumer 1 compute its first tile's z beside the z "
                                             r"producer: it needs layout gluon_wsz and not ws_cross_tile, got layout "
                                             r"gluon_wsz, ws_cross_tile=True"):
            plan_of("gluon_wsz")
    # narrower chunks: by name only (measured and GPU-tested at 64 hidden columns)
    assert plan_of("gluon_wsz", block_e=32).kwargs["b1_mma"] is False
    with _tuning.override(cheri_ops.TUNING_OP, b1_mma=True):
        assert plan_of("gluon_wsz", block_e=32).kwargs["b1_mma"] is True
    with _tuning.override(cheri_ops.TUNING_OP, ws_schedule="turns"):
        assert plan_of("gluon_wsz", stages=3).kwargs["pingpong"] == 2


def test_tuning_override_errors_name_the_tunable(device):
    from greyhound import _tuning
    block = make_block(16, 3, 2, expansion=4, device=device)
    x = torch.randn(1, 16, 24, device=device)
    for options, words in ((dict(block_e=48), "block_e"), (dict(layout="xy"), "layout"), (dict(gelu="none"), "gelu"),
                           (dict(w1_stages=3, layout="lc"), "w1_stages applies to the gluon layout only; .* layout lc"),
                           (dict(z_regs=True, layout="lc"), "z_regs applies to the gluon layouts only .* layout lc"),
                           (dict(loop=True, layout="lc"), "loop applies to the gluon layout only; .* layout lc"),
                           (dict(ws_pipeline=True, layout="lc"), "ws_pipeline applies to the gluon_ws, gluon_ws3 and "
                                                                 "gluon_wsz layouts only; .* layout lc"),
                           (dict(ws_schedule="turns", layout="lc"), "ws_schedule applies to the gluon_ws, gluon_ws3 "
                                                                   "and gluon_wsz layouts only; .* layout lc"),
                           (dict(ws_thread_release=True, layout="lc"), "ws_thread_release applies to the gluon_ws, "
                                                                       "gluon_ws3 and gluon_wsz layouts only"),
                           (dict(ws_balance=True, layout="lc"), "ws_balance applies to the gluon_ws, gluon_ws3 and "
                                                                "gluon_wsz layouts only"),
                           (dict(ws_schedule="zigzag"), "ws_schedule must be one of chunk, pingpong, turns"),
                           (dict(ws_producer_regs=20), r"ws_producer_regs: the weight producer's register count "
                                                       r"\(ws_producer_regs\) must be a multiple of 8 in \[24, 256\] "
                                                       r"\(setmaxnreg\), got 20"),
                           (dict(ws_producer_regs=32, layout="lc"), "ws_producer_regs applies to the gluon_ws, "
                                                                    "gluon_ws3 and gluon_wsz layouts only; .* layout lc"),
                           (dict(warps=3), r"warps must be a power of 2 in \[1, 32\] \(num_warps\), got 3"),
                           (dict(maxnreg=8), r"maxnreg must be in \[16, 255\] registers a thread, got 8")):
        with _tuning.override(cheri_ops.TUNING_OP, **options), torch.no_grad(), pytest.raises(ValueError, match=words):
            block(x)
    if device == "cpu":  # the Gluon kernels are Hopper-only: asked for by name elsewhere, they say why they cannot run
        for layout in ("gluon", "gluon_ws", "gluon_ws3", "gluon_wsz"):
            with _tuning.override(cheri_ops.TUNING_OP, layout=layout), torch.no_grad():
                with pytest.raises(ValueError, match=f"layout {layout} does not apply here: .*compute capability 9"):
                    block.eval()(x)
    if device == "cpu":  # the shorter GELU fits are the warp-specialised kernels' only: no Triton kernel runs them
        for gelu in ("poly3", "poly2"):
            with _tuning.override(cheri_ops.TUNING_OP, gelu=gelu), torch.no_grad():
                with pytest.raises(ValueError, match=f"gelu={gelu} .* warp-specialised Gluon layouts only .* layout lc"):
                    block.eval()(x)
    with _tuning.override(cheri_ops.TUNING_OP, norm_block_l=24), pytest.raises(ValueError, match="norm_block_l"):
        cheri_ops.conv_norm(x, *block._params()[:4], dilation=2)
    with pytest.raises(ValueError, match="no tunable 'tile'"):
        with _tuning.override(cheri_ops.TUNING_OP, tile=32):
            pass


# ------------------------------------------------------------------------------------------------ GPU: H200 checks
# (moved from the former H200 check script) the issue's channels and length, real bf16/fp16 tl.dot, fp32 dot modes,
# odd shapes, the eval cache after an optimizer step, and the fused kernel's tile/layout variants.
VALUE_REL = {torch.float32: 1e-5, torch.bfloat16: 2e-2, torch.float16: 5e-3}
GRAD_REL = {torch.float32: 1e-5, torch.bfloat16: 3e-2, torch.float16: 1e-2}
MEGA_MAX_ABS = {torch.float32: 1e-5, **HALF_BOUNDS}


def _worst_grad_rel(block, twin, x, x64):
    return max([rel_err(x.grad, x64.grad)] + [rel_err(p.grad, p64.grad)
                                              for p, p64 in zip(block.parameters(), twin.parameters())])


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_gpu_training_path_and_megakernel_modes(dtype, monkeypatch):
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)  # fp32 means fp32 in the cuBLAS backward
    block = make_block(128, 3, 4, expansion=4, dtype=dtype, device="cuda")
    twin = fp64_twin(block)
    x = torch.randn(4, 128, 1024, device="cuda", dtype=dtype, requires_grad=True)
    x64 = x.detach().double().requires_grad_()
    out, ref = block(x), twin.reference_forward(x64)
    assert rel_err(out, ref) < VALUE_REL[dtype]
    grad_out = torch.randn_like(out)
    out.backward(grad_out)
    ref.backward(grad_out.double())
    assert _worst_grad_rel(block, twin, x, x64) < GRAD_REL[dtype]
    with torch.no_grad():
        no_eval = block.train()(x)
        evaluated = block.eval()(x)
    assert torch.equal(no_eval, evaluated)  # the inline cast and the cached one: bit for bit
    assert max_abs(evaluated, ref) < MEGA_MAX_ABS[dtype]


@pytest.mark.gpu
@pytest.mark.parametrize("fp32_dot", ["tf32x3", "ieee"])
def test_gpu_fp32_dot_modes(fp32_dot):
    block = make_block(128, 3, 4, expansion=4, device="cuda")
    x = torch.randn(4, 128, 1024, device="cuda")
    ref = fp64_twin(block).reference_forward(x.double())
    weights = cheri_ops.prepare_mlp_weights(block.fc1.weight, block.fc2.weight, fp32_dot)
    with torch.no_grad():
        out = cheri_ops.cheri_block_megakernel(x, *block._params(), dilation=4, mlp_weights=weights,
                                               fp32_dot=fp32_dot)
    assert max_abs(out, ref) < 1e-5


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gpu_odd_shape(dtype, monkeypatch):
    # C=96 (padded to 128 lanes), L=1000 (no tile divides it), K=2: both fused layouts, conv + norm, training grads
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    block = make_block(96, 2, 3, expansion=4, dtype=dtype, device="cuda")
    twin = fp64_twin(block)
    x = torch.randn(3, 96, 1000, device="cuda", dtype=dtype)
    ref = twin.reference_forward(x.double())
    with torch.no_grad():
        for config in (None, (64, 64, 4, 2, "cl")):
            out = cheri_ops.cheri_block_megakernel(x, *block._params(), dilation=3, config=config)
            assert max_abs(out, ref) < MEGA_MAX_ABS[dtype], config
        z = cheri_ops.conv_norm(x, *block._params()[:4], dilation=3)
    y64 = cheri_ops.causal_depthwise_conv(x.double(), twin.conv.weight, twin.conv.bias, 3)
    z64 = torch.nn.functional.layer_norm(y64.transpose(1, 2), (96,), twin.norm.weight, twin.norm.bias)
    assert rel_err(z, z64) < VALUE_REL[dtype]
    xg = x.clone().requires_grad_()
    x64 = x.double().requires_grad_()
    out, ref = block(xg), twin.reference_forward(x64)
    grad_out = torch.randn_like(out)
    out.backward(grad_out)
    ref.backward(grad_out.double())
    assert _worst_grad_rel(block, twin, xg, x64) < GRAD_REL[dtype]


@pytest.mark.gpu
def test_gpu_no_grad_fallback_and_cache_after_an_optimizer_step():
    block = make_block(12, 3, 4, expansion=3, device="cuda")  # hidden 36: not a multiple of 16
    x = torch.randn(2, 12, 300, device="cuda")
    with torch.no_grad():
        out = block.eval()(x)
    assert not block.uses_megakernel_when_no_grad
    assert rel_err(out, fp64_twin(block).reference_forward(x.double())) < 1e-5
    block = make_block(128, 3, 4, expansion=4, dtype=torch.bfloat16, device="cuda").eval()
    x = torch.randn(2, 128, 1024, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        before = block(x)
    optimizer = torch.optim.SGD(block.parameters(), lr=1.0)
    for p in block.parameters():  # a step of controlled size keeps the outputs at unit scale
        p.grad = 0.05 * torch.randn_like(p)
    optimizer.step()
    with torch.no_grad():
        after = block(x)
    assert max_abs(after, fp64_twin(block).reference_forward(x.double())) < HALF_BOUNDS[torch.bfloat16]
    assert max_abs(after, before) > 1e-2  # the cache was rebuilt: the new weights were used


# (dtype, fp32_dot, training, tunables): the variants a sweep times as `greyhound-megakernel[layout=...]` or
# `greyhound-train[...]`, each checked against fp64 before it may be trusted
_GPU_VARIANTS = [
    (torch.bfloat16, "bf16x3", False, dict(block_l=64, block_e=32, warps=4, stages=3, layout="lc")),
    (torch.bfloat16, "bf16x3", False, dict(block_l=128, block_e=64, warps=8, stages=2, layout="lc", maxnreg=128)),
    (torch.bfloat16, "bf16x3", False, dict(block_l=64, block_e=64, warps=4, stages=2, layout="cl")),
    (torch.bfloat16, "bf16x3", False, dict(block_l=128, block_e=64, warps=8, stages=2, layout="split", maxnreg=128)),
    (torch.bfloat16, "bf16x3", False, dict(block_l=128, block_e=128, warps=8, stages=2, layout="split")),
    (torch.bfloat16, "bf16x3", False, dict(gelu="erf")),
    (torch.bfloat16, "bf16x3", False, dict(gelu="tanh")),
    (torch.float16, "bf16x3", False, dict(block_l=64, block_e=32, warps=4, stages=3, layout="split")),
    (torch.float32, "bf16x3", False, dict(block_l=128, block_e=64, warps=8, stages=2, layout="split")),
    (torch.float32, "bf16", False, dict(block_l=128, block_e=64, warps=8, stages=2, layout="lc", maxnreg=128)),
    (torch.bfloat16, "bf16x3", True, dict(block_l=64, block_e=32, warps=4, stages=3, layout="lc")),
    (torch.bfloat16, "bf16x3", True, dict(block_l=128, block_e=64, warps=8, stages=2, layout="split", maxnreg=128)),
    (torch.float32, "bf16x3", True, dict(block_l=64, block_e=64, warps=4, stages=1, layout="lc")),
    (torch.float16, "bf16x3", True, dict(block_l=64, block_e=32, warps=4, stages=3, layout="lc")),
    (torch.bfloat16, "bf16x3", False, dict(block_l=128, block_e=64, warps=8, stages=4, layout="gluon")),
    (torch.bfloat16, "bf16x3", False, dict(block_l=64, block_e=32, warps=4, stages=3, layout="gluon")),
    (torch.bfloat16, "bf16x3", False, dict(block_l=64, block_e=32, warps=4, stages=3, layout="gluon",
                                           maxnreg=168)),
    (torch.float16, "bf16x3", False, dict(block_l=128, block_e=32, warps=8, stages=4, layout="gluon")),
    (torch.float32, "bf16", False, dict(block_l=64, block_e=64, warps=4, stages=3, layout="gluon")),
]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,fp32_dot,training,options", _GPU_VARIANTS,
                         ids=[f"{'train' if t else 'infer'}-{str(d)[6:]}-{f}-"
                              + ",".join(f"{k}={v}" for k, v in o.items()) for d, f, t, o in _GPU_VARIANTS])
def test_gpu_tuning_variants(dtype, fp32_dot, training, options):
    from greyhound import _tuning
    block = make_block(128, 3, 4, expansion=4, dtype=dtype, device="cuda", fp32_dot=fp32_dot)
    x = torch.randn(2, 128, 1024, device="cuda", dtype=dtype)
    ref = fp64_twin(block).reference_forward(x.double())
    with _tuning.override(cheri_ops.TUNING_OP, **options):
        if training:
            out = block.train()(x.requires_grad_())
        else:
            with torch.no_grad():
                out = block.eval()(x)
    bound = 3e-2 if fp32_dot == "bf16" else MEGA_MAX_ABS[dtype]  # one bf16 pass: bf16-class agreement
    assert max_abs(out, ref) < bound


@pytest.mark.gpu
@pytest.mark.parametrize("channels,expansion,length", [(128, 4, 1024), (32, 6, 333)])
def test_gpu_fp16_models_take_the_gluon_kernel_with_fp16_dots(monkeypatch, channels, expansion, length):
    """An fp16 model's eval and no-eval forwards run the Gluon kernel on its own fp16 weights (no cast launch): the
    same output as the Triton kernel in fp16 mode within a few output ulps, fp16-class agreement with fp64."""
    block = make_block(channels, 3, 4, expansion=expansion, dtype=torch.float16, device="cuda")
    x = torch.randn(3, channels, length, device="cuda", dtype=torch.float16)
    ref = fp64_twin(block).reference_forward(x.double())
    monkeypatch.setattr(cheri_ops, "_chosen_configs", {})
    monkeypatch.setattr(cheri_ops, "_plans", {})
    split = CallRecorder(monkeypatch, cheri_ops, "_split_bf16")
    with torch.no_grad():
        noeval = block.train()(x)
        gluon_out = block.eval()(x)
        triton_out = cheri_ops.cheri_block_megakernel(x, *block._params(), dilation=4, config=(64, 32, 4, 2, "lc"))
    assert [c[4] for c in cheri_ops._chosen_configs.values()] == ["gluon"] and split.calls == 0
    assert torch.equal(noeval, gluon_out)
    assert max_abs(gluon_out, ref) < HALF_BOUNDS[torch.float16]
    assert max_abs(gluon_out, triton_out) <= 4 * max_abs(triton_out, ref) + 4e-3


@pytest.mark.gpu
@pytest.mark.parametrize("channels,expansion,kernel_size,dilation,length", [
    (128, 4, 3, 4, 1024), (64, 1, 3, 4, 1024), (64, 2, 2, 3, 1000), (32, 6, 4, 1, 333), (16, 4, 3, 2, 700)])
@pytest.mark.parametrize("config", [(128, 64, 8, 4), (64, 32, 4, 3), (128, 16, 8, 3)])
def test_gpu_gluon_kernel_matches_the_triton_kernel(channels, expansion, kernel_size, dilation, length, config):
    """The Gluon (Hopper, software-pipelined) megakernel against the plain Triton kernel on the same bf16 dot
    operands and against fp64: 1 to 32 hidden chunks (odd and even counts), ragged L (masked tiles), C 16..128."""
    block = make_block(channels, kernel_size, dilation, expansion=expansion, dtype=torch.bfloat16, device="cuda")
    hidden = channels * expansion
    if hidden % config[1]:
        pytest.skip("BLOCK_E must divide the hidden width")
    x = torch.randn(3, channels, length, device="cuda", dtype=torch.bfloat16)
    ref = fp64_twin(block).reference_forward(x.double())
    params = block._params()
    with torch.no_grad():
        gluon_out = cheri_ops.cheri_block_megakernel(x, *params, dilation=dilation, config=config + ("gluon",))
        triton_out = cheri_ops.cheri_block_megakernel(x, *params, dilation=dilation, config=(64, 32, 4, 2, "lc"))
    assert torch.isfinite(gluon_out).all()
    assert max_abs(gluon_out, ref) < HALF_BOUNDS[torch.bfloat16]
    # same bf16 operands and fp32 accumulation, different summation order: a few bf16 ulps of the output at most
    assert max_abs(gluon_out, triton_out) <= 4 * max_abs(triton_out, ref) + 2e-2
    assert rel_err(gluon_out, ref) < 1.5 * rel_err(triton_out, ref) + 1e-3


# Shapes of the GPU tests that compare two Gluon kernel variants bit for bit: C 16..128, ragged L, 2 to 16 hidden
# chunks, and (batch 40) 640 tiles, several a program for the persistent kernel
BIT_EQUAL_SHAPES = [(128, 4, 3, 4, 1024, 40), (64, 2, 2, 3, 1000, 3), (32, 6, 4, 1, 333, 5), (16, 4, 3, 2, 700, 3)]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("channels,expansion,kernel_size,dilation,length,batch", BIT_EQUAL_SHAPES)
def test_gpu_gluon_w1_ring_depth_changes_no_bit(dtype, channels, expansion, kernel_size, dilation, length, batch):
    """A W1 ring deeper than the W2 ring (the `w1_stages` tuning variant, with its wait for W2 after the GELU) changes
    when data arrives, not what is summed: bit-equal outputs for ring depths 2 to 4, for bf16 dots and an fp32
    model's bf16x3, ragged L, 2 to 16 hidden chunks."""
    from greyhound import _tuning
    block = make_block(channels, kernel_size, dilation, expansion=expansion, dtype=dtype, device="cuda").eval()
    x = torch.randn(batch, channels, length, device="cuda", dtype=dtype)
    tile = dict(layout="gluon", block_l=64, block_e=32 if channels * expansion % 32 == 0 else 16, warps=4, stages=2)
    with torch.no_grad():
        with _tuning.override(cheri_ops.TUNING_OP, **tile, w1_stages=2):
            base = block(x)
        for w1_stages in (3, 4):
            with _tuning.override(cheri_ops.TUNING_OP, **tile, w1_stages=w1_stages):
                assert torch.equal(block(x), base), w1_stages
    # and right (a sanity bound: the 1e-5 fp32 goal has its own tests, on fewer outputs than these 5M)
    assert max_abs(base, fp64_twin(block).reference_forward(x.double())) < 2 * MEGA_MAX_ABS[dtype]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("channels,expansion,kernel_size,dilation,length,batch", BIT_EQUAL_SHAPES)
def test_gpu_gluon_z_from_registers_changes_no_bit(dtype, channels, expansion, kernel_size, dilation, length, batch):
    """The first GEMMs reading z from registers (the `z_regs` tuning variant) instead of shared memory multiply the
    same values in the same order: bit-equal outputs, for 64-, 32- and 16-column hidden chunks, ragged L."""
    from greyhound import _tuning
    block = make_block(channels, kernel_size, dilation, expansion=expansion, dtype=dtype, device="cuda").eval()
    x = torch.randn(batch, channels, length, device="cuda", dtype=dtype)
    for block_e in (64, 32, 16):
        if channels * expansion % block_e:
            continue
        tile = dict(layout="gluon", block_l=64, block_e=block_e, warps=4, stages=2)
        with torch.no_grad():
            with _tuning.override(cheri_ops.TUNING_OP, **tile, z_regs=False):
                base = block(x)
            for forced in (dict(z_regs=True), {}):  # {}: the default for these dots (on)
                with _tuning.override(cheri_ops.TUNING_OP, **tile, **forced):
                    assert torch.equal(block(x), base), (block_e, forced)
        assert max_abs(base, fp64_twin(block).reference_forward(x.double())) < 2 * MEGA_MAX_ABS[dtype]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,training,channels,expansion,kernel_size,dilation,length,batch", [
    *((torch.bfloat16, False, *shape) for shape in BIT_EQUAL_SHAPES),
    *((dtype, training, *shape) for dtype, training in ((torch.float16, False), (torch.float32, False),
                                                         (torch.float32, True), (torch.bfloat16, True))
      for shape in BIT_EQUAL_SHAPES[:2])])
def test_gpu_gluon_chunk_loop_changes_no_bit(dtype, training, channels, expansion, kernel_size, dilation, length,
                                             batch):
    """The looped chunk schedule (the `loop` tuning variant: chunks as a loop of two, one barrier a step, refills a
    step later) sums the same products in the same order as the unrolled one with the same ring: bit-equal outputs
    (and, for a training forward, equal gradients through the saved hidden layer) for 64-, 32- and 16-column chunks
    (2 to 32 of them: loops of 0 to 14 iterations), ring depths 3 and 4, z from registers (the default at 32 and 16
    columns) or shared memory, bf16x3, ragged L."""
    from greyhound import _tuning
    block = make_block(channels, kernel_size, dilation, expansion=expansion, dtype=dtype, device="cuda")
    block = block.train(training)
    x0 = torch.randn(batch, channels, length, device="cuda", dtype=dtype)

    def run(**options):
        x = x0.clone().requires_grad_(training)
        with torch.set_grad_enabled(training), _tuning.override(cheri_ops.TUNING_OP, **options):
            out = block(x)
        if not training:
            return out, None
        out.backward(torch.ones_like(out))  # (the backward is not tuned: it reads what the forward saved)
        return out.detach(), x.grad
    half = dtype != torch.float32 and not training
    for block_e, stages, z in ((64, 3, {}), (32, 3, {}), (16, 3, {}), (32, 4, dict(z_regs=False) if half else {})):
        if channels * expansion % block_e:
            continue
        tile = dict(layout="gluon", block_l=64, block_e=block_e, warps=4, stages=stages, **z)
        base, base_grad = run(**tile)
        out, grad = run(**tile, loop=True)
        assert torch.equal(out, base), (block_e, stages, z)
        if training:
            assert torch.equal(grad, base_grad), (block_e, stages)
    with torch.no_grad():
        ref = fp64_twin(block).reference_forward(x0.double())
    assert max_abs(out, ref) < 2 * MEGA_MAX_ABS[dtype]


@pytest.mark.gpu
@pytest.mark.parametrize("channels,expansion,kernel_size,dilation,length,batch", BIT_EQUAL_SHAPES)
@pytest.mark.parametrize("block_e,stages,layout,pipeline", [
    (32, 2, "gluon_ws", False), (64, 4, "gluon_ws", False), (32, 3, "gluon_ws3", False), (16, 4, "gluon_ws3", False),
    (32, 4, "gluon_ws", True), (32, 3, "gluon_ws", True), (16, 8, "gluon_ws", True), (64, 4, "gluon_ws", True),
    (32, 4, "gluon_ws3", True), (64, 4, "gluon_wsz", False), (64, 2, "gluon_wsz", False), (32, 6, "gluon_wsz", False),
    (64, 3, "gluon_wsz", 1), (64, 3, "gluon_wsz", 2), (32, 6, "gluon_wsz", 2), (64, 3, "gluon_ws", 2),
    (16, 8, "gluon_wsz", 2), (64, 5, "gluon_wsz", 1),
    pytest.param(64, 3, "gluon_wsz", dict(ws_schedule="pingpong", z_regs=True), id="64-3-gluon_wsz-pingpong1-z_regs"),
    pytest.param(64, 3, "gluon_wsz", dict(ws_schedule="tail"), id="64-3-gluon_wsz-tail"),
    pytest.param(32, 6, "gluon_wsz", dict(ws_schedule="tail"), id="32-6-gluon_wsz-tail"),
    pytest.param(16, 4, "gluon_wsz", dict(ws_schedule="tail"), id="16-4-gluon_wsz-tail"),
    pytest.param(64, 4, "gluon_wsz", dict(ws_schedule="pingpong", ws_thread_release=True),
                 id="64-4-gluon_wsz-pingpong1-thread_release"),
    pytest.param(64, 3, "gluon_wsz", dict(ws_schedule="tail", ws_thread_release=True),
                 id="64-3-gluon_wsz-tail-thread_release"),
    pytest.param(32, 6, "gluon_wsz", dict(ws_schedule="turns", ws_thread_release=True),
                 id="32-6-gluon_wsz-turns-thread_release"),
    pytest.param(32, 4, "gluon_ws", dict(ws_pipeline=True, ws_thread_release=True),
                 id="32-4-gluon_ws-pipelined-thread_release"),
    pytest.param(32, 3, "gluon_ws3", dict(ws_schedule="chunk", ws_thread_release=True),
                 id="32-3-gluon_ws3-chunk-thread_release"),
    pytest.param(64, 4, "gluon_wsz", dict(ws_schedule="pingpong", ws_balance=True),
                 id="64-4-gluon_wsz-pingpong1-balance"),
    pytest.param(64, 3, "gluon_wsz", dict(ws_schedule="tail", ws_balance=True, ws_thread_release=True),
                 id="64-3-gluon_wsz-tail-balance-thread_release"),
    pytest.param(32, 3, "gluon_ws3", dict(ws_schedule="chunk", ws_balance=True), id="32-3-gluon_ws3-chunk-balance"),
    pytest.param(32, 6, "gluon_wsz", dict(z_regs=True, ws_schedule="chunk"), id="32-6-gluon_wsz-z_regs"),
    pytest.param(32, 4, "gluon_ws", dict(ws_schedule="pingpong", z_regs=True), id="32-4-gluon_ws-pingpong1-z_regs")])
def test_gpu_warp_specialised_kernel_matches_the_gluon_kernel(channels, expansion, kernel_size, dilation, length,
                                                              batch, block_e, stages, layout, pipeline):
    """The warp-specialised persistent kernel (layouts gluon_ws / gluon_ws3: 2 / 3 consumers; one chunk at a time or
    pipelined, the ws_pipeline variant; gluon_wsz: z from the z producer's ring; `pipeline` 1 / 2 in the table is
    ws_schedule pingpong / turns instead, a dict the tunables) computes each tile exactly as the Gluon kernel with the same tile does, so the
    outputs are equal bit for bit: a ring slot (weights or z) read before it landed or released while a wgmma still
    reads it, a wrong phase on a later tile (batch 40: 640 tiles, several per CTA), a turn taken out of order, or a
    lost tile at the end of the last group would show (a lost turn would hang). Both stay within bf16 bounds of
    fp64."""
    from greyhound import _tuning
    hidden = channels * expansion
    if hidden % block_e:
        pytest.skip("BLOCK_E must divide the hidden width")
    block = make_block(channels, kernel_size, dilation, expansion=expansion, dtype=torch.bfloat16, device="cuda")
    x = torch.randn(batch, channels, length, device="cuda", dtype=torch.bfloat16)
    params = block._params()
    schedule = (dict(ws_pipeline=pipeline) if isinstance(pipeline, bool) else
                dict(pipeline) if isinstance(pipeline, dict) else dict(ws_schedule=("pingpong", "turns")[pipeline - 1]))
    schedule.setdefault("gelu", "poly")  # gluon_wsz's own default is the degree-3 fit: not the Gluon kernel's GELU
    if layout == "gluon_wsz":  # nor its b1 by wgmma (the same sum in another order)
        schedule.setdefault("b1_mma", False)
    if layout == "gluon_wsz" and pipeline is False:  # one chunk at a time, not its default ping-pong schedule
        schedule["ws_schedule"] = "chunk"
        del schedule["ws_pipeline"]
    with torch.no_grad(), _tuning.override(cheri_ops.TUNING_OP, **schedule):
        ws_out = cheri_ops.cheri_block_megakernel(x, *params, dilation=dilation,
                                                  config=(64, block_e, 4, stages, layout))
    with torch.no_grad():
        gluon_out = cheri_ops.cheri_block_megakernel(x, *params, dilation=dilation, config=(64, block_e, 4, 2, "gluon"))
    assert torch.equal(ws_out, gluon_out)
    ref = fp64_twin(block).reference_forward(x[:3].double())
    assert max_abs(ws_out[:3], ref) < HALF_BOUNDS[torch.bfloat16]


def test_lone_tiles_counts_the_last_rounds_single_tiles():
    # ws_balance's last round (the host's mirror of the kernel's _ws_groups): the tiles left after whole rounds of two
    # a CTA, when no more than the grid; else none (they go in pairs, as without it)
    lone_tiles = cheri_ops._cheri_gluon.lone_tiles
    assert lone_tiles(8192, 132) == 8  # N=512, L=1024: 31 whole rounds on an H200, 8 tiles left
    assert lone_tiles(1024, 132) == 0  # N=64: 232 left, more than the grid
    assert lone_tiles(264 * 3, 132) == 0 and lone_tiles(264 + 132, 132) == 132 and lone_tiles(264 + 133, 132) == 0
    assert lone_tiles(1, 1) == 1 and lone_tiles(5, 3) == 0 and lone_tiles(7, 3) == 1
    assert lone_tiles(3 * 132 + 5, 132, consumers=3) == 5


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["gluon_wsz", "gluon_ws3"])
@pytest.mark.parametrize("extra", ["none", "3", "grid", "grid+1", "one tile", "five tiles"])
def test_gpu_lone_last_round_tiles_change_no_bit(extra, layout):
    """ws_balance moves the last round's tiles, when few, to one a CTA on its first consumer, the other consumers only
    releasing each weight slot: the outputs are the default schedule's bit for bit, whatever is left after the whole
    rounds (nothing, a few, exactly the grid, one more than the grid, and grids smaller than the SMs), with two
    consumers (ping-pong and tail schedules) and three (one chunk at a time). A tile lost, taken from the wrong place
    (a lone tile is CONSUMERS * lone_start + its index among them), run twice on different z, or a slot released
    twice by an idle consumer would show (or hang)."""
    from greyhound import _tuning
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    consumers = {"gluon_wsz": 2, "gluon_ws3": 3}[layout]
    whole = consumers * sms  # tiles a whole round
    batch = {"none": 2 * whole, "3": whole + 3, "grid": whole + sms, "grid+1": whole + sms + 1, "one tile": 1,
             "five tiles": 5}[extra]
    block = make_block(32, 3, 2, expansion=4, dtype=torch.bfloat16, device="cuda").eval()
    x = torch.randn(batch, 32, 64, device="cuda", dtype=torch.bfloat16)  # one 64-position tile a sequence
    grid = min(-(-batch // consumers), sms)
    lone = cheri_ops._cheri_gluon.lone_tiles(batch, grid, consumers)
    assert lone == {"none": 0, "3": 3, "grid": sms, "grid+1": 0, "one tile": 1, "five tiles": 0}[extra]
    schedules = ("pingpong", "tail") if layout == "gluon_wsz" else ("chunk", )
    config = (64, 64, 4, 3, layout) if layout == "gluon_wsz" else (64, 32, 4, 3, layout)
    outs = {}
    for balance in (False, True):
        for schedule in schedules:
            with torch.no_grad(), _tuning.override(cheri_ops.TUNING_OP, ws_balance=balance, ws_schedule=schedule):
                outs[balance, schedule] = cheri_ops.cheri_block_megakernel(x, *block._params(), dilation=2,
                                                                           config=config)
    for schedule in schedules:
        assert torch.equal(outs[True, schedule], outs[False, schedule]), schedule
    ref = fp64_twin(block).reference_forward(x[-3:].double())
    assert max_abs(outs[True, schedules[0]][-3:], ref) < HALF_BOUNDS[torch.bfloat16]


@pytest.mark.gpu
@pytest.mark.parametrize("schedule", ["pingpong", "turns"])
@pytest.mark.parametrize("length", [1024, 1000])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_gpu_late_residual_changes_no_bit(dtype, length, schedule):
    """ws_late_residual loads each tile's residual after its last GEMM instead of before it: the same sum, so the
    same output bit for bit, whole and ragged L (a residual from the wrong tile or rows, or a mask lost on the ragged
    tile, would move whole rows by |x| ~ 1)."""
    from greyhound import _tuning
    block = make_block(128, 3, 4, expansion=4, dtype=dtype, device="cuda").eval()
    x = torch.randn(24, 128, length, device="cuda", dtype=dtype)
    stages = 4 if schedule == "pingpong" else 3
    outs = {}
    with torch.no_grad():
        for late in (False, True):
            with _tuning.override(cheri_ops.TUNING_OP, ws_late_residual=late, ws_schedule=schedule):
                outs[late] = cheri_ops.cheri_block_megakernel(x, *block._params(), dilation=4,
                                                              config=(64, 64, 4, stages, "gluon_wsz"))
    assert torch.equal(outs[True], outs[False])
    ref = fp64_twin(block).reference_forward(x[-2:].double())
    assert max_abs(outs[True][-2:], ref) < HALF_BOUNDS[dtype]


@pytest.mark.gpu
@pytest.mark.parametrize("variant", [dict(ws_x_prefetch=1), dict(ws_x_prefetch=2), dict(ws_conv_smem=True),
                                     dict(ws_x_prefetch=1, ws_conv_smem=True), dict(ws_split_ring=True),
                                     dict(ws_split_ring=True, ws_thread_release=True), dict(ws_cross_tile=True),
                                     dict(ws_epilogue16=True), dict(ws_epilogue16=True, ws_split_ring=True)],
                         ids=["x_prefetch1", "x_prefetch2", "conv_smem", "both", "split_ring",
                              "split_ring_thread_release", "cross_tile", "epilogue16", "epilogue16_split_ring"])
@pytest.mark.parametrize("kernel_size", [3, 5])
@pytest.mark.parametrize("length", [1024, 1000])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_gpu_z_producer_variants_change_no_bit(dtype, length, kernel_size, variant):
    """The z producer's variants change where its inputs come from, not what it computes: ws_x_prefetch only asks L2
    for lines it reads later (prefetch.global.L2 writes nothing), ws_conv_smem reads the same fp32 taps from shared
    memory (K=5: rows padded to 8, and 3 z slots); ws_split_ring streams the same weight slices through two rings (a
    slot released early, or a fill landing late, would change bits or hang; with lone tiles the idle consumer releases
    both rings' slots); ws_cross_tile issues each tile's first GEMM early, from the next tile's z slot and W1 slot
    (after the last tile a throwaway one on the current slots), with the residual loaded late (bit-equal to the early
    load: test_gpu_late_residual_changes_no_bit); ws_epilogue16 makes the same sum and rounding in the accumulator's
    layout and moves the 16-bit output through shared memory (a wrong lane, position or mask there would move
    outputs, a masked 16-byte store at ragged L most of all). The same output bit for bit, whole and ragged L, with lone
    last-round tiles (N=40 at L=1024: 640 tiles on a 132-SM GPU). Against the kernel with all of them off and the taps
    from the same source, and the default against it too (at K=3 the shuffled taps with ws_split_ring and
    ws_epilogue16, the pair GPU-checked nowhere else; at K=5 for bf16 the prefetch, its taps in shared memory costing a
    z slot).
    Where the default shuffles the taps (K=3), each variant is checked with loaded taps as well; shuffled against loaded
    taps is not a bit-for-bit comparison (the LayerNorm's sums run in another lane layout): that is
    test_gpu_shuffled_conv_taps_match_loaded_taps's, within a few ulps. Before: the default (shuffled) was compared
    with loaded taps bit for bit, which failed on an H100 (session 48, 36 of 36 at K=3) with every variant bit-equal."""
    from greyhound import _tuning
    from greyhound.ops import _cheri_gluon
    block = make_block(128, kernel_size, 4, expansion=4, dtype=dtype, device="cuda").eval()
    x = torch.randn(40, 128, length, device="cuda", dtype=dtype)
    config = (64, 64, 4, 4, "gluon_wsz")
    default_shuffles = _cheri_gluon.x_shuffle_refusal(dtype, 128, kernel_size, 4) is None
    all_off = dict(ws_x_prefetch=0, ws_conv_smem=False, ws_split_ring=False, ws_epilogue16=False)
    with torch.no_grad():
        default = cheri_ops.cheri_block_megakernel(x, *block._params(), dilation=4, config=config)
        ref = fp64_twin(block).reference_forward(x[-2:].double())
        for shuffle in sorted({default_shuffles, False}, reverse=True):
            with _tuning.override(cheri_ops.TUNING_OP, ws_x_shuffle=shuffle, **all_off):
                expected = cheri_ops.cheri_block_megakernel(x, *block._params(), dilation=4, config=config)
                with _tuning.override(cheri_ops.TUNING_OP, **variant):
                    out = cheri_ops.cheri_block_megakernel(x, *block._params(), dilation=4, config=config)
            assert torch.equal(out, expected), f"ws_x_shuffle={shuffle}"
            if shuffle == default_shuffles:
                assert torch.equal(default, expected), "the default"
            assert max_abs(out[-2:], ref) < HALF_BOUNDS[dtype]


@pytest.mark.gpu
@pytest.mark.parametrize("length", [1024, 1000])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_gpu_consumer_registers_change_no_bit(dtype, length):
    """gluon_wsz's consumers' register share (the config's cap; fp16's default 160 since session 49, bf16's 152) and the
    weight producer's (ws_producer_regs) move registers between the partitions, not arithmetic: the same output bit for
    bit at 152, 160 and 176 (the z producer then at 168, 152 and 120) and at 152 and 160 beside a weight producer of 24
    (the z producer at 184 and 168), whole and ragged L, with lone last-round tiles (N=40)."""
    from greyhound import _tuning
    block = make_block(128, 3, 4, expansion=4, dtype=dtype, device="cuda").eval()
    x = torch.randn(40, 128, length, device="cuda", dtype=dtype)
    config = (64, 64, 4, 4, "gluon_wsz")
    with torch.no_grad():
        default = cheri_ops.cheri_block_megakernel(x, *block._params(), dilation=4, config=config)
        for regs, producer in ((152, None), (160, None), (176, None), (152, 24), (160, 24)):
            forced = {"maxnreg": regs} if producer is None else {"maxnreg": regs, "ws_producer_regs": producer}
            with _tuning.override(cheri_ops.TUNING_OP, **forced):
                out = cheri_ops.cheri_block_megakernel(x, *block._params(), dilation=4, config=config)
            assert torch.equal(out, default), (regs, producer)
        ref = fp64_twin(block).reference_forward(x[-2:].double())
    assert max_abs(default[-2:], ref) < HALF_BOUNDS[dtype]


@pytest.mark.gpu
@pytest.mark.parametrize("kernel_size, dilation, shuffled", [(3, 4, True), (5, 2, True), (2, 8, True), (3, 4, False),
                                                          (4, 3, False)])
@pytest.mark.parametrize("length", [1024, 995])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_gpu_conv_taps_in_registers_change_no_bit(dtype, length, kernel_size, dilation, shuffled):
    """ws_conv_regs loads the conv's taps once into the z producer's registers instead of every tile: the same fp32
    tap values in the same products and sums, so the same output bit for bit, with shuffled taps (the 16-bit
    defaults) and loaded ones (bf16's with the taps in shared memory otherwise; K=4 at dilation 3 cannot shuffle),
    whole and ragged L, N=40 (lone last-round tiles)."""
    from greyhound import _tuning
    block = make_block(128, kernel_size, dilation, expansion=4, dtype=dtype, device="cuda").eval()
    x = torch.randn(40, 128, length, device="cuda", dtype=dtype)
    config = (64, 64, 4, 4, "gluon_wsz")
    with torch.no_grad(), _tuning.override(cheri_ops.TUNING_OP, ws_x_shuffle=shuffled):
        default = cheri_ops.cheri_block_megakernel(x, *block._params(), dilation=dilation, config=config)
        with _tuning.override(cheri_ops.TUNING_OP, ws_conv_regs=True):
            in_registers = cheri_ops.cheri_block_megakernel(x, *block._params(), dilation=dilation, config=config)
        ref = fp64_twin(block).reference_forward(x[-2:].double())
    assert torch.equal(in_registers, default)
    assert max_abs(default[-2:], ref) < HALF_BOUNDS[dtype]


@pytest.mark.gpu
@pytest.mark.parametrize("kernel_size, dilation", [(3, 4), (5, 2), (2, 8)])
@pytest.mark.parametrize("length", [1024, 995])
def test_gpu_bf16_shifts_change_no_bit(length, kernel_size, dilation):
    """ws_bf16_shifts (a variant for a bf16 x whose taps come by shuffles, the default's) widens the taps to fp32 by a
    shift and an and of each register of two instead of cvt.f32.bf16: exact either way, so its output equals the
    default's bit for bit, whole and ragged L, N=40 (lone last-round tiles). Halves taken in the wrong order (a pair's
    two positions swapped) would move most outputs; the fp64 reference bounds the default too."""
    from greyhound import _tuning
    block = make_block(128, kernel_size, dilation, expansion=4, dtype=torch.bfloat16, device="cuda").eval()
    x = torch.randn(40, 128, length, device="cuda", dtype=torch.bfloat16)
    config = (64, 64, 4, 4, "gluon_wsz")
    with torch.no_grad():
        default = cheri_ops.cheri_block_megakernel(x, *block._params(), dilation=dilation, config=config)
        with _tuning.override(cheri_ops.TUNING_OP, ws_bf16_shifts=True):
            shifted = cheri_ops.cheri_block_megakernel(x, *block._params(), dilation=dilation, config=config)
        ref = fp64_twin(block).reference_forward(x[-2:].double())
    assert torch.equal(shifted, default)
    assert max_abs(default[-2:], ref) < HALF_BOUNDS[torch.bfloat16]


@pytest.mark.gpu
@pytest.mark.parametrize("kernel_size, variant, batch, length", [
    (3, dict(), 40, 1024), (3, dict(), 40, 1000), (3, dict(), 3, 1024), (3, dict(), 1, 64), (3, dict(), 1, 1),
    (3, dict(ws_x_shuffle=False), 40, 1024), (5, dict(), 40, 1000), (3, dict(ws_conv_regs=True), 40, 1024)],
    ids=["default-N40", "default-ragged", "default-N3", "default-one-tile", "default-L1", "loaded_taps", "K5-ragged",
         "conv_regs"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_gpu_first_z_changes_no_bit(dtype, kernel_size, variant, batch, length):
    """ws_first_z: consumer 1 computes its first tile's z itself (the z producer's function, layout and taps: shuffled,
    loaded, staged in shared memory for bf16's loaded taps, or in registers) and the z producer skips that tile. The
    same z, so the same output bit for bit: a slot or barrier phase off by one would hang or hand a consumer another
    tile's z (most outputs moved), a wrong tile would move that tile's outputs. Whole and ragged L; N=40 (lone
    last-round tiles on a 132-SM GPU), 3 at L=1024 (48 tiles: one group a CTA, every CTA's first), one tile (its
    group's second tile repeats the first and is not stored) and L=1 (a masked tile)."""
    from greyhound import _tuning
    block = make_block(128, kernel_size, 4, expansion=4, dtype=dtype, device="cuda").eval()
    x = torch.randn(batch, 128, length, device="cuda", dtype=dtype)
    config = (64, 64, 4, 4, "gluon_wsz")
    with torch.no_grad(), _tuning.override(cheri_ops.TUNING_OP, **variant):
        expected = cheri_ops.cheri_block_megakernel(x, *block._params(), dilation=4, config=config)
        with _tuning.override(cheri_ops.TUNING_OP, ws_first_z=True):
            out = cheri_ops.cheri_block_megakernel(x, *block._params(), dilation=4, config=config)
        ref = fp64_twin(block).reference_forward(x[-1:].double())
    assert torch.equal(out, expected)
    assert max_abs(out[-1:], ref) < HALF_BOUNDS[dtype]


@pytest.mark.gpu
@pytest.mark.parametrize("kernel_size, dilation", [(3, 4), (5, 2), (2, 8)])
@pytest.mark.parametrize("length", [1024, 1000, 995])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_gpu_shuffled_conv_taps_match_loaded_taps(dtype, length, kernel_size, dilation):
    """ws_x_shuffle takes the conv's shifted taps from the other lane of a lane pair (and the pair's first lane from
    one load of the 8 positions before it) instead of loading them: the same tap values, so the same conv, but the
    LayerNorm's sums over C run in another lane layout (16 lanes of 8 channels, not 8 of 16), so z may differ in its
    last fp32 bits and round to the other 16-bit neighbour now and then. A tap taken from the wrong positions or lane
    would move most outputs by far more. Whole and ragged L (masked last tile; at L=995 a lane pair's first lane
    holds the sequence's last 3 positions and 5 past it, and its 8 previous positions must still be loaded), every
    even shift up to 8, each sequence's first tile (its first lanes' halo is the causal zero padding), N=40 (lone
    last-round tiles). The whole output is compared, so a wrong tap near the ragged end fails the ulp bound."""
    from greyhound import _tuning
    block = make_block(128, kernel_size, dilation, expansion=4, dtype=dtype, device="cuda").eval()
    x = torch.randn(40, 128, length, device="cuda", dtype=dtype)
    config = (64, 64, 4, 4, "gluon_wsz")
    with torch.no_grad():
        with _tuning.override(cheri_ops.TUNING_OP, ws_x_shuffle=False):  # (an fp16 model's default shuffles)
            loaded = cheri_ops.cheri_block_megakernel(x, *block._params(), dilation=dilation, config=config)
        with _tuning.override(cheri_ops.TUNING_OP, ws_x_shuffle=True):
            shuffled = cheri_ops.cheri_block_megakernel(x, *block._params(), dilation=dilation, config=config)
    ulp = torch.finfo(dtype).eps * loaded.float().abs().clamp_min(1.0)
    moved = (shuffled.float() - loaded.float()).abs()
    assert (moved <= 4 * ulp).all(), moved.max()
    assert (shuffled != loaded).float().mean() < 0.05
    ref = fp64_twin(block).reference_forward(x[-2:].double())
    assert max_abs(shuffled[-2:], ref) < HALF_BOUNDS[dtype]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_gpu_short_gelu_stays_within_half_bounds(dtype):
    """gluon_wsz's default GELU, a shorter fit (bf16 and, since session 41, fp16 dots: poly2, 8.6e-5 absolute): within
    the half-precision bounds of fp64, and against the degree-6 poly GELU at most one output ulp apart on a few elements
    (a wrong coefficient would move most of them). The default path at N=24 (24Ki positions: above the tiny class) runs
    exactly it, with the default's lone last-round tiles (ws_balance) changing no bit."""
    from greyhound import _tuning
    block = make_block(128, 3, 4, expansion=4, dtype=dtype, device="cuda").eval()
    x = torch.randn(24, 128, 1024, device="cuda", dtype=dtype)
    assert 24 * 1024 > cheri_ops._TINY_INFERENCE_ROWS
    params = block._params()
    with torch.no_grad():
        short = cheri_ops.cheri_block_megakernel(x, *params, dilation=4, config=(64, 64, 4, 4, "gluon_wsz"))
        fit = {torch.bfloat16: "poly2", torch.float16: "poly2"}[dtype]
        with _tuning.override(cheri_ops.TUNING_OP, gelu=fit, ws_balance=False):
            forced = cheri_ops.cheri_block_megakernel(x, *params, dilation=4, config=(64, 64, 4, 4, "gluon_wsz"))
        with _tuning.override(cheri_ops.TUNING_OP, gelu="poly"):
            base = cheri_ops.cheri_block_megakernel(x, *params, dilation=4, config=(64, 64, 4, 4, "gluon_wsz"))
        default = block(x)
    assert torch.equal(short, forced) and torch.equal(default, short)
    ref = fp64_twin(block).reference_forward(x.double())
    assert max_abs(short, ref) < HALF_BOUNDS[dtype]
    ulp = torch.finfo(dtype).eps * base.float().abs().clamp_min(1.0)
    differ = short != base
    assert ((short.float() - base.float()).abs() <= ulp).all() and differ.float().mean() < 0.25


@pytest.mark.gpu
@pytest.mark.parametrize("b1_mma", [True, False])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_gpu_degree_two_gelu_stays_within_half_bounds(dtype, b1_mma):
    """gelu=poly2 (the degree-2 GELU fit, 8.6e-5 absolute; bf16's default and, since session 41, fp16's) in gluon_wsz:
    within the dtype's bounds of fp64, and against the degree-6 poly GELU at most one output ulp apart on a minority
    of elements (a wrong coefficient, or the fit's 1e-4 landing in the output, would move most of them)."""
    from greyhound import _tuning
    block = make_block(128, 3, 4, expansion=4, dtype=dtype, device="cuda").eval()
    x = torch.randn(24, 128, 1024, device="cuda", dtype=dtype)
    params = block._params()
    with torch.no_grad():
        with _tuning.override(cheri_ops.TUNING_OP, gelu="poly2", b1_mma=b1_mma):
            short = cheri_ops.cheri_block_megakernel(x, *params, dilation=4, config=(64, 64, 4, 4, "gluon_wsz"))
        with _tuning.override(cheri_ops.TUNING_OP, gelu="poly", b1_mma=b1_mma):
            base = cheri_ops.cheri_block_megakernel(x, *params, dilation=4, config=(64, 64, 4, 4, "gluon_wsz"))
    ref = fp64_twin(block).reference_forward(x.double())
    assert max_abs(short, ref) < HALF_BOUNDS[dtype]
    ulp = torch.finfo(dtype).eps * base.float().abs().clamp_min(1.0)
    assert ((short.float() - base.float()).abs() <= ulp).all() and (short != base).float().mean() < 0.25


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_degree_two_gelu_is_below_a_half_precision_blocks_own_rounding(dtype):
    """Why gelu=poly2 may run an fp16 block although fp16 rounds a small hidden element finer than the fit's 8.6e-5:
    with the kernel's roundings emulated in fp64 (z, the hidden layer and the output rounded to the dtype; GEMMs and
    GELU exact otherwise), the degree-2 fit's output stays within one output ulp of the degree-6 fit's everywhere,
    differs on a minority of elements, adds at most 5% to the mean error against the unrounded fp64 block and nothing
    that passes the dtype's bound. A fit 10x worse (coefficients off) moves most outputs and fails."""
    gluon_module = cheri_ops._cheri_gluon
    block = make_block(128, 3, 4, expansion=4, dtype=dtype).eval()
    p = [t.double() for t in block._params()]
    x = torch.randn(2, 128, 1024, dtype=dtype).double()
    exact = cheri_ops.cheri_block_reference(x, *p, dilation=4)
    z = cheri_ops.conv_norm_reference(x, *p[:4], dilation=4).to(dtype).double()
    u = torch.nn.functional.linear(z, p[4], p[5])

    def fit(coefficients, clamp=None):
        a = u.abs()
        q = torch.zeros_like(a)
        for c in coefficients:
            q = q * a.clamp(max=clamp or math.inf) + c
        hidden = (u.clamp(min=0) - a * torch.exp2(a * q - 1)).to(dtype).double()
        return (x + torch.nn.functional.linear(hidden, p[6], p[7]).transpose(1, 2)).to(dtype).double()

    degree6 = fit(gluon_module.ERFC_HALF_LOG2_POLY.value)
    degree3 = fit(gluon_module.ERFC_HALF_LOG2_POLY3.value, gluon_module.POLY3_CLAMP.value)
    degree2 = fit(gluon_module.ERFC_HALF_LOG2_POLY2.value)
    ulp = torch.finfo(dtype).eps * degree6.abs().clamp_min(1.0)
    assert ((degree2 - degree6).abs() <= ulp).all() and (degree2 != degree6).double().mean() < 0.25
    assert (degree2 - exact).abs().max() < HALF_BOUNDS[dtype]
    assert (degree2 - exact).abs().mean() < 1.05 * (degree3 - exact).abs().mean()
    worse = fit([10 * c for c in gluon_module.ERFC_HALF_LOG2_POLY2.value[:1]] + list(
        gluon_module.ERFC_HALF_LOG2_POLY2.value[1:]))
    assert not ((worse - degree6).abs() <= ulp).all() or (worse != degree6).double().mean() >= 0.25


@pytest.mark.gpu
@pytest.mark.parametrize("schedule", ["pingpong", "tail"])
@pytest.mark.parametrize("block_e", [64, 32, 16])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("channels,expansion,kernel_size,dilation,length,batch", BIT_EQUAL_SHAPES)
def test_gpu_b1_by_wgmma_matches_the_bias_add(dtype, channels, expansion, kernel_size, dilation, length, batch,
                                              block_e, schedule):
    """b1_mma (gluon_wsz, pingpong): b1 enters the first GEMM's fp32 accumulator through a k=16 wgmma instead of an
    FADD on it, so pre-activations differ only in fp32 rounding order; the output stays within the half bounds of fp64
    and within two output ulps of the FADD kernel (a b1 block in the wrong chunk, a stale ones column or a missing
    fence would move whole rows by |b1| ~ 0.2), on C 16..128, ragged L and 640 tiles, and 16 to 64 hidden columns a
    chunk (the default takes it at 64; 16 and 32 by name), on the ping-pong and the tail schedules."""
    from greyhound import _tuning
    if channels * expansion % block_e:
        pytest.skip("BLOCK_E must divide the hidden width")
    block = make_block(channels, kernel_size, dilation, expansion=expansion, dtype=dtype, device="cuda")
    x = torch.randn(batch, channels, length, device="cuda", dtype=dtype)
    params = block._params()
    config = (64, block_e, 4, 3 if schedule == "tail" else 4, "gluon_wsz")
    with torch.no_grad(), _tuning.override(cheri_ops.TUNING_OP, ws_schedule=schedule):
        default = cheri_ops.cheri_block_megakernel(x, *params, dilation=dilation, config=config)
        with _tuning.override(cheri_ops.TUNING_OP, ws_schedule=schedule, b1_mma=False):
            base = cheri_ops.cheri_block_megakernel(x, *params, dilation=dilation, config=config)
        with _tuning.override(cheri_ops.TUNING_OP, ws_schedule=schedule, b1_mma=True):
            folded = cheri_ops.cheri_block_megakernel(x, *params, dilation=dilation, config=config)
    assert torch.equal(default, folded if block_e == 64 else base)
    ulp = torch.finfo(dtype).eps * base.float().abs().clamp_min(1.0)
    assert ((folded.float() - base.float()).abs() <= 2 * ulp).all()
    ref = fp64_twin(block).reference_forward(x[:3].double())
    assert max_abs(folded[:3], ref) < HALF_BOUNDS[dtype]


def test_degree_two_gelu_fit_holds_everywhere():
    """The degree-2 GELU (gelu=poly2, bf16 dots) as _gelu_poly evaluates it, in fp32 with no clamp: its leading
    coefficient is negative, so the exponent only falls with |u|; within 8.6e-5 of fp64 GELU over [-10, 10], finite and
    1e-5 relative out to |u| = 1e30 (the exponent overflows to -inf there, 2^x to 0), both signs. A fit 10x worse would
    show at the largest error (|u| ~ 2.9)."""
    gluon_module = cheri_ops._cheri_gluon
    assert gluon_module.GELU_FITS == {"poly": 6, "poly3": 3, "poly2": 2}
    q2, q1, q0 = (np.float32(c) for c in gluon_module.ERFC_HALF_LOG2_POLY2.value)
    assert q2 < 0
    u = np.concatenate([np.linspace(-10, 10, 200001), np.geomspace(10, 1e30, 2001), -np.geomspace(10, 1e30, 2001)])
    u = u.astype(np.float32)
    a = np.abs(u)
    with np.errstate(over="ignore"):  # (|u|^3 past fp32's range: -inf, as on the GPU)
        exponent = ((q2 * a + q1) * a + q0) * a - np.float32(1.0)
    gelu = np.maximum(u, 0) - a * np.exp2(exponent)
    exact = torch.nn.functional.gelu(torch.from_numpy(u).double()).numpy()
    assert np.isfinite(gelu).all()
    near = np.abs(u) <= 10
    assert 5e-5 < np.abs(gelu[near] - exact[near]).max() < 8.6e-5
    assert (np.abs(gelu[~near] - exact[~near]) <= 1e-5 * np.maximum(np.abs(exact[~near]), 1.0)).all()


def test_short_gelu_clamp_holds_far_out():
    """The degree-3 GELU (gelu=poly3) as _gelu_poly evaluates it, in fp32: its polynomial turns upwards past |u| = 13
    (GELU(20) came out -4.5e25 without the clamp), so its argument is min(|u|, POLY3_CLAMP); the clamped form stays
    within 1.2e-5 of GELU near 0 and 1e-5 relative out to |u| = 1e6, both signs."""
    gluon_module = cheri_ops._cheri_gluon
    coefficients = [np.float32(c) for c in gluon_module.ERFC_HALF_LOG2_POLY3.value]
    clamp = np.float32(gluon_module.POLY3_CLAMP.value)
    u = np.concatenate([np.linspace(-8, 8, 40001), np.geomspace(8, 1e6, 2001), -np.geomspace(8, 1e6, 2001)])
    u = u.astype(np.float32)
    a = np.minimum(np.abs(u), clamp)
    f = coefficients[0] * a + coefficients[1]
    for c in coefficients[2:]:
        f = f * a + c
    with np.errstate(over="raise"):
        gelu = np.maximum(u, 0) - np.abs(u) * np.exp2(f * a - np.float32(1.0))
    exact = torch.nn.functional.gelu(torch.from_numpy(u).double()).numpy()
    assert np.isfinite(gelu).all()
    near = np.abs(u) <= 8
    assert np.abs(gelu[near] - exact[near]).max() < 1.2e-5
    assert (np.abs(gelu[~near] - exact[~near]) <= 1e-5 * np.maximum(np.abs(exact[~near]), 1.0)).all()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_gpu_large_hidden_activations_stay_right_on_every_inference_path(dtype):
    """fc1's weights scaled by 30 put the hidden pre-activations out to |u| ~ 100 (the degree-3 GELU's polynomial
    blows up past |u| ~ 17 unclamped; the degree-2 one has no clamp): every inference path (the default dispatch, tiny
    and large, and each layout with its GELU) stays within the dtype's relative bounds of fp64."""
    from greyhound import _tuning
    block = make_block(128, 3, 4, expansion=4, dtype=dtype, device="cuda").eval()
    with torch.no_grad():
        block.fc1.weight.mul_(30)
    params = block._params()
    bound = 1e-5 if dtype == torch.float32 else 2e-2
    for batch in (2, 24):
        x = torch.randn(batch, 128, 1024, device="cuda", dtype=dtype)
        ref = fp64_twin(block).reference_forward(x.double())
        scale = ref.abs().max().item()
        with torch.no_grad():
            outs = {"default": block(x)}
        if dtype != torch.float32:
            for gelu in ("poly", "poly3", "poly2"):
                for b1_mma in (False, True):
                    with _tuning.override(cheri_ops.TUNING_OP, gelu=gelu, b1_mma=b1_mma), torch.no_grad():
                        outs[f"gluon_wsz-{gelu}-b1_mma={b1_mma}"] = cheri_ops.cheri_block_megakernel(
                            x, *params, dilation=4, config=(64, 64, 4, 4, "gluon_wsz"))
                with _tuning.override(cheri_ops.TUNING_OP, gelu=gelu), torch.no_grad():
                    outs[f"gluon_ws-{gelu}"] = cheri_ops.cheri_block_megakernel(
                        x, *params, dilation=4, config=(64, 64, 4, 3, "gluon_ws"))
                with _tuning.override(cheri_ops.TUNING_OP, gelu=gelu, ws_schedule="tail"), torch.no_grad():
                    outs[f"gluon_wsz-tail-{gelu}"] = cheri_ops.cheri_block_megakernel(
                        x, *params, dilation=4, config=(64, 64, 4, 3, "gluon_wsz"))
        with torch.no_grad():
            outs["gluon"] = cheri_ops.cheri_block_megakernel(x, *params, dilation=4, config=(64, 64, 4, 2, "gluon"))
            outs["lc"] = cheri_ops.cheri_block_megakernel(x, *params, dilation=4, config=(64, 32, 4, 2, "lc"))
        assert scale > 5
        for name, out in outs.items():
            assert torch.isfinite(out).all(), name
            assert max_abs(out, ref) < bound * scale, (name, batch, max_abs(out, ref), scale)


@pytest.mark.gpu
@pytest.mark.parametrize("channels,expansion,kernel_size,dilation,length", [
    (128, 4, 3, 4, 1024), (64, 2, 2, 3, 1000), (32, 6, 4, 1, 333), (16, 4, 3, 2, 700)])
@pytest.mark.parametrize("config", [(64, 32, 4, 2), (64, 64, 4, 2), (128, 32, 8, 3), (64, 16, 4, 4), (128, 64, 8, 2)])
def test_gpu_gluon_kernel_bf16x3_keeps_fp32_accuracy(channels, expansion, kernel_size, dilation, length, config):
    """An fp32 model's bf16x3 inference on the Gluon kernel (z, the hidden layer and the weights split into bf16 hi +
    lo, three products a GEMM) stays within the 1e-5 max-abs of fp64 the fp32 paths promise, as the Triton bf16x3
    kernel does: a lo term dropped, a lo ring slot read before it landed or a wrong wgmma wait (3 groups outstanding)
    would cost ~1e-3. 1 to 48 hidden chunks, ragged L, C 16..128."""
    hidden = channels * expansion
    if hidden % config[1]:
        pytest.skip("BLOCK_E must divide the hidden width")
    block = make_block(channels, kernel_size, dilation, expansion=expansion, device="cuda")
    x = torch.randn(3, channels, length, device="cuda")
    ref = fp64_twin(block).reference_forward(x.double())
    params = block._params()
    with torch.no_grad():
        gluon_out = cheri_ops.cheri_block_megakernel(x, *params, dilation=dilation, config=config + ("gluon",))
        triton_out = cheri_ops.cheri_block_megakernel(x, *params, dilation=dilation, config=(64, 32, 4, 2, "lc"))
        one_pass = cheri_ops.cheri_block_megakernel(x, *params, dilation=dilation, config=config + ("gluon",),
                                                    fp32_dot="bf16")
    assert max_abs(gluon_out, ref) < 1e-5
    assert max_abs(gluon_out, triton_out) < 1e-5
    assert max_abs(one_pass, ref) > 1e-4  # (what the lo terms are for)


@pytest.mark.gpu
def test_gpu_fp32_models_take_the_gluon_kernel(monkeypatch):
    # an fp32 model's default inference (bf16x3) runs the Gluon kernel on the H200, eval and no-eval alike, and so
    # does its training forward: output within 1e-5 max-abs and gradients within 1e-5 relative of fp64
    block = make_block(128, 3, 4, expansion=4, device="cuda")
    x = torch.randn(2, 128, 1000, device="cuda")
    twin = fp64_twin(block)
    x64 = x.double().requires_grad_()
    ref = twin.reference_forward(x64)
    monkeypatch.setattr(cheri_ops, "_chosen_configs", {})
    monkeypatch.setattr(cheri_ops, "_plans", {})
    with torch.no_grad():
        no_eval = block(x)
        evaluated = block.eval()(x)
    assert [c[4] for c in cheri_ops._chosen_configs.values()] == ["gluon"]
    assert torch.equal(no_eval, evaluated) and max_abs(evaluated, ref) < 1e-5
    x_grad = x.clone().requires_grad_()
    trained = block.train()(x_grad)
    assert sorted(c[4] for c in cheri_ops._chosen_configs.values()) == ["gluon", "gluon"]
    assert max_abs(trained, ref) < 1e-5
    grad_out = torch.randn_like(x)
    trained.backward(grad_out)
    ref.backward(grad_out.double())
    # fp32 cuBLAS backward (torch's allow_tf32 off by default): the saved hidden layer must be fp32-accurate
    assert rel_err(x_grad.grad, x64.grad) < 1e-5
    for mine, theirs in zip(block.parameters(), twin.parameters()):
        assert rel_err(mine.grad, theirs.grad) < 1e-5


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,config", [(torch.float32, (64, 32, 4, 2)), (torch.float32, (128, 32, 8, 2)),
                                          (torch.bfloat16, (64, 64, 4, 2)), (torch.float16, (64, 32, 4, 3))])
@pytest.mark.parametrize("channels,expansion,kernel_size,dilation,length", [
    (128, 4, 3, 4, 1024), (64, 2, 2, 3, 1000), (32, 6, 4, 1, 333)])
def test_gpu_gluon_training_forward_saves_what_the_triton_one_does(dtype, config, channels, expansion, kernel_size,
                                                                   dilation, length):
    """The Gluon kernel as a training forward (layout gluon) writes the output, the hidden layer (fp32 for an fp32
    model's bf16x3, else in the dots' type) and the conv output's mean and rstd that the Triton training kernel
    writes, to rounding: a hidden chunk stored at the wrong columns or rows, a ragged tile's rows written past L, or
    statistics from the wrong positions would show. The backward then gives the gradients the Triton path gives."""
    hidden_width = channels * expansion
    if hidden_width % config[1]:
        pytest.skip("BLOCK_E must divide the hidden width")
    block = make_block(channels, kernel_size, dilation, expansion=expansion, dtype=dtype, device="cuda")
    x = torch.randn(3, channels, length, device="cuda", dtype=dtype)
    weights = cheri_ops.prepare_mlp_weights(block.fc1.weight, block.fc2.weight, training=True)
    args = (x, block.conv.weight, block.conv.bias, block.norm.weight, block.norm.bias, block.fc1.bias, block.fc2.bias,
            weights, dilation, block.norm.eps)
    with torch.no_grad():
        gluon = cheri_ops.run_fused(*args, training=True, config=config + ("gluon",))
        triton_ = cheri_ops.run_fused(*args, training=True, config=(64, 32, 4, 2, "lc"))
    assert gluon[1].dtype == triton_[1].dtype == cheri_ops.hidden_dtype(dtype, weights.mode)
    assert gluon[1].shape == (3, length, hidden_width)
    out_bound = {torch.float32: 1e-5, torch.bfloat16: 2e-2, torch.float16: 4e-3}[dtype]
    assert max_abs(gluon[0], triton_[0]) <= out_bound
    for mine, theirs, ulp in ((gluon[1], triton_[1], {torch.float32: 1e-5, torch.bfloat16: 2 ** -7,
                                                       torch.float16: 2 ** -10}[dtype]),
                              (gluon[2], triton_[2], 1e-5), (gluon[3], triton_[3], 1e-5)):
        assert ((mine.float() - theirs.float()).abs() <= ulp * (1 + theirs.float().abs())).all()
    from greyhound import _tuning  # the whole step with the Gluon forward against the Triton one
    grads = []
    for layout_options in (dict(layout="gluon", block_l=config[0], block_e=config[1], warps=config[2],
                                stages=config[3]), dict(layout="lc", block_l=64, block_e=32, warps=4, stages=2)):
        block.zero_grad()
        x_grad = x.clone().requires_grad_()
        with _tuning.override(cheri_ops.TUNING_OP, **layout_options):
            block.train()(x_grad).backward(torch.ones_like(x))
        grads.append([x_grad.grad] + [p.grad.clone() for p in block.parameters()])
    for mine, theirs in zip(*grads):
        assert rel_err(mine, theirs) < {torch.float32: 1e-5, torch.bfloat16: 2e-2, torch.float16: 5e-3}[dtype]


@pytest.mark.gpu
def test_gpu_warp_specialised_kernel_rejects_what_it_cannot_run():
    # asked for by name (a tuning override) with a config it cannot run, it names the field, what it needs and what
    # it got, instead of launching
    from greyhound import _tuning
    block = make_block(128, 3, 4, expansion=4, dtype=torch.bfloat16, device="cuda").eval()
    x = torch.randn(2, 128, 256, device="cuda", dtype=torch.bfloat16)
    tile = dict(block_l=64, block_e=64, warps=4, stages=2)
    cases = ((dict(tile, layout="gluon_ws", block_l=128, warps=8), "one warp group each .*got num_warps=8"),
             (dict(tile, layout="gluon_ws", maxnreg=240), r"multiple of 8 in \[24, 232\] with 2 consumers"),
             (dict(tile, layout="gluon_ws3", maxnreg=160), r"\[24, 152\] with 3 consumers, got 160"),
             (dict(tile, layout="gluon_ws3", stages=1), "num_stages"),
             (dict(tile, layout="gluon_wsz", maxnreg=196), r"\[24, 192\] with 2 consumers and the z producer, got 196"),
             (dict(tile, layout="gluon_wsz", stages=3, ws_schedule="turns", b1_mma=True),
              "b1_mma .* with the pingpong or tail schedule only, got z_producer=True, pingpong=2"))
    for options, words in cases:
        with _tuning.override(cheri_ops.TUNING_OP, **options), torch.no_grad():
            with pytest.raises(ValueError, match=f"layout {options['layout']} does not apply here: .*{words}"):
                block(x)


def test_shuffled_taps_take_the_registers_of_the_positions_shift_back():
    """ws_x_shuffle's tap `shift` positions back (2, 4, 6) is register renames of a thread's previous 8 positions
    ($4..$7) and its own 8 ($8..$11), two 16-bit positions a register, position 0 in the low half of register 0: run
    the PTX moves on registers labelled by the positions they hold and each output register must hold positions
    p - shift + 2i and p - shift + 2i + 1."""
    gluon_module = cheri_ops._cheri_gluon
    if not hasattr(gluon_module, "_tap_join_asm"):
        pytest.skip("this Triton has no Gluon Hopper API (the kernel and its helpers are not defined)")
    registers = {f"${4 + i}": (-8 + 2 * i, -7 + 2 * i) for i in range(4)}  # previous: positions -8..-1
    registers.update({f"${8 + i}": (2 * i, 2 * i + 1) for i in range(4)})  # own: positions 0..7
    for shift in (2, 4, 6):
        asm = gluon_module._tap_join_asm(shift)
        out = {}
        for move in filter(None, (m.strip() for m in asm.split(";"))):
            op, dst, src = move.replace(",", " ").split()
            assert op == "mov.b32", asm
            out[dst] = registers[src]
        assert [out[f"${i}"] for i in range(4)] == [(-shift + 2 * i, -shift + 2 * i + 1) for i in range(4)], asm


def test_warp_specialised_kernel_says_why_it_cannot_run(monkeypatch):
    # its own checks, past the Hopper one (faked here: CI has no GPU): warp groups, register budget, ring depth
    gluon_module = cheri_ops._cheri_gluon
    monkeypatch.setattr(gluon_module, "why_not_hopper", lambda device: None)
    monkeypatch.setattr(gluon_module, "_HOPPER_ERROR", None)
    x = torch.randn(2, 128, 256)
    weights = (None,) * 4 + (torch.randn(512, 128), None, None, None)  # (launch_ws reads fc1's width, refuses first)

    def why(block_l=64, block_e=64, warps=4, stages=2, consumers=2, regs=None, pipeline=False, z_producer=False):
        return gluon_module.unsupported_ws(x, 128, 512, "bf16", False, block_l, block_e, warps, stages, "poly",
                                           consumers, regs or gluon_module.default_consumer_regs(consumers, z_producer),
                                           pipeline, z_producer)
    assert why() is None and why(consumers=3, block_e=32, stages=4) is None
    assert why(stages=3, pipeline=True) is None
    assert "pipelined consumers hold three ring slots at a time: num_stages (the ring) >= 3, got 2" in why(pipeline=True)
    with pytest.raises(ValueError, match=r"launch_ws: .* num_stages \(the ring\) >= 3, got 2"):  # a direct call too
        gluon_module.launch_ws(x, x, *weights, 4, 1e-5, 64, 64, 4, 2, pipeline=True)
    assert "one warp group each (num_warps 4), got num_warps=8" in why(block_l=128, warps=8)
    assert "multiple of 8 in [24, 232] with 2 consumers, got 240" in why(regs=240)
    assert "multiple of 8 in [24, 152] with 3 consumers, got 156" in why(consumers=3, regs=156)
    assert "2 or 3 consumer warp groups, got 4" in why(consumers=4, regs=96)
    # the weight producer's registers (ws_producer_regs): fewer leave the consumers more; a bad count is named
    assert gluon_module.unsupported_ws(x, 128, 512, "bf16", False, 64, 64, 4, 2, "poly", 2, 240,
                                       producer_regs=24) is None  # (65536 - 128 * 24) / 256 = 244
    assert "multiple of 8 in [24, 200] with 2 consumers and the z producer, got 208 (beside a weight producer of 24 " \
           "registers)" in gluon_module.unsupported_ws(x, 128, 512, "bf16", False, 64, 64, 4, 4, "poly", 2, 208,
                                                      z_producer=True, pingpong=1, producer_regs=24)
    for bad in (0, 20, 36, 264, True, "32"):
        assert f"the weight producer's register count (ws_producer_regs) must be a multiple of 8 in [24, 256] " \
               f"(setmaxnreg), got {bad!r}" in gluon_module.unsupported_ws(x, 128, 512, "bf16", False, 64, 64, 4, 2,
                                                                           "poly", 2, 152, producer_regs=bad)
        with pytest.raises(ValueError, match=r"launch_ws: .*ws_producer_regs\) must be a multiple of 8 in \[24, 256\]"):
            gluon_module.launch_ws(x, x, *weights, 4, 1e-5, 64, 64, 4, 2, producer_regs=bad)
    with pytest.raises(ValueError, match=r"launch_ws: .* its partitions' registers pass the SM's 65536: beside a producer "
                                         r"of 120 registers and the z producer its 2 consumers have at most 152 each, "
                                         r"got 160"):
        gluon_module.launch_ws(x, x, *weights, 4, 1e-5, 64, 64, 4, 4, consumer_regs=160, z_producer=True, pingpong=1,
                               producer_regs=120)
    assert why(z_producer=True) is None and why(z_producer=True, stages=4) is None
    # the conv's taps in the z producer's registers: the z producer's, and not beside the taps in shared memory
    for other, named in ((dict(), "z_producer=False, conv_smem=False"),
                         (dict(z_producer=True, pingpong=1, conv_smem=True), "z_producer=True, conv_smem=True")):
        with pytest.raises(ValueError, match=rf"launch_ws: .* conv_regs \(the conv's taps in the z producer's "
                                             rf"registers\) runs with the z producer \(layout gluon_wsz\) and without "
                                             rf"conv_smem only, got {named}"):
            gluon_module.launch_ws(x, x, torch.randn(128, 1, 3), *weights[1:], 4, 1e-5, 64, 64, 4, 4, conv_regs=True,
                                   **other)
    assert "beside the z producer (layout gluon_wsz) it has 2 consumer warp groups, got 3" in why(
        consumers=3, regs=96, z_producer=True)
    assert "multiple of 8 in [24, 192] with 2 consumers and the z producer, got 232" in why(regs=232, z_producer=True)
    assert "pipelined consumers (ws_pipeline) need more registers than the z producer leaves" in why(
        stages=4, regs=152, pipeline=True, z_producer=True)
    with pytest.raises(ValueError, match="launch_ws: .* beside the z producer .* 2 consumer warp groups, got 3"):
        gluon_module.launch_ws(x, x, *weights, 4, 1e-5, 64, 64, 4, 2, consumers=3, z_producer=True)
    # the degree-3 GELU fit: the warp-specialised layouts, not the pipelined consumers, not the gluon layout
    assert gluon_module.unsupported_ws(x, 128, 512, "bf16", False, 64, 64, 4, 3, "poly3", 2, 152, False, True, 1) is None
    assert gluon_module.unsupported_ws(x, 128, 512, "bf16", False, 64, 64, 4, 4, "poly3", 2, 152, False, True, 1,
                                       b1_mma=True) is None
    assert "b1_mma (b1 added by a wgmma) runs in layout gluon_wsz with the pingpong or tail schedule only, got " \
           "z_producer=True, pingpong=2" in gluon_module.unsupported_ws(x, 128, 512, "bf16", False, 64, 64, 4, 4,
                                                                       "poly3", 2, 152, False, True, 2, b1_mma=True)
    # b1 as (64, 16) blocks a chunk: 16 KiB at 512 hidden columns, where fp32 b1 took 2 KiB; ring 4 keeps 4 z slots
    assert gluon_module.z_stages(4, 64, 128, 512, b1_mma=True) == 4 and gluon_module.z_stages(5, 64, 128, 512, 64,
                                                                                                True) == 2
    assert "runs in the warp-specialised layouts only" in gluon_module.unsupported(
        x, 128, 512, "bf16", False, 64, 64, 4, 2, "poly3")
    assert "pipelined consumers (ws_pipeline) run the default GELU (poly), got gelu='poly3'" in \
        gluon_module.unsupported_ws(x, 128, 512, "bf16", False, 64, 32, 4, 4, "poly3", 2, 232, True)
    with pytest.raises(ValueError, match="launch_ws: .* gelu is poly or its fits poly3, poly2, got gelu='erf'"):
        gluon_module.launch_ws(x, x, *weights, 4, 1e-5, 64, 64, 4, 3, gelu="erf")
    # the degree-2 fit: bf16 and fp16 dots (below either's output rounding), not bf16x3 (1e-5), not pipelined
    assert gluon_module.unsupported_ws(x, 128, 512, "bf16", False, 64, 64, 4, 4, "poly2", 2, 152, False, True, 1,
                                       b1_mma=True) is None
    assert gluon_module.unsupported_ws(x, 128, 512, "fp16", False, 64, 64, 4, 4, "poly2", 2, 152, False, True,
                                       1) is None
    assert "gelu=poly2 (the degree-2 GELU fit, 8.6e-5 absolute) is for bf16 or fp16 dots, whose output rounding is " \
           "coarser than its error; got bf16x3 dots" in gluon_module.unsupported(
               x, 128, 512, "bf16x3", False, 64, 64, 4, 4, "poly2", warp_specialised=True)
    assert "got gelu='poly2'" in gluon_module.unsupported_ws(x, 128, 512, "bf16", False, 64, 32, 4, 4, "poly2", 2, 232,
                                                             True)
    assert "gelu=poly2 (a shorter GELU fit) runs in the warp-specialised layouts only" in gluon_module.unsupported(
        x, 128, 512, "bf16", False, 64, 64, 4, 2, "poly2")
    with pytest.raises(ValueError, match=r"launch_ws: .* run the default GELU \(poly\), got gelu='poly2'"):
        gluon_module.launch_ws(x, x, *weights, 4, 1e-5, 64, 64, 4, 3, pipeline=True, gelu="poly2")
    # the z ring beside the weight ring: 4 slots where they fit in the H200's shared memory, else fewer
    assert [gluon_module.z_stages(stages, 64, 128, 512) for stages in (2, 3, 4, 5, 6)] == [4, 4, 4, 3, 0]
    assert why(stages=5, z_producer=True) is None  # (247980 bytes with 4 z slots: Triton 3.6 said so on the H200)
    assert "weight ring of 6 slots of 64 hidden columns leaves no room in the H200's shared memory for the z " \
           "producer's ring" in why(stages=6, z_producer=True)
    with pytest.raises(ValueError, match="launch_ws: .* weight ring of 6 slots of 64 hidden columns leaves no room"):
        gluon_module.launch_ws(x, x, *weights, 4, 1e-5, 64, 64, 4, 6, z_producer=True)
    # each tile's first GEMM with the previous tile's last one: likewise, and with z from shared memory, one ring
    for kwargs in (dict(z_producer=False, pingpong=1), dict(z_producer=True, pingpong=3),
                   dict(z_producer=True, pingpong=1, split_ring=True), dict(z_producer=True, pingpong=1, z_regs=True)):
        with pytest.raises(ValueError, match=r"launch_ws: .* cross_tile \(each tile's first GEMM issued with the "
                                             r"previous tile's last one\) runs with the z producer"):
            gluon_module.launch_ws(x, x, *weights, 4, 1e-5, 64, 64, 4, 3, cross_tile=True, b1_mma=False, **kwargs)
    # the 16-bit epilogue: the z producer's consumers on the pingpong schedule, the early residual, 16-bit x
    for kwargs in (dict(z_producer=False, pingpong=1), dict(z_producer=True, pingpong=3),
                   dict(z_producer=True, pingpong=1, late_residual=True),
                   dict(z_producer=True, pingpong=1, cross_tile=True)):
        with pytest.raises(ValueError, match=r"launch_ws: .* epilogue16 \(the residual added in the accumulator's "
                                             r"layout, the 16-bit output through shared memory\) runs with the z "
                                             r"producer"):
            gluon_module.launch_ws(x.bfloat16(), x.bfloat16(), *weights, 4, 1e-5, 64, 64, 4, 3, epilogue16=True,
                                   b1_mma=False, **kwargs)
    with pytest.raises(ValueError, match=r"launch_ws: .* epilogue16 .* got z_producer=True, pingpong=1, "
                                         r"late_residual=False, cross_tile=False, x of torch.float32"):
        gluon_module.launch_ws(x, x, *weights, 4, 1e-5, 64, 64, 4, 3, epilogue16=True, b1_mma=False, z_producer=True,
                               pingpong=1)
    # W1 and W2 in rings of their own: the z producer's consumers on the pingpong schedule only
    for kwargs in (dict(z_producer=False, pingpong=1), dict(z_producer=True, pingpong=3), dict(z_producer=True)):
        with pytest.raises(ValueError, match=r"launch_ws: .* split_ring \(W1 and W2 in rings of their own\) runs with "
                                             r"the z producer \(layout gluon_wsz\) on the pingpong schedule only"):
            gluon_module.launch_ws(x, x, *weights, 4, 1e-5, 64, 64, 4, 3, split_ring=True, **kwargs)
    assert gluon_module.z_stages(8, 32, 128, 512) == 4
    # below C=128 the layout conversions' scratch is a (64, 64) fp32 tile, not a (64, C) 16-bit one: a ring of 6 of
    # 128 hidden columns at C=64 with b1 by wgmma compiled to 237708 bytes with 2 z slots (Triton 3.6), so it gets
    # none; with fp32 b1 (7 KiB less) 2 slots fit; rings of 3-5 keep 4 slots (221356 bytes at 5)
    assert [gluon_module.z_stages(stages, 128, 64, 256, 64, True) for stages in (3, 4, 5, 6)] == [4, 4, 4, 0]
    assert gluon_module.z_stages(6, 128, 64, 256) == 2
    assert [gluon_module.z_stages(4, 64, c, 4 * c) for c in (16, 32, 64)] == [4, 4, 4]
    assert gluon_module.z_stages(4, 64, 32, 128, 128) == 4
    # the conv's taps in shared memory (ws_conv_smem): K fp32 rows of C, padded to a power of 2 (2 KiB at K=3 or 4,
    # 4 KiB at K=5): ring 4 keeps its 4 z slots at K <= 4 (231564 bytes, Triton 3.6) and drops to 3 at K=5; z producer
    # only
    assert [gluon_module.z_stages(4, 64, 128, 512, 64, True, False, k) for k in (0, 3, 4, 5)] == [4, 4, 4, 3]
    assert gluon_module.z_stages(5, 64, 128, 512, 64, True, False, 3) == 2
    assert gluon_module.unsupported_ws(x, 128, 512, "bf16", False, 64, 64, 4, 4, "poly2", 2, 152, False, True, 1,
                                       True, True, 3) is None
    assert "the conv's taps in shared memory (ws_conv_smem) are read by the z producer: layout gluon_wsz only" in \
        gluon_module.unsupported_ws(x, 128, 512, "bf16", False, 64, 64, 4, 4, "poly", 2, 232, False, False, 1,
                                    False, False, 3)
    with pytest.raises(ValueError, match=r"launch_ws: .* \(ws_conv_smem\) are read by the z producer"):
        gluon_module.launch_ws(x, x, torch.randn(128, 1, 3), *weights[1:], 4, 1e-5, 64, 64, 4, 4, pingpong=1,
                               conv_smem=True)
    # the z producer's shuffled conv taps (ws_x_shuffle): 16-bit x, taps an even number of positions back and at most
    # 8, C a multiple of 16, the z producer only
    assert gluon_module.x_shuffle_refusal(torch.float16, 64, 5, 2) is None  # shifts 8, 6, 4, 2
    assert gluon_module.x_shuffle_refusal(torch.bfloat16, 128, 2, 8) is None
    assert gluon_module.x_shuffle_refusal(torch.bfloat16, 128, 1, 3) is None  # no shifted tap
    assert "dilation even), got K=3, dilation=3" in gluon_module.x_shuffle_refusal(torch.bfloat16, 128, 3, 3)
    assert "got K=4, dilation=4" in gluon_module.x_shuffle_refusal(torch.bfloat16, 128, 4, 4)
    assert gluon_module.x_shuffle_refusal(torch.bfloat16, 40, 3, 4) == "C a multiple of 16, got C=40"
    with pytest.raises(ValueError, match=r"launch_ws: .*x_shuffle \(the z producer's shuffled conv taps\) runs with "
                                         r"the z producer"):
        gluon_module.launch_ws(x, x, torch.randn(128, 1, 3), *weights[1:], 4, 1e-5, 64, 64, 4, 4, pingpong=1,
                               x_shuffle=True)
    # the ping-pong schedules (ws_schedule pingpong / turns: launch_ws's pingpong 1 / 2)
    assert gluon_module.unsupported_ws(x, 128, 512, "bf16", False, 64, 64, 4, 3, "poly", 2, 152, False, True, 2) is None
    assert gluon_module.unsupported_ws(x, 128, 512, "bf16", False, 64, 64, 4, 2, "poly", 2, 232, False, False, 1) is None
    assert "pingpong is 0 (ws_schedule chunk), 1 (pingpong: each chunk's GEMMs issued together), 2 (turns: and the " \
           "consumers take turns) or 3 (tail: chunk k's second GEMM under chunk k+1's GELU), got 4" \
        in gluon_module.unsupported_ws(x, 128, 512, "bf16", False, 64, 64, 4, 3, "poly", 2, 232, False, False, 4)
    # the tail schedule: gluon_wsz only; its two hidden buffers a consumer fit beside a ring of 3 with 4 z slots, with b1
    # by wgmma too
    assert gluon_module.unsupported_ws(x, 128, 512, "bf16", False, 64, 64, 4, 3, "poly3", 2, 152, False, True, 3,
                                       b1_mma=True) is None
    assert gluon_module.z_stages(3, 64, 128, 512, 64, True, True) == 4
    assert gluon_module.z_stages(4, 64, 128, 512, 64, True, True) == 2
    assert "tail schedule (ws_schedule=tail) runs in layout gluon_wsz only" in gluon_module.unsupported_ws(
        x, 128, 512, "bf16", False, 64, 64, 4, 3, "poly", 2, 232, False, False, 3)
    with pytest.raises(ValueError, match=r"launch_ws: .* \(ws_schedule=tail\) runs in layout gluon_wsz only"):
        gluon_module.launch_ws(x, x, *weights, 4, 1e-5, 64, 64, 4, 3, pingpong=3)
    assert "ws_pipeline or ws_schedule pingpong / turns / tail, not both" in gluon_module.unsupported_ws(
        x, 128, 512, "bf16", False, 64, 64, 4, 3, "poly", 2, 232, True, False, 1)
    assert "two consumers and a ring of at least 3 (a consumer waiting for its turn may hold the slot the other " \
           "needs), got 2 consumers, num_stages 2" in gluon_module.unsupported_ws(
               x, 128, 512, "bf16", False, 64, 64, 4, 2, "poly", 2, 232, False, False, 2)
    assert "got 3 consumers, num_stages 4" in gluon_module.unsupported_ws(
        x, 128, 512, "bf16", False, 64, 32, 4, 4, "poly", 3, 152, False, False, 2)
    with pytest.raises(ValueError, match="launch_ws: .* ring of at least 3 .* got 2 consumers, num_stages 2"):
        gluon_module.launch_ws(x, x, *weights, 4, 1e-5, 64, 64, 4, 2, pingpong=2)
    # lone last-round tiles (ws_balance): every consumer schedule but the turns, whose idle consumer would hold a turn
    for pingpong in (0, 1, 3):
        assert gluon_module.unsupported_ws(x, 128, 512, "bf16", False, 64, 64, 4, 3, "poly", 2, 152, False, True,
                                           pingpong, balance=True) is None
    assert gluon_module.unsupported_ws(x, 128, 512, "bf16", False, 64, 32, 4, 4, "poly", 3, 152, False, False, 0,
                                       balance=True) is None
    assert "lone last-round tiles (ws_balance) leave the other consumer idle, so its consumers cannot take turns" in \
        gluon_module.unsupported_ws(x, 128, 512, "bf16", False, 64, 64, 4, 3, "poly", 2, 152, False, True, 2,
                                    balance=True)
    with pytest.raises(ValueError, match=r"launch_ws: .* \(ws_balance\) .* cannot take turns"):
        gluon_module.launch_ws(x, x, *weights, 4, 1e-5, 64, 64, 4, 3, pingpong=2, z_producer=True, balance=True)
    assert "num_stages (its weight ring) >= 2, got 1" in why(stages=1)
    for mode, training in (("bf16x3", False), ("bf16", True)):  # what only the Gluon kernel (layout gluon) runs
        why_not = gluon_module.unsupported_ws(x, 128, 512, mode, training, 64, 64, 4, 2, "poly", 2, 232)
        assert f"bf16 or fp16 dots (the Gluon kernel, layout gluon, also runs bf16x3 and training forwards), got " \
               f"mode {mode!r}, training={training}" in why_not
    assert "bf16, fp16 or bf16x3 dots and the poly GELU (or its fits poly3, poly2), got mode 'tf32x3'" in \
        gluon_module.unsupported_ws(
        x, 128, 512, "tf32x3", False, 64, 64, 4, 2, "poly", 2, 232)
    assert "gelu='erf'" in gluon_module.unsupported(x, 128, 512, "bf16", True, 64, 64, 4, 2, "erf")


def test_gluon_kernel_takes_fp32_models_in_bf16x3(monkeypatch):
    # an fp32 model's default (bf16x3) inference tries the Gluon kernel first, with its own tile (32 hidden columns:
    # the lo rings fit two programs an SM); the other fp32 modes keep the Triton kernels. The Gluon kernel can run a
    # training forward (asked for by a tuning variant) but training's default candidates are the Triton kernels
    gluon_module = cheri_ops._cheri_gluon
    monkeypatch.setattr(gluon_module, "why_not_hopper", lambda device: None)
    monkeypatch.setattr(gluon_module, "_HOPPER_ERROR", None)
    monkeypatch.setattr(gluon_module, "available", lambda: True)
    x = torch.randn(2, 128, 256)
    assert gluon_module.unsupported(x, 128, 512, "bf16x3", False, 64, 32, 4, 2, "poly") is None
    assert "got mode 'tf32x3'" in gluon_module.unsupported(x, 128, 512, "tf32x3", False, 64, 32, 4, 2, "poly")
    assert gluon_module.unsupported(x, 128, 512, "bf16x3", True, 64, 32, 4, 2, "poly") is None
    assert "got mode 'ieee'" in gluon_module.unsupported(x, 128, 512, "ieee", True, 64, 32, 4, 2, "poly")
    cheri_ops._candidate_configs.cache_clear()
    try:
        # bf16/fp16 inference: the z producer's warp-specialised kernel, the Gluon tile behind it, then Triton's
        first, second, third = cheri_ops._candidate_configs(128, 512, "bf16", False)[:3]
        assert first == (64, 64, 4, 4, "gluon_wsz", None) and second == (64, 32, 4, 2, "gluon", 168)
        assert third == cheri_ops._default_config(128, 512, "bf16", False)
        assert cheri_ops._candidate_configs(16, 32, "fp16", False)[:2] == ((64, 32, 4, 4, "gluon_wsz", None),
                                                                           (64, 32, 4, 2, "gluon", 168))
        # an fp32 model's bf16x3, inference and training forward: the Gluon tile first, the Triton default behind it
        for training, tile in ((False, (64, 32, 4, 2, "gluon", None)), (True, (128, 64, 8, 2, "gluon", None))):
            first, then = cheri_ops._candidate_configs(128, 512, "bf16x3", training)[:2]
            assert first == tile and then == cheri_ops._default_config(128, 512, "bf16x3", training)
        assert cheri_ops._candidate_configs(128, 96, "bf16x3", True)[0] == (128, 32, 8, 2, "gluon", None)
        # small fp32-model inference (at most _SMALL_INFERENCE_ROWS positions): one 128-position program an SM; a
        # small bf16/fp16 one keeps its tile
        assert cheri_ops._SMALL_INFERENCE_ROWS == 96 * 1024
        first, then = cheri_ops._candidate_configs(128, 512, "bf16x3", False, True)[:2]
        assert first == (128, 64, 8, 2, "gluon", None) and then == cheri_ops._default_config(128, 512, "bf16x3", False)
        assert cheri_ops._candidate_configs(128, 96, "bf16x3", False, True)[0] == (128, 32, 8, 2, "gluon", None)
        assert cheri_ops._candidate_configs(128, 512, "bf16", False, True)[0] == (64, 64, 4, 4, "gluon_wsz", None)
        # tiny bf16/fp16 inference (at most _TINY_INFERENCE_ROWS positions, size class 2): the 64-column tile, two
        # programs an SM, in one wave; an fp32 model's tiny call takes its small-call tile
        assert cheri_ops._TINY_INFERENCE_ROWS == 16 * 1024
        for mode in ("bf16", "fp16"):
            assert cheri_ops._candidate_configs(128, 512, mode, False, 2)[0] == (64, 64, 4, 2, "gluon", None)
        assert cheri_ops._candidate_configs(128, 512, "bf16x3", False, 2)[0] == (128, 64, 8, 2, "gluon", None)
        for mode, training in (("tf32x3", False), ("ieee", False), ("bf16", True), ("fp16", True)):
            assert all(c[4] != "gluon" for c in cheri_ops._candidate_configs(128, 512, mode, training))
    finally:
        cheri_ops._candidate_configs.cache_clear()
    with pytest.raises(ValueError, match="given together"):
        w = torch.empty(512, 128, dtype=torch.bfloat16)
        gluon_module.launch(x, x, None, None, None, None, w, None, w.T, None, 4, 1e-5, 64, 32, 4, 2, fc1_lo=w)
    # the W1 ring's depth: checked before anything launches
    with pytest.raises(ValueError, match=r"w1_stages .* at least stages \(3\), got 2"):
        gluon_module.launch(x, x, None, None, None, None, w, None, w.T, None, 4, 1e-5, 64, 32, 4, 3, w1_stages=2)
    # the looped chunk schedule: one ring depth of at least 3
    for stages, w1_stages in ((2, None), (3, 4)):
        with pytest.raises(ValueError, match=rf"loop .* stages >= 3 and w1_stages equal .* stages={stages}"):
            gluon_module.launch(x, x, None, None, None, None, w, None, w.T, None, 4, 1e-5, 64, 32, 4, stages,
                                w1_stages=w1_stages, loop=True)


@pytest.mark.gpu
def test_gpu_default_inference_takes_the_gluon_kernel_and_falls_back(monkeypatch):
    """On the H200 bf16 inference runs the Gluon kernel by default; if it fails (e.g. a Triton whose Gluon API moved)
    the call warns once and the Triton kernel answers instead, never an unwritten output."""
    block = make_block(64, 3, 4, expansion=4, dtype=torch.bfloat16, device="cuda")
    x = torch.randn(2, 64, 512, device="cuda", dtype=torch.bfloat16)
    ref = fp64_twin(block).reference_forward(x.double())
    monkeypatch.setattr(cheri_ops, "_chosen_configs", {})
    monkeypatch.setattr(cheri_ops, "_plans", {})
    with torch.no_grad():
        out = block.eval()(x)
    assert [c[4] for c in cheri_ops._chosen_configs.values()] == ["gluon"]
    assert max_abs(out, ref) < HALF_BOUNDS[torch.bfloat16]
    launcher = cheri_ops._cheri_gluon._LAUNCHER  # later calls skip Triton's per-call launch work
    before = launcher.fast_launches
    with torch.no_grad():
        again = block(x)
    assert launcher.fast_launches == before + 1 and torch.equal(again, out)

    def broken(*args, **kwargs):
        raise RuntimeError("PassManager::run failed")
    monkeypatch.setattr(cheri_ops._cheri_gluon, "launch", broken)
    monkeypatch.setattr(cheri_ops._cheri_gluon, "_WARNED", set())
    monkeypatch.setattr(cheri_ops, "_chosen_configs", {})
    monkeypatch.setattr(cheri_ops, "_plans", {})  # as in a fresh process: the stored plan would launch Gluon again
    with torch.no_grad(), pytest.warns(RuntimeWarning, match="Gluon Cheri Block kernel failed"):
        fallback = block(x)
    assert [c[4] for c in cheri_ops._chosen_configs.values()] == ["lc"]
    assert max_abs(fallback, ref) < HALF_BOUNDS[torch.bfloat16]


@pytest.mark.parametrize("dtype,weights,channels,block_e,even,split,training,w1_stages,z_regs,loop", [
    ("bf16", "bf16", 128, 64, True, False, False, 2, False, 0), ("fp32", "bf16", 64, 32, False, False, False, 2, False, 0),
    ("fp16", "fp16", 128, 64, True, False, False, 2, False, 0), ("fp32", "bf16", 128, 32, True, True, False, 2, False, 0),
    ("fp32", "bf16", 128, 32, False, True, True, 2, False, 0), ("bf16", "bf16", 128, 64, True, False, True, 2, False, 0),
    ("bf16", "bf16", 128, 64, True, False, False, 3, False, 0), ("bf16", "bf16", 128, 32, True, False, False, 2, True, 0),
    ("fp16", "fp16", 64, 64, False, False, True, 2, True, 0), ("bf16", "bf16", 128, 32, True, False, False, 3, False, 3),
    ("fp16", "fp16", 128, 16, False, False, False, 4, True, 4), ("fp32", "bf16", 128, 32, False, True, True, 3, False, 3),
    ("bf16", "bf16", 64, 64, True, False, False, 3, False, 3)])
def test_gluon_kernel_compiles_for_hopper(dtype, weights, channels, block_e, even, split, training, w1_stages, z_regs,
                                          loop):
    # the default Gluon configs and others: valid for this Triton's Gluon, wgmma on the tensor cores in the weights'
    # type (fp16 models multiply fp16), 16-byte weight copies, within the H200's shared memory. Per hidden chunk one
    # wgmma per 16 of C (first GEMM) and per 16 of BLOCK_E (second); bf16x3 (split) issues each product three times
    # and holds lo rings and a lo z tile beside the hi ones. The training forward (it also stores the hidden layer and
    # the statistics) issues the same products. A W1 ring deeper than W2's (the w1_stages variant) holds more W1 slices.
    # z_regs: the first GEMMs read z from registers. loop (its ring depth; 0: unrolled): the chunks whose refills fall
    # inside the hidden width run as a loop of two chunks an iteration, so the PTX holds fewer wgmmas than the
    # products made: two chunks for the loop body and one for each chunk outside it.
    from tests.gluon_compile import compile_for_hopper
    hidden_type = "fp32" if split else weights
    types = dict(x_ptr=f"*{dtype}", out_ptr=f"*{dtype}", conv_w_ptr=f"*{dtype}", conv_b_ptr=f"*{dtype}",
                 gamma_ptr=f"*{dtype}", beta_ptr=f"*{dtype}", w1_ptr=f"*{weights}", b1_ptr=f"*{dtype}",
                 w2_ptr=f"*{weights}", b2_ptr=f"*{dtype}", w1_lo_ptr=f"*{weights}", w2_lo_ptr=f"*{weights}",
                 hidden_ptr=f"*{hidden_type}", mean_ptr="*fp32", rstd_ptr="*fp32", L="i32", eps="fp32")
    constexprs = dict(C=channels, HIDDEN=4 * channels, KERNEL_SIZE=3, DILATION=4, EVEN_L=even, BLOCK_L=64,
                      BLOCK_E=block_e, STAGES=loop or 2, W1_STAGES=w1_stages, SPLIT=split, TRAINING=training,
                      Z_REGS=z_regs, LOOP=bool(loop), num_warps=4)
    facts = compile_for_hopper("greyhound.ops._cheri_gluon", "cheri_block_kernel", types, constexprs, 4,
                               divisible=("L",) if even else ())
    assert facts["cubin"] and facts["copy_bytes"] == [16]
    terms = 3 if split else 1
    n_chunks = 4 * channels // block_e
    static_chunks = n_chunks - 2 * (max(0, n_chunks - loop) // 2 - 1) if loop and n_chunks - loop >= 2 else n_chunks
    chunks = terms * static_chunks
    first, second = chunks * (channels // 16), chunks * (block_e // 16)  # wgmmas of the first and second GEMMs
    assert facts["wgmma"] == first + second, facts
    # the second GEMMs take the hidden layer from registers; with z_regs the first GEMMs take z from there too
    assert facts["wgmma_register_a"] == second + (first if z_regs else 0), facts
    operands = {"bf16": ".f32.bf16.bf16", "fp16": ".f32.f16.f16"}[weights]  # fp32 accumulators
    assert facts["wgmma_kinds"] and all(kind.endswith(operands) for kind in facts["wgmma_kinds"]), facts
    ring = (w1_stages + (loop or 2)) * block_e * channels * 2  # w1_stages W1 and stages W2 slices of 16-bit weights
    parts = 2 if split else 1
    assert parts * (ring + 64 * channels * 2) <= facts["shared"] <= 232448
    if split and not loop:  # two programs an SM: what the bf16x3 default config was chosen for
        assert 2 * facts["shared"] <= 228 * 1024
    threads = 32 * 4
    if training:  # each thread's share of the (64, HIDDEN) hidden tile, two values a store at most, and the statistics
        assert facts["global_stores"] >= 64 * 4 * channels // (2 * threads) * static_chunks // n_chunks + 2, facts
    else:  # only the output tile, one value a store at most
        assert facts["global_stores"] <= 64 * channels // threads, facts


@pytest.mark.parametrize("block_e,stages,even,consumers,pipeline,z_producer,pingpong", [
    (32, 4, True, 2, False, False, 0), (64, 2, False, 2, False, False, 0), (32, 3, True, 3, False, False, 0),
    (32, 4, True, 2, True, False, 0), (32, 6, False, 2, True, False, 0), (16, 8, True, 2, True, False, 0),
    (64, 3, True, 2, True, False, 0), (32, 3, True, 3, True, False, 0), (64, 4, True, 2, False, True, 0),
    (32, 6, True, 2, False, True, 0), (64, 2, False, 2, False, True, 0), (64, 3, True, 2, False, True, 2),
    (64, 3, True, 2, False, True, 1), (32, 6, False, 2, False, True, 2), (64, 3, True, 2, False, False, 2),
    (64, 4, True, 2, False, True, 3), (64, 4, True, 2, False, True, 4), (64, 3, True, 2, False, True, 5),
    (64, 3, False, 2, False, True, 5), (32, 6, True, 2, False, True, 6), (64, 4, True, 2, False, True, 7),
    (64, 3, False, 2, False, True, 8), (32, 4, True, 2, True, False, 9), (32, 3, True, 3, False, False, 9),
    (64, 4, True, 2, False, True, 10), (64, 3, False, 2, False, True, 11), (32, 3, True, 3, False, False, 12),
    (64, 4, True, 2, False, True, 13), (64, 4, False, 2, False, True, 13), (64, 4, True, 2, False, True, 14),
    (64, 4, True, 2, False, True, 15), (64, 4, False, 2, False, True, 15), (64, 4, True, 2, False, True, 16),
    (64, 4, False, 2, False, True, 16), (64, 4, True, 2, False, True, 17), (64, 4, False, 2, False, True, 17),
    (64, 4, True, 2, False, True, 18), (64, 4, True, 2, False, True, 19), (64, 4, False, 2, False, True, 19),
    (64, 4, True, 2, False, True, 20), (64, 4, False, 2, False, True, 20), (64, 4, True, 2, False, True, 21),
    (64, 4, True, 2, False, True, 22), (64, 4, False, 2, False, True, 22), (64, 4, True, 2, False, True, 23),
    (64, 4, False, 2, False, True, 23), (64, 4, True, 2, False, True, 24), (64, 4, False, 2, False, True, 24),
    (64, 4, True, 2, False, True, 25), (64, 4, False, 2, False, True, 25), (64, 4, True, 2, False, True, 26),
    (64, 4, True, 2, False, True, 27), (64, 4, False, 2, False, True, 27), (64, 4, True, 2, False, True, 28),
    (64, 4, True, 2, False, True, 29), (64, 4, False, 2, False, True, 29), (64, 4, True, 2, False, True, 30),
    (64, 4, False, 2, False, True, 30), (64, 4, True, 2, False, True, 31)])
def test_warp_specialised_kernel_compiles_for_hopper(block_e, stages, even, consumers, pipeline, z_producer,
                                                     pingpong):
    # (pingpong 3 in this table: the ping-pong schedule with the degree-3 GELU and b1 by wgmma; 4: the same with the
    # degree-2 GELU, gelu=poly2; 5: the tail schedule with them; 6: the tail schedule with the
    # degree-6 GELU and b1 by an FADD; 7 and 8: 3 and the tail schedule with every consumer thread releasing
    # the ring slots, 9 that release on the pipelined or one-chunk consumers: one warp-group barrier fewer a chunk;
    # 10, 11 and 12: 3, the tail schedule and three one-chunk consumers with lone last-round tiles, ws_balance;
    # 13: session 36's bf16 default, 10 with the degree-2 GELU; 14: the fp16 default, 10 with the residual loaded
    # after the last GEMM, ws_late_residual; 15: 13 with the z producer's L2 prefetch of x 2 groups ahead,
    # ws_x_prefetch; 16: 13 with the conv's taps in shared memory, ws_conv_smem; 17: the bf16 default since session
    # 39, 13 with both, the prefetch 1 group ahead; 18: 14 with the degree-2 GELU in fp16, a variant since session
    # 40; 19: 17 with the z producer's conv taps by shuffles, ws_x_shuffle, a variant since session 41; 20: 17 with
    # W1 and W2 in weight rings of their own, ws_split_ring, 21: 20 with every consumer thread releasing; 22: 17 with
    # each tile's first GEMM issued with the previous tile's last one, ws_cross_tile, and its late residual; session 44;
    # 23: 17 with the residual added in the accumulator's layout and the 16-bit output through shared memory,
    # ws_epilogue16; 24: the fp16 default (18 with the shuffled taps and no conv taps in shared memory) with it and its
    # early residual; session 45; 25: session 49's fp16 default, 24 with ws_split_ring and the consumers at 160
    # registers, the z producer at 152; 26: the bf16 default (25 in bf16) with the consumers at 160, the weight producer
    # at 24 and the z producer keeping its 168, ws_producer_regs; 27: the fp16 default since session 50, 26 in fp16;
    # 28: 27 with the conv's taps in the z producer's registers, ws_conv_regs, a variant since session 50; 29: the bf16
    # default (26 at its registers, 152 / 168 / 40) with the taps widened by shifts, ws_bf16_shifts, a variant since
    # session 53; 30: the bf16 default (29 without the shifts) with consumer 1 computing its first tile's z, ws_first_z,
    # and 31: the fp16 default (27) with it, variants since session 54)
    # consumer warp groups and a producer warp group: wgmma in the consumers, 16-byte copies in the producer, the
    # ring and one z tile per consumer (with the z producer: its ring of 4) within the H200's shared memory. The
    # pipelined consumers wait for all but one wgmma group (the chunk's second GEMM stays in flight) and ptxas keeps
    # their wgmmas asynchronous (no C7513 / C7512 "wgmma serialized" warning: with only the last chunk unrolled after
    # the chunk loop it serialised them all; nor do the ping-pong consumers, whose loop has no wgmma in flight across
    # its back edge); with two consumers at 16 or 32 hidden columns and L a whole number of tiles nothing spills, nor
    # with the z producer (its 168 registers, the consumers' 152) at whole tiles and one chunk at a time
    from tests.gluon_compile import compile_for_hopper
    types = dict(x_ptr="*bf16", out_ptr="*bf16", conv_w_ptr="*bf16", conv_b_ptr="*bf16", gamma_ptr="*bf16",
                 beta_ptr="*bf16", w1_ptr="*bf16", b1_ptr="*bf16", w2_ptr="*bf16", b2_ptr="*bf16", L="i32",
                 eps="fp32", num_tiles="i32")
    if pingpong in (18, 24, 25, 27, 28, 31):  # an fp16 model (26: bf16)
        types = {name: kind.replace("bf16", "fp16") for name, kind in types.items()}
    constexprs = dict(C=128, HIDDEN=512, KERNEL_SIZE=3, DILATION=4, EVEN_L=even, BLOCK_L=64, BLOCK_E=block_e,
                      STAGES=stages, CONSUMERS=consumers,
                      CONSUMER_REGS=(160 if pingpong in (25, 26, 27, 28, 31) else 152) if z_producer else
                      cheri_ops._cheri_gluon.ws_consumer_regs(consumers),
                      PRODUCER_WARPS=4,
                      PRODUCER_REGS=24 if pingpong in (26, 27, 28, 31) else 40, PIPELINE=pipeline,
                      Z_PRODUCER=z_producer,
                      Z_STAGES=4 if z_producer else 1,
                      Z_PRODUCER_REGS=152 if pingpong == 25 else 168,
                      PINGPONG={3: 1, 4: 1, 5: 3, 6: 3, 7: 1, 8: 3, 9: 0, 10: 1, 11: 3, 12: 0, 13: 1, 14: 1,
                                15: 1, 16: 1, 17: 1, 18: 1, 19: 1, 20: 1, 21: 1, 22: 1, 23: 1, 24: 1,
                                25: 1, 26: 1, 27: 1, 28: 1, 29: 1, 30: 1, 31: 1}.get(pingpong, pingpong),
                      Z_REGS=False, GELU_FIT={3: 3, 4: 2, 5: 3, 7: 3, 8: 3, 10: 3, 11: 3, 13: 2, 14: 3,
                                              15: 2, 16: 2, 17: 2, 18: 2, 19: 2, 20: 2, 21: 2, 22: 2, 23: 2,
                                              24: 2, 25: 2, 26: 2, 27: 2, 28: 2, 29: 2, 30: 2,
                                              31: 2}.get(pingpong, 6),
                      B1_MMA=pingpong in (3, 4, 5, 7, 8, 10, 11, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
                                         26, 27, 28, 29, 30, 31),
                      THREAD_RELEASE=pingpong in (7, 8, 9, 21), BALANCE=pingpong >= 10,
                      LATE_RESIDUAL=pingpong in (14, 18, 22),
                      X_PREFETCH={15: 2, 17: 1, 19: 1, 20: 1, 21: 1, 22: 1, 23: 1}.get(pingpong, 0),
                      CONV_SMEM=pingpong in (16, 17, 19, 20, 21, 22, 23),
                      X_SHUFFLE=pingpong in (19, 24, 25, 26, 27, 28, 29, 30, 31),
                      SPLIT_RING=pingpong in (20, 21, 25, 26, 27, 28, 29, 30, 31), CROSS_TILE=pingpong == 22,
                      EPILOGUE16=pingpong in (23, 24, 25, 26, 27, 28, 29, 30, 31), CONV_REGS=pingpong == 28,
                      BF16_SHIFTS=pingpong == 29, FIRST_Z=pingpong in (30, 31), num_warps=4)
    facts = compile_for_hopper("greyhound.ops._cheri_gluon", "cheri_block_ws_kernel", types, constexprs, 4,
                               divisible=("L",) if even else (), ptxas_report=True)
    assert facts["cubin"] and facts["wgmma"] > 0 and facts["copy_bytes"] == [16]
    ring = stages * 2 * block_e * 128 * 2  # W1 and W2 slices of bf16 per slot
    assert ring + (4 if z_producer else consumers) * 64 * 128 * 2 <= facts["shared"] <= 232448
    assert facts["wait_groups"] == ([0, 1] if pipeline or pingpong in (5, 6, 8, 11) else [0]), facts
    assert facts["ptxas_ran"] and not facts["ptxas_warnings"], facts
    # the L2 prefetch is in the PTX with it only (the z producer's, one a thread and row)
    assert (facts["l2_prefetches"] > 0) == (pingpong in (15, 17, 19, 20, 21, 22, 23)), facts
    # the z producer's 2-byte reloads of the conv weight, every tile, are gone with the taps in shared memory (the
    # only 2-byte loads left are b2's one staging load a thread, and masked ones: b1's and the taps' staging load)
    if z_producer:
        assert (facts["plain_b16_loads"] <= 1) == (pingpong in (16, 17, 19, 20, 21, 22, 23)), facts
    # the shuffled taps: shfl.up within lane pairs (the LayerNorm's sums are butterfly shuffles), with it only
    assert (facts["lane_shuffles_up"] > 0) == (pingpong in (19, 24, 25, 26, 27, 28, 29, 30, 31)), facts
    # the 16-bit epilogue stores 16 bytes a thread and channel, 8 stores a tile a thread (at whole tiles), its only
    # 16-byte global stores; without it the output goes out 8 bytes a store
    if z_producer:
        assert facts["global_stores_16b"] == (16 if pingpong in (23, 24, 25, 26, 27, 28, 29, 30, 31) and even else 0), \
            facts
    # the taps widened by shifts: most of the bf16 -> fp32 conversions (cvt.f32.bf16, each a PRMT and a shift for an
    # upper half) are gone, replaced by the shl / and pairs; the z producer's taps were most of them (849 -> 145 at
    # whole tiles under Triton 3.6)
    if pingpong == 29:
        without = compile_for_hopper("greyhound.ops._cheri_gluon", "cheri_block_ws_kernel", types,
                                     {**constexprs, "BF16_SHIFTS": False}, 4, divisible=("L",) if even else ())
        assert facts["bf16_widenings"] < without["bf16_widenings"] / 2, (facts, without)
        assert facts["shift_widenings"] > 0 == without["shift_widenings"], (facts, without)
    # consumer 1's first z: its conv + LayerNorm is a second copy of the z producer's, outside the tile loops (more
    # x loads and LayerNorm shuffles in the kernel than without it, the same stores and wgmmas)
    if pingpong in (30, 31):
        without = compile_for_hopper("greyhound.ops._cheri_gluon", "cheri_block_ws_kernel", types,
                                     {**constexprs, "FIRST_Z": False}, 4, divisible=("L",) if even else ())
        assert facts["lane_shuffles_up"] > without["lane_shuffles_up"], (facts, without)
        assert (facts["wgmma"], facts["global_stores"]) == (without["wgmma"], without["global_stores"]), \
            (facts, without)
    # the conv's taps in registers: the z producer's 2-byte loads of them, K a channel every tile, are gone (the
    # same kernel without them has more)
    if pingpong == 28:
        without = compile_for_hopper("greyhound.ops._cheri_gluon", "cheri_block_ws_kernel", types,
                                     {**constexprs, "CONV_REGS": False}, 4, divisible=("L",) if even else ())
        assert facts["b16_loads"] < without["b16_loads"], (facts, without)
    # (25's consumers spill nothing under Triton 3.6, the device's, and 24 bytes under 3.9: not asserted)
    if (pipeline and consumers == 2 and block_e <= 32 or z_producer and not pingpong) and even:
        assert facts["spill_bytes"] == 0, facts


def test_warp_specialised_register_budget():
    # the consumers' registers and the producer's fit an SM's 65536 (setmaxnreg counts in multiples of 8)
    gluon_module = cheri_ops._cheri_gluon
    for consumers, most in ((2, 232), (3, 152)):
        assert gluon_module.ws_consumer_regs(consumers) == most
        assert consumers * 128 * most + 128 * gluon_module._PRODUCER_REGS <= 65536
    # with the z producer's warp group beside them: by default it has 168 (what it needs without spilling), at least
    # 88 when the consumers take more
    assert gluon_module.ws_consumer_regs(2, z_producer=True) == 192 and gluon_module.z_producer_regs(192) == 88
    assert gluon_module._WSZ_CONSUMER_REGS == 152 and gluon_module.z_producer_regs(152) == 168
    assert gluon_module.default_consumer_regs(2, z_producer=True) == 152
    # a weight producer of 24 registers (ws_producer_regs) gives its 16 a thread to the others: consumers of 160 beside
    # a z producer of 168, all 65536
    assert gluon_module.z_producer_regs(160, 24) == 168 and gluon_module.z_producer_regs(160) == 152
    assert gluon_module.ws_consumer_regs(2, True, 24) == 200
    assert 2 * 128 * 160 + 128 * (24 + gluon_module.z_producer_regs(160, 24)) == 65536
    assert [gluon_module.default_consumer_regs(n) for n in (2, 3)] == [232, 152]
    for regs in (152, 176, 192):
        assert 2 * 128 * regs + 128 * (gluon_module._PRODUCER_REGS + gluon_module.z_producer_regs(regs)) <= 65536


def test_edits_after_construction_get_clear_errors():
    # session 42's fuzzing: conv.bias = None gave an AttributeError from deep inside, fp32_dot = "fp8" a tuple.index
    # ValueError at the first forward
    block = CheriBlock(16, 3, 2)
    with pytest.raises(ValueError, match="fp32_dot must be one of .* got 'fp8'"):
        block.fp32_dot = "fp8"
    block.fp32_dot = "bf16"
    assert block.fp32_dot == "bf16" and "fp32_dot='bf16'" in repr(block)
    block.conv.bias = None
    with pytest.raises(ValueError, match="conv.bias is None"):
        block(torch.randn(2, 16, 8))


def test_parameters_set_after_construction_must_fit_the_block(device):
    """A parameter set after construction with another shape was read out of bounds in silence (the kernels take the
    shapes from the block's sizes), mixed MLP dtypes failed late or blamed x, a parameter on another device failed deep
    inside. Each path (training forward, no_grad, the eval megakernel) names the parameter; also after a forward has
    passed, and for a `.data` swap of the same Parameter."""
    x = torch.randn(2, 8, 10, device=device)

    def new(*shape, dtype=torch.float32):
        return torch.nn.Parameter(torch.randn(*shape, device=device, dtype=dtype))

    sizes = r"for CheriBlock\(n_filters=8, kernel_size=3, expansion=4\)"
    cases = [
        (lambda b: setattr(b.conv, "bias", new(4)), ValueError, rf"conv.bias must have shape \(8,\) {sizes}, got \(4"),
        (lambda b: setattr(b.conv, "weight", new(8, 2, 3)), ValueError, r"conv.weight must have shape \(8, 1, 3\)"),
        (lambda b: setattr(b.norm, "weight", new(4)), ValueError, r"norm.weight must have shape \(8,\)"),
        (lambda b: setattr(b.fc1, "bias", new(16)), ValueError, r"fc1.bias must have shape \(32,\) .*got \(16,\)"),
        (lambda b: setattr(b.fc2, "weight", new(32, 8)), ValueError, r"fc2.weight must have shape \(8, 32\)"),
        (lambda b: setattr(b.fc2.bias, "data", b.fc2.bias.data[:4]), ValueError, r"fc2.bias must have shape \(8,\)"),
        (lambda b: b.fc2.to(torch.bfloat16), TypeError, r"fc2.weight must have fc1.weight's dtype \(float32.*bfloat16"),
        (lambda b: b.fc1.to(torch.bfloat16), TypeError, r"fc2.weight must have fc1.weight's dtype \(bfloat16.*float32"),
        (lambda b: setattr(b.norm, "bias", new(8, dtype=torch.float64)), TypeError, r"norm.bias must have dtype in"),
        (lambda b: b.conv.to("meta"), ValueError, rf"conv.weight must be on {x.device} like x, got meta"),
        (lambda b: setattr(b.fc2, "bias", torch.nn.Parameter(b.fc2.bias.to("meta"))), ValueError, "fc2.bias must be"),
    ]
    for edit, error, message in cases:
        for path in ("training", "no_grad", "eval"):
            block = make_block(8, 3, 1, expansion=4, device=device)
            block(x)  # passes: the next call checks again after the edit
            edit(block)
            with torch.set_grad_enabled(path == "training"), pytest.raises(error, match=message):
                block.train(path != "eval")(x)
    block = make_block(8, 3, 1, expansion=4, device=device)
    block.fc2.bias = new(8)  # one that fits runs as before
    for path in ("training", "no_grad", "eval"):
        with torch.set_grad_enabled(path == "training"):
            out = block.train(path != "eval")(x)
        assert rel_err(out, fp64_twin(block).reference_forward(x.double())) < 1e-5


def test_a_model_built_under_inference_mode_runs_in_eval_mode(device):
    """Its parameters are inference tensors, without the _version the eval cache's key read: .eval() raised. Their
    cast is made every call instead: inside inference_mode they can be written in place (load_state_dict) unseen."""
    with torch.inference_mode():
        block = make_block(16, 3, 2, expansion=4, device=device)
    assert block.fc1.weight.is_inference()
    block.eval()
    x = torch.randn(2, 16, 24, device=device)
    with torch.no_grad():
        out = block(x)
    assert rel_err(out, fp64_twin(block).reference_forward(x.double())) < 1e-5
    other = make_block(16, 3, 2, expansion=4, device=device)
    with torch.inference_mode():
        assert torch.equal(block(x), out)
        block.load_state_dict(other.state_dict())  # in place, no version bump
        loaded = block(x)
    assert rel_err(loaded, fp64_twin(other).reference_forward(x.double())) < 1e-5
