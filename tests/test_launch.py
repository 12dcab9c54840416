"""The launchers' host arithmetic equals Triton's own functions on every small value and some large ones."""
import random

import triton

from greyhound._launch import cdiv, next_power_of_2


def test_cdiv_and_next_power_of_2_match_triton():
    values = list(range(0, 2100)) + [random.randrange(1, 2**40) for _ in range(500)] + [2**31 - 1, 2**31, 2**33 + 1]
    for n in values:
        assert next_power_of_2(n) == triton.next_power_of_2(n), n
    for a in values[:600] + values[-50:]:
        for b in (1, 2, 3, 7, 16, 128, 1000, 4097):
            assert cdiv(a, b) == triton.cdiv(a, b), (a, b)


# --- FastLaunch: the launch-key cache, checked with a stand-in for a JIT function and its compiled kernel ------------
import pytest  # noqa: E402
import torch  # noqa: E402

from greyhound import _launch  # noqa: E402
from greyhound._launch import FastLaunch  # noqa: E402


class _Compiled:
    function, packed_metadata = "function-handle", "packed"

    def __init__(self):
        self.launches = []

    def run(self, *args):
        self.launches.append(args)


class _Jit:
    """What FastLaunch uses of a JITFunction: arg_names, pre_run_hooks and kernel[grid](...) returning the compiled
    kernel (a new one for every new specialisation, as Triton compiles one)."""
    arg_names = ["x_ptr", "n", "scale", "BLOCK", "FLAG"]

    def __init__(self):
        self.pre_run_hooks = []
        self.slow_calls = []
        self.compiled = {}

    def __getitem__(self, grid):
        def run(*args, **kwargs):
            self.slow_calls.append((grid, args, kwargs))
            key = (args[0].dtype, args[0].data_ptr() % 16 == 0, args[1] == 1, args[1] % 16 == 0,
                   tuple(sorted(kwargs.items())))
            return self.compiled.setdefault(key, _Compiled())
        return run


class _Driver:
    @staticmethod
    def get_current_device():
        return 0

    @staticmethod
    def get_current_stream(device):
        return 1234 + device


@pytest.fixture
def launcher(monkeypatch):
    monkeypatch.setattr(FastLaunch, "_on_gpu", staticmethod(lambda args: True))
    jit = _Jit()
    fast = FastLaunch(jit)
    fast._driver = _Driver()
    return jit, fast


def test_fast_launch_reuses_the_compiled_kernel_with_constexprs_in_signature_order(launcher):
    jit, fast = launcher
    x = torch.randn(64)
    first = fast[(3, 2)](x, 100, 0.5, FLAG=True, BLOCK=32, num_warps=4)
    assert len(jit.slow_calls) == 1 and fast.fast_launches == 0
    again = fast[(3, 2)](x, 100, 0.5, FLAG=True, BLOCK=32, num_warps=4)
    assert again is first and len(jit.slow_calls) == 1 and fast.fast_launches == 1
    (launch,) = first.launches
    # grid padded to 3 dims, the current stream, the handle, no launch metadata or hooks, then every argument in
    # the kernel's signature order (BLOCK before FLAG although given after it)
    assert launch == (3, 2, 1, 1234, "function-handle", "packed", None, None, None, x, 100, 0.5, 32, True)
    fast[(5,)](torch.randn(64), 100, 0.5, FLAG=True, BLOCK=32, num_warps=4)  # another tensor, same key
    assert first.launches[-1][:3] == (5, 1, 1) and len(jit.slow_calls) == 1


def test_fast_launch_goes_back_to_triton_on_any_new_specialisation(launcher):
    jit, fast = launcher
    x = torch.randn(64)
    call = dict(FLAG=True, BLOCK=32, num_warps=4)
    fast[(1,)](x, 100, 0.5, **call)
    fast[(1,)](x[1:], 100, 0.5, **call)  # 4 bytes off: not 16-byte aligned
    fast[(1,)](x.double(), 100, 0.5, **call)  # another dtype
    fast[(1,)](x, 1, 0.5, **call)  # an int Triton specialises to the constant 1
    fast[(1,)](x, 101, 0.5, **call)  # any other int value
    fast[(1,)](x, 100, 0.5, FLAG=False, BLOCK=32, num_warps=4)  # a constexpr
    fast[(1,)](x, 100, 0.5, FLAG=True, BLOCK=32, num_warps=8)  # a launch option
    assert len(jit.slow_calls) == 7 and fast.fast_launches == 0
    fast[(1,)](x[1:], 100, 0.5, **call)
    assert len(jit.slow_calls) == 7 and fast.fast_launches == 1


