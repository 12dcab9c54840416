"""cross_entropy_with_grad: greyhound vs torch eager/compile, Liger and fla.

Tracked (every commit): BT=8192, V=128256 (Llama 3), bf16, greyhound and the best peer (fla), every mode.
Sweeps (nightly): the vocabulary at BT=8192 and the token count at V=128256, every provider.
"""
import functools

import torch.nn.functional as F

from . import harness
from .harness import grid

PROVIDERS = ["greyhound", "torch-eager", "torch-compile", "liger", "fla"]
CPU_SHAPE = dict(batch_size=32, vocab_size=1000, dtype="float32")  # greyhound through TRITON_INTERPRET=1


def _torch_cross_entropy(logits, target):
    return F.cross_entropy(logits, target)


class CrossEntropyWithGradTracked(harness.KernelSuite):
    kernel_name = "cross_entropy_with_grad"
    tuning_module = "greyhound.ops.cross_entropy"  # greyhound[loss_block_v=...,loss_warps=...] variants
    x_name = "vocab_size"
    providers = ["greyhound", "fla"]
    gpu_shapes = grid(batch_size=[8192], vocab_size=[128256], dtype=["bfloat16"])
    cpu_shapes = [CPU_SHAPE]

    def make_inputs(self, batch_size, vocab_size, dtype):
        return harness.random_logits(batch_size, vocab_size, dtype)

    @classmethod
    def work(cls, mode, shape):
        """Read the logits; with a gradient, write it too. The loss's gradient is known in the forward, so a backward
        of loss.backward() (upstream gradient 1) has no work left of its own: no roofline for that mode."""
        logits = shape["batch_size"] * shape["vocab_size"] * harness.dtype_bytes(shape["dtype"])
        return {"forward": (logits, 0), "full": (2 * logits, 0), "backward": (0, 0)}[mode]

    def reference(self, logits, target):
        return F.cross_entropy(logits, target)

    def provider_fn(self, provider, **shape):
        if provider == "greyhound":
            from greyhound import cross_entropy_with_grad
            return functools.partial(cross_entropy_with_grad, check_target=False)
        if provider == "torch-eager":
            return _torch_cross_entropy
        if provider == "torch-compile":
            return self.compile(_torch_cross_entropy)
        if provider == "liger":  # note: Liger writes the gradient into the caller's logits
            from liger_kernel.transformers import LigerCrossEntropyLoss
            return LigerCrossEntropyLoss()
        if provider == "fla":
            from fla.modules import FusedCrossEntropyLoss
            return FusedCrossEntropyLoss()
        raise ValueError(f"provider {provider!r} is not one of {PROVIDERS}")


class CrossEntropyWithGradVocabSweep(CrossEntropyWithGradTracked):
    tier = "sweep"
    providers = PROVIDERS
    gpu_shapes = grid(batch_size=[8192], vocab_size=[32768, 65536, 128256, 262144], dtype=["bfloat16"])
    cpu_shapes = grid(batch_size=[32], vocab_size=[1000, 4096], dtype=["float32"])

    def setup_cache(self):
        return self.measure_suite()


class CrossEntropyWithGradTokenSweep(CrossEntropyWithGradTracked):
    tier = "sweep"
    x_name = "batch_size"
    providers = PROVIDERS
    gpu_shapes = grid(batch_size=[2048, 4096, 8192, 16384], vocab_size=[128256], dtype=["bfloat16"])
    cpu_shapes = grid(batch_size=[16, 48], vocab_size=[1000], dtype=["float32"])

    def setup_cache(self):
        return self.measure_suite()
