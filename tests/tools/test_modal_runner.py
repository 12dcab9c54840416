"""tools.modal_runner without a network: the plan (image, commands per GPU), argument handling, and the merge of
what comes back (CSV rows keyed, asv results per combination)."""
import csv
import importlib.util
import io
import json
import random
import tarfile
from pathlib import Path

import pytest

from tools import CSV_COLUMNS, modal_runner
from tools.export import ExportError


def _tar(files):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _results_doc(values, started_at):
    columns = ["result", "params", "version", "started_at", "duration"]
    return json.dumps({"commit_hash": "abc", "env_name": "e", "date": 1, "result_columns": columns,
                       "results": {"s.time_x": [values, [["'a'", "'b'"]], "v1", started_at, 1.0]}})


def test_unpack_results_merges_only_under_results(tmp_path):
    """A remote run's results merge with the local ones: nothing measured here meanwhile is lost."""
    (tmp_path / "results" / "m").mkdir(parents=True)
    (tmp_path / "results" / "m" / "old.json").write_text(_results_doc([1.0, None], 1))
    (tmp_path / "results" / "m" / "same.json").write_text(_results_doc([2.0, None], 1))
    blob = _tar({"results/m/same.json": _results_doc([None, 3.0], 2).encode(),
                 "results/m/new.json": _results_doc([4.0, 5.0], 2).encode(), "elsewhere.txt": b"x"})
    assert modal_runner.unpack_results(blob, tmp_path) == 2
    assert json.loads((tmp_path / "results" / "m" / "old.json").read_text())["results"]["s.time_x"][0] == [1.0, None]
    assert json.loads((tmp_path / "results" / "m" / "same.json").read_text())["results"]["s.time_x"][0] == [2.0, 3.0]
    assert (tmp_path / "results" / "m" / "new.json").is_file()
    assert not (tmp_path / "elsewhere.txt").exists()


def test_dry_run_prints_the_image_and_each_gpus_commands(capsys):
    code = modal_runner.main(["--gpu", "H100", "--gpu", "L40S", "--benchmark", "logprobs --mode forward",
                              "--benchmark", "src/benchmarks/chunked_linear_cross_entropy_bench.py --mode full",
                              "--extra", "dev", "--dry-run"])
    out = capsys.readouterr().out
    assert code == 0
    image = out.splitlines()[0]
    assert "modal" in image and "asv" in image and "liger-kernel" in image and "pytest" in image  # extras + group
    for gpu in ("H100", "L40S"):
        assert f"[{gpu}] python -m benchmarks logprobs --mode forward --csv" in out
        assert f"[{gpu}] python -m benchmarks chunked_linear_cross_entropy --mode full --csv" in out


