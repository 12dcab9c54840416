"""The harness on the CPU: the gate refuses a wrong provider, modes run, missing packages skip, the grid is one
for every machine, and asv's benchmarks report exactly what setup_cache measured."""
import itertools
import types
import time

import pytest
import torch

from benchmarks import cross_entropy, harness, providers
from benchmarks.cross_entropy import CrossEntropyWithGradTracked

SUITES = harness.suites()  # every suite module of the package


class _Suite(CrossEntropyWithGradTracked):
    """The cross-entropy suite with one extra provider, subtly wrong."""
    providers = ["greyhound", "greyhound-off-by-a-bit", "liger"]

    def provider_fn(self, provider, **shape):
        if provider == "greyhound-off-by-a-bit":
            # 1% off in value and gradient whatever the random draw: five times the fp32 gate's tolerance
            return lambda logits, target: torch.nn.functional.cross_entropy(logits, target) * 1.01
        return super().provider_fn(provider, **shape)


@pytest.mark.parametrize("mode", ["full", "forward", "backward"])
def test_measure_gates_warms_up_and_samples(mode):
    result = _Suite().measure("greyhound", mode, 16, 300, "float32")
    assert result["error"] is None and result["skipped"] is None, result
    assert len(result["samples"]) == harness.SAMPLES and all(s > 0 for s in result["samples"])
    assert result["peak_bytes"] is None  # no CUDA memory on the CPU
    phases = result["phases"]
    assert phases["warmup_calls"] >= 6 or phases["warmup"] >= harness.WARMUP_MAX_SECONDS
    assert {"inputs", "first_call", "reference", "check", "samples"} <= set(phases)
    assert result["gpu"] is None  # no GPU readings on the CPU


class _FakeNvml:
    """The few pynvml calls gpu_state makes, with fixed readings: 1410 MHz under a power cap and a thermal slowdown."""
    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0

    def __init__(self, fail=False):
        self.fail = fail

    def nvmlDeviceGetClockInfo(self, handle, which):
        assert handle == "handle"
        return {1: 1410, 2: 2619}[which]

    def nvmlDeviceGetTemperature(self, handle, which):
        return 71

    def nvmlDeviceGetPowerUsage(self, handle):
        if self.fail:
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")
        return 612_345  # mW

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle):
        return 0x4 | 0x20