def test_fast_launch_defers_to_triton_with_hooks_or_an_unknown_compiled_kernel(launcher, monkeypatch):
    jit, fast = launcher
    x = torch.randn(64)
    call = dict(FLAG=True, BLOCK=32)
    fast[(1,)](x, 100, 0.5, **call)
    jit.pre_run_hooks.append(lambda *a, **k: None)
    fast[(1,)](x, 100, 0.5, **call)
    jit.pre_run_hooks.clear()
    monkeypatch.setattr(_launch, "_launch_hooks", lambda: (None, lambda *a: None))  # a profiler's exit hook
    fast[(1,)](x, 100, 0.5, **call)
    assert len(jit.slow_calls) == 3 and fast.fast_launches == 0
    monkeypatch.undo()
    monkeypatch.setattr(FastLaunch, "_on_gpu", staticmethod(lambda args: True))
    fast[(1,)](x, 100, 0.5, **call)
    assert fast.fast_launches == 1
    # a compiled kernel without the launcher attributes: every call through Triton
    monkeypatch.setattr(_Compiled, "packed_metadata", None, raising=False)
    monkeypatch.delattr(_Compiled, "packed_metadata")
    fast[(1,)](x, 200, 0.5, **call)
    fast[(1,)](x, 200, 0.5, **call)
    assert len(jit.slow_calls) == 5 and fast.fast_launches == 1


def test_fast_launch_needs_every_constexpr_by_keyword(launcher):
    jit, fast = launcher
    x = torch.randn(64)
    for _ in range(2):  # FLAG left to a default: FastLaunch cannot place it, so Triton binds it every time
        fast[(1,)](x, 300, 0.5, BLOCK=32)
    assert len(jit.slow_calls) == 2 and fast.fast_launches == 0


def test_fast_launch_keeps_at_most_max_keys(launcher, monkeypatch):
    jit, fast = launcher
    monkeypatch.setattr(FastLaunch, "MAX_KEYS", 4)
    x = torch.randn(64)
    for n in range(2, 8):
        fast[(1,)](x, n, 0.5, FLAG=True, BLOCK=32)
    assert len(fast.compiled) == 4
    fast[(1,)](x, 7, 0.5, FLAG=True, BLOCK=32)  # kept: fast
    fast[(1,)](x, 2, 0.5, FLAG=True, BLOCK=32)  # dropped: Triton again
    assert fast.fast_launches == 1 and len(jit.slow_calls) == 7


def test_fast_launch_is_not_taken_for_cpu_tensors():
    jit = _Jit()
    fast = FastLaunch(jit)
    x = torch.randn(64)
    for _ in range(3):
        fast[(1,)](x, 100, 0.5, FLAG=True, BLOCK=32)
    assert len(jit.slow_calls) == 3 and fast.fast_launches == 0 and not fast.compiled


def test_fast_launch_does_not_cache_other_argument_kinds(launcher):
    jit, fast = launcher

    class Descriptor:  # e.g. a TMA descriptor holding a tensor: hashable, but not a launch-key value
        base = torch.randn(8)

    x = torch.randn(64)
    for _ in range(3):
        fast[(1,)](x, 100, Descriptor(), FLAG=True, BLOCK=32)
    assert len(jit.slow_calls) == 3 and not fast.compiled and fast.fast_launches == 0


def test_fast_launch_keys_tell_bools_ints_and_floats_apart(launcher):
    """True == 1 == 1.0 in Python, but Triton compiles them as different argument types (i1, a constant 1, fp32):
    each gets its own key."""
    jit, fast = launcher
    x = torch.randn(64)
    for n in (1, True, 1.0):
        fast[(1,)](x, n, 0.5, FLAG=True, BLOCK=32)
    for flag in (1, True):
        fast[(1,)](x, 100, 0.5, FLAG=flag, BLOCK=32)
    assert len(jit.slow_calls) == 5 and fast.fast_launches == 0 and len(fast.compiled) == 5
