"""Docs tables from the benchmark CSV: `python -m tools.docs [--check]`.

The README's figure table and the kernel pages' measured tables are generated, never typed: each sits between
    <!-- tools.docs KIND key=value ... -->
    ...generated...
    <!-- /tools.docs -->
and this tool rewrites what is between (atomically); `--check` only compares and exits 1 when a committed table
differs from what the CSV gives (tests/tools/test_docs.py runs it on the committed docs).

Kinds and their keys (all optional unless said):
* `headline gpu=NAME`: per kernel, mode and shape, the newest commit that measured it on that GPU (each row its own
  commit): greyhound's p50 beside the best peer's, both from that commit's run.
* `roofline kernel=NAME commit=...`: per mode, shape and provider, the achieved TB/s or TFLOP/s and its share of
  the ceilings measured on that machine (the CSV's roofline columns).
* `cross-gpu`: every kernel, mode and shape measured on two or more GPUs, greyhound's p50 over the best peer's
  on each (docs/cross_gpu.md).
* `goals kernel=NAME file=docs/data/goals.csv`: each goal the file declares for the kernel (a provider, mode,
  metric, x name and value, config subset, a figure to stay at or below, where the goal comes from) beside the newest asv
  p50 of that series on the GPU (sweep-CLI rows left out), its commit, and met / missed by how much.
* `plotly kernel=NAME`: the kernel's Plotly pages (docs/public/assets/plots_html/) as iframes, ordered full ->
  forward -> backward.
* `table kernel=NAME metric=speed|memory commit=PREFIX|latest gpu=NAME x=X_NAME extra.KEY=VALUE ...`: one row per
  (x value, mode), one column per provider (greyhound first), at one commit (`latest`: the newest with rows that
  match; a run of the tracked tier alone then shows only its cells: pin `commit=` for a sweep's table); speed cells
  are p50 ms, the greyhound cells with [p20–p80]; the fastest (or smallest) cell is bold.
`table`, `roofline` and `headline` read asv's rows (the sweep CLI's, machine sweep-cli, only with `machine=sweep-cli`)
and take `machine=NAME env=NAME` (asv machine and environment): a commit measured in several asv runs on one GPU is an
error naming them until the marker picks one.
Every table says its GPU, commit and source (asv p50 of the same run).
"""
import argparse
import json
import math
import re
import sys
from pathlib import Path

import pandas as pd

from tools import CSV_COLUMNS, SWEEP_CLI_MACHINE, x_value_order
from tools._atomic import write_atomic

MARKER = re.compile(r"(<!-- tools\.docs (?P<args>[^\n]*?) -->\n)(?P<body>.*?)(<!-- /tools\.docs -->)", re.S)
CLOSING = "<!-- /tools.docs -->"
# every opening and closing marker, in order (an opening at the very end of a file, without its newline, too): they
# must alternate, opening first, or a table would be left out (MARKER matches none) or swallow the next one's marker
MARKER_TOKENS = re.compile(r"(?P<opening><!-- tools\.docs (?P<args>[^\n]*?) -->)(?:\n|\Z)"
                           r"|(?P<closing><!-- /tools\.docs -->)")
DEFAULT_FILES = ("README.md", "docs/kernels/*.md", "docs/cross_gpu.md")
DEFAULT_GPU = "NVIDIA H200"
GOALS_CSV = "docs/data/goals.csv"
GOALS_COLUMNS = ("kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name", "x_name", "x_value",
                 "config", "goal", "source")
WIDE_SPREAD = 0.25  # a goal's status says so when its p20-p80 spans more than this share of the p50
MODE_ORDER = {"full": 0, "forward": 1, "backward": 2}
_RUN_KEYS = ("gpu", "machine", "env")
# each kind's marker keys (and `extra.KEY` where the kind filters on the config) and the ones it cannot do without: a
# misspelt key (kernal=) would otherwise be dropped and the table drawn from rows it never meant
KIND_KEYS = {"table": (_RUN_KEYS + ("kernel", "metric", "commit", "x"), True, ()),
             "roofline": (_RUN_KEYS + ("kernel", "commit", "x"), True, ()),
             "headline": (_RUN_KEYS, False, ()),
             "goals": (_RUN_KEYS + ("kernel", "file"), False, ("kernel",)),
             "plotly": (("kernel", "dir", "prefix"), False, ("kernel",)),
             "cross-gpu": ((), False, ())}


