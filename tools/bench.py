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
"""
import argparse
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


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tools.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--machine", help="asv machine name (default: from the GPU model, or cpu-<hostname>)")
    parser.add_argument("--range", default="HEAD^!", help="commits for asv run (default: the current commit)")
    parser.add_argument("--tier", choices=sorted(TIERS), default="tracked",
                        help="tracked (default: every commit's series), sweep (the full sweeps) or all")
    parser.add_argument("-b", "--bench", action="append", default=[],
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
    failed = [" ".join(step[1:4]) for step in steps if _run(step) != 0]
    if args.tier == "tracked" and not args.bench:
        where = "on this GPU" if info["gpu_name"] != "cpu" else "(on a CPU: the smoke shapes)"
        print(f"tools.bench: ran the tracked tier {where}; the full sweeps: python -m tools.bench --tier sweep "
              f"(or asv run -b 'Sweep\\.' HEAD^!)")
    if failed:
        print(f"tools.bench: steps that failed: {'; '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
