"""CheriBlock: greyhound's training path and inference megakernel vs torch eager/compile, over the batch size.

Tracked (every commit): N=512, C=128, L=1024 in bf16 and fp32, every greyhound path and torch.compile (the best
peer). Sweep (nightly): N in {16, 64, 512} x {fp32, bf16, fp16}, every provider: the published table's cells.
"""
import torch

from . import harness
from .harness import DEVICE, DTYPES, grid

PROVIDERS = ["greyhound-train", "greyhound-megakernel", "greyhound-megakernel-noeval", "torch-eager", "torch-compile"]
TRAINING_PROVIDERS = ("greyhound-train", "torch-eager", "torch-compile")  # the ones a training step (full) can time
KERNEL_SIZE, DILATION, EXPANSION = 3, 4, 4


class CheriBlockTracked(harness.KernelSuite):
    """One CheriBlock (conv K=3, dilation 4, MLP 4x) on x of shape (batch_size, n_filters, seq_len).
    full = a training step (forward + backward); forward = greyhound-train with grad enabled (the training
    forward), the megakernel providers under no_grad in eval mode (cached weight cast) or train mode (inline cast)."""
    kernel_name = "cheri_block"
    tuning_module = "greyhound.ops.cheri_conv_norm"  # greyhound-train[layout=...,block_e=...] variants
    x_name = "batch_size"
    providers = ["greyhound-train", "greyhound-megakernel", "greyhound-megakernel-noeval", "torch-compile"]
    modes = ["full", "forward"]
    gpu_shapes = grid(batch_size=[512], n_filters=[128], seq_len=[1024], dtype=["bfloat16", "float32"])
    cpu_shapes = grid(batch_size=[2], n_filters=[16], seq_len=[32], dtype=["float32"])

    @classmethod
    def serves(cls, provider, mode, shape):
        return mode != "full" or provider in TRAINING_PROVIDERS  # the megakernel is inference only

    @classmethod
    def work(cls, mode, shape):
        """The MLP's two GEMMs (2·N·L·C·E flops each, E = 4C; backward twice that) and x in, y out (training: the
        gradients too)."""
        tokens, c = shape["batch_size"] * shape["seq_len"], shape["n_filters"]
        gemms = 2 * 2 * tokens * c * EXPANSION * c
        activations = 2 * tokens * c * harness.dtype_bytes(shape["dtype"])
        return (activations, gemms) if mode == "forward" else (2 * activations, 3 * gemms)

    def make_inputs(self, batch_size, n_filters, seq_len, dtype):
        from greyhound import CheriBlock
        block = CheriBlock(n_filters, KERNEL_SIZE, DILATION, EXPANSION, device=DEVICE)
        with torch.no_grad():  # default init, LayerNorm affine and biases moved off 1 and 0 (as the tests do)
            block.norm.weight.copy_(1 + 0.3 * torch.randn(n_filters))
            for bias in (block.conv.bias, block.norm.bias, block.fc1.bias, block.fc2.bias):
                bias.add_(0.2 * torch.randn_like(bias))
        self.block = block.to(DTYPES[dtype])
        self.reference_block = CheriBlock(n_filters, KERNEL_SIZE, DILATION, EXPANSION, device=DEVICE,
                                          dtype=torch.float64)
        self.reference_block.load_state_dict({k: v.double() for k, v in self.block.state_dict().items()})
        x = torch.randn(batch_size, n_filters, seq_len, device=DEVICE, dtype=DTYPES[dtype])
        return {"x": x}, ["x"]

    def reference(self, x):
        return self.reference_block.reference_forward(x)

    def provider_fn(self, provider, **shape):
        from greyhound.nn.cheri_block import CheriBlockReference
        if provider == "greyhound-train":
            return self.block.train()
        if provider == "greyhound-megakernel":
            return self.block.eval()  # builds the weight cast here, outside the timed calls
        if provider == "greyhound-megakernel-noeval":
            return self.block.train()
        if provider == "torch-eager":
            return CheriBlockReference(self.block)
        if provider == "torch-compile":
            return self.compile(CheriBlockReference(self.block))
        raise ValueError(f"provider {provider!r} is not one of {PROVIDERS}")

    def forward_context(self, provider):
        """The training forward keeps autograd on (it saves the hidden layer for a backward); the rest run no_grad."""
        return torch.enable_grad() if provider == "greyhound-train" else torch.no_grad()


