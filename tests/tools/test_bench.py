"""tools.bench, the main job, without running its steps: what it refuses before the first step (an asv -b regex, the
CSV, the plots' folder), and that it stops at the first step that fails with that step's exit status."""
import random

import pytest

from tools import bench


@pytest.fixture
def steps(monkeypatch):
    """The steps bench would run, recorded instead of run; `steps.status[module]` sets a step's exit status."""
    class Steps(list):
        status = {}

    ran = Steps()
    monkeypatch.setattr(bench.asv_machine, "describe", lambda: {"gpu_name": "cpu"})

    def run(cmd):
        module = cmd[2]
        ran.append(module)
        return ran.status.get(module, 0)

    monkeypatch.setattr(bench, "_run", run)
    return ran


def _outputs(tmp_path, **given):
    options = {"--csv": tmp_path / "data.csv", "--out": tmp_path / "assets"} | given
    return ["--machine", "m", *(a for option, path in options.items() for a in (option, str(path)))]


@pytest.mark.parametrize("regex, message", [
    # before: accepted; asv reads -b '' as every benchmark, the whole grid of every tier
    ("", "argument -b/--bench: expected a non-empty benchmark regex (e.g. 'Tracked\\.'), got ''"),
    ("  ", "expected a non-empty benchmark regex"),
    # before: accepted; asv run ended in a re.error traceback and the later steps ran anyway
    ("(", "argument -b/--bench: expected a valid regex, got '(' (missing ), unterminated subpattern at position 0)"),
    ("Tracked[", "expected a valid regex, got 'Tracked['"),
])
def test_an_empty_or_invalid_benchmark_regex_is_refused_before_any_step(regex, message, tmp_path, steps, capsys):
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["-b", "Tracked\\.", "-b", regex, *_outputs(tmp_path)])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err.strip().splitlines()[-1]
    assert steps == []


@pytest.mark.parametrize("option", ["--csv", "--out"])
@pytest.mark.parametrize("where", ["under a file", "read-only folder"])
def test_a_csv_or_out_that_cannot_be_written_is_refused_before_asv_runs(option, where, tmp_path, steps, capsys,
                                                                        read_only):
    """Before: asv measured the whole tier, then the export (--csv) or the plot (--out) failed on it. (As root a
    chmod 555 folder is writable: the read-only folder is the probe's file creation failing with EROFS there.)"""
    blocker = tmp_path / "file"
    blocker.write_text(f"not a folder {random.random()}\n")
    read_only = read_only(tmp_path / "ro")
    bad = {("--csv", "under a file"): blocker / "data.csv", ("--csv", "read-only folder"): read_only / "data.csv",
           ("--out", "under a file"): blocker, ("--out", "read-only folder"): read_only / "assets"}[option, where]
    before = sorted(tmp_path.rglob("*"))
    with pytest.raises(SystemExit) as exit_info:
        bench.main(_outputs(tmp_path, **{option: bad}))
    assert exit_info.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    reason = f"{blocker} is a file, expected a folder there" if where == "under a file" else "(Read-only file system)"
    assert last.startswith(f"python -m tools.bench: error: {option}: cannot write {bad}") and reason in last
    assert steps == [] and sorted(tmp_path.rglob("*")) == before


def test_a_csv_that_is_not_the_benchmark_csv_is_refused_before_asv_runs(tmp_path, steps, capsys):
    theirs = tmp_path / "theirs.csv"
    theirs.write_text("bench,ms\nb0,1.5\n")
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--machine", "m", "--csv", str(theirs), "--out", str(tmp_path / "assets")])
    assert exit_info.value.code == 2 and steps == []
    assert f"--csv: {theirs} has columns ['bench', 'ms'], expected" in capsys.readouterr().err


def test_the_steps_stop_at_the_first_that_fails_with_its_exit_status(tmp_path, steps, capsys):
    """Before: every later step ran after a failed one (the export, plot and docs of a failed asv run) and the command
    exited 1 whatever the step's status."""
    argv = _outputs(tmp_path)
    assert bench.main(argv) == 0
    everything = ["tools.asv_machine", "asv", "tools.export", "tools.plot", "tools.docs", "tools.site"]
    assert steps == everything
    for failing in everything:
        status = random.randint(3 if failing == "asv" else 2, 9)
        steps.clear()
        steps.status.clear()
        steps.status[failing] = status
        capsys.readouterr()
        assert bench.main(argv) == status
        assert steps == everything[:everything.index(failing) + 1]
        err = capsys.readouterr().err
        assert f"tools.bench: error: exit status {status}: " in err
        assert ("not run: " in err) == (failing != "tools.site")


def test_benchmarks_that_failed_in_asv_run_still_get_exported(tmp_path, steps, capsys):
    """asv run exits 2 when some benchmark failed (a peer crashing on one shape): what it measured is recorded, so the
    export, plots, docs and site still run, and the command exits 2 at the end."""
    steps.status["asv"] = 2
    assert bench.main(_outputs(tmp_path)) == 2
    assert steps == ["tools.asv_machine", "asv", "tools.export", "tools.plot", "tools.docs", "tools.site"]
    assert "some benchmarks failed (exit status 2" in capsys.readouterr().err


def test_the_noise_table_beside_the_csv_and_an_empty_machine_are_refused_before_asv(tmp_path, capsys):
    # fuzzing, session 57: a directory or a foreign table named noise.csv beside --csv passed the checks, asv measured
    # the whole tier, and only the export failed; --machine '' silently took the default name
    from tools import bench
    for make in (lambda p: p.mkdir(), lambda p: p.write_text("a,b\n1,2\n")):
        folder = tmp_path / f"case-{random.getrandbits(32):08x}"
        folder.mkdir()
        make(folder / "noise.csv")
        problem = bench.check_outputs(folder / "data.csv", tmp_path / "out")
        assert problem and "the noise table beside it" in problem
    with pytest.raises(SystemExit):
        bench.main(["--machine", "", "--csv", str(tmp_path / "ok" / "data.csv"), "--out", str(tmp_path / "out")])
    assert "--machine is empty" in capsys.readouterr().err


@pytest.mark.parametrize("commits", ["--help", "-b", "", "  "])
def test_a_range_that_is_an_option_or_empty_is_refused_before_asv(commits, tmp_path, capsys, steps):
    # session 57's note: --range=--help reached asv run as its own option
    from tools import bench
    with pytest.raises(SystemExit):
        bench.main([f"--range={commits}", "--csv", str(tmp_path / "data.csv"), "--out", str(tmp_path / "out")])
    assert "--range must name commits for asv run" in capsys.readouterr().err and steps == []
