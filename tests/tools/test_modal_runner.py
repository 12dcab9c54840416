import importlib.util
import io
import tarfile

import pytest

from tools import modal_runner


def _tar(files):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_unpack_results_adds_and_replaces_only_under_results(tmp_path):
    (tmp_path / "results" / "m").mkdir(parents=True)
    (tmp_path / "results" / "m" / "old.json").write_text("old")
    (tmp_path / "results" / "m" / "same.json").write_text("stale")
    blob = _tar({"results/m/same.json": b"fresh", "results/m/new.json": b"{}", "elsewhere.txt": b"x"})
    assert modal_runner.unpack_results(blob, tmp_path) == 2
    assert (tmp_path / "results" / "m" / "old.json").read_text() == "old"
    assert (tmp_path / "results" / "m" / "same.json").read_text() == "fresh"
    assert (tmp_path / "results" / "m" / "new.json").is_file()
    assert not (tmp_path / "elsewhere.txt").exists()


@pytest.mark.skipif(importlib.util.find_spec("modal") is not None, reason="checks the error when modal is missing")
def test_missing_modal_is_a_clear_error(capsys):
    assert modal_runner.main([]) == 2
    assert "pip install -e '.[modal]'" in capsys.readouterr().err
