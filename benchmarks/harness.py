"""The one place that turns (provider, mode, shape) into a checked, timed call and a peak-memory figure.

A kernel suite subclasses `KernelSuite` and declares what it measures: `kernel_name`, `x_name`, `providers`,
`modes`, `gpu_shapes` and `cpu_shapes` (lists of shape dicts, e.g. `grid(batch_size=[8192], dtype=["bfloat16"])`),
`make_inputs`, `reference`, `provider_fn` and `work` (least bytes and FLOPs, for the roofline). Its class name ends
in `Tracked` (measured on every commit) or `Sweep` (`tier = "sweep"`; it adds the line
`def setup_cache(self): return self.measure_suite()`). The harness derives asv's `params` (the union of both grids,
identical on every machine, so `benchmarks.json` is too) and generates the two asv benchmarks, `time_<kernel_name>`
and `track_peakmem_<kernel_name>`.

How a suite is measured (docs/benchmarking.md has the measured costs):
* In one process. Every Tracked suite shares one `setup_cache` (one asv cache key): asv runs it once per commit and
  it measures every combination this machine serves of the whole tracked tier (GPU shapes on a GPU, the CPU's smoke
  shapes on a CPU; asv shows n/a for the rest), so CUDA start, imports and kernel loading are paid once per commit,
  not once per (benchmark, combination). A Sweep suite is measured the same way in one process of its own. asv's
  per-combination benchmarks then report those figures: `time_` hands asv the recorded samples through the suite's
  `timer` (exactly `SAMPLES` of them, asv's `repeat`), `track_peakmem_` returns the recorded peak. A combination
  that failed its gate or raised is an asv failure with the reason; the next combination goes on.
* Correctness gate: before a provider is timed, its output (and, in full/backward mode, the gradients of every
  differentiable input) is compared with the fp64 reference on the same fresh random inputs; a mismatch is recorded
  as a failure instead of a time.
* Warm-up: the GPU is brought to a steady clock once per process (a matmul loop until its time stops falling),
  then each provider is called until two consecutive windows of calls agree within 1%, so the first benchmark of
  a run measures like the tenth (no clocks or power settings are touched).
* Speed: as `triton.testing.do_bench` measures: the calls are queued back to back, each after an L2 flush and
  bracketed by CUDA events, one synchronisation at the end; a 1 ms device spin first gives the host its head start.
  On the CPU: the wall clock of each call.
* GPU state: where NVML reads (the nvidia-ml-py package), the SM and memory clocks, temperature, power and NVML's
  clock event reasons (power cap, thermal slowdown, ...) before each batch of timed calls and while it runs, in the
  measurement's `gpu` record and the cost profile (GREYHOUND_BENCH_PROFILE): read only, nothing is set.
* Allocator: PyTorch's caching allocator with expandable segments (`PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`)
  unless PYTORCH_ALLOC_CONF or PYTORCH_CUDA_ALLOC_CONF is set (an empty value keeps torch's default). With torch's
  default a bandwidth-bound call read two levels by what ran before it in the process: the cross-entropy forward
  (BT=8192, V=128256) 0.745 ms alone and 0.843 after the full mode had run (fla's 0.852 / 0.935), in every fresh
  allocation of that process (H100, session 43); with expandable segments 0.744 either way. The process record
  says which (`expandable_segments`).
* Memory: peak CUDA memory allocated during one call above what was allocated before it (the inputs, and in
  backward mode the forward's graph), in bytes. asv's own `peakmem_` would measure host RSS, so it is not used.
* Modes: `full` = forward + backward, `forward` = output only with no gradient required, `backward` = the
  backward of a forward run (untimed) before each call.
* greyhound providers call the public functions with `check_target=False`: like every peer, no host-side check.
"""
import abc
import contextlib
import functools
import gc
import importlib
import itertools
import json
import os
import pkgutil
import re
import statistics
import sys
import time
import traceback

os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")  # is_available() must not initialise CUDA before fork
# Compiled kernels survive asv's per-commit environments and temporary working directories: absolute cache paths.
_CACHE_ROOT = os.path.join(os.path.expanduser(os.environ.get("GREYHOUND_CACHE_DIR", "~/.cache/greyhound")))
os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(_CACHE_ROOT, "triton"))
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(_CACHE_ROOT, "inductor"))
# (read when the CUDA allocator starts, at the first CUDA allocation, not at torch's import)
if "PYTORCH_ALLOC_CONF" not in os.environ:
    os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")

import torch  # noqa: E402
from asv_runner.benchmarks.mark import SkipNotImplemented  # noqa: E402

ON_GPU = torch.cuda.is_available() and os.environ.get("GREYHOUND_BENCH_DEVICE", "auto") != "cpu"
if not ON_GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")  # greyhound's Triton kernels run on CPU tensors through it
DEVICE = "cuda" if ON_GPU else "cpu"

from . import providers  # noqa: E402

