"""Regression gate on asv results: each tracked series judged against its own measured noise, peers as controls.

    python -m tools.gate BASE HEAD                 # exit 1 when a greyhound series got slower (or bigger)
    python -m tools.gate --evaluate                # false-alarm and sensitivity rates from the results history

asv's own test (`asv continuous`: a global --factor, then a Mann-Whitney test over the samples of one process per
side) sees only the spread inside a process; on the H200 the spread between processes is larger, so identical code
was flagged. This gate reads the results asv already wrote (`asv run BASE^! HEAD^!` or `asv continuous`) and decides
per series (benchmark x parameter combination) of the tracked tier, on one machine:

* the change is r = ln(median_HEAD / median_BASE);
* the series' noise is sigma = the robust spread (1.4826 x MAD) of the successive differences of its log-medians
  over the history of that machine (every run of it but HEAD's, in commit-date order; every commit is a separate
  process, so this is the between-process spread, within-process noise included), never less than what the two
  runs' own samples give (standard error of each median); with fewer than MIN_HISTORY differences (a machine new to
  the results) the series' noise and toggle on the other machines of the --results directories stand in (the
  noisiest machine's with enough history), else a prior of PRIOR_BETWEEN per process is added to the samples' part;
  where BASE's samples are settled (they neither rose within the run nor spread beyond UNSETTLED_CV: `unsettled`),
  the noise and toggle come from the history's settled runs of the series alone (given MIN_HISTORY differences of
  them; borrowed noise likewise): a host-bound run of the old harness (its first samples the device's time, the
  rest the host's pace) is another measurement, not the series' noise. HEAD's state does not choose (a regression
  can unsettle HEAD); a HEAD whose samples rose within its run is judged on its first RISE_FIRST samples (the
  device's time, before the host fell behind), and the report says so. With BASE unsettled the whole history counts;
* a series regressed when r > max(Z x sigma, FLOOR, FLOOR_SECONDS, toggle) (memory: FLOOR_MEMORY and 1 MiB), i.e.
  beyond Z standard deviations of its own A/A differences and beyond a minimum effect, relative and absolute: a
  few-µs call is launch latency, which differs by ~1.3 µs between H200 machines on unchanged code;
* toggle: the largest move the series made both ways over its last TOGGLE_WINDOW runs, min(largest rise, largest
  fall) of its log-medians. A bimodal series (a host-bound call reads host time on a slow host, GPU time on a fast
  one) has gone up by that much and come back on its own, which the MAD above, robust to exactly those jumps, does
  not see: the torch.compile'd causal_conv1d forward read 0.083 or 0.19 ms on unchanged code (5834995 -> b03d363,
  +134%, against a 3-sigma threshold of +82%). A single step (an improvement, or a regression) is a move one way
  only and widens nothing;
* drift control: the peers of a kernel (e.g. fla, torch.compile) do not change with a greyhound commit, so a peer of
  the same benchmark, mode and shape is the greyhound series' control. When the control moved beyond Z_CONTROL of
  its own standard deviations in the same direction as a greyhound series that moved beyond its threshold, the
  greyhound series is judged on r - r_control instead, and a move that the control explains is reported as drift,
  not as greyhound's regression. A control only explains: a greyhound series within its threshold is ok, and one
  faster beyond it is an improvement or drift, whatever its peers did (a host-bound peer jumps alone: on one H100,
  fla's causal_conv1d forward read 45.7% faster between two runs minutes apart, and the level greyhound series
  beside it read as a regression on r - r_control). When most controls moved together, or the
  machine's software (torch, triton, CUDA, driver, GPU) differs between the two runs, the report names it; so it
  does when the two commits were measured on different physical GPUs (`results/<machine>/gpus.csv`), where a
  kernel alone can move by more than its noise estimate (session 16: the unchanged Cheri megakernel read 5% faster
  on one H200 than on two others, with its torch.compile peer level).

What HEAD did not measure is never a pass: a series of the project's own that BASE measured and whose benchmark
failed at HEAD (asv's null) is reported FAILED and fails the gate (exit 1); one HEAD skipped (asv's NaN) or did not run
in an environment it ran is reported MISSING and the gate refuses (exit 2: run it at HEAD too). An environment HEAD
did not run at all is not compared. BASE and HEAD must be different commits: git refs or hashes, resolved by git
first (`git rev-parse`: a branch named `dbc9` is that branch), else, where git cannot resolve them, a hash prefix of
at least 4 hex digits matched in the results.

Benchmark versions: each --results directory's results are read against that directory's own benchmarks.json
(results of a version it does not describe are left out, as asv leaves them out), and each series carries the
version it was measured under. A benchmark BASE and HEAD measured under different versions (asv's hash of its code:
the benchmark itself changed, e.g. in a gate-scratch run) is never compared, nor is its history across versions used
for its noise; the report names those series ("N series not compared: ...", as asv compare marks them "x"). A
benchmark both measured under one version that benchmarks.json no longer describes is left out too (its parameters
and unit are not known) and named ("N benchmarks not compared: ..."). Versions are per asv environment. They
neither fail nor refuse the gate, and the exit status is that of the series compared (a benchmark of the project's
own that failed at HEAD still fails it).

Other projects' asv results: the `provider` param is found by name wherever it is among a benchmark's params; the
providers named by --own (default: greyhound's) are the project's own code and the others its peers (controls);
where none is greyhound's and --own is not given, every provider is judged as the project's own (a note says so); a
benchmark without a `provider` param is judged as the project's own code (there is no peer to control it), and when
no benchmark declares a `tier` every one is judged; each asv environment (python, requirements) is a series of its
own. Units: seconds take the FLOOR and FLOOR_SECONDS floors, bytes the memory floors, any other unit of a `track_`
benchmark FLOOR alone; lower is better for every unit (asv's convention). A result file that cannot be read is named
on stderr; when it is BASE's or HEAD's, or when the two runs share no series, the gate refuses (exit 2) rather than
pass on what is left; when they share no asv environment the refusal says so. --repo names the git repository of
the commits (default: the current directory; another project's results: its clone): refs resolve there, and
--evaluate finds its A/A pairs there (consecutive runs with an identical --code-path tree) and refuses (exit 2) where
it finds none, and exits 2 after its rates where a machine's pairs share no series (nothing compared); --slowdown,
--code-path and --history-size are --evaluate's and refused without it. A flagged series with fewer than MIN_HISTORY
differences of history rests on the PRIOR_BETWEEN prior, sized for a GPU; the report counts them.

Exit status: 0 no regression; 1 a regression, or a benchmark of the project's own that failed at HEAD; 2 bad
arguments, missing or unreadable results, series HEAD did not measure, nothing compared.
docs/benchmarking.md has the measured false-alarm and sensitivity rates (`--evaluate`).
"""
import argparse
import math
import random
import statistics
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from tools import is_finite_number
from tools.export import ExportError, git_commit, hash_prefix, load_benchmarks, load_results, stored_measurements
from tools.noise import history_noise, median_standard_error, read_gpus, robust_cv

