"""cross_entropy_with_grad: greyhound vs torch eager/compile, Liger and fla, over the vocabulary size."""
import functools

import torch
import torch.nn.functional as F

from . import harness
from .harness import MODES, ON_GPU

PROVIDERS = ["greyhound", "torch-eager", "torch-compile", "liger", "fla"]


def _torch_cross_entropy(logits, target):
    return F.cross_entropy(logits, target)


class CrossEntropyWithGrad(harness.KernelSuite):
    kernel_name = "cross_entropy_with_grad"
    x_name = "vocab_size"
    param_names = ["provider", "mode", "batch_size", "vocab_size", "dtype"]
    if ON_GPU:
        params = [harness.served_providers(PROVIDERS), MODES, [8192], [32768, 65536, 128256, 262144], ["bfloat16"]]
    else:  # what the CPU can serve: greyhound through TRITON_INTERPRET=1
        params = [harness.served_providers(PROVIDERS), MODES, [32], [1000, 4096], ["float32"]]

    def make_inputs(self, batch_size, vocab_size, dtype):
        return harness.random_logits(batch_size, vocab_size, dtype)

    def reference(self, logits, target):
        return F.cross_entropy(logits, target)

    def provider_fn(self, provider, **shape):
        if provider == "greyhound":
            from greyhound import cross_entropy_with_grad
            return functools.partial(cross_entropy_with_grad, check_target=False)
        if provider == "torch-eager":
            return _torch_cross_entropy
        if provider == "torch-compile":
            return torch.compile(_torch_cross_entropy)
        if provider == "liger":  # note: Liger writes the gradient into the caller's logits
            from liger_kernel.transformers import LigerCrossEntropyLoss
            return LigerCrossEntropyLoss()
        if provider == "fla":
            from fla.modules import FusedCrossEntropyLoss
            return FusedCrossEntropyLoss()
        raise ValueError(f"provider {provider!r} is not one of {PROVIDERS}")

    def time_cross_entropy_with_grad(self, *params):
        self.timed_call()

    def track_peakmem_cross_entropy_with_grad(self, *params):
        return self.peak_memory()


class CrossEntropyWithGradBatch(CrossEntropyWithGrad):
    """The token-count sweep at a Llama-3 vocabulary."""
    x_name = "batch_size"
    if ON_GPU:
        params = [harness.served_providers(PROVIDERS), MODES, [2048, 4096, 8192, 16384], [128256], ["bfloat16"]]
    else:
        params = [harness.served_providers(PROVIDERS), MODES, [16, 48], [1000], ["float32"]]

    def time_cross_entropy_with_grad(self, *params):
        self.timed_call()

    def track_peakmem_cross_entropy_with_grad(self, *params):
        return self.peak_memory()
