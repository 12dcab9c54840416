"""The main job: benchmark the current commit with asv, export the CSV, draw the plots, publish the site.

On a CPU-only machine the suites run small shapes (greyhound through TRITON_INTERPRET=1) and peak-CUDA-memory
benchmarks are left out; on a GPU the suites run their full sweeps. Each step is the command a user would type:
  python -m tools.asv_machine
  asv run --machine NAME --record-samples HEAD^!
  python -m tools.export --results results --csv docs/data/benchmark_data.csv
  python -m tools.plot --csv docs/data/benchmark_data.csv --out docs/public/assets
  asv publish
"""
import argparse
import subprocess
import sys

from tools import asv_machine


def _run(cmd):
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd).returncode


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tools.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--machine", help="asv machine name (default: from the GPU model, or cpu-<hostname>)")
    parser.add_argument("--range", default="HEAD^!", help="commits for asv run (default: the current commit)")
    parser.add_argument("-b", "--bench", action="append", default=[], help="asv benchmark regex (repeatable)")
    parser.add_argument("--csv", default="docs/data/benchmark_data.csv")
    parser.add_argument("--out", default="docs/public/assets")
    parser.add_argument("--no-publish", action="store_true", help="skip `asv publish`")
    args = parser.parse_args(argv)

    machine = args.machine or asv_machine.default_name(asv_machine.describe())
    steps = [
        [sys.executable, "-m", "tools.asv_machine", "--machine", machine],
        [sys.executable, "-m", "asv", "run", "--machine", machine, "--record-samples", "--show-stderr",
         *[a for b in args.bench for a in ("-b", b)], args.range],
        [sys.executable, "-m", "tools.export", "--results", "results", "--csv", args.csv],
        [sys.executable, "-m", "tools.plot", "--csv", args.csv, "--out", args.out],
    ]
    if not args.no_publish:
        steps.append([sys.executable, "-m", "asv", "publish"])
    failed = [" ".join(step[1:4]) for step in steps if _run(step) != 0]
    if failed:
        print(f"tools.bench: steps that failed: {'; '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
