"""tools._atomic: the atomic write (no half files, no leftovers, the file's mode and links kept, flushed to disk) and
the lock around a read-modify-write."""
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

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
