"""tools.asv_machine: the results folder a GPU's figures are filed under."""
import json

import pytest

from tools import asv_machine


def test_each_gpu_model_gets_its_own_results_folder():
    """scripts/h200_asv.sh names the folder after the GPU that ran: the device tool may lend an H100 for an H200, and
    the two cards' figures must never share a folder (a gate would compare one card against the other)."""
    names = {gpu: asv_machine.default_name({"gpu_name": gpu})
             for gpu in ("NVIDIA H200", "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB")}
    assert names == {"NVIDIA H200": "nvidia-h200", "NVIDIA H100 80GB HBM3": "nvidia-h100-80gb-hbm3",
                     "NVIDIA A100-SXM4-80GB": "nvidia-a100-sxm4-80gb"}
    assert asv_machine.default_name({"gpu_name": "cpu"}).startswith("cpu-")


def test_machine_file_keeps_other_machines(tmp_path):
    path = tmp_path / "asv-machine.json"
    asv_machine.write_machine_file("nvidia-h200", {"gpu_name": "NVIDIA H200"}, str(path))
    asv_machine.write_machine_file("nvidia-h100-80gb-hbm3", {"gpu_name": "NVIDIA H100 80GB HBM3"}, str(path))
    entries = json.loads(path.read_text())
    assert entries["nvidia-h200"]["gpu_name"] == "NVIDIA H200"
    assert entries["nvidia-h100-80gb-hbm3"] == {"machine": "nvidia-h100-80gb-hbm3", "gpu_name": "NVIDIA H100 80GB HBM3"}
    assert entries["version"] == 1


# --- found by fuzzing (session 53) ----------------------------------------------------------------------------------
INFO = {"arch": "x86_64", "gpu_name": "NVIDIA H200", "torch": "2.11.0"}


@pytest.fixture
def no_torch(monkeypatch):
    """main() without importing torch or calling nvidia-smi."""
    monkeypatch.setattr(asv_machine, "describe", lambda: dict(INFO))


@pytest.mark.parametrize("name", ["../../evil", "a b/c", "a/b", ".hidden", "..", "a..b", "-rf", "", " lead",
                                  "tab\there", "line\n", "h200:1", "émoji", "a\\b"])
def test_a_machine_name_that_is_not_one_folder_name_is_refused(tmp_path, capsys, no_torch, name):
    # before: "../../evil" and "a b/c" were written, and asv filed results under results/../../evil/
    path = tmp_path / "asv-machine.json"
    assert asv_machine.main([f"--machine={name}", "--file", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tools.asv_machine: error: --machine must be a machine name of letters, digits") and \
        f"got {name!r}" in err and err.count("\n") == 1
    assert not path.exists()


@pytest.mark.parametrize("name", ["nvidia-h200", "e2e", "box_1.2", "cpu-host-01", "A100"])
def test_machine_names_asv_can_file_under_pass(tmp_path, capsys, no_torch, name):
    path = tmp_path / "asv-machine.json"
    assert asv_machine.main(["--machine", name, "--file", str(path)]) == 0
    assert capsys.readouterr().out == f"{name}\n"
    assert json.loads(path.read_text())[name] == {"machine": name, **INFO}


@pytest.mark.parametrize("content, message", [
    ("[1]", "expected a JSON object of machine entries (asv's machine file), got list"),  # before: TypeError
    ('{"a": 1,}', "cannot read"),  # before: "cannot write ...: Expecting property name"
    (b"\xff\xfe{}", "cannot read"),
])
def test_a_machine_file_that_cannot_be_read_is_named_and_kept(tmp_path, capsys, no_torch, content, message):
    path = tmp_path / "asv-machine.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    before = path.read_bytes()
    assert asv_machine.main(["--machine", "box", "--file", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tools.asv_machine: error: cannot read {path}: ") and message in err
    assert err.count("\n") == 1 and path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["asv-machine.json"]


def test_an_empty_file_argument_or_a_failed_write_leaves_no_temporary_file(tmp_path, capsys, monkeypatch, no_torch):
    # before: --file "" failed at os.replace and left .asv-machine.XXXX in the current directory
    monkeypatch.chdir(tmp_path)
    assert asv_machine.main(["--machine", "box", "--file", ""]) == 2
    assert "--file is empty, expected the path of asv's machine file" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    path = tmp_path / "asv-machine.json"
    asv_machine.write_machine_file("old", {"gpu_name": "x"}, str(path))
    before = path.read_bytes()

    def refuse(src, dst):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(asv_machine.os, "replace", refuse)
    assert asv_machine.main(["--machine", "box", "--file", str(path)]) == 2
    assert f"tools.asv_machine: error: cannot write {path}: [Errno 28] No space left" in capsys.readouterr().err
    # (the lock file stays, as tools._atomic.locked keeps it: no temporary file is left)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".asv-machine.json.lock", "asv-machine.json"]
    assert path.read_bytes() == before


def test_concurrent_writers_keep_every_entry_and_a_symlink_stays_a_link(tmp_path):
    # fuzzing, session 57: four writers at once kept 48 of their 160 entries (read, change, write without a lock), and
    # a machine file that is a symbolic link became a regular file of mode 0600, its target not updated
    import subprocess
    import sys
    target = tmp_path / "real.json"
    link = tmp_path / "link.json"
    link.symlink_to(target)
    code = ("import sys; from tools import asv_machine\n"
            "for i in range(10): asv_machine.write_machine_file(f'{sys.argv[1]}-{i}', {'gpu_name': 'x'}, sys.argv[2])")
    procs = [subprocess.Popen([sys.executable, "-c", code, f"w{k}", str(link)]) for k in range(4)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    assert link.is_symlink()
    entries = json.loads(target.read_text())
    assert {f"w{k}-{i}" for k in range(4) for i in range(10)} <= set(entries)
