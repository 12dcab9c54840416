"""`python -m benchmarks KERNEL`: the per-kernel sweep command over the asv harness (CPU, tiny shapes)."""
import csv
import random
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import __main__ as cli
from tools import CSV_COLUMNS

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("kernel", sorted(cli.kernels()))
def test_help_lists_the_kernels_providers_and_shape_options(kernel):
    done = subprocess.run([sys.executable, "-m", "benchmarks", kernel, "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    suite = cli.kernels()[kernel]
    for name in suite.param_names[2:]:
        assert f"--{name.replace('_', '-')}" in done.stdout
    for provider in cli.known_providers(kernel):
        assert provider in done.stdout
    if kernel == "cheri_block":  # a tunable where 0 means off reads as such, not as its Python class's name
        assert "ws_x_prefetch (int >= 0)" in done.stdout and "NonNegativeInt" not in done.stdout


def test_a_sweep_prints_a_table_and_a_rerun_replaces_its_rows(tmp_path, capsys):
    csv_path = tmp_path / "data.csv"
    argv = ["cross_entropy_with_grad", "--mode", "forward,full", "--providers", "greyhound,torch-eager",
            "--batch-size", "8", "--vocab-sizes", "64,200", "--dtype", "float32", "--csv", str(csv_path)]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert out.count("greyhound ") == 4 and out.count("torch-eager ") == 4
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == CSV_COLUMNS and len(rows) == 8  # speed only: no CUDA memory on the CPU
    assert {r["x_value"] for r in rows} == {"64", "200"} and {r["x_name"] for r in rows} == {"vocab_size"}
    assert all(r["asv_machine"] == "sweep-cli" and float(r["y_value_20"]) <= float(r["y_value_50"])
               <= float(r["y_value_80"]) for r in rows)
    assert all(r["achieved_unit"] == "TB/s" and float(r["achieved"]) > 0 for r in rows if r["kernel_operation_mode"]
               == "forward")  # the roofline's achieved rate (no ceilings measured by a sweep: no share)
    assert cli.main(argv[:7] + ["--vocab-sizes", "64", "--dtype", "float32", "--csv", str(csv_path)]) == 0
    with open(csv_path) as f:
        assert len(list(csv.DictReader(f))) == 8  # the re-run replaced its 4 rows


def test_bad_arguments_are_named(capsys):
    with pytest.raises(SystemExit):
        cli.main(["logprobs", "--providers", "greyhound,tourch"])
    assert "--providers: tourch not one of" in capsys.readouterr().err
    assert cli.main(["no_such_kernel"]) == 2
    assert "unknown kernel 'no_such_kernel'" in capsys.readouterr().err


def test_a_tuning_variant_is_measured_beside_the_default(capsys):
    variant = "greyhound[loss_block_v=64,loss_warps=2,prefetch=0,grad_block_v=32]"
    argv = ["cross_entropy_with_grad", "--mode", "full", "--providers", f"greyhound,{variant}", "--batch-size", "4",
            "--vocab-sizes", "150", "--dtype", "float32", "--no-csv"]
    assert cli.main(argv) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.strip().startswith("greyhound")]
    # labelled by its options in canonical form (keys sorted)
    canonical = "greyhound[grad_block_v=32,loss_block_v=64,loss_warps=2,prefetch=0]"
    assert [row[0] for row in rows] == ["greyhound", canonical]
    assert all(float(row[5]) > 0 for row in rows)  # p50 ms of each (after mode and the three shape fields)


def test_an_unknown_tunable_is_refused_by_name(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["cross_entropy_with_grad", "--providers", "greyhound[block_size=4096]", "--no-csv"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "no tunable 'block_size'" in err and "loss_block_v" in err  # names it, and lists what there is


def test_combinations_a_provider_does_not_serve_are_skipped_as_asv_skips_them(capsys):
    """cheri_block's megakernel is inference only: a full-mode sweep of it measures nothing and says so (asv: n/a),
    while the training path in the same command is measured."""
    argv = ["cheri_block", "--mode", "full", "--providers", "greyhound-megakernel,greyhound-train", "--no-csv"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "cheri_block: 1 combinations" in out
    assert "greyhound-megakernel full" in out and "not served by this provider (n/a)" in out
    assert out.count("greyhound-train") == 1 and "FAILED" not in out


def test_a_kernel_only_the_sweep_tier_measures_is_reachable_and_tracked_suites_take_precedence():
    kernels = cli.kernels()
    assert kernels["cheri_conv_norm"].tier == "sweep"  # the conv + LayerNorm reuse question (sweep only)
    assert kernels["cheri_block"].tier == "tracked" and kernels["causal_conv1d"].tier == "tracked"


@pytest.mark.parametrize("argv, message", [
    (["--batch-size", "abc"], "argument --batch-size/--batch-sizes: expected positive integers, got 'abc'"),
    (["--seq-len", "100,1.5"], "argument --seq-len/--seq-lens: expected positive integers, got '100,1.5'"),
    (["--dim", "-8"], "argument --dim/--dims: expected positive integers, got '-8'"),
    (["--width", "0"], "argument --width/--widths: expected positive integers, got '0'"),
    # before: int() took them, as 1000 and 3
    (["--batch-size", "1_000"], "argument --batch-size/--batch-sizes: expected positive integers, got '1_000'"),
    (["--batch-size", "\u0663"], "argument --batch-size/--batch-sizes: expected positive integers, got '\u0663'"),
    (["--mode", ","], "argument --mode/--modes: expected one value or a comma-separated list, got ','"),
    (["--providers", " , "], "argument --providers/--provider: expected one value or a comma-separated list"),
    (["--dtype", "float32,float64"], "--dtype: float64 not one of float32, bfloat16, float16"),
    (["--layout", "channel-last"], "--layout: channel-last not one of channel_last, contiguous"),
    # before: torch's int64 overflow, a FAILED line and a C++ backtrace
    (["--batch-size", "99999999999999999999999"], "argument --batch-size/--batch-sizes: expected integers at most "
                                                  "2**40, got '99999999999999999999999'"),
    (["--seq-len", str(2**40 + 1)], "argument --seq-len/--seq-lens: expected integers at most 2**40"),
    (["--providers", "greyhound[block_l=16,block_l=32]"], "--providers: provider 'greyhound[block_l=16,block_l=32]': "
                                                          "key 'block_l' given twice"),  # before: timed at 32
    (["--providers", "greyhound[block_l=16,causal_conv1d.block_l=32]"], "key 'block_l' given twice"),
    # before: argparse's last wins, float32 alone measured and merged where both dtypes were meant
    (["--dtype", "float32", "--dtypes", "bfloat16"], "argument --dtype/--dtypes: given twice (--dtype float32, then "
                                                     "--dtypes bfloat16); give one comma-separated list: --dtypes "
                                                     "float32,bfloat16"),
    (["--mode", "forward", "--mode", "forward"], "argument --mode/--modes: given twice (--mode forward, then --mode "
                                                 "forward)"),
    (["--provider", "torch-eager", "--seq-len", "64", "--providers", "greyhound"], "argument --providers/--provider: "
                                                                                   "given twice"),
    # before: the blank entries were dropped silently (while "" alone was refused)
    (["--mode", "full,,forward"], "argument --mode/--modes: expected one value or a comma-separated list without "
                                  "blank entries, got 'full,,forward'"),
    (["--providers", "torch-eager,,torch-eager"], "argument --providers/--provider: expected one value or a "
                                                  "comma-separated list without blank entries"),
    (["--batch-size", "1,,2"], "argument --batch-size/--batch-sizes: expected one value or a comma-separated list "
                               "without blank entries, got '1,,2'"),
    (["--seq-len", "64,"], "argument --seq-len/--seq-lens: expected one value or a comma-separated list without "
                           "blank entries, got '64,'"),
])
def test_bad_option_values_are_refused_by_name_before_anything_runs(argv, message, capsys):
    """Before: a traceback from int() or argparse, or (0, a typo'd layout) a measured and merged row of nonsense."""
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["causal_conv1d", *argv, "--no-csv"])
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert message in captured.err and "combinations" not in captured.out


def test_an_empty_csv_path_is_named_as_empty(capsys):
    with pytest.raises(SystemExit) as exit_info:  # before: "--csv: cannot write .: . is a directory"
        cli.main(["causal_conv1d", "--csv", ""])
    assert exit_info.value.code == 2
    assert "--csv is empty, expected the CSV file to merge the rows into" in capsys.readouterr().err


def test_a_repeated_value_is_measured_once_and_does_not_make_a_sweep_axis(tmp_path, capsys):
    """Before: `--batch-size 4,4` measured every combination twice, said '4 combinations' for 1 printed row, and
    made batch_size the CSV's x axis (two values) instead of vocab_size."""
    csv_path = tmp_path / "data.csv"
    argv = ["cross_entropy_with_grad", "--mode", "forward,forward", "--providers", "torch-eager,torch-eager",
            "--batch-size", "4,4", "--vocab-sizes", "96", "--dtype", "float32", "--csv", str(csv_path)]
    assert cli.main(argv) == 0
    assert "cross_entropy_with_grad: 1 combinations" in capsys.readouterr().out
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    assert [(r["x_name"], r["x_value"]) for r in rows] == [("vocab_size", "96")]


def test_a_csv_the_rows_cannot_merge_into_is_refused_before_the_sweep(tmp_path, capsys):
    """Before: the whole sweep was measured, then tools.export's ExportError ended it in a traceback and the
    figures were never written anywhere."""
    rng = random.Random()
    foreign = tmp_path / "theirs.csv"
    foreign.write_text("name,seconds\n" + "".join(f"bench{i},{rng.uniform(0.1, 9):.6f}\n" for i in range(5)))
    before = foreign.read_bytes()
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["cross_entropy_with_grad", "--mode", "forward", "--providers", "torch-eager", "--batch-size", "4",
                  "--vocab-sizes", "64", "--dtype", "float32", "--csv", str(foreign)])
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert f"--csv: {foreign} has columns ['name', 'seconds'], expected" in captured.err
    assert "combinations" not in captured.out and foreign.read_bytes() == before


@pytest.mark.parametrize("where", ["under a file", "missing under a file", "read-only folder"])
def test_a_csv_that_cannot_be_written_is_refused_before_anything_is_measured(where, tmp_path, capsys, monkeypatch,
                                                                            read_only):
    """Before: the sweep measured every combination (a GPU's whole run), then ended in '--csv: 1 rows not merged:
    [Errno 30] Read-only file system' (or Not a directory). Now the CSV's folder is probed first: exit 2, nothing
    measured, nothing left behind. (As root a chmod 555 folder is still writable: the read-only folder is the
    probe's file creation failing with EROFS there.)"""
    monkeypatch.setattr(cli.harness, "measure_suites_of", lambda *a: pytest.fail("measured before --csv was checked"))
    blocker = tmp_path / "data.csv"
    blocker.write_text(f"not a folder {random.random()}\n")
    csv_path = {"under a file": blocker / "x.csv", "missing under a file": blocker / "sub" / "x.csv",
                "read-only folder": tmp_path / "ro" / "good.csv"}[where]
    if where == "read-only folder":
        read_only(csv_path.parent)
    before = sorted(tmp_path.rglob("*"))
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["cheri_block", "--providers", "torch-eager", "--mode", "forward", "--batch-size", "1", "--seq-len",
                  "16", "--csv", str(csv_path)])
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    expected = (f"--csv: cannot write {csv_path}: cannot create files in {csv_path.parent} (Read-only file system)"
                if where == "read-only folder" else f"--csv: cannot write {csv_path}: {blocker} is a file, expected "
                                                    f"a folder there")
    assert expected in captured.err.strip().splitlines()[-1]  # argparse's usage, then the one error line
    assert "Traceback" not in captured.err and "combinations" not in captured.out
    assert sorted(tmp_path.rglob("*")) == before  # no probe, no lock file left


def test_a_csv_in_a_folder_not_made_yet_is_still_written(tmp_path, monkeypatch):
    """The up-front check refuses what the write cannot do, not a folder the write makes (as it always has)."""
    samples = [0.001 * (1 + random.random()) for _ in range(5)]
    monkeypatch.setattr(cli.harness, "measure_suites_of", lambda suite, combos: {
        combo: dict(samples=samples, peak_bytes=None, error=None, skipped=None, gpu=None) for combo in combos})
    csv_path = tmp_path / "new" / "folder" / "data.csv"
    assert cli.main(["causal_conv1d", "--mode", "forward", "--providers", "torch-eager", "--csv", str(csv_path)]) == 0
    with open(csv_path) as f:
        assert [r["kernel_provider"] for r in csv.DictReader(f)] == ["torch-eager"]


def test_a_csv_given_twice_is_refused_and_neither_file_is_written(tmp_path, capsys):
    """Before: the rows went to the last --csv alone, the first named and silently left out."""
    first, last = tmp_path / "a.csv", tmp_path / "b.csv"
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["cross_entropy_with_grad", "--mode", "forward", "--providers", "torch-eager", "--batch-size", "4",
                  "--vocab-sizes", "64", "--dtype", "float32", "--csv", str(first), "--csv", str(last)])
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert f"argument --csv: given twice (--csv {first}, then --csv {last}); give it once" in captured.err
    assert "combinations" not in captured.out and not first.exists() and not last.exists()


