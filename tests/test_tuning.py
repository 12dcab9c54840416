"""greyhound._tuning: the launch-parameter overrides behind the `greyhound[key=value,...]` benchmark variants."""
import pytest

from benchmarks.harness import split_variant
from greyhound import _tuning

OP = "test_tuning_op"


@pytest.fixture(autouse=True)
def registered():
    _tuning.register(OP, block=(int, "tile edge"), fused=(bool, "one kernel"), scale=(float, "a factor"))
    yield
    _tuning._TUNABLES.pop(OP, None)
    _tuning._ACTIVE.pop(OP, None)


def test_values_are_typed_forced_within_the_block_and_restored():
    assert _tuning.get(OP, "block", 64) == 64
    with _tuning.override(OP, block="128", fused="true", scale="0.5") as forced:
        assert forced == {"block": 128, "fused": True, "scale": 0.5}
        assert _tuning.get(OP, "block", 64) == 128 and _tuning.get(OP, "fused", False) is True
        with _tuning.override(OP, block=32):  # nested overrides merge and unwind
            assert _tuning.get(OP, "block") == 32 and _tuning.get(OP, "scale") == 0.5
        assert _tuning.get(OP, "block") == 128
    assert _tuning.get(OP, "block", 64) == 64 and _tuning.get(OP, "fused") is None


def test_an_exception_inside_the_block_still_restores():
    with pytest.raises(RuntimeError):
        with _tuning.override(OP, block=16):
            raise RuntimeError("kernel failed")
    assert _tuning.get(OP, "block", 64) == 64


@pytest.mark.parametrize("values, words", [
    (dict(tile=16), "no tunable 'tile'; it has: block .*fused .*scale"),
    (dict(block="wide"), "block must be int, got 'wide'"),
    (dict(block=0), "block must be a positive int, got 0"),
    (dict(block=-8), "block must be a positive int"),
    (dict(fused="maybe"), "fused must be a bool .* got 'maybe'"),
    (dict(scale="x"), "scale must be float"),
])
def test_bad_values_are_refused_by_name(values, words):
    with pytest.raises(ValueError, match=words):
        with _tuning.override(OP, **values):
            pass
    assert _tuning.get(OP, next(iter(values))) is None  # nothing was forced


def test_an_op_without_tunables_is_named():
    with pytest.raises(ValueError, match="'no_such_op' has no tunable launch parameters"):
        _tuning.parse("no_such_op", {"block": 1})


@pytest.mark.parametrize("provider, expected", [
    ("greyhound", ("greyhound", {})),
    ("fla", ("fla", {})),
    ("greyhound[block_l=64]", ("greyhound", {"block_l": "64"})),
    ("greyhound-compiled[a=1, b=2]", ("greyhound-compiled", {"a": "1", "b": "2"})),
])
def test_split_variant(provider, expected):
    assert split_variant(provider) == expected


@pytest.mark.parametrize("provider, words", [
    ("greyhound[block_l]", "expected key=value"),
    ("greyhound[=3]", "expected key=value"),
    ("greyhound[block_l=64", "NAME\\[key=value"),
    ("fla[block=3]", "only greyhound providers take tuning options"),
])
def test_split_variant_refuses_malformed_variants(provider, words):
    with pytest.raises(ValueError, match=words):
        split_variant(provider)


def test_a_variant_key_op_dot_name_forces_another_ops_tunable():
    # chunked_linear_cross_entropy's variant can force the launch of cross_entropy_with_grad's kernels that it calls
    from benchmarks.linear_cross_entropy import ChunkedLinearCrossEntropyTracked
    suite = ChunkedLinearCrossEntropyTracked()
    with suite.tuning({"chunk_rows": "64", "cross_entropy_with_grad.loss_warps": "8"}):
        assert _tuning.get("chunked_linear_cross_entropy", "chunk_rows") == 64
        assert _tuning.get("cross_entropy_with_grad", "loss_warps") == 8
    assert _tuning.get("chunked_linear_cross_entropy", "chunk_rows") is None
    assert _tuning.get("cross_entropy_with_grad", "loss_warps") is None
    with pytest.raises(ValueError, match="no tunable 'nope'"):
        with suite.tuning({"chunk_rows": "64", "cross_entropy_with_grad.nope": "1"}):
            pass
    assert _tuning.get("chunked_linear_cross_entropy", "chunk_rows") is None  # the first override was undone