Z = 3.0  # standard deviations of a series' own A/A differences
FLOOR = 0.015  # minimum effect for time series (1.5%) ...
FLOOR_SECONDS = 2e-6  # ... and 2 µs: cross_entropy_with_grad's no-op backward (unchanged code) read 4.0 µs on one
# H200 and 5.3 µs on another (ca623a2 -> f1d904e): launch latency, not the kernel
FLOOR_MEMORY = 0.01  # memory: 1% ...
FLOOR_MEMORY_BYTES = 2**20  # ... and 1 MiB
MIN_HISTORY = 3  # successive differences needed to trust a series' own noise estimate
TOGGLE_WINDOW = 12  # a series' last runs searched for a move made both ways
# Session 58: for a settled BASE, the noise and toggle of the settled runs alone. On the H200 history the
# host-bound runs had set causal_conv1d's greyhound backward at sigma 0.40 and a toggle of 0.63, so a x2 slowdown
# from 4735bed passed; judged on its settled runs the same slowdown is caught (docs/benchmarking.md).
SETTLED_HISTORY = True
HOST_BOUND_MAX_SECONDS = 2e-3  # a call this long is never host-bound here (a host queues one in at most ~1.5 ms)
UNSETTLED_CV = 0.03  # a run whose samples spread wider is unsettled (most series: 0.1-0.5%; the lm-head GEMMs 3-6%)
TOGGLE_MARGIN = 1.0  # standard deviations of the series' noise allowed past the move it made both ways
PRIOR_BETWEEN = 0.01  # between-process noise per run assumed where the history is too short (1%)
CONTROL_MAJORITY = 0.5  # this share of controls moving the same way is machine or environment drift
Z_CONTROL = 2.0  # a control beyond this many of its standard deviations has moved (and explains what moved with it)
OWN_PROVIDERS = ("greyhound",)  # provider names (prefixes) judged as the project's own code; --own replaces them
ENVIRONMENT_KEYS = ("gpu_name", "gpu_driver", "cuda", "torch", "triton", "python")
RISE_FIRST, RISE_LAST, RISE_MIN = 3, 10, 0.10  # rise_within_run: the first 3 samples against the last 10, beyond 10%


class GateError(Exception):
    """Bad arguments or missing results (exit status 2)."""


@dataclass(frozen=True)
class Series:
    benchmark: str
    combo: tuple  # asv's parameter reprs
    env: str = ""  # asv's environment name: each environment (python, requirements) is a series of its own
    provider_index: int = 0  # where the benchmark's `provider` param is in the combination (-1: it has none)
    own: tuple = OWN_PROVIDERS  # the provider names (prefixes) that are the project's own code
    version: object = None  # the benchmark's version (asv's hash of its code) the series was measured under

    @property
    def has_provider(self):
        return 0 <= self.provider_index < len(self.combo)

    @property
    def provider(self):
        if not self.has_provider:
            return "default"
        return self.combo[self.provider_index].strip("'\"")

    @property
    def is_greyhound(self):
        """Judged as the project's own code (a regression fails the gate), not a peer used as a control: the
        providers named by `own` (greyhound's; another project's with --own), and every series of a benchmark without
        a `provider` param."""
        return not self.has_provider or self.provider.startswith(self.own)

    def without_provider(self):
        """The combination less its provider: what a peer of the same benchmark, mode and shape shares with it."""
        return self.combo[:self.provider_index] + self.combo[self.provider_index + 1:] if self.has_provider \
            else self.combo

    def label(self):
        """asv's full name and the combination: two modules' `time_sum` are two series."""
        return f"{self.benchmark}({', '.join(self.combo)})"

    def unversioned(self):
        """The series whatever version of its benchmark measured it."""
        return replace(self, version=None)


@dataclass
class Run:
    """One commit's results on one machine: per series the median and the samples."""
    commit: str
    date: float
    params: dict
    values: dict = field(default_factory=dict)  # Series -> (median, samples or None, unit: "seconds", "bytes", ...)
    failed: set = field(default_factory=set)  # series whose benchmark failed in this run (asv's null result)
    skipped: set = field(default_factory=set)  # series whose benchmark skipped itself in this run (asv's NaN)
    unjudged: set = field(default_factory=set)  # series measured at 0 or below (0 bytes of peak memory): no ratio
    versions: dict = field(default_factory=dict)  # (benchmark, environment) -> the version its results in this run
    # were measured under, where the benchmarks.json of their results directory describes it; ("other", version) where
    # it does not (another project's runs hold several environments, each measured at its own time)


@dataclass
class Verdict:
    series: Series
    status: str  # regression, drift, improvement, ok
    change: float  # r = ln(head/base)
    threshold: float
    sigma: float
    history: int  # successive differences behind sigma
    control: str = ""
    control_change: float = float("nan")
    note: str = ""  # what the samples themselves say (rise_within_run), for a reader; never changes the status
    noise_from: str = ""  # the other machine whose history gave the noise (this machine's was short), if one did


@dataclass
class Report:
    verdicts: list
    drift: str = ""
    environment: str = ""
    failed: list = field(default_factory=list)  # the project's series BASE measured whose benchmark failed at HEAD
    missing: list = field(default_factory=list)  # (series, why) BASE measured that HEAD did not: "not run", "skipped"
    version_changed: list = field(default_factory=list)  # series left out: BASE and HEAD measured different versions
    # of their benchmark (its code changed), so their figures are not the same measurement
    stale: list = field(default_factory=list)  # (benchmark, environment) both measured under a version their
    # benchmarks.json no longer describes: left out (its parameters and unit are not known), named in the report

    @property
    def regressions(self):
        return [v for v in self.verdicts if v.status == "regression"]


# --- reading ------------------------------------------------------------------------------------------------------
def load_runs(results_dirs, machine=None, tier="tracked", warnings=None, own=OWN_PROVIDERS, metas=None):
    """{commit: Run} of one machine from asv results directories, tracked-tier series only (tier=None: all; results
    whose benchmarks declare no tier at all, another project's, are all judged). Each directory's results are read
    against its own benchmarks.json, and each series carries the benchmark version it was measured under (results of
    a version their benchmarks.json does not describe are left out, as asv leaves them out). A file or benchmark entry
    that cannot be read is left out and named in `warnings` (a list, when given) as "path: problem". `own`: the
    provider names (prefixes) that are the project's own code. `metas` (a dict, when given) receives
    {(benchmark, version): its benchmarks.json entry}."""
    runs, machines = {}, set()
    warnings = [] if warnings is None else warnings
    metas = {} if metas is None else metas
    directories = []
    for results_dir in map(Path, results_dirs):
        try:
            directories.append((results_dir, load_benchmarks(results_dir), _machine_dirs(results_dir)))
        except ExportError as err:
            raise GateError(str(err)) from None
        except OSError as err:
            raise GateError(f"cannot list {results_dir}: {err}") from None
    # another project's benchmarks declare no tiers: then every benchmark is tracked
    tiers = any(declares_tiers(benchmarks) for _, benchmarks, _ in directories)
    for results_dir, benchmarks, machine_dirs in directories:
        for machine_dir in machine_dirs:
            if machine and machine_dir.name != machine:
                continue
            for path in sorted(machine_dir.glob("*.json")):
                if path.name == "machine.json":
                    continue
                try:
                    result = load_results(path, machine_dir.name)
                except Exception as err:  # noqa: BLE001 - named in the warnings; the gate uses the rest
                    warnings.append(f"{path}: cannot read results ({type(err).__name__}: {err})")
                    continue
                machines.add(machine_dir.name)
                run = runs.setdefault(result.commit_hash, Run(result.commit_hash, result.date or 0,
                                                              dict(result.params or {})))
                _add_values(run, result, benchmarks, tier if tiers else None, path, warnings, tuple(own), metas)
    if len(machines) > 1:
        raise GateError(f"results of several machines {sorted(machines)}: choose one with --machine")
    try:
        gpus = read_gpus(results_dirs, machines)
    except ValueError as err:  # which GPU ran which commit only adds a line to the report
        warnings.append(f"{err}; physical GPUs not compared")
        gpus = {}
    for commit, run in runs.items():
        if commit in gpus:
            run.params["gpu_uuid"] = gpus[commit]
    return runs


