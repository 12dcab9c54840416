"""Host-side launch arithmetic. `triton.cdiv` and `triton.next_power_of_2` are constexpr functions on Triton 3.9:
called from Python each costs a few µs of argument unwrapping (~6 µs a call in a CPU profile of causal_conv1d's
launchers, which called them six times a forward + backward). A launcher runs on every eager call, and for small
calls host time is what a benchmark measures, so the launchers use these plain-integer equivalents instead
(tests/test_launch.py checks them against Triton's)."""

__all__ = ["cdiv", "next_power_of_2"]


def cdiv(a, b):
    """⌈a / b⌉ for ints (triton.cdiv)."""
    return -(-a // b)


def next_power_of_2(n):
    """The smallest power of 2 ≥ n for n ≥ 1, and 0 for n = 0 (triton.next_power_of_2)."""
    return 1 << (n - 1).bit_length() if n > 0 else 0
