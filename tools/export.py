"""Export asv results into greyhound's benchmark CSV (`python -m tools.export --results results --csv ...`).

Input is asv's results directory: `benchmarks.json` (benchmark metadata), `<machine>/machine.json` and
`<machine>/<commit[:8]>-<env>.json` result files, format version 2 or the older version 1, read through asv's own
`asv.results.Results` (version 1 is converted by asv's `Results.update_to_2`). One CSV row per benchmark result
per parameter combination, columns `tools.CSV_COLUMNS`.

Greyhound suites (benchmarks/harness.py) follow one convention:
  * benchmark names end in `.time_<kernel_name>` (speed) or `.track_peakmem_<kernel_name>` (peak CUDA memory,
    unit "bytes"); params are `provider`, `mode` (full/forward/backward), then the shape params (dtype, ...);
  * the methods carry `kernel_name` and `x_name` attributes, which asv copies into benchmarks.json (asv copies
    function attributes, asv_runner >= 0.3; plain class attributes never reach benchmarks.json).
Mapping: kernel_name = the attribute, else the benchmark's full name (module.Class.method: classes that share a
method name stay apart); kernel_provider = the `provider` param, else "default"; kernel_operation_mode = the `mode` param, else
"full"; metric_name = "speed" (time benchmarks), "memory" (track_peakmem_/peakmem_), else asv's benchmark type;
metric_unit = "ms" (asv seconds x 1000), "MiB" (bytes / 2**20), else asv's unit; x_name = the `x_name` attribute,
else the first param other than provider/mode, else "none" (x_value then empty); x_label = the `x_label`
attribute, else a readable label for known names, else the name; extra_benchmark_config_str = JSON (sorted keys)
of the remaining benchmark params only (machine fields such as torch/triton versions stay out); gpu_name = the
`gpu_name` machine field (tools.asv_machine writes it into every result's params; machine.json is the fallback),
or the machine name where that is absent or "cpu"; git_commit = the full hash; timestamp = asv's result date
(the commit's date) as ISO-8601 UTC; asv_machine and asv_environment = the results folder and asv's environment
name. Together they make the key: one row per (benchmark, parameter combination, commit, machine, environment).
The roofline: a speed row of a benchmark with a `work` attribute (bytes, FLOPs per mode and shape; greyhound's
harness writes it) gets `achieved` (TB/s or TFLOP/s, of the resource it is bound by) and `ceiling_share`, that over
the ceiling measured on the same machine by the `device_ceilings` benchmark (same result file, else that machine's
newest); without measured ceilings the share stays empty.

y_value_50/20/80 are numpy's linear percentiles of the recorded samples (`asv run --record-samples`); asv's
stats_q_25/q_75 are never relabelled. A result without samples gives y_value_50 = asv's value and empty p20/p80
(counted). Failed (null) and skipped (NaN) results give no row (counted), nor do negative times and memories (a time
or a memory cannot be negative; counted). Results of benchmarks that are not in benchmarks.json, or whose version or
parameter names differ from it, are left out as asv itself leaves them out (counted), since their parameters cannot
be named reliably.

Re-exporting replaces rows with the same key (KEY_COLUMNS), and an asv result's rows of the same measurement under
another GPU name (machine.json gained or changed `gpu_name`). Each result file exported is authoritative for its
(machine, environment, commit): the CSV's earlier rows of that key which the file no longer yields (a re-run in which
the benchmark failed or skipped, a benchmark whose version changed in benchmarks.json, one that left the file) are
removed and counted, so the CSV is what the results give whatever was exported before; rows of keys this export does
not read (other result files, other results directories, the sweep CLI's) stay as they are. A benchmark entry that
cannot be read is warned about and its earlier rows stay. The CSV's lock (a sibling `.<name>.lock`, the `filelock`
package) is held from reading the CSV to writing it, so concurrent exports and sweeps lose no rows; the CSV is
sorted and written atomically. `--results` is repeatable, each directory read against its own benchmarks.json. The
noise side table (tools.noise, `--noise`) is merged the same way: the series of these results replace their rows,
the others stay; a --noise that is the CSV itself is refused. A value that is finite in asv's unit but not in the
CSV's (1e308 s is inf in ms) is left out like a failed one; a carriage return in a name becomes a line feed (quoted
in the CSV, so it reads back). A benchmark entry of a result file that cannot be read (params missing, as in an
entry that is not a list of asv's columns, or not a list of value lists; a result or samples list that does not hold
one entry per parameter combination; a result that is not a number or null, such as a string, true or a list; a
sample list that is not a list of numbers; a version that is not a string; a started_at that is not a timestamp) is
warned about and that benchmark's entry left out, its earlier rows kept: it is not an older benchmark version, nor a
failed result. A result file whose commit_hash is not 4 to 64 hex digits, or whose result_columns lack result or
params, is warned about and left out.
`--commit` takes a ref git resolves (`git rev-parse`: a branch, a tag, a short hash), else, where git cannot resolve
it, a hash prefix of at least 4 hex digits. Exit status: 0 = everything read; 1 = a file or entry could not be read
(a one-line warning names it; everything else is exported and written, so CI notices); 2 = the results directory or
benchmarks.json is missing or unreadable (an entry other than its "version" that is not a benchmark object with
param_names, type and unit, and a string or number version where it has one: named), a results directory is given
twice, the existing CSV is unreadable or has unexpected columns, --commit is empty or matches no result file, or
--noise is empty or the CSV (nothing is written).
"""
import argparse
import ast
import csv
import datetime
import io
import itertools
import json
import math
import os
import string
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tools import (CSV_COLUMNS, SWEEP_CLI_MACHINE, CsvFormatError, csv_records, is_finite_number,
                   read_csv_records, x_value_order)
