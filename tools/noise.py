"""How noisy each tracked series is: within a process, between processes and between machines.

    python -m tools.noise [--results results] [--out docs/data/noise.csv]

Every commit's tracked tier is one process (benchmarks/harness.py), so the results history of a machine holds one
process per commit and series. For each series (benchmark x parameter combination) this writes a side table of the
benchmark CSV, keyed like it (kernel, provider, mode, metric, x, extra config, GPU) and by the asv benchmark,
environment and machine (NOISE_KEY), each row naming the benchmark version it was measured under:

* within_process_cv: the median over runs of the samples' robust coefficient of variation (IQR / 1.349 / median);
* between_process_cv: the spread of one run's median around the next on the same GPU: 1.4826 x MAD of the
  successive differences of log-medians, divided by sqrt(2) (a commit that really changed the series is an outlier
  the MAD ignores); empty where no GPU has two differences of the series (the spread of one is 0 by construction);
* between_machine_cv: the standard deviation of the per-GPU median of the log-medians, where runs of two or more
  GPUs are known (`results/<machine>/gpus.csv`: commit, gpu_uuid, written by scripts/h200_asv.sh; each machine's
  runs told apart by its own file); empty otherwise.
tools.gate reads the same statistics (history_noise, median_standard_error) to set each series' threshold.

The table is merged, like the benchmark CSV: the series these results give replace their rows (NOISE_KEY), the rows of
other series (another results directory's, e.g. docs/perf/h200-results-v1) stay where they are; the read, merge and
atomic write hold the table's lock (tools._atomic.locked). A table of the earlier schema (LEGACY_COLUMNS) is rewritten
in this one, its rows of the series read replaced; a table whose columns are neither is left untouched
(an error).

Exit status, as tools.export's: 0 = everything read; 1 = a result file, benchmark entry or machine.json could not be
read, or a machine's gpus.csv (a one-line warning names it, as the export's does; the table is written from the rest);
2 = a results directory
or its benchmarks.json is missing or unreadable, a directory is given twice, or the table cannot be read or written
(nothing is written).
"""
import argparse
import csv
import io
import json
import math
import statistics
import sys
from pathlib import Path

from tools import CsvFormatError, csv_records
from tools._atomic import locked, write_atomic

# Until session 58 the table had neither asv_machine nor benchmark_version (LEGACY_COLUMNS): two machines with one GPU
# name, or two versions of one benchmark, were one key, and re-running one machine dropped the other's rows. A table of
# the earlier schema is read, its rows' two new cells empty, and rewritten in this one (merge_noise_rows).
LEGACY_COLUMNS = ("kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name", "x_name", "x_value",
                  "extra_benchmark_config_str", "gpu_name", "runs", "gpus", "within_process_cv", "between_process_cv",
                  "between_machine_cv", "benchmark", "asv_environment")
COLUMNS = LEGACY_COLUMNS + ("asv_machine", "benchmark_version")
# One series of the table: a re-run replaces its rows, whatever their benchmark_version (a version the results no longer
# hold is dropped with them; versions the results hold side by side are rows of one series, written together).
NOISE_KEY = ("kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name", "x_name", "x_value",
             "extra_benchmark_config_str", "gpu_name", "benchmark", "asv_environment", "asv_machine")
LEGACY_KEY = tuple(c for c in NOISE_KEY if c in LEGACY_COLUMNS)  # (what an earlier-schema row is matched on)
GPUS_FILE = "gpus.csv"


def median_standard_error(samples):
    """Standard error of the median of log samples (robust scale from the IQR); 0 without enough samples."""
    if not samples or len(samples) < 4:
        return 0.0
    logs = sorted(math.log(s) for s in samples)
    q1, _, q3 = statistics.quantiles(logs, n=4)
    return 1.2533 * ((q3 - q1) / 1.349) / math.sqrt(len(logs))


def robust_cv(samples):
    if not samples or len(samples) < 4:
        return float("nan")
    q1, q2, q3 = statistics.quantiles(samples, n=4)
    return (q3 - q1) / 1.349 / q2


def history_noise(series, history):
    """(sigma of the difference between two runs, number of differences): 1.4826 x MAD of successive differences
    of the series' log-medians over `history` (runs in commit order)."""
    logs = [math.log(run.values[series][0]) for run in history if series in run.values]
    diffs = [b - a for a, b in zip(logs, logs[1:])]
    if not diffs:
        return 0.0, 0
    center = statistics.median(diffs)
    return 1.4826 * statistics.median(abs(d - center) for d in diffs), len(diffs)


