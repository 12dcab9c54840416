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
