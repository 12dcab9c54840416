"""Run benchmarks on Modal GPUs and merge what comes back into the local CSV and results/.

    pip install -e ".[modal]" && modal setup
    python -m tools.modal_runner --gpu H100 --benchmark "causal_conv1d --mode full"
    python -m tools.modal_runner --gpu H100 --gpu L40S \\
        --benchmark "chunked_linear_cross_entropy --mode forward" --benchmark "logprobs --mode forward"
    python -m tools.modal_runner --gpu H200 --asv tracked          # the asv tracked tier; results/ comes back
    python -m tools.modal_runner --gpu H100 --dry-run              # print the image and the commands, run nothing

Each `--benchmark` is one sweep command of the harness (`python -m benchmarks KERNEL [options]`, see
benchmarks/__main__.py; the guide's `src/benchmarks/KERNEL_bench.py` form is accepted); with none and no `--asv`,
every kernel runs with its default options. The image installs torch, triton, the project with its `bench` extra
and the `modal` extra (always), each `--extra`, and the `thirdparty` dependency group unless `--skip-thirdparty`
(more with `--group`). Several `--gpu` run in parallel, one Modal function call per GPU; every call's CSV rows are
merged into `--csv` (keyed: a re-run replaces its rows) and its asv results into results/ (tools.merge_results).
`--plot-after` then redraws the plots and the docs tables.
Exit status: 0 every command ran and everything came back merged; 1 a command failed on a GPU (its exit status and
command line are printed; what that GPU did bring back is merged), a GPU's rows could not be merged, or a
`--plot-after` step failed; 2 bad arguments (a `--gpu` that is not one of Modal's GPU types or asks for more of one
than a container gets, a `--csv` that is not ours or cannot be written, ...), found before any GPU runs.
"""
import argparse
import contextlib
import io
import re
import shlex
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from pathlib import Path

from tools import merge_results
from tools.export import ExportError

ROOT = Path(__file__).resolve().parents[1]
REMOTE_ROOT = "/repo"
REMOTE_CSV = "/tmp/greyhound-rows.csv"
GPU_TYPE = re.compile(r"\A[A-Za-z][A-Za-z0-9-]*[!+]?(:[1-9][0-9]*)?\Z")  # Modal's H100, A100-80GB, H100!, H200:2
# The GPU types Modal's `gpu=` takes (case-insensitive; modal.com/docs/guide/gpu) and the most of each one container
# gets (`TYPE:COUNT`): up to 8, an A10 up to 4. H100! is an H100 never upgraded to an H200; B200+ a B200 or a B300.
MODAL_GPUS = {"T4": 8, "L4": 8, "A10": 4, "A10G": 4, "L40S": 8, "A100": 8, "A100-40GB": 8, "A100-80GB": 8,
              "RTX-PRO-6000": 8, "H100": 8, "H100!": 8, "H200": 8, "B200": 8, "B200+": 8}


class RunnerError(Exception):
    pass


def benchmark_argv(spec, kernels=None):
    """`"KERNEL --mode full"` (or the guide's `"src/benchmarks/KERNEL_bench.py --mode full"`) -> argv of the sweep
    command. Raises RunnerError for an empty spec, unbalanced quotes or, when `kernels` is given, an unknown kernel or
    an option the sweep command would refuse (checked here, before a GPU is paid for)."""
    try:
        words = shlex.split(spec)
    except ValueError as err:
        raise RunnerError(f"--benchmark {spec!r}: {err}") from None
    if not words:
        raise RunnerError("--benchmark needs a kernel name, e.g. --benchmark 'logprobs --mode forward'")
    kernel = words[0]
    if kernel.endswith(".py"):
        kernel = Path(kernel).name[:-len(".py")].removesuffix("_bench")
    if kernels is not None and kernel not in kernels:
        raise RunnerError(f"--benchmark {spec!r}: unknown kernel {kernel!r} (one of {', '.join(sorted(kernels))})")
    if kernels is not None:
        # (argparse takes any unambiguous prefix: --no-c is --no-csv)
        if any(len(w) > len("--no") and "--no-csv".startswith(w) for w in words[1:]):
            raise RunnerError(f"--benchmark {spec!r}: --no-csv would bring no rows back")
        if any(w in ("-h", "--help") for w in words[1:]):  # before: planned, and each GPU would print help only
            raise RunnerError(f"--benchmark {spec!r}: --help would measure nothing (run it locally: "
                              f"python -m benchmarks {kernel} --help)")
        if any(w == "--csv" or w.startswith("--csv=") for w in words[1:]):  # before: overridden by REMOTE_CSV
            raise RunnerError(f"--benchmark {spec!r}: --csv is the runner's own (the rows come back into --csv)")
        check_sweep_options(spec, kernel, words[1:])
    return ["python", "-m", "benchmarks", kernel, *words[1:], "--csv", REMOTE_CSV]