class DocsError(Exception):
    pass


def _read_table(path, columns):
    """A CSV file's cells as strings, its header `columns`; DocsError naming the file when it is empty, cannot be
    parsed or has other columns."""
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except pd.errors.EmptyDataError:
        raise DocsError(f"{path} is empty, expected a header with the columns {list(columns)}") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as err:
        raise DocsError(f"cannot read {path}: {err}") from None
    if tuple(frame.columns) != tuple(columns):
        raise DocsError(f"{path} has columns {list(frame.columns)}, expected {list(columns)}")
    return frame


def load(csv_path):
    """The CSV, y columns as floats (NaN where not a number); DocsError naming the file (and the line) when it is
    empty, not ours, or a row's extra_benchmark_config_str is not a JSON object (every table reads it as one)."""
    frame = _read_table(csv_path, CSV_COLUMNS)
    for number, text in enumerate(frame["extra_benchmark_config_str"], start=2):  # line 1 is the header
        try:
            config = json.loads(text)
        except ValueError:
            config = None
        if not isinstance(config, dict):
            raise DocsError(f"{csv_path} line {number}: extra_benchmark_config_str must be a JSON object, got {text!r}")
    for column in ("y_value_50", "y_value_20", "y_value_80"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce")
    return frame


def parse_args(text, kind=None):
    """A marker's `key=value` words as a dict; with `kind`, DocsError naming a key that kind does not take (KIND_KEYS)
    or one it needs and was not given, or a key given twice."""
    args = {}
    for token in text.split():
        if "=" not in token:
            raise DocsError(f"tools.docs marker argument {token!r} is not key=value")
        key, value = token.split("=", 1)
        if key in args:
            raise DocsError(f"tools.docs marker key {key!r} is given twice ({args[key]!r} and {value!r})")
        args[key] = value
    if kind in KIND_KEYS:
        keys, extra, needed = KIND_KEYS[kind]
        for key in args:
            if key not in keys and not (extra and key.startswith("extra.") and len(key) > len("extra.")):
                takes = ", ".join(keys + (("extra.KEY",) if extra else ())) or "no key"
                raise DocsError(f"tools.docs {kind} marker: unknown key {key!r} (it takes {takes})")
        for key in needed:
            if not args.get(key):
                raise DocsError(f"tools.docs {kind} marker: {key}= is missing or empty, expected {key}=NAME")
    return args


def _number(value, digits=3):
    if value != value:  # NaN
        return "—"
    if value >= 100:
        return f"{value:.1f}"
    if value >= 10:
        return f"{value:.2f}"
    return f"{value:.{digits}f}"


def _providers(names):
    return sorted(names, key=lambda p: (not p.startswith("greyhound"), p))


def _runs_of(rows, args):
    """Only the rows of the marker's `machine=` and `env=` (asv machine and environment), where it gives them; without
    `machine=`, only asv's rows (not the sweep CLI's, machine sweep-cli: these tables say "asv p50", and a sweep run
    at the commit asv measured is not a second asv run to choose between)."""
    if "machine" not in args:
        rows = rows[rows["asv_machine"] != SWEEP_CLI_MACHINE]
    for key, column in (("machine", "asv_machine"), ("env", "asv_environment")):
        if key in args:
            rows = rows[rows[column] == args[key]]
    return rows


def _one_run(rows, args, what):
    """`rows` (one commit's) when they come from one asv run; DocsError naming the runs otherwise: the same commit
    measured by several machines or environments on one GPU would mix their figures in one table."""
    runs = sorted(set(zip(rows["asv_machine"], rows["asv_environment"])))
    if len(runs) > 1:
        named = "; ".join(f"machine={m} env={e}" for m, e in runs)
        raise DocsError(f"{what} was measured in {len(runs)} runs ({named}): add machine= and env= to the marker "
                        f"{args} to pick one")
    return rows


def _where(args):
    """The GPU a table is of, with the marker's machine and environment where it picks them."""
    picked = [f"{key} {args[key]}" for key in ("machine", "env") if key in args]
    return ", ".join([args.get("gpu", DEFAULT_GPU)] + picked)


def _commit_rows(frame, args, kind):
    rows = _runs_of(frame[frame["gpu_name"] == args.get("gpu", DEFAULT_GPU)], args)
    if "kernel" in args:
        rows = rows[rows["kernel_name"] == args["kernel"]]
    if kind == "table":
        rows = rows[rows["metric_name"] == args.get("metric", "speed")]
        if "x" in args:
            rows = rows[rows["x_name"] == args["x"]]
        for key, value in args.items():
            if key.startswith("extra."):
                name = key[len("extra."):]
                rows = rows[[str(json.loads(e).get(name)) == value for e in rows["extra_benchmark_config_str"]]]
    if rows.empty:
        raise DocsError(f"no CSV rows match {args}")
    commit = args.get("commit", "latest")
    if not commit:
        raise DocsError(f"commit= is empty, expected a commit hash (or its prefix) or latest, in {args}")
    if commit == "latest":
        newest = rows.sort_values(["timestamp", "git_commit"]).iloc[-1]
        commit = newest["git_commit"]
    matching = rows[rows["git_commit"].str.startswith(commit)]
    if matching.empty:
        raise DocsError(f"no CSV rows of commit {commit} match {args}")
    commits = sorted(matching["git_commit"].unique())
    if len(commits) > 1:  # one table, one commit: a short prefix shared by two would mix their figures
        raise DocsError(f"commit={commit} matches {len(commits)} commits ({', '.join(commits)}), expected one: give "
                        f"more of its hash")
    _one_run(matching, args, f"commit {matching['git_commit'].iloc[0][:8]}")
    return matching, matching["git_commit"].iloc[0]


def render_table(frame, args):
    rows, commit = _commit_rows(frame, args, "table")
    metric = args.get("metric", "speed")
    unit = rows["metric_unit"].iloc[0]
    providers = _providers(rows["kernel_provider"].unique())
    x_name = rows["x_name"].iloc[0]
    keys = sorted({(r.x_value, r.kernel_operation_mode, r.extra_benchmark_config_str) for r in rows.itertuples()},
                  key=lambda k: (MODE_ORDER.get(k[1], 9), k[1], k[2], x_value_order(k[0])))
    varying_extra = len({k[2] for k in keys}) > 1
    header = [x_name, "mode"] + (["config"] if varying_extra else []) + providers
    lines = [f"{_where(args)}, commit {commit[:8]}: asv p50 {unit}"
             f"{' [p20–p80]' if metric == 'speed' else ''}, every provider from the same run "
             f"(generated by `python -m tools.docs` from docs/data/benchmark_data.csv).", "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for x_value, mode, extra in keys:
        cells = {}
        for provider in providers:
            match = rows[(rows["x_value"] == x_value) & (rows["kernel_operation_mode"] == mode)
                         & (rows["extra_benchmark_config_str"] == extra) & (rows["kernel_provider"] == provider)]
            cells[provider] = match.iloc[0] if not match.empty else None
        values = {p: c["y_value_50"] for p, c in cells.items() if c is not None and math.isfinite(c["y_value_50"])}
        best = min(values, key=values.get) if values else None
        out = [x_value, mode] + ([extra] if varying_extra else [])
        for provider in providers:
            cell = cells[provider]
            if cell is None:
                out.append("n/a")
                continue
            text = _number(cell["y_value_50"])
            if provider == best and len(values) > 1:
                text = f"**{text}**"
            if metric == "speed" and provider.startswith("greyhound") and cell["y_value_20"] == cell["y_value_20"]:
                text += f" [{_number(cell['y_value_20'])}–{_number(cell['y_value_80'])}]"
            out.append(text)
        lines.append("| " + " | ".join(out) + " |")
    return "\n".join(lines) + "\n"


def render_headline(frame, args):
    rows = _runs_of(frame[(frame["gpu_name"] == args.get("gpu", DEFAULT_GPU)) & (frame["metric_name"] == "speed")],
                    args)
    if rows.empty:
        raise DocsError(f"no speed rows for {args}")
    lines = [f"{_where(args)}: asv p50 ms of each kernel, shape and mode at the newest commit that measured it, "
             f"greyhound beside its best peer from the same run (generated by `python -m tools.docs`).", "",
             "| kernel | shape | mode | greyhound | best peer | commit |", "|---|---|---|---|---|---|"]
    for kernel in sorted(rows["kernel_name"].unique()):
        mine = rows[rows["kernel_name"] == kernel]
        keys = sorted({(r.extra_benchmark_config_str, r.x_name, r.x_value, r.kernel_operation_mode)
                       for r in mine.itertuples()}, key=lambda k: (k[0], MODE_ORDER.get(k[3], 9), k[3], k[1],
                                                                   x_value_order(k[2])))
        for extra, x_name, x_value, mode in keys:
            # each shape and mode at its own newest commit: a run of the tracked tier alone (the per-commit run)
            # leaves the sweep's shapes at the commit that last measured them, not out of the table
            cell = mine[(mine["extra_benchmark_config_str"] == extra) & (mine["x_value"] == x_value)
                        & (mine["kernel_operation_mode"] == mode)]
            commit = cell.sort_values(["timestamp", "git_commit"]).iloc[-1]["git_commit"]
            cell = _one_run(cell[cell["git_commit"] == commit], args, f"{kernel}'s commit {commit[:8]}")
            ours = cell[cell["kernel_provider"].str.startswith("greyhound")]
            peers = cell[~cell["kernel_provider"].str.startswith("greyhound")]
            shape = ", ".join([f"{x_name}={x_value}"] + [f"{k}={v}" for k, v in json.loads(extra).items()])
            best_peer = peers.sort_values("y_value_50").iloc[0] if not peers.empty else None
            peer_text = f"{best_peer['kernel_provider']} {_number(best_peer['y_value_50'])}" if best_peer is not None \
                else "—"
            for row in ours.sort_values("kernel_provider").itertuples():
                name = row.kernel_provider
                ours_text = _number(row.y_value_50)
                if best_peer is not None and row.y_value_50 < best_peer["y_value_50"]:
                    ours_text = f"**{ours_text}**"
                label = f"`{kernel}`" + (f" ({name})" if name != "greyhound" else "")
                lines.append(f"| {label} | {shape} | {mode} | {ours_text} | {peer_text} | {commit[:8]} |")
    return "\n".join(lines) + "\n"


def render_roofline(frame, args):
    """How close to the hardware: per (mode, shape, provider) the achieved TB/s or TFLOP/s of the bound resource and
    its share of the ceilings measured on the same machine (tools.export's roofline columns)."""
    rows, commit = _commit_rows(frame, {**args, "metric": "speed"}, "table")
    lines = [f"{_where(args)}, commit {commit[:8]}: the bound resource's achieved rate (each input "
             f"read once, each output written once; GEMM FLOPs) and its share of this machine's measured ceilings "
             f"(device copy, bf16 GEMM; `device_ceilings`), from the same asv p50 (generated by `python -m tools.docs`).",
             "", "| mode | shape | provider | p50 ms | achieved | share of ceiling |", "|---|---|---|---|---|---|"]
    ordered = sorted(rows.itertuples(), key=lambda r: (MODE_ORDER.get(r.kernel_operation_mode, 9),
                                                       r.kernel_operation_mode, r.extra_benchmark_config_str,
                                                       x_value_order(r.x_value),
                                                       not r.kernel_provider.startswith("greyhound"), r.kernel_provider))
    for r in ordered:
        shape = ", ".join([f"{r.x_name}={r.x_value}"] + [f"{k}={v}" for k, v in
                                                          json.loads(r.extra_benchmark_config_str).items()])
        achieved = f"{float(r.achieved):.3g} {r.achieved_unit}" if r.achieved else "—"
        share = f"{float(r.ceiling_share):.0%}" if r.ceiling_share else "— (no ceilings measured on this machine yet)"
        lines.append(f"| {r.kernel_operation_mode} | {shape} | {r.kernel_provider} | {_number(r.y_value_50)} | "
                     f"{achieved} | {share} |")
    return "\n".join(lines) + "\n"


def render_cross_gpu(frame, args):
    """The same kernel, mode and shape across GPUs: greyhound's p50 over the best peer's on each GPU (newest commit
    per GPU with both measured; < 1 means greyhound is ahead there). Series measured on one GPU only are left out."""
    rows = frame[frame["metric_name"] == "speed"]
    cells = {}  # (kernel, mode, shape) -> {gpu: (ratio, greyhound p50, peer, peer p50, commit)}
    for (kernel, mode, x_name, x_value, extra, gpu), group in rows.groupby(
            ["kernel_name", "kernel_operation_mode", "x_name", "x_value", "extra_benchmark_config_str", "gpu_name"]):
        for commit in group.sort_values(["timestamp", "git_commit"])["git_commit"].unique()[::-1]:
            at = group[group["git_commit"] == commit]
            ours = at[at["kernel_provider"] == "greyhound"]
            peers = at[~at["kernel_provider"].str.startswith("greyhound")]
            if ours.empty or peers.empty:
                continue
            best = peers.sort_values("y_value_50").iloc[0]
            shape = ", ".join([f"{x_name}={x_value}"] + [f"{k}={v}" for k, v in json.loads(extra).items()])
            cells.setdefault((kernel, mode, shape), {})[gpu] = (
                ours.iloc[0]["y_value_50"] / best["y_value_50"], ours.iloc[0]["y_value_50"], best["kernel_provider"],
                best["y_value_50"], commit)
            break
    shared = {key: by_gpu for key, by_gpu in cells.items() if len(by_gpu) >= 2}
    gpus = sorted({gpu for by_gpu in shared.values() for gpu in by_gpu})
    lines = ["greyhound's asv p50 over the best peer's on each GPU (newest commit per GPU with both; below 1: greyhound "
             "ahead) (generated by `python -m tools.docs`).", ""]
    if not shared:
        return "\n".join(lines + ["No kernel, mode and shape has been measured on two GPUs yet: run the Modal runner "
                                   "with several `--gpu`, or asv on a second machine."]) + "\n"
    lines += ["| kernel | mode | shape | " + " | ".join(gpus) + " |", "|---|---|---|" + "---|" * len(gpus)]
    for (kernel, mode, shape), by_gpu in sorted(shared.items(), key=lambda kv: (kv[0][0], MODE_ORDER.get(kv[0][1], 9),
                                                                              kv[0][2])):
        out = []
        for gpu in gpus:
            if gpu not in by_gpu:
                out.append("—")
                continue
            ratio, ours, peer, theirs, commit = by_gpu[gpu]
            out.append(f"**{ratio:.2f}** ({_number(ours)} vs {peer} {_number(theirs)}, {commit[:8]})")
        lines.append(f"| `{kernel}` | {mode} | {shape} | " + " | ".join(out) + " |")
    return "\n".join(lines) + "\n"


PLOTLY_DIR = Path("docs/public/assets/plots_html")


def render_plotly(frame, args):
    """The kernel's interactive Plotly pages (tools.plot's 2-D sweeps) as iframes, full -> forward -> backward."""
    kernel = args["kernel"]
    folder = Path(args.get("dir", PLOTLY_DIR))
    pages = sorted((p.name for p in folder.glob(f"{kernel}__*.html")),
                   key=lambda name: (MODE_ORDER.get(name.split("__")[1], 9), name))
    if not pages:
        return "(no interactive page: this kernel has no 2-D sweep in the CSV yet)\n"
    prefix = args.get("prefix", "../public/assets/plots_html/")
    return "".join(f'<iframe src="{prefix}{name}" width="100%" height="520" frameborder="0"></iframe>\n'
                   for name in pages)


def load_goals(path):
    """The goals file's rows as dicts, `config` parsed (a JSON object), `goal` a positive float; DocsError naming
    the file, the row and the column otherwise."""
    goals = _read_table(path, GOALS_COLUMNS)
    out = []
    for number, row in enumerate(goals.to_dict("records"), start=2):  # line 1 is the header
        try:
            row["config"] = json.loads(row["config"] or "{}")
            if not isinstance(row["config"], dict):
                raise ValueError("not a JSON object")
        except ValueError as err:
            raise DocsError(f"{path} line {number}: config must be a JSON object, got {row['config']!r} ({err})")
        try:
            row["goal"] = float(row["goal"])
        except ValueError:
            row["goal"] = float("nan")
        if not row["goal"] > 0:
            raise DocsError(f"{path} line {number}: goal must be a positive number, got {row['goal']!r}")
        out.append(row)
    return out


def _config_matches(extra, wanted):
    config = json.loads(extra) if extra else {}
    return all(config.get(key) == value for key, value in wanted.items())


def render_goals(frame, args):
    """One line per goal of the kernel: the newest asv p50 of its series beside the figure to reach."""
    kernel, gpu = args["kernel"], args.get("gpu", DEFAULT_GPU)
    path = args.get("file", GOALS_CSV)
    goals = [g for g in load_goals(path) if g["kernel_name"] == kernel]
    if not goals:
        raise DocsError(f"{path} declares no goal for kernel {kernel!r}")
    rows = _runs_of(frame[(frame["kernel_name"] == kernel) & (frame["gpu_name"] == gpu)], args)
    lines = [f"{gpu}: each goal of `{path}` beside the newest asv p50 of its series, with that run's commit "
             f"(generated by `python -m tools.docs` from docs/data/benchmark_data.csv).", "",
             "| provider | mode | x | config | goal | measured p50 [p20–p80] | commit | status | goal from |",
             "|---|---|---|---|---|---|---|---|---|"]
    for goal in goals:
        series = rows[(rows["kernel_provider"] == goal["kernel_provider"])
                      & (rows["kernel_operation_mode"] == goal["kernel_operation_mode"])
                      & (rows["metric_name"] == goal["metric_name"]) & (rows["x_name"] == goal["x_name"])
                      & (rows["x_value"] == goal["x_value"])]
        series = series[[_config_matches(e, goal["config"]) for e in series["extra_benchmark_config_str"]]]
        config = ", ".join(f"{k}={v}" for k, v in goal["config"].items())
        head = [goal["kernel_provider"], goal["kernel_operation_mode"], f"{goal['x_name']}={goal['x_value']}", config]
        if series.empty:
            lines.append("| " + " | ".join(head + [f"≤ {_number(goal['goal'])}", "not measured", "—",
                                                   "not measured", goal["source"]]) + " |")
            continue
        if series["extra_benchmark_config_str"].nunique() > 1:
            configs = sorted(series["extra_benchmark_config_str"].unique())
            raise DocsError(f"goal {head} matches several configs {configs}: give more keys in its config")
        newest = series.sort_values(["timestamp", "git_commit"]).iloc[-1]
        unit = newest["metric_unit"]
        p50 = newest["y_value_50"]
        measured = f"{_number(p50)} {unit}"
        if newest["y_value_20"] == newest["y_value_20"] and goal["metric_name"] == "speed":
            measured += f" [{_number(newest['y_value_20'])}–{_number(newest['y_value_80'])}]"
        miss = 100 * (p50 / goal["goal"] - 1)
        status = "**met**"
        if p50 > goal["goal"]:  # a miss under 1% keeps a decimal: "missed by 0%" read as met
            status = f"missed by {miss:.1f}%" if miss < 1 else f"missed by {miss:.0f}%"
        spread = (newest["y_value_80"] - newest["y_value_20"]) / p50 if p50 > 0 else float("nan")
        if spread > WIDE_SPREAD:  # e.g. host-bound samples: the p50 is not the device time
            status += f" (p20–p80 spans {100 * spread:.0f}% of the p50: read with care)"
        lines.append("| " + " | ".join(head + [f"≤ {_number(goal['goal'])} {unit}", measured,
                                               newest["git_commit"][:8], status, goal["source"]]) + " |")
    return "\n".join(lines) + "\n"


RENDERERS = {"table": render_table, "goals": render_goals, "headline": render_headline, "plotly": render_plotly,
             "roofline": render_roofline, "cross-gpu": render_cross_gpu}


def check_markers(text, source="document"):
    """DocsError naming `source` and the line of the first marker that is not paired: an opening marker without its
    closing one (at the end, or before the next opening marker) or a closing marker without an opening one."""
    opened = None  # (line, marker) of the opening marker whose closing one comes next
    for match in MARKER_TOKENS.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        if match["opening"] is not None:
            if opened is not None:
                raise DocsError(f"{source} line {opened[0]}: marker {opened[1]} has no closing {CLOSING} before the "
                                f"next opening marker on line {line}, expected one closing marker after each opening "
                                f"one")
            opened = (line, match["opening"])
        elif opened is None:
            raise DocsError(f"{source} line {line}: closing marker {CLOSING} without an opening marker "
                            f"<!-- tools.docs KIND ... --> before it, expected one opening marker before each closing "
                            f"one")
        else:
            opened = None
    if opened is not None:
        raise DocsError(f"{source} line {opened[0]}: marker {opened[1]} has no closing {CLOSING} after it, expected "
                        f"one closing marker after each opening one")


def update_text(text, frame, source="document"):
    """`text` with every marker's table rendered again; DocsError naming `source`, the marker's line and the marker
    when one cannot be rendered, or when the markers are not paired (check_markers)."""
    check_markers(text, source)

    def replace(match):
        kind, _, rest = match.group("args").partition(" ")
        where = f"{source} line {text.count(chr(10), 0, match.start()) + 1}, marker <!-- tools.docs {match['args']} -->"
        if kind not in RENDERERS:
            raise DocsError(f"{where}: unknown tools.docs kind {kind!r} (one of {', '.join(RENDERERS)})")
        try:
            return match.group(1) + RENDERERS[kind](frame, parse_args(rest, kind)) + match.group(4)
        except DocsError as err:
            raise DocsError(f"{where}: {err}") from None
    return MARKER.sub(replace, text)


def files_of(patterns, root="."):
    out = []
    for pattern in patterns:
        out += sorted(Path(root).glob(pattern))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tools.docs", description=__doc__.splitlines()[0])
    parser.add_argument("--csv", default="docs/data/benchmark_data.csv",
                        help="the benchmark CSV (default: docs/data/benchmark_data.csv)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a committed table differs; write nothing")
    parser.add_argument("files", nargs="*", help=f"markdown files (default: {' '.join(DEFAULT_FILES)})")
    args = parser.parse_args(argv)
    try:
        if Path(args.csv).is_dir():
            raise DocsError(f"--csv {args.csv} is a directory, expected the benchmark CSV file tools.export writes")
        if not Path(args.csv).is_file():
            raise DocsError(f"--csv {args.csv} does not exist (expected the benchmark CSV file tools.export writes)")
        frame = load(args.csv)
        stale, rendered = [], []
        # every file rendered before any is written: a bad marker in a later file leaves the earlier ones as they were
        for path in [Path(f) for f in args.files] or files_of(DEFAULT_FILES):
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError as err:
                raise DocsError(f"{path} is not UTF-8 text ({err})") from None
            new = update_text(text, frame, str(path))
            if new != text:
                stale.append(str(path))
                rendered.append((path, new))
        if not args.check:
            for path, new in rendered:
                write_atomic(path, new)
    except (DocsError, OSError, ValueError) as err:
        print(f"tools.docs: error: {err}", file=sys.stderr)
        return 2
    if args.check and stale:
        print(f"tools.docs: tables differ from the CSV in: {', '.join(stale)} (run python -m tools.docs)",
              file=sys.stderr)
        return 1
    print(f"tools.docs: {'checked' if args.check else 'updated'}; {len(stale)} file(s) "
          f"{'stale' if args.check else 'rewritten'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
