"""Argument checks shared by every op: errors name the argument, what was expected and what was given."""
import math
import numbers
import os

import torch

FLOAT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def triton_interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def is_int(value) -> bool:
    """A Python or numpy integer, not a bool (callers convert with int() before the value reaches a kernel)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_real(value) -> bool:
    """A Python or numpy integer or float, not a bool (callers convert with float())."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def as_float(value) -> float:
    """float(value) of a real number (is_real), +-inf for an int past a float's range, where float() and math.isfinite
    raise a bare OverflowError that names no argument."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def check_tensor(name, t, *, dtypes=None, ndim=None, like=None):
    """Raise TypeError/ValueError unless `t` is a tensor with an allowed dtype and rank, on `like`'s device."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if dtypes is not None and t.dtype not in dtypes:
        allowed = ", ".join(str(d).replace("torch.", "") for d in dtypes)
        raise TypeError(f"{name} must have dtype in ({allowed}), got {str(t.dtype).replace('torch.', '')}")
    if ndim is not None:
        ranks = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if t.dim() not in ranks:
            raise ValueError(f"{name} must be {' or '.join(f'{r}-D' for r in ranks)}, got shape {tuple(t.shape)}")
    if like is not None and t.device != like.device:
        raise ValueError(f"{name} must be on {like.device} like the other inputs, got {t.device}")
    return t


def check_triton_device(name, t):
    """Triton kernels run on CUDA tensors, or on CPU tensors under TRITON_INTERPRET=1 (how CI checks them)."""
    if t.device.type == "cuda" or (t.device.type == "cpu" and triton_interpreting()):
        return
    raise ValueError(
        f"{name} must be a CUDA tensor (or a CPU tensor with TRITON_INTERPRET=1 set before importing triton), "
        f"got device {t.device}"
    )


def check_bool(name, value):
    """A flag must be a real bool: None or a string would otherwise pass by truthiness."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return value


def check_choice(name, value, choices):
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value
