"""Tests run the Triton kernels on CUDA where there is one, else on CPU tensors through TRITON_INTERPRET=1."""
import os

os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")  # is_available() without initialising CUDA

import pytest  # noqa: E402
import torch  # noqa: E402

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # must be set before triton is first imported

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@pytest.fixture
def device():
    return DEVICE


@pytest.fixture
def read_only(monkeypatch):
    """`read_only(folder)` makes `folder` (created if missing) read-only for tools._atomic's write probe and returns
    it: as root a chmod 555 folder stays writable, so the probe's file creation there fails with EROFS, as on a
    read-only mount. Other folders are untouched."""
    import errno
    import tempfile
    from pathlib import Path

    from tools import _atomic

    marked, real_mkstemp = set(), tempfile.mkstemp

    def mkstemp(*args, dir=None, **kwargs):
        if dir is not None and Path(dir).resolve() in marked:
            raise OSError(errno.EROFS, "Read-only file system")
        return real_mkstemp(*args, dir=dir, **kwargs)

    monkeypatch.setattr(_atomic.tempfile, "mkstemp", mkstemp)

    def mark(folder):
        folder.mkdir(parents=True, exist_ok=True)
        marked.add(folder.resolve())
        return folder
    return mark


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs CUDA: bf16 tl.dot paths are checked on the H200 (pytest -m gpu)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)
