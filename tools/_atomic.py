"""Atomic file output: write a temporary file in the target's folder, then os.replace it over the target; and the lock
a read-modify-write of one file (the benchmark CSV, the noise table) holds around its read, merge and write.

A reader (the docs site, the next pipeline step, a concurrent run) sees the old file or the new one, never half; two
writers that each read, merge and write the same file take turns (`locked`), so neither drops the other's rows.
A command that measures before it writes checks first that the write can succeed (`check_writable`,
`check_writable_folder`), so an output it cannot write is refused before the measuring, not after it.
"""
import contextlib
import os
import stat
import sys
import tempfile
import time
from pathlib import Path

LOCK_NOTE_AFTER_S = 2.0  # a writer still waiting for the lock after this long says why it waits
STALE_TMP_AFTER_S = 3600.0  # a temporary file without a process id (an older naming) is stale after an hour


NAME_MAX = 255  # bytes in a file name (Linux, macOS)


def real_path(path):
    """`path` with symbolic links resolved: writing through a link replaces its target and keeps the link."""
    return Path(os.path.realpath(path))


def lock_path(path):
    """The lock file `locked` takes for `path`: `.<name>.lock` beside the link-resolved path."""
    target = real_path(path)
    return target.with_name(f".{target.name}.lock")


def _not_a_folder(folder):
    """The nearest existing one of `folder` and its ancestors when that is not a directory (a file where a folder
    must be, e.g. `data.csv/x.csv`), else None."""
    for candidate in (folder, *folder.parents):
        if os.path.lexists(candidate):
            return None if candidate.is_dir() else candidate
    return None


def check_writable_folder(folder, given=None):
    """Raise OSError, with a one-line message naming `given` (default: `folder`) and why, unless files can be created
    in `folder`: a folder this process can create files in, or one that does not exist yet and can be made (its
    nearest existing ancestor is a folder it can create files in). The probe is a temporary file created there and
    removed at once; nothing else is written."""
    folder = real_path(folder)
    itself, given = given is None, folder if given is None else given
    blocker = _not_a_folder(folder)
    if blocker is not None:
        raise OSError(f"cannot write {given}: {blocker} is a file, expected a folder there")
    existing = next(p for p in (folder, *folder.parents) if p.is_dir())
    try:
        fd, probe = tempfile.mkstemp(dir=existing, prefix=f".probe-{os.getpid()}-")
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        where = (f"cannot create files in {folder}" if existing == folder else
                 f"{'' if itself else 'its folder '}{folder} does not exist and cannot be created in {existing}")
        raise OSError(f"cannot write {given}: {where} ({err.strerror or err}); expected a folder this user can "
                      f"write") from None


def check_writable(path):
    """Raise OSError, with a one-line message naming `path` and why, unless a write to `path` (`locked` around
    `write_atomic`) can succeed as far as can be told without writing it: `path` is not a directory, its folder can
    be written (check_writable_folder: it exists or can be made, the write makes it) and an existing lock file opens.
    A command that measures before it writes calls this first, so an unwritable output is refused before the
    measuring, not after."""
    given = Path(path)
    target = real_path(path)
    if target.is_dir():
        raise OSError(f"{given} is a directory, expected the path of a file")
    # the temporary file (atomic_path) and the lock file beside it have longer names than the file itself
    longest = max(len(lock_path(target).name.encode()),
                  len(f".{target.stem}.tmp-{os.getpid()}-{'x' * 8}{target.suffix}".encode()))
    if longest > NAME_MAX:
        raise OSError(f"cannot write {given}: its name ({len(target.name.encode())} bytes) is too long for the "
                      f"temporary and lock files written beside it ({longest} bytes, at most {NAME_MAX})")
    check_writable_folder(target.parent, given)
    lock_file = lock_path(target)
    if os.path.lexists(lock_file):
        try:
            os.close(os.open(lock_file, os.O_RDWR | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)))
        except OSError as err:
            raise OSError(f"cannot write {given}: cannot open its lock file {lock_file} ({err.strerror or err})"
                          ) from None


@contextlib.contextmanager
def locked(path):
    """Hold an exclusive lock on `path` (the `filelock` package, on the sibling lock file `.<name>.lock` of the
    link-resolved path) for the duration of a read-modify-write. Waits for another process holding it, saying so on
    stderr after LOCK_NOTE_AFTER_S. The lock file stays: deleting it would let a waiting and a new writer lock two
    different files. A lock file that cannot be created or opened (its folder missing and not creatable, not
    writable, a file where the folder should be) raises OSError at once, naming it: filelock would retry it forever,
    as if another process held the lock."""
    from filelock import FileLock, Timeout

    target = real_path(path)
    lock_file = lock_path(target)
    blocker = _not_a_folder(target.parent)
    if blocker is not None:
        raise OSError(f"cannot create the lock file {lock_file}: {blocker} is a file, expected a folder there")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        # what filelock opens (it would take a failure here for a lock still held, and retry it without end)
        os.close(os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0), 0o644))
    except OSError as err:
        raise OSError(f"cannot create the lock file {lock_file} ({err.strerror or err})") from None
    lock = FileLock(str(lock_file))
    try:
        lock.acquire(timeout=LOCK_NOTE_AFTER_S)
    except Timeout:
        print(f"waiting for {lock.lock_file}: another process is writing {path}", file=sys.stderr)
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


def _process_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. another user's process: alive
        return True
    return True


def remove_stale_temporaries(path):
    """Delete the temporary files atomic_path left beside `path` in a run that was killed before it could clean up:
    those of a process that no longer runs (the process id is in the name), and those of the older naming without a
    process id once STALE_TMP_AFTER_S old. Returns the paths removed."""
    path = Path(path)
    prefix, removed = f".{path.stem}.tmp-", []
    try:
        candidates = [p for p in path.parent.iterdir() if p.name.startswith(prefix) and p.name.endswith(path.suffix)]
    except OSError:
        return removed
    for candidate in candidates:
        owner = candidate.name[len(prefix):].split("-", 1)[0]
        try:
            stale = (not _process_alive(int(owner)) if owner.isdigit() and "-" in candidate.name[len(prefix):]
                     else time.time() - candidate.stat().st_mtime > STALE_TMP_AFTER_S)
            if stale:
                candidate.unlink()
                removed.append(candidate)
        except OSError:  # gone already (another writer cleaned it up), or not ours to remove
            continue
    return removed


def _mode_for(path):
    """The mode the new file gets: the existing file's, else what a plain open() would create (0666 less the umask)."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _fsync(path, directory=False):
    fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside `path` (same suffix, so writers that infer a format from it still work).

    On a clean exit the temporary file is flushed to disk (fsync), given the existing file's mode, and replaces
    `path` (a symbolic link is written through: its target is replaced); on an exception it is removed and `path` is
    untouched. Temporary files a killed earlier write left behind are removed first (remove_stale_temporaries).
    """
    path = real_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.tmp-{os.getpid()}-", suffix=path.suffix)
    os.close(fd)
    try:
        yield Path(tmp)
        _fsync(tmp)
        os.chmod(tmp, _mode_for(path))  # mkstemp creates 0600; a reader of the old file can read the new one
        os.replace(tmp, path)
        with contextlib.suppress(OSError):  # the rename itself to disk (not every file system syncs a folder)
            _fsync(path.parent, directory=True)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_atomic(path, data):
    """Write `data` (str as UTF-8, or bytes) to `path` atomically."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_path(path) as tmp:
        tmp.write_bytes(payload)