from tools._atomic import locked, real_path, write_atomic

# One row per (benchmark, parameter combination, commit, machine, environment): two rows share a key only when they
# are the same measurement (e.g. a tracked and a sweep benchmark of one kernel at one shape in the same run).
KEY_COLUMNS = ("kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name", "x_name", "x_value",
               "extra_benchmark_config_str", "gpu_name", "git_commit", "asv_machine", "asv_environment")
# Longest first: a track_peakmem_ method must not be read as a plain track_ one.
METHOD_PREFIXES = ("track_peakmem_", "peakmem_", "time_", "track_", "mem_")
X_LABELS = {
    "vocab_size": "Vocabulary size (V)",
    "batch_size": "Batch size (B)",
    "seq_len": "Sequence length (T)",
    "num_tokens": "Tokens (B×T)",
    "tokens": "Tokens (B×T)",
    "bt": "Tokens (B×T)",
    "hidden_size": "Hidden size (d_model)",
    "d_model": "Model width (d_model)",
    "d_ff": "MLP width (d_ff)",
    "num_heads": "Heads (H)",
    "head_dim": "Head dimension (D)",
    "kernel_size": "Kernel size (K)",
    "dilation": "Dilation",
    "chunk_size": "Chunk size",
    "n_rows": "Rows",
}
NOT_A_GPU = {"", "cpu", "none", "unknown"}


class ExportError(Exception):
    """A problem that stops the export before anything is written (exit status 2)."""


@dataclass
class ExportSummary:
    rows_exported: int = 0
    rows_in_csv: int = 0
    result_files: int = 0
    no_samples: int = 0
    failed: int = 0
    negative: int = 0  # negative times and memories, left out
    unknown_benchmark: int = 0
    stale: int = 0
    collisions: int = 0
    replaced: int = 0  # earlier rows of a measurement exported again under another GPU name
    removed: int = 0  # earlier rows of a result file exported now that the file no longer yields
    warnings: list = field(default_factory=list)  # one line each; any warning makes the exit status 1
    notes: list = field(default_factory=list)  # informational; the exit status stays 0


# --- reading asv's files --------------------------------------------------------------------------------------
def load_benchmarks(results_dir):
    """benchmarks.json as {benchmark name: metadata}."""
    path = results_dir / "benchmarks.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ExportError(f"{path} is missing: {results_dir} is not an asv results directory") from None
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise ExportError(f"cannot read {path}: {err}") from None
    if not isinstance(data, dict):
        raise ExportError(f"cannot read {path}: expected a JSON object, got {type(data).__name__}")
    benchmarks = {name: meta for name, meta in data.items() if name != "version"}
    problems = [f"{name!r} {problem}" for name, meta in benchmarks.items()
                for problem in [benchmark_entry_problem(meta)] if problem]
    if problems:  # a damaged file would leave every result out as "not in benchmarks.json" and remove its rows
        shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
        raise ExportError(f"cannot read {path}: its entries other than \"version\" must be benchmark objects with "
                          f"{', '.join(BENCHMARK_FIELDS)}; {len(problems)} of {len(benchmarks)} are not: {shown}")
    return benchmarks


BENCHMARK_FIELDS = ("param_names", "type", "unit")  # what asv writes for every benchmark and export reads (and a
# "version", which asv's own older files lack: asv reads a missing one as None, `benchmarks[key].get('version')`)


def _is_scalar(value):
    """A JSON string or number (a benchmark version: asv's are strings, a `version` attribute may be a number)."""
    return isinstance(value, str) or (isinstance(value, (int, float)) and not isinstance(value, bool))


def benchmark_entry_problem(meta):
    """What makes one benchmarks.json entry unusable (words after its name), or None."""
    if not isinstance(meta, dict):
        return f"is {json.dumps(meta)[:40]} (a {type(meta).__name__}), not an object"
    missing = [f for f in BENCHMARK_FIELDS if f not in meta]
    if missing:
        return f"has no {', '.join(missing)}"
    if meta.get("version") is not None and not _is_scalar(meta["version"]):
        return f"has version {meta['version']!r:.40}, expected a string"
    names = meta["param_names"]
    if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        return f"has param_names {names!r:.40}, expected a list of names"
    for key in ("type", "unit", "kernel_name", "x_name", "x_label"):  # (the attributes may be absent or null)
        if meta.get(key) is not None and not isinstance(meta[key], str):
            return f"has {key} {meta[key]!r:.40}, expected a string"
    if meta.get("work") is not None and not isinstance(meta["work"], dict):
        return f"has work {meta['work']!r:.40}, expected an object"
    return None


def load_results(path, machine_name):
    """One result file as an asv `Results`; raises (any exception) when it cannot be read."""
    return _checked(_load_results(path, machine_name))


def _checked(result):
    """The fields every row and every comparison is keyed or ordered by: a commit hash, a numeric date."""
    commit = result.commit_hash
    if not (isinstance(commit, str) and 4 <= len(commit) <= 64 and all(c in string.hexdigits for c in commit)):
        raise ValueError(f"commit_hash is {commit!r:.80}, expected a commit hash (4 to 64 hex digits)")
    if result.date is not None and not is_finite_number(result.date):
        raise ValueError(f"date is {result.date!r}, not a JavaScript timestamp (ms)")
    if not isinstance(result.params, dict):
        raise ValueError(f"params is {type(result.params).__name__}, not an object")
    if not isinstance(result.env_name, str) or not result.env_name:  # every series and file is keyed by it
        raise ValueError(f"env_name is {result.env_name!r:.80}, expected the asv environment's name (a non-empty "
                         f"string)")
    return result


