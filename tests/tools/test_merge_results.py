"""tools.merge_results: slices of one commit's asv results measured in separate runs merge without losing any."""
import contextlib
import errno
import io
import json
import math
import random
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest

from tools import merge_results

COLUMNS = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b", "stats_q_25",
           "stats_q_75", "stats_number", "stats_repeat", "samples", "profile"]
PARAMS = [["'greyhound'", "'liger'"], ["'full'", "'forward'"]]


def _entry(values, started_at, version="v1"):
    """A result row like asv writes it: per-combination lists, None for combinations the run left out."""
    def per(fn):
        return [None if v is None else fn(v) for v in values]
    return [list(values), PARAMS, version, started_at, 10.0, per(lambda v: v * 0.9), per(lambda v: v * 1.1),
            per(lambda v: v * 0.95), per(lambda v: v * 1.05), per(lambda v: 1), per(lambda v: 10),
            per(lambda v: [v] * 3)]


def _document(results, commit="abc123", date=1000):
    return {"commit_hash": commit, "env_name": "env", "date": date, "params": {}, "python": "3.12",
            "requirements": {}, "env_vars": {}, "result_columns": COLUMNS, "results": results, "durations": {},
            "version": 2}


def _write(folder, name, document):
    path = folder / "results" / "gpu" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    return path


def test_slices_of_one_benchmark_merge_per_parameter_combination(tmp_path):
    rng = random.Random()
    a_vals = [rng.uniform(1, 2), None, None, rng.uniform(1, 2)]
    b_vals = [None, rng.uniform(1, 2), float("nan"), None]
    ours = _document({"s.time_x": _entry(a_vals, 100), "s.time_only_ours": _entry([1.0, 2.0, 3.0, 4.0], 100)})
    theirs = _document({"s.time_x": _entry(b_vals, 200), "s.time_only_theirs": _entry([5.0, 6.0, 7.0, 8.0], 200)},
                       date=900)
    target = _write(tmp_path / "into", "abc123-env.json", ours)
    _write(tmp_path / "src", "abc123-env.json", theirs)
    summary = merge_results.merge_tree(tmp_path / "src" / "results", tmp_path / "into" / "results")
    assert summary == {"copied": 0, "merged": 1, "replaced": 0, "unchanged": 0}
    merged = json.loads(target.read_text())
    row = dict(zip(COLUMNS, merged["results"]["s.time_x"]))
    assert row["result"][:2] == [a_vals[0], b_vals[1]] and row["result"][3] == a_vals[3]
    assert row["result"][2] is None or math.isnan(row["result"][2])  # neither side measured it
    assert row["samples"][1] == [b_vals[1]] * 3 and row["samples"][0] == [a_vals[0]] * 3  # columns move together
    assert row["started_at"] == 200 and row["duration"] == 20.0
    assert set(merged["results"]) == {"s.time_x", "s.time_only_ours", "s.time_only_theirs"}
    assert merged["date"] == 900
    # merging the same source again changes nothing
    again = merge_results.merge_tree(tmp_path / "src" / "results", tmp_path / "into" / "results")
    assert again["merged"] == 0 and again["unchanged"] == 1


def test_a_combination_measured_twice_keeps_the_later_run_and_is_reported(tmp_path):
    ours = _document({"s.time_x": _entry([1.5, 2.5], 300)})
    theirs = _document({"s.time_x": _entry([1.7, None], 100)})
    merged, replaced = merge_results.merge_result_file(ours, theirs)
    assert replaced == 1 and merged["results"]["s.time_x"][0] == [1.5, 2.5]  # ours started later
    merged, replaced = merge_results.merge_result_file(theirs, ours)
    assert replaced == 1 and merged["results"]["s.time_x"][0] == [1.5, 2.5]


@pytest.mark.parametrize("field,value", [("version", "v2"), ("params", [["'a'"], ["'full'"]])])
def test_different_benchmark_code_is_refused(field, value):
    theirs_entry = _entry([1.0, 2.0], 200)
    theirs_entry[COLUMNS.index(field)] = value
    with pytest.raises(merge_results.MergeError, match=f"s.time_x: {field} differs"):
        merge_results.merge_result_file(_document({"s.time_x": _entry([1.0, None], 100)}),
                                        _document({"s.time_x": theirs_entry}))


