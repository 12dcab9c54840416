"""Ad-hoc sweeps over the same harness as the asv suites: `python -m benchmarks KERNEL [options]`.

    python -m benchmarks chunked_linear_cross_entropy --mode full --providers greyhound,torch-eager,torch-compile \\
        --batch-size 8192 --d-models 4096,8192 --vocab-sizes 65536,128256

Each combination goes through the harness exactly as in asv (fresh random inputs, the fp64 correctness gate, the
warm-up, SAMPLES do_bench-style timed calls, one peak-memory call), all in this one process. The command prints a
table and merges the rows into the benchmark CSV (atomically; keyed like tools.export's rows, with asv_machine
`sweep-cli` and asv_environment `python-X.Y`, so re-running a sweep replaces its rows and never duplicates them).
`python -m benchmarks KERNEL --help` lists the kernel's providers and shape options (each takes one value or a
comma-separated list; defaults: the tracked tier's shape on this machine).
Exit status: 0 every combination was timed and its rows merged; 1 a combination failed, or none was timed (every one
skipped: its provider is not installed here); 2 bad arguments (found before anything is measured), no combination to
measure (none served), or rows that could not be merged. A sweep that times nothing leaves the CSV untouched.
"""
import argparse
import functools
import itertools
import re
import platform
import sys
from pathlib import Path

import numpy as np

from benchmarks import harness


def kernels():
    """kernel_name -> its Tracked suite class (which defines inputs, reference and providers), or its Sweep class
    for a kernel only the sweep tier measures."""
    found = {}
    for cls in harness.suites():
        if cls.kernel_name not in found or cls.tier == "tracked":
            found[cls.kernel_name] = cls
    return found


def known_providers(kernel_name):
    found = []
    for cls in harness.suites():
        if cls.kernel_name == kernel_name:
            found += [p for p in cls.providers if p not in found]
    return found


def known_values(kernel_name, name):
    """The values a text shape option may take: those the kernel's suites declare (every tier), and for `dtype`
    every dtype the harness knows."""
    found = list(harness.DTYPES) if name == "dtype" else []
    for cls in harness.suites():
        if cls.kernel_name == kernel_name and name in cls.param_names:
            found += [v for v in cls.params[cls.param_names.index(name)] if v not in found]
    return found


MAX_SIZE = 2**40  # a size option's bound: far above any tensor a GPU holds, far below int64's


def _values(text, like=""):
    """One value or a comma-separated list, in order, a repeated value once (it would be measured twice), no blank
    entry; integers (where `like` is one) must be positive and at most MAX_SIZE. ArgumentTypeError (argparse names the
    option) otherwise."""
    out = []
    items = [item.strip() for item in re.split(r",(?![^\[]*\])", str(text))]  # commas in a variant's [...] are its
    if any(items) and not all(items):  # before: `full,,forward` dropped the blank silently ("" alone was refused)
        raise argparse.ArgumentTypeError(f"expected one value or a comma-separated list without blank entries, "
                                         f"got {text!r}")
    for item in items:
        if not item:
            continue
        if isinstance(like, int):
            # ASCII digits only: int() also takes "1_000" and other scripts' digits ("٣"), which no one means here
            item = int(item) if re.fullmatch(r"[+]?[0-9]+", item) else None
            if item is None or item < 1:
                raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
            if item > MAX_SIZE:  # else torch's int64 overflow ends the combination in a C++ backtrace
                raise argparse.ArgumentTypeError(f"expected integers at most 2**40, got {text!r}")
        out.append(item)
    if not out:
        raise argparse.ArgumentTypeError(f"expected one value or a comma-separated list, got {text!r}")
    return list(dict.fromkeys(out))