MODES = ["full", "forward", "backward"]
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
# Relative-norm tolerance against the fp64 reference, by input dtype (bf16 operands land in 1e-3..1e-2).
TOLERANCE = {torch.float32: 2e-3, torch.float16: 1e-2, torch.bfloat16: 3e-2}
L2_FLUSH_BYTES = 256 * 2**20  # the same buffer size triton.testing.do_bench zeroes between calls
# GPU cycles (~1 ms at 1.98 GHz) the device spins before a batch of timed calls, at least, so the host's Python prologue
# of the first call (argument checks, autograd, launches) is queued ahead of the device, not timed as idle GPU (0.3 ms
# left the first call of a full-mode batch 7% slow on the H200; the later ones hide behind their predecessors).
HEAD_START_CYCLES = 2_000_000
# ... and more where the host queues a call more slowly than the device runs it (a host-bound call: autograd and
# launches of a small kernel): the spin then lasts HEAD_START_MARGIN times the host's measured time to queue the whole
# batch (head_start_cycles), so that every call is queued before the device reaches it and each sample reads the
# device's time, not the host's. With the fixed 1 ms such a series read the device for its first few samples and the
# host for the rest, moving with the host's speed (the Cheri training forward at N=16: 0.027 ms on one run, 0.218 ms
# on the next, on unchanged code; docs/benchmarking.md, "Host-bound series").
HEAD_START_MARGIN = 1.5
HEAD_START_MAX_SECONDS = 0.05
# ... and checked: a CUDA event recorded after the spin tells whether the device was still spinning once the host had
# queued the whole batch. Where it was not (the host fell behind: a hiccup, a pace slower than the previous batch's),
# the samples' batch is measured again once behind a longer spin (twice it, or HEAD_START_MARGIN times the host's pace
# in the batch that fell behind, HEAD_START_RETRY_MAX_SECONDS at most). Once: a call that waits for the device inside
# (a host synchronisation) is never ahead, and a spin does not change that. (Session 58: the sizing above is a
# forecast from the previous batch; the runs since it (dcca289 on an H100, 4735bed on an H200) read every host-bound
# series at the device's time, and this check makes a run that would not say so and measure again, instead of passing
# host time off as the device's. Its first H200 run, log 215: 72 of 72 combinations ahead, one after a re-measure;
# on an H100, log 217: the samples' first batch starved to 1e4 cycles, 4 of 4 ahead after one, within 0.5%.)
HEAD_START_RETRIES = 1
HEAD_START_RETRY_MAX_SECONDS = 0.4
# torch.cuda._sleep counts SM clock cycles; converted at 2 GHz (the H100's and H200's boost is 1.98 GHz) a duration
# spins at least that long at any clock the device runs
SLEEP_CYCLES_PER_SECOND = 2.0e9
SAMPLES = 20  # timed calls per series: asv's `repeat`, replayed exactly
WARMUP_WINDOW = 5  # calls per window of the warm-up's stability test (fewer for calls over 5 ms: ~20 ms a window)
WARMUP_TOLERANCE = 0.01  # two consecutive windows' medians within 1% ...
WARMUP_TOLERANCE_SECONDS = 0.5e-6  # ... or within 0.5 µs (launch jitter of a few-µs kernel is larger than 1%)
WARMUP_MAX_SECONDS = 3.0 if ON_GPU else 0.5
# Bump when what a figure means changes (timing method, inputs, gate). asv keeps results of one version together;
# with the default (a hash of the benchmark's source) any edit to this file would orphan the whole history.
# (Not bumped for session 51's head start sized to the host: a series whose host kept ahead of the device reads as
# before, and the host-bound ones, whose figures were the host's anyway, step down once; a new version would have cut
# every series' history to serve those few.)
MEASUREMENT_VERSION = "2"
PROFILE_ENV = "GREYHOUND_BENCH_PROFILE"  # a JSON-lines file: every measurement's cost breakdown is appended
WARM_UP = os.environ.get("GREYHOUND_BENCH_WARMUP", "1") != "0"  # 0: no warm-up at all (to show a cold start)
CLASSES_ENV = "GREYHOUND_BENCH_CLASSES"  # measure only these tracked suites (tests, quick local checks)

_replayed_seconds = [0.0]


def grid(**values):
    """Shape dicts of the cartesian product of the given values, in argument order: grid(a=[1, 2], b=[3])."""
    names = list(values)
    return [dict(zip(names, combo)) for combo in itertools.product(*(values[n] for n in names))]


def replay_clock():
    """asv timer: the running sum of the samples handed to asv by `time_` (see the module docstring)."""
    return _replayed_seconds[0]


def random_logits(batch_size, vocab_size, dtype):
    """Inputs of the logits-based loss suites: standard-normal logits and uniform targets in [0, V)."""
    logits = torch.randn(batch_size, vocab_size, device=DEVICE, dtype=DTYPES[dtype])
    target = torch.randint(0, vocab_size, (batch_size,), device=DEVICE)
    return {"logits": logits, "target": target}, ["logits"]


def random_lm_head(batch_size, d_model, vocab_size, dtype, hidden_name="x"):
    """Inputs of the fused lm-head suites: hidden states, a 1/sqrt(d_model)-scaled weight, uniform targets."""
    hidden = torch.randn(batch_size, d_model, device=DEVICE, dtype=DTYPES[dtype])
    weight = torch.randn(vocab_size, d_model, device=DEVICE, dtype=DTYPES[dtype]) / d_model**0.5
    target = torch.randint(0, vocab_size, (batch_size,), device=DEVICE)
    return {hidden_name: hidden, "weight": weight, "target": target}, [hidden_name, "weight"]


def relative_error(out, ref):
    out, ref = out.detach().double(), ref.detach().double()
    if not torch.isfinite(out).all() and not torch.equal(torch.isnan(out), torch.isnan(ref)):
        return float("inf")
    out, ref = torch.nan_to_num(out), torch.nan_to_num(ref)
    return ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def _as_tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def head_start_cycles(n, host_seconds_per_call):
    """The device spin (torch.cuda._sleep cycles) before n queued calls whose host takes `host_seconds_per_call` to
    queue one (flush, events, the call): HEAD_START_MARGIN times the whole batch's host time, so the host stays ahead
    of the device through the last call even where it queues a call more slowly than the device runs it; never less
    than HEAD_START_CYCLES, nor more than HEAD_START_MAX_SECONDS."""
    if n < 0 or not host_seconds_per_call >= 0:
        raise ValueError(f"head_start_cycles: n must be >= 0 and host_seconds_per_call a non-negative number of "
                         f"seconds, got n={n!r}, host_seconds_per_call={host_seconds_per_call!r}")
    seconds = min(HEAD_START_MAX_SECONDS, HEAD_START_MARGIN * n * host_seconds_per_call)
    return max(HEAD_START_CYCLES, int(seconds * SLEEP_CYCLES_PER_SECOND))


