"""tools.plot: CSV -> sweep PNGs, memory-speed Pareto PNGs and plotly HTML for 2-D sweeps."""
import csv
import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # plain `pytest` does not put the repository root on sys.path

from tools import CSV_COLUMNS  # noqa: E402
from tools import plot  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
GPU = "NVIDIA H200"
NEW, OLD = "c" * 40, "a" * 40
CE_CONFIG = {"batch_size": 8192, "dtype": "bfloat16"}


def make_row(kernel, provider, metric, x, y, config, mode="full", commit=NEW, timestamp="2026-11-29T10:00:00Z",
             band=True, x_name="vocab_size"):
    unit = {"speed": "ms", "memory": "MB"}[metric]
    return {"kernel_name": kernel, "kernel_provider": provider, "kernel_operation_mode": mode,
            "metric_name": metric, "metric_unit": unit, "x_name": x_name, "x_label": "Vocabulary size (V)",
            "x_value": str(x), "y_value_50": repr(y), "y_value_20": repr(0.9 * y) if band else "",
            "y_value_80": repr(1.1 * y) if band else "", "extra_benchmark_config_str": json.dumps(config, sort_keys=True),
            "gpu_name": GPU, "git_commit": commit, "timestamp": timestamp}


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return path


def sample_rows(rng):
    rows = []
    for provider in ("greyhound", "torch-eager"):
        for vocab in (32768, 65536, 131072):
            time_ms, mem_mb = float(rng.uniform(0.1, 5)), float(rng.uniform(100, 4000))
            rows.append(make_row("cross_entropy_with_grad", provider, "speed", vocab, time_ms, CE_CONFIG))
            rows.append(make_row("cross_entropy_with_grad", provider, "memory", vocab, mem_mb, CE_CONFIG, band=False))
            for d_model in (1024, 2048):  # 2-D sweep: vocab_size x d_model
                rows.append(make_row("chunked_linear_cross_entropy", provider, "speed", vocab,
                                     float(rng.uniform(1, 20)), {"d_model": d_model, "dtype": "bfloat16"}))
    rows.append(make_row("cross_entropy_with_grad", "greyhound", "speed", 32768, 99.0, CE_CONFIG, commit=OLD,
                         timestamp="2026-11-01T10:00:00Z"))  # an older commit: not drawn
    return rows


def test_writes_sweeps_pareto_and_html(tmp_path, capsys):
    csv_path = write_csv(tmp_path / "data.csv", sample_rows(np.random.default_rng()))
    out = tmp_path / "assets"
    assert plot.main(["--csv", str(csv_path), "--out", str(out)]) == 0
    ce = "batch_size-8192_dtype-bfloat16__NVIDIA-H200"
    expected_pngs = {
        f"cross_entropy_with_grad__full__speed__{ce}.png",
        f"cross_entropy_with_grad__full__memory__{ce}.png",
        f"cross_entropy_with_grad__full__pareto__{ce}.png",
        "chunked_linear_cross_entropy__full__speed__d_model-1024_dtype-bfloat16__NVIDIA-H200.png",
        "chunked_linear_cross_entropy__full__speed__d_model-2048_dtype-bfloat16__NVIDIA-H200.png",
    }
    html_name = "chunked_linear_cross_entropy__full__speed__vocab_size-by-d_model__NVIDIA-H200.html"
    assert {p.name for p in (out / "plots").iterdir()} == expected_pngs  # no temporary files left either
    assert {p.name for p in (out / "plots_html").iterdir()} == {html_name, "plotly.min.js"}
    for name in expected_pngs:
        data = (out / "plots" / name).read_bytes()
        assert data[:8] == PNG_MAGIC and len(data) > 10_000
    html = (out / "plots_html" / html_name).read_text()
    assert "greyhound" in html and "torch-eager" in html and "d_model=2048" in html
    assert 'src="plotly.min.js"' in html and "cdn.plot.ly" not in html  # works offline
    assert (out / "plots_html" / "plotly.min.js").stat().st_size > 1_000_000
    assert "wrote 4 sweep PNGs and 1 Pareto PNGs" in capsys.readouterr().out


