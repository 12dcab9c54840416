"""tools._atomic: the atomic write (no half files, no leftovers, the file's mode and links kept, flushed to disk) and
the lock around a read-modify-write."""
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tools import _atomic

ROOT = Path(__file__).resolve().parents[2]


def test_a_write_killed_midway_leaves_a_temporary_file_the_next_write_removes(tmp_path):
    # before: SIGKILL during the write left a hidden half-written .data.tmp-*.csv that nothing removed
    target = tmp_path / "data.csv"
    target.write_text("old\n")
    script = ("import os, signal, sys; from tools._atomic import atomic_path\n"
              "with atomic_path(sys.argv[1]) as tmp:\n    tmp.write_text('half')\n"
              "    os.kill(os.getpid(), signal.SIGKILL)")
    killed = subprocess.run([sys.executable, "-c", script, str(target)], cwd=ROOT)
    assert killed.returncode == -signal.SIGKILL
    left = [p for p in tmp_path.iterdir() if p.name.startswith(".data.tmp-")]
    assert len(left) == 1 and target.read_text() == "old\n"
    older = tmp_path / ".data.tmp-abc123_x.csv"  # the older naming, without a process id: removed once an hour old
    older.write_text("half")
    os.utime(older, (time.time() - 2 * _atomic.STALE_TMP_AFTER_S,) * 2)
    alive = tmp_path / f".data.tmp-{os.getpid()}-inflight.csv"  # a running writer's: never touched
    alive.write_text("half")
    _atomic.write_atomic(target, "new\n")
    assert target.read_text() == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([alive.name, "data.csv"])


def test_the_existing_files_mode_is_kept(tmp_path):
    # before: every write forced 0644, so a private 0600 CSV became world-readable
    target = tmp_path / "data.csv"
    target.write_text("old\n")
    target.chmod(0o600)
    _atomic.write_atomic(target, "new\n")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600 and target.read_text() == "new\n"


def test_a_symlink_is_written_through_to_its_target(tmp_path):
    # before: a symlinked --csv was replaced by a regular file and the link's target was left unchanged
    real = tmp_path / "store" / "data.csv"
    real.parent.mkdir()
    real.write_text("old\n")
    link = tmp_path / "data.csv"
    link.symlink_to(real)
    _atomic.write_atomic(link, "new\n")
    assert link.is_symlink() and real.read_text() == "new\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_the_new_file_is_flushed_to_disk_before_it_replaces_the_old(tmp_path, monkeypatch):
    # before: os.replace without fsync: after a power loss the new name could point at an empty file
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(_atomic.os, "fsync", lambda fd: events.append("fsync") or real_fsync(fd))
    monkeypatch.setattr(_atomic.os, "replace", lambda a, b: events.append("replace") or real_replace(a, b))
    _atomic.write_atomic(tmp_path / "data.csv", "new\n")
    assert events[:2] == ["fsync", "replace"]


def test_the_lock_serialises_two_processes(tmp_path):
    target = tmp_path / "data.csv"
    script = ("import sys, time; from tools._atomic import locked\nwith locked(sys.argv[1]):\n"
              "    open(sys.argv[2], 'a').write('in ' + sys.argv[3] + '\\n'); time.sleep(0.5)\n"
              "    open(sys.argv[2], 'a').write('out ' + sys.argv[3] + '\\n')")
    log = tmp_path / "log"
    procs = [subprocess.Popen([sys.executable, "-c", script, str(target), str(log), name], cwd=ROOT)
             for name in ("a", "b")]
    assert [p.wait(60) for p in procs] == [0, 0]
    lines = log.read_text().split()
    assert lines[0::2] == ["in", "out", "in", "out"] and lines[1] == lines[3]  # never both inside at once


_LOCK_SCRIPT = ("import sys; from tools._atomic import locked\n"
                "try:\n    with locked(sys.argv[1]):\n        print('inside')\n"
                "except OSError as err:\n    print(f'error: {err}', file=sys.stderr); sys.exit(2)")


def _lock_cases(tmp_path):
    blocker = tmp_path / "data.csv"
    blocker.write_text("a file, not a folder\n")
    taken = tmp_path / "store"
    (taken / ".data.csv.lock").mkdir(parents=True)  # the lock file's name taken by a folder: it cannot be opened
    cases = {"under a file": (blocker / "x.csv", f"{blocker} is a file, expected a folder there"),
             "lock name taken": (taken / "data.csv", f"cannot create the lock file {taken / '.data.csv.lock'}")}
    if Path("/proc/self").is_dir():  # a folder that exists where no file can be created (the fuzzer's --csv /proc/x)
        cases["/proc"] = (Path("/proc/x"), "cannot create the lock file /proc/.x.lock (No such file or directory)")
    return cases


