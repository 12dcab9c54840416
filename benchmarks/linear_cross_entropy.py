"""chunked_linear_cross_entropy: greyhound vs torch eager/compile, Liger, cut-cross-entropy and fla.

Tracked (every commit): BT=8192, d_model=4096, V=128256, bf16, greyhound, its low-memory schedule and the best peer
by time (torch.compile), every mode (`greyhound-low-memory`: grad_schedule="vocab", full and backward only: its
forward is greyhound's). Sweeps (nightly): the vocabulary at d_model=4096 (x: vocab_size), and d_model x vocab_size (x: d_model,
vocab_size in the fixed config), which tools.plot draws as a Plotly page.
"""
import functools

from . import harness
from .harness import grid
from .logprobs import lm_head_work

PROVIDERS = ["greyhound", "greyhound-low-memory", "torch-eager", "torch-compile", "liger", "cut-cross-entropy", "fla"]


def _reference(x, weight, target):
    from greyhound.ops.linear_cross_entropy import chunked_linear_cross_entropy_reference
    return chunked_linear_cross_entropy_reference(x, weight, target)


class ChunkedLinearCrossEntropyTracked(harness.KernelSuite):
    kernel_name = "chunked_linear_cross_entropy"
    tuning_module = "greyhound.ops.linear_cross_entropy"  # greyhound[chunk_rows=...,vocab_schedule=1] variants
    x_name = "vocab_size"
    providers = ["greyhound", "greyhound-low-memory", "torch-compile"]
    gpu_shapes = grid(batch_size=[8192], d_model=[4096], vocab_size=[128256], dtype=["bfloat16"])
    cpu_shapes = grid(batch_size=[32], d_model=[64], vocab_size=[1000], dtype=["float32"])

    def make_inputs(self, batch_size, d_model, vocab_size, dtype):
        return harness.random_lm_head(batch_size, d_model, vocab_size, dtype)

    @classmethod
    def work(cls, mode, shape):
        """As linear_logprobs, but a loss's gradient is known in the forward: the backward of loss.backward() has
        no work of its own (no roofline for that mode)."""
        return (0, 0) if mode == "backward" else lm_head_work(mode, shape)

    @classmethod
    def serves(cls, provider, mode, shape):
        return provider != "greyhound-low-memory" or mode != "forward"

    def reference(self, x, weight, target):
        return _reference(x, weight, target)

    def provider_fn(self, provider, **shape):
        if provider == "greyhound":
            from greyhound import chunked_linear_cross_entropy
            return functools.partial(chunked_linear_cross_entropy, check_target=False)
        if provider == "greyhound-low-memory":
            from greyhound import chunked_linear_cross_entropy
            return functools.partial(chunked_linear_cross_entropy, check_target=False, grad_schedule="vocab")
        if provider == "torch-eager":
            return _reference
        if provider == "torch-compile":
            return self.compile(_reference)
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


class ChunkedLinearCrossEntropyVocabSweep(ChunkedLinearCrossEntropyTracked):
    tier = "sweep"
    providers = PROVIDERS
    gpu_shapes = grid(batch_size=[8192], d_model=[4096], vocab_size=[32768, 65536, 128256, 262144],
                      dtype=["bfloat16"])
    cpu_shapes = grid(batch_size=[32], d_model=[64], vocab_size=[1000, 4096], dtype=["float32"])

    def setup_cache(self):
        return self.measure_suite()


class ChunkedLinearCrossEntropy2DSweep(ChunkedLinearCrossEntropyTracked):
    tier = "sweep"
    x_name = "d_model"
    providers = PROVIDERS
    gpu_shapes = grid(batch_size=[8192], d_model=[4096, 8192], vocab_size=[65536, 128256], dtype=["bfloat16"])
    cpu_shapes = grid(batch_size=[32], d_model=[32, 64], vocab_size=[1000, 2048], dtype=["float32"])

    def setup_cache(self):
        return self.measure_suite()