def test_table_notes_the_gpu_state_while_the_calls_ran():
    """The sweep table's line ends with what NVML read while the timed calls ran (harness.gpu_state), and names a
    clock event reason other than idle (a power cap, a thermal slowdown): a slow figure next to a throttled GPU."""
    during = {"sm_clock_mhz": 1410, "memory_clock_mhz": 2619, "temperature_c": 71, "power_w": 612.3,
              "clock_event_reasons": ["gpu_idle", "sw_power_cap"]}
    assert cli.gpu_note({"before": during, "during": during}) == "  [SM 1410 MHz, 71 C, 612 W; sw_power_cap]"
    assert cli.gpu_note({"before": during, "during": dict(during, clock_event_reasons=[])}) == \
        "  [SM 1410 MHz, 71 C, 612 W]"
    # NVML's one-second average (a driver without the instantaneous field) is marked: a short batch reads the idle
    average = dict(during, power_reading="average", clock_event_reasons=[])
    assert cli.gpu_note({"before": average, "during": average}) == "  [SM 1410 MHz, 71 C, 612 W avg]"
    assert cli.gpu_note({"before": None, "during": dict(average, power_reading="instant")}) == \
        "  [SM 1410 MHz, 71 C, 612 W]"
    assert cli.gpu_note(None) == "" and cli.gpu_note({"before": None, "during": None}) == ""
    assert cli.gpu_note({"before": {}, "during": {"error": "RuntimeError: not supported"}}) == ""