def _add_values(run, result, benchmarks, tier, path="", warnings=None, own=OWN_PROVIDERS, metas=None):
    for name in result.get_all_result_keys():
        meta = benchmarks.get(name)
        if meta is None or (tier and meta.get("tier") != tier):
            continue
        try:
            param_names, combos, values, samples = stored_measurements(result, name, meta)
        except Exception as err:  # noqa: BLE001 - a malformed entry is named; the rest is judged
            if warnings is not None:
                warnings.append(f"{path}: benchmark {name}: cannot read ({type(err).__name__}: {err})")
            continue
        if values is None:  # an older definition or parameter grid of the benchmark: not the same measurement
            run.versions[(name, result.env_name or "")] = ("other", result.benchmark_version.get(name))
            continue
        version = meta.get("version")
        run.versions[(name, result.env_name or "")] = version
        if metas is not None:
            metas[(name, version)] = meta
        unit = str(meta.get("unit") or "seconds")
        provider_index = list(param_names).index("provider") if "provider" in param_names else -1
        for combo, value, combo_samples in zip(combos, values, samples):
            series = Series(name, tuple(combo), result.env_name or "", provider_index, own, version)
            if value is None:  # asv writes null for a benchmark that failed, NaN for one that skipped itself
                run.failed.add(series)
            elif isinstance(value, float) and math.isnan(value):
                run.skipped.add(series)
            elif is_finite_number(value) and value > 0:
                clean = [s for s in combo_samples if is_finite_number(s) and s > 0] \
                    if isinstance(combo_samples, list) else []
                run.values[series] = (value, clean or None, unit)
            elif is_finite_number(value):  # measured, but no log-ratio to judge (e.g. a backward with 0 bytes)
                run.unjudged.add(series)


# --- statistics ---------------------------------------------------------------------------------------------------
def _both_ways(logs):
    """min(largest rise, largest fall) of a sequence: the largest move it made both ways."""
    rise = fall = 0.0
    low = high = logs[0]
    for value in logs[1:]:
        rise, fall = max(rise, value - low), max(fall, high - value)
        low, high = min(low, value), max(high, value)
    return min(rise, fall)


def toggle_range(series, history, base):
    """The largest move both ways (min(largest rise, largest fall)) the series' log-medians made over its last
    TOGGLE_WINDOW runs of `history` (runs in commit order) up to `base`'s, that any one of those runs left out still
    shows: a series that has sat in another mode in two runs or more has toggled, one lone outlying run (a spike that
    came back, a regression and its revert) has not; 0 with fewer than MIN_HISTORY + 1 runs. (One spike in
    cross_entropy_with_grad's forward, whose noise is 0.34%, widened its threshold to +10.8% for twelve runs.)"""
    logs = [math.log(run.values[series][0]) for run in history
            if series in run.values and (run.date, run.commit) <= (base.date, base.commit)][-TOGGLE_WINDOW:]
    if len(logs) <= MIN_HISTORY:
        return 0.0
    return min(_both_ways(logs[:i] + logs[i + 1:]) for i in range(len(logs)))


def settled_runs(series, history):
    """The runs of `history` whose samples of `series` are settled (`unsettled`), when they give MIN_HISTORY
    differences of it; None otherwise."""
    settled = [run for run in history if series in run.values and not unsettled(run.values[series][1])]
    return settled if history_noise(series, settled)[1] >= MIN_HISTORY else None


def other_machine_noise(runs_by_machine):
    """{(benchmark, combo): (sigma, toggle, machine, settled sigma, settled toggle)} over other machines' runs
    ({machine: {commit: Run}}): per series the largest sigma (history_noise) among machines with at least MIN_HISTORY
    differences of it, with the largest toggle (toggle_range up to that machine's last run) of those machines; the
    same over their settled runs alone (settled_runs; None where no machine has enough), which a settled pair
    borrows. What a machine new to the results (fewer than MIN_HISTORY differences of its own) borrows: the same
    benchmark, combination and code on another machine, whatever its environment name and benchmark version."""
    noise = {}
    for machine, runs in sorted(runs_by_machine.items()):
        history = history_for(runs)
        if not history:
            continue
        for series in {series for run in history for series in run.values}:
            sigma, n = history_noise(series, history)
            if n < MIN_HISTORY:
                continue
            key, toggle = (series.benchmark, series.combo), toggle_range(series, history, history[-1])
            settled = settled_runs(series, history)
            quiet = (history_noise(series, settled)[0], toggle_range(series, settled, settled[-1])) if settled else None
            old = noise.get(key)
            if old is None:
                noise[key] = (sigma, toggle, machine, *(quiet or (None, None)))
                continue
            if quiet and old[3] is not None:
                quiet = (max(old[3], quiet[0]), max(old[4], quiet[1]))
            noise[key] = (max(old[0], sigma), max(old[1], toggle), machine if sigma > old[0] else old[2],
                          *(quiet or old[3:]))
    return noise


def series_threshold(series, base, head, history, absolute_floors=True, borrowed=None):
    """(threshold on r, sigma, history size) of one series between two runs. `absolute_floors`: FLOOR_SECONDS and
    FLOOR_MEMORY_BYTES apply (greyhound's GPU suite; sized for a GPU's launch latency and allocator, they would hide a
    CPU project's 0.1 µs benchmark slowing tenfold), else the relative floors alone. `borrowed`: other_machine_noise's
    {(benchmark, combo): (sigma, toggle, machine)}, used where this machine's history of the series is short."""
    _, base_samples, unit = base.values[series]
    head_samples = head.values[series][1]
    sampled = math.hypot(median_standard_error(base_samples), median_standard_error(head_samples))
    settled_base = SETTLED_HISTORY and not unsettled(base_samples)
    if settled_base:  # (HEAD's state does not matter: a regression can itself unsettle HEAD; see judge)
        history = settled_runs(series, history) or history
    sigma, n = history_noise(series, history)
    toggle = toggle_range(series, history, base)
    other = (borrowed or {}).get((series.benchmark, series.combo)) if n < MIN_HISTORY else None
    if n >= MIN_HISTORY:
        sigma = max(sigma, sampled)
    elif other is not None:  # a machine new to the results: the series' noise on the machines that have a history
        quiet = settled_base and len(other) > 3 and other[3] is not None  # (their settled runs, for a settled BASE)
        sigma, toggle = max(other[3] if quiet else other[0], sampled), max(toggle, other[4] if quiet else other[1])
    else:
        sigma = math.hypot(sampled, math.sqrt(2) * PRIOR_BETWEEN)
    if unit == "bytes":
        floor = max(FLOOR_MEMORY, math.log1p(FLOOR_MEMORY_BYTES / base.values[series][0]) if absolute_floors else 0)
    elif unit == "seconds":
        floor = max(FLOOR, math.log1p(FLOOR_SECONDS / base.values[series][0]) if absolute_floors else 0)
    else:  # a track_ benchmark's own unit: the relative floor only (asv's convention: lower is better)
        floor = FLOOR
    # (a toggle is read off noisy runs: the next visit to the other mode can land TOGGLE_MARGIN sigma past it)
    return max(Z * sigma, floor, toggle + TOGGLE_MARGIN * sigma if toggle else 0.0), sigma, n


