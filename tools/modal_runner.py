"""Run the main job (tools.bench) on a Modal GPU and unpack the asv results it brings back into results/.

    pip install -e ".[modal]" && modal setup
    python -m tools.modal_runner --gpu H200 -b "time_cross_entropy_with_grad"

The image installs torch, triton and the bench/thirdparty extras; the repository (with .git, so asv can check out
commits) is copied in. Only results/ comes back, merged into the local one (tools.merge_results): export and plot
locally afterwards.
"""
import argparse
import io
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from tools import merge_results

ROOT = Path(__file__).resolve().parents[1]


def build_app(gpu, torch_version):
    import modal

    image = (
        modal.Image.debian_slim(python_version="3.11")
        .apt_install("git")
        .pip_install(f"torch=={torch_version}", "triton")
        .pip_install("asv", "asv-runner", "virtualenv", "pandas", "matplotlib", "plotly", "GitPython",
                     "liger-kernel", "fla-core", "cut-cross-entropy")
        .add_local_dir(ROOT, "/repo", copy=True, ignore=[".asv", ".whl", ".carry", "**/__pycache__"])
    )
    app = modal.App("greyhound-bench")

    @app.function(gpu=gpu, image=image, timeout=3 * 3600, serialized=True)
    def run_bench(bench_args):
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "-e", "/repo"], check=True)
        subprocess.run([sys.executable, "-m", "tools.bench", "--no-publish", *bench_args], cwd="/repo")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            tar.add("/repo/results", arcname="results")
        return buf.getvalue()

    return app, run_bench


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


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tools.modal_runner", description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", default="H200", help="Modal GPU type (default H200)")
    parser.add_argument("--torch", default="2.11.0", help="torch version in the image")
    parser.add_argument("-b", "--bench", action="append", default=[], help="asv benchmark regex (repeatable)")
    args = parser.parse_args(argv)
    try:
        import modal  # noqa: F401
    except ImportError:
        print("error: the Modal runner needs the modal package: pip install -e '.[modal]'", file=sys.stderr)
        return 2
    app, run_bench = build_app(args.gpu, args.torch)
    with app.run():
        blob = run_bench.remote([a for b in args.bench for a in ("-b", b)])
    print(f"merged {unpack_results(blob)} result files into {ROOT / 'results'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