def test_a_sweep_that_times_nothing_fails_and_leaves_the_csv_alone(tmp_path, capsys):
    """Before: exit 0 and a new header-only CSV, both when every combination was skipped (providers not installed)
    and when there was no combination at all (none served)."""
    csv_path = tmp_path / "data.csv"
    argv = ["causal_conv1d", "--mode", "forward", "--providers", "fla,causal-conv1d", "--csv", str(csv_path)]
    from benchmarks import providers
    if any(providers.available(p) for p in ("fla", "causal-conv1d")):
        pytest.skip("a third-party provider is installed here")
    assert cli.main(argv) == 1
    assert "nothing timed: all 2 combinations skipped or failed" in capsys.readouterr().err
    assert not csv_path.exists()
    argv = ["cheri_block", "--mode", "full", "--providers", "greyhound-megakernel", "--csv", str(csv_path)]
    assert cli.main(argv) == 2
    assert "cheri_block: 0 combinations" in capsys.readouterr().err and not csv_path.exists()


def test_tuning_variants_of_one_setting_are_one_label(tmp_path):
    """Before: `[block_l=+16]`, `[block_l=16]` and key reorderings were measured and stored as separate providers."""
    csv_path = tmp_path / "data.csv"
    variants = ("greyhound[warps=4,block_l=+16],greyhound[block_l=16,warps=4],"
                "greyhound[causal_conv1d.warps=4,block_l=16]")
    argv = ["causal_conv1d", "--mode", "forward", "--providers", variants, "--batch-size", "1", "--dim", "8",
            "--seq-len", "16", "--csv", str(csv_path)]
    assert cli.main(argv) == 0
    with open(csv_path) as f:
        assert [r["kernel_provider"] for r in csv.DictReader(f)] == ["greyhound[block_l=16,warps=4]"]