def _times(samples):
    """Whether `samples` are enough for rise_within_run and every one a finite positive time."""
    return _enough_to_rise(samples) and all(is_finite_number(s) and s > 0 for s in samples)


def declares_tiers(metas):
    """Whether any of these benchmarks.json entries declares a tier (greyhound's suite: the absolute floors apply)."""
    return any("tier" in meta for meta in metas.values())


def unsettled(samples):
    """Whether a run's samples look like a run in another mode: they rose within the run (rise_within_run, or its last
    RISE_FIRST samples beyond RISE_MIN above its first: the host fell behind late) or spread wide (robust CV above
    UNSETTLED_CV). Too few samples, or any that is not a finite positive time, tell nothing:
    unsettled (the whole history counts, as before the rule)."""
    if not _times(samples):
        return True
    late = statistics.median(samples[-RISE_FIRST:]) / statistics.median(samples[:RISE_FIRST]) - 1  # (fell behind late)
    return bool(rise_within_run(samples)) or late > RISE_MIN or robust_cv(samples) > UNSETTLED_CV


def device_part(base_samples, head_samples):
    """HEAD's level where its samples rose within its run and BASE's are settled: the median of its first RISE_FIRST
    samples, taken before the host fell behind (the device's time; a host-bound run of the old harness); else None.
    Only for calls under HOST_BOUND_MAX_SECONDS: a longer call's rise is the GPU's own (the lm-head GEMMs' power-cap
    waves read 45 -> 53 ms within one process), and its first samples would read faster than the code is."""
    if not SETTLED_HISTORY or unsettled(base_samples) or not _times(head_samples) or not rise_within_run(head_samples):
        return None
    first = statistics.median(head_samples[:RISE_FIRST])
    return first if first < HOST_BOUND_MAX_SECONDS else None


def _enough_to_rise(samples):
    """Whether a run has the samples rise_within_run reads (a memory series, or an old result file, has none)."""
    return bool(samples) and len(samples) >= RISE_FIRST + RISE_LAST


def rise_within_run(samples):
    """(first, last, rise) when a run's samples, in the order they were taken, end more than RISE_MIN above where they
    started (median of the last RISE_LAST against the median of the first RISE_FIRST), else None. The harness times its
    samples back to back behind a head start (a fixed ~1 ms until session 51, since then sized to the host's pace): a
    host slower than the GPU keeps up for the first few samples, then every sample reads the host's time (session 37: newton_schulz (16, 1024, 1024) read 0.90 ms for four samples, then
    1.08-1.19, on unchanged device code); a clock falling as the GPU heats reads the same way, more gently."""
    if not _enough_to_rise(samples):
        return None
    first, last = statistics.median(samples[:RISE_FIRST]), statistics.median(samples[-RISE_LAST:])
    rise = last / first - 1
    return (first, last, rise) if rise > RISE_MIN else None


def controls_of(series, base, head):
    """The peers of the same benchmark, mode and shape measured in both runs."""
    return [other for other in base.values
            if other.benchmark == series.benchmark and other.without_provider() == series.without_provider()
            and other.env == series.env and not other.is_greyhound and other in head.values]