class _Once(argparse.Action):
    """argparse's store, refusing an option given twice: with last-wins, `--dtype bfloat16 --dtype float16` measured
    float16 alone where both were meant."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = namespace.__dict__.setdefault("_given", {})
        many = isinstance(values, list)
        text = ",".join(map(str, values)) if many else str(values)
        if self.dest in given:
            first, then = given[self.dest]
            fix = f"give one comma-separated list: {option_string} {then},{text}" if many else "give it once"
            parser.error(f"argument {'/'.join(self.option_strings)}: given twice ({first} {then}, then "
                         f"{option_string} {text}); {fix}")
        given[self.dest] = (option_string, text)
        setattr(namespace, self.dest, values)


def _tuning_help(suite):
    """The epilog's paragraph on tuning variants: the op's tunables, or that it has none."""
    if suite.tuning_module is None:
        return "This kernel has no tuning variants."
    import importlib
    from greyhound import _tuning
    module = importlib.import_module(suite.tuning_module)
    declared = _tuning.tunables(getattr(module, "TUNING_OP", suite.kernel_name))
    lines = [f"  {name} ({_tuning.type_name(kind)}): {text}" for name, (kind, text) in sorted(declared.items())]
    return ("\n\nTuning variants force launch parameters for a whole combination, through the same gate and timer, "
            "e.g. --providers 'greyhound,greyhound[" + f"{sorted(declared)[0]}=...]':\n" + "\n".join(lines))


def _shapes_here(suite):
    """The suite's shapes on this machine (the tracked tier's GPU shapes on a GPU, its CPU shapes elsewhere)."""
    return suite.gpu_shapes if harness.ON_GPU else suite.cpu_shapes


def _default_shape(shapes, key, value):
    """The first of `shapes` whose option `key` is `value` (the first shape where none is)."""
    return next((s for s in shapes if s[key] == value), shapes[0])


def build_parser(kernel_name, suite):
    shapes = _shapes_here(suite)
    default = shapes[0]
    providers = known_providers(kernel_name)
    parser = argparse.ArgumentParser(
        prog=f"python -m benchmarks {kernel_name}",
        description=f"Sweep {kernel_name} through the benchmark harness (gate, warm-up, {harness.SAMPLES} samples, "
                    f"peak memory) and merge the rows into the CSV.",
        epilog=f"providers: {', '.join(providers)} (third-party ones where installed; torch-compile on a GPU). "
               f"Defaults: the tracked tier's shape on this machine ({'GPU' if harness.ON_GPU else 'CPU'}). "
               + _tuning_help(suite),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", "--modes", dest="modes", default=",".join(suite.modes), type=_values,
                        action=_Once,
                        help=f"comma-separated modes (default: {','.join(suite.modes)})")
    parser.add_argument("--providers", "--provider", dest="providers",
                        default=",".join(p for p in suite.providers), type=_values, action=_Once,
                        help=f"comma-separated providers, of: {', '.join(providers)} (default: {','.join(suite.providers)})")
    key = suite.default_key
    for name in suite.param_names[2:]:
        flag = name.replace("_", "-")
        plural = flag if flag.endswith("s") else flag + ("es" if flag.endswith(("ch", "sh", "x")) else "s")
        by_key = key is not None and name != key  # None: filled in per value of `key` (parse_options)
        text = (", ".join(f"{s[key]} {s[name]}" for s in shapes if s is _default_shape(shapes, key, s[key]))
                if by_key else default[name])
        parser.add_argument(*dict.fromkeys((f"--{flag}", f"--{plural}")), dest=name,
                            default=None if by_key else str(default[name]),
                            type=functools.partial(_values, like=default[name]), action=_Once,
                            help=f"{name}: one value or a comma-separated list (default {text})")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--csv", default="docs/data/benchmark_data.csv", action=_Once,
                        help="CSV to merge the rows into (default docs/data/benchmark_data.csv)")
    output.add_argument("--no-csv", action="store_true", help="print the table only")
    return parser


def rows_for_csv(suite, measured, commit, gpu_name, x_name):
    """CSV rows (tools.CSV_COLUMNS) of one sweep, built by tools.export.csv_row as the export builds asv's: speed
    rows with p20/p50/p80 in ms, memory rows in MiB. No ceilings are measured in this process, so the roofline
    columns carry the achieved rate without its share. Returns (rows, failed_keys): failed_keys are the CSV keys
    (tools.export.row_key) of the combinations that failed here, whose rows from an earlier run of this commit on
    this GPU and environment no longer stand (as an asv result file is authoritative for its commit in the export);
    a skipped combination (a peer not installed) leaves its earlier rows alone."""
    import datetime
    import json

    from tools import SWEEP_CLI_MACHINE
    from tools.export import csv_row, readable_label, row_key

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    rows, failed_keys = [], []
    for (provider, mode, *values), result in measured.items():
        if not result["samples"] and not result["error"]:
            continue
        shape = dict(zip(suite.param_names[2:], values))
        x_value = shape.pop(x_name)
        common = dict(kernel_name=suite.kernel_name, provider=provider, mode=mode, x_name=x_name,
                      x_label=readable_label(x_name), x_value=str(x_value),
                      extra=json.dumps(shape, sort_keys=True), ceilings=None, gpu_name=gpu_name, commit=commit,
                      timestamp=stamp, machine=SWEEP_CLI_MACHINE, environment=f"python-{platform.python_version()}")
        if not result["samples"]:  # failed: the keys its speed and memory rows have
            failed_keys += [row_key(csv_row(metric_name=metric, metric_unit=unit, samples=[], value=0.0, scale=1.0,
                                            work=None, **common))
                            for metric, unit in (("speed", "ms"), ("memory", "MiB"))]
            continue
        work = suite.work(mode, dict(zip(suite.param_names[2:], values)))
        rows.append(csv_row(metric_name="speed", metric_unit="ms", samples=result["samples"], value=None, scale=1e3,
                            work=work, **common))
        if result["peak_bytes"] is not None:
            rows.append(csv_row(metric_name="memory", metric_unit="MiB", samples=[], value=result["peak_bytes"],
                                scale=1.0 / 2**20, work=None, **common))
    return rows, failed_keys


def _commit_and_gpu():
    from tools import asv_machine
    try:
        import git
        commit = git.Repo(".", search_parent_directories=True).head.commit.hexsha
    except Exception:  # noqa: BLE001 - not a repository: the rows still carry what is known
        commit = "unknown"
    info = asv_machine.describe()
    return commit, info["gpu_name"] if info["gpu_name"] != "cpu" else asv_machine.default_name(info)


def parse_options(kernel_name, argv):
    """The sweep's suite, its parsed options and the values of each shape option, every one checked before anything
    is measured (the Modal runner checks a remote sweep's options with it too); a bad one exits through argparse's
    error, status 2, naming the option, what it takes and what was given."""
    suite = kernels()[kernel_name]
    parser = build_parser(kernel_name, suite)
    args = parser.parse_args(argv)
    modes, providers = args.modes, args.providers
    known = known_providers(suite.kernel_name)
    labels = []
    for provider in providers:
        try:
            base, options = harness.split_variant(provider)
            if base not in known:
                raise ValueError(f"{provider} not one of {', '.join(known)}")
            labels.append(suite().variant_label(provider))  # validates the options against the op's tunables
        except (ValueError, NotImplementedError) as err:
            parser.error(f"--providers: {err}")
    args.providers = list(dict.fromkeys(labels))  # one setting, one label: a re-run never stores it twice
    bad_modes = [m for m in modes if m not in suite.modes]
    if bad_modes:
        parser.error(f"--mode: {', '.join(bad_modes)} not one of {', '.join(suite.modes)}")
    shapes = _shapes_here(suite)
    args.by_key = [name for name in suite.param_names[2:] if getattr(args, name) is None]
    for name in args.by_key:  # each value of default_key's own default (main keeps only those combinations)
        setattr(args, name, list(dict.fromkeys(_default_shape(shapes, suite.default_key, value)[name]
                                               for value in getattr(args, suite.default_key))))
    shape_values = [getattr(args, name) for name in suite.param_names[2:]]
    for name, values in zip(suite.param_names[2:], shape_values):
        allowed = known_values(suite.kernel_name, name) if isinstance(values[0], str) else values
        unknown = [v for v in values if v not in allowed]
        if unknown:  # e.g. layout=channel-last would be measured as the other layout, dtype=float64 fail late
            parser.error(f"--{name.replace('_', '-')}: {', '.join(unknown)} not one of {', '.join(allowed)}")
    if not args.no_csv:  # a CSV the rows cannot merge into, or not be written, is refused before the sweep
        from tools._atomic import check_writable
        from tools.export import ExportError, read_csv_rows
        if not args.csv:  # Path("") is the current directory: "--csv: . is a directory" named no mistake
            parser.error("--csv is empty, expected the CSV file to merge the rows into (or --no-csv)")
        try:
            check_writable(args.csv)  # before: found only after measuring ("rows not merged: [Errno 30] ...")
            read_csv_rows(Path(args.csv))
        except (ExportError, OSError) as err:
            parser.error(f"--csv: {err}")
    return suite, args, shape_values


def gpu_note(gpu):
    """The table's note of what NVML read while a combination's timed calls ran (harness.gpu_state): SM clock,
    temperature, power ("W avg" where it is NVML's one-second average, which a short batch reads as the idle before
    it) and any clock event reason other than idle ("" without readings)."""
    during = (gpu or {}).get("during") or {}
    if "sm_clock_mhz" not in during:
        return ""
    reasons = [r for r in during["clock_event_reasons"] if r != "gpu_idle"]
    average = " avg" if during.get("power_reading") == "average" else ""
    return (f"  [SM {during['sm_clock_mhz']} MHz, {during['temperature_c']} C, {during['power_w']:.0f} W{average}"
            + (f"; {', '.join(reasons)}" if reasons else "") + "]")


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    table = kernels()
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in table:
        print(__doc__)
        print("kernels: " + ", ".join(sorted(table)))
        if argv and argv[0] not in ("-h", "--help"):
            print(f"error: unknown kernel {argv[0]!r}", file=sys.stderr)
            return 2
        return 0
    suite, args, shape_values = parse_options(argv[0], argv[1:])
    modes, providers = args.modes, args.providers
    shapes = _shapes_here(suite)
    combos, not_served = [], []
    for provider, mode, values in itertools.product(providers, modes, itertools.product(*shape_values)):
        shape = dict(zip(suite.param_names[2:], values))
        own = _default_shape(shapes, suite.default_key, shape[suite.default_key]) if args.by_key else {}
        if any(shape[name] != own[name] for name in args.by_key):
            continue  # another value of default_key's default (e.g. gemm's size with op=copy)
        # the suite's own filter (e.g. an inference-only path has no full mode), as asv skips the combination
        served = suite.serves(harness.split_variant(provider)[0], mode, shape)
        (combos if served else not_served).append((provider, mode, *values))
    swept = [name for name, values in zip(suite.param_names[2:], shape_values) if len(values) > 1]
    x_name = suite.x_name if suite.x_name in swept or not swept else swept[0]
    if not combos:  # before: exit 0 and a header-only CSV
        for provider, mode, *values in not_served:
            print(f"  {provider} {mode} {dict(zip(suite.param_names[2:], values))}: not served by this provider (n/a)")
        print(f"error: {suite.kernel_name}: 0 combinations: no provider serves these modes and shapes; "
              "nothing measured, the CSV untouched", file=sys.stderr)
        return 2
    measured = harness.measure_suites_of(suite, combos)
    print(f"{suite.kernel_name}: {len(combos)} combinations, p50 ms [p20–p80], peak MiB")
    for provider, mode, *values in not_served:
        print(f"  {provider} {mode} {dict(zip(suite.param_names[2:], values))}: not served by this provider (n/a)")
    width = max(28, *(len(p) for p in providers))
    for (provider, mode, *values), result in measured.items():
        shape = ", ".join(f"{n}={v}" for n, v in zip(suite.param_names[2:], values))
        if result["samples"]:
            # numpy's linear percentiles, as the CSV's y_value_20/50/80 (tools.export.csv_row)
            p20, p50, p80 = np.percentile(np.asarray(result["samples"], dtype=np.float64) * 1e3, [20, 50, 80])
            memory = f"{result['peak_bytes'] / 2**20:.1f}" if result["peak_bytes"] is not None else "n/a"
            print(f"  {provider:{width}s} {mode:8s} {shape:60s} {p50:9.4f} "
                  f"[{p20:.4f}–{p80:.4f}]  {memory}{gpu_note(result.get('gpu'))}")
        else:
            print(f"  {provider:{width}s} {mode:8s} {shape:60s} {'skipped' if result['skipped'] else 'FAILED'}: "
                  f"{result['skipped'] or result['error']}")
    failed = [r for r in measured.values() if r["error"]]
    if not any(r["samples"] for r in measured.values()):  # before: exit 0 and a header-only CSV
        print(f"error: {suite.kernel_name}: nothing timed: all {len(measured)} combinations skipped or failed; "
              "the CSV untouched", file=sys.stderr)
        return 1
    if not args.no_csv:
        commit, gpu_name = _commit_and_gpu()
        rows, failed_keys = rows_for_csv(suite, measured, commit, gpu_name, x_name)
        from tools.export import ExportError, merge_csv_rows
        try:
            total, dropped = merge_csv_rows(args.csv, rows, drop=failed_keys)
        except (ExportError, OSError) as err:  # changed or unwritable since the check: the table above has the figures
            print(f"error: --csv: {len(rows)} rows not merged: {err}", file=sys.stderr)
            return 2
        print(f"{len(rows)} rows merged into {args.csv} ({total} rows in total)"
              + (f"; {dropped} rows of this commit's earlier run removed: their combinations failed here"
                 if dropped else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
