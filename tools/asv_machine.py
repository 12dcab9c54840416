"""Record this machine for asv, with the GPU and software versions that tell results apart.

asv copies every field of the machine entry into each result's `params` and into results/<machine>/machine.json,
so tools.export and the published site can tell GPUs apart. Writes `~/.asv-machine.json` (atomically) and prints
the machine name to pass as `asv run --machine NAME`.
"""
import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile


def _nvidia_smi(field):
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={field}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30, check=True).stdout
        return out.strip().splitlines()[0].strip()
    except (OSError, subprocess.SubprocessError, IndexError):
        return ""


def describe():
    """The machine entry: asv's standard fields plus gpu_name, gpu_driver, cuda, torch and triton versions."""
    import torch
    try:
        import triton
        triton_version = triton.__version__
    except ImportError:
        triton_version = "none"
    gpu_name = _nvidia_smi("name")
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    ram_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") if hasattr(os, "sysconf") else None
    return {
        "arch": platform.machine(),
        "cpu": cpu,
        "num_cpu": str(os.cpu_count()),
        "os": stable_os(platform.system(), platform.release()),
        "ram": stable_ram(ram_bytes),
        "gpu_name": gpu_name or "cpu",
        "gpu_driver": _nvidia_smi("driver_version") or "none",
        "cuda": torch.version.cuda or "none",
        "torch": torch.__version__,
        "triton": triton_version,
    }


def stable_os(system, release):
    """'Linux 6.18' from 'Linux 6.18.44-fc-v973-gpu': asv splits a benchmark's graph by every machine field, and the
    lent GPU machines differ in kernel build and in RAM by a few MB while measuring alike."""
    match = re.match(r"(\d+)\.(\d+)", release)
    return f"{system} {match.group(1)}.{match.group(2)}" if match else f"{system} {release}".strip()


def stable_ram(ram_bytes):
    """Whole GiB ('126GiB'), for the same reason as stable_os."""
    return f"{round(ram_bytes / 2**30)}GiB" if ram_bytes else ""


def default_name(info):
    """One results folder per GPU model: 'nvidia-h200'; CPU-only machines are 'cpu-<hostname>'."""
    if info["gpu_name"] != "cpu":
        return re.sub(r"[^a-z0-9]+", "-", info["gpu_name"].lower()).strip("-")
    return "cpu-" + re.sub(r"[^a-z0-9]+", "-", platform.node().lower()).strip("-")


def write_machine_file(name, info, path):
    entries = {}
    if os.path.exists(path):
        with open(path) as f:
            entries = json.load(f)
    entries[name] = {"machine": name, **info}
    entries["version"] = 1
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".asv-machine.")
    with os.fdopen(fd, "w") as f:
        json.dump(entries, f, indent=4, sort_keys=True)
    os.replace(tmp, path)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tools.asv_machine", description=__doc__.splitlines()[0])
    parser.add_argument("--machine", help="machine name (default: from the GPU model, or cpu-<hostname>)")
    parser.add_argument("--file", default=os.path.expanduser("~/.asv-machine.json"), help="asv machine file")
    args = parser.parse_args(argv)
    info = describe()
    name = args.machine or default_name(info)
    try:
        write_machine_file(name, info, args.file)
    except (OSError, ValueError) as err:
        print(f"error: cannot write {args.file}: {err}", file=sys.stderr)
        return 2
    print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