def read_gpus(results_dirs, machines=None):
    """{commit: gpu_uuid} from every results/<machine>/gpus.csv (only those of `machines` when given); a commit
    measured more than once has the GPU of its last row. ValueError (naming the file) when one is unreadable."""
    gpus = {}
    for results_dir in map(Path, results_dirs):
        for path in sorted(results_dir.glob(f"*/{GPUS_FILE}")):
            if machines is not None and path.parent.name not in machines:
                continue
            try:
                with open(path, newline="", encoding="utf-8") as f:
                    reader = csv.DictReader(f)
                    if not {"commit", "gpu_uuid"} <= set(reader.fieldnames or ()):
                        raise ValueError(f"columns {reader.fieldnames}, expected commit and gpu_uuid")
                    for row in reader:
                        if row["commit"] and row["gpu_uuid"]:
                            gpus[row["commit"]] = row["gpu_uuid"]
            except (OSError, UnicodeDecodeError, csv.Error, ValueError) as err:
                raise ValueError(f"{path}: cannot read ({err})") from None
    return gpus


def noise_rows(runs, gpus, benchmarks, machine_info=None, machine=""):
    """One row per series of `runs` (tools.gate.load_runs), keyed like the benchmark CSV: `benchmarks` maps a
    benchmark's name, or (name, version) as load_runs' `metas` gives it, to its benchmarks.json entry; the GPU's name
    falls back on `machine_info` (machine.json) and the `machine` name as the export's rows do."""
    from tools.export import ExportSummary, describe_benchmark, gpu_name_of, parse_param

    ordered = sorted(runs.values(), key=lambda r: (r.date, r.commit))
    series_all = sorted({s for run in ordered for s in run.values}, key=lambda s: (s.label(), s.env))
    summary, rows = ExportSummary(), []
    for series in series_all:
        meta = benchmarks.get((series.benchmark, series.version)) or benchmarks[series.benchmark]
        spec = describe_benchmark(series.benchmark, meta, summary)
        present = [run for run in ordered if series in run.values]
        by_gpu = {}
        for run in present:
            by_gpu.setdefault(gpus.get(run.commit, "?"), []).append(run)
        n_diffs, weighted = 0, 0.0
        for gpu_runs in by_gpu.values():
            sigma, n = history_noise(series, gpu_runs)
            if n >= 2:  # (the spread of one difference about itself is 0 by construction: no figure, not a zero)
                weighted += sigma * n
                n_diffs += n
        between = weighted / n_diffs / math.sqrt(2) if n_diffs else float("nan")
        known = {gpu: runs_ for gpu, runs_ in by_gpu.items() if gpu != "?"}
        spread = float("nan")  # (between GPUs)
        if len(known) >= 2:
            medians = [statistics.median(math.log(r.values[series][0]) for r in runs_) for runs_ in known.values()]
            spread = statistics.stdev(medians)
        within = [robust_cv(run.values[series][1]) for run in present if run.values[series][1]]
        within = [w for w in within if not math.isnan(w)]
        named = {name: parse_param(value) for name, value in zip(meta.get("param_names") or [], series.combo)}
        provider = named.pop("provider", ("default", None))[0]
        mode = named.pop("mode", ("full", None))[0]
        x_value = named.pop(spec.x_name)[0] if spec.x_name in named else ""
        rows.append({
            "kernel_name": spec.kernel_name, "kernel_provider": provider, "kernel_operation_mode": mode,
            "metric_name": spec.metric_name, "x_name": spec.x_name, "x_value": x_value,
            "extra_benchmark_config_str": json.dumps({k: v for k, (_, v) in named.items()}, sort_keys=True),
            "gpu_name": gpu_name_of(present[-1].params, machine_info or {}, machine), "runs": len(present),
            "gpus": len(known),
            "within_process_cv": _fmt(statistics.median(within) if within else float("nan")),
            "between_process_cv": _fmt(between), "between_machine_cv": _fmt(spread),
            "benchmark": series.benchmark, "asv_environment": series.env, "asv_machine": machine,
            "benchmark_version": "" if series.version is None else str(series.version),
        })
    return rows


def _fmt(value):
    return "" if value is None or math.isnan(value) else f"{value:.5f}"


def compute_noise_rows(results_dirs, tier=None, warnings=None):
    """The table's rows for every machine in `results_dirs` (each directory's results read against its own
    benchmarks.json; the GPU's name from the result params, else the machine's machine.json, as the export does).
    A result file, benchmark entry or machine.json that cannot be read is left out and named in `warnings` (a list,
    when given), one "path: problem" line each, as tools.export warns about them."""
    from tools.export import ExportSummary, _results_dirs, load_benchmarks, read_machine_json
    from tools.gate import load_runs

    results_dirs = _results_dirs(results_dirs)  # (a directory given twice is refused: ExportError)
    warnings = [] if warnings is None else warnings
    benchmarks = {}
    for d in results_dirs:
        benchmarks.update(load_benchmarks(d))
    rows = []
    machines = sorted({p.name for d in results_dirs for p in d.iterdir() if p.is_dir() and not p.name.startswith(".")})
    for machine in machines:
        summary = ExportSummary()
        infos = [read_machine_json(d / machine, summary) for d in results_dirs if (d / machine).is_dir()]
        warnings += summary.warnings
        metas = dict(benchmarks)
        runs = load_runs(results_dirs, machine, tier=tier, warnings=warnings, metas=metas)
        try:  # this machine's own record of which GPU ran which commit (a commit two machines ran has two GPUs)
            gpus = read_gpus(results_dirs, {machine})
        except ValueError as err:  # only the between-machine figures need it: a warning, as in tools.gate
            warnings.append(f"{err}; machine {machine}'s runs not told apart by GPU")
            gpus = {}
        rows += noise_rows(runs, gpus, metas, next((info for info in infos if info), {}), machine)
    return rows


