"""Record this machine for asv, with the GPU and software versions that tell results apart.

asv copies every field of the machine entry into each result's `params` and into results/<machine>/machine.json,
so tools.export and the published site can tell GPUs apart. Writes `~/.asv-machine.json` (atomically) and prints
the machine name to pass as `asv run --machine NAME`. The name is a folder's (asv files results under
results/<machine>/): letters, digits, '.', '_' and '-', starting with a letter or digit, without '..'.
Exit status: 0 written; 2 a bad --machine or --file, or the file cannot be read or written (it is left as it was).
"""
import argparse
import json
import os
import platform
import re
import subprocess
import sys

from tools._atomic import locked, write_atomic

MACHINE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class MachineError(Exception):
    pass


def check_name(name, what="--machine"):
    """`name` when it is one folder's name asv can file results under (MACHINE_NAME, no '..'); MachineError naming
    `what` otherwise: a '/' or '..' would put results/<machine>/ elsewhere, a space or a leading dot or '-' breaks
    the scripts and the asv command line it is passed on."""
    if not MACHINE_NAME.fullmatch(name) or ".." in name:
        raise MachineError(f"{what} must be a machine name of letters, digits, '.', '_' and '-', starting with a "
                           f"letter or digit, without '..' (asv files its results under results/<machine>/), "
                           f"got {name!r}")
    return name


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


def read_machine_file(path):
    """The entries of asv's machine file at `path` ({} where there is none); MachineError naming it when it cannot be
    read or is not a JSON object."""
    if not os.path.exists(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            entries = json.load(f)
    except (OSError, ValueError) as err:  # ValueError: bad JSON, or not UTF-8
        raise MachineError(f"cannot read {path}: {err}") from None
    if not isinstance(entries, dict):
        raise MachineError(f"cannot read {path}: expected a JSON object of machine entries (asv's machine file), "
                           f"got {type(entries).__name__}")
    return entries


def write_machine_file(name, info, path):
    """Add (or replace) machine `name`'s entry in the machine file at `path`, keeping the others; atomically: on a
    failure the file is as it was and no temporary file is left. MachineError when the file cannot be read; OSError
    when it cannot be written."""
    with locked(path):  # (before: four writers at once kept 48 of their 160 entries)
        entries = read_machine_file(path)
        entries[name] = {"machine": name, **info}
        entries["version"] = 1
        write_atomic(path, json.dumps(entries, indent=4, sort_keys=True))  # (a symbolic link written through)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tools.asv_machine", description=__doc__.splitlines()[0])
    parser.add_argument("--machine", help="machine name (default: from the GPU model, or cpu-<hostname>)")
    parser.add_argument("--file", default=os.path.expanduser("~/.asv-machine.json"), help="asv machine file")
    args = parser.parse_args(argv)
    try:  # the arguments and the file are checked before torch is imported
        if args.machine is not None:
            check_name(args.machine)
        if not args.file:
            raise MachineError("--file is empty, expected the path of asv's machine file (e.g. ~/.asv-machine.json)")
        read_machine_file(args.file)
        info = describe()
        name = args.machine if args.machine is not None else default_name(info)
        check_name(name, f"the machine name made from GPU {info['gpu_name']!r} (pass --machine NAME)")
        write_machine_file(name, info, args.file)
    except MachineError as err:
        print(f"tools.asv_machine: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"tools.asv_machine: error: cannot write {args.file}: {err}", file=sys.stderr)
        return 2
    print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