def _check_machine(data, machine_name):
    """asv refuses a result file whose params name another machine than the folder it is in, naming neither the
    file's machine nor, for a converted version-1 file, the file itself: say both."""
    params = data.get("params")
    machine = params.get("machine") if isinstance(params, dict) else None
    if machine is not None and machine != machine_name:
        raise ValueError(f"its params name machine {machine!r}, but it is in the machine folder {machine_name!r} "
                         "(asv reads a machine's results from the folder of that name)")


RESULT_COLUMNS = ("result", "params")  # of asv's result_columns, those every row is read from (a file without a
# version column is read as one without versions, as a version-1 file is)


def _check_columns(path):
    """A version-2 file's result_columns name the columns rows are read from: asv reads an entry's missing column as
    null, which would make every result a failed one (no result column) or unreadable (no params)."""
    columns = json.loads(path.read_text(encoding="utf-8")).get("result_columns")
    missing = [c for c in RESULT_COLUMNS if c not in columns] if isinstance(columns, list) else list(RESULT_COLUMNS)
    if missing:
        raise ValueError(f"result_columns is {columns!r:.120}, expected a list naming {', '.join(RESULT_COLUMNS)} "
                         f"(missing {', '.join(missing)})")


def _load_results(path, machine_name):
    from asv import util as asv_util
    from asv.results import Results

    try:
        result = Results.load(str(path), machine_name=machine_name)
    except asv_util.UserError:
        try:  # json accepts the bare NaN / Infinity tokens asv writes for skipped benchmarks
            data = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, ValueError) as err:
            raise ValueError(f"not valid JSON ({err})") from None
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, got {type(data).__name__}") from None
        version = data.get("version")
        _check_machine(data, machine_name)
        if version == Results.api_version:
            raise  # asv's own reason: a missing key
        if version != 1:
            raise ValueError(f"results format version {version!r} is not 1 or 2") from None
    else:
        _check_columns(path)
        return result
    converted = Results.update_to_2({k: v for k, v in data.items() if k != "version"})
    with tempfile.TemporaryDirectory() as tmp:  # asv loads from a path; the input file is never rewritten
        converted_path = os.path.join(tmp, path.name)
        asv_util.write_json(converted_path, converted, api_version=Results.api_version, compact=True)
        return Results.load(converted_path, machine_name=machine_name)


def read_machine_json(machine_dir, summary):
    """The machine's asv description, a fallback for the GPU's name: a note where there is none (the result files'
    params are used), a warning where one cannot be read."""
    path = machine_dir / "machine.json"
    if not path.exists():
        summary.notes.append(f"{path} does not exist; using the result files' params")
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, got {type(data).__name__}")
        return data
    except (OSError, UnicodeDecodeError, ValueError) as err:
        summary.warnings.append(f"{path}: cannot read machine info ({err}); using the result files' params")
        return {}


def gpu_name_of(result_params, machine_info, machine_name):
    for source in (result_params, machine_info):
        name = str(source.get("gpu_name") or "").strip()
        if name.lower() not in NOT_A_GPU:
            return name
    # CPU machines: the machine name (e.g. cpu-<hostname>) keeps different CPUs apart
    return str(result_params.get("machine") or machine_info.get("machine") or machine_name or "unknown")


# --- mapping one benchmark to rows ------------------------------------------------------------------------------
def param_repr(value):
    """A stored parameter value as asv's repr string: asv writes strings; a JSON number, bool or null (another writer's
    file) becomes the repr asv would have written (8 -> "8", true -> "True", null -> "None"), anything else its JSON."""
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    return json.dumps(value, sort_keys=True, default=repr)


def parse_param(value_repr):
    """asv stores parameter values as repr strings: returns (display text, JSON value). "'bf16'" -> bf16, "8" -> 8.
    (Every caller's values come through checked_entry, which has put a file's other forms into that one.)"""
    try:
        value = ast.literal_eval(value_repr)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return value_repr, value_repr
    if isinstance(value, str):
        return value, value
    if value is None or isinstance(value, (bool, int)) or (isinstance(value, float) and math.isfinite(value)):
        return value_repr, value
    return value_repr, value_repr


def readable_label(x_name):
    if x_name == "none":
        return ""
    return X_LABELS.get(x_name, x_name)


@dataclass
class BenchmarkSpec:
    kernel_name: str
    metric_name: str
    metric_unit: str
    scale: float
    x_name: str
    x_label: str


def describe_benchmark(name, meta, summary):
    method = name.rsplit(".", 1)[-1]
    prefix = next((p for p in METHOD_PREFIXES if method.startswith(p)), "")
    kernel_name = meta.get("kernel_name")
    if not (isinstance(kernel_name, str) and kernel_name):
        kernel_name = name  # module.Class.method: classes may share method names; the full name keeps them apart
    bench_type = str(meta.get("type") or "")
    if bench_type == "time":
        metric_name = "speed"
    elif prefix in ("track_peakmem_", "peakmem_") or bench_type == "peakmemory":
        metric_name = "memory"
    else:
        metric_name = bench_type or "value"
    unit = str(meta.get("unit") or "")
    metric_unit, scale = {"seconds": ("ms", 1e3), "bytes": ("MiB", 1.0 / 2**20)}.get(unit, (unit, 1.0))

    shape_params = [p for p in meta.get("param_names") or [] if p not in ("provider", "mode")]
    x_name = meta.get("x_name")
    if x_name is not None and x_name not in shape_params:
        summary.notes.append(f"{name}: x_name {x_name!r} is not one of its params {shape_params}; "
                             f"using {shape_params[0] if shape_params else 'none'!r}")
        x_name = None
    x_name = x_name or (shape_params[0] if shape_params else "none")
    x_label = meta.get("x_label")
    if not (isinstance(x_label, str) and x_label):
        x_label = readable_label(x_name)
    return BenchmarkSpec(kernel_name, metric_name, metric_unit, scale, x_name, x_label)


