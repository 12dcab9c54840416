"""scripts/carry_repo.sh: unpack replaces an earlier unpack's repository, and nothing else."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "carry_repo.sh"
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}

pytestmark = pytest.mark.skipif(shutil.which("git") is None or shutil.which("realpath") is None,
                                reason="needs git and realpath")


def _run(args, cwd, check=False):
    done = subprocess.run(args, cwd=cwd, env=GIT_ENV, capture_output=True, text=True)
    if check:
        assert done.returncode == 0, done.stdout + done.stderr
    return done


def _carry(args, cwd):
    return _run(["bash", str(SCRIPT), *args], cwd)


@pytest.fixture(params=[1, 16], ids=["shallow", "whole"])
def project(tmp_path, request):
    """A project with two commits on main and its .carry/ packed (DEPTH 1: cut history, .carry/shallow; 16: whole)."""
    repo = tmp_path / "project"
    repo.mkdir()
    _run(["git", "init", "-q", "-b", "main"], repo, check=True)
    for i in range(2):
        (repo / "file.txt").write_text(f"version {i}\n")
        _run(["git", "add", "file.txt"], repo, check=True)
        _run(["git", "commit", "-q", "-m", f"commit {i}"], repo, check=True)
    packed = _carry(["pack", str(request.param)], repo)
    assert packed.returncode == 0, packed.stderr
    assert (repo / ".carry" / "shallow").exists() == (request.param == 1)
    return repo


def _snapshot(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_unpack_twice_replaces_the_earlier_unpacks_repository(project, tmp_path):
    target = tmp_path / "gh-t"
    for _ in range(2):  # the device runs it twice in one machine's life: the second replaces the first's repository
        done = _carry(["unpack", str(target)], project)
        assert done.returncode == 0, done.stderr
        assert (target / "file.txt").read_text() == "version 1\n"
        (target / "results").mkdir(exist_ok=True)  # what asv leaves in it
        (target / "results" / "x.json").write_text("{}")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _carry(["unpack", str(empty)], project).returncode == 0 and (empty / "file.txt").exists()
    for _ in range(2):  # a DIR that starts with '-' is a folder, not an option of rm, git or cp
        done = _carry(["unpack", "-dash"], project)
        assert done.returncode == 0 and (project / "-dash" / "file.txt").exists(), done.stderr


def test_unpack_refuses_a_folder_whose_deletion_loses_data(project, tmp_path):
    # before: `unpack "$PWD"` ran rm -rf on the whole project, bundle included
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "keep.txt").write_text("mine")
    (tmp_path / "plain-file").write_text("mine")
    (tmp_path / "link").symlink_to(project)
    before = {"project": _snapshot(project), "notes": _snapshot(tmp_path / "notes")}
    cases = {str(project): "current directory", ".": "current directory", "..": "current directory",
             ".carry": "repo.bundle", ".carry/repo.bundle": "repo.bundle",
             str(tmp_path / "link"): "current directory", str(tmp_path / "notes"): "not a git repository",
             "file.txt": "not a folder", str(tmp_path / "plain-file"): "not a folder"}
    for target, reason in cases.items():
        done = _carry(["unpack", target], project)
        assert done.returncode == 2, (target, done.stderr)
        assert done.stderr.startswith(f"carry_repo.sh unpack: DIR must be a new folder or an earlier unpack's "
                                      f"repository, got '{target}'") and reason in done.stderr, (target, done.stderr)
        assert done.stderr.count("\n") == 1, done.stderr
    for args in (["unpack"], ["unpack", ""]):  # before: bash's "line 30: 2: ... is missing", exit 1
        done = _carry(args, project)
        assert done.returncode == 2 and done.stderr == ("carry_repo.sh unpack: DIR (where to put the repository) is "
                                                        "missing or empty\n"), done.stderr
    assert {"project": _snapshot(project), "notes": _snapshot(tmp_path / "notes")} == before
    assert (tmp_path / "plain-file").read_text() == "mine" and (tmp_path / "link").is_symlink()
    assert (project / "file.txt").read_text() == "version 1\n"