@functools.lru_cache(maxsize=1)
def _l2_flush_buffer():
    return torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device=DEVICE)


def _process_age_seconds():
    """Seconds since this process was created (fork included), from /proc; None where /proc is missing."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


def warm_up_gpu():
    """Run a bf16 matmul loop until its time stops falling (clocks ramped up from idle); returns the phase record."""
    start = time.perf_counter()
    a = torch.randn(4096, 4096, device=DEVICE, dtype=torch.bfloat16)
    torch.mm(a, a)  # cuBLAS start-up stays out of the first timed batch
    times = []
    while time.perf_counter() - start < WARMUP_MAX_SECONDS:
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        for _ in range(10):
            torch.mm(a, a)
        end.record()
        end.synchronize()
        times.append(begin.elapsed_time(end))
        if len(times) >= 6 and abs(statistics.median(times[-3:]) / statistics.median(times[-6:-3]) - 1) <= 0.005:
            break
    del a
    return {"gpu_warmup": time.perf_counter() - start, "gpu_warmup_first_over_last": times[0] / times[-1]}


# NVML's clock event reasons (nvmlClocksEventReason*): why the SM clock is below its maximum while a batch runs
CLOCK_EVENT_REASONS = {0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
                       0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
                       0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting"}


@functools.lru_cache(maxsize=None)
def _nvml_handle(device_index):
    """(pynvml, NVML handle) of CUDA device `device_index`, found by UUID (CUDA's and NVML's device orders can differ),
    or None where the nvidia-ml-py package or the NVML library is missing. Read-only: nothing is set."""
    try:
        import pynvml
        pynvml.nvmlInit()
        uuid = str(torch.cuda.get_device_properties(device_index).uuid)
        return pynvml, pynvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else f"GPU-{uuid}")
    except Exception:  # noqa: BLE001 - no NVML here: the readings are left out, the measurement goes on
        return None


def _power_w(nvml, handle):
    """(watts, "instant" or "average"): NVML's instantaneous board power (field NVML_FI_DEV_POWER_INSTANT) where the
    driver gives it, else nvmlDeviceGetPowerUsage, an average over about a second, which a batch of short calls reads
    as the idle before it (session 42: 130 W for 20 megakernel calls of 0.37 ms; a 40 ms GEMM batch read 690 W)."""
    field = getattr(nvml, "NVML_FI_DEV_POWER_INSTANT", None)
    if field is not None:
        try:
            value = nvml.nvmlDeviceGetFieldValues(handle, [field])[0]
            if value.nvmlReturn == nvml.NVML_SUCCESS:
                return value.value.uiVal / 1000, "instant"
        except Exception:  # noqa: BLE001 - an older driver or binding: the average below
            pass
    return nvml.nvmlDeviceGetPowerUsage(handle) / 1000, "average"


def gpu_state():
    """What NVML reads of this process's GPU now: SM and memory clocks (MHz), temperature (C), power (W, and in
    `power_reading` whether it is instantaneous or a one-second average: _power_w) and the clock event reasons (why the
    SM clock is below its maximum: power cap, thermal slowdown, ...). None off the GPU or without NVML. Taken before a
    batch of timed calls and while it runs, into the measurement's `gpu` record, so a reader of the cost profile can
    tell a slow run from a throttled GPU (nothing is set; clocks stay the driver's)."""
    if not ON_GPU:
        return None
    found = _nvml_handle(torch.cuda.current_device())
    if found is None:
        return None
    nvml, handle = found
    try:
        try:  # (the name since driver 535; an older driver has only the throttle-reasons one, the same bits)
            reasons = int(nvml.nvmlDeviceGetCurrentClocksEventReasons(handle))
        except Exception:  # noqa: BLE001 - AttributeError (an older binding) or NVML's function-not-found
            reasons = int(nvml.nvmlDeviceGetCurrentClocksThrottleReasons(handle))
        power, power_kind = _power_w(nvml, handle)
        return {"sm_clock_mhz": nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM),
                "memory_clock_mhz": nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_MEM),
                "temperature_c": nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU),
                "power_w": power, "power_reading": power_kind,
                "clock_event_reasons": [name for bit, name in CLOCK_EVENT_REASONS.items() if reasons & bit]}
    except Exception as err:  # noqa: BLE001 - a reading NVML refuses on this GPU is named, the measurement goes on
        return {"error": f"{type(err).__name__}: {err}"}


def measurement(samples=None, peak_bytes=None, error=None, skipped=None, phases=None, gpu=None):
    """One (provider, mode, shape) as measured: samples (seconds), peak_bytes, error or skipped, phases (seconds),
    gpu (gpu_state() before the timed calls and while they ran, where NVML reads). A plain dict, so asv can pickle it
    from the setup_cache process to the benchmark processes."""
    return {"samples": samples, "peak_bytes": peak_bytes, "error": error, "skipped": skipped, "phases": phases or {},
            "gpu": gpu}


