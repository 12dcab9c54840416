r"""The main job: benchmark the current commit with asv, export the CSV, draw the plots, publish the site.

By default it runs the tracked tier (every kernel's headline shapes, every greyhound path and the best peer: the
suites whose class name ends in `Tracked`, a few minutes on an H200); `--tier sweep` runs the full sweeps (classes
ending in `Sweep`, for a nightly or release run), `--tier all` both. On a CPU-only machine the suites measure their
small smoke shapes (greyhound through TRITON_INTERPRET=1) and the GPU shapes and peak-CUDA-memory figures read n/a.
Each step is the command a user would type:
  python -m tools.asv_machine
  asv run --machine NAME --record-samples -b 'Tracked\.' HEAD^!
  python -m tools.export --results results --csv docs/data/benchmark_data.csv
  python -m tools.plot --csv docs/data/benchmark_data.csv --out docs/public/assets
  python -m tools.docs --csv docs/data/benchmark_data.csv   (the README's and kernel pages' tables)
  python -m tools.site          (asv publish, then the site's scripts served from local copies)
The steps run in this order and stop at the first that fails: its exit status is this command's (the results asv did
record stay in results/ for a later `python -m tools.export`). asv run's exit status 2 (some benchmark failed) is
not such a stop: the export leaves failed benchmarks out and counts them, the later steps run, and the command exits
2 at the end. `--csv`, `--out` and `-b` are checked before the first
step (exit status 2, nothing run): a CSV that is not the benchmark CSV or cannot be written, an output folder that
cannot be written, an empty or invalid regex (an empty one would make asv run every benchmark).
"""
import argparse
import re
import subprocess
import sys

from tools import asv_machine

TIERS = {"tracked": [r"Tracked\."], "sweep": [r"Sweep\."], "all": []}


def tier_selection(tier):
    """The exact combinations this machine serves in a tier, as asv -b regexes (TIERS' plain regexes select the
    same benchmarks but make asv fork a process for each n/a combination of the grid too)."""
    from benchmarks import harness
    return harness.selection_regexes(harness.suites(None if tier == "all" else tier))


def write_benchmarks_json(path="results/benchmarks.json", benchmark_dir="benchmarks"):
    """asv's benchmarks.json of the suites, the same on every machine (a developer runs this after editing a suite;
    tests/test_asv_pipeline.py checks the committed file against discovery)."""
    import io
    import json

    from asv import util
    from asv_runner.discovery import list_benchmarks

    out = io.StringIO()
    list_benchmarks(benchmark_dir, out)
    benchmarks = {b["name"]: b for b in json.loads(out.getvalue())}
    util.write_json(path, benchmarks, api_version=2)
    return len(benchmarks)


def _run(cmd):
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd).returncode