def test_defaults_run_every_kernel_and_skip_thirdparty_drops_the_group(capsys):
    assert modal_runner.main(["--skip-thirdparty", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "liger-kernel" not in out.splitlines()[0]
    for kernel in modal_runner.known_kernels():
        assert f"[H100] python -m benchmarks {kernel} --csv" in out
    assert modal_runner.main(["--asv", "tracked", "--group", "thirdparty", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "tools.bench --tier tracked --no-publish" in out and "python -m benchmarks" not in out


@pytest.mark.parametrize("argv, message", [
    (["--benchmark", "no_such_kernel", "--dry-run"], "unknown kernel 'no_such_kernel'"),
    (["--extra", "nope", "--dry-run"], "--extra 'nope' is not an extra"),
    (["--group", "nope", "--dry-run"], "--group 'nope' is not a dependency group"),
    (["--benchmark", "  ", "--dry-run"], "--benchmark needs a kernel name"),
    # before: a ValueError traceback from shlex
    (["--benchmark", "logprobs --providers 'greyhound", "--dry-run"], "--benchmark \"logprobs --providers 'greyhound\": "
                                                                      "No closing quotation"),
    # before: accepted, and each GPU would have started only to have its sweep command refuse the option
    (["--benchmark", "logprobs --mode fwd", "--dry-run"], "--benchmark 'logprobs --mode fwd': python -m benchmarks "
                                                          "logprobs: error: --mode: fwd not one of full, forward"),
    (["--benchmark", "logprobs --vocab-sizes 128k", "--dry-run"], "argument --vocab-size/--vocab-sizes: expected "
                                                                  "positive integers, got '128k'"),
    (["--benchmark", "logprobs --no-csv", "--dry-run"], "--no-csv would bring no rows back"),
    (["--benchmark", "logprobs --no-c", "--dry-run"], "--no-csv would bring no rows back"),  # (argparse's prefix)
    (["--gpu", "H100:2\n", "--dry-run"], "--gpu: expected a GPU type"),  # before: `$` let the newline through
    # before: accepted; each GPU would print help, merge 0 rows, or write its rows where the runner never reads
    (["--benchmark", "causal_conv1d --help", "--dry-run"], "--benchmark 'causal_conv1d --help': --help would "
                                                           "measure nothing"),
    (["--benchmark", "causal_conv1d -h", "--dry-run"], "--help would measure nothing"),
    (["--benchmark", "causal_conv1d --hel", "--dry-run"], "it prints help and measures nothing"),
    (["--benchmark", "logprobs --csv /tmp/x.csv", "--dry-run"], "--csv is the runner's own"),
    (["--benchmark", "logprobs --csv=/tmp/x.csv", "--dry-run"], "--csv is the runner's own"),
    # before: accepted, to fail only at the image build or the spawn
    (["--gpu", "", "--dry-run"], "--gpu: expected a GPU type such as H100, H200 or A100-80GB (optionally :COUNT), "
                                 "got ''"),
    (["--gpu", "H100!!", "--dry-run"], "--gpu: expected a GPU type"),
    (["--gpu", "H100", "--gpu", "H100:0", "--dry-run"], "got 'H100:0'"),
    (["--torch", "not-a-version", "--dry-run"], "--torch: expected a torch version such as 2.11.0, "
                                                "got 'not-a-version'"),
    # before: accepted (the pattern alone), to fail only at the spawn, after the image was built
    (["--gpu", "FOO", "--dry-run"], "--gpu: expected one of Modal's GPU types (T4, L4, A10, "),
    (["--gpu", "H100", "--gpu", "A100!", "--dry-run"], "B200+), optionally :COUNT, got 'A100!'"),
    (["--gpu", "H100:99999", "--dry-run"], "--gpu: expected at most 8 H100 GPUs in one container (H100:1 to H100:8), "
                                           "got 'H100:99999'"),
    (["--gpu", "A10:5", "--dry-run"], "--gpu: expected at most 4 A10 GPUs in one container"),
])
def test_bad_arguments_are_named(argv, message, capsys):
    assert modal_runner.main(argv) == 2
    assert message in capsys.readouterr().err


def test_gpu_types_and_torch_versions_modal_takes_pass(capsys):
    gpus = ("A100-80GB", "H200:2", "H100!", "h100:8", "B200+", "A10:4", "L40S")  # Modal's names take any case
    argv = [*(a for gpu in gpus for a in ("--gpu", gpu)), "--torch", "2.11.0+cu128", "--dry-run",
            "--benchmark", "logprobs --mode forward"]
    assert modal_runner.main(argv) == 0
    out = capsys.readouterr().out
    assert "torch==2.11.0+cu128" in out and all(f"[{gpu}] python -m benchmarks" in out for gpu in gpus)


def test_one_gpu_type_named_twice_runs_once(capsys):
    # before (session 57's fuzzing): --gpu h100 --gpu H100 spawned two H100 calls (Modal reads both as one type), and
    # both merged their rows under one GPU name
    argv = ["--gpu", "h100", "--gpu", "H100", "--gpu", "H100:1", "--gpu", "H100:2", "--gpu", "h200", "--dry-run",
            "--benchmark", "logprobs --mode forward"]
    assert modal_runner.main(argv) == 0
    out = capsys.readouterr().out
    assert list(dict.fromkeys(line.split("]")[0] + "]" for line in out.splitlines() if line.startswith("["))) == \
        ["[h100]", "[H100:2]", "[h200]"]


def _rows_text(gpu, value):
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerow({c: "" for c in CSV_COLUMNS} | {"kernel_name": "logprobs", "kernel_provider": "greyhound",
                     "kernel_operation_mode": "forward", "metric_name": "speed", "metric_unit": "ms",
                     "x_name": "vocab_size", "x_value": "128256", "y_value_50": str(value), "gpu_name": gpu,
                     "git_commit": "c" * 40, "extra_benchmark_config_str": "{}", "asv_machine": "sweep-cli"})
    return buf.getvalue()


def test_merge_back_keys_rows_per_gpu_and_replaces_a_rerun(tmp_path):
    csv_path = tmp_path / "data.csv"
    for gpu, value in (("NVIDIA H100", 1.0), ("NVIDIA L40S", 2.0), ("NVIDIA H100", 1.5)):
        assert modal_runner.merge_back(_rows_text(gpu, value), None, csv_path, tmp_path) == (1, 0)
    with open(csv_path) as f:
        rows = {r["gpu_name"]: float(r["y_value_50"]) for r in csv.DictReader(f)}
    assert rows == {"NVIDIA H100": 1.5, "NVIDIA L40S": 2.0}  # one row per GPU; the re-run replaced its row


@pytest.mark.skipif(importlib.util.find_spec("modal") is not None, reason="checks the error when modal is missing")
def test_missing_modal_is_a_clear_error(capsys):
    assert modal_runner.main([]) == 2
    assert "pip install -e '.[modal]'" in capsys.readouterr().err


def test_a_csv_the_rows_cannot_merge_into_is_refused_before_any_gpu_runs(tmp_path, capsys):
    """Before: the GPUs ran, then the first merge ended in an ExportError traceback and every other GPU's rows and
    results/ were never merged."""
    rng = random.Random()
    theirs = tmp_path / "theirs.csv"
    theirs.write_text("bench,ms\n" + "".join(f"b{i},{rng.uniform(0.1, 9):.5f}\n" for i in range(4)))
    before = theirs.read_bytes()
    assert modal_runner.main(["--csv", str(theirs), "--benchmark", "logprobs", "--dry-run"]) == 2
    assert f"--csv: {theirs} has columns ['bench', 'ms'], expected" in capsys.readouterr().err
    assert theirs.read_bytes() == before


def test_a_cut_row_coming_back_is_an_error_not_a_row_with_missing_columns(tmp_path):
    """Before: zip() dropped the missing columns and merge_csv_rows failed with KeyError: 'asv_machine'."""
    text = _rows_text("NVIDIA H100", random.uniform(0.1, 5))
    cut = text.rstrip("\n").rsplit(",", 5)[0] + "\n"
    csv_path = tmp_path / "data.csv"
    with pytest.raises(ExportError, match="line 2 has 15 fields, expected 20"):
        modal_runner.merge_back(cut, None, csv_path, tmp_path)
    assert not csv_path.exists()


def test_a_command_that_fails_on_the_gpu_is_reported_and_the_rest_still_runs(tmp_path):
    """The Modal function's body, run here: before, each command's exit status was dropped, so a sweep that failed on
    the GPU read as 'merged 0 rows' with exit 0. Every command still runs after a failure; the CSV and results/ that
    exist come back."""
    import sys
    rng = random.Random()
    (tmp_path / "results" / "m").mkdir(parents=True)
    value = f"{rng.uniform(0.1, 9):.6f}"
    (tmp_path / "results" / "m" / "r.json").write_text(value)
    csv_path = tmp_path / "rows.csv"
    status = rng.randint(1, 9)
    commands = [[sys.executable, "-c", f"import sys; sys.exit({status})"],
                [sys.executable, "-c", f"open({str(csv_path)!r}, 'w').write('rows {value}')"],
                [sys.executable, "-c", "pass"]]
    csv_text, blob, failures = modal_runner.run_commands(commands, root=tmp_path, csv_path=csv_path)
    assert failures == [(f"{sys.executable} -c 'import sys; sys.exit({status})'", status)]
    assert csv_text == f"rows {value}"
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        assert tar.extractfile("results/m/r.json").read().decode() == value
    # nothing failed, no CSV, no results/: an empty answer, not an error
    empty = tmp_path / "empty"
    empty.mkdir()
    csv_text, blob, failures = modal_runner.run_commands([[sys.executable, "-c", "pass"]], root=empty,
                                                         csv_path=empty / "none.csv")
    assert (csv_text, failures) == ("", [])
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        assert tar.getnames() == []


@pytest.mark.parametrize("where", ["under a file", "read-only folder"])
def test_a_csv_that_cannot_be_written_is_refused_before_any_gpu_runs_dry_run_included(where, tmp_path, capsys,
                                                                                      read_only):
    """Before: check_csv only read the CSV, so --dry-run said 0 and a real run failed at the merge, after the GPUs
    had run. (As root a chmod 555 folder is writable: the read-only folder is the probe failing with EROFS.)"""
    blocker = tmp_path / "data.csv"
    blocker.write_text(f"not a folder {random.random()}\n")
    csv_path = blocker / "good.csv" if where == "under a file" else tmp_path / "ro" / "good.csv"
    if where == "read-only folder":
        read_only(csv_path.parent)
    before = sorted(tmp_path.rglob("*"))
    assert modal_runner.main(["--csv", str(csv_path), "--benchmark", "logprobs", "--dry-run"]) == 2
    err = capsys.readouterr().err
    expected = (f"--csv: cannot write {csv_path}: {blocker} is a file, expected a folder there" if where ==
                "under a file" else f"--csv: cannot write {csv_path}: cannot create files in {csv_path.parent} "
                                    f"(Read-only file system)")
    assert err.startswith("tools.modal_runner: error: ") and expected in err and len(err.strip().splitlines()) == 1
    assert sorted(tmp_path.rglob("*")) == before


def test_plot_after_propagates_a_failing_plot_or_docs_step(tmp_path, capsys, monkeypatch):
    """Before: --plot-after ran tools.plot and tools.docs and ignored their exit status: a failed redraw exited 0."""
    import subprocess
    import sys
    import types

    class Call:
        def get(self):
            return "", None, []

    class Function:
        def with_options(self, gpu):
            return self

        def spawn(self, commands):
            return Call()

    class App:
        def run(self):
            import contextlib
            return contextlib.nullcontext()

    monkeypatch.setitem(sys.modules, "modal", types.ModuleType("modal"))
    monkeypatch.setattr(modal_runner, "build_app", lambda the_plan: (App(), Function()))
    status = {}
    ran = []

    def run(command, cwd=None):
        ran.append(command[2])
        return subprocess.CompletedProcess(command, status.get(command[2], 0))

    monkeypatch.setattr(modal_runner.subprocess, "run", run)
    argv = ["--benchmark", "logprobs", "--csv", str(tmp_path / "data.csv"), "--plot-after"]
    assert modal_runner.main(argv) == 0 and ran == ["tools.plot", "tools.docs"]
    failing = random.randint(1, 9)
    for step, expect_ran in (("tools.plot", ["tools.plot"]), ("tools.docs", ["tools.plot", "tools.docs"])):
        status.clear()
        status[step] = failing
        ran.clear()
        capsys.readouterr()
        assert modal_runner.main(argv) == 1 and ran == expect_ran
        assert f"--plot-after: exit status {failing}: python -m {step} --csv" in capsys.readouterr().err


def test_a_site_page_that_is_not_utf8_or_an_empty_html_is_an_error_and_nothing_is_rewritten(tmp_path, capsys):
    # fuzzing, session 57: a non-UTF-8 page was a traceback after earlier pages were rewritten; --html '' rewrote the
    # current directory's pages
    from tools import site
    html = tmp_path / "html"
    html.mkdir()
    good = '<script src="https://code.jquery.com/jquery-3.3.1.min.js"></script>'
    (html / "a.html").write_text(good)
    (html / "b.html").write_bytes(b"\xff\xfe not utf-8")
    assert site.main(["--html", str(html), "--no-publish"]) == 2
    assert "b.html: not UTF-8 text" in capsys.readouterr().err
    assert (html / "a.html").read_text() == good
    for bad, message in (("", "--html is empty"), (str(tmp_path / "missing"), "is not a folder")):
        assert site.main(["--html", bad, "--no-publish"]) == 2
        assert message in capsys.readouterr().err