def host_behind_message(kernel, provider, mode, retries, host_seconds_per_call, median_seconds):
    """The line on stderr for timed samples the host was still behind the device in after `retries` re-measures
    (sample_times, for the sweep CLI; replay_sample, for asv, whose --show-stderr shows a benchmark's stderr and
    drops setup_cache's when it succeeds)."""
    return (f"greyhound harness: {kernel} {provider} {mode}: the host fell behind the device in the timed batch after "
            f"{retries} re-measure(s) (host {host_seconds_per_call * 1e3:.3f} ms a call, median sample "
            f"{median_seconds * 1e3:.4f} ms): the samples may read the host's pace, not the device's (host_ahead False "
            "in the profile)")


class KernelSuite(abc.ABC):
    """Base of every kernel suite; abstract, so asv does not collect it as a benchmark itself."""

    kernel_name: str
    x_name: str
    providers: list
    modes = MODES
    gpu_shapes: list
    cpu_shapes: list
    tier = "tracked"  # or "sweep": which `python -m tools.bench --tier` runs it (class names end in Tracked/Sweep)
    # the shape option whose value picks the other options' sweep defaults (its first shape with that value), or None
    default_key = None
    # asv attributes; all of them land in benchmarks.json, so none may depend on the machine.
    timer = staticmethod(replay_clock)
    repeat = SAMPLES
    number = 1
    warmup_time = 0.0  # the measurement already warmed up; the replay needs none
    min_run_count = 1
    rounds = 1
    timeout = 120  # one replay or peak lookup; the measuring itself runs under SETUP_CACHE_TIMEOUT
    version = MEASUREMENT_VERSION
    SETUP_CACHE_TIMEOUT = 3600

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if getattr(cls, "kernel_name", None) is None:
            return
        if cls.tier == "tracked":
            cls.setup_cache = measure_tracked_tier
        elif "setup_cache" not in cls.__dict__:
            # asv keys the cache by the setup_cache's source line: an inherited one would hand this class another
            # class's measurements.
            raise TypeError(f"{cls.__name__} must define its own `def setup_cache(self): return self.measure_suite()`")
        cls.setup_cache.timeout = cls.SETUP_CACHE_TIMEOUT
        shapes = list(cls.gpu_shapes) + list(cls.cpu_shapes)
        shape_names = list(shapes[0])
        for shape in shapes:
            if list(shape) != shape_names:
                raise TypeError(f"{cls.__name__}: every shape must name {shape_names} in that order, got {list(shape)}")
        if cls.x_name not in shape_names:
            raise TypeError(f"{cls.__name__}.x_name {cls.x_name!r} is not one of its shape names {shape_names}")
        values = [list(dict.fromkeys(shape[n] for shape in shapes)) for n in shape_names]
        cls.param_names = ["provider", "mode", *shape_names]
        cls.params = [list(cls.providers), list(cls.modes), *values]
        # Combinations this machine does not measure: asv_runner skips them before setup (n/a). A frozenset, which
        # asv does not copy into benchmarks.json (it keeps only str/int/float/list/dict/bool attributes).
        cls.skip_params = frozenset(combo for combo in itertools.product(*cls.params) if not cls._serves_here(combo))
        for prefix, unit in (("time_", None), ("track_peakmem_", "bytes")):
            method = _make_benchmark(prefix, cls)
            method.kernel_name, method.x_name, method.tier = cls.kernel_name, cls.x_name, cls.tier
            if unit:
                method.unit = unit
            else:  # the roofline: tools.export divides this work by the time and by the machine's ceilings
                method.work = {work_key(mode, combo): list(cls.work(mode, dict(zip(shape_names, combo))))
                               for mode in cls.modes for combo in itertools.product(*values)}
            setattr(cls, prefix + cls.kernel_name, method)

    @classmethod
    def _serves_here(cls, combo):
        provider, mode, *values = combo
        shape = dict(zip(cls.param_names[2:], values))
        if shape not in (cls.gpu_shapes if ON_GPU else cls.cpu_shapes):
            return False
        if not ON_GPU and provider.endswith(("compile", "compiled")):
            return False  # tens of seconds of C++ compilation for a CPU smoke figure
        return cls.serves(provider, mode, shape)

    @classmethod
    def work(cls, mode, shape):
        """(bytes, flops) the op must move and compute at least in this mode and shape, whatever the provider:
        each input read once, each output written once (tools.export turns it into a share of the ceilings)."""
        return 0, 0

    @classmethod
    def serves(cls, provider, mode, shape):
        """Whether a provider has this mode at this shape (e.g. an inference-only path has no `full`)."""
        return True

    @classmethod
    def served_combos(cls):
        """The (provider, mode, *shape values) combinations this machine measures, in asv's order."""
        return [combo for combo in itertools.product(*cls.params) if combo not in cls.skip_params]

    # --- what a suite declares -------------------------------------------------------------------------------
    @abc.abstractmethod
    def make_inputs(self, **shape):
        """Fresh random inputs on DEVICE: (dict of named inputs, names of the differentiable ones)."""

    @abc.abstractmethod
    def reference(self, *inputs):
        """The fp64 reference output(s), computed from inputs already cast to float64."""

    @abc.abstractmethod
    def provider_fn(self, provider, **shape):
        """A callable taking the inputs (positionally, in make_inputs order) and returning the output(s)."""

    # greyhound module whose launch parameters a `greyhound[key=value,...]` variant may force (greyhound._tuning)
    tuning_module = None

    def tuning(self, options):
        """The context forcing a variant's launch parameters: greyhound._tuning.override of the suite's op, and of
        another op for a key written OP.NAME (e.g. chunked_linear_cross_entropy's variant
        `greyhound[cross_entropy_with_grad.loss_warps=8]` forces the row kernel it calls).
        NotImplementedError (n/a) at commits without tuning overrides; ValueError for an unknown option."""
        if self.tuning_module is None:
            raise ValueError(f"{self.kernel_name}: no tunable launch parameters (got options {options})")
        try:
            tuning = importlib.import_module("greyhound._tuning")
            module = importlib.import_module(self.tuning_module)
        except ImportError as err:
            raise NotImplementedError(f"greyhound at this commit has no tuning overrides ({err})") from None
        by_op = {}
        for key, value in options.items():
            op, dot, name = key.rpartition(".")
            by_op.setdefault(op if dot else getattr(module, "TUNING_OP", self.kernel_name), {})[name] = value
        stack = contextlib.ExitStack()
        try:
            for op, values in by_op.items():
                stack.enter_context(tuning.override(op, **values))
        except BaseException:
            stack.close()
            raise
        return stack

    def variant_label(self, provider):
        """A provider's one name for a setting: a tuning variant's keys sorted, an `OP.NAME` key of the suite's own
        op written NAME, values as the op parses them (bools 1/0), so `greyhound[warps=4,block_l=+16]` and
        `greyhound[block_l=16,warps=4]` key the same rows; any other provider unchanged. ValueError (a key given
        twice, a bad option) and NotImplementedError as split_variant and tuning raise them."""
        base, options = split_variant(provider)
        if not options:
            return provider
        with self.tuning(options):  # validates every option against its op's tunables
            pass
        tuning = importlib.import_module("greyhound._tuning")
        own_op = getattr(importlib.import_module(self.tuning_module), "TUNING_OP", self.kernel_name)
        parsed = {}
        for key, value in options.items():
            op, dot, name = key.rpartition(".")
            label = name if not dot or op == own_op else key
            if label in parsed:
                raise ValueError(f"provider {provider!r}: key {label!r} given twice")
            value = tuning.parse(op if dot else own_op, {name: value})[name]
            parsed[label] = int(value) if isinstance(value, bool) else value
        return f"{base}[{','.join(f'{k}={v}' for k, v in sorted(parsed.items()))}]"

    def forward_context(self, provider):
        """Forward mode runs without autograd by default. `provider` is the base name (a tuning variant
        `greyhound-train[block_l=64]` passes `greyhound-train`)."""
        return torch.no_grad()

    def reference_inputs(self):
        """The inputs the fp64 reference reads, taken before the provider's first call: the inputs themselves by
        default; a suite whose op updates an input in place returns a copy of it (the decode step's state)."""
        return self.inputs

    def check_output(self, provider, out, ref, dtype):
        """Raise AssertionError when an output is off the reference; suites may tighten or loosen per output."""
        tol = TOLERANCE[dtype]
        for i, (o, r) in enumerate(zip(_as_tuple(out), _as_tuple(ref))):
            err = relative_error(o, r)
            if not err <= tol:
                raise AssertionError(f"{self.kernel_name}/{provider}: output {i} relative error {err:.3g} > {tol:g}")

    # --- measuring (in setup_cache, or the sweep command) ----------------------------------------------------
    def measure_suite(self):
        """setup_cache of a sweep class: every combination this machine serves, in this process."""
        return measure_suites([type(self)])

    def measure_grid(self, combos=None):
        """Measure `combos` (default: all this machine serves) in this process: {combo: measurement dict}."""
        combos = self.served_combos() if combos is None else [tuple(c) for c in combos]
        return {combo: type(self)().measure(*combo) for combo in combos}

    def measure(self, provider, mode, *shape_values):
        """One combination: gate, warm up, SAMPLES timed calls, one peak-memory call. Never raises for the
        kernel's own failures: they are recorded (error) and the next combination goes on."""
        phases = {}
        try:
            self.prepare(provider, mode, *shape_values, phases=phases)
            t0 = time.perf_counter()
            phases["warmup_calls"] = self.warm_up() if WARM_UP else 0
            phases["warmup"] = time.perf_counter() - t0
            gpu = {"before": gpu_state()}
            t0 = time.perf_counter()
            samples = self.sample_times(SAMPLES, gpu, retries=HEAD_START_RETRIES)
            phases["samples"] = time.perf_counter() - t0
            if ON_GPU:  # the spin the samples got (head_start_cycles), the host's pace while it queued them, and
                # whether the device was still spinning when the last call was queued (after how many re-measures)
                phases["head_start_cycles"] = self.head_start
                phases["host_seconds_per_call"] = self.host_seconds_per_call
                phases["host_ahead"] = self.host_ahead
                phases["head_start_retries"] = self.head_start_retries
            t0 = time.perf_counter()
            peak = self.peak_memory() if ON_GPU else None
            phases["memory"] = time.perf_counter() - t0
            return measurement(samples=samples, peak_bytes=peak, phases=phases,
                               gpu=gpu if gpu["before"] is not None else None)
        except NotImplementedError as err:
            return measurement(skipped=str(err) or type(err).__name__, phases=phases)
        except Exception as err:  # noqa: BLE001 - the gate's AssertionError, OOM, a crash: recorded, run goes on
            detail = "".join(traceback.format_exception_only(type(err), err)).strip()
            return measurement(error=f"{provider}/{mode}/{shape_values}: {detail}", phases=phases)
        finally:
            t0 = time.perf_counter()
            self.release()
            phases["cleanup"] = time.perf_counter() - t0

    def prepare(self, provider, mode, *shape_values, phases=None):
        """Fresh inputs, the provider, and the correctness gate (its first call compiles and loads kernels);
        records the seconds each phase took in `phases` and returns it. Raises NotImplementedError for a provider
        not installed here, AssertionError when the gate fails."""
        base, options = split_variant(provider)
        providers.require(base)
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        shape = dict(zip(self.param_names[2:], shape_values))
        self.dtype = DTYPES[shape["dtype"]] if "dtype" in shape else torch.float32
        self.mode, self.provider, self.base_provider = mode, provider, base
        self.host_seconds_per_call = 0.0  # (measured by each batch of sample_times, for the next one's head start)
        phases = {} if phases is None else phases
        t0 = time.perf_counter()
        self.inputs, grad_names = self.make_inputs(**shape)
        self.fn = self.provider_fn(base, **shape)
        if options:  # forced for the whole combination: gate, warm-up, samples and memory (released in release())
            self._tuning = contextlib.ExitStack()
            self._tuning.enter_context(self.tuning(options))
        needs_grad = mode != "forward"
        self._grad_inputs = {n: self.inputs[n] for n in grad_names} if needs_grad else {}
        for t in self._grad_inputs.values():
            t.requires_grad_(True)
        phases["inputs"] = _synced_since(t0)
        self._gate(phases)
        return phases

    def _gate(self, phases):
        """Run the provider once (compiles, loads kernels) and compare with the fp64 reference."""
        before = self.reference_inputs()
        t0 = time.perf_counter()
        if self.mode == "forward":
            with self.forward_context(self.base_provider):
                out = _as_tuple(self.fn(*self.inputs.values()))
        else:
            out = _as_tuple(self.fn(*self.inputs.values()))
            self._grad_outputs = [torch.randn_like(o) if o.dim() else torch.ones_like(o)
                                  for o in out if o.requires_grad]
            torch.autograd.backward([o for o in out if o.requires_grad], self._grad_outputs)
        phases["first_call"] = _synced_since(t0)
        t0 = time.perf_counter()
        ref_inputs = {n: (t.detach().double().requires_grad_(n in self._grad_inputs) if t.is_floating_point()
                          else t) for n, t in before.items()}
        ref = _as_tuple(self.reference(*ref_inputs.values()))
        if self.mode != "forward":
            ref_out = [r for r in ref if r.requires_grad]
            torch.autograd.backward(ref_out, [g.double() for g in self._grad_outputs])
        phases["reference"] = _synced_since(t0)
        t0 = time.perf_counter()
        self.check_output(self.provider, out, ref, self.dtype)
        tol = TOLERANCE[self.dtype]
        for name, t in self._grad_inputs.items():
            err = relative_error(t.grad, ref_inputs[name].grad)
            if not err <= tol:
                raise AssertionError(f"{self.kernel_name}/{self.provider}: grad of {name} relative error "
                                     f"{err:.3g} > {tol:g}")
        phases["check"] = time.perf_counter() - t0
        del ref, ref_inputs, out, before

    def _before_call(self):
        for t in self._grad_inputs.values():
            t.grad = None
        if self.mode == "backward":
            self._outputs = self._forward_for_backward()

    def _forward_for_backward(self):
        return [o for o in _as_tuple(self.fn(*self.inputs.values())) if o.requires_grad]

    def _call(self):
        if self.mode == "forward":
            with self.forward_context(self.base_provider):
                return self.fn(*self.inputs.values())
        if self.mode == "full":
            outputs = self._forward_for_backward()
        else:
            outputs, self._outputs = self._outputs, None
        torch.autograd.backward(outputs, self._grad_outputs)

    def sample_times(self, n, gpu=None, retries=0):
        """n calls, in seconds each, measured as triton.testing.do_bench does: on a GPU the calls are queued back to
        back (the host runs ahead of the device), each after an L2 flush and bracketed by CUDA events, with one
        synchronisation at the end; a device spin first gives the host its head start, long enough for the host to
        queue all n at the pace it queued the previous batch (head_start_cycles). An event after the spin tells
        whether the device was still spinning when the last call was queued (`host_ahead`); where it was not, some
        samples may have read the host's pace, and the batch is measured again behind a longer spin, up to
        `retries` times (HEAD_START_RETRY_MAX_SECONDS of spin at most; `head_start_retries` counts them); a batch
        of samples (retries asked) still behind after them is named on stderr (host_behind_message; asv's `time_`
        says it again in the benchmark's process, whose stderr asv shows with --show-stderr: replay_sample).
        CPU: wall clock per call. With a `gpu` dict, gpu_state() is read into gpu["during"] once the calls are
        queued, before the synchronisation (the device is then still running them unless the host fell behind)."""
        if n <= 0:  # (nothing to time; the GPU path would divide the host's time by n)
            return []
        if not ON_GPU:
            times = []
            for _ in range(n):
                self._before_call()
                t0 = time.perf_counter()
                self._call()
                times.append(time.perf_counter() - t0)
            return times
        head_start = head_start_cycles(n, getattr(self, "host_seconds_per_call", 0.0))
        most = int(max(HEAD_START_RETRY_MAX_SECONDS * SLEEP_CYCLES_PER_SECOND, head_start))
        self.head_start_retries = 0
        while True:
            times = self._queued_batch(n, head_start, gpu)
            if self.host_ahead or self.head_start_retries >= retries or head_start >= most:
                if retries and not self.host_ahead:  # (the timed samples, not a warm-up window: said, not hidden)
                    print(host_behind_message(self.kernel_name, getattr(self, "provider", "?"),
                                              getattr(self, "mode", "?"), self.head_start_retries,
                                              self.host_seconds_per_call, statistics.median(times)), file=sys.stderr)
                return times
            self.head_start_retries += 1
            head_start = min(most, max(2 * head_start, head_start_cycles(n, self.host_seconds_per_call)))

    def _queued_batch(self, n, head_start, gpu=None):
        """One batch of sample_times on a GPU behind a spin of `head_start` cycles; sets head_start,
        host_seconds_per_call and host_ahead."""
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        spun = torch.cuda.Event()
        flush = _l2_flush_buffer()
        self.head_start = head_start
        torch.cuda._sleep(head_start)
        spun.record()
        queued = time.perf_counter()
        for start, end in zip(starts, ends):
            self._before_call()
            flush.zero_()
            start.record()
            self._call()
            end.record()
        # the host's pace, for the next batch's head start (the warm-up's windows measure it before the samples)
        self.host_seconds_per_call = (time.perf_counter() - queued) / n
        self.host_ahead = not spun.query()  # (the device still in its spin: every call was queued before it ran)
        if gpu is not None:
            gpu["during"] = gpu_state()
        torch.cuda.synchronize()
        return [start.elapsed_time(end) * 1e-3 for start, end in zip(starts, ends)]

    def warm_up(self):
        """Call in windows until two consecutive windows' medians agree within WARMUP_TOLERANCE (or
        WARMUP_TOLERANCE_SECONDS), or WARMUP_MAX_SECONDS pass; returns the number of calls."""
        first = statistics.median(self.sample_times(2))
        window = max(2, min(WARMUP_WINDOW, int(0.02 / max(first, 1e-9))))
        calls, windows, start = 2, [], time.perf_counter()
        while time.perf_counter() - start < WARMUP_MAX_SECONDS:
            windows.append(statistics.median(self.sample_times(window)))
            calls += window
            if len(windows) >= 2 and abs(windows[-1] - windows[-2]) <= max(WARMUP_TOLERANCE * windows[-2],
                                                                           WARMUP_TOLERANCE_SECONDS):
                break
        return calls

    def peak_memory(self):
        """Bytes of CUDA memory allocated during one call above what it started with."""
        self._before_call()
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        self._call()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - before

    def release(self):
        """Drop this combination's tensors, compiled graphs and cached blocks before the next one."""
        for name in ("inputs", "fn", "_grad_inputs", "_grad_outputs", "_outputs"):
            self.__dict__.pop(name, None)
        tuning = self.__dict__.pop("_tuning", None)
        if tuning is not None:
            tuning.close()
        gc.collect()
        if self.__dict__.pop("_compiled", False):
            torch._dynamo.reset()
        if ON_GPU:
            torch.cuda.empty_cache()

    def compile(self, fn, fullgraph=False):
        """torch.compile for a compiled provider: static shapes, state reset after the combination."""
        self._compiled = True
        return torch.compile(fn, dynamic=False, fullgraph=fullgraph)

    # --- asv hooks: report what setup_cache measured -----------------------------------------------------------
    def setup(self, measured, provider, mode, *shape_values):
        key = (provider, mode, *shape_values)
        if getattr(self, "_replaying", None) == key:  # asv re-runs setup before every sample
            return
        result = measured.get(type(self).__name__, {}).get(key)
        if result is None:
            raise NotImplementedError(f"{key} is not measured on this machine")
        if result["skipped"]:
            raise NotImplementedError(result["skipped"])
        if result["error"]:
            raise RuntimeError(result["error"])
        self._replaying, self._measurement = key, result
        self._next_sample = iter(result["samples"])

    def replay_sample(self):
        """The body of `time_`: hand asv the next recorded sample through `replay_clock`. The first sample of a
        combination says on stderr (which asv shows with --show-stderr; setup_cache's it drops on success) when the
        recorded samples ended with the host behind the device. (Here, not in `setup`: asv hashes setup's source into
        every benchmark's version, and a new version would cut every series' history in the gate.)"""
        if getattr(self, "_said", None) != self._replaying:
            self._said = self._replaying
            phases, samples = self._measurement["phases"], self._measurement["samples"]
            if phases.get("host_ahead") is False and samples:
                print(host_behind_message(self.kernel_name, *self._replaying[:2], phases.get("head_start_retries", 0),
                                          phases.get("host_seconds_per_call", 0.0), statistics.median(samples)),
                      file=sys.stderr)
        try:
            _replayed_seconds[0] += next(self._next_sample)
        except StopIteration:
            raise RuntimeError(f"asv asked for more than the {SAMPLES} samples measured per series "
                               f"(repeat/number were overridden?)") from None

    def recorded_peak_memory(self):
        """The body of `track_peakmem_`: the recorded peak (n/a where there is no CUDA memory to measure)."""
        peak = self._measurement["peak_bytes"]
        if peak is None:
            raise SkipNotImplemented("peak CUDA memory needs a CUDA device")
        return peak


