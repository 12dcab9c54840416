"""What the Gluon kernels (greyhound/ops/_ce_gluon.py, _cheri_gluon.py) share: the guarded import of Gluon, the names
of the calls its API renamed between Triton releases, the Hopper check and the once-per-kind fallback warning.

Gluon is Triton's experimental explicit-layout dialect: its API moves between releases, so every use is guarded and a
kernel that cannot run (or fails to compile) falls back to a plain Triton path.
"""
import functools
import warnings

import torch

try:
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.ampere import async_copy
    # cp.async global -> shared: `async_load` in newer Tritons (3.9), `async_copy_global_to_shared` in 3.6
    async_load = getattr(async_copy, "async_load", None) or async_copy.async_copy_global_to_shared
    # the CTA-wide barrier: `thread_barrier` in Triton 3.6, `barrier` in newer ones (3.9)
    cta_barrier = getattr(gl, "thread_barrier", None) or gl.barrier
    # a shared-memory buffer seen with another dtype/shape: `reinterpret` in newer Tritons (3.9), `_reinterpret` in 3.6
    if hasattr(gl.shared_memory_descriptor, "reinterpret"):
        @gluon.jit
        def reinterpret(buffer, dtype: gl.constexpr, shape: gl.constexpr, layout: gl.constexpr):
            return buffer.reinterpret(dtype, shape, layout)
    else:
        @gluon.jit
        def reinterpret(buffer, dtype: gl.constexpr, shape: gl.constexpr, layout: gl.constexpr):
            return buffer._reinterpret(dtype, shape, layout)
    IMPORT_ERROR = None
except Exception as error:  # pragma: no cover - depends on the installed Triton
    gluon = gl = async_copy = async_load = cta_barrier = reinterpret = None
    IMPORT_ERROR = error


@functools.lru_cache(maxsize=None)
def _capability(device_index):
    return torch.cuda.get_device_capability(device_index)


def why_not_hopper(device):
    """Why a Gluon Hopper kernel cannot run on `device` with this Triton (a string), or None when it can."""
    if gluon is None:
        return f"this Triton has no Gluon ({IMPORT_ERROR})"
    if device.type != "cuda" or _capability(device.index)[0] != 9:
        return f"it needs a CUDA device of compute capability 9.x, got {device}"
    return None


def warn_fallback(warned, kernel, fallback, error):
    """Once per kind of failure in `warned` (the kernel module's own set): the Gluon `kernel` did not run and
    `fallback` runs instead."""
    kind = type(error).__name__
    if kind not in warned:
        warned.add(kind)
        warnings.warn(f"greyhound: the Gluon {kernel} kernel failed ({kind}: {str(error)[:300]}); running {fallback} "
                      "instead", RuntimeWarning, stacklevel=4)
