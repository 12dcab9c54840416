"""logprobs (from logits) and linear_logprobs (from hidden states and the lm-head weight): greyhound vs torch
eager/compile and the peers' per-token cross-entropy (negated: -CE(reduction='none') is the log-probability).

Tracked (every commit): BT=8192, V=128256, d_model=4096, bf16, greyhound and the best peer (fla for logprobs,
torch.compile for linear_logprobs), every mode. Sweeps (nightly): the vocabulary, every provider.
"""
import functools

from . import harness
from .harness import grid

PROVIDERS = ["greyhound", "torch-eager", "torch-compile", "liger", "fla"]
LINEAR_PROVIDERS = ["greyhound", "torch-eager", "torch-compile", "liger", "cut-cross-entropy"]


def lm_head_work(mode, shape):
    """The lm-head GEMMs (forward 1, backward 2 of 2·BT·H·V flops each) and reading hidden states and weight once
    (and writing their gradients)."""
    bt, h, v, size = shape["batch_size"], shape["d_model"], shape["vocab_size"], harness.dtype_bytes(shape["dtype"])
    gemms = {"forward": 1, "backward": 2, "full": 3}[mode]
    tensors = (bt * h + v * h) * size * (1 if mode == "forward" else 2)
    return tensors, gemms * 2 * bt * h * v


def _logprobs_reference(logits, target):
    from greyhound.ops.logprobs import logprobs_reference
    return logprobs_reference(logits, target)


def _linear_logprobs_reference(hidden, weight, target):
    from greyhound.ops.logprobs import linear_logprobs_reference
    return linear_logprobs_reference(hidden, weight, target)


class LogprobsTracked(harness.KernelSuite):
    kernel_name = "logprobs"
    tuning_module = "greyhound.ops.logprobs"  # greyhound[fwd_block_v=...,bwd_warps=...] variants
    x_name = "vocab_size"
    providers = ["greyhound", "fla"]
    gpu_shapes = grid(batch_size=[8192], vocab_size=[128256], dtype=["bfloat16"])
    cpu_shapes = grid(batch_size=[32], vocab_size=[1000], dtype=["float32"])

    def make_inputs(self, batch_size, vocab_size, dtype):
        return harness.random_logits(batch_size, vocab_size, dtype)

    @classmethod
    def work(cls, mode, shape):
        """Read the logits forward; backward reads them again and writes their gradient (its scale per token
        comes with the upstream gradient, so it cannot be written during the forward)."""
        logits = shape["batch_size"] * shape["vocab_size"] * harness.dtype_bytes(shape["dtype"])
        return {"forward": logits, "backward": 2 * logits, "full": 3 * logits}[mode], 0

    def reference(self, logits, target):
        return _logprobs_reference(logits, target)

    def provider_fn(self, provider, **shape):
        if provider == "greyhound":
            from greyhound import logprobs
            return functools.partial(logprobs, check_target=False)
        if provider == "torch-eager":
            return _logprobs_reference
        if provider == "torch-compile":
            return self.compile(_logprobs_reference)
        if provider == "liger":
            from liger_kernel.transformers.functional import liger_cross_entropy
            return lambda logits, target: -liger_cross_entropy(logits, target, reduction="none")
        if provider == "fla":
            from fla.modules import FusedCrossEntropyLoss
            loss = FusedCrossEntropyLoss(reduction="none")
            return lambda logits, target: -loss(logits, target)
        raise ValueError(f"provider {provider!r} is not one of {PROVIDERS}")


class LogprobsVocabSweep(LogprobsTracked):
    tier = "sweep"
    providers = PROVIDERS
    gpu_shapes = grid(batch_size=[8192], vocab_size=[32768, 65536, 128256, 262144], dtype=["bfloat16"])
    cpu_shapes = grid(batch_size=[32], vocab_size=[1000, 4096], dtype=["float32"])

    def setup_cache(self):
        return self.measure_suite()


class LinearLogprobsTracked(harness.KernelSuite):
    kernel_name = "linear_logprobs"
    tuning_module = "greyhound.ops.logprobs"  # TUNING_OP "logprobs": its kernels and linear_chunk_rows
    x_name = "vocab_size"
    providers = ["greyhound", "torch-compile"]
    gpu_shapes = grid(batch_size=[8192], d_model=[4096], vocab_size=[128256], dtype=["bfloat16"])
    cpu_shapes = grid(batch_size=[32], d_model=[64], vocab_size=[1000], dtype=["float32"])

    def make_inputs(self, batch_size, d_model, vocab_size, dtype):
        return harness.random_lm_head(batch_size, d_model, vocab_size, dtype, hidden_name="hidden")

    @classmethod
    def work(cls, mode, shape):
        return lm_head_work(mode, shape)

    def reference(self, hidden, weight, target):
        return _linear_logprobs_reference(hidden, weight, target)

    def provider_fn(self, provider, **shape):
        if provider == "greyhound":
            from greyhound import linear_logprobs
            return functools.partial(linear_logprobs, check_target=False)
        if provider == "torch-eager":
            return _linear_logprobs_reference
        if provider == "torch-compile":
            return self.compile(_linear_logprobs_reference)
        if provider == "liger":
            from liger_kernel.transformers import LigerFusedLinearCrossEntropyLoss
            loss = LigerFusedLinearCrossEntropyLoss(reduction="none")
            return lambda hidden, weight, target: -loss(weight, hidden, target)
        if provider == "cut-cross-entropy":
            from cut_cross_entropy import linear_cross_entropy
            return lambda hidden, weight, target: -linear_cross_entropy(hidden, weight, target, reduction="none")
        raise ValueError(f"provider {provider!r} is not one of {LINEAR_PROVIDERS}")


class LinearLogprobsVocabSweep(LinearLogprobsTracked):
    tier = "sweep"
    providers = LINEAR_PROVIDERS
    gpu_shapes = grid(batch_size=[8192], d_model=[4096], vocab_size=[32768, 65536, 128256, 262144],
                      dtype=["bfloat16"])
    cpu_shapes = grid(batch_size=[32], d_model=[64], vocab_size=[1000, 4096], dtype=["float32"])

    def setup_cache(self):
        return self.measure_suite()
