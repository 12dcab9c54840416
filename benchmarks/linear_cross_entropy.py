"""chunked_linear_cross_entropy: greyhound vs torch eager/compile, Liger, cut-cross-entropy and fla.

Two sweeps: the vocabulary at d_model=4096 (x: vocab_size), and the 2-D sweep d_model x vocab_size (x: d_model,
vocab_size in the fixed config), which tools.plot draws as a Plotly page.
"""
import functools

import torch

from . import harness
from .harness import MODES, ON_GPU

PROVIDERS = ["greyhound", "torch-eager", "torch-compile", "liger", "cut-cross-entropy", "fla"]


def _reference(x, weight, target):
    from greyhound.ops.linear_cross_entropy import chunked_linear_cross_entropy_reference
    return chunked_linear_cross_entropy_reference(x, weight, target)


class ChunkedLinearCrossEntropy(harness.KernelSuite):
    kernel_name = "chunked_linear_cross_entropy"
    x_name = "vocab_size"
    param_names = ["provider", "mode", "batch_size", "d_model", "vocab_size", "dtype"]
    if ON_GPU:
        params = [harness.served_providers(PROVIDERS), MODES, [8192], [4096], [32768, 65536, 128256, 262144], ["bfloat16"]]
    else:
        params = [harness.served_providers(PROVIDERS), MODES, [32], [64], [1000, 4096], ["float32"]]

    def make_inputs(self, batch_size, d_model, vocab_size, dtype):
        return harness.random_lm_head(batch_size, d_model, vocab_size, dtype)

    def reference(self, x, weight, target):
        return _reference(x, weight, target)

    def provider_fn(self, provider, **shape):
        if provider == "greyhound":
            from greyhound import chunked_linear_cross_entropy
            return functools.partial(chunked_linear_cross_entropy, check_target=False)
        if provider == "torch-eager":
            return _reference
        if provider == "torch-compile":
            return torch.compile(_reference)
        if provider == "liger":
            from liger_kernel.transformers import LigerFusedLinearCrossEntropyLoss
            loss = LigerFusedLinearCrossEntropyLoss()
            return lambda x, weight, target: loss(weight, x, target)
        if provider == "cut-cross-entropy":
            from cut_cross_entropy import linear_cross_entropy
            return linear_cross_entropy
        if provider == "fla":
            from fla.modules import FusedLinearCrossEntropyLoss
            loss = FusedLinearCrossEntropyLoss()
            return lambda x, weight, target: loss(x, target, weight)
        raise ValueError(f"provider {provider!r} is not one of {PROVIDERS}")

    def time_chunked_linear_cross_entropy(self, *params):
        self.timed_call()

    def track_peakmem_chunked_linear_cross_entropy(self, *params):
        return self.peak_memory()


class ChunkedLinearCrossEntropy2D(ChunkedLinearCrossEntropy):
    x_name = "d_model"
    param_names = ["provider", "mode", "batch_size", "d_model", "vocab_size", "dtype"]
    if ON_GPU:
        params = [harness.served_providers(PROVIDERS), MODES, [8192], [4096, 8192], [65536, 128256], ["bfloat16"]]
    else:
        params = [harness.served_providers(PROVIDERS), MODES, [32], [32, 64], [1000, 2048], ["float32"]]

    def time_chunked_linear_cross_entropy(self, *params):
        self.timed_call()

    def track_peakmem_chunked_linear_cross_entropy(self, *params):
        return self.peak_memory()