@pytest.mark.parametrize("name", ["under a file", "lock name taken", "/proc"])
def test_a_lock_file_that_cannot_be_created_is_an_error_at_once_not_a_wait_without_end(name, tmp_path):
    # before: filelock retried the failing open forever, after 2 s saying 'waiting for /proc/.x.lock: another process
    # is writing /proc/x' (no other process was); `data.csv/x.csv` ended in FileExistsError: [Errno 17] File exists
    cases = _lock_cases(tmp_path)
    if name not in cases:
        pytest.skip("no /proc here")
    path, message = cases[name]
    try:
        done = subprocess.run([sys.executable, "-c", _LOCK_SCRIPT, str(path)], cwd=ROOT, capture_output=True,
                              text=True, timeout=30)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"locked({path}) still waiting after 30 s") from None
    assert done.returncode == 2 and "inside" not in done.stdout, (done.stdout, done.stderr)
    assert message in done.stderr and "waiting for" not in done.stderr, done.stderr


def test_a_writer_waiting_for_a_held_lock_says_so_and_then_goes_in(tmp_path):
    target = tmp_path / "data.csv"
    holder = ("import sys, time; from tools._atomic import locked\nwith locked(sys.argv[1]):\n"
              "    print('holding', flush=True); time.sleep(float(sys.argv[2]))")
    first = subprocess.Popen([sys.executable, "-c", holder, str(target), str(_atomic.LOCK_NOTE_AFTER_S + 1.5)],
                             cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert first.stdout.readline().strip() == "holding"
    second = subprocess.run([sys.executable, "-c", _LOCK_SCRIPT, str(target)], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert first.wait(60) == 0
    assert second.returncode == 0 and second.stdout.strip() == "inside"
    assert f"waiting for {tmp_path / '.data.csv.lock'}: another process is writing {target}" in second.stderr


def test_check_writable_refuses_what_the_write_could_not_do_and_writes_nothing(tmp_path, read_only):
    # the up-front check the sweep CLI, tools.bench and tools.modal_runner make before measuring anything
    blocker = tmp_path / "data.csv"
    blocker.write_text("x\n")
    read_only = read_only(tmp_path / "ro")
    before = sorted(tmp_path.rglob("*"))
    refused = {
        blocker / "x.csv": f"cannot write {blocker / 'x.csv'}: {blocker} is a file, expected a folder there",
        blocker / "a" / "x.csv": f"{blocker} is a file, expected a folder there",
        tmp_path: f"{tmp_path} is a directory, expected the path of a file",
        read_only / "good.csv": f"cannot write {read_only / 'good.csv'}: cannot create files in {read_only} "
                                f"(Read-only file system); expected a folder this user can write",
        read_only / "new" / "good.csv": f"its folder {read_only / 'new'} does not exist and cannot be created in "
                                        f"{read_only} (Read-only file system)",
    }
    for path, message in refused.items():
        with pytest.raises(OSError) as err:
            _atomic.check_writable(path)
        assert message in str(err.value) and "\n" not in str(err.value)
    for path in (tmp_path / "fine.csv", tmp_path / "new" / "folder" / "fine.csv"):
        _atomic.check_writable(path)  # a folder the write would make is fine
    _atomic.check_writable_folder(tmp_path / "out" / "plots")
    with pytest.raises(OSError, match="is a file, expected a folder there"):
        _atomic.check_writable_folder(blocker)
    assert sorted(tmp_path.rglob("*")) == before  # no probe, folder or lock file left behind


def test_a_name_too_long_for_the_temporary_and_lock_files_is_refused_before_writing(tmp_path):
    # fuzzing, session 57: names of ~236-250 bytes passed check_writable, and the write then failed on the longer name
    # of its temporary or lock file
    long_name = tmp_path / ("n" * 240 + ".csv")
    with pytest.raises(OSError, match="is too long for the temporary and lock files"):
        _atomic.check_writable(long_name)
    _atomic.check_writable(tmp_path / ("n" * 200 + ".csv"))  # room for both