def _start_process():
    """CUDA start and the GPU warm-up, once per measuring process; returns their cost record."""
    process = {"process_start": _process_age_seconds()}
    if ON_GPU:
        t0 = time.perf_counter()
        torch.cuda.init()
        torch.empty(1, device=DEVICE)
        process["cuda_init"] = time.perf_counter() - t0
        process["expandable_segments"] = expandable_segments()
        t0 = time.perf_counter()
        _nvml_handle(torch.cuda.current_device())  # NVML's start (up to seconds) before the warm-up, never between
        process["nvml_init"] = time.perf_counter() - t0  # a combination's warm-up and its timed calls
        if WARM_UP:
            process.update(warm_up_gpu())
    return process


def expandable_segments():
    """Whether this process's CUDA allocator maps expandable segments (see the module's Allocator note), read from
    its segments once one exists; None where torch's snapshot does not say (a record, never a reason to stop)."""
    try:
        segments = torch.cuda.memory_snapshot()
    except (RuntimeError, AttributeError):  # a build without the allocator's snapshot
        return None
    flags = {segment["is_expandable"] for segment in segments if "is_expandable" in segment}
    return flags.pop() if len(flags) == 1 else None


def measure_suites_of(cls, combos):
    """Measure the given combinations of one suite in this process (the sweep command): {combo: measurement}."""
    process = _start_process()
    measured = cls().measure_grid(combos)
    if os.environ.get(PROFILE_ENV):
        _append_profile(cls.__name__, process, measured)
    return measured