def test_device_ceilings_ops_take_their_own_default_shape(capsys):
    """Before: every option's default came from the copy shape, so --op gemm ran a 65536 x 65536 GEMM on the CPU."""
    suite = cli.kernels()["device_ceilings"]
    assert cli.main(["device_ceilings", "--op", "gemm,copy", "--no-csv"]) == 0
    out = capsys.readouterr().out
    for shape in suite.cpu_shapes:
        assert f"op={shape['op']}, size={shape['size']}, dtype={shape['dtype']}" in out
    assert "device_ceilings: 2 combinations" in out


def test_no_csv_and_csv_are_mutually_exclusive(tmp_path, capsys):
    """Before: --csv was silently ignored."""
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["causal_conv1d", "--no-csv", "--csv", str(tmp_path / "x.csv")])
    assert exit_info.value.code == 2
    assert "argument --csv: not allowed with argument --no-csv" in capsys.readouterr().err
    assert not (tmp_path / "x.csv").exists()


def test_the_tables_percentiles_are_the_csvs(tmp_path, capsys, monkeypatch):
    """Before: the table's p20-p80 came from statistics.quantiles (exclusive), the CSV's from numpy's percentiles."""
    samples = [0.001 * (1 + i * i) for i in range(7)]
    monkeypatch.setattr(cli.harness, "measure_suites_of", lambda suite, combos: {
        combo: dict(samples=samples, peak_bytes=None, error=None, skipped=None, gpu=None) for combo in combos})
    csv_path = tmp_path / "data.csv"
    assert cli.main(["causal_conv1d", "--mode", "forward", "--providers", "torch-eager", "--csv", str(csv_path)]) == 0
    with open(csv_path) as f:
        row = next(csv.DictReader(f))
    line = next(line for line in capsys.readouterr().out.splitlines() if "torch-eager" in line)
    p50, span = line.split()[-3:-1]
    assert [float(p50), *map(float, span.strip("[]").split("–"))] == pytest.approx(
        [float(row["y_value_50"]), float(row["y_value_20"]), float(row["y_value_80"])], rel=1e-3)