def test_gpu_state_reads_clocks_power_and_why_the_clock_is_low(monkeypatch):
    monkeypatch.setattr(harness, "ON_GPU", True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(harness, "_nvml_handle", lambda index: (_FakeNvml(), "handle"))
    state = harness.gpu_state()
    assert state == {"sm_clock_mhz": 1410, "memory_clock_mhz": 2619, "temperature_c": 71, "power_w": 612.345,
                     "power_reading": "average", "clock_event_reasons": ["sw_power_cap", "sw_thermal_slowdown"]}
    # a reading NVML refuses is named, not raised: the measurement goes on
    monkeypatch.setattr(harness, "_nvml_handle", lambda index: (_FakeNvml(fail=True), "handle"))
    assert harness.gpu_state() == {"error": "RuntimeError: NVML_ERROR_NOT_SUPPORTED"}
    # no NVML (no nvidia-ml-py, or no driver library): no readings
    monkeypatch.setattr(harness, "_nvml_handle", lambda index: None)
    assert harness.gpu_state() is None


class _FakeNvmlInstant(_FakeNvml):
    """A driver that gives the instantaneous power field (with `status` as its per-field return, or raising)."""
    NVML_FI_DEV_POWER_INSTANT, NVML_SUCCESS = 186, 0

    def __init__(self, status=0, raises=False):
        super().__init__()
        self.status, self.raises = status, raises

    def nvmlDeviceGetFieldValues(self, handle, field_ids):
        assert handle == "handle" and field_ids == [186]
        if self.raises:
            raise RuntimeError("NVML_ERROR_FUNCTION_NOT_FOUND")
        return [types.SimpleNamespace(nvmlReturn=self.status, value=types.SimpleNamespace(uiVal=688_250))]


def test_gpu_state_takes_the_instantaneous_power_where_the_driver_gives_it(monkeypatch):
    """The one-second average reads a batch of short calls as the idle before it: the instantaneous field first, the
    average where the field is refused (its own return code) or the call is missing."""
    monkeypatch.setattr(harness, "ON_GPU", True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    for fake, power, reading in ((_FakeNvmlInstant(), 688.25, "instant"),
                                 (_FakeNvmlInstant(status=3), 612.345, "average"),  # NVML_ERROR_NOT_SUPPORTED
                                 (_FakeNvmlInstant(raises=True), 612.345, "average")):
        monkeypatch.setattr(harness, "_nvml_handle", lambda index, fake=fake: (fake, "handle"))
        state = harness.gpu_state()
        assert (state["power_w"], state["power_reading"]) == (power, reading)


@pytest.mark.parametrize("environment, expected", [
    ({}, "expandable_segments:True"),
    ({"PYTORCH_CUDA_ALLOC_CONF": ""}, ""),  # set, even empty: torch's default stays, as asked
    ({"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:512"}, "max_split_size_mb:512"),
    ({"PYTORCH_ALLOC_CONF": "expandable_segments:False"}, None),  # the newer name wins; the old one is not added
])
def test_the_harness_measures_with_expandable_segments_unless_told_otherwise(environment, expected):
    # session 43: with torch's default allocator a bandwidth-bound call read 13% slower after another mode had run in
    # the process; the harness sets expandable segments before anything allocates on the GPU, unless the user chose
    import os
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k not in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")}
    env.update(environment)
    code = "import os, torch, benchmarks.harness; print(repr(os.environ.get('PYTORCH_CUDA_ALLOC_CONF')))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert out.stdout.strip() == repr(expected)


@pytest.mark.parametrize("segments, expected", [
    ([{"is_expandable": True, "total_size": 2 << 20}], True),
    ([{"is_expandable": False}, {"is_expandable": False}], False),
    ([{"is_expandable": False}, {"is_expandable": True}], None),  # mixed: set after something had allocated
    ([], None), ([{"total_size": 1}], None),  # nothing allocated yet, or a torch whose snapshot lacks the field
])
def test_expandable_segments_is_read_from_the_allocators_segments(monkeypatch, segments, expected):
    monkeypatch.setattr(torch.cuda, "memory_snapshot", lambda: segments)
    assert harness.expandable_segments() is expected


def test_expandable_segments_is_none_where_the_snapshot_fails(monkeypatch):
    def broken():
        raise RuntimeError("this allocator has no snapshot")
    monkeypatch.setattr(torch.cuda, "memory_snapshot", broken)
    assert harness.expandable_segments() is None


def test_power_field_is_nvmls():
    pynvml = pytest.importorskip("pynvml")  # (a bench dependency, nvidia-ml-py)
    assert (pynvml.NVML_FI_DEV_POWER_INSTANT, pynvml.NVML_SUCCESS) == (186, 0)
    assert {"nvmlReturn", "value"} <= {name for name, _ in pynvml.c_nvmlFieldValue_t._fields_}
    assert "uiVal" in {name for name, _ in pynvml.c_nvmlValue_t._fields_}


def test_clock_event_reason_bits_are_nvmls():
    pynvml = pytest.importorskip("pynvml")  # (a bench dependency, nvidia-ml-py)
    names = {"gpu_idle": "GpuIdle", "applications_clocks_setting": "ApplicationsClocksSetting",
             "sw_power_cap": "SwPowerCap", "hw_slowdown": "HwSlowdown", "sync_boost": "SyncBoost",
             "sw_thermal_slowdown": "SwThermalSlowdown", "hw_thermal_slowdown": "HwThermalSlowdown",
             "hw_power_brake_slowdown": "HwPowerBrakeSlowdown", "display_clock_setting": "DisplayClockSetting"}
    assert {bit: name for bit, name in harness.CLOCK_EVENT_REASONS.items()} == \
        {getattr(pynvml, f"nvmlClocksEventReason{nvml_name}"): name for name, nvml_name in names.items()}


class _FakeProperties:
    uuid = "d564c7ca-37e1-55af-ca61-563c149d244a"  # as torch gives it: without NVML's "GPU-"


def test_nvml_handle_finds_the_device_by_uuid_or_is_none(monkeypatch):
    import sys
    asked = []
    fake = types.SimpleNamespace(nvmlInit=lambda: None,
                                 nvmlDeviceGetHandleByUUID=lambda uuid: asked.append(uuid) or "handle")
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: _FakeProperties())
    harness._nvml_handle.cache_clear()
    try:
        monkeypatch.setitem(sys.modules, "pynvml", fake)
        assert harness._nvml_handle(0) == (fake, "handle") and asked == ["GPU-" + _FakeProperties.uuid]
        harness._nvml_handle.cache_clear()
        monkeypatch.setitem(sys.modules, "pynvml", None)  # no nvidia-ml-py: import pynvml raises ImportError
        assert harness._nvml_handle(0) is None
    finally:
        harness._nvml_handle.cache_clear()


def test_gpu_state_takes_the_older_throttle_reasons_call(monkeypatch):
    """An NVML driver older than 535 has no clocks-event-reasons function (the binding raises): the throttle-reasons
    one gives the same bits."""
    class _OldDriver(_FakeNvml):
        def nvmlDeviceGetCurrentClocksEventReasons(self, handle):
            raise RuntimeError("NVML_ERROR_FUNCTION_NOT_FOUND")

        def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle):
            return 0x40

    monkeypatch.setattr(harness, "ON_GPU", True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(harness, "_nvml_handle", lambda index: (_OldDriver(), "handle"))
    assert harness.gpu_state()["clock_event_reasons"] == ["hw_thermal_slowdown"]


def test_backward_mode_times_the_backward_only():
    suite = _Suite()
    suite.prepare("greyhound", "backward", 16, 300, "float32")
    try:
        suite.sample_times(2)
        assert suite.inputs["logits"].grad is not None and torch.isfinite(suite.inputs["logits"].grad).all()
    finally:
        suite.release()


@pytest.mark.parametrize("mode", ["full", "forward"])
def test_gate_failure_is_recorded_and_reported_as_an_asv_failure(mode):
    measured = _Suite().measure_grid([("greyhound-off-by-a-bit", mode, 16, 300, "float32"),
                                      ("greyhound", mode, 16, 300, "float32")])
    wrong, right = measured.values()
    assert "relative error" in wrong["error"] and wrong["samples"] is None
    assert right["error"] is None  # the run goes on after a failure
    suite = _Suite()
    with pytest.raises(RuntimeError, match="relative error"):
        suite.setup({"_Suite": measured}, "greyhound-off-by-a-bit", mode, 16, 300, "float32")


def test_missing_third_party_package_is_a_skip(monkeypatch):
    monkeypatch.setitem(providers.THIRD_PARTY, "liger", "surely_not_an_installed_module_xyz")
    measured = _Suite().measure_grid([("liger", "full", 16, 300, "float32")])
    assert "not installed" in measured[("liger", "full", 16, 300, "float32")]["skipped"]
    with pytest.raises(NotImplementedError, match="not installed"):
        _Suite().setup({"_Suite": measured}, "liger", "full", 16, 300, "float32")


def test_time_replays_exactly_the_measured_samples_and_peak_is_na_on_cpu():
    combo = ("greyhound", "forward", 16, 300, "float32")
    measured = {"_Suite": _Suite().measure_grid([combo])}
    suite = _Suite()
    replayed = []
    for _ in range(harness.SAMPLES):  # asv: setup before every sample, then the timer around one call
        suite.setup(measured, *combo)
        before = suite.timer()
        suite.time_cross_entropy_with_grad(measured, *combo)
        replayed.append(suite.timer() - before)
    assert replayed == pytest.approx(measured["_Suite"][combo]["samples"], rel=1e-9)
    with pytest.raises(RuntimeError, match="more than"):
        suite.time_cross_entropy_with_grad(measured, *combo)
    with pytest.raises(NotImplementedError):  # asv_runner's SkipNotImplemented: n/a
        suite.track_peakmem_cross_entropy_with_grad(measured, *combo)


def test_asv_time_names_samples_the_host_was_behind_in_once_a_combination(capsys):
    """asv drops setup_cache's stderr when it succeeds, so the benchmark's own time_ (whose stderr --show-stderr
    shows) says when the recorded samples ended with the host behind the device: on its first sample only, though
    asv calls setup and time_ for every sample; nothing for samples the host was ahead in, nor on a CPU (no head
    start)."""
    combo = ("greyhound", "forward", 16, 300, "float32")
    samples = [2e-3, 4e-3, 3e-3]

    def measured(**phases):
        return {"_Suite": {combo: harness.measurement(samples=samples, phases=phases)}}

    def replay(suite, cache, times):
        for _ in range(times):
            suite.setup(cache, *combo)
            suite.time_cross_entropy_with_grad(cache, *combo)

    behind = measured(host_ahead=False, head_start_retries=1, host_seconds_per_call=5e-3)
    replay(_Suite(), behind, 3)
    err = capsys.readouterr().err
    assert err.count("host fell behind the device") == 1
    assert "cross_entropy_with_grad greyhound forward" in err and "after 1 re-measure(s)" in err
    assert "host 5.000 ms a call, median sample 3.0000 ms" in err
    for phases in ({"host_ahead": True, "head_start_retries": 0, "host_seconds_per_call": 5e-3}, {}):
        replay(_Suite(), measured(**phases), 3)
        assert capsys.readouterr().err == ""


def test_unknown_provider_is_a_clear_error():
    with pytest.raises(ValueError, match="provider must be one of"):
        providers.require("tourch-eager")


@pytest.mark.parametrize("suite", SUITES, ids=lambda s: s.__name__)
def test_suites_declare_one_grid_for_every_machine(suite):
    method = getattr(suite, "time_" + suite.kernel_name)
    assert (method.kernel_name, method.x_name, method.tier) == (suite.kernel_name, suite.x_name, suite.tier)
    assert suite.__name__.endswith({"tracked": "Tracked", "sweep": "Sweep"}[suite.tier])
    assert getattr(suite, "track_peakmem_" + suite.kernel_name).unit == "bytes"
    assert suite.param_names[:2] == ["provider", "mode"] and suite.x_name in suite.param_names
    combos = set(itertools.product(*suite.params))
    for shapes in (suite.gpu_shapes, suite.cpu_shapes):  # both grids inside the one params
        for shape in shapes:
            assert any(dict(zip(suite.param_names[2:], c[2:])) == shape for c in combos)
    served = set(suite.served_combos())
    assert served and served == combos - suite.skip_params
    assert all(dict(zip(suite.param_names[2:], c[2:])) in suite.cpu_shapes for c in served)  # this is a CPU
    assert isinstance(suite.skip_params, frozenset)  # asv never writes a frozenset into benchmarks.json


def test_a_sweep_must_define_its_own_setup_cache():
    with pytest.raises(TypeError, match="must define its own"):
        class _InheritsSweep(CrossEntropyWithGradTracked):  # noqa: F841  (the class statement itself must raise)
            tier = "sweep"


def test_the_tracked_tier_shares_one_setup_cache_and_sweeps_have_their_own():
    from asv_runner.benchmarks._base import get_setup_cache_key
    tracked = [s for s in SUITES if s.tier == "tracked"]
    sweeps = [s for s in SUITES if s.tier == "sweep"]
    assert {get_setup_cache_key(s().setup_cache) for s in tracked} == {get_setup_cache_key(tracked[0]().setup_cache)}
    assert len({get_setup_cache_key(s().setup_cache) for s in sweeps}) == len(sweeps)
    assert harness.suites("tracked") == sorted(tracked, key=lambda s: s.__name__)


def test_selection_regexes_pick_exactly_the_served_combinations():
    import re
    regexes = harness.selection_regexes(SUITES)
    for suite in SUITES:
        module = suite.__module__.split(".", 1)[-1]
        for method in ("time_", "track_peakmem_"):
            for combo in itertools.product(*suite.params):
                name = f"{module}.{suite.__name__}.{method}{suite.kernel_name}({', '.join(map(repr, combo))})"
                selected = any(re.search(r, name) for r in regexes)
                assert selected == (combo not in suite.skip_params), name


def test_subclasses_get_their_own_benchmark_functions():
    sweep = cross_entropy.CrossEntropyWithGradTokenSweep
    assert sweep.time_cross_entropy_with_grad is not CrossEntropyWithGradTracked.time_cross_entropy_with_grad
    assert (sweep.time_cross_entropy_with_grad.x_name, CrossEntropyWithGradTracked.time_cross_entropy_with_grad.x_name
            ) == ("batch_size", "vocab_size")


class _GradRecordingSuite(_Suite):
    """Forward mode with autograd on for `greyhound` (as the Cheri Block's training forward does); records the grad
    mode of every provider call and what forward_context was asked for."""
    tuning_module = "greyhound.ops.cross_entropy"

    def __init__(self):
        self.seen_grad, self.contexts = [], []

    def provider_fn(self, provider, **shape):
        fn = super().provider_fn(provider, **shape)

        def recorded(*inputs):
            self.seen_grad.append(torch.is_grad_enabled())
            return fn(*inputs)
        return recorded

    def forward_context(self, provider):
        self.contexts.append(provider)
        return torch.enable_grad() if provider == "greyhound" else torch.no_grad()


def test_a_tuning_variant_runs_in_its_base_providers_forward_context():
    # a variant is its base provider with launch parameters forced: `greyhound-train[layout=...]` once ran its
    # "training forward" under no_grad (the context compared the whole variant name), timing inference instead
    suite = _GradRecordingSuite()
    result = suite.measure("greyhound[loss_warps=4]", "forward", 16, 300, "float32")
    assert result["error"] is None and result["skipped"] is None, result
    assert set(suite.contexts) == {"greyhound"} and suite.seen_grad and all(suite.seen_grad)


def test_an_op_that_updates_an_input_in_place_is_gated_on_the_input_before_the_call(monkeypatch):
    """causal_conv1d_update rolls its state in place: the gate's fp64 reference reads the state as it was before the
    provider's first call (the suite's reference_inputs), so a right kernel passes and the timed calls go on; read
    after the call, the same kernel would fail the gate."""
    from benchmarks.causal_conv1d import CausalConv1dUpdateSweep
    shape = (3, 32, 4, "float32")
    for provider in ("greyhound", "torch-eager"):
        result = CausalConv1dUpdateSweep().measure(provider, "forward", *shape)
        assert result["error"] is None and len(result["samples"]) == harness.SAMPLES, (provider, result)
    monkeypatch.setattr(CausalConv1dUpdateSweep, "reference_inputs", lambda self: self.inputs)
    result = CausalConv1dUpdateSweep().measure("greyhound", "forward", *shape)
    assert "relative error" in result["error"]


def test_head_start_covers_the_host_time_of_a_batch():
    """The device spin before a batch: the fixed minimum where the host queues calls quickly, HEAD_START_MARGIN times
    the batch's host time where it does not (a host-bound call), at most HEAD_START_MAX_SECONDS; bad arguments are
    refused by name."""
    assert harness.head_start_cycles(20, 0.0) == harness.HEAD_START_CYCLES
    assert harness.head_start_cycles(20, 10e-6) == harness.HEAD_START_CYCLES  # 0.3 ms of host: the 1 ms minimum
    cycles = harness.head_start_cycles(20, 200e-6)  # 4 ms to queue 20 calls
    assert cycles == int(harness.HEAD_START_MARGIN * 20 * 200e-6 * harness.SLEEP_CYCLES_PER_SECOND)
    assert cycles / harness.SLEEP_CYCLES_PER_SECOND >= 20 * 200e-6
    assert harness.head_start_cycles(20, 1.0) == int(harness.HEAD_START_MAX_SECONDS * harness.SLEEP_CYCLES_PER_SECOND)
    for n, pace in ((-1, 0.0), (20, -1e-6), (20, float("nan"))):
        with pytest.raises(ValueError, match="host_seconds_per_call"):
            harness.head_start_cycles(n, pace)


def test_each_batch_spins_for_the_host_pace_the_previous_one_measured(monkeypatch):
    """The GPU timer (with CUDA stood in for): a batch's spin comes from the host's pace over the previous batch, so
    a call whose host takes 3 ms gets a head start covering its whole batch; a fast host keeps the minimum."""
    spins = []

    class _Event:
        def __init__(self, enable_timing=False):
            self.at = None

        def record(self):
            self.at = len(spins)

        def query(self):
            return False  # (the device still spinning when the host is done: the host kept ahead)

        def elapsed_time(self, end):
            return 0.5  # ms

    monkeypatch.setattr(harness, "ON_GPU", True)
    monkeypatch.setattr(harness.torch.cuda, "Event", _Event)
    monkeypatch.setattr(harness.torch.cuda, "_sleep", spins.append)
    monkeypatch.setattr(harness.torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(harness, "_l2_flush_buffer", lambda: torch.empty(16, dtype=torch.int8))
    host_seconds = [3e-3]

    class _Timed(_Suite):  # (no inputs: the call only takes the host's time)
        def _before_call(self):
            pass

        def _call(self):
            time.sleep(host_seconds[0])

    suite = _Timed()
    assert suite.sample_times(4) == [0.5e-3] * 4
    assert spins == [harness.HEAD_START_CYCLES]  # nothing measured yet: the minimum
    slow = suite.host_seconds_per_call
    assert slow >= 3e-3
    suite.sample_times(4)
    # what the first batch measured, at least 1.5 x 4 x 3 ms of spin (at 2 GHz)
    assert spins[1] == harness.head_start_cycles(4, slow)
    assert spins[1] >= int(harness.HEAD_START_MARGIN * 4 * 3e-3 * harness.SLEEP_CYCLES_PER_SECOND) > spins[0]
    host_seconds[0] = 0.0
    suite.sample_times(4)
    fast = suite.host_seconds_per_call
    suite.sample_times(4)
    assert fast < slow and spins[3] == harness.head_start_cycles(4, fast) < spins[1]  # a fast host: a short spin


def test_a_batch_the_host_fell_behind_in_is_measured_again_behind_a_longer_spin(monkeypatch, capsys):
    """The GPU timer (with CUDA stood in for): where the event after the spin had completed once the host had queued
    the batch (the device caught up with the host, so samples may read the host's pace), the batch is measured again
    behind twice the spin, up to `retries` times and HEAD_START_RETRY_MAX_SECONDS of spin; the samples returned are
    the last batch's, and host_ahead / head_start_retries say how it went. Without retries (the warm-up) one batch."""
    spins, caught_up = [], []  # caught_up: per batch, whether the device had left its spin when the host was done
    batch_value = {}

    class _Event:
        def __init__(self, enable_timing=False):
            self.batch = None

        def record(self):
            self.batch = len(spins)

        def query(self):
            return caught_up[self.batch - 1]

        def elapsed_time(self, end):
            return float(self.batch)  # ms: each batch's samples tell which batch they came from

    monkeypatch.setattr(harness, "ON_GPU", True)
    monkeypatch.setattr(harness.torch.cuda, "Event", _Event)
    monkeypatch.setattr(harness.torch.cuda, "_sleep", spins.append)
    monkeypatch.setattr(harness.torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(harness, "_l2_flush_buffer", lambda: torch.empty(16, dtype=torch.int8))

    class _Timed(_Suite):
        def _before_call(self):
            pass

        def _call(self):
            pass

    suite = _Timed()
    caught_up[:] = [True, True, False]  # behind twice, ahead on the third batch
    assert suite.sample_times(4, retries=3) == [3e-3] * 4
    assert suite.host_ahead and suite.head_start_retries == 2
    assert spins == [harness.HEAD_START_CYCLES, 2 * harness.HEAD_START_CYCLES, 4 * harness.HEAD_START_CYCLES]
    assert capsys.readouterr().err == ""  # ahead in the end: nothing to say
    spins.clear()
    caught_up[:] = [True] * 10  # never ahead: stops after `retries` re-measures, and says so
    assert suite.sample_times(4, retries=3) == [4e-3] * 4
    assert not suite.host_ahead and suite.head_start_retries == 3 and len(spins) == 4
    err = capsys.readouterr().err  # on stderr, which asv shows (--show-stderr) and the sweep CLI prints
    assert "host fell behind the device" in err and "after 3 re-measure(s)" in err and "4.0000 ms" in err
    spins.clear()
    assert suite.sample_times(4) == [1e-3] * 4 and len(spins) == 1 and not suite.host_ahead  # no retries asked
    assert capsys.readouterr().err == ""  # (a warm-up window: its pace only sizes the next spin)
    spins.clear()
    monkeypatch.setattr(harness, "HEAD_START_RETRY_MAX_SECONDS", 3 * harness.HEAD_START_CYCLES
                        / harness.SLEEP_CYCLES_PER_SECOND)
    suite.sample_times(4, retries=10)  # the spin's ceiling ends the re-measures before the count does
    most = int(harness.HEAD_START_RETRY_MAX_SECONDS * harness.SLEEP_CYCLES_PER_SECOND)
    assert spins == [harness.HEAD_START_CYCLES, 2 * harness.HEAD_START_CYCLES, most]
    assert suite.head_start_retries == 2


def test_the_l2_flush_buffer_is_allocated_once():
    """Every batch zeroes the same 256 MB buffer (one allocation a process, as do_bench's), not a fresh one."""
    try:
        first = harness._l2_flush_buffer()
        assert harness._l2_flush_buffer() is first and first.numel() == harness.L2_FLUSH_BYTES
    finally:
        harness._l2_flush_buffer.cache_clear()