# --- the gate -----------------------------------------------------------------------------------------------------
def judge(base, head, history, absolute_floors=True, borrowed=None):
    """Compare two runs of one machine; `history` are the runs (in commit order) that calibrate each series' noise
    (`absolute_floors`, `borrowed`: series_threshold's)."""
    verdicts, control_moves, drifted = [], {}, {}
    change = {}
    device = {}  # series judged on HEAD's first samples (device_part): its samples rose within its run
    for series in sorted(set(base.values) & set(head.values), key=lambda s: (s.label(), s.env)):
        head_value = head.values[series][0]
        if series.is_greyhound and head.values[series][2] == "seconds":
            first = device_part(base.values[series][1], head.values[series][1])
            if first is not None:
                device[series], head_value = (head_value, first), first
        r = math.log(head_value / base.values[series][0])
        threshold, sigma, n = series_threshold(series, base, head, history, absolute_floors, borrowed)
        change[series] = (r, threshold, sigma, n)
        if not series.is_greyhound:
            control_moves[series] = r if abs(r) > Z_CONTROL * sigma else 0.0
            drifted[series] = r if abs(r) > threshold else 0.0
    for series, (r, threshold, sigma, n) in change.items():
        verdict = Verdict(series, "ok", r, threshold, sigma, n)
        if n < MIN_HISTORY and (series.benchmark, series.combo) in (borrowed or {}):
            verdict.noise_from = borrowed[(series.benchmark, series.combo)][2]
        # a control explains a move greyhound made beyond its own threshold; it never convicts a level series (a
        # host-bound peer can jump alone: fla's causal_conv1d forward read 45.7% faster on unchanged code)
        controls = controls_of(series, base, head) if series.is_greyhound and abs(r) > threshold else []
        moved = [c for c in controls if control_moves.get(c, 0.0) * r > 0]
        if moved:
            control = moved[0]
            r_c, t_c, sigma_c, _ = change[control]
            verdict.control, verdict.control_change = control.provider, r_c
            relative, relative_threshold = r - r_c, max(Z * math.hypot(sigma, sigma_c), threshold)
            if r > threshold:
                verdict.status = "regression" if relative > relative_threshold else "drift"
            else:  # faster beyond the threshold: a peer faster still explains it (drift), never makes it a regression
                verdict.status = "improvement" if relative < -relative_threshold else "drift"
        elif r > threshold:
            verdict.status = "regression" if series.is_greyhound else "drift"
        elif r < -threshold:
            verdict.status = "improvement" if series.is_greyhound else "drift"
        if series in device:
            median, first = device[series]
            verdict.note = (f"HEAD's samples rose within its run (median {median * 1e3:.4g} ms): judged on its first "
                            f"{RISE_FIRST} ({first * 1e3:.4g} ms), taken before the host fell behind the device")
        elif verdict.status == "regression":
            rise, base_samples = rise_within_run(head.values[series][1]), base.values[series][1]
            base_read = _enough_to_rise(base_samples)
            if rise and not (base_read and rise_within_run(base_samples)):
                first, last, step = rise
                against = ", BASE's did not" if base_read else ""  # (BASE without samples: nothing to compare)
                verdict.note = (f"HEAD's samples rose {step:+.0%} within its run ({first * 1e3:.4g} -> {last * 1e3:.4g} "
                                f"ms{against}): a host that fell behind the GPU, or a falling clock, reads so on "
                                f"unchanged code; its first samples are the device's time")
        verdicts.append(verdict)
    # a series of the project's own that BASE measured at 0 (0 bytes of peak memory) has no ratio: beyond the absolute
    # floor at HEAD it grew from nothing, which is a regression, not a series set aside
    for series in sorted(base.unjudged & set(head.values), key=lambda s: (s.label(), s.env)):
        value, _, unit = head.values[series]
        floor = {"bytes": FLOOR_MEMORY_BYTES, "seconds": FLOOR_SECONDS}.get(unit, 0) if absolute_floors else 0
        if series.is_greyhound and value > floor:
            verdicts.append(Verdict(series, "regression", math.inf, 0.0, 0.0, 0,
                                    note=f"BASE measured 0, HEAD {value:.4g} {unit}: it grew from nothing"))
    report = Report(verdicts)
    # a benchmark BASE and HEAD measured under different versions (its code changed) is never compared: its series
    # are named instead (asv compare marks them "x", not comparable)
    shared = set(base.versions) & set(head.versions)
    stale = {key for key in shared if isinstance(base.versions[key], tuple) and isinstance(head.versions[key], tuple)}
    changed = {key for key in shared - stale if base.versions[key] != head.versions[key]}
    report.version_changed = sorted({s.unversioned() for run in (base, head) for s in run.values
                                     if (s.benchmark, s.env) in changed}, key=lambda s: (s.label(), s.env))
    # (under one such version or two different ones: either way nothing of theirs is read, and they are named)
    report.stale = sorted(stale)
    # the project's series BASE measured and HEAD did not: failed there (a benchmark that crashes is not judged
    # faster), or not run in an environment HEAD ran (a partial run cannot vouch for what it left out; an environment
    # HEAD did not run at all is simply not compared)
    head_envs = {series.env for series in set(head.values) | head.failed | head.skipped | head.unjudged}
    head_failed = {series.unversioned() for series in head.failed}
    for series in sorted(set(base.values) - set(head.values) - head.unjudged, key=lambda s: (s.label(), s.env)):
        if series.is_greyhound and series.unversioned() in head_failed:
            report.failed.append(series)
        elif (series.benchmark, series.env) in changed:
            continue  # not comparable; named in report.version_changed
        elif series.is_greyhound and series.env in head_envs:
            report.missing.append((series, "skipped" if series in head.skipped else "not run"))
    moves = list(drifted.values())
    for direction, word in ((1, "slower"), (-1, "faster")):
        together = [m for m in moves if m * direction > 0]
        if moves and len(together) >= 2 and len(together) >= CONTROL_MAJORITY * len(moves):
            report.drift = (f"{len(together)} of {len(moves)} control series (peers) moved {word} by a median "
                            f"{math.expm1(statistics.median(together)):+.1%}: machine or environment drift")
    differing = [f"{k} {base.params.get(k)!s} -> {head.params.get(k)!s}" for k in ENVIRONMENT_KEYS
                 if base.params.get(k) != head.params.get(k)]
    gpu_base, gpu_head = base.params.get("gpu_uuid"), head.params.get("gpu_uuid")
    if gpu_base and gpu_head and gpu_base != gpu_head:
        differing.append(f"physical GPU {gpu_base} -> {gpu_head} (a series may move by more than its noise between "
                         "GPUs; measure both commits on one GPU, e.g. asv continuous, to separate the code from the GPU)")
    if differing:
        report.environment = "environment differs: " + "; ".join(differing)
    return report


def history_for(runs, exclude=()):
    """The runs that calibrate the noise: every run of the machine except those in `exclude`, in commit order."""
    return sorted((run for commit, run in runs.items() if commit not in exclude), key=lambda r: (r.date, r.commit))


def unreadable_of(warnings, commit):
    """The "path: problem" lines of `warnings` about result files of `commit` (a hash or its prefix; asv names a
    commit's file by its first 8 hex digits)."""
    return [line for line in warnings if Path(line.split(": ", 1)[0]).name.startswith(commit[:8])]


def _machine_dirs(results_dir):
    """The machine folders of one asv results directory (OSError when it cannot be listed)."""
    return sorted(p for p in Path(results_dir).iterdir() if p.is_dir() and not p.name.startswith("."))


def machine_names(results_dirs):
    """The asv machines (results folders holding result files) of `results_dirs`, sorted."""
    names = set()
    for results_dir in results_dirs:
        try:
            names.update(p.name for p in _machine_dirs(results_dir)
                         if any(f.name != "machine.json" for f in p.glob("*.json")))
        except OSError as err:
            raise GateError(f"cannot list {results_dir}: {err}") from None
    return sorted(names)


def runs_of_pair(results_dirs, base, head, tier="tracked", warnings=None, own=OWN_PROVIDERS, metas=None, repo="."):
    """load_runs for judging BASE -> HEAD without --machine: the results' one machine, or where they hold several,
    the one machine that measured both commits (a GPU's figures are only ever compared with the same GPU's); an error
    naming each machine's share where none or several did. Each machine's results are read once."""
    names = machine_names(results_dirs)
    if len(names) <= 1:
        return load_runs(results_dirs, tier=tier, warnings=warnings, own=own, metas=metas)
    both, have = [], []
    for name in names:
        machine_warnings = []
        runs = load_runs(results_dirs, name, tier=tier, warnings=machine_warnings, own=own, metas=metas)
        found = []
        for ref in (base, head):
            try:
                found.append(resolve(runs, ref, repo))
            except GateError:
                pass
        have.append(f"{name}: {len(found)} of the two")
        if len(found) == 2:
            both.append((name, runs, machine_warnings))
    if len(both) == 1:
        name, runs, machine_warnings = both[0]
        print(f"tools.gate: machine {name} (the only one of {', '.join(names)} with both commits)", file=sys.stderr)
        if warnings is not None:
            warnings.extend(machine_warnings)
        return runs
    raise GateError(f"results of several machines ({'; '.join(have)}): "
                    + ("choose one with --machine" if both else f"none measured both {base} and {head}"))


def resolve(runs, ref, repo=".", unreadable=(), machine=None):
    """A git ref or commit hash -> the full hash of a run in `runs`. git resolves `ref` first (`git rev-parse`: a
    branch named `dbc9` is that branch, as git reads it); only where git cannot resolve it (no repository, another
    project's commits) is it matched as a hash prefix of at least 4 hex digits. The error names the result files that
    could not be read (`unreadable`: "path: problem" lines), one of which may hold it."""
    where = f"machine {machine}" if machine else "this machine"
    have = f"have {len(runs)} commits: {', '.join(sorted(c[:8] for c in runs)[:12])}{'...' if len(runs) > 12 else ''}"
    if not (ref or "").strip():
        raise GateError(f"commit {ref!r}: expected a git ref or a hash prefix, got an empty string")
    full = git_commit(ref, repo)
    if full is not None:
        if full in runs:
            return full
        what = f"{ref!r} (git resolves it to {full[:12]})"
    else:
        try:
            prefix = hash_prefix(ref, "commit")
        except ValueError as err:
            raise GateError(f"{err} ({where}: {have})") from None
        matches = [c for c in runs if c.startswith(prefix)]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise GateError(f"commit {ref!r} is ambiguous on {where}: {', '.join(sorted(m[:12] for m in matches))}")
        what = repr(ref)
    hint = unreadable_of(unreadable, full or ref.lower()) or list(unreadable)
    raise GateError(f"no results for {what} on {where} ({have})"
                    + (f"; {len(hint)} result file(s) could not be read: {'; '.join(hint[:3])}" if hint else ""))