def _regex(text):
    """An asv -b regex: non-empty (asv reads '' as every benchmark) and one Python's re compiles (asv's does)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expected a non-empty benchmark regex (e.g. 'Tracked\\.'), got {text!r}")
    try:
        re.compile(text)
    except re.error as err:
        raise argparse.ArgumentTypeError(f"expected a valid regex, got {text!r} ({err})") from None
    return text


def check_outputs(csv_path, out):
    """The problem with --csv (not the benchmark CSV, or not writable) or --out (not a folder this user can write,
    or create), as a one-line message; None when there is none. Checked before asv runs, not found by the export or
    the plot after it."""
    from pathlib import Path

    from tools._atomic import check_writable, check_writable_folder
    from tools.export import ExportError, read_csv_rows

    try:
        check_writable(csv_path)
        read_csv_rows(Path(csv_path))
    except (ExportError, OSError) as err:
        return f"--csv: {err}"
    from tools.export import noise_path_of
    from tools.noise import read_noise_table
    try:  # the export writes the noise side table beside the CSV: checked too, before asv measures anything
        noise = noise_path_of(csv_path, None)
        check_writable(noise)
        read_noise_table(noise)
    except (ExportError, OSError, ValueError) as err:
        return f"--csv: the noise table beside it: {err}"
    try:
        check_writable_folder(out)  # the plot writes under OUT/plots and OUT/plots_html
    except OSError as err:
        return f"--out: {err}"
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tools.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--machine", help="asv machine name (default: from the GPU model, or cpu-<hostname>)")
    parser.add_argument("--range", default="HEAD^!", help="commits for asv run (default: the current commit)")
    parser.add_argument("--tier", choices=sorted(TIERS), default="tracked",
                        help="tracked (default: every commit's series), sweep (the full sweeps) or all")
    parser.add_argument("-b", "--bench", action="append", default=[], type=_regex,
                        help="asv benchmark regex (repeatable; replaces --tier's selection)")
    parser.add_argument("--print-selection", action="store_true",
                        help="print the asv -b regexes of --tier for this machine (one a line) and exit")
    parser.add_argument("--discover-only", action="store_true",
                        help="write results/benchmarks.json from the suites (as asv run would) and exit")
    parser.add_argument("--csv", default="docs/data/benchmark_data.csv")
    parser.add_argument("--out", default="docs/public/assets")
    parser.add_argument("--no-publish", action="store_true", help="skip `python -m tools.site` (asv publish)")
    args = parser.parse_args(argv)

    if args.discover_only:
        print(f"tools.bench: {write_benchmarks_json()} benchmarks written to results/benchmarks.json")
        return 0
    regexes = args.bench or tier_selection(args.tier)
    if args.print_selection:
        print("\n".join(regexes))
        return 0
    if args.machine is not None and not args.machine.strip():  # (before: the default name, in silence)
        parser.error("--machine is empty, expected an asv machine name (or leave it out for the default)")
    if not args.range.strip() or args.range.startswith("-"):  # (before: --range=--help reached asv as its option)
        parser.error(f"--range must name commits for asv run (e.g. HEAD^! or HEAD~10..HEAD), got {args.range!r}")
    problem = check_outputs(args.csv, args.out)
    if problem:
        parser.error(problem)
    info = asv_machine.describe()
    machine = args.machine or asv_machine.default_name(info)
    steps = [
        [sys.executable, "-m", "tools.asv_machine", "--machine", machine],
        [sys.executable, "-m", "asv", "run", "--machine", machine, "--record-samples", "--show-stderr",
         *[a for b in regexes for a in ("-b", b)], args.range],
        [sys.executable, "-m", "tools.export", "--results", "results", "--csv", args.csv],
        [sys.executable, "-m", "tools.plot", "--csv", args.csv, "--out", args.out],
        [sys.executable, "-m", "tools.docs", "--csv", args.csv],  # the README's and kernel pages' tables
    ]
    if not args.no_publish:
        steps.append([sys.executable, "-m", "tools.site"])  # asv publish, with the site's JS/CSS served locally
    benchmarks_failed = 0
    for number, step in enumerate(steps):
        status = _run(step)
        if status == 2 and step is steps[1]:  # asv run's "some benchmark failed": what it measured is recorded, and
            # the export leaves the failed ones out and counts them, so the later steps still run
            benchmarks_failed = status
            print("tools.bench: asv run: some benchmarks failed (exit status 2; named above); exporting what was "
                  "measured", file=sys.stderr)
        elif status:  # before: every later step ran on what the failed one left, and the exit status was 1
            later = [" ".join(s[1:4]) for s in steps[number + 1:]]
            print(f"tools.bench: error: exit status {status}: {' '.join(step[1:4])}"
                  + (f"; not run: {'; '.join(later)}" if later else ""), file=sys.stderr)
            return status if status > 0 else 128 - status  # killed by signal N: 128 + N, as a shell says
    if args.tier == "tracked" and not args.bench:
        where = "on this GPU" if info["gpu_name"] != "cpu" else "(on a CPU: the smoke shapes)"
        print(f"tools.bench: ran the tracked tier {where}; the full sweeps: python -m tools.bench --tier sweep "
              f"(or asv run -b 'Sweep\\.' HEAD^!)")
    return benchmarks_failed


if __name__ == "__main__":
    sys.exit(main())
