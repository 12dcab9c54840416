"""Kernel-configuration overrides, for tuning sweeps through the benchmark harness.

An op declares the launch parameters it lets a sweep force (`register`) and its launchers read them (`get`), falling
back to their own choice. The harness turns a provider such as `greyhound[block_l=64,warps=8]` into
`override("causal_conv1d", block_l=64, warps=8)` for the whole combination (gate, warm-up, samples, memory), so a
tuning sweep is `python -m benchmarks causal_conv1d --providers 'greyhound,greyhound[block_l=64]'` and runs the same
correctness gate, timer and memory measure as every other figure. Overrides are process-global and not thread-safe:
they are for benchmarks and tests, never for a model.
"""
import contextlib
import warnings

_TUNABLES = {}  # op -> {name: (type, help)}
_ACTIVE = {}  # op -> {name: value} while an override is entered


class NonNegativeInt(int):
    """A tunable's type for a count where 0 means off (a plain `int` tunable must be positive)."""


def type_name(kind):
    """How a tunable's type reads in help and errors: `int`, `bool`, or `int >= 0` for a NonNegativeInt."""
    return "int >= 0" if kind is NonNegativeInt else kind.__name__


def register(op, **tunables):
    """Declare `op`'s tunables: name=(type, one-line help). Called once at the op module's import."""
    _TUNABLES[op] = dict(tunables)


def tunables(op):
    """{name: (type, help)} for `op` ({} when it declares none)."""
    return dict(_TUNABLES.get(op, {}))


def get(op, name, default=None):
    """The forced value of `op`'s tunable `name`, or `default` when no override sets it."""
    return _ACTIVE.get(op, {}).get(name, default)


def forced(op):
    """{name: value} of `op`'s tunables forced now ({} outside overrides): for launchers reading several at once."""
    return _ACTIVE.get(op, _NONE)


_NONE = {}


def forced_names(op, prefix=""):
    """The names of `op`'s tunables forced now that start with `prefix`, sorted."""
    return sorted(name for name in _ACTIVE.get(op, _NONE) if name.startswith(prefix))


def warn_if_forced(op, prefix, kernel, why_not, fallback, stacklevel=3):
    """For a launcher whose `kernel` cannot run this call (`why_not`) and runs `fallback` instead: when tunables of
    `op` starting with `prefix` are forced, a RuntimeWarning naming them and why, on every call, so that a tuning
    sweep never times the fallback under a variant's label in silence. Whether it warned."""
    forced = forced_names(op, prefix)
    if forced:
        warnings.warn(f"greyhound: {kernel} cannot run this call with {', '.join(forced)} forced ({why_not}); "
                      f"running {fallback}", RuntimeWarning, stacklevel=stacklevel + 1)
    return bool(forced)


def parse(op, values):
    """{name: text or value} -> {name: typed value}; ValueError naming the op, the key and what it accepts."""
    declared = tunables(op)
    if not declared:
        raise ValueError(f"tuning: {op!r} has no tunable launch parameters (ops with some: {sorted(_TUNABLES)})")
    out = {}
    for name, value in values.items():
        if name not in declared:
            raise ValueError(f"tuning: {op!r} has no tunable {name!r}; it has: "
                             + ", ".join(f"{n} ({type_name(t)}: {h})" for n, (t, h) in sorted(declared.items())))
        kind = declared[name][0]
        if kind is bool and isinstance(value, str):
            if value.lower() not in ("0", "1", "true", "false"):
                raise ValueError(f"tuning: {op}.{name} must be a bool (0/1/true/false), got {value!r}")
            out[name] = value.lower() in ("1", "true")
            continue
        try:
            out[name] = int(kind(value)) if kind is NonNegativeInt else kind(value)
        except (TypeError, ValueError):
            kind_name = "an int >= 0" if kind is NonNegativeInt else kind.__name__
            raise ValueError(f"tuning: {op}.{name} must be {kind_name}, got {value!r}") from None
        if kind is int and out[name] <= 0:
            raise ValueError(f"tuning: {op}.{name} must be a positive int, got {value!r}")
        if kind is NonNegativeInt and out[name] < 0:
            raise ValueError(f"tuning: {op}.{name} must be an int >= 0 (0: off), got {value!r}")
    return out


@contextlib.contextmanager
def override(op, **values):
    """Force `op`'s tunables within the block (validated by `parse`); nested overrides of one op merge."""
    forced = parse(op, values)
    before = _ACTIVE.get(op)
    _ACTIVE[op] = {**(before or {}), **forced}
    try:
        yield forced
    finally:
        if before is None:
            _ACTIVE.pop(op, None)
        else:
            _ACTIVE[op] = before
