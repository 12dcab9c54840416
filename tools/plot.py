"""Draw greyhound's benchmark CSV (`python -m tools.plot --csv docs/data/benchmark_data.csv --out docs/public/assets`).

Reads only the CSV (columns `tools.CSV_COLUMNS`, as tools.export writes it) and writes, each file atomically:
  <out>/plots/<kernel>__<mode>__<metric>__<fixed params>__<gpu>.png    one per 1-D sweep (kernel, mode, metric,
      fixed params = extra_benchmark_config_str, GPU): p50 against x, a line per provider, p20-p80 band where the
      CSV has one, log2 x-axis for powers-of-two-ish sweeps;
  <out>/plots/<kernel>__<mode>__pareto__<fixed params>__<gpu>.png      where speed and memory rows pair up (same
      kernel, mode, x, config, GPU, provider and commit): peak memory against time, one panel per x value, the
      Pareto front (no other provider both faster and smaller) marked;
  <out>/plots_html/<kernel>__<mode>__<metric>__<x>-by-<param>__<gpu>.html   2-D sweeps, where the rows vary in the
      x param and in a numeric param of the config (e.g. vocab_size x d_model): plotly lines per provider and
      param value, a panel per value of any other varying param.
Generated files from an earlier run that this run did not write (a sweep that left the CSV, a renamed config) are
removed, so the folders hold exactly the plots of the CSV; other files there (no `__` in the name) are left alone.
Every plot shows, for each provider, its latest measured commit (newest timestamp). Where one GPU's rows come
from several asv machines or environments (another project's CSV, a sweep-CLI run beside asv's), each
machine/environment gets its own files (`__<machine>-<environment>` appended): their figures are never joined into
one line; a GPU's one asv run keeps its files' names beside sweep-CLI rows (those get the suffix). HTML pages load
plotly.js from `plots_html/plotly.min.js`, written once beside them (include_plotlyjs="directory"): they work offline
and on the static site without storing the 4.6 MB library in every page. File names keep letters, digits, '-', '_'
and '.'.
Exit status: 0 ok (an empty CSV writes nothing and says so); 2 missing/unreadable CSV or unexpected columns.
"""
import argparse
import hashlib
import json
import math
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

from tools import CSV_COLUMNS, SWEEP_CLI_MACHINE, CsvFormatError, is_finite_number, read_csv_records, x_value_order
from tools._atomic import atomic_path, write_atomic

SWEEP_COLUMNS = ["kernel_name", "kernel_operation_mode", "metric_name", "metric_unit", "x_name",
                 "extra_benchmark_config_str", "gpu_name"]
PAIR_COLUMNS = ["kernel_name", "kernel_operation_mode", "x_name", "x_value", "extra_benchmark_config_str",
                "gpu_name", "kernel_provider", "git_commit", "timestamp"]
Y_COLUMNS = ["y_value_50", "y_value_20", "y_value_80"]
METRIC_LABELS = {"speed": "Time", "memory": "Peak memory"}
DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"]
SYMBOLS = ["circle", "square", "diamond", "triangle-up", "cross", "x"]
PNG_DPI = 120


class PlotError(Exception):
    """Bad input: exit status 2."""


# --- reading ------------------------------------------------------------------------------------------------------
def read_benchmark_csv(path):
    """The CSV as strings plus float y columns (NaN where empty); PlotError when it is missing, a directory, or not
    ours: read with the export's own checks (tools.read_csv_records: the header, every row's field count), so a cut
    or damaged CSV stops the plot before anything under the output folder is written or removed."""
    path = Path(path)
    if path.is_dir():
        raise PlotError(f"--csv {path} is a directory, expected the benchmark CSV file tools.export writes")
    if not path.is_file():
        raise PlotError(f"--csv {path} does not exist (expected the benchmark CSV file tools.export writes)")
    try:
        rows = read_csv_records(path)
    except CsvFormatError as err:
        raise PlotError(f"{err}; nothing plotted, no plot removed") from None
    except (OSError, UnicodeDecodeError) as err:
        raise PlotError(f"cannot read {path}: {err}") from None
    frame = pd.DataFrame(rows, columns=list(CSV_COLUMNS), dtype=str)
    for column in Y_COLUMNS:
        numbers = pd.to_numeric(frame[column].replace("", np.nan), errors="coerce")
        # inf: no figure to draw, like NaN; nor past PLOTTABLE, where matplotlib's axis arithmetic overflows
        frame[column] = numbers.where(np.isfinite(numbers) & (numbers.abs() <= PLOTTABLE))
    return frame


