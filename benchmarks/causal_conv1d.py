"""causal_conv1d (depthwise causal conv + silu, x (B, D, L)): greyhound vs torch eager/compile, fla and causal-conv1d.

Tracked (every commit): B=8, D=4096, L=2048, W=4, channel-last bf16 (x = y.transpose(1, 2) of a (B, L, D) tensor,
as Mamba-style models hold it), greyhound and the best peer (fla), every mode.
Sweeps (nightly): the sequence length (and W in {2, 3, 4}, causal-conv1d's range) and the width D, both layouts,
every provider; and causal_conv1d_update, one decoding step (x_t (B, D), the (B, D, W - 1) state rolled in place),
over the batch, forward only.
"""
import functools
import importlib

import torch

from . import harness
from .harness import DEVICE, DTYPES, grid

PROVIDERS = ["greyhound", "greyhound-compiled", "torch-eager", "torch-compile", "fla", "causal-conv1d"]
LAYOUTS = ["channel_last", "contiguous"]  # contiguous: x stored (B, D, L)


def _reference_fn():
    """greyhound's plain-PyTorch definition; NotImplementedError (n/a) at commits that predate the op."""
    try:
        return importlib.import_module("greyhound.ops.causal_conv1d").causal_conv1d_reference
    except ImportError as err:
        raise NotImplementedError(f"greyhound at this commit has no causal_conv1d_reference ({err})") from None


def _torch_fn():
    """The reference in the inputs' dtype (F.conv1d over x left-padded with zeros, then silu): eager and compile."""
    reference = _reference_fn()

    def run(x, weight, bias):
        return reference(x, weight, bias, activation="silu")
    return run


def _fla_fn():
    from fla.modules.convolution import causal_conv1d as fla_causal_conv1d

    def run(x, weight, bias):  # fla takes and returns (B, T, D); it returns (y, final_state)
        y = fla_causal_conv1d(x.transpose(1, 2), weight=weight, bias=bias, activation="silu")
        return (y[0] if isinstance(y, tuple) else y).transpose(1, 2)
    return run


class CausalConv1dTracked(harness.KernelSuite):
    kernel_name = "causal_conv1d"
    x_name = "seq_len"
    # greyhound-compiled: the registered op inside torch.compile(fullgraph=True), so the custom-op boundary's cost
    # is tracked beside the eager call.
    providers = ["greyhound", "greyhound-compiled", "fla"]
    tuning_module = "greyhound.ops.causal_conv1d"  # greyhound[block_l=...,bwd_warps=...] variants (sweep CLI)
    gpu_shapes = grid(batch_size=[8], dim=[4096], seq_len=[2048], width=[4], layout=["channel_last"],
                      dtype=["bfloat16"])
    cpu_shapes = grid(batch_size=[2], dim=[64], seq_len=[100], width=[4], layout=["channel_last"], dtype=["float32"])

    def make_inputs(self, batch_size, dim, seq_len, width, layout, dtype):
        dtype = DTYPES[dtype]
        if layout == "channel_last":
            x = torch.randn(batch_size, seq_len, dim, device=DEVICE, dtype=dtype).transpose(1, 2)
        else:
            x = torch.randn(batch_size, dim, seq_len, device=DEVICE, dtype=dtype)
        weight = torch.randn(dim, width, device=DEVICE, dtype=dtype) / width**0.5
        bias = torch.randn(dim, device=DEVICE, dtype=dtype)
        return {"x": x, "weight": weight, "bias": bias}, ["x", "weight", "bias"]

    def reference(self, x, weight, bias):
        return _reference_fn()(x, weight, bias, activation="silu")

    @classmethod
    def work(cls, mode, shape):
        """Forward: x read, out written; backward: x and grad_out read, grad_x written (weights are tiny)."""
        tensor = shape["batch_size"] * shape["dim"] * shape["seq_len"] * harness.dtype_bytes(shape["dtype"])
        return {"forward": 2, "backward": 3, "full": 5}[mode] * tensor, 0

    def provider_fn(self, provider, **shape):
        if provider == "greyhound":
            return functools.partial(harness.greyhound_op("causal_conv1d"), activation="silu")
        if provider == "greyhound-compiled":
            return self.compile(functools.partial(harness.greyhound_op("causal_conv1d"), activation="silu"),
                                fullgraph=True)
        if provider == "torch-eager":
            return _torch_fn()
        if provider == "torch-compile":
            return self.compile(_torch_fn())
        if provider == "fla":
            return _fla_fn()
        if provider == "causal-conv1d":  # Tri Dao's CUDA kernels: W in 2..4, either layout read in place
            from causal_conv1d import causal_conv1d_fn
            return functools.partial(causal_conv1d_fn, activation="silu")
        raise ValueError(f"provider {provider!r} is not one of {PROVIDERS}")