def measure_suites(classes):
    """Measure every served combination of each suite class in this one process: {class name: {combo: measurement}}.
    CUDA start, the GPU warm-up, imports and kernel loading are paid once for all of them."""
    process = _start_process()
    measured = {}
    for cls in classes:
        measured[cls.__name__] = cls().measure_grid()
        if os.environ.get(PROFILE_ENV):
            _append_profile(cls.__name__, process, measured[cls.__name__])
            process = {}
    return measured


def measure_tracked_tier(self):
    """setup_cache of every Tracked suite (the same function, hence one asv cache key): the whole tracked tier is
    measured in one process per commit, whichever tracked benchmark asv runs first. GREYHOUND_BENCH_CLASSES (class
    names, comma-separated) limits it to those suites; the others' benchmarks then read n/a."""
    only = {name.strip() for name in os.environ.get(CLASSES_ENV, "").split(",") if name.strip()}
    return measure_suites([cls for cls in suites("tracked") if not only or cls.__name__ in only])


_VARIANT = re.compile(r"^(?P<base>[A-Za-z0-9_.-]+)\[(?P<options>[^\[\]]*)\]$")


def split_variant(provider):
    """A tuning variant `greyhound[block_l=64,warps=8]` -> ('greyhound', {'block_l': '64', 'warps': '8'}); any
    other provider -> (provider, {}). ValueError for a malformed option list or a key given twice."""
    match = _VARIANT.match(provider)
    if match is None:
        if "[" in provider or "]" in provider:
            raise ValueError(f"provider {provider!r}: a tuning variant is written NAME[key=value,...]")
        return provider, {}
    options = {}
    for item in match["options"].split(","):
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ValueError(f"provider {provider!r}: expected key=value options, got {item!r}")
        if key.strip() in options:  # else the last would win, under a label naming both
            raise ValueError(f"provider {provider!r}: key {key.strip()!r} given twice")
        options[key.strip()] = value.strip()
    if not match["base"].startswith("greyhound"):
        raise ValueError(f"provider {provider!r}: only greyhound providers take tuning options")
    return match["base"], options