PLOTTABLE = 1e300  # the largest |y| drawn: an axis up to ~1.7e308 overflows matplotlib's tick arithmetic to inf

RUN = "_run"  # the column plot_all adds: which asv machine and environment a row comes from, where that varies


def run_labels(frame):
    """'' where a GPU's rows come from one asv machine and environment; otherwise 'machine/environment', so the
    runs of several environments (or of machines with one GPU model) are drawn apart, never joined into one line.
    A GPU's one asv run keeps '' beside sweep-CLI rows (machine sweep-cli; their files get the label), so that a
    sweep does not rename every plot of that GPU that the docs link to."""
    run = frame["asv_machine"] + "/" + frame["asv_environment"]
    sweep = frame["asv_machine"] == SWEEP_CLI_MACHINE
    asv_runs = run.where(~sweep).groupby(frame["gpu_name"]).transform("nunique")  # (NaN, the sweep rows, not counted)
    several = run.groupby(frame["gpu_name"]).transform("nunique") > 1
    return run.where(several & (sweep | (asv_runs > 1)), "")


def _where(gpu, run):
    return f"{gpu} · {run}" if run else gpu


def latest_per_provider(frame, group_columns):
    """Within each group, keep each provider's rows from its latest commit (newest timestamp, then hash)."""
    keys = group_columns + ["kernel_provider"]
    commits = frame[keys + ["timestamp", "git_commit"]].drop_duplicates()
    newest = commits.sort_values(["timestamp", "git_commit"]).groupby(keys, sort=False).tail(1)
    return frame.merge(newest, on=keys + ["timestamp", "git_commit"])


def parse_config(text):
    try:
        config = json.loads(text) if text else {}
    except ValueError:
        return {"config": text}  # not JSON: still a fixed parameter, shown as is
    return config if isinstance(config, dict) else {"config": text}