class CausalConv1dSeqLenSweep(CausalConv1dTracked):
    tier = "sweep"
    providers = PROVIDERS
    gpu_shapes = grid(batch_size=[8], dim=[4096], seq_len=[512, 2048, 8192], width=[2, 3, 4], layout=LAYOUTS,
                      dtype=["bfloat16"])
    cpu_shapes = grid(batch_size=[2], dim=[32], seq_len=[33, 100], width=[3], layout=LAYOUTS, dtype=["float32"])

    def setup_cache(self):
        return self.measure_suite()


class CausalConv1dDimSweep(CausalConv1dTracked):
    tier = "sweep"
    x_name = "dim"
    providers = PROVIDERS
    gpu_shapes = grid(batch_size=[8], dim=[1024, 4096, 8192], seq_len=[2048], width=[4], layout=LAYOUTS,
                      dtype=["bfloat16"])
    cpu_shapes = grid(batch_size=[2], dim=[16, 40], seq_len=[64], width=[4], layout=LAYOUTS, dtype=["float32"])

    def setup_cache(self):
        return self.measure_suite()


def _torch_update(x_t, conv_state, weight, bias):
    """One decoding step in plain PyTorch (eager and compile), the state rolled in place as the kernels do."""
    window = torch.cat([conv_state, x_t[..., None]], dim=-1)  # (B, D, W)
    out = torch.nn.functional.silu((window * weight).sum(-1) + bias)
    conv_state.copy_(window[..., 1:])
    return out


class CausalConv1dUpdateSweep(harness.KernelSuite):
    """causal_conv1d_update: one decoding step of the conv (Mamba-style inference), forward only. Every call rolls
    the state in place, so the timed calls run on the state the previous call left (fresh random values move
    through it); the correctness gate compares the first call with the fp64 reference of the state before it."""
    kernel_name = "causal_conv1d_update"
    x_name = "batch_size"
    tier = "sweep"
    modes = ["forward"]
    providers = ["greyhound", "greyhound-compiled", "torch-eager", "torch-compile", "causal-conv1d"]
    gpu_shapes = grid(batch_size=[1, 16, 128, 512], dim=[4096], width=[4], dtype=["bfloat16"])
    cpu_shapes = grid(batch_size=[1, 3], dim=[32], width=[4], dtype=["float32"])

    def setup_cache(self):
        return self.measure_suite()

    def make_inputs(self, batch_size, dim, width, dtype):
        dtype = DTYPES[dtype]
        x_t = torch.randn(batch_size, dim, device=DEVICE, dtype=dtype)
        conv_state = torch.randn(batch_size, dim, width - 1, device=DEVICE, dtype=dtype)
        weight = torch.randn(dim, width, device=DEVICE, dtype=dtype) / width**0.5
        bias = torch.randn(dim, device=DEVICE, dtype=dtype)
        return {"x_t": x_t, "conv_state": conv_state, "weight": weight, "bias": bias}, []

    def reference_inputs(self):
        return dict(self.inputs, conv_state=self.inputs["conv_state"].clone())  # the provider rolls it in place

    def reference(self, x_t, conv_state, weight, bias):
        return _reference_fn()(x_t[..., None], weight, bias, activation="silu", initial_states=conv_state)[..., -1]

    @classmethod
    def work(cls, mode, shape):
        """x_t read, out written, the state read and written; the weights once."""
        step = shape["batch_size"] * shape["dim"] * (2 + 2 * (shape["width"] - 1))
        return (step + shape["dim"] * (shape["width"] + 1)) * harness.dtype_bytes(shape["dtype"]), 0

    def provider_fn(self, provider, **shape):
        if provider == "greyhound":
            return functools.partial(harness.greyhound_op("causal_conv1d_update"), activation="silu")
        if provider == "greyhound-compiled":
            return self.compile(functools.partial(harness.greyhound_op("causal_conv1d_update"), activation="silu"),
                                fullgraph=True)
        if provider == "torch-eager":
            return _torch_update
        if provider == "torch-compile":
            return self.compile(_torch_update)
        if provider == "causal-conv1d":  # Tri Dao's CUDA kernel: x (B, D), the state rolled in place
            from causal_conv1d import causal_conv1d_update
            return functools.partial(causal_conv1d_update, activation="silu")
        raise ValueError(f"provider {provider!r} is not one of {self.providers}")
