"""Host-side launch helpers.

`cdiv` / `next_power_of_2`: `triton.cdiv` and `triton.next_power_of_2` are constexpr functions on Triton 3.9: called
from Python each costs a few µs of argument unwrapping (~6 µs a call in a CPU profile of causal_conv1d's launchers,
which called them six times a forward + backward). A launcher runs on every eager call, and for small calls host
time is what a benchmark measures, so the launchers use these plain-integer equivalents instead (tests/test_launch.py
checks them against Triton's).

`FastLaunch`: `kernel[grid](*args, **constexprs)` for a hot kernel, with `JITFunction.run`'s per-call work (binding
the arguments, specialising each one, hashing the key, building launch metadata for the launch hooks, reading the
runtime knobs) done once per distinct argument signature instead of on every call. On the H200's host that work
took ~115 µs of a 287 µs causal_conv1d forward under torch.profiler (its own overhead included); without the
profiler the fast path took a forward with autograd from 45 to 37 µs of host time, and it kept the torch.compile'd
forward device-bound (0.083 ms) where Triton's own path read 0.210 (docs/perf/causal_conv1d.md, session 11).
"""
import functools
import os

import torch
import triton

__all__ = ["cdiv", "next_power_of_2", "multiprocessor_count", "FastLaunch"]

ENABLED = os.environ.get("GREYHOUND_FAST_LAUNCH", "1") != "0"
_MISSING = object()
_PLAIN = (bool, int, float, str)


def cdiv(a, b):
    """⌈a / b⌉ for ints (triton.cdiv)."""
    return -(-a // b)


def next_power_of_2(n):
    """The smallest power of 2 ≥ n for n ≥ 1, and 0 for n = 0 (triton.next_power_of_2)."""
    return 1 << (n - 1).bit_length() if n > 0 else 0


@functools.lru_cache(maxsize=None)
def multiprocessor_count(device_index):
    """The SM count of CUDA device `device_index` (an int), read from the driver once: persistent grids size by it."""
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def _launch_hooks():
    """Triton's launch enter / exit hooks (profilers such as proton register them): HookChains on Triton ≥ 3.5,
    class attributes of CompiledKernel before."""
    knobs = getattr(triton, "knobs", None)
    runtime = getattr(knobs, "runtime", None)
    if runtime is not None and hasattr(runtime, "launch_enter_hook"):
        return runtime.launch_enter_hook, runtime.launch_exit_hook
    from triton.compiler import CompiledKernel
    return getattr(CompiledKernel, "launch_enter_hook", None), getattr(CompiledKernel, "launch_exit_hook", None)


def _hooked(hook):
    return hook is not None and bool(getattr(hook, "calls", True))


class FastLaunch:
    """`FastLaunch(kernel)[grid](*args, **kwargs)` launches `kernel` exactly as `kernel[grid](*args, **kwargs)`
    does, reusing the compiled kernel of an earlier call with the same *launch key* without going back through
    `JITFunction.run`.

    The key holds everything Triton specialises a compiled kernel on, and more: the current device, each tensor's
    dtype and whether its address is 16-byte aligned, every other positional argument's type and exact value, and
    every keyword (constexprs and launch options such as num_warps) with its type and value. Two calls with one key therefore get
    the same compiled kernel from Triton too. A new key goes through `kernel[grid]` (compiling if needed), which
    returns the compiled kernel to keep; at most MAX_KEYS keys are kept per kernel (the oldest are dropped).

    The fast path is taken only for CUDA tensors (the interpreter and other backends always go through
    `kernel[grid]`), with no launch hook and no pre-run hook registered (those see every launch through
    `JITFunction.run`), with every constexpr passed by keyword, and when the compiled kernel has the launcher
    attributes it calls the launcher with, as `JITFunction.run` does on Triton 3.6 and 3.9 (`run`, `function`,
    `packed_metadata`); otherwise every call goes through `kernel[grid]`. GREYHOUND_FAST_LAUNCH=0 turns it off.
    """
    MAX_KEYS = 256

    def __init__(self, kernel):
        self.kernel = kernel
        self.names = tuple(kernel.arg_names)
        self.compiled = {}  # key -> (compiled kernel, names of the keyword arguments in signature order)
        self.fast_launches = 0  # calls that took the fast path (tests read it)
        self._driver = None

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self._launch(grid, args, kwargs)

    @staticmethod
    def _on_gpu(args):
        return bool(args) and getattr(args[0], "is_cuda", False)

    def _on_fast_path(self, args):
        return (ENABLED and self._on_gpu(args) and not getattr(self.kernel, "pre_run_hooks", None)
                and not any(_hooked(hook) for hook in _launch_hooks()))

    def _key(self, device, args, kwargs):
        """The launch key, or None for an argument of another kind (a TMA descriptor, ...): such calls are not cached,
        so that no key keeps a tensor alive. Flat, and built in as few Python steps as possible: it is computed on
        every launch. A tensor adds (dtype, 16-byte aligned), any other positional argument (type, value) -- with its
        type, since True == 1 == 1.0 in Python while Triton types them apart; then the keywords and their types."""
        key = [device]
        for a in args:
            if isinstance(a, torch.Tensor):
                key += (a.dtype, not a.data_ptr() & 15)
            elif a is None or isinstance(a, _PLAIN):
                key += (type(a), a)
            else:
                return None
        key += kwargs.items()
        key += map(type, kwargs.values())
        return tuple(key)

    def _launch(self, grid, args, kwargs):
        if not self._on_fast_path(args):
            return self.kernel[grid](*args, **kwargs)
        if self._driver is None:
            from triton.runtime import driver
            self._driver = driver.active
        device = self._driver.get_current_device()
        try:
            key = self._key(device, args, kwargs)
            entry = _MISSING if key is None else self.compiled.get(key, _MISSING)
        except TypeError:  # an unhashable keyword value: Triton's own path
            key = None
        if key is None:
            return self.kernel[grid](*args, **kwargs)
        if entry is _MISSING:
            compiled = self.kernel[grid](*args, **kwargs)
            tail = self.names[len(args):]
            usable = (all(hasattr(compiled, name) for name in ("run", "function", "packed_metadata"))
                      and all(name in kwargs for name in tail))
            if len(self.compiled) >= self.MAX_KEYS:
                self.compiled.pop(next(iter(self.compiled)))
            self.compiled[key] = (compiled, tail) if usable else None
            return compiled
        if entry is None:
            return self.kernel[grid](*args, **kwargs)
        compiled, tail = entry
        grid = tuple(grid) + (1, 1)
        stream = self._driver.get_current_stream(device)
        compiled.run(grid[0], grid[1], grid[2], stream, compiled.function, compiled.packed_metadata, None, None, None,
                     *args, *[kwargs[name] for name in tail])
        self.fast_launches += 1
        return compiled

