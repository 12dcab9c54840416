"""The harness on the CPU: the correctness gate refuses a wrong provider, modes run, missing packages skip."""
import pytest
import torch

from benchmarks import harness, providers
from benchmarks.cross_entropy import CrossEntropyWithGrad


class _Suite(CrossEntropyWithGrad):
    """The cross-entropy suite with two extra providers: one right, one subtly wrong."""

    def provider_fn(self, provider, **shape):
        if provider == "greyhound-off-by-a-bit":
            # 1% off in value and gradient whatever the random draw: five times the fp32 gate's tolerance
            return lambda logits, target: torch.nn.functional.cross_entropy(logits, target) * 1.01
        return super().provider_fn(provider, **shape)


@pytest.mark.parametrize("mode", ["full", "forward", "backward"])
def test_gate_accepts_greyhound_and_the_timed_call_runs(mode):
    suite = _Suite()
    suite.setup("greyhound", mode, 16, 300, "float32")
    suite.setup("greyhound", mode, 16, 300, "float32")  # asv re-runs setup before each sample
    start = harness.device_clock()
    suite.timed_call()
    assert harness.device_clock() > start
    if mode != "forward":
        assert suite.inputs["logits"].grad is not None and torch.isfinite(suite.inputs["logits"].grad).all()


@pytest.mark.parametrize("mode", ["full", "forward"])
def test_gate_rejects_a_wrong_provider(mode):
    with pytest.raises(AssertionError, match="relative error"):
        _Suite().setup("greyhound-off-by-a-bit", mode, 16, 300, "float32")


def test_missing_third_party_package_is_a_skip(monkeypatch):
    monkeypatch.setitem(providers.THIRD_PARTY, "liger", "surely_not_an_installed_module_xyz")
    with pytest.raises(NotImplementedError, match="not installed"):
        _Suite().setup("liger", "full", 16, 300, "float32")


def test_unknown_provider_is_a_clear_error():
    with pytest.raises(ValueError, match="provider must be one of"):
        providers.require("tourch-eager")


def test_suites_carry_kernel_and_x_names_for_export():
    from benchmarks import cross_entropy, linear_cross_entropy, logprobs
    for suite in (cross_entropy.CrossEntropyWithGrad, cross_entropy.CrossEntropyWithGradBatch,
                  linear_cross_entropy.ChunkedLinearCrossEntropy, linear_cross_entropy.ChunkedLinearCrossEntropy2D,
                  logprobs.Logprobs, logprobs.LinearLogprobs):
        method = getattr(suite, "time_" + suite.kernel_name)
        assert (method.kernel_name, method.x_name) == (suite.kernel_name, suite.x_name)
        assert suite.x_name in suite.param_names and suite.param_names[:2] == ["provider", "mode"]
        assert getattr(suite, "track_peakmem_" + suite.kernel_name).unit == "bytes"


def test_a_suite_that_changes_the_x_axis_must_define_its_own_methods():
    with pytest.raises(TypeError, match="must define its own time_cross_entropy_with_grad"):
        class _OtherAxis(CrossEntropyWithGrad):  # noqa: F841  (the class statement itself must raise)
            x_name = "batch_size"
