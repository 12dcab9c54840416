"""On a GPU: the harness's asv timing agrees with triton.testing.do_bench's median within 3% for kernels >= 100 µs.

H200, commit 8b955a6e (before the warm-up loop below): 3 of 4 cases within 3%; greyhound forward read 0.586 ms
here against do_bench's 0.538 ms, while the asv run itself recorded 0.538 ms p50 for the same case. Commit 4311716f
(with the warm-up loop): the same case still fails, 0.581 ms here vs do_bench 0.532 ms (log 13-pytest-gpu.log), and
asv runs keep recording 0.531-0.538 ms for it: the discrepancy is in this test's process, not in asv's numbers;
its cause is not found yet (left failing on purpose: it is the check that would catch a harness drift)."""
import statistics

import pytest
import torch

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("provider", ["greyhound", "torch-eager"])
@pytest.mark.parametrize("mode", ["full", "forward"])
def test_asv_timer_matches_do_bench(provider, mode):
    from triton.testing import do_bench

    from benchmarks import harness
    from benchmarks.cross_entropy import CrossEntropyWithGrad

    suite = CrossEntropyWithGrad()
    params = (provider, mode, 8192, 128256, "bfloat16")
    suite.setup(*params)
    for _ in range(20):  # let clocks settle after the gate, as asv's many earlier benchmarks do in a real run
        suite.setup(*params)
        suite.timed_call()
    samples = []
    for _ in range(40):  # what asv does per sample: setup, then the timer around one timed call
        suite.setup(*params)
        start = harness.device_clock()
        suite.timed_call()
        samples.append(harness.device_clock() - start)
    asv_ms = statistics.median(samples) * 1e3
    bench_ms = do_bench(suite._call, warmup=25, rep=200, grad_to_none=list(suite._grad_inputs.values()),
                        return_mode="median")
    assert bench_ms >= 0.1, f"kernel too short for the 3% criterion: {bench_ms:.3f} ms"
    assert abs(asv_ms / bench_ms - 1) <= 0.03, f"asv {asv_ms:.4f} ms vs do_bench {bench_ms:.4f} ms"
    torch.cuda.empty_cache()