def as_numbers(values):
    """Floats for the values, or None when any is not a finite number."""
    try:
        numbers = np.array([float(v) for v in values], dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return numbers if np.isfinite(numbers).all() else None


def powers_of_two_ish(xs):
    """A log2 axis for positive sweeps that sit near powers of two (4096, 32000, 128256) or span 16x or more."""
    if xs is None or len(set(xs)) < 2 or (xs <= 0).any():
        return False
    octaves = np.log2(xs)
    return bool((np.abs(octaves - np.round(octaves)) <= 0.15).all() or xs.max() / xs.min() >= 16)


def _text(value):
    return value if isinstance(value, str) else json.dumps(value)


def _tick_text(x):
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


# --- naming -------------------------------------------------------------------------------------------------------
def sanitize(text):
    """Letters, digits, '-', '_' and '.' only: 'NVIDIA H200' -> 'NVIDIA-H200'."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", str(text)).strip("-") or "none"


def fixed_params_part(config):
    return "_".join(f"{sanitize(k)}-{sanitize(_text(v))}" for k, v in sorted(config.items())) or "none"


def fixed_params_title(config):
    return ", ".join(f"{k}={_text(v)}" for k, v in sorted(config.items())) or "no fixed params"


class FileNamer:
    """Unique, bounded file names within one run (two sweeps that differ only in x get the x name appended)."""

    def __init__(self):
        self.used = set()

    def name(self, parts, suffix, disambiguator):
        stem = "__".join(sanitize(p) for p in parts)
        if stem in self.used:
            stem = f"{stem}__x-{sanitize(disambiguator)}"
        if len(stem) > 180:  # file systems cap names at 255 bytes
            stem = f"{stem[:160]}-{hashlib.sha1(stem.encode()).hexdigest()[:12]}"
        base, n = stem, 1
        while stem in self.used:
            n += 1
            stem = f"{base}-{n}"
        self.used.add(stem)
        return stem + suffix


def provider_order(providers):
    """greyhound first, then the others alphabetically: the same legend order and colours in every plot."""
    return sorted(set(providers), key=lambda p: (p != "greyhound", p))


# The providers the suites know, each with its own tab10 colour, so a provider keeps its colour in every plot and
# every run, whatever other providers the CSV holds (greyhound blue, torch eager orange, ...).
KNOWN_PROVIDERS = ("greyhound", "torch-eager", "torch-compile", "liger", "fla", "cut-cross-entropy", "quack",
                   "greyhound-train", "greyhound-megakernel", "greyhound-megakernel-noeval")


def provider_colors(providers):
    """One colour per provider, fixed by its name: the known providers' tab10 colours; any other provider a tab20b
    colour picked by a hash of its name (stable across runs and CSVs)."""
    colors = {}
    for provider in provider_order(providers):
        if provider in KNOWN_PROVIDERS:
            colors[provider] = to_hex(colormaps["tab10"](KNOWN_PROVIDERS.index(provider)))
        else:
            digest = int(hashlib.sha256(provider.encode()).hexdigest(), 16)
            colors[provider] = to_hex(colormaps["tab20b"](digest % 20))
    return colors


def metric_axis_label(metric, unit):
    label = METRIC_LABELS.get(metric, metric)
    return f"{label} ({unit})" if unit else label


def _save_png(fig, path):
    FigureCanvasAgg(fig)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=PNG_DPI, bbox_inches="tight")


# --- 1-D sweeps ---------------------------------------------------------------------------------------------------
def plot_sweeps(latest, colors, plots_dir, namer):
    written = []
    for keys, group in latest.groupby(SWEEP_COLUMNS + [RUN], sort=True):
        kernel, mode, metric, unit, x_name, config_text, gpu, run = keys
        config = parse_config(config_text)
        x_values = sorted(set(group["x_value"]), key=x_value_order)
        xs = as_numbers(x_values)
        log2_x = powers_of_two_ish(xs)
        position = dict(zip(x_values, xs if xs is not None else range(len(x_values))))

        fig = Figure(figsize=(7.5, 4.8), layout="constrained")
        ax = fig.add_subplot()
        all_y, tops = [], []
        for provider in provider_order(group["kernel_provider"]):
            rows = group[group["kernel_provider"] == provider].copy()
            rows["_x"] = rows["x_value"].map(position)
            rows = rows.sort_values("_x")
            color = colors[provider]
            commit = rows["git_commit"].iloc[0][:8]
            label = f"{provider} @ {commit}" if commit else provider
            banded = rows["y_value_20"].notna() & rows["y_value_80"].notna()
            low = rows["y_value_20"].fillna(rows["y_value_50"])
            high = rows["y_value_80"].fillna(rows["y_value_50"])
            if len(x_values) == 1:  # one point (a benchmark without params): a band of no width would not show,
                # so p20-p80 is an error bar
                # (clipped at 0: a row whose p20 / p80 lie on the wrong side of its p50 draws no bar on that side
                # rather than failing the whole run)
                ax.errorbar(rows["_x"], rows["y_value_50"], fmt="o", capsize=5, color=color, label=label,
                            yerr=[(rows["y_value_50"] - low).clip(lower=0), (high - rows["y_value_50"]).clip(lower=0)])
            else:
                ax.plot(rows["_x"], rows["y_value_50"], marker="o", color=color, label=label)
                if banded.any():
                    ax.fill_between(rows["_x"], low, high, where=banded.to_numpy(), color=color, alpha=0.2,
                                    linewidth=0)
            all_y.extend(rows["y_value_50"].tolist())
            tops.extend(high.tolist())
        if log2_x:
            ax.set_xscale("log", base=2)
        ax.set_xticks(list(position.values()))
        tick_labels = [_tick_text(x) for x in xs] if xs is not None else [x or "-" for x in x_values]
        ax.set_xticklabels(tick_labels, rotation=30 if len(x_values) > 6 else 0)
        ax.minorticks_off()
        positive = [y for y in all_y if y > 0]
        if positive and len(positive) == len(all_y) and max(positive) / min(positive) > 100:
            ax.set_yscale("log")
        elif all(y >= 0 for y in all_y):  # from 0, with room above the highest p80 (one point sat on the top edge)
            top = max([y for y in tops if y == y] + all_y, default=0)
            room = top * 1.08
            ax.set_ylim(0, room if 0 < room < math.inf else (top if top > 0 else None))  # (1.08 x 1.7e308 is inf)
        x_label = group["x_label"].iloc[0] or x_name
        ax.set_xlabel(f"{x_label}{' (log2 scale)' if log2_x else ''}")
        ax.set_ylabel(f"{metric_axis_label(metric, unit)}: p50, band p20-p80")
        ax.set_title(f"{kernel} · {mode} · {metric}\n{fixed_params_title(config)} · {_where(gpu, run)}", fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        path = plots_dir / namer.name([kernel, mode, metric, fixed_params_part(config), gpu] + ([run] if run else []),
                                      ".png", x_name)
        _save_png(fig, path)
        written.append(path)
    return written


# --- memory-speed Pareto --------------------------------------------------------------------------------------------
def pareto_front(times, memories):
    """Indices of the points no other point beats on both time and memory (ties on both keep every copy)."""
    front = []
    for i, (t, m) in enumerate(zip(times, memories)):
        dominated = any(t2 <= t and m2 <= m and (t2 < t or m2 < m) for t2, m2 in zip(times, memories))
        if not dominated:
            front.append(i)
    return front


def paired_speed_memory(frame):
    speed = frame[frame["metric_name"] == "speed"]
    memory = frame[frame["metric_name"] == "memory"]
    pairs = speed.merge(memory, on=PAIR_COLUMNS + [RUN], suffixes=("_time", "_mem"))
    if pairs.empty:
        return pairs
    return latest_per_provider(pairs, ["kernel_name", "kernel_operation_mode", "x_name",
                                       "extra_benchmark_config_str", "gpu_name", RUN])


def plot_pareto(frame, colors, plots_dir, namer):
    pairs = paired_speed_memory(frame)
    written = []
    if pairs.empty:
        return written
    for keys, group in pairs.groupby(["kernel_name", "kernel_operation_mode", "x_name",
                                      "extra_benchmark_config_str", "gpu_name", RUN], sort=True):
        kernel, mode, x_name, config_text, gpu, run = keys
        config = parse_config(config_text)
        x_values = sorted(set(group["x_value"]), key=x_value_order)
        ncols = min(4, len(x_values))
        nrows = math.ceil(len(x_values) / ncols)
        fig = Figure(figsize=(4.2 * ncols, 3.6 * nrows + 0.9), layout="constrained")
        axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
        for ax in axes[len(x_values):]:
            ax.set_visible(False)
        for ax, x_value in zip(axes, x_values):
            at_x = group[group["x_value"] == x_value].sort_values("kernel_provider")
            times, memories = at_x["y_value_50_time"].to_numpy(), at_x["y_value_50_mem"].to_numpy()
            front = pareto_front(times, memories)
            for i, (provider, t, m) in enumerate(zip(at_x["kernel_provider"], times, memories)):
                on_front = i in front
                ax.scatter([t], [m], color=colors[provider], s=70 if on_front else 40,
                           edgecolors="black" if on_front else "none", linewidths=1.2, zorder=3)
                ax.annotate(provider, (t, m), textcoords="offset points", xytext=(4, 4), fontsize=7)
            order = sorted(front, key=lambda i: times[i])
            ax.plot(times[order], memories[order], "k--", linewidth=0.8, drawstyle="steps-post", zorder=2)
            x_label = at_x["x_label_time"].iloc[0] or x_name
            ax.margins(0.15)  # room for the provider labels beside the points
            ax.set_title(f"{x_label} = {x_value or '-'}", fontsize=9)
            ax.set_xlabel(metric_axis_label("speed", at_x["metric_unit_time"].iloc[0]) + ", p50", fontsize=8)
            ax.set_ylabel(metric_axis_label("memory", at_x["metric_unit_mem"].iloc[0]) + ", p50", fontsize=8)
            ax.grid(True, alpha=0.3)
        fig.suptitle(f"{kernel} · {mode} · memory vs time (Pareto front: black edges, dashed)\n"
                     f"{fixed_params_title(config)} · {_where(gpu, run)}", fontsize=10)
        path = plots_dir / namer.name([kernel, mode, "pareto", fixed_params_part(config), gpu] + ([run] if run else []),
                                      ".png", x_name)
        _save_png(fig, path)
        written.append(path)
    return written


# --- 2-D sweeps (plotly) ------------------------------------------------------------------------------------------
def second_axis(configs):
    """(the numeric config param that varies most, other varying params) or (None, []) when the sweep is 1-D."""
    keys = sorted({k for c in configs for k in c})
    varying = [k for k in keys if len({json.dumps(c.get(k), sort_keys=True) for c in configs}) > 1]
    numeric = [k for k in varying if all(is_finite_number(c.get(k)) for c in configs)]
    if not numeric:
        return None, []
    second = min(numeric, key=lambda k: (-len({c[k] for c in configs}), k))
    return second, [k for k in varying if k != second]


def plot_2d_sweeps(latest, colors, html_dir, namer):
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    written = []
    for keys, group in latest.groupby(["kernel_name", "kernel_operation_mode", "metric_name", "metric_unit",
                                       "gpu_name", "x_name", RUN], sort=True):
        kernel, mode, metric, unit, gpu, x_name, run = keys
        if group["x_value"].nunique() < 2:
            continue
        group = group.assign(_config=group["extra_benchmark_config_str"].map(parse_config))
        second, facet_keys = second_axis(list(group["_config"]))
        if second is None:
            continue
        group = group.assign(_second=group["_config"].map(lambda c: c[second]),
                             _facet=group["_config"].map(lambda c: tuple(_text(c.get(k)) for k in facet_keys)))
        facets = sorted(set(group["_facet"]))
        titles = [", ".join(f"{k}={v}" for k, v in zip(facet_keys, f)) or " " for f in facets]
        fig = make_subplots(rows=len(facets), cols=1, subplot_titles=titles, vertical_spacing=0.12 / len(facets))
        x_values = sorted(set(group["x_value"]), key=x_value_order)
        xs = as_numbers(x_values)
        log2_x = powers_of_two_ish(xs)
        second_values = sorted(set(group["_second"]))
        for row_index, facet in enumerate(facets, start=1):
            in_facet = group[group["_facet"] == facet]
            for provider in provider_order(in_facet["kernel_provider"]):
                for j, value in enumerate(second_values):
                    rows = in_facet[(in_facet["kernel_provider"] == provider) & (in_facet["_second"] == value)]
                    if rows.empty:
                        continue
                    rows = rows.assign(_order=rows["x_value"].map(x_value_order)).sort_values("_order")
                    x = [float(v) for v in rows["x_value"]] if xs is not None else list(rows["x_value"])
                    p50, p20, p80 = (rows[c].to_numpy() for c in Y_COLUMNS)
                    has_band = bool(np.isfinite(p20).all() and np.isfinite(p80).all())
                    fig.add_trace(go.Scatter(
                        x=x, y=p50, mode="lines+markers", name=f"{provider} · {second}={_text(value)}",
                        legendgroup=provider, showlegend=row_index == 1,
                        line={"color": colors[provider], "dash": DASHES[j % len(DASHES)]},
                        marker={"symbol": SYMBOLS[j % len(SYMBOLS)], "size": 7},
                        error_y={"type": "data", "symmetric": False, "array": p80 - p50,
                                 "arrayminus": p50 - p20, "thickness": 1} if has_band else None,
                        customdata=list(rows["git_commit"].str[:8]),
                        hovertemplate=(f"{provider}, {second}={_text(value)}<br>{x_name}=%{{x}}<br>"
                                       f"p50=%{{y:.4g}} {unit}<br>commit %{{customdata}}<extra></extra>"),
                    ), row=row_index, col=1)
            fig.update_yaxes(title_text=f"{metric_axis_label(metric, unit)}, p50 (bars p20-p80)",
                             row=row_index, col=1)
            x_axis = {"title_text": group["x_label"].iloc[0] or x_name}
            if log2_x:
                x_axis.update(type="log", tickvals=list(xs), ticktext=[_tick_text(v) for v in xs])
            fig.update_xaxes(row=row_index, col=1, **x_axis)
        fixed = {k: v for k, v in group["_config"].iloc[0].items() if k != second and k not in facet_keys}
        fig.update_layout(
            title=f"{kernel} · {mode} · {metric} · {_where(gpu, run)}: {x_name} × {second}<br>"
                  f"<sup>{fixed_params_title(fixed)}; latest commit per provider</sup>",
            height=380 * len(facets) + 140, template="plotly_white", legend={"groupclick": "toggleitem"})
        name = namer.name([kernel, mode, metric, f"{x_name}-by-{second}", gpu] + ([run] if run else []), ".html",
                          x_name)
        html = fig.to_html(include_plotlyjs="directory", full_html=True, div_id=Path(name).stem)
        write_atomic(html_dir / name, html)
        written.append(html_dir / name)
    if written:
        _write_plotlyjs(html_dir)
    return written


def _write_plotlyjs(html_dir):
    from plotly.offline import get_plotlyjs

    path = html_dir / "plotly.min.js"
    library = get_plotlyjs().encode("utf-8")
    if not path.is_file() or path.read_bytes() != library:
        write_atomic(path, library)


# --- main -----------------------------------------------------------------------------------------------------------
def plot_all(frame, out_dir):
    """Write every plot for the rows of `frame`; returns {'sweeps': [...], 'pareto': [...], 'html': [...]}."""
    out_dir = Path(out_dir)
    plots_dir, html_dir = out_dir / "plots", out_dir / "plots_html"
    frame = frame.assign(**{RUN: run_labels(frame)})
    colors = provider_colors(frame["kernel_provider"])
    latest = latest_per_provider(frame, SWEEP_COLUMNS + [RUN])
    namer = FileNamer()
    written = {
        "sweeps": plot_sweeps(latest, colors, plots_dir, namer),
        "pareto": plot_pareto(frame, colors, plots_dir, namer),
        "html": plot_2d_sweeps(latest, colors, html_dir, namer),
    }
    written["removed"] = remove_stale(
        [(plots_dir, ".png"), (html_dir, ".html")], {Path(p) for paths in written.values() for p in paths})
    return written


def remove_stale(folders, keep):
    """Delete this tool's files (names with `__`, the given suffix) in `folders` that are not in `keep`."""
    removed = []
    for folder, suffix in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob(f"*__*{suffix}")):
            if path not in keep and not path.name.startswith("."):
                path.unlink()
                removed.append(path)
    return removed


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tools.plot", description=__doc__.splitlines()[0],
                                     epilog="Exit status: 0 ok (an empty CSV writes nothing); 2 bad CSV or --out.")
    parser.add_argument("--csv", default="docs/data/benchmark_data.csv",
                        help="benchmark CSV written by tools.export (default: docs/data/benchmark_data.csv)")
    parser.add_argument("--out", default="docs/public/assets",
                        help="writes <out>/plots/*.png and <out>/plots_html/*.html (default: docs/public/assets)")
    args = parser.parse_args(argv)
    if not args.out:  # Path("") is the current directory: plots/ and plots_html/ would land there
        print("tools.plot: error: --out is empty, expected the folder to write plots/ and plots_html/ under",
              file=sys.stderr)
        return 2
    try:
        frame = read_benchmark_csv(args.csv)
    except PlotError as err:
        print(f"tools.plot: error: {err}", file=sys.stderr)
        return 2
    unusable = frame["y_value_50"].isna() if len(frame) else pd.Series(dtype=bool)
    if unusable.any():
        print(f"tools.plot: note: {int(unusable.sum())} rows without a finite numeric y_value_50 left out (empty, "
              f"NaN, inf or larger than {PLOTTABLE:g})", file=sys.stderr)
        frame = frame[~unusable]
    if frame.empty:
        print(f"tools.plot: {args.csv} has no rows to plot; nothing written")
        return 0
    try:
        written = plot_all(frame, args.out)
    except OSError as err:
        print(f"tools.plot: error: cannot write under {args.out}: {err}", file=sys.stderr)
        return 2
    print(f"wrote {len(written['sweeps'])} sweep PNGs and {len(written['pareto'])} Pareto PNGs to "
          f"{Path(args.out) / 'plots'}, {len(written['html'])} HTML pages to {Path(args.out) / 'plots_html'}"
          + (f"; removed {len(written['removed'])} stale plot(s) no longer in the CSV" if written["removed"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
