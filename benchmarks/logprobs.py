"""logprobs (from logits) and linear_logprobs (from hidden states and the lm-head weight): greyhound vs torch
eager/compile and the peers' per-token cross-entropy (negated: -CE(reduction='none') is the log-probability)."""
import functools

import torch

from . import harness
from .harness import MODES, ON_GPU

PROVIDERS = ["greyhound", "torch-eager", "torch-compile", "liger", "fla"]
LINEAR_PROVIDERS = ["greyhound", "torch-eager", "torch-compile", "liger", "cut-cross-entropy"]


def _logprobs_reference(logits, target):
    from greyhound.ops.logprobs import logprobs_reference
    return logprobs_reference(logits, target)


def _linear_logprobs_reference(hidden, weight, target):
    from greyhound.ops.logprobs import linear_logprobs_reference
    return linear_logprobs_reference(hidden, weight, target)


class Logprobs(harness.KernelSuite):
    kernel_name = "logprobs"
    x_name = "vocab_size"
    param_names = ["provider", "mode", "batch_size", "vocab_size", "dtype"]
    if ON_GPU:
        params = [harness.served_providers(PROVIDERS), MODES, [8192], [32768, 65536, 128256, 262144], ["bfloat16"]]
    else:
        params = [harness.served_providers(PROVIDERS), MODES, [32], [1000, 4096], ["float32"]]

    def make_inputs(self, batch_size, vocab_size, dtype):
        return harness.random_logits(batch_size, vocab_size, dtype)

    def reference(self, logits, target):
        return _logprobs_reference(logits, target)

    def provider_fn(self, provider, **shape):
        if provider == "greyhound":
            from greyhound import logprobs
            return functools.partial(logprobs, check_target=False)
        if provider == "torch-eager":
            return _logprobs_reference
        if provider == "torch-compile":
            return torch.compile(_logprobs_reference)
        if provider == "liger":
            from liger_kernel.transformers.functional import liger_cross_entropy
            return lambda logits, target: -liger_cross_entropy(logits, target, reduction="none")
        if provider == "fla":
            from fla.modules import FusedCrossEntropyLoss
            loss = FusedCrossEntropyLoss(reduction="none")
            return lambda logits, target: -loss(logits, target)
        raise ValueError(f"provider {provider!r} is not one of {PROVIDERS}")

    def time_logprobs(self, *params):
        self.timed_call()

    def track_peakmem_logprobs(self, *params):
        return self.peak_memory()


class LinearLogprobs(harness.KernelSuite):
    kernel_name = "linear_logprobs"
    x_name = "vocab_size"
    param_names = ["provider", "mode", "batch_size", "d_model", "vocab_size", "dtype"]
    if ON_GPU:
        params = [harness.served_providers(LINEAR_PROVIDERS), MODES, [8192], [4096], [32768, 65536, 128256, 262144], ["bfloat16"]]
    else:
        params = [harness.served_providers(LINEAR_PROVIDERS), MODES, [32], [64], [1000, 4096], ["float32"]]

    def make_inputs(self, batch_size, d_model, vocab_size, dtype):
        return harness.random_lm_head(batch_size, d_model, vocab_size, dtype, hidden_name="hidden")

    def reference(self, hidden, weight, target):
        return _linear_logprobs_reference(hidden, weight, target)

    def provider_fn(self, provider, **shape):
        if provider == "greyhound":
            from greyhound import linear_logprobs
            return functools.partial(linear_logprobs, check_target=False)
        if provider == "torch-eager":
            return _linear_logprobs_reference
        if provider == "torch-compile":
            return torch.compile(_linear_logprobs_reference)
        if provider == "liger":
            from liger_kernel.transformers import LigerFusedLinearCrossEntropyLoss
            loss = LigerFusedLinearCrossEntropyLoss(reduction="none")
            return lambda hidden, weight, target: -loss(weight, hidden, target)
        if provider == "cut-cross-entropy":
            from cut_cross_entropy import linear_cross_entropy
            return lambda hidden, weight, target: -linear_cross_entropy(hidden, weight, target, reduction="none")
        raise ValueError(f"provider {provider!r} is not one of {LINEAR_PROVIDERS}")

    def time_linear_logprobs(self, *params):
        self.timed_call()

    def track_peakmem_linear_logprobs(self, *params):
        return self.peak_memory()