def test_2d_sweep_with_another_varying_param_gets_panels(tmp_path):
    rows = [make_row("linear_logprobs", provider, "speed", vocab, float(vocab * d_model) * 1e-9,
                     {"d_model": d_model, "dtype": dtype}, mode="forward")
            for provider in ("greyhound", "liger") for vocab in (4096, 8192) for d_model in (512, 1024, 4096)
            for dtype in ("bfloat16", "float32")]
    out = tmp_path / "assets"
    assert plot.main(["--csv", str(write_csv(tmp_path / "data.csv", rows)), "--out", str(out)]) == 0
    html = (out / "plots_html" / "linear_logprobs__forward__speed__vocab_size-by-d_model__NVIDIA-H200.html").read_text()
    assert "dtype=bfloat16" in html and "dtype=float32" in html and "liger" in html
    assert len(list((out / "plots").glob("linear_logprobs__forward__speed__*.png"))) == 6



def test_no_html_when_only_the_config_varies(tmp_path):
    rows = [make_row("k", "greyhound", "speed", 4096, 1.0 + d_model / 1024, {"d_model": d_model})
            for d_model in (512, 1024)]  # one x value: two 1-D plots, not a 2-D sweep
    out = tmp_path / "assets"
    assert plot.main(["--csv", str(write_csv(tmp_path / "data.csv", rows)), "--out", str(out)]) == 0
    assert len(list((out / "plots").glob("k__full__speed__d_model-*__NVIDIA-H200.png"))) == 2
    assert not (out / "plots_html").exists()

def test_latest_commit_per_provider():
    rows = [make_row("k", "greyhound", "speed", 1, 1.0, {}, commit=OLD, timestamp="2026-01-01T00:00:00Z"),
            make_row("k", "greyhound", "speed", 2, 1.0, {}, commit=OLD, timestamp="2026-01-01T00:00:00Z"),
            make_row("k", "greyhound", "speed", 1, 2.0, {}, commit=NEW, timestamp="2026-02-01T00:00:00Z"),
            make_row("k", "liger", "speed", 1, 3.0, {}, commit=OLD, timestamp="2026-01-01T00:00:00Z")]
    frame = pd.DataFrame(rows)
    latest = plot.latest_per_provider(frame, plot.SWEEP_COLUMNS)
    assert sorted(zip(latest["kernel_provider"], latest["git_commit"], latest["x_value"])) == [
        ("greyhound", NEW, "1"), ("liger", OLD, "1")]


def test_pareto_front():
    assert plot.pareto_front([1.0, 2.0, 3.0, 1.5], [3.0, 1.0, 2.0, 3.0]) == [0, 1]
    assert plot.pareto_front([1.0, 1.0], [2.0, 2.0]) == [0, 1]  # exact ties: neither beats the other
    assert plot.pareto_front([1.0, 2.0], [1.0, 2.0]) == [0]


def test_file_name_parts_and_axis_choice():
    assert plot.sanitize("NVIDIA H200") == "NVIDIA-H200"
    assert plot.sanitize("a/b: c..d") == "a-b-c..d"
    assert plot.fixed_params_part({"dtype": "bfloat16", "batch_size": 8192}) == "batch_size-8192_dtype-bfloat16"
    assert plot.fixed_params_part({}) == "none"
    namer = plot.FileNamer()
    assert namer.name(["k", "full", "speed", "none", GPU], ".png", "n") == "k__full__speed__none__NVIDIA-H200.png"
    assert namer.name(["k", "full", "speed", "none", GPU], ".png", "n") == "k__full__speed__none__NVIDIA-H200__x-n.png"
    assert len(namer.name(["k" * 300], ".png", "n")) <= 200
    assert plot.powers_of_two_ish(np.array([4096.0, 32000.0, 128256.0]))
    assert plot.powers_of_two_ish(np.array([100.0, 10000.0]))
    assert not plot.powers_of_two_ish(np.array([1000.0, 2000.0, 3000.0]))
    assert plot.second_axis([{"d": 1, "t": "bf16"}, {"d": 2, "t": "fp32"}]) == ("d", ["t"])
    assert plot.second_axis([{"d": 1, "t": "bf16"}, {"d": 1, "t": "fp32"}]) == (None, [])