def _number_text(value):
    return repr(float(value))


def iso_utc(js_timestamp):
    """asv dates are JavaScript timestamps (milliseconds since the epoch)."""
    if not is_finite_number(js_timestamp):
        return ""
    moment = datetime.datetime.fromtimestamp(js_timestamp / 1000.0, tz=datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


CEILINGS_KERNEL = "device_ceilings"  # benchmarks/ceilings.py: the machine's copy bandwidth and GEMM rate
RIDGE_FLOP_PER_BYTE = 200.0  # without measured ceilings: beyond this intensity a row is reported as FLOP/s


def work_of(meta, mode, named):
    """(bytes, flops) of a speed row from the benchmark's `work` attribute (benchmarks/harness.py), or None."""
    work = meta.get("work")
    if not isinstance(work, dict):
        return None
    key = "|".join(map(str, [mode] + [json_value for _, json_value in named.values()]))
    found = work.get(key)
    return tuple(found) if isinstance(found, list) and len(found) == 2 else None


def roofline(work, seconds, ceilings):
    """(achieved, unit, share of the machine's ceiling) of the resource the row is bound by; shares need ceilings
    (bytes/s of a copy, FLOP/s of a GEMM) measured on the same machine."""
    if not work or not seconds or seconds <= 0:
        return "", "", ""
    moved, computed = work
    bandwidth, rate = moved / seconds, computed / seconds
    if not (math.isfinite(bandwidth) and math.isfinite(rate)):  # (a subnormal time: no meaningful rate)
        return "", "", ""
    if ceilings:
        bw_share = bandwidth / ceilings[0] if ceilings[0] else 0.0
        flop_share = rate / ceilings[1] if ceilings[1] else 0.0
        if flop_share > bw_share:
            return _number_text(rate / 1e12), "TFLOP/s", _number_text(flop_share)
        return _number_text(bandwidth / 1e12), "TB/s", _number_text(bw_share)
    if computed and (not moved or computed / moved > RIDGE_FLOP_PER_BYTE):
        return _number_text(rate / 1e12), "TFLOP/s", ""
    return (_number_text(bandwidth / 1e12), "TB/s", "") if moved else ("", "", "")


def ceilings_of(result, benchmarks):
    """(bytes/s, FLOP/s) measured by the ceilings benchmark in one result file, or None."""
    bandwidth = rate = None
    for name in result.get_all_result_keys():
        meta = benchmarks.get(name)
        if not meta or meta.get("kernel_name") != CEILINGS_KERNEL or meta.get("type") != "time":
            continue
        try:
            params, combos = checked_entry(result, name)
        except ValueError:  # warned about (and left out) where its rows are read
            continue
        names = list(meta.get("param_names") or [])
        for combo, value in zip(combos, result.get_result_value(name, params)):
            if not is_finite_number(value) or value <= 0:
                continue
            named = {p: parse_param(v) for p, v in zip(names, combo)}
            named.pop("provider", None)
            mode = named.pop("mode", ("forward", None))[0]
            work = work_of(meta, mode, named)
            if work is None:
                continue
            if named.get("op", ("",))[0] == "copy":
                bandwidth = work[0] / value
            elif named.get("op", ("",))[0] == "gemm":
                rate = work[1] / value
    return (bandwidth, rate) if bandwidth and rate else None


def csv_row(*, kernel_name, provider, mode, metric_name, metric_unit, x_name, x_label, x_value, extra, samples, value,
            scale, work, ceilings, gpu_name, commit, timestamp, machine, environment):
    """One CSV row (CSV_COLUMNS) of a measured series, for tools.export and the sweep CLI alike. `samples`: the
    recorded values in the benchmark's unit (seconds, bytes), p20/p50/p80 being numpy's linear percentiles; without
    samples, `value` is p50 and p20/p80 stay empty. `scale` turns them into the CSV's unit (ms, MiB). The roofline
    columns come from `work` ((bytes, FLOPs), time rows only) and the machine's `ceilings`."""
    if samples:
        p20, p50, p80 = np.percentile(np.asarray(samples, dtype=np.float64), [20, 50, 80])
        y50, y20, y80 = (_number_text(v * scale) for v in (p50, p20, p80))
    else:
        p50 = value
        y50, y20, y80 = _number_text(value * scale), "", ""
    achieved, achieved_unit, share = roofline(work, p50 if metric_unit == "ms" else None, ceilings)
    row = {
        "kernel_name": kernel_name, "kernel_provider": provider, "kernel_operation_mode": mode,
        "metric_name": metric_name, "metric_unit": metric_unit, "x_name": x_name, "x_label": x_label,
        "x_value": x_value, "y_value_50": y50, "y_value_20": y20, "y_value_80": y80,
        "extra_benchmark_config_str": extra, "gpu_name": gpu_name, "git_commit": commit, "timestamp": timestamp,
        "asv_machine": machine, "asv_environment": environment,
        "achieved": achieved, "achieved_unit": achieved_unit, "ceiling_share": share,
    }
    # a carriage return in a name or parameter becomes a line feed, which the CSV writer quotes: unquoted (the writer
    # ends lines with a line feed only) it read back as a line break, and the CSV could not be read again
    return {column: value.replace("\r\n", "\n").replace("\r", "\n") if isinstance(value, str) else value
            for column, value in row.items()}


def _finite_in_csv(value, scale):
    """A finite number in asv's unit that stays finite in the CSV's (1e308 s is finite, in ms it is not)."""
    return is_finite_number(value) and math.isfinite(value * scale)


def _describe(value):
    return f"{json.dumps(value, default=repr)[:40]} (a {type(value).__name__})"


def _is_number(value):
    """A JSON number, NaN and infinities included (asv writes NaN for a skipped benchmark); not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def checked_entry(result, name):
    """(params, combos) of one benchmark's entry in one result file, the file's own parameter grid; ValueError naming
    what cannot be read: params that are not a list of value lists (or missing: asv always writes them), a version
    that is not a string, a result or samples list that does not hold one entry per parameter combination, a result
    that is not a number or null, a sample list that is not a list of numbers, a started_at that is not a timestamp
    (the export orders runs by it). (As stored: asv's getters pad a short
    list with None or cut a long one to the grid, which would shift a sample list onto another combination or read a
    missing value as a failure.) The checks come before any comparison with benchmarks.json: an entry that cannot be
    read is not an older benchmark version, and its earlier rows stay."""
    params = result.get_result_params(name)
    if params is None:
        raise ValueError("its params column is missing (expected a list of parameter value lists)")
    if not (isinstance(params, list) and all(isinstance(values, list) for values in params)):
        raise ValueError(f"params is {params!r:.80}, expected a list of parameter value lists")
    if not all(isinstance(value, str) for values in params for value in values):
        # (another writer's numbers or nulls: as asv's repr strings, in the file's own order, so that every reader
        # (rows, sort keys, the noise table, the gate's series) sees one form and asv's lookups by params still match)
        params = [[param_repr(value) for value in values] for values in params]
        result._benchmark_params[name] = params
    combos = list(itertools.product(*params))
    version = result.benchmark_version.get(name)
    if version is not None and not _is_scalar(version):
        raise ValueError(f"its version is {_describe(version)}, expected a string")
    for column, stored in (("result", result._results.get(name)), ("samples", result._samples.get(name))):
        if stored is None:
            continue
        if not isinstance(stored, list) or len(stored) != len(combos):
            count = f"{len(stored)} entries" if isinstance(stored, list) else _describe(stored)
            raise ValueError(f"its {column} column holds {count} for {len(combos)} parameter combinations")
        for index, item in enumerate(stored):
            if column == "result":
                good = item is None or _is_number(item)
            else:
                good = item is None or (isinstance(item, list) and all(_is_number(x) for x in item))
            if not good:
                expected = "a number or null" if column == "result" else "a list of numbers or null"
                raise ValueError(f"its {column} column holds {_describe(item)} for parameter combination "
                                 f"{index + 1} of {len(combos)}, expected {expected}")
    started_at = result.started_at.get(name)
    if started_at is not None and not is_finite_number(started_at):
        raise ValueError(f"its started_at is {_describe(started_at)}, expected a JavaScript timestamp (ms) or null")
    return params, combos


def stored_measurements(result, name, meta):
    """One benchmark's measurements in one result file: (param_names, combos, values, samples), a value and a sample
    list per parameter combination. values and samples are None when the file stored them for another version or
    parameter grid than benchmarks.json's `meta` (stale: not the same measurement); ValueError when the entry cannot
    be read (checked_entry)."""
    params, combos = checked_entry(result, name)
    param_names = list(meta.get("param_names") or [])
    if result.benchmark_version.get(name) not in (None, meta.get("version")) or len(param_names) != len(params):
        return param_names, combos, None, None
    values = result.get_result_value(name, params)
    samples = result.get_result_samples(name, params)
    if len(values) != len(combos) or len(samples) != len(combos):
        raise ValueError(f"{len(values)} values and {len(samples)} sample lists for {len(combos)} parameter "
                         f"combinations")
    return param_names, combos, values, samples


def rows_of_benchmark(result, name, meta, gpu_name, summary, machine="", ceilings=None):
    """The CSV rows of one benchmark in one result file (several when it is parameterised)."""
    param_names, combos, values, samples = stored_measurements(result, name, meta)
    if values is None:
        summary.stale += len(combos)
        return []
    spec = describe_benchmark(name, meta, summary)
    rows = []
    # a time or a memory cannot be negative: such a value is left out (counted) like a failed one
    physical = spec.metric_name in ("speed", "memory")
    for combo, value, combo_samples in zip(combos, values, samples):
        if not _finite_in_csv(value, spec.scale):
            summary.failed += 1
            continue
        if physical and value < 0:
            summary.negative += 1
            continue
        named = {param: parse_param(value_repr) for param, value_repr in zip(param_names, combo)}
        provider = named.pop("provider", ("default", None))[0]
        mode = named.pop("mode", ("full", None))[0]
        work = work_of(meta, mode, named) if spec.metric_name == "speed" else None
        x_value = named.pop(spec.x_name)[0] if spec.x_name in named else ""
        extra = json.dumps({param: json_value for param, (_, json_value) in named.items()}, sort_keys=True)
        finite_samples = [s for s in combo_samples if _finite_in_csv(s, spec.scale) and not (physical and s < 0)] \
            if isinstance(combo_samples, list) else []
        if not finite_samples:
            summary.no_samples += 1
        rows.append(csv_row(
            kernel_name=spec.kernel_name, provider=provider, mode=mode, metric_name=spec.metric_name,
            metric_unit=spec.metric_unit, x_name=spec.x_name, x_label=spec.x_label, x_value=x_value, extra=extra,
            samples=finite_samples, value=value, scale=spec.scale, work=work, ceilings=ceilings, gpu_name=gpu_name,
            commit=result.commit_hash or "", timestamp=iso_utc(result.date), machine=machine,
            environment=result.env_name or ""))
    return rows


# --- the CSV ------------------------------------------------------------------------------------------------------
def row_key(row):
    return tuple(row[c] for c in KEY_COLUMNS)


def measurement_key(row):
    """row_key less the GPU's name: a label of the machine (machine.json or the run's params), not of the run."""
    return tuple(row[c] for c in KEY_COLUMNS if c != "gpu_name")


def sort_key(row):
    return (row["kernel_name"], row["kernel_operation_mode"], row["metric_name"], row["gpu_name"],
            row["extra_benchmark_config_str"], row["x_name"], row["kernel_provider"], x_value_order(row["x_value"]),
            row["timestamp"], row["git_commit"], row["metric_unit"])


def read_csv_rows(path):
    """The rows of an existing CSV (none when it does not exist); ExportError if it is not ours."""
    path = Path(path)
    if not path.exists():
        return []
    try:
        return read_csv_records(path)
    except CsvFormatError as err:
        raise ExportError(f"{err}; left it untouched") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ExportError(f"cannot read {path}: {err}; left it untouched") from None


def csv_rows_from_text(text):
    """Rows of a CSV text in our schema (another machine's sweep, a Modal run); ExportError if it is not ours."""
    try:
        return csv_records(text, CSV_COLUMNS, "rows")
    except CsvFormatError as err:
        raise ExportError(str(err)) from None


def merge_csv_rows(csv_path, rows, drop=()):
    """Merge rows into the CSV at csv_path (atomically, holding its lock from the read to the write, so a concurrent
    writer's rows are never lost): a row with an existing key replaces that row, so merging the same rows twice
    changes nothing; an existing row whose key is in `drop` (the sweep CLI's combinations that failed on re-run) is
    removed. Returns (rows in the CSV, rows removed by `drop`)."""
    csv_path = Path(csv_path)
    new = {row_key(row): row for row in rows}
    drop = set(drop) - set(new)
    with locked(csv_path):
        kept, dropped = [], 0
        for row in read_csv_rows(csv_path):  # (the sweep CLI's and Modal's rows: one asv_machine, sweep-cli, for every
            key = row_key(row)               # GPU, so the GPU's name tells their rows apart)
            if key in drop:
                dropped += 1
            elif key not in new:
                kept.append(row)
        write_atomic(csv_path, csv_text(kept + list(new.values())))
    return len(kept) + len(new), dropped


def csv_text(rows):
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in sorted(rows, key=sort_key):
        writer.writerow([row[c] for c in CSV_COLUMNS])
    return buffer.getvalue()


# --- the export -------------------------------------------------------------------------------------------------
MIN_HASH_PREFIX = 4  # the shortest hash prefix a ref git cannot resolve is matched by (git's own minimum)


def git_commit(ref, repo="."):
    """The full hash `git rev-parse` gives `ref` in the git repository around `repo`, or None (not a repository, or
    not a commit there). git's own order: a branch or tag named like a hash prefix (`dbc9`) is that ref, not the
    prefix. (GitPython's Repo.commit() tries a hex-looking name as a hash prefix first, so it asks git itself.)"""
    if ref.startswith("-"):  # an option to git, not a ref
        return None
    try:
        import git
        repository = git.Repo(repo, search_parent_directories=True)
        return repository.git.rev_parse("--verify", "--quiet", f"{ref}^{{commit}}").strip() or None
    except Exception:  # noqa: BLE001 - no repository, no git, or an unknown ref: the caller falls back to a prefix
        return None


def _git_commit(ref):
    return git_commit(ref)


def hash_prefix(ref, option="--commit"):
    """`ref` lower-cased when it can be a commit hash prefix (MIN_HASH_PREFIX to 64 hex digits: a SHA-256
    repository's hashes are 64, as the result files' may be); ValueError naming `option`, what it takes and what it
    got otherwise."""
    text = (ref or "").strip().lower()
    if not (MIN_HASH_PREFIX <= len(text) <= 64 and all(c in "0123456789abcdef" for c in text)):
        raise ValueError(f"{option} {ref!r}: git does not resolve it to a commit here, and it is not a hash prefix "
                         f"of {MIN_HASH_PREFIX} to 64 hex digits")
    return text


def commit_matcher(commit):
    """(predicate on a result's commit hash, the commit it matches in words) for --commit: the commit git resolves the
    ref to, else (git cannot resolve it) the result commits that start with it as a hash prefix. ExportError for an
    empty --commit or one that is neither."""
    if not (commit or "").strip():
        raise ExportError(f"--commit {commit!r}: expected a commit (a hash prefix of at least {MIN_HASH_PREFIX} hex "
                          f"digits, or a ref git resolves: a branch, a tag); leave --commit out to export everything")
    resolved = _git_commit(commit)
    if resolved:
        return ((lambda commit_hash: commit_hash.lower() == resolved.lower()),
                f"{resolved[:12]}, which git resolves it to")
    try:
        prefix = hash_prefix(commit)
    except ValueError as err:
        raise ExportError(str(err)) from None
    return ((lambda commit_hash: commit_hash.lower().startswith(prefix)),
            "a commit whose hash starts with it (git does not resolve it to a commit here)")


def _results_dirs(results_dir):
    """One results directory or several, as Paths; ExportError naming a directory given twice (its results would be
    read twice)."""
    dirs = [Path(results_dir)] if isinstance(results_dir, (str, os.PathLike)) else [Path(d) for d in results_dir]
    seen = {}
    for directory in dirs:
        key = real_path(directory)
        if key in seen:
            same = f" (first as {seen[key]})" if str(seen[key]) != str(directory) else ""
            raise ExportError(f"--results {directory} is given twice{same}: give each results directory once")
        seen[key] = directory
    return dirs


def _load_directory(results_dir, benchmarks, matches, latest, summary):
    """The result files of one results directory: (path, gpu name, machine, asv Results, that directory's
    benchmarks.json) for each file readable and selected by `matches` (--commit) and `latest`."""
    try:
        machine_dirs = sorted(p for p in results_dir.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError as err:
        raise ExportError(f"cannot list {results_dir}: {err}") from None
    loaded = []
    for machine_dir in machine_dirs:
        files = sorted(p for p in machine_dir.glob("*.json") if p.name != "machine.json")
        if not files:
            continue
        machine_info = read_machine_json(machine_dir, summary)
        machine_results = []
        for path in files:
            try:
                result = load_results(path, machine_dir.name)
            except Exception as err:  # noqa: BLE001 - any unreadable file is reported by name and skipped
                summary.warnings.append(f"{path}: cannot read results ({type(err).__name__}: {err})")
                continue
            if matches is None or matches(result.commit_hash):
                machine_results.append((path, result))
        if latest and machine_results:
            newest = max(r.date or 0 for _, r in machine_results)
            machine_results = [(p, r) for p, r in machine_results if (r.date or 0) == newest]
        for path, result in machine_results:
            gpu_name = gpu_name_of(result.params or {}, machine_info, machine_dir.name)
            loaded.append((path, gpu_name, machine_dir.name, result, benchmarks))
    return loaded


def source_key(row):
    """The asv result file a row comes from: (machine, environment, commit)."""
    return row["asv_machine"], row["asv_environment"], row["git_commit"]


def export(results_dir, csv_path, commit=None, latest=False):
    """Read `results_dir` (one asv results directory, or a list of them: each file read against its own directory's
    benchmarks.json), merge its rows into `csv_path` and return an ExportSummary. The CSV's lock (tools._atomic.locked)
    is held from reading the CSV to writing it (atomically), so a concurrent export or sweep loses no rows. Each
    result file exported is authoritative for its (machine, environment, commit): the CSV's rows of that key which it
    no longer yields (the benchmark failed or skipped in a re-run, its version changed, it left the file) are removed
    (counted); rows of keys this export does not read stay."""
    results_dirs, csv_path = _results_dirs(results_dir), Path(csv_path)
    matches, how = commit_matcher(commit) if commit is not None else (None, "")
    for directory in results_dirs:
        if not directory.is_dir():
            raise ExportError(f"results directory {directory} does not exist or is not a directory")
    if csv_path.is_dir():
        raise ExportError(f"--csv {csv_path} is a directory, expected the path of a CSV file")
    benchmarks_of = [load_benchmarks(directory) for directory in results_dirs]
    with locked(csv_path):
        existing = read_csv_rows(csv_path)  # before any work: a CSV that is not ours stops the export untouched
        summary = ExportSummary()
        loaded = []  # (path, gpu name, machine, asv Results, its directory's benchmarks)
        for directory, benchmarks in zip(results_dirs, benchmarks_of):
            loaded += _load_directory(directory, benchmarks, matches, latest, summary)
        summary.result_files = len(loaded)
        if commit is not None and not loaded:
            raise ExportError(f"--commit {commit}: no result file in {', '.join(map(str, results_dirs))} is of "
                              f"{how}")
        new_rows, unreadable = _rows_of(loaded, summary)

        # An earlier row of the same measurement under another GPU name (machine.json gained or changed `gpu_name`)
        # is replaced too: an asv result file (machine, commit, environment) has one GPU name for all its rows, so the
        # old label would only double the row. (Not the sweep CLI's rows, whose one asv_machine spans GPUs.)
        relabelled = {measurement_key(row) for row in new_rows.values() if row["asv_machine"] != SWEEP_CLI_MACHINE}
        # The result files read are authoritative for their (machine, environment, commit): a row of one of them that
        # the file no longer yields goes, except a benchmark entry that could not be read (warned; its rows stay)
        sources = {(machine, result.env_name or "", result.commit_hash or "") for _, _, machine, result, _ in loaded}
        kept = []
        for row in existing:
            if row_key(row) in new_rows:
                continue
            if measurement_key(row) in relabelled:
                summary.replaced += 1
            elif source_key(row) in sources and source_key(row) + (row["kernel_name"], row["metric_name"]) \
                    not in unreadable:
                summary.removed += 1
            else:
                kept.append(row)
        merged = kept + list(new_rows.values())
        write_atomic(csv_path, csv_text(merged))
    summary.rows_exported = len(new_rows)
    summary.rows_in_csv = len(merged)
    return summary


def _rows_of(loaded, summary):
    """({row key: row} of the loaded result files, {(machine, environment, commit, kernel, metric) of the benchmark
    entries that could not be read}). The same measurement twice keeps the later-started run's row (counted)."""
    ceilings, latest_ceilings = {}, {}  # the roofline: per result file, else the machine's newest measurement
    for path, _, machine, result, benchmarks in sorted(loaded, key=lambda item: item[3].date or 0):
        found = ceilings_of(result, benchmarks)
        if found:
            ceilings[str(path)] = latest_ceilings[machine] = found
    exported, unreadable = {}, set()  # key -> (started_at, path, row)
    for path, gpu_name, machine, result, benchmarks in loaded:
        row_ceilings = ceilings.get(str(path)) or latest_ceilings.get(machine)
        for name in sorted(result.get_all_result_keys()):
            meta = benchmarks.get(name)
            if meta is None:
                params = result.get_result_params(name)
                summary.unknown_benchmark += math.prod(len(values) for values in params) \
                    if isinstance(params, list) and all(isinstance(values, list) for values in params) else 1
                continue
            try:
                rows = rows_of_benchmark(result, name, meta, gpu_name, summary, machine, row_ceilings)
            except Exception as err:  # noqa: BLE001 - a malformed entry is reported and the rest exported
                summary.warnings.append(f"{path}: benchmark {name}: cannot read ({type(err).__name__}: {err}); "
                                        f"its entry left out")
                spec = describe_benchmark(name, meta, ExportSummary())
                unreadable.add((machine, result.env_name or "", result.commit_hash or "", spec.kernel_name,
                                spec.metric_name))
                continue
            started_at = result.started_at.get(name) or 0
            for row in rows:
                key = row_key(row)
                if key in exported:  # the same measurement twice (e.g. a tracked and a sweep benchmark, one run)
                    summary.collisions += 1
                    if (started_at, str(path)) < exported[key][:2]:
                        continue
                exported[key] = (started_at, str(path), row)
    return {key: row for key, (_, _, row) in exported.items()}, unreadable


def report_lines(summary, csv_path):
    removed = (f"; {summary.removed} earlier rows of these result files removed: the files no longer yield them"
               if summary.removed else "")
    lines = [f"exported {summary.rows_exported} rows from {summary.result_files} result files into {csv_path} "
             f"({summary.rows_in_csv} rows in total{removed})"]
    if summary.no_samples:
        lines.append(f"{summary.no_samples} rows without samples (p20/p80 left empty)")
    if summary.failed:
        lines.append(f"{summary.failed} failed/skipped results left out")
    if summary.negative:
        lines.append(f"{summary.negative} negative time or memory results left out (a time or a memory cannot be "
                     f"negative)")
    if summary.unknown_benchmark:
        lines.append(f"{summary.unknown_benchmark} results of benchmarks not in benchmarks.json left out")
    if summary.stale:
        lines.append(f"{summary.stale} results of an older benchmark version (version or params differ from "
                     f"benchmarks.json) left out")
    if summary.replaced:
        lines.append(f"{summary.replaced} earlier rows of the same measurements under another GPU name replaced")
    if summary.collisions:
        lines.append(f"{summary.collisions} rows measured more than once (same kernel, provider, mode, shape, commit, "
                     f"machine and environment, e.g. by a tracked and a sweep benchmark); kept the most recently run")
    return lines


def noise_path_of(csv_path, noise):
    """The noise side table's path (None for --noise none): --noise, else noise.csv beside the CSV. ExportError,
    naming both options, when it is the CSV itself: the side table would replace the benchmark CSV."""
    if noise is not None and not noise.strip():
        raise ExportError(f"--noise {noise!r} is empty, expected the path of a CSV file (or none; leave --noise out "
                          f"for noise.csv beside --csv)")
    if (noise or "").lower() == "none":
        return None
    path = Path(noise) if noise else Path(csv_path).with_name("noise.csv")
    same = real_path(path) == real_path(csv_path)
    if not same and path.exists() and Path(csv_path).exists():
        same = os.path.samefile(path, csv_path)
    if same:
        raise ExportError(f"--noise {path} and --csv {csv_path} are the same file: the noise table would replace the "
                          f"benchmark CSV; give --noise another path (or --noise none)"
                          + ("" if noise else "; without --noise it is noise.csv beside --csv, so name the CSV "
                                              "otherwise or give --noise"))
    if path.is_dir():
        raise ExportError(f"--noise {path} is a directory, expected the path of a CSV file (or none)")
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m tools.export", description=__doc__.splitlines()[0],
        epilog="Each result file exported is authoritative for its (machine, environment, commit): rows of it that the "
               "file no longer yields (failed, skipped, another benchmark version) leave the CSV; rows of other "
               "result files stay. Exit status: 0 ok; 1 some result files could not be read (named; the rest "
               "exported); 2 bad results directory, CSV or option (nothing written).")
    parser.add_argument("--results", action="append",
                        help="asv results directory (repeatable: each read against its own benchmarks.json; default: "
                             "results)")
    parser.add_argument("--csv", default="docs/data/benchmark_data.csv",
                        help="CSV to create or update (default: docs/data/benchmark_data.csv)")
    parser.add_argument("--commit", help="only results of this commit: a ref git resolves (a branch, a tag, a short "
                                         "hash), else a hash prefix of at least 4 hex digits; an error when no "
                                         "result file is of it")
    parser.add_argument("--latest", action="store_true", help="only the newest commit of each machine")
    parser.add_argument("--noise", help="the per-series noise side table (tools.noise), merged like the CSV: the "
                                        "series of these results replace their rows, the others stay (default: "
                                        "noise.csv beside the CSV; 'none' to skip)")
    args = parser.parse_args(argv)
    results = args.results or ["results"]
    try:
        if not args.csv:
            raise ExportError("--csv is empty, expected the path of a CSV file")
        noise_path = noise_path_of(args.csv, args.noise)  # before anything is written
        summary = export(results, args.csv, commit=args.commit, latest=args.latest)
    except ExportError as err:
        print(f"tools.export: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # e.g. the CSV's folder is not writable; the old CSV is intact (atomic write)
        print(f"tools.export: error: cannot write {args.csv}: {err}", file=sys.stderr)
        return 2
    for line in dict.fromkeys(summary.notes):  # the same note comes from every result file
        print(f"tools.export: note: {line}", file=sys.stderr)
    for line in summary.warnings:
        print(f"tools.export: warning: {line}", file=sys.stderr)
    for line in report_lines(summary, args.csv):
        print(line)
    if noise_path is not None:
        from tools.noise import compute_noise_rows, merge_noise_rows
        try:
            rows = compute_noise_rows(results)
            total = merge_noise_rows(noise_path, rows)
            print(f"noise of {len(rows)} series written to {noise_path} ({total} series in the table)")
        except Exception as err:  # noqa: BLE001 - the CSV is written; the side table is reported, not fatal
            print(f"tools.export: warning: noise table not written ({type(err).__name__}: {err})", file=sys.stderr)
            return 1
    return 1 if summary.warnings else 0


if __name__ == "__main__":
    sys.exit(main())
