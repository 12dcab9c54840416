import importlib.util
import io
import json
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


@pytest.mark.skipif(importlib.util.find_spec("modal") is not None, reason="checks the error when modal is missing")
def test_missing_modal_is_a_clear_error(capsys):
    assert modal_runner.main([]) == 2
    assert "pip install -e '.[modal]'" in capsys.readouterr().err