def test_other_commits_are_refused():
    with pytest.raises(merge_results.MergeError, match="commit_hash differs"):
        merge_results.merge_result_file(_document({}), _document({}, commit="def456"))


def test_cli_merges_a_tarball_and_copies_new_files(tmp_path):
    src = tmp_path / "remote"
    _write(src, "abc123-env.json", _document({"s.time_x": _entry([None, 3.0], 200)}))
    _write(src, "new999-env.json", _document({"s.time_y": _entry([4.0, 5.0], 200)}, commit="new999"))
    (src / "results" / "benchmarks.json").write_text(json.dumps({"s.time_x": {"version": "v1"}, "version": 2}))
    archive = tmp_path / "results.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(src / "results", arcname="results")
    into = tmp_path / "repo" / "results"
    _write(tmp_path / "repo", "abc123-env.json", _document({"s.time_x": _entry([2.0, None], 100)}))
    (into / "benchmarks.json").write_text(json.dumps({"s.time_z": {"version": "v9"}, "version": 2}))
    proc = subprocess.run([sys.executable, "-m", "tools.merge_results", str(archive), "--into", str(into)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "1 file(s) copied, 2 merged" in proc.stdout
    row = json.loads((into / "gpu" / "abc123-env.json").read_text())["results"]["s.time_x"]
    assert row[0] == [2.0, 3.0]
    assert (into / "gpu" / "new999-env.json").exists()
    assert set(json.loads((into / "benchmarks.json").read_text())) == {"s.time_x", "s.time_z", "version"}


def test_cli_bad_source_exits_2(tmp_path):
    bogus = tmp_path / "notes.txt"
    bogus.write_text("not results")
    (tmp_path / "r").mkdir()
    proc = subprocess.run([sys.executable, "-m", "tools.merge_results", str(bogus), "--into", str(tmp_path / "r")],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "source must be a results folder or a .tar.gz" in proc.stderr


def test_peak_memory_rows_keep_their_short_form():
    """asv writes peak-memory rows without the timing statistics (5 columns); a merge must not pad them."""
    ours = _document({"s.track_m": [[1.0e9, None], PARAMS, "v1", 100, 5.0]})
    theirs = _document({"s.track_m": [[None, 2.0e9], PARAMS, "v1", 200, 6.0]})
    merged, replaced = merge_results.merge_result_file(ours, theirs)
    assert merged["results"]["s.track_m"] == [[1.0e9, 2.0e9], PARAMS, "v1", 200, 11.0] and replaced == 0


@pytest.mark.parametrize("damage", [b'{"commit_hash": "ab', b"\xff\xfe\x00", b"[1, 2]"])
def test_an_unreadable_source_file_is_named_not_a_traceback(tmp_path, capsys, damage):
    # before: a truncated file gave json's message without the file's name; a binary one a UnicodeDecodeError traceback
    into = tmp_path / "results"
    (into / "h200").mkdir(parents=True)
    (into / "h200" / "abcdef12-env.json").write_text('{"results": {}, "result_columns": []}')
    source = tmp_path / "theirs"
    (source / "h200").mkdir(parents=True)
    (source / "h200" / "abcdef12-env.json").write_bytes(damage)
    assert merge_results.main([str(source), "--into", str(into)]) == 2
    err = capsys.readouterr().err
    assert str(source / "h200" / "abcdef12-env.json") in err and "Traceback" not in err


# --- found by fuzzing (session 42) ------------------------------------------------------------------------------------
def test_runs_of_another_gpu_or_software_are_not_merged_into_one_file(capsys):
    # before: theirs' numbers were merged and their params dropped, so they were credited to ours' GPU and software
    ours = _document({"s.time_x": _entry([1.0, None], 100)})
    ours["params"] = {"machine": "gpu", "gpu_name": "NVIDIA H200", "torch": "2.11.0", "gpu_driver": "580"}
    for key, value in (("torch", "2.99"), ("gpu_name", "OTHER GPU"), ("python", "3.13")):
        theirs = _document({"s.time_x": _entry([None, 2.0], 200)})
        theirs["params"] = dict(ours["params"], **{key: value})
        with pytest.raises(merge_results.MergeError, match=f"params '{key}' differs"):
            merge_results.merge_result_file(ours, theirs)
    theirs["params"] = dict(ours["params"], gpu_driver="590")  # another host's driver: merged, and said
    merged, _ = merge_results.merge_result_file(ours, theirs, label="f.json")
    assert merged["results"]["s.time_x"][0] == [1.0, 2.0] and merged["params"] == ours["params"]
    assert "f.json: params 'gpu_driver' differs" in capsys.readouterr().out


def test_a_damaged_archive_or_a_short_column_is_an_error_and_writes_nothing(tmp_path, capsys):
    into = tmp_path / "repo" / "results"
    _write(tmp_path / "repo", "abc123-env.json", _document({"s.time_x": _entry([2.0, None], 100)}))
    before = (into / "gpu" / "abc123-env.json").read_bytes()
    src = tmp_path / "remote"
    _write(src, "abc123-env.json", _document({"s.time_x": _entry([None, 3.0], 200)}))
    _write(src, "new999-env.json", _document({"s.time_y": _entry([4.0, 5.0], 200)}, commit="new999"))
    archive = tmp_path / "results.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(src / "results", arcname="results")
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(archive.read_bytes()[: len(archive.read_bytes()) // 2])
    assert merge_results.main([str(cut), "--into", str(into)]) == 2  # before: an EOFError traceback, exit 1
    assert "cannot unpack" in capsys.readouterr().err
    short = _document({"s.time_x": _entry([None, 3.0], 200)})
    short["results"]["s.time_x"][11] = [[3.0] * 3]  # samples for one combination of two: before, an IndexError
    _write(src, "abc123-env.json", short)
    assert merge_results.main([str(src / "results"), "--into", str(into)]) == 2
    assert "samples column is not a list of 2 entries" in capsys.readouterr().err
    # all or nothing: the new file of the same source was not copied either
    assert (into / "gpu" / "abc123-env.json").read_bytes() == before and not (into / "gpu" / "new999-env.json").exists()


def test_gpus_csv_rows_merge_only_under_the_same_columns(tmp_path, capsys):
    into = tmp_path / "results"
    (into / "gpu").mkdir(parents=True)
    (into / "gpu" / "gpus.csv").write_text("commit,gpu_uuid,measured_at\nabc,GPU-1,2026-12-05T00:00Z\n")
    source = tmp_path / "theirs"
    (source / "gpu").mkdir(parents=True)
    (source / "gpu" / "gpus.csv").write_text("gpu_uuid,commit\nGPU-2,def\n")
    assert merge_results.main([str(source), "--into", str(into)]) == 2
    assert "not merging rows whose columns differ" in capsys.readouterr().err
    (source / "gpu" / "gpus.csv").write_bytes(b"commit,gpu_uuid\n\xff\xfe\n")
    assert merge_results.main([str(source), "--into", str(into)]) == 2
    assert "cannot read" in capsys.readouterr().err
    (source / "gpu" / "gpus.csv").write_text("commit,gpu_uuid,measured_at\ndef,GPU-2,2026-12-05T01:00Z\n")
    assert merge_results.main([str(source), "--into", str(into)]) == 0
    assert (into / "gpu" / "gpus.csv").read_text().splitlines()[-1] == "def,GPU-2,2026-12-05T01:00Z"


# --- audit 2: benchmarks.json of a newer benchmark version --------------------------------------------------------
def _benchmarks(folder, version):
    path = folder / "results" / "benchmarks.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": 2, "s.time_x": {"name": "s.time_x", "version": version, "params": PARAMS,
                                                           "param_names": ["provider", "mode"], "type": "time",
                                                           "unit": "seconds"}}))
    return path


@pytest.mark.parametrize("source_newer", [True, False])
def test_benchmarks_json_takes_the_definition_of_the_newer_run(tmp_path, source_newer):
    # before: results/' old entry was always kept, so the merged newer runs read as "an older version": the export
    # left them out and the gate said HEAD "did not run" them (exit 2)
    target = _benchmarks(tmp_path / "into", "v1")
    _write(tmp_path / "into", "aaaa0000-env.json", _document({"s.time_x": _entry([1.0] * 4, 100, "v1")}, "aaaa0000"))
    _benchmarks(tmp_path / "src", "v2")
    _write(tmp_path / "src", "bbbb0000-env.json",
           _document({"s.time_x": _entry([2.0] * 4, 200 if source_newer else 50, "v2")}, "bbbb0000"))
    lines = []
    merge_results.merge_tree(tmp_path / "src" / "results", tmp_path / "into" / "results", log=lines.append)
    version = json.loads(target.read_text())["s.time_x"]["version"]
    assert version == ("v2" if source_newer else "v1")
    assert len(lines) == 1 and "s.time_x" in lines[0]
    if source_newer:
        assert "took the source's definition of 1 benchmark(s)" in lines[0]
    else:
        assert "warning: kept results/' definition" in lines[0] and "re-run those benchmarks" in lines[0]
    # merging the same source again changes nothing more
    again = merge_results.merge_tree(tmp_path / "src" / "results", tmp_path / "into" / "results", log=lines.append)
    assert again["merged"] == 0 and json.loads(target.read_text())["s.time_x"]["version"] == version


def test_concurrent_merges_into_one_results_folder_lose_no_rows(tmp_path):
    # two merges at once (two remote runs fetched together) each read gpus.csv, add their rows and write it back:
    # without the results folder's lock the later write dropped the other's rows
    into = tmp_path / "results"
    (into / "gpu").mkdir(parents=True)
    (into / "gpu" / "gpus.csv").write_text("commit,gpu_uuid,measured_at\n")
    sources = []
    for name in ("a", "b", "c"):
        rows = [f"{random.getrandbits(40):010x},GPU-{name}{i},2026-12-05T00:{i:02d}Z" for i in range(12)]
        sources.append([])
        for i, row in enumerate(rows):  # one source folder a row, merged one after another by one process
            folder = tmp_path / f"{name}{i}"
            (folder / "gpu").mkdir(parents=True)
            (folder / "gpu" / "gpus.csv").write_text(f"commit,gpu_uuid,measured_at\n{row}\n")
            sources[-1].append(str(folder))
    script = ("import sys; from tools import merge_results\n"
              "for source in sys.argv[2:]:\n    assert merge_results.main([source, '--into', sys.argv[1]]) == 0")
    root = Path(__file__).resolve().parents[2]
    procs = [subprocess.Popen([sys.executable, "-c", script, str(into), *folders], stdout=subprocess.DEVNULL, cwd=root)
             for folders in sources]
    assert [p.wait(120) for p in procs] == [0, 0, 0]
    lines = (into / "gpu" / "gpus.csv").read_text().splitlines()
    assert lines[0] == "commit,gpu_uuid,measured_at" and len(lines) == 1 + 3 * 12


# --- found by fuzzing (session 53): arguments and archives that merged nothing, somewhere else, or half ---------------
def _source(tmp_path, name="src"):
    """A source folder holding one new result file."""
    folder = tmp_path / name
    _write(folder, "abc123-env.json", _document({"s.time_x": _entry([1.0, 2.0], 100)}))
    return folder / "results"


def test_into_empty_a_file_or_missing_is_refused_and_nothing_is_written(tmp_path, monkeypatch, capsys):
    # before: --into "" merged into the current directory (exit 0); --into a file: a FileExistsError traceback;
    # --into a missing folder silently started a new results tree
    source = _source(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    (work / "notes.txt").write_text("x")
    cases = {"": "--into is empty, expected the results folder to merge into",
             "notes.txt": "--into notes.txt is not a folder, expected the results folder to merge into",
             "reslts": "--into reslts does not exist, expected an existing results folder (pass --create"}
    for into, message in cases.items():
        assert merge_results.main([str(source), "--into", into]) == 2, into
        err = capsys.readouterr().err
        assert err == f"tools.merge_results: error: {message}" + err[len(f"tools.merge_results: error: {message}"):]
        assert err.count("\n") == 1 and "Traceback" not in err
        assert sorted(p.name for p in work.iterdir()) == ["notes.txt"]
    assert merge_results.main([str(source), "--into", "no/such/results", "--create"]) == 2
    assert "its parent folder" in capsys.readouterr().err and not (work / "no").exists()
    assert merge_results.main([str(source), "--into", "reslts", "--create"]) == 0
    assert (work / "reslts" / "gpu" / "abc123-env.json").is_file()


def test_an_empty_or_missing_source_is_refused(tmp_path, monkeypatch, capsys):
    # before: "" was read as the current directory and merged (exit 0); a missing one gave a bare "[Errno 2] ..."
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, "abc123-env.json", _document({"s.time_x": _entry([1.0, 2.0], 100)}))
    into = tmp_path / "into"
    into.mkdir()
    assert merge_results.main(["", "--into", str(into)]) == 2
    assert "source is empty, expected a results folder or a .tar.gz of one" in capsys.readouterr().err
    assert merge_results.main(["missing.tar.gz", "--into", str(into)]) == 2
    assert "source 'missing.tar.gz' does not exist" in capsys.readouterr().err
    assert list(into.iterdir()) == []


def test_an_unwritable_into_is_an_error_not_a_traceback(tmp_path, monkeypatch, capsys):
    # before: `OSError: [Errno 30] Read-only file system: '.../.benchmarks.json.lock'` from filelock, a traceback
    @contextlib.contextmanager
    def read_only(path):
        raise OSError(errno.EROFS, "Read-only file system", str(Path(path).with_name(".benchmarks.json.lock")))
        yield

    into = tmp_path / "into"
    into.mkdir()
    monkeypatch.setattr(merge_results, "locked", read_only)
    source = _source(tmp_path)
    assert merge_results.main([str(source), "--into", str(into)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tools.merge_results: error: cannot merge {source} into --into {into}: [Errno 30] "
                          f"Read-only file system") and err.count("\n") == 1


def test_a_folder_that_cannot_be_made_writes_nothing(tmp_path, capsys):
    # before: gpu/ was written, then a FileExistsError traceback at gpu2/ (a file there): half a merge
    into = tmp_path / "into"
    into.mkdir()
    (into / "gpu2").write_text("a file where a machine folder goes")
    source = _source(tmp_path)
    (source / "gpu2").mkdir()
    (source / "gpu2" / "abc123-env.json").write_text(json.dumps(_document({})))
    assert merge_results.main([str(source), "--into", str(into)]) == 2
    err = capsys.readouterr().err
    assert f"cannot write {into / 'gpu2' / 'abc123-env.json'}: {into / 'gpu2'} is not a folder" in err
    assert sorted(p.name for p in into.iterdir() if p.name != ".benchmarks.json.lock") == ["gpu2"]


def _tar_of(path, members):
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_archive_members_outside_are_named_and_the_exit_status_says_so(tmp_path, capsys):
    # before: dropped without a word, exit 0
    escape = f"evil-{random.getrandbits(64):016x}.json"
    absolute = tmp_path / "absolute.json"
    document = json.dumps(_document({"s.time_x": _entry([1.0, 2.0], 100)})).encode()
    archive = _tar_of(tmp_path / "r.tar.gz", {"results/gpu/abc123-env.json": document, f"../{escape}": b"{}",
                                              f"results/../../{escape}": b"{}", str(absolute): b"{}"})
    into = tmp_path / "into"
    into.mkdir()
    assert merge_results.main([str(archive), "--into", str(into)]) == 1
    captured = capsys.readouterr()
    assert (f"tools.merge_results: warning: {archive}: 3 archive member(s) left out, whose path would land outside "
            f"the archive's folder: ../{escape}, results/../../{escape}, {absolute}") in captured.err
    assert "1 file(s) copied" in captured.out and (into / "gpu" / "abc123-env.json").is_file()
    # the archive is unpacked in a temporary folder: `..` would land in its parent
    assert not absolute.exists() and not Path(tempfile.gettempdir(), escape).exists()


def test_a_source_with_nothing_to_merge_is_an_error(tmp_path, capsys):
    # before: "0 file(s) copied, 0 merged", exit 0
    into = tmp_path / "into"
    into.mkdir()
    empty_folder = tmp_path / "empty"
    (empty_folder / "results").mkdir(parents=True)
    sources = [_tar_of(tmp_path / "empty.tar.gz", {}), _tar_of(tmp_path / "notes.tar.gz", {"notes.txt": b"hello"}),
               empty_folder]
    for source in sources:
        assert merge_results.main([str(source), "--into", str(into)]) == 2, source
        assert f"source {source}: no asv results in it" in capsys.readouterr().err
    assert list(into.iterdir()) == []


@pytest.mark.parametrize("kind", ["result file", "benchmarks.json", "machine.json"])
@pytest.mark.parametrize("ours_exists", [True, False])
def test_a_file_of_another_asv_format_version_is_named_unreadable(tmp_path, capsys, kind, ours_exists):
    # before: a result file of format version 99 was merged and reported "1 unchanged"
    name = {"result file": "gpu/abc123-env.json", "benchmarks.json": "benchmarks.json",
            "machine.json": "gpu/machine.json"}[kind]
    current = {"result file": _document({"s.time_x": _entry([1.0, 2.0], 100)}),
               "benchmarks.json": {"s.time_x": {"version": "v1"}, "version": 2},
               "machine.json": {"machine": "gpu", "version": 1}}[kind]
    into, source = tmp_path / "into", tmp_path / "src"
    for folder, document in ((into, current), (source, dict(current, version=99))):
        if folder is into and not ours_exists:
            folder.mkdir()
            continue
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(json.dumps(document))
    before = sorted(p.relative_to(into) for p in into.rglob("*"))
    assert merge_results.main([str(source), "--into", str(into)]) == 2
    err = capsys.readouterr().err
    assert f"{source / name}: cannot read: an asv {kind} of format version 99, expected version" in err
    assert sorted(p.relative_to(into) for p in into.rglob("*") if p.name != ".benchmarks.json.lock") == before


def test_a_new_file_is_checked_before_it_is_copied(tmp_path, capsys):
    # before: any *.json the source had and results/ lacked was copied as it was: a result file naming another machine
    # than its folder, an object that is no asv file, a .json at any depth (every later export then warned)
    into = tmp_path / "into"
    into.mkdir()
    cases = {"gpu/abc123-env.json": ({**_document({}), "params": {"machine": "other"}}, "names machine 'other'"),
             "gpu/def456-env.json": ({"hello": "world"}, "no `results` object"),
             "gpu/deep/x.json": (_document({}), "not an asv results file"),
             "gpu/aaa111-env.json": ({**_document({}), "params": []}, "params must be a JSON object"),
             "gpu/machine.json": ({"machine": "other", "version": 1}, "names machine 'other'")}
    for name, (document, message) in cases.items():
        src = tmp_path / f"src-{random.getrandbits(32):08x}" / "results"
        (src / name).parent.mkdir(parents=True)
        (src / name).write_text(json.dumps(document))
        assert merge_results.main([str(src), "--into", str(into)]) == 2, name
        assert message in capsys.readouterr().err, name
        assert not list(into.rglob("*.json")), name


def test_an_archive_member_is_named_by_the_archive_not_a_scratch_folder(tmp_path, capsys):
    archive = _tar_of(tmp_path / "run.tar.gz", {"results/gpu/machine.json": b'{"machine": "gpu", "version": 7}'})
    into = tmp_path / "into"
    into.mkdir()
    assert merge_results.main([str(archive), "--into", str(into)]) == 2
    assert f"{archive}:results/gpu/machine.json: cannot read" in capsys.readouterr().err


def test_two_result_files_without_a_date_merge():
    ours, theirs = _document({"s.time_x": _entry([1.0, None], 100)}), _document({"s.time_x": _entry([None, 2.0], 200)})
    del ours["date"], theirs["date"]
    merged, _ = merge_results.merge_result_file(ours, theirs, log=lambda *_: None)
    assert merged["date"] is None and merged["results"]["s.time_x"][0] == [1.0, 2.0]
