"""Atomic file output: write a temporary file in the target's folder, then os.replace it over the target.

A reader (the docs site, the next pipeline step, a concurrent run) sees the old file or the new one, never half.
"""
import contextlib
import os
import tempfile
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside `path` (same suffix, so writers that infer a format from it still work).

    On a clean exit the temporary file replaces `path`; on an exception it is removed and `path` is untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.tmp-", suffix=path.suffix)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; the output is meant to be read by others (docs, CI)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_atomic(path, data):
    """Write `data` (str as UTF-8, or bytes) to `path` atomically."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_path(path) as tmp:
        tmp.write_bytes(payload)