def borrowed_noise(runs, base, head, history, results_dirs, tier, own):
    """other_machine_noise of the --results directories' other machines, where a series BASE and HEAD share has fewer
    than MIN_HISTORY differences of history on this machine (a machine new to the results); None otherwise."""
    shared = set(runs[base].values) & set(runs[head].values)
    if all(history_noise(series, history)[1] >= MIN_HISTORY for series in shared):
        return None
    return noise_of_other_machines(results_dirs, {runs[base].params.get("machine"), runs[head].params.get("machine")},
                                   tier, own)


def noise_of_other_machines(results_dirs, here, tier, own):
    """other_machine_noise of the --results directories' machines not in `here` (each read as best it can)."""
    others = {name: load_runs(results_dirs, name, tier=tier, warnings=[], own=own)
              for name in machine_names(results_dirs) if name not in here}
    return other_machine_noise(others)


def check_machine(results_dirs, machine):
    """GateError when `results_dirs` hold no result files, or none of --machine `machine` (naming the machines they
    do hold)."""
    for results_dir in map(Path, results_dirs):  # first what load_runs says of a folder that is not asv's
        try:
            load_benchmarks(results_dir)
        except ExportError as err:
            raise GateError(str(err)) from None
    names = machine_names(results_dirs)
    where = ", ".join(map(str, results_dirs))
    if not names:
        raise GateError(f"no asv result files in {where} (expected <machine>/<commit>-<env>.json files)")
    if machine is not None and machine not in names:
        raise GateError(f"--machine {machine!r}: no results of that machine in {where}; the machines there: "
                        f"{', '.join(names)}")
    return names


def version_changed_line(report, shown=5):
    """The line naming the series left out because BASE and HEAD measured different versions of their benchmark
    (count, then the first `shown` names), or ''."""
    changed = report.version_changed
    if not changed:
        return ""
    several_envs = len({v.series.env for v in report.verdicts} | {series.env for series in changed}) > 1
    names = ", ".join(series.label() + (f" [{series.env}]" if several_envs else "")
                      for series in changed[:shown]) + (
        f", ... ({len(changed) - shown} more)" if len(changed) > shown else "")
    benchmarks = sorted({series.benchmark for series in changed})
    return (f"{len(changed)} series not compared: BASE and HEAD measured different versions of "
            f"{'its benchmark' if len(benchmarks) == 1 else f'their {len(benchmarks)} benchmarks'} (the benchmark's "
            f"code changed; measure both commits under one version to compare them): {names}")


def stale_line(report, shown=5):
    """The line naming the benchmarks left out because both runs measured them under a version their benchmarks.json
    no longer describes (asv leaves such results out too), or ''."""
    stale = report.stale
    if not stale:
        return ""
    several_envs = len({env for _, env in stale}) > 1
    names = ", ".join(name + (f" [{env}]" if several_envs else "") for name, env in stale[:shown]) + (
        f", ... ({len(stale) - shown} more)" if len(stale) > shown else "")
    return (f"{len(stale)} benchmark{'s' if len(stale) > 1 else ''} not compared: BASE and HEAD measured "
            f"{'it' if len(stale) == 1 else 'them'} under a version of the benchmark that benchmarks.json no longer "
            f"describes (its parameters and unit unknown; `asv run --bench just-discover` rewrites benchmarks.json "
            f"from the code, then measure both commits again to compare): {names}")


def short_history_line(report, least=MIN_HISTORY):
    """The line counting the flagged series whose noise came from fewer than `least` successive differences: their
    threshold rests mostly on the prior, which suits a GPU's run-to-run noise, not a noisy shared runner."""
    short = [v for v in report.verdicts if v.status != "ok" and v.history < least and not v.noise_from]
    if not short:
        return ""
    return (f"{len(short)} of the series flagged above had fewer than {least} successive differences of history "
            f"behind their noise (\"from N diffs\"): their noise adds a prior of {PRIOR_BETWEEN:.0%} a run, "
            "sized for a GPU's run-to-run noise; on a noisier machine (a shared CI runner) "
            "judge them once its history is longer")


def format_report(report, base, head, scope="tracked"):
    """The report's lines; `scope` qualifies the series counted ("tracked" for the tracked tier, "" where every
    benchmark is judged: --all-tiers, or another project's benchmarks that declare no tier)."""
    lines = [f"tools.gate: {base[:8]} -> {head[:8]}: {len(report.verdicts)} {scope + ' ' if scope else ''}series"]
    several_envs = len({v.series.env for v in report.verdicts}) > 1
    for verdict in sorted(report.verdicts, key=lambda v: (v.status, -v.change)):
        if verdict.status == "ok":
            continue
        control = (f"  control {verdict.control} {math.expm1(verdict.control_change):+.1%}"
                   if verdict.control else "")
        lines.append(f"  {verdict.status.upper():11s} {math.expm1(verdict.change):+7.2%}  (threshold "
                     f"{math.expm1(verdict.threshold):.2%}, noise {verdict.sigma:.2%} from "
                     + (f"machine {verdict.noise_from}'s history" if verdict.noise_from else f"{verdict.history} diffs")
                     + f")  {verdict.series.label()}{control}"
                     + (f"  [{verdict.series.env}]" if several_envs else ""))
        if verdict.note:
            lines.append(f"      {verdict.note}")
    for status, series, why in ([("FAILED", series, "failed") for series in report.failed]
                                + [("MISSING", series, why) for series, why in report.missing]):
        lines.append(f"  {status:11s} at HEAD ({why} there, measured at BASE)  {series.label()}"
                     + (f"  [{series.env}]" if several_envs else ""))
    for line in (report.drift, report.environment, version_changed_line(report), stale_line(report),
                 short_history_line(report)):
        if line:
            lines.append(f"  {line}")
    counts = {s: sum(v.status == s for v in report.verdicts) for s in ("regression", "drift", "improvement")}
    ok = len(report.verdicts) - sum(counts.values())
    lines.append("  " + ", ".join(f"{n} {s}" for s, n in counts.items()) + f", {ok} ok"
                 + (f"; {len(report.failed)} failed at HEAD" if report.failed else "")
                 + (f"; {len(report.missing)} not measured at HEAD" if report.missing else ""))
    if report.regressions or report.failed:
        lines.append("PERFORMANCE REGRESSED" if report.regressions else "BENCHMARKS FAILED AT HEAD")
    else:
        lines.append("no regression" + (" among the series compared" if report.missing or report.version_changed
                                        or report.stale else ""))
    return lines