def check_sweep_options(spec, kernel, options):
    """RunnerError with the sweep command's own message when it would refuse `options` (benchmarks.__main__)."""
    from benchmarks.__main__ import parse_options

    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said), contextlib.redirect_stdout(io.StringIO()):
            parse_options(kernel, [*options, "--no-csv"])
    except SystemExit as exit_info:
        if exit_info.code == 0:  # argparse's help (an abbreviation of --help)
            raise RunnerError(f"--benchmark {spec!r}: it prints help and measures nothing") from None
        if exit_info.code:
            lines = said.getvalue().strip().splitlines() or [f"exit status {exit_info.code}"]
            raise RunnerError(f"--benchmark {spec!r}: {lines[-1]}") from None


def image_packages(extras=(), groups=(), skip_thirdparty=False, pyproject=ROOT / "pyproject.toml"):
    """The pip requirements of the remote image: the project's dependencies, the bench and modal extras, each extra
    and dependency group asked for, and the thirdparty group unless skipped."""
    project = tomllib.loads(Path(pyproject).read_text())
    optional = project["project"].get("optional-dependencies", {})
    dependency_groups = project.get("dependency-groups", {})
    packages = list(project["project"].get("dependencies", []))
    for extra in ["bench", "modal", *extras]:
        if extra not in optional:
            raise RunnerError(f"--extra {extra!r} is not an extra of pyproject.toml ({', '.join(sorted(optional))})")
        packages += [p for p in optional[extra] if not p.startswith("greyhound")]
    wanted_groups = list(groups) + ([] if skip_thirdparty else ["thirdparty"])
    for group in wanted_groups:
        if group not in dependency_groups:
            raise RunnerError(f"--group {group!r} is not a dependency group of pyproject.toml "
                              f"({', '.join(sorted(dependency_groups))})")
        packages += dependency_groups[group]
    return list(dict.fromkeys(packages))


def commands(benchmarks=(), asv_tier=None, kernels=None):
    """The shell commands one GPU runs, in order."""
    out = [["python", "-m", "pip", "install", "-q", "--no-deps", "-e", REMOTE_ROOT]]
    if asv_tier:
        out.append(["python", "-m", "tools.bench", "--tier", asv_tier, "--no-publish"])
    specs = list(benchmarks) or ([] if asv_tier else sorted(kernels or []))
    out += [benchmark_argv(spec, kernels) for spec in specs]
    return out


def check_image_options(gpus, torch_version):
    """RunnerError for a GPU type that is not a Modal GPU name (H100, A100-80GB, optionally :COUNT) or a torch
    version that is not a version (found here, not at the image build or the spawn)."""
    from packaging.version import InvalidVersion, Version

    for gpu in gpus:
        if not GPU_TYPE.match(gpu):
            raise RunnerError(f"--gpu: expected a GPU type such as H100, H200 or A100-80GB (optionally :COUNT), "
                              f"got {gpu!r}")
        name, _, count = gpu.partition(":")
        most = MODAL_GPUS.get(name.upper())
        if most is None:  # before: accepted, to fail only at the spawn, after the image was built
            raise RunnerError(f"--gpu: expected one of Modal's GPU types ({', '.join(MODAL_GPUS)}), optionally "
                              f":COUNT, got {gpu!r}")
        if count and int(count) > most:
            raise RunnerError(f"--gpu: expected at most {most} {name} GPUs in one container ({name}:1 to "
                              f"{name}:{most}), got {gpu!r}")
    try:
        Version(torch_version)
    except InvalidVersion:
        raise RunnerError(f"--torch: expected a torch version such as 2.11.0, got {torch_version!r}") from None