def test_empty_csv_writes_nothing(tmp_path, capsys):
    csv_path = write_csv(tmp_path / "data.csv", [])
    out = tmp_path / "assets"
    assert plot.main(["--csv", str(csv_path), "--out", str(out)]) == 0
    assert not out.exists()
    assert "no rows to plot; nothing written" in capsys.readouterr().out


def test_bad_input_exits_2(tmp_path, capsys):
    out = tmp_path / "assets"
    assert plot.main(["--csv", str(tmp_path / "missing.csv"), "--out", str(out)]) == 2
    assert "does not exist" in capsys.readouterr().err
    wrong = tmp_path / "wrong.csv"
    wrong.write_text("kernel,provider,ms\nce,greyhound,1.0\n")
    assert plot.main(["--csv", str(wrong), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "expected" in err and "kernel_name" in err
    assert not out.exists()


@pytest.mark.parametrize("module", ["tools.plot"])
def test_help_runs_as_a_module(module):
    done = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0 and "--csv" in done.stdout and "--out" in done.stdout


def test_provider_colours_do_not_depend_on_the_other_providers():
    """A provider's colour is fixed by its name: adding providers to the CSV must not repaint the existing ones."""
    few = plot.provider_colors(["greyhound", "liger", "torch-eager"])
    many = plot.provider_colors(["greyhound", "liger", "torch-eager", "greyhound-megakernel", "fla", "my-kernel",
                                 "other-kernel"])
    assert all(few[p] == many[p] for p in few)
    assert few["greyhound"] == "#1f77b4"  # tab10 blue
    assert len(set(plot.provider_colors(list(plot.KNOWN_PROVIDERS)).values())) == len(plot.KNOWN_PROVIDERS)
    assert plot.provider_colors(["my-kernel"])["my-kernel"] == many["my-kernel"]  # unknown providers: stable too


def test_stale_plots_are_removed_and_other_files_kept(tmp_path, capsys):
    """A plot whose sweep left the CSV is deleted on the next run; files the tool did not name are kept."""
    rows = sample_rows(np.random.default_rng())
    csv_path = write_csv(tmp_path / "data.csv", rows)
    out = tmp_path / "assets"
    assert plot.main(["--csv", str(csv_path), "--out", str(out)]) == 0
    first = {p.name for p in (out / "plots").iterdir()}
    (out / "plots" / "README.md").write_text("notes")
    (out / "plots" / "logo.png").write_bytes(PNG_MAGIC)
    kept_rows = [r for r in rows if r["kernel_name"] != "chunked_linear_cross_entropy"]
    assert plot.main(["--csv", str(write_csv(tmp_path / "less.csv", kept_rows)), "--out", str(out)]) == 0
    second = {p.name for p in (out / "plots").iterdir()}
    gone = {n for n in first if n.startswith("chunked_linear_cross_entropy")}
    assert gone and second == (first - gone) | {"README.md", "logo.png"}
    assert {p.name for p in (out / "plots_html").iterdir()} == {"plotly.min.js"}
    assert "removed 3 stale plot(s)" in capsys.readouterr().out


def test_infinite_figures_are_left_out_like_missing_ones(tmp_path, capsys):
    """Before: an 'inf' p50 (another tool's CSV, a failed run) was drawn: an empty axis, written as a plot."""
    rng = np.random.default_rng()
    rows = [make_row("k", "theirs", "speed", x, float(rng.uniform(0.1, 5)), {}) for x in (64, 128, 256)]
    rows += [make_row("k", "failed", "speed", x, float("inf"), {}) for x in (64, 128)]
    out = tmp_path / "assets"
    assert plot.main(["--csv", str(write_csv(tmp_path / "data.csv", rows)), "--out", str(out)]) == 0
    assert "2 rows without a finite numeric y_value_50 left out" in capsys.readouterr().err
    assert [p.name for p in (out / "plots").iterdir()] == ["k__full__speed__none__NVIDIA-H200.png"]
    only_inf = write_csv(tmp_path / "inf.csv", rows[3:])
    assert plot.main(["--csv", str(only_inf), "--out", str(tmp_path / "none")]) == 0
    assert "no rows to plot; nothing written" in capsys.readouterr().out and not (tmp_path / "none").exists()


def test_several_asv_environments_of_one_gpu_are_drawn_apart(tmp_path, capsys):
    """Another project's results of one commit in two asv environments (asv's timestamp is the commit's date, so
    both are 'the latest commit'). Before: one file whose line zigzagged between the two environments' figures at
    every x, and Pareto points pairing one environment's time with the other's memory."""
    rng = np.random.default_rng()
    rows = []
    for env in ("py3.10", "py3.11"):
        for x in (1024, 2048, 4096):
            for metric in ("speed", "memory"):
                rows.append(make_row("k", "default", metric, x, float(rng.uniform(1, 100)), {}) |
                            {"asv_machine": "box", "asv_environment": env})
    out = tmp_path / "assets"
    assert plot.main(["--csv", str(write_csv(tmp_path / "data.csv", rows)), "--out", str(out)]) == 0
    assert sorted(p.name for p in (out / "plots").iterdir()) == [
        f"k__full__{kind}__none__NVIDIA-H200__box-{env}.png"
        for kind in ("memory", "pareto", "speed") for env in ("py3.10", "py3.11")]
    frame = plot.read_benchmark_csv(tmp_path / "data.csv")
    pairs = plot.paired_speed_memory(frame.assign(**{plot.RUN: plot.run_labels(frame)}))
    assert len(pairs) == 6  # one (time, memory) point per environment and x, not 12 crossed pairs


def test_a_sweep_cli_run_beside_the_asv_run_keeps_the_asv_plots_names(tmp_path):
    """The docs link to each GPU's plots by name. A sweep-CLI run (machine sweep-cli) merged beside the GPU's one asv
    run draws its own files; the asv run's files keep their names (before, every plot of the GPU was renamed with
    its machine and environment, and the docs' links broke, as soon as one sweep row came in)."""
    rng = np.random.default_rng()
    asv_rows = [make_row("k", "default", metric, x, float(rng.uniform(1, 100)), {})
                for x in (1024, 2048) for metric in ("speed", "memory")]
    out = tmp_path / "asv-only"
    assert plot.main(["--csv", str(write_csv(tmp_path / "asv.csv", asv_rows)), "--out", str(out)]) == 0
    names = sorted(p.name for p in (out / "plots").iterdir())
    sweep_rows = [row | {"asv_machine": "sweep-cli", "asv_environment": "python-3.11",
                         "y_value_50": str(float(row["y_value_50"]) * rng.uniform(1.01, 1.2))} for row in asv_rows]
    out = tmp_path / "both"
    assert plot.main(["--csv", str(write_csv(tmp_path / "both.csv", asv_rows + sweep_rows)), "--out", str(out)]) == 0
    both = sorted(p.name for p in (out / "plots").iterdir())
    assert set(names) <= set(both)
    assert sorted(set(both) - set(names)) == sorted(n.replace(".png", "__sweep-cli-python-3.11.png") for n in names)


def test_the_committed_plots_are_the_csvs(tmp_path):
    """docs/public/assets holds exactly the plots the committed CSV draws (names; pixels depend on matplotlib's
    version): a CSV updated without redrawing, as happened between 51531fb and 6ae8ccf (62 plots missing), fails."""
    out = tmp_path / "assets"
    done = subprocess.run([sys.executable, "-m", "tools.plot", "--csv", str(ROOT / "docs/data/benchmark_data.csv"),
                           "--out", str(out)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for folder, suffix in (("plots", ".png"), ("plots_html", ".html")):
        drawn = sorted(p.name for p in (out / folder).glob(f"*__*{suffix}"))
        committed = sorted(p.name for p in (ROOT / "docs/public/assets" / folder).glob(f"*__*{suffix}"))
        assert drawn and committed == drawn, (folder, sorted(set(drawn) ^ set(committed)))


# --- audit 2: a cut CSV, a directory ---------------------------------------------------------------------------------
def test_a_cut_csv_is_refused_before_any_plot_is_written_or_removed(tmp_path, capsys):
    # before: a last row cut inside its 9th field read with its missing fields empty and the cut number as data, and
    # the plots of every other row were deleted as stale (201 of them)
    rows = [dict(row, asv_machine="m", asv_environment="e") for row in sample_rows(np.random.default_rng())]
    full = write_csv(tmp_path / "data.csv", rows)
    out = tmp_path / "assets"
    assert plot.main(["--csv", str(full), "--out", str(out)]) == 0
    before = sorted(p.name for p in out.rglob("*"))
    text = full.read_text()
    cut = tmp_path / "cut.csv"
    cut.write_text(text[:text.rstrip("\n").rfind("\n") + 1] + ",".join(text.rstrip("\n").rsplit("\n", 1)[1]
                                                                         .split(",")[:9]))
    assert plot.main(["--csv", str(cut), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{cut} line {len(rows) + 1} has 9 fields, expected {len(CSV_COLUMNS)}" in err
    assert sorted(p.name for p in out.rglob("*")) == before


def test_a_directory_as_csv_is_named_a_directory(tmp_path, capsys):
    # before: "CSV ... does not exist"
    assert plot.main(["--csv", str(tmp_path), "--out", str(tmp_path / "assets")]) == 2
    assert f"--csv {tmp_path} is a directory" in capsys.readouterr().err


def test_a_benchmark_without_params_is_one_point_with_its_band_inside_the_axes(tmp_path, monkeypatch):
    """Another project's benchmarks without params (all of django's): one point per series. Before, fill_between drew
    the p20-p80 band with no width (invisible) and the axis ended just above the p50, the point half clipped."""
    rng = np.random.default_rng()
    y = float(rng.uniform(1, 100))
    row = make_row("bench.Suite.time_plain", "default", "speed", "", y, {}, x_name="none")
    row["y_value_20"], row["y_value_80"] = repr(0.8 * y), repr(1.3 * y)
    figures = []
    monkeypatch.setattr(plot, "_save_png", lambda fig, path: figures.append(fig))
    assert plot.main(["--csv", str(write_csv(tmp_path / "data.csv", [row])), "--out", str(tmp_path / "a")]) == 0
    (ax,) = figures[0].axes
    assert len(ax.containers) == 1  # the error bar
    (bars,) = ax.containers[0].lines[2]  # (data line, caps, bar collections)
    (segment,) = bars.get_segments()
    assert segment[:, 1].min() == pytest.approx(0.8 * y) and segment[:, 1].max() == pytest.approx(1.3 * y)
    bottom, top = ax.get_ylim()
    assert bottom == 0 and top >= 1.3 * y * 1.05


def test_an_empty_out_is_refused_and_nothing_is_written(tmp_path, monkeypatch, capsys):
    # before: --out "" wrote plots/ and plots_html/ into the current directory, exit 0 (tools.export refuses --csv "")
    csv_path = write_csv(tmp_path / "data.csv", sample_rows(np.random.default_rng()))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert plot.main(["--csv", str(csv_path), "--out", ""]) == 2
    assert capsys.readouterr().err == ("tools.plot: error: --out is empty, expected the folder to write plots/ and "
                                       "plots_html/ under\n")
    assert list(work.iterdir()) == []


def test_a_band_on_the_wrong_side_of_its_p50_and_huge_figures_do_not_stop_the_plot(tmp_path, capsys):
    # before: one x point whose p80 lay below its p50 ended the run in matplotlib's "'yerr' must not contain negative
    # values" (plots before it rewritten, the rest not), and figures near 1.7e308 in "Axis limits cannot be NaN or Inf"
    y = random.uniform(0.5, 2.0)
    odd = make_row("k1", "greyhound", "speed", 8, y, {"dtype": "bf16"})
    odd["y_value_80"] = repr(y * 0.9)  # p80 under p50
    odd["y_value_20"] = repr(y * 1.1)  # p20 over it
    huge = [make_row("k2", "greyhound", "speed", x, 1.5e308 * random.uniform(0.9, 1.0), {}) for x in (1, 2)]
    fine = [make_row("k3", "greyhound", "speed", x, random.uniform(1, 2), {}) for x in (1, 2)]
    out = tmp_path / "assets"
    assert plot.main(["--csv", str(write_csv(tmp_path / "data.csv", [odd] + huge + fine)), "--out", str(out)]) == 0
    assert "2 rows without a finite numeric y_value_50 left out" in capsys.readouterr().err
    names = sorted(p.name.split("__")[0] for p in (out / "plots").glob("*.png"))
    assert names == ["k1", "k3"]