# --- evaluation on the history ------------------------------------------------------------------------------------
def identical_code_pairs(runs, path="greyhound", repo="."):
    """Consecutive runs (commit order) whose `path` tree is identical in git: A/A pairs. GateError outside a git
    repository."""
    import git
    try:
        repository = git.Repo(repo, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as err:
        raise GateError(f"--evaluate reads which commits share an identical {path}/ tree from git, but "
                        f"{Path(repo).resolve()} is not in a git repository ({type(err).__name__})") from None
    ordered = history_for(runs)
    pairs = []
    for a, b in zip(ordered, ordered[1:]):
        try:
            if repository.commit(a.commit).tree[path].hexsha == repository.commit(b.commit).tree[path].hexsha:
                pairs.append((a.commit, b.commit))
        except (KeyError, ValueError):
            continue
    return pairs


def scaled(run, factor):
    """A copy of `run` whose greyhound time series are `factor` times slower (samples included)."""
    copy = Run(run.commit, run.date, run.params, failed=set(run.failed), skipped=set(run.skipped),
               unjudged=set(run.unjudged), versions=dict(run.versions))
    for series, (value, samples, unit) in run.values.items():
        if series.is_greyhound and unit == "seconds":
            value, samples = value * factor, [s * factor for s in samples] if samples else None
        copy.values[series] = (value, samples, unit)
    return copy


def evaluate(runs, pairs, slowdown=1.05, history_size=None, resamples=20, seed=0, absolute_floors=True,
             borrowed=None):
    """False alarms over A/A pairs and the share of greyhound time series caught at `slowdown`. With `history_size`
    k, each pair is judged `resamples` times against BASE plus k other runs drawn at random (seeded), as on a machine
    with a short history, instead of against every other run. `absolute_floors`, `borrowed`: judge's (the floors off
    for another project's benchmarks, which declare no tier; the other machines' noise for series whose history here
    is short), so that a pair is judged here as the gate judges it."""
    rng = random.Random(seed)
    alarms = flagged_runs = compared = caught = greyhound_time = 0
    per_series_missed = {}
    for base_commit, head_commit in pairs:
        if history_size is None:
            histories = [history_for(runs, exclude={head_commit})]
        else:
            others = [run for commit, run in runs.items() if commit not in (base_commit, head_commit)]
            histories = [sorted(rng.sample(others, min(history_size, len(others))) + [runs[base_commit]],
                                key=lambda r: (r.date, r.commit)) for _ in range(resamples)]
        for history in histories:
            report = judge(runs[base_commit], runs[head_commit], history, absolute_floors, borrowed)
            compared += len(report.verdicts)
            alarms += len(report.regressions)
            flagged_runs += bool(report.regressions)
            slow = judge(runs[base_commit], scaled(runs[head_commit], slowdown), history, absolute_floors, borrowed)
            for verdict in slow.verdicts:
                if verdict.series.is_greyhound and runs[base_commit].values[verdict.series][2] == "seconds":
                    greyhound_time += 1
                    caught += verdict.status == "regression"
                    if verdict.status != "regression":
                        label = verdict.series.label()
                        per_series_missed[label] = per_series_missed.get(label, 0) + 1
    return {"pairs": len(pairs), "comparisons": len(pairs) * (1 if history_size is None else resamples),
            "series_compared": compared, "false_alarms": alarms,
            "false_alarm_rate": alarms / compared if compared else float("nan"),
            "comparisons_with_an_alarm": flagged_runs, "greyhound_time_series": greyhound_time, "caught": caught,
            "sensitivity": caught / greyhound_time if greyhound_time else float("nan"),
            "missed": per_series_missed}


def check_own(runs, own, given):
    """The own providers to judge with: `own`, unless no provider of the results' benchmarks starts with it, which
    would judge none of their series as the project's own code (every regression a peer's drift). With --own
    (`given`) that is refused, naming the providers there are; without it (another project's results with a
    `provider` param, none of them greyhound's) every provider is judged as the project's own, with no control, as a
    benchmark without a provider param is (a note says so: --own names the own ones, and the rest become controls)."""
    providers = {series.provider for run in runs.values()
                 for series in set(run.values) | run.failed | run.skipped | run.unjudged if series.has_provider}
    if not providers or any(provider.startswith(own) for provider in providers):
        return own
    if given:
        raise GateError(f"--own {', '.join(given)}: no provider of the results starts with "
                        f"{'it' if len(given) == 1 else 'any of them'}, so nothing would be judged as the "
                        f"project's own code; the providers there: {', '.join(sorted(providers))}")
    print(f"tools.gate: note: no provider of the results is greyhound's (the default --own): every provider "
          f"({', '.join(sorted(providers))}) is judged as the project's own code, none is a control; name the "
          f"project's own with --own to judge the others as its peers", file=sys.stderr)
    return tuple(sorted(providers))


def check_repo(repo):
    """--repo must be a git repository (refs resolve there, --evaluate reads its trees)."""
    import git
    try:
        git.Repo(repo, search_parent_directories=True)  # (a folder inside the clone, as refs resolve from it)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as err:
        raise GateError(f"--repo must be a git repository (the results' commits' own), got {repo!r} "
                        f"({type(err).__name__})") from None


def _print_warnings(warnings):
    for line in warnings:
        print(f"tools.gate: warning: {line}", file=sys.stderr)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tools.gate", description=__doc__.splitlines()[0],
                                     epilog="Exit status: 0 no regression; 1 regression, or a benchmark that failed "
                                            "at HEAD; 2 bad arguments, missing or unreadable results, series HEAD did "
                                            "not measure, or nothing compared.")
    parser.add_argument("base", nargs="?", help="base commit (hash prefix or git ref)")
    parser.add_argument("head", nargs="?", help="head commit (hash prefix or git ref)")
    parser.add_argument("--results", action="append", help="asv results directory (repeatable; default results)")
    parser.add_argument("--machine", help="asv machine name (default: the one machine, or the only one that "
                                          "measured both commits)")
    parser.add_argument("--all-tiers", action="store_true", help="judge sweep series too (default: tracked only)")
    parser.add_argument("--evaluate", action="store_true",
                        help="A/A false alarms and 5%% sensitivity over consecutive commits with identical greyhound/")
    parser.add_argument("--slowdown", type=float,
                        help="--evaluate's injected factor, > 1 (default 1.05)")
    parser.add_argument("--own", action="append", metavar="PROVIDER",
                        help="a provider name (or prefix) that is the project's own code, judged rather than used as "
                             "a control (repeatable; default greyhound); benchmarks without a provider param are "
                             "always judged")
    parser.add_argument("--code-path",
                        help="--evaluate's A/A pairs: consecutive commits whose tree at this path is identical "
                             "(default greyhound)")
    parser.add_argument("--repo", default=".",
                        help="the git repository of the results' commits: BASE and HEAD are resolved there, and "
                             "--evaluate finds its A/A pairs there (default: the current directory; another "
                             "project's results: its clone)")
    parser.add_argument("--history-size", type=int, metavar="K",
                        help="--evaluate against K other runs drawn at random (20 draws a pair, seeded) instead of "
                             "the whole history: a machine with a short history")
    args = parser.parse_args(argv)
    evaluate_only = [flag for flag, value in (("--slowdown", args.slowdown), ("--code-path", args.code_path),
                                              ("--history-size", args.history_size)) if value is not None]
    if evaluate_only and not args.evaluate:
        them = "it" if len(evaluate_only) == 1 else "them"
        print(f"tools.gate: error: {', '.join(evaluate_only)}: only --evaluate (the A/A and injected-slowdown "
              f"evaluation) reads {them}; judging BASE -> HEAD does not: drop {them} or add --evaluate",
              file=sys.stderr)
        return 2
    if args.evaluate and (args.base or args.head):
        print(f"tools.gate: error: --evaluate judges every A/A pair of the history and takes no BASE or HEAD, got "
              f"{' '.join(repr(a) for a in (args.base, args.head) if a is not None)}: drop them, or drop --evaluate to "
              "judge that pair", file=sys.stderr)
        return 2
    empty = [name for name, value in (("BASE", args.base), ("HEAD", args.head), ("--machine", args.machine),
                                      ("--repo", args.repo), *(("--results", r) for r in args.results or ()))
             if value is not None and not value.strip()]
    if empty:
        print(f"tools.gate: error: {', '.join(empty)} must not be empty (a commit, a machine name, a path)",
              file=sys.stderr)
        return 2
    slowdown = 1.05 if args.slowdown is None else args.slowdown
    code_path = (args.code_path or "greyhound").strip("/") or "greyhound"  # (greyhound/ is the same tree)
    warnings = []
    tier = None if args.all_tiers else "tracked"
    own = tuple(args.own or OWN_PROVIDERS)
    metas = {}  # (benchmark, version) -> benchmarks.json entry, of the series read
    try:
        results = args.results or ["results"]
        if any(not name for name in own):
            raise GateError("--own takes a provider name or prefix, got an empty one")
        if args.repo != ".":
            check_repo(args.repo)
        if args.evaluate:  # each machine on its own history (without --machine: every machine, one after another)
            if args.history_size is not None and args.history_size < 0:
                raise GateError(f"--history-size must be >= 0, got {args.history_size}")
            if not (math.isfinite(slowdown) and slowdown > 1):
                raise GateError(f"--slowdown must be a factor > 1 (the slowdown injected into HEAD), got "
                                f"{slowdown}")
            names = check_machine(results, args.machine)
            names = [args.machine] if args.machine else names
            status = 0
            for name in names:
                machine_metas = {}
                runs = load_runs(results, name, tier=tier, warnings=warnings, own=own, metas=machine_metas)
                judged_own = check_own(runs, own, args.own)
                if judged_own != own:  # (the series carry their own providers: read again)
                    runs = load_runs(results, name, tier=tier, warnings=[], own=judged_own)
                _print_warnings(warnings)
                warnings.clear()
                pairs = identical_code_pairs(runs, code_path, args.repo)
                if not pairs:
                    raise GateError(f"machine {name}: no two consecutive runs of commits with an identical "
                                    f"{code_path}/ tree in the git repository {args.repo!r} ({len(runs)} runs): "
                                    "nothing to evaluate (another project's results: --repo its clone, --code-path "
                                    "its code's folder)")
                if len(names) > 1:
                    print(f"machine: {name}")
                # (as a pair is judged: the absolute floors only where benchmarks declare tiers, greyhound's suite)
                # (and with the other machines' noise where a series' history here is short, as the gate borrows it)
                result = evaluate(runs, pairs, slowdown, args.history_size,
                                  absolute_floors=declares_tiers(machine_metas),
                                  borrowed=noise_of_other_machines(results, {name}, tier, judged_own))
                for key, value in result.items():
                    print(f"{key}: {value:.4g}" if isinstance(value, float) else f"{key}: {value}")
                if not result["series_compared"]:  # (rates of nan: nothing compared, as a pair that shares no series)
                    tiered = tier and declares_tiers(machine_metas)
                    scope = " of the tracked tier (--all-tiers: the sweeps too)" if tiered else ""
                    print(f"tools.gate: machine {name}: its {len(pairs)} identical-code pair(s) share no series"
                          f"{scope}: nothing compared", file=sys.stderr)
                    status = 2
            return status
        if args.machine is None and args.base and args.head:
            runs = runs_of_pair(results, args.base, args.head, tier, warnings, own, metas, args.repo)
        else:
            runs = load_runs(results, args.machine, tier=tier, warnings=warnings, own=own, metas=metas)
        _print_warnings(warnings)
        judged_own = check_own(runs, own, args.own)
        if judged_own != own:  # (the series carry their own providers: read again, the same machine's)
            machine = args.machine or next(iter({r.params.get("machine") for r in runs.values()} - {None}), None)
            own = judged_own
            runs = load_runs(results, machine, tier=tier, warnings=[], own=own, metas=metas)
        if not (args.base and args.head):
            raise GateError("give BASE and HEAD commits (or --evaluate)")
        if not runs:
            check_machine(results, args.machine)
        base, head = (resolve(runs, ref, args.repo, unreadable=warnings, machine=args.machine)
                      for ref in (args.base, args.head))
        if base == head:
            raise GateError(f"BASE {args.base!r} and HEAD {args.head!r} are the same commit ({base[:8]}): a run judged "
                            "against itself says nothing")
        for commit, side in ((base, "BASE"), (head, "HEAD")):
            broken = unreadable_of(warnings, commit)
            if broken:  # judging on part of a side's results could pass a regression in the part left out
                raise GateError(f"{side} {commit[:8]}'s results are not all readable: {broken[0]}")
        # benchmarks that declare tiers are greyhound's GPU suite, whose absolute floors (launch latency, the
        # allocator) suit them; another project's (no tiers) are judged on the relative floors and their own noise
        tiers = declares_tiers(metas)
        history = history_for(runs, exclude={head})
        report = judge(runs[base], runs[head], history, tiers, borrowed_noise(runs, base, head, history, results, tier,
                                                                              own))
        if not report.verdicts:
            envs = [sorted({s.env for s in set(run.values) | run.failed | run.skipped | run.unjudged})
                    for run in (runs[base], runs[head])]
            disjoint = envs[0] and envs[1] and not set(envs[0]) & set(envs[1])
            raise GateError(f"no series measured in both {base[:8]} and {head[:8]}"
                            + (" in the tracked tier (--all-tiers judges every benchmark)" if tiers and
                               not args.all_tiers else "")
                            + ": nothing was compared"
                            + (f"; they share no asv environment (BASE ran {', '.join(envs[0])}; HEAD ran "
                               f"{', '.join(envs[1])}): a series is compared only within one environment"
                               if disjoint else "")
                            + "".join(f"; {line}" for line in (version_changed_line(report), stale_line(report))
                                      if line)
                            + ("" if metas else "; no result of either run is of a benchmark that the --results "
                               "directories' benchmarks.json describes (an empty or another project's "
                               "benchmarks.json? `asv run --bench just-discover` writes it from the code)"))
    except GateError as err:
        print(f"tools.gate: error: {err}", file=sys.stderr)
        return 2
    # "tracked series" only where a tier selected them: benchmarks that declare no tier are all judged
    scope = "tracked" if tier and declares_tiers(metas) else ""
    print("\n".join(format_report(report, base, head, scope)))
    if report.regressions or report.failed:
        return 1
    if report.missing:  # no verdict on what HEAD did not measure: a partial run is not a pass
        print(f"tools.gate: error: HEAD {head[:8]} did not run {len(report.missing)} of the series BASE measured "
              f"(listed above as MISSING): run them at HEAD too (asv run with the same benchmarks), or compare "
              f"another pair", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