def plan(args, kernels):
    check_image_options(args.gpu or [], args.torch)
    packages = image_packages(args.extra, args.group, args.skip_thirdparty)
    gpus = {}  # one call per GPU type and count, as first spelt: h100, H100 and H100:1 are one (Modal reads them alike)
    for gpu in args.gpu or ["H100"]:
        name, _, count = gpu.partition(":")
        gpus.setdefault((name.upper(), int(count or 1)), gpu)
    return {"gpus": list(gpus.values()), "torch": args.torch, "packages": packages,
            "commands": commands(args.benchmark, args.asv, kernels)}


def known_kernels():
    """Kernel names of the sweep command (`python -m benchmarks KERNEL`)."""
    from benchmarks.__main__ import kernels
    return set(kernels())


def merge_back(csv_text, results_blob, csv_path, dest=ROOT):
    """Merge one GPU's CSV rows into `csv_path` and its results/ into dest/results; returns (rows, result files)."""
    from tools.export import csv_rows_from_text, merge_csv_rows

    rows = csv_rows_from_text(csv_text) if csv_text else []
    if rows:
        merge_csv_rows(csv_path, rows)
    return len(rows), unpack_results(results_blob, dest) if results_blob else 0


def check_csv(csv_path):
    """RunnerError when the rows coming back could not be merged into `csv_path`: not our CSV, or not writable (its
    folder missing and not creatable, not a folder, or read-only; tools._atomic.check_writable). Found before the
    GPUs run, --dry-run included."""
    from tools._atomic import check_writable
    from tools.export import ExportError, read_csv_rows

    try:
        check_writable(csv_path)  # before: only read, so a read-only --csv failed after the GPUs had run
        read_csv_rows(Path(csv_path))
    except (ExportError, OSError) as err:
        raise RunnerError(f"--csv: {err}") from None


def unpack_results(blob, dest=ROOT):
    """Merge results/ from the remote run into the local one (tools.merge_results: per benchmark and parameter
    combination, so results that changed here meanwhile, e.g. from another run in parallel, are kept).
    Returns the number of files copied or merged."""
    with tempfile.TemporaryDirectory() as scratch:
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
            folder = merge_results.extract_results(tar, scratch)
        if folder.name != "results":  # only results/ comes back into the repository
            return 0
        summary = merge_results.merge_tree(folder, Path(dest) / "results")
    return summary["copied"] + summary["merged"]


def run_commands(command_list, root=REMOTE_ROOT, csv_path=REMOTE_CSV):
    """What one GPU does (the Modal function's body): run each command in `root`, in order, every one even after a
    failure (a failed sweep leaves the others' rows); returns (the CSV rows' text, root/results as a .tar.gz, the
    failures as [(command line, exit status)]), so that a command that failed on the GPU is reported here, not read
    as a run that merged nothing."""
    failures = []
    for command in command_list:
        status = subprocess.run(command, cwd=root).returncode
        if status:
            failures.append((shlex.join(command), status))
    csv_text = Path(csv_path).read_text() if Path(csv_path).exists() else ""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        if (Path(root) / "results").is_dir():
            tar.add(f"{root}/results", arcname="results")
    return csv_text, buf.getvalue(), failures