def read_noise_table(path):
    """The rows of an existing noise table (none when it does not exist or is empty), every row with COLUMNS' cells: a
    table of the earlier schema (LEGACY_COLUMNS) reads with asv_machine and benchmark_version empty. ValueError naming
    the file when its columns are neither or a row is cut (tools.csv_records)."""
    path = Path(path)
    if not path.exists():
        return []
    try:
        text = path.read_text(encoding="utf-8-sig")  # (a byte-order mark, as a spreadsheet saves it, is not a column)
        if not text.strip():
            return []
        header = next(csv.reader(io.StringIO(text)), None)
        if header is not None and tuple(header) == LEGACY_COLUMNS:
            return [{**row, "asv_machine": "", "benchmark_version": ""}
                    for row in csv_records(text, LEGACY_COLUMNS, path)]
        return csv_records(text, COLUMNS, path)
    except CsvFormatError as err:
        raise ValueError(f"{err}; left it untouched") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"cannot read {path}: {err}; left it untouched") from None


def merge_noise_rows(out, rows):
    """Merge `rows` into the table at `out` (holding its lock; written atomically): each series (NOISE_KEY) of `rows`
    replaces that series' rows where they stand, new series are appended, every other row stays. A row of the
    earlier schema (no asv_machine: read_noise_table) is that series' row of whichever machine and version: rows of
    these results with its LEGACY_KEY replace it. Returns the number of rows in the table."""
    new, legacy = {}, {}
    for row in rows:  # a carriage return becomes a line feed, which the writer quotes (as the export's rows)
        row = {c: str(v).replace("\r\n", "\n").replace("\r", "\n") for c, v in row.items()}
        key = tuple(row[c] for c in NOISE_KEY)
        new.setdefault(key, []).append(row)
        legacy.setdefault(tuple(row[c] for c in LEGACY_KEY), []).append(key)
    with locked(out):
        merged, placed = [], set()
        for row in read_noise_table(out):
            key = tuple(row[c] for c in NOISE_KEY)
            if not row["asv_machine"] and key not in new:  # an earlier-schema row: the first new row of its series
                key = next(iter(legacy.get(tuple(row[c] for c in LEGACY_KEY), ())), key)  # takes its place
            if key not in new:
                merged.append(row)
            elif key not in placed:
                merged += new[key]
                placed.add(key)
        merged += [row for key, key_rows in new.items() if key not in placed for row in key_rows]
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(merged)
        write_atomic(Path(out), buffer.getvalue())
    return len(merged)


def write_noise_table(results_dirs, out, tier=None, warnings=None):
    """Compute the table for every machine in `results_dirs` and merge it into `out` (merge_noise_rows); returns the
    rows computed. What could not be read is named in `warnings` (compute_noise_rows)."""
    rows = compute_noise_rows(results_dirs, tier, warnings)
    merge_noise_rows(out, rows)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tools.noise", description=__doc__.splitlines()[0])
    parser.add_argument("--results", action="append", help="asv results directory (repeatable; default results)")
    parser.add_argument("--out", default="docs/data/noise.csv", help="the side table (default docs/data/noise.csv)")
    args = parser.parse_args(argv)
    if not args.out.strip() or Path(args.out).is_dir():  # ("" is the current directory: its lock file landed above it)
        print(f"tools.noise: error: --out must name the table's file, got {args.out!r}"
              f"{' (a directory)' if args.out.strip() else ''}", file=sys.stderr)
        return 2
    from tools.export import ExportError
    from tools.gate import GateError
    warnings = []
    try:
        rows = write_noise_table(args.results or ["results"], args.out, warnings=warnings)
    except (ExportError, GateError, OSError, ValueError) as err:
        print(f"tools.noise: error: {err}", file=sys.stderr)
        return 2
    for line in warnings:  # as tools.export: the table is written from what could be read, and the status says so
        print(f"tools.noise: warning: {line}", file=sys.stderr)
    print(f"wrote {len(rows)} series to {args.out} (merged: the table's rows of other series stay)")
    return 1 if warnings else 0


if __name__ == "__main__":
    sys.exit(main())