def greyhound_op(name):
    """greyhound's public `name` for a greyhound provider; NotImplementedError (asv: n/a) where the commit under
    test predates it, so a history run over older commits skips the new kernel instead of failing."""
    import greyhound
    try:
        return getattr(greyhound, name)
    except (AttributeError, ImportError) as err:
        raise NotImplementedError(f"greyhound at this commit has no {name} ({err})") from None


def work_key(mode, values):
    """The key of a (mode, shape values) in a time benchmark's `work` attribute (read by tools.export)."""
    return "|".join(map(str, (mode, *values)))


def dtype_bytes(dtype):
    return DTYPES[dtype].itemsize


def selection_regexes(classes):
    """asv `-b` regexes selecting exactly the combinations this machine serves in `classes` (one per class): asv
    forks a process for every selected combination, skipped ones included, and the union grid has many."""
    regexes = []
    for cls in classes:
        combos = "|".join(re.escape("(" + ", ".join(map(repr, combo)) + ")") for combo in cls.served_combos())
        if combos:
            prefix = re.escape(f"{cls.__module__.split('.', 1)[-1]}.{cls.__name__}.")
            regexes.append(f"^{prefix}(?:time|track_peakmem)_{cls.kernel_name}(?:{combos})$")
    return regexes


def suites(tier=None):
    """Every suite class of this package (imported here), or those of one tier, by name."""
    for module in pkgutil.iter_modules([os.path.dirname(__file__)]):
        importlib.import_module(f"{__package__}.{module.name}")
    found = {cls.__name__: cls for cls in _subclasses(KernelSuite) if cls.__module__.startswith(f"{__package__}.")}
    return [found[name] for name in sorted(found) if tier in (None, found[name].tier)]


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _make_benchmark(prefix, cls):
    """A fresh function per class, so one class's attributes (x_name, kernel_name) never relabel another's."""
    if prefix == "time_":
        def benchmark(self, measured, *params):
            self.replay_sample()
    else:
        def benchmark(self, measured, *params):
            return self.recorded_peak_memory()
    benchmark.__name__ = prefix + cls.kernel_name
    benchmark.__qualname__ = f"{cls.__qualname__}.{benchmark.__name__}"
    return benchmark


def _synced_since(t0):
    if ON_GPU:
        torch.cuda.synchronize()
    return time.perf_counter() - t0


def _append_profile(suite, process, measured):
    with open(os.environ[PROFILE_ENV], "a") as f:
        f.write(json.dumps({"suite": suite, "process": process, "time": time.time(),
                            "combos": [{"combo": list(map(str, combo)), "phases": m["phases"],
                                        "p50": statistics.median(m["samples"]) if m["samples"] else None,
                                        "error": m["error"], "skipped": m["skipped"], "gpu": m.get("gpu")}
                                       for combo, m in measured.items()]}) + "\n")