class CheriBlockSweep(CheriBlockTracked):
    tier = "sweep"
    providers = PROVIDERS
    gpu_shapes = grid(batch_size=[16, 64, 512], n_filters=[128], seq_len=[1024],
                      dtype=["float32", "bfloat16", "float16"])
    cpu_shapes = grid(batch_size=[1, 2], n_filters=[16], seq_len=[32], dtype=["float32"])

    def setup_cache(self):
        return self.measure_suite()


class CheriConvNormSweep(harness.KernelSuite):
    """The Cheri Block's conv + LayerNorm alone (z = LayerNorm_C(depthwise causal conv of x), returned (N, L, C)):
    the block's fused kernel (`conv_norm`) against the same computed by reusing causal_conv1d's kernels followed by
    torch's LayerNorm (`greyhound-causal-conv1d`: the reuse the causal_conv1d issue asks to measure), and torch.
    Sweep only: a design question, not a per-commit series."""
    kernel_name = "cheri_conv_norm"
    tier = "sweep"
    x_name = "batch_size"
    providers = ["greyhound", "greyhound-causal-conv1d", "torch-eager", "torch-compile"]
    gpu_shapes = grid(batch_size=[64, 512], n_filters=[128], seq_len=[1024], dtype=["bfloat16", "float32"])
    cpu_shapes = grid(batch_size=[2], n_filters=[16], seq_len=[32], dtype=["float32"])

    def setup_cache(self):
        return self.measure_suite()

    @classmethod
    def work(cls, mode, shape):
        """x in, z out (backward: dz in, dx out, x re-read); the conv and the norm's flops are negligible."""
        tensor = shape["batch_size"] * shape["n_filters"] * shape["seq_len"] * harness.dtype_bytes(shape["dtype"])
        return {"forward": 2 * tensor, "backward": 3 * tensor, "full": 5 * tensor}[mode], 0

    def make_inputs(self, batch_size, n_filters, seq_len, dtype):
        dtype = DTYPES[dtype]
        x = torch.randn(batch_size, n_filters, seq_len, device=DEVICE, dtype=dtype)
        conv_weight = (torch.randn(n_filters, 1, KERNEL_SIZE, device=DEVICE) / KERNEL_SIZE**0.5).to(dtype)
        conv_bias = (0.2 * torch.randn(n_filters, device=DEVICE)).to(dtype)
        norm_weight = (1 + 0.3 * torch.randn(n_filters, device=DEVICE)).to(dtype)
        norm_bias = (0.2 * torch.randn(n_filters, device=DEVICE)).to(dtype)
        inputs = {"x": x, "conv_weight": conv_weight, "conv_bias": conv_bias, "norm_weight": norm_weight,
                  "norm_bias": norm_bias}
        return inputs, list(inputs)

    @staticmethod
    def _torch(x, conv_weight, conv_bias, norm_weight, norm_bias):
        from greyhound.ops.cheri_conv_norm import conv_norm_reference
        return conv_norm_reference(x, conv_weight, conv_bias, norm_weight, norm_bias, dilation=DILATION)

    def reference(self, *inputs):
        return self._torch(*inputs)

    def provider_fn(self, provider, **shape):
        if provider == "greyhound":
            from greyhound.ops.cheri_conv_norm import conv_norm

            def fused(x, conv_weight, conv_bias, norm_weight, norm_bias):
                return conv_norm(x, conv_weight, conv_bias, norm_weight, norm_bias, dilation=DILATION)
            return fused
        if provider == "greyhound-causal-conv1d":
            from greyhound import causal_conv1d
            from greyhound.ops.cheri_conv_norm import channel_layer_norm

            def reuse(x, conv_weight, conv_bias, norm_weight, norm_bias):
                y = causal_conv1d(x, conv_weight.squeeze(1), conv_bias, dilation=DILATION)
                return channel_layer_norm(y, norm_weight, norm_bias)
            return reuse
        if provider == "torch-eager":
            return self._torch
        if provider == "torch-compile":
            return self.compile(self._torch)
        raise ValueError(f"provider {provider!r} is not one of {self.providers}")
