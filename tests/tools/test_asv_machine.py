"""tools.asv_machine: the results folder a GPU's figures are filed under."""
import json

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