def test_a_combination_that_fails_on_rerun_loses_its_earlier_rows_and_a_skipped_one_keeps_them(tmp_path, capsys,
                                                                                                 monkeypatch):
    """Before: a combination whose re-run at the same commit failed kept its earlier row, so the CSV went on showing a
    figure the code no longer produced; the export treats an asv result file the same way (authoritative for its
    commit). A skipped combination (a peer not installed here) says nothing about the code: its rows stay."""
    rng = random.Random()
    outcome = {}

    def measure(suite, combos):
        results = {}
        for combo in combos:
            kind = outcome.get(combo[0], "ok")
            samples = [0.001 * (1 + rng.random()) for _ in range(5)] if kind == "ok" else []
            results[combo] = dict(samples=samples, peak_bytes=None, gpu=None, error="boom" if kind == "fail" else None,
                                  skipped="not installed" if kind == "skip" else None)
        return results

    monkeypatch.setattr(cli.harness, "measure_suites_of", measure)
    csv_path = tmp_path / "data.csv"
    argv = ["causal_conv1d", "--mode", "forward", "--providers", "greyhound,torch-eager,torch-compile",
            "--csv", str(csv_path)]

    def providers_in_csv():
        with open(csv_path) as f:
            return sorted(r["kernel_provider"] for r in csv.DictReader(f))

    assert cli.main(argv) == 0
    assert providers_in_csv() == ["greyhound", "torch-compile", "torch-eager"]
    outcome.update({"greyhound": "fail", "torch-compile": "skip"})
    assert cli.main(argv) == 1
    out = capsys.readouterr().out
    assert providers_in_csv() == ["torch-compile", "torch-eager"]
    assert "1 rows merged" in out and "1 rows of this commit's earlier run removed" in out
    outcome.clear()
    assert cli.main(argv) == 0 and providers_in_csv() == ["greyhound", "torch-compile", "torch-eager"]