def build_app(the_plan):
    import modal

    image = (
        modal.Image.debian_slim(python_version="3.11")
        .apt_install("git")
        .pip_install(f"torch=={the_plan['torch']}", "triton")
        .pip_install(*[p for p in the_plan["packages"] if not p.startswith(("torch", "triton"))])
        .add_local_dir(ROOT, REMOTE_ROOT, copy=True, ignore=[".asv", ".whl", ".carry", "**/__pycache__"])
    )
    app = modal.App("greyhound-bench")

    @app.function(image=image, timeout=3 * 3600, serialized=True)
    def run_on_gpu(command_list):
        return run_commands(command_list)

    return app, run_on_gpu


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tools.modal_runner", description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--gpu", action="append", help="Modal GPU type (repeatable: run in parallel; default H100)")
    parser.add_argument("--benchmark", action="append", default=[],
                        help='a sweep command, e.g. "causal_conv1d --mode full" (repeatable; default: every kernel)')
    parser.add_argument("--asv", choices=["tracked", "sweep", "all"], help="also run asv's tier (tools.bench)")
    parser.add_argument("--extra", action="append", default=[], help="a pyproject extra to install (repeatable)")
    parser.add_argument("--group", action="append", default=[], help="a dependency group to install (repeatable)")
    parser.add_argument("--skip-thirdparty", action="store_true", help="leave the thirdparty group out")
    parser.add_argument("--torch", default="2.11.0", help="torch version in the image (default 2.11.0)")
    parser.add_argument("--csv", default=str(ROOT / "docs/data/benchmark_data.csv"), help="the CSV to merge into")
    parser.add_argument("--plot-after", action="store_true", help="redraw plots and docs tables after merging")
    parser.add_argument("--dry-run", action="store_true", help="print the image and the commands; run nothing")
    args = parser.parse_args(argv)
    try:
        the_plan = plan(args, known_kernels())
        check_csv(args.csv)
    except RunnerError as err:
        print(f"tools.modal_runner: error: {err}", file=sys.stderr)
        return 2
    if args.dry_run:
        print(f"image: debian_slim python 3.11, torch=={the_plan['torch']}, triton, "
              f"{' '.join(the_plan['packages'])}")
        for gpu in the_plan["gpus"]:
            for command in the_plan["commands"]:
                print(f"[{gpu}] {shlex.join(command)}")
        return 0
    try:
        import modal  # noqa: F401
    except ImportError:
        print("error: the Modal runner needs the modal package: pip install -e '.[modal]'", file=sys.stderr)
        return 2
    app, run_on_gpu = build_app(the_plan)
    with app.run():
        calls = {gpu: run_on_gpu.with_options(gpu=gpu).spawn(the_plan["commands"]) for gpu in the_plan["gpus"]}
        failed = []
        for gpu, call in calls.items():
            csv_text, blob, failures = call.get()
            for command, status in failures:  # what did come back is still merged
                print(f"[{gpu}] error: exit status {status}: {command}", file=sys.stderr)
            if failures:
                failed.append(gpu)
            try:
                rows, files = merge_back(csv_text, blob, args.csv)
            except (ExportError, OSError, ValueError, EOFError, tarfile.TarError) as err:  # (a damaged archive too)
                # the other GPUs' rows and results are still merged
                print(f"[{gpu}] error: not merged: {err}", file=sys.stderr)
                failed.append(gpu)
                continue
            print(f"[{gpu}] merged {rows} CSV rows into {args.csv} and {files} result files into results/")
    if args.plot_after and not redraw(args.csv):
        return 1
    return 1 if failed else 0


def redraw(csv_path):
    """--plot-after: tools.plot, then tools.docs, on `csv_path`; stops at a step that fails (before: its exit status
    was ignored and the run exited 0), naming it and its exit status. Returns whether both succeeded."""
    for step in (["tools.plot", "--csv", str(csv_path)], ["tools.docs", "--csv", str(csv_path)]):
        status = subprocess.run([sys.executable, "-m", *step], cwd=ROOT).returncode
        if status:
            print(f"tools.modal_runner: error: --plot-after: exit status {status}: python -m {shlex.join(step)}"
                  + ("; tools.docs not run" if step[0] == "tools.plot" else ""), file=sys.stderr)
            return False
    return True


if __name__ == "__main__":
    sys.exit(main())
