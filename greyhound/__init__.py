"""greyhound: fused Triton kernels with autograd, plain-PyTorch references and the Cheri Block.

Names are imported lazily so that `import greyhound` does not import Triton: callers (tests, the CPU
benchmark harness) may still set TRITON_INTERPRET=1 after importing the package.
"""
import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "cross_entropy_with_grad": "greyhound.ops.cross_entropy",
    "chunked_linear_cross_entropy": "greyhound.ops.linear_cross_entropy",
    "logprobs": "greyhound.ops.logprobs",
    "linear_logprobs": "greyhound.ops.logprobs",
    "CheriBlock": "greyhound.nn.cheri_block",
    "causal_conv1d": "greyhound.ops.causal_conv1d",
    "causal_conv1d_update": "greyhound.ops.causal_conv1d",
    "newton_schulz": "greyhound.ops.newton_schulz",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'greyhound' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
