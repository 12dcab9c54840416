"""Compiled Triton (not the CPU interpreter) rejects @jit code that reads a module global unless it is a
tl.constexpr: catch that on the CPU, before a GPU run finds it."""
import importlib
import pkgutil

import pytest
import triton

import greyhound.nn
import greyhound.ops

MODULES = [m.name for pkg in (greyhound.ops, greyhound.nn)
           for m in pkgutil.iter_modules(pkg.__path__, pkg.__name__ + ".")]


def _jit_functions(module):
    for value in vars(module).values():
        fn = getattr(value, "fn", None)
        while fn is not None and not hasattr(fn, "__code__"):  # autotuners / heuristics wrap a JITFunction
            fn = getattr(fn, "fn", None)
        if fn is not None and isinstance(value, triton.runtime.KernelInterface):
            yield fn


def _names(code):
    yield from code.co_names
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            yield from _names(const)


@pytest.mark.parametrize("module_name", MODULES)
def test_jit_functions_read_only_constexpr_globals(module_name):
    module = importlib.import_module(module_name)
    bad = []
    for fn in _jit_functions(module):
        for name in set(_names(fn.__code__)):
            value = fn.__globals__.get(name)
            if isinstance(value, (int, float, bool)) and not isinstance(value, triton.language.constexpr):
                bad.append(f"{fn.__name__} reads global {name} = {value!r}")
    assert not bad, "; ".join(bad) + " (wrap it in tl.constexpr)"
