"""tools.export: asv results -> CSV, on real asv output (django-asv) and on made-up results directories."""
import csv
import datetime
import itertools
import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # plain `pytest` does not put the repository root on sys.path

from tools import CSV_COLUMNS  # noqa: E402
from tools import export  # noqa: E402

# the shared/ folder beside the clone (as CI lays it out), or wherever GREYHOUND_SHARED_DIR points (a clone elsewhere)
SHARED = Path(os.environ.get("GREYHOUND_SHARED_DIR") or Path(__file__).resolve().parents[3] / "shared")
DJANGO = SHARED / "fixtures/asv-results/django-asv"

TIME = "cross_entropy.CrossEntropyWithGrad.time_cross_entropy_with_grad"
PEAKMEM = "cross_entropy.CrossEntropyWithGrad.track_peakmem_cross_entropy_with_grad"
PARAM_NAMES = ["provider", "mode", "batch_size", "vocab_size", "dtype"]
PARAMS = [["'greyhound'", "'torch-eager'"], ["'full'", "'forward'"], ["8"], ["1000", "4096", "32768"],
          ["'bfloat16'"]]
N_COMBOS = 2 * 2 * 1 * 3 * 1
V2_COLUMNS = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b",
              "stats_q_25", "stats_q_75", "stats_number", "stats_repeat", "samples", "profile"]
DATE = 1_764_000_000_000  # asv's commit date: a JavaScript timestamp (ms)
COMMIT_A = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"
COMMIT_B = "b2c3d4e5f60718293a4b5c6d7e8f901234567890"


# --- building made-up asv results directories -----------------------------------------------------------------------
def meta(name, type_, unit, version="v1", param_names=PARAM_NAMES, params=PARAMS, **attrs):
    return {"name": name, "type": type_, "unit": unit, "version": version, "param_names": param_names,
            "params": params, **attrs}


GREYHOUND_BENCHMARKS = {
    TIME: meta(TIME, "time", "seconds", kernel_name="cross_entropy_with_grad", x_name="vocab_size"),
    PEAKMEM: meta(PEAKMEM, "track", "bytes", kernel_name="cross_entropy_with_grad", x_name="vocab_size"),
}


def write_json(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))  # json writes float NaN as the bare NaN token, as asv does
    return path


def make_results_dir(root, benchmarks, machine="h200", machine_json=None):
    write_json(root / "benchmarks.json", {**benchmarks, "version": 2})
    write_json(root / machine / "machine.json", machine_json or {"machine": machine, "version": 1})
    return root


def entry(values, params=PARAMS, version="v1", samples=None, q25=None, q75=None, started_at=DATE + 5):
    row = [values, params, version, started_at, 1.5, None, None, q25, q75, None, None, samples]
    while row and row[-1] is None:
        row.pop()
    return row


def write_result(root, commit, results, machine="h200", env="virtualenv-py3.11", date=DATE, gpu_name="NVIDIA H200"):
    params = {"machine": machine, "python": "3.11", "torch": "2.11.0"}
    if gpu_name is not None:
        params["gpu_name"] = gpu_name
    data = {"commit_hash": commit, "env_name": env, "date": date, "params": params, "python": "3.11",
            "requirements": {}, "env_vars": {}, "result_columns": V2_COLUMNS, "results": results, "durations": {},
            "version": 2}
    return write_json(root / machine / f"{commit[:8]}-{env}.json", data)


def random_time_results(rng, n=N_COMBOS):
    samples = [list(rng.uniform(1e-4, 5e-3, size=int(rng.integers(5, 15)))) for _ in range(n)]
    values = [float(np.median(s)) for s in samples]
    return values, samples


def run_export(results, csv_path, *extra):
    return export.main(["--results", str(results), "--csv", str(csv_path), *extra])


def read_rows(csv_path):
    with open(csv_path, newline="") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames) == CSV_COLUMNS
        return list(reader)


def combos(params=PARAMS):
    import itertools
    return list(itertools.product(*params))


def iso(js_ms):
    return datetime.datetime.fromtimestamp(js_ms / 1000, tz=datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- the greyhound convention ----------------------------------------------------------------------------------------
def test_greyhound_suite_rows_percentiles_units_and_metadata(tmp_path, capsys):
    rng = np.random.default_rng()
    root = make_results_dir(tmp_path / "results", GREYHOUND_BENCHMARKS)
    values, samples = random_time_results(rng)
    q25 = [123.0] * N_COMBOS  # asv's quartiles: must never show up as p20/p80
    peak_bytes = [int(b) for b in rng.integers(1, 2**34, size=N_COMBOS)]
    write_result(root, COMMIT_A, {TIME: entry(values, samples=samples, q25=q25, q75=q25),
                                  PEAKMEM: entry(peak_bytes)})
    csv_path = tmp_path / "out" / "data.csv"
    assert run_export(root, csv_path) == 0
    rows = read_rows(csv_path)
    assert len(rows) == 2 * N_COMBOS
    out = capsys.readouterr().out
    assert f"{N_COMBOS} rows without samples (p20/p80 left empty)" in out  # the peak-memory rows

    by_key = {(r["metric_name"], r["kernel_provider"], r["kernel_operation_mode"], r["x_value"]): r for r in rows}
    for (provider, mode, batch, vocab, dtype), s, peak in zip(combos(), samples, peak_bytes):
        key = (provider.strip("'"), mode.strip("'"), vocab)
        speed, memory = by_key[("speed", *key)], by_key[("memory", *key)]
        p20, p50, p80 = np.percentile(s, [20, 50, 80])
        assert float(speed["y_value_50"]) == pytest.approx(p50 * 1e3, rel=1e-12)
        assert float(speed["y_value_20"]) == pytest.approx(p20 * 1e3, rel=1e-12)
        assert float(speed["y_value_80"]) == pytest.approx(p80 * 1e3, rel=1e-12)
        assert float(speed["y_value_20"]) <= float(speed["y_value_50"]) <= float(speed["y_value_80"])
        assert float(memory["y_value_50"]) == pytest.approx(peak / 2**20, rel=1e-12)
        assert memory["y_value_20"] == memory["y_value_80"] == ""
        for row, unit in ((speed, "ms"), (memory, "MiB")):
            assert row["metric_unit"] == unit
            assert row["kernel_name"] == "cross_entropy_with_grad"
            assert row["x_name"] == "vocab_size" and row["x_label"] == "Vocabulary size (V)"
            assert json.loads(row["extra_benchmark_config_str"]) == {"batch_size": 8, "dtype": "bfloat16"}
            assert row["extra_benchmark_config_str"] == '{"batch_size": 8, "dtype": "bfloat16"}'  # sorted keys
            assert row["gpu_name"] == "NVIDIA H200"
            assert row["git_commit"] == COMMIT_A
            assert row["timestamp"] == iso(DATE)
    # the atomic write left no temporary file, only the locks the read-modify-writes held
    assert sorted(p.name for p in csv_path.parent.glob(".*")) == [".data.csv.lock", ".noise.csv.lock"]


def test_nan_token_and_null_results_are_left_out_and_counted(tmp_path, capsys):
    rng = np.random.default_rng()
    root = make_results_dir(tmp_path / "results", GREYHOUND_BENCHMARKS)
    values, samples = random_time_results(rng)
    values[1] = float("nan")  # skipped: asv writes a bare NaN
    values[4] = None  # failed
    samples[1] = samples[4] = None
    path = write_result(root, COMMIT_A, {TIME: entry(values, samples=samples),
                                         PEAKMEM: entry(None)})  # the whole benchmark failed
    assert "NaN" in path.read_text()
    assert run_export(root, tmp_path / "data.csv") == 0
    rows = read_rows(tmp_path / "data.csv")
    assert len(rows) == N_COMBOS - 2
    assert all(r["metric_name"] == "speed" and r["y_value_20"] for r in rows)
    exported = {(r["kernel_provider"], r["kernel_operation_mode"], r["x_value"]) for r in rows}
    for i in (1, 4):
        provider, mode, _, vocab, _ = combos()[i]
        assert (provider.strip("'"), mode.strip("'"), vocab) not in exported
    assert f"{2 + N_COMBOS} failed/skipped results left out" in capsys.readouterr().out


def test_fallbacks_without_greyhound_attributes(tmp_path, capsys):
    names = {
        "plain.Suite.time_softmax": meta("plain.Suite.time_softmax", "time", "seconds",
                                         param_names=["n_rows", "dtype"], params=[["64", "128"], ["'float16'"]]),
        "plain.Suite.peakmem_softmax": meta("plain.Suite.peakmem_softmax", "peakmemory", "bytes",
                                            param_names=[], params=[]),
        "plain.Suite.track_bandwidth": meta("plain.Suite.track_bandwidth", "track", "GB/s",
                                            param_names=[], params=[]),
        "plain.Suite.time_bad_x": meta("plain.Suite.time_bad_x", "time", "seconds", param_names=["seq_len"],
                                       params=[["16"]], x_name="not_a_param", kernel_name=""),
    }
    root = make_results_dir(tmp_path / "results", names, machine="cpu-box")
    write_result(root, COMMIT_A, {
        "plain.Suite.time_softmax": entry([0.25, 0.5], params=[["64", "128"], ["'float16'"]]),
        "plain.Suite.peakmem_softmax": entry([3 * 2**20], params=[]),
        "plain.Suite.track_bandwidth": entry([1234.5], params=[]),
        "plain.Suite.time_bad_x": entry([0.125], params=[["16"]]),
    }, machine="cpu-box", gpu_name="cpu")
    assert run_export(root, tmp_path / "data.csv") == 0
    rows = {(r["kernel_name"].rsplit(".", 1)[-1].split("_", 1)[-1], r["x_value"]): r
            for r in read_rows(tmp_path / "data.csv")}
    assert len(rows) == 5
    assert {r["kernel_name"] for r in read_rows(tmp_path / "data.csv")} == set(names)  # keyed by the full name
    for row in rows.values():
        assert row["kernel_provider"] == "default" and row["kernel_operation_mode"] == "full"
        assert row["gpu_name"] == "cpu-box"  # gpu_name "cpu": the machine name tells CPU machines apart
    soft = rows[("softmax", "128")]
    assert (soft["metric_name"], soft["metric_unit"], soft["x_name"], soft["x_label"]) == ("speed", "ms", "n_rows",
                                                                                        "Rows")
    assert float(soft["y_value_50"]) == 500.0 and soft["extra_benchmark_config_str"] == '{"dtype": "float16"}'
    mem = rows[("softmax", "")]
    assert (mem["metric_name"], mem["metric_unit"], mem["x_name"], float(mem["y_value_50"])) == ("memory", "MiB",
                                                                                               "none", 3.0)
    track = rows[("bandwidth", "")]
    assert (track["metric_name"], track["metric_unit"], float(track["y_value_50"])) == ("track", "GB/s", 1234.5)
    bad_x = rows[("bad_x", "16")]
    assert bad_x["x_name"] == "seq_len" and bad_x["x_label"] == "Sequence length (T)"
    assert "x_name 'not_a_param'" in capsys.readouterr().err


def test_gpu_name_from_machine_json_when_results_lack_it(tmp_path):
    root = make_results_dir(tmp_path / "results", GREYHOUND_BENCHMARKS,
                            machine_json={"machine": "h200", "gpu_name": "NVIDIA H200 NVL", "version": 1})
    values, samples = random_time_results(np.random.default_rng())
    write_result(root, COMMIT_A, {TIME: entry(values, samples=samples)}, gpu_name=None)
    assert run_export(root, tmp_path / "data.csv") == 0
    assert {r["gpu_name"] for r in read_rows(tmp_path / "data.csv")} == {"NVIDIA H200 NVL"}


def test_unknown_and_stale_benchmarks_are_left_out_and_counted(tmp_path, capsys):
    root = make_results_dir(tmp_path / "results", GREYHOUND_BENCHMARKS)
    values, samples = random_time_results(np.random.default_rng())
    write_result(root, COMMIT_A, {
        TIME: entry(values, samples=samples),
        PEAKMEM: entry([1.0] * N_COMBOS, version="an-older-version"),
        "gone.Suite.time_removed": entry([0.1], params=[]),
    })
    assert run_export(root, tmp_path / "data.csv") == 0
    assert len(read_rows(tmp_path / "data.csv")) == N_COMBOS
    out = capsys.readouterr().out
    assert "1 results of benchmarks not in benchmarks.json left out" in out
    assert f"{N_COMBOS} results of an older benchmark version" in out


# --- older format, broken files ----------------------------------------------------------------------------------------
def test_version_1_results_format(tmp_path):
    plain = "plain.Suite.time_plain"
    root = make_results_dir(tmp_path / "results", {**GREYHOUND_BENCHMARKS,
                                                   plain: meta(plain, "time", "seconds", param_names=[], params=[])})
    rng = np.random.default_rng()
    values, samples = random_time_results(rng)
    stats = [{"ci_99": [v * 0.9, v * 1.1], "q_25": 9.0, "q_75": 9.5, "number": 1, "repeat": len(s)}
             for v, s in zip(values, samples)]
    plain_value = float(rng.uniform(0.001, 0.1))
    v1 = {"version": 1, "commit_hash": COMMIT_A, "date": DATE, "python": "3.8", "requirements": {},
          "env_name": "conda-py3.8", "params": {"machine": "h200", "python": "3.8", "gpu_name": "NVIDIA H200"},
          "results": {TIME: {"result": values, "params": PARAMS, "samples": samples, "stats": stats},
                      plain: plain_value}}
    write_json(root / "h200" / f"{COMMIT_A[:8]}-conda-py3.8.json", v1)
    assert run_export(root, tmp_path / "data.csv") == 0
    rows = read_rows(tmp_path / "data.csv")
    assert len(rows) == N_COMBOS + 1
    plain_row = next(r for r in rows if r["kernel_name"] == plain)
    assert float(plain_row["y_value_50"]) == pytest.approx(plain_value * 1e3, rel=1e-12)
    assert plain_row["y_value_20"] == "" and plain_row["x_name"] == "none"
    speed = {(r["kernel_provider"], r["kernel_operation_mode"], r["x_value"]): r
             for r in rows if r["kernel_name"] == "cross_entropy_with_grad"}
    for (provider, mode, _, vocab, _), s in zip(combos(), samples):
        row = speed[(provider.strip("'"), mode.strip("'"), vocab)]
        assert float(row["y_value_80"]) == pytest.approx(np.percentile(s, 80) * 1e3, rel=1e-12)
        assert row["git_commit"] == COMMIT_A


def test_unreadable_file_is_named_and_the_rest_exported(tmp_path, capsys):
    root = make_results_dir(tmp_path / "results", GREYHOUND_BENCHMARKS)
    values, samples = random_time_results(np.random.default_rng())
    write_result(root, COMMIT_A, {TIME: entry(values, samples=samples)})
    corrupt = write_result(root, COMMIT_B, {TIME: entry(values, samples=samples)})
    corrupt.write_text(corrupt.read_text()[:200])  # truncated mid-write
    future = root / "h200" / "c3d4e5f6-virtualenv-py3.11.json"
    future.write_text(json.dumps({"version": 99, "results": {}}))
    assert run_export(root, tmp_path / "data.csv") == 1
    err_lines = capsys.readouterr().err.strip().splitlines()
    assert len(err_lines) == 2
    assert any(str(corrupt) in line and "not valid JSON" in line for line in err_lines)
    assert any(str(future) in line and "version 99" in line for line in err_lines)
    rows = read_rows(tmp_path / "data.csv")
    assert len(rows) == N_COMBOS and {r["git_commit"] for r in rows} == {COMMIT_A}


@pytest.mark.parametrize("format_version", [1, 2])
def test_a_file_in_another_machines_folder_names_both_machines(tmp_path, capsys, format_version):
    # before: asv's "machine name is not 'h200'", and for a version-1 file the path of its converted temporary copy
    root = make_results_dir(tmp_path / "results", GREYHOUND_BENCHMARKS)
    values, samples = random_time_results(np.random.default_rng())
    write_result(root, COMMIT_A, {TIME: entry(values, samples=samples)})
    moved = write_result(root, COMMIT_B, {TIME: entry(values, samples=samples)})
    document = json.loads(moved.read_text())
    document["params"]["machine"] = "other-box"
    if format_version == 1:
        document = {"version": 1, "commit_hash": COMMIT_B, "date": DATE, "python": "3.11", "requirements": {},
                    "env_name": "virtualenv-py3.11", "params": document["params"],
                    "results": {TIME: {"result": values, "params": PARAMS, "samples": samples}}}
    moved.write_text(json.dumps(document))
    assert run_export(root, tmp_path / "data.csv") == 1
    err = capsys.readouterr().err
    assert f"{moved}: cannot read results" in err
    assert "its params name machine 'other-box', but it is in the machine folder 'h200'" in err
    assert "/tmp/tmp" not in err.replace(str(tmp_path), "")
    assert {r["git_commit"] for r in read_rows(tmp_path / "data.csv")} == {COMMIT_A}


def test_reexport_replaces_same_key_keeps_other_rows_never_duplicates(tmp_path):
    rng = np.random.default_rng()
    root = make_results_dir(tmp_path / "results", GREYHOUND_BENCHMARKS)
    values, samples = random_time_results(rng)
    write_result(root, COMMIT_A, {TIME: entry(values, samples=samples)})
    csv_path = tmp_path / "data.csv"
    assert run_export(root, csv_path) == 0
    first = csv_path.read_bytes()
    assert run_export(root, csv_path) == 0
    assert csv_path.read_bytes() == first  # idempotent, byte for byte

    foreign = dict(read_rows(csv_path)[0], kernel_name="logprobs", y_value_50="7.5", asv_machine="other")
    with open(csv_path, "a", newline="") as f:
        csv.writer(f, lineterminator="\n").writerow([foreign[c] for c in CSV_COLUMNS])
    new_values, new_samples = random_time_results(rng)
    write_result(root, COMMIT_A, {TIME: entry(new_values, samples=new_samples)})  # re-measured, same key
    assert run_export(root, csv_path) == 0
    rows = read_rows(csv_path)
    assert len(rows) == N_COMBOS + 1
    assert len({tuple(r[c] for c in export.KEY_COLUMNS) for r in rows}) == len(rows)
    assert [r for r in rows if r["kernel_name"] == "logprobs"] == [foreign]
    ours = sorted(float(r["y_value_50"]) for r in rows if r["kernel_name"] != "logprobs")
    assert ours == pytest.approx(sorted(np.median(s) * 1e3 for s in new_samples), rel=1e-12)

    write_result(root, COMMIT_B, {TIME: entry(values, samples=samples)}, date=DATE + 86_400_000)
    assert run_export(root, csv_path) == 0
    rows = read_rows(csv_path)
    assert len(rows) == 2 * N_COMBOS + 1
    assert {r["git_commit"] for r in rows if r["kernel_name"] != "logprobs"} == {COMMIT_A, COMMIT_B}


def test_two_environments_and_two_machines_with_one_gpu_name_give_separate_rows(tmp_path, capsys):
    root = make_results_dir(tmp_path / "results", GREYHOUND_BENCHMARKS)
    make_results_dir(root, GREYHOUND_BENCHMARKS, machine="h200-b")
    rng = np.random.default_rng()
    runs = {}
    for machine, env in (("h200", "py3.12"), ("h200", "py3.11"), ("h200-b", "py3.12")):
        values, samples = random_time_results(rng)
        runs[(machine, env)] = samples
        write_result(root, COMMIT_A, {TIME: entry(values, samples=samples)}, machine=machine, env=env)
    assert run_export(root, tmp_path / "data.csv") == 0
    rows = read_rows(tmp_path / "data.csv")
    assert len(rows) == 3 * N_COMBOS and {r["gpu_name"] for r in rows} == {"NVIDIA H200"}
    for (machine, env), samples in runs.items():
        mine = [r for r in rows if (r["asv_machine"], r["asv_environment"]) == (machine, env)]
        assert sorted(float(r["y_value_50"]) for r in mine) == pytest.approx(
            sorted(np.median(s) * 1e3 for s in samples), rel=1e-12)
    assert "measured more than once" not in capsys.readouterr().out


def _shared_method_benchmarks(classes, methods):
    """Benchmarks of several classes that share method names, with no kernel_name attribute."""
    benchmarks = {}
    for cls in classes:
        for method in methods:
            name = f"suite.{cls}.{method}"
            benchmarks[name] = meta(name, "track" if method.startswith("track") else "time",
                                    "unit" if method.startswith("track") else "seconds",
                                    param_names=["model", "size"], params=[["'a'", "'b'"], ["1", "2", "3"]])
    return benchmarks


@pytest.mark.parametrize("version", [1, 2])
def test_classes_sharing_method_names_lose_no_row(tmp_path, version):
    classes, methods = ["Alpha", "Beta", "Gamma", "Delta"], ["track_metric", "time_step", "time_load"]
    benchmarks = _shared_method_benchmarks(classes, methods)
    root = make_results_dir(tmp_path / "results", benchmarks)
    rng = np.random.default_rng()
    commits = [COMMIT_A, COMMIT_B]
    expected = {}
    for commit_index, commit in enumerate(commits):
        results = {}
        for name in benchmarks:
            values = [float(v) for v in rng.uniform(0.001, 1.0, size=6)]
            values[commit_index] = None  # one failed combination per benchmark and commit: left out, counted
            for (model, size), value in zip(itertools.product(["a", "b"], ["1", "2", "3"]), values):
                if value is not None:
                    expected[(name, commit, model, size)] = value
            if version == 2:
                results[name] = entry(values, params=[["'a'", "'b'"], ["1", "2", "3"]])
            else:
                results[name] = {"result": values, "params": [["'a'", "'b'"], ["1", "2", "3"]]}
        if version == 2:
            write_result(root, commit, results, gpu_name=None)
        else:
            write_json(root / "h200" / f"{commit[:8]}-conda-py3.8.json", {
                "version": 1, "commit_hash": commit, "date": DATE, "python": "3.8", "requirements": {},
                "env_name": "conda-py3.8", "params": {"machine": "h200", "python": "3.8"}, "results": results})
    assert run_export(root, tmp_path / "data.csv") == 0
    rows = read_rows(tmp_path / "data.csv")
    assert len(rows) == len(expected) == 2 * len(classes) * len(methods) * 5  # 240: every measurement, once
    for row in rows:
        model = json.loads(row["extra_benchmark_config_str"])["size"]
        key = (row["kernel_name"], row["git_commit"], row["x_value"], str(model))
        scale = 1e3 if row["metric_unit"] == "ms" else 1.0
        assert float(row["y_value_50"]) == pytest.approx(expected[key] * scale, rel=1e-12)
        assert row["x_name"] == "model" and row["asv_machine"] == "h200"


def test_commit_and_latest_filters(tmp_path):
    root = make_results_dir(tmp_path / "results", GREYHOUND_BENCHMARKS)
    values, samples = random_time_results(np.random.default_rng())
    write_result(root, COMMIT_A, {TIME: entry(values, samples=samples)})
    write_result(root, COMMIT_B, {TIME: entry(values, samples=samples)}, date=DATE + 1000)
    assert run_export(root, tmp_path / "latest.csv", "--latest") == 0
    assert {r["git_commit"] for r in read_rows(tmp_path / "latest.csv")} == {COMMIT_B}
    assert run_export(root, tmp_path / "a.csv", "--commit", COMMIT_A[:6]) == 0
    assert {r["git_commit"] for r in read_rows(tmp_path / "a.csv")} == {COMMIT_A}


# --- fatal errors: exit 2, nothing written ---------------------------------------------------------------------------
def test_csv_with_unexpected_columns_is_left_untouched(tmp_path, capsys):
    root = make_results_dir(tmp_path / "results", GREYHOUND_BENCHMARKS)
    values, samples = random_time_results(np.random.default_rng())
    write_result(root, COMMIT_A, {TIME: entry(values, samples=samples)})
    csv_path = tmp_path / "data.csv"
    for content in ("kernel,provider,ms\nce,greyhound,1.0\n",
                    ",".join(CSV_COLUMNS) + "\n" + "only,three,fields\n"):
        csv_path.write_text(content)
        assert run_export(root, csv_path) == 2
        assert csv_path.read_text() == content
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and str(csv_path) in err
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".") and p.suffix != ".lock"] == []


def test_missing_results_directory_or_benchmarks_json(tmp_path, capsys):
    csv_path = tmp_path / "data.csv"
    assert run_export(tmp_path / "no-such-dir", csv_path) == 2
    assert not csv_path.exists()
    assert "no-such-dir" in capsys.readouterr().err
    csv_path.write_text(",".join(CSV_COLUMNS) + "\n")
    before = csv_path.read_bytes()
    empty = tmp_path / "empty-results"
    empty.mkdir()
    assert run_export(empty, csv_path) == 2
    assert "benchmarks.json" in capsys.readouterr().err
    (empty / "benchmarks.json").write_text("{not json")
    assert run_export(empty, csv_path) == 2
    assert csv_path.read_bytes() == before


def test_help_runs_as_a_module():
    done = subprocess.run([sys.executable, "-m", "tools.export", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0 and "--results" in done.stdout and "--latest" in done.stdout


# --- real asv output that no one here wrote ------------------------------------------------------------------------
def _django_expectations(results):
    """Independent reading of the fixture's JSON: {(machine, commit, kernel): (seconds, date)} and skip counts."""
    assert results.is_dir(), f"fixture missing: {results} (the shared/ folder sits beside the clone, or set " \
                             "GREYHOUND_SHARED_DIR)"
    benchmarks = json.loads((results / "benchmarks.json").read_text())
    expected, unknown, stale, failed = {}, 0, 0, 0
    files = sorted(p for p in results.glob("*/*.json") if p.name != "machine.json")
    for path in files:
        data = json.loads(path.read_text())
        assert path.name.startswith(data["commit_hash"][:8] + "-")
        for name, values in data["results"].items():
            fields = dict(zip(data["result_columns"], values))
            if name not in benchmarks:
                unknown += 1
            elif fields.get("version") not in (None, benchmarks[name]["version"]):
                stale += 1
            elif fields["result"] is None or fields["result"][0] is None or math.isnan(fields["result"][0]):
                failed += 1
            else:
                expected[(path.parent.name, data["commit_hash"], name)] = (fields["result"][0], data["date"])
    return files, expected, unknown, stale, failed


def test_real_asv_results_django(tmp_path, capsys):
    results = DJANGO / "results"
    files, expected, unknown, stale, failed = _django_expectations(results)
    assert len(files) == 62 and len(expected) > 1000
    csv_path = tmp_path / "django.csv"
    assert run_export(results, csv_path) == 0
    rows = read_rows(csv_path)
    assert len(rows) == len(expected)
    for row in rows:
        seconds, date = expected[(row["gpu_name"], row["git_commit"], row["kernel_name"])]
        assert float(row["y_value_50"]) == pytest.approx(seconds * 1e3, rel=1e-12)
        assert row["y_value_20"] == row["y_value_80"] == ""  # django-asv records no samples
        assert row["timestamp"] == iso(date)
        assert (row["metric_name"], row["metric_unit"], row["x_name"], row["x_value"]) == ("speed", "ms", "none", "")
        assert (row["kernel_provider"], row["kernel_operation_mode"]) == ("default", "full")
        assert row["extra_benchmark_config_str"] == "{}"
    file_names = {(p.parent.name, p.name.split("-")[0]) for p in files}
    assert {(r["gpu_name"], r["git_commit"][:8]) for r in rows} <= file_names
    assert len({r["git_commit"] for r in rows}) == 31 and all(len(r["git_commit"]) == 40 for r in rows)
    out = capsys.readouterr().out
    assert f"{len(expected)} rows without samples (p20/p80 left empty)" in out
    assert f"{unknown} results of benchmarks not in benchmarks.json left out" in out
    assert f"{stale} results of an older benchmark version" in out
    assert failed == 0 and "failed/skipped" not in out
    assert len(expected) + unknown + stale + failed == sum(
        len(json.loads(p.read_text())["results"]) for p in files)  # every result accounted for


def test_real_asv_results_django_latest(tmp_path):
    results = DJANGO / "results"
    files, expected, _, _, _ = _django_expectations(results)
    newest = {}
    for (machine, commit, _), (_, date) in expected.items():
        newest[machine] = max(newest.get(machine, (0, "")), (date, commit))
    assert run_export(results, tmp_path / "latest.csv", "--latest") == 0
    rows = read_rows(tmp_path / "latest.csv")
    assert {(r["gpu_name"], r["git_commit"]) for r in rows} == {(m, c) for m, (_, c) in newest.items()}
    assert len(rows) == sum(1 for (m, c, _) in expected if newest[m][1] == c)


def test_exported_csv_feeds_the_plots(tmp_path):
    from tools import plot

    rng = np.random.default_rng()
    root = make_results_dir(tmp_path / "results", GREYHOUND_BENCHMARKS)
    values, samples = random_time_results(rng)
    write_result(root, COMMIT_A, {TIME: entry(values, samples=samples),
                                  PEAKMEM: entry([int(b) for b in rng.integers(1, 2**30, size=N_COMBOS)])})
    assert run_export(root, tmp_path / "data.csv") == 0
    out = tmp_path / "assets"
    assert plot.main(["--csv", str(tmp_path / "data.csv"), "--out", str(out)]) == 0
    stem = "cross_entropy_with_grad__{}__{}__batch_size-8_dtype-bfloat16__NVIDIA-H200.png"
    for mode in ("full", "forward"):
        for metric in ("speed", "memory", "pareto"):
            assert (out / "plots" / stem.format(mode, metric)).read_bytes()[:4] == b"\x89PNG"


def test_roofline_columns_from_work_and_the_machines_ceilings(tmp_path):
    names = ["provider", "mode", "op", "size", "dtype"]
    ceiling_params = [["'torch-eager'"], ["'forward'"], ["'copy'", "'gemm'"], ["1024"], ["'bfloat16'"]]
    kernel_params = [["'greyhound'"], ["'forward'", "'full'"], ["8192"], ["'bfloat16'"]]
    ceilings = "ceilings.DeviceCeilingsTracked.time_device_ceilings"
    kernel = "k.KTracked.time_k"
    benchmarks = {
        ceilings: meta(ceilings, "time", "seconds", param_names=names, params=ceiling_params,
                       kernel_name="device_ceilings", x_name="size",
                       work={"forward|copy|1024|bfloat16": [2e9, 0], "forward|gemm|1024|bfloat16": [1e9, 1e12]}),
        kernel: meta(kernel, "time", "seconds", param_names=["provider", "mode", "vocab_size", "dtype"],
                     params=kernel_params, kernel_name="k", x_name="vocab_size",
                     work={"forward|8192|bfloat16": [1e9, 0], "full|8192|bfloat16": [1e8, 4e11]}),
    }
    root = make_results_dir(tmp_path / "results", benchmarks)
    write_result(root, COMMIT_A, {
        ceilings: entry([0.5e-3, 2.0e-3], params=ceiling_params),  # 4 TB/s, 500 TFLOP/s
        kernel: entry([1.0e-3, 1.0e-3], params=kernel_params),  # forward 1 TB/s; full 400 TFLOP/s
    })
    assert run_export(root, tmp_path / "data.csv") == 0
    rows = {(r["kernel_name"], r["kernel_operation_mode"], r["x_value"]): r for r in read_rows(tmp_path / "data.csv")}
    forward, full = rows[("k", "forward", "8192")], rows[("k", "full", "8192")]
    assert (forward["achieved_unit"], float(forward["achieved"]), float(forward["ceiling_share"])) == ("TB/s", 1.0, 0.25)
    assert (full["achieved_unit"], float(full["achieved"]), float(full["ceiling_share"])) == ("TFLOP/s", 400.0, 0.8)
    copy = rows[("device_ceilings", "forward", "1024")]  # x is size; both ops share it: one is in extra config
    assert float(copy["ceiling_share"]) == 1.0


def test_roofline_without_ceilings_reports_the_rate_and_no_share(tmp_path):
    kernel = "k.KTracked.time_k"
    params = [["'greyhound'"], ["'forward'"], ["8192"], ["'bfloat16'"]]
    root = make_results_dir(tmp_path / "results", {kernel: meta(
        kernel, "time", "seconds", param_names=["provider", "mode", "vocab_size", "dtype"], params=params,
        kernel_name="k", x_name="vocab_size", work={"forward|8192|bfloat16": [2e9, 0]})})
    write_result(root, COMMIT_A, {kernel: entry([1.0e-3], params=params)})
    assert run_export(root, tmp_path / "data.csv") == 0
    (row,) = read_rows(tmp_path / "data.csv")
    assert (row["achieved_unit"], float(row["achieved"]), row["ceiling_share"]) == ("TB/s", 2.0, "")


@pytest.mark.parametrize("field, value", [("date", "2025-11-24"), ("commit_hash", None)])
def test_a_result_file_with_a_bad_date_or_commit_is_named_not_a_traceback(tmp_path, capsys, field, value):
    # before: a date that is not a number crashed the export while sorting files by date (TypeError traceback)
    root = make_results_dir(tmp_path / "results", GREYHOUND_BENCHMARKS)
    values, samples = random_time_results(np.random.default_rng())
    write_result(root, COMMIT_A, {TIME: entry(values, samples=samples)})
    bad = write_result(root, COMMIT_B, {TIME: entry(values, samples=samples)})
    document = json.loads(bad.read_text())
    document[field] = value
    bad.write_text(json.dumps(document))
    assert run_export(root, tmp_path / "data.csv") == 1
    err = capsys.readouterr().err
    assert str(bad) in err and field in err and "Traceback" not in err
    rows = read_rows(tmp_path / "data.csv")
    assert len(rows) == N_COMBOS and {r["git_commit"] for r in rows} == {COMMIT_A}


# --- found by fuzzing (session 42): relabelled GPUs, carriage returns, values past the CSV's range, --commit refs ---
def test_a_gpu_name_added_to_machine_json_relabels_rows_never_doubles_them(tmp_path, capsys):
    # before: the rows of the old label stayed beside the new ones (42 rows became 84)
    rng = np.random.default_rng()
    root = make_results_dir(tmp_path / "results", GREYHOUND_BENCHMARKS)
    values, samples = random_time_results(rng)
    write_result(root, COMMIT_A, {TIME: entry(values, samples=samples)}, gpu_name=None)
    csv_path = tmp_path / "data.csv"
    assert run_export(root, csv_path) == 0
    assert {r["gpu_name"] for r in read_rows(csv_path)} == {"h200"}  # the machine's name, no GPU name anywhere
    write_json(root / "h200" / "machine.json", {"machine": "h200", "version": 1, "gpu_name": "NVIDIA H200"})
    assert run_export(root, csv_path) == 0
    rows = read_rows(csv_path)
    assert len(rows) == N_COMBOS and {r["gpu_name"] for r in rows} == {"NVIDIA H200"}
    assert f"{N_COMBOS} earlier rows of the same measurements under another GPU name replaced" in capsys.readouterr().out


def test_a_carriage_return_in_a_name_reads_back(tmp_path):
    # before: written unquoted, it read back as a line break and every later export into the CSV failed
    name = "cross_entropy.CrossEntropyWithGrad.time_odd\rname"
    params = [["'greyhound'"], ["'full'"], ["8"], ["'a\rb'"], ["'bfloat16'"]]
    root = make_results_dir(tmp_path / "results", {name: meta(name, "time", "seconds", params=params,
                                                              kernel_name="cross_entropy_with_grad")})
    write_result(root, COMMIT_A, {name: entry([0.001], params=params, samples=[[0.001, 0.0011, 0.0009]])})
    csv_path = tmp_path / "data.csv"
    assert run_export(root, csv_path) == 0
    first = csv_path.read_bytes()
    assert b"\r" not in first and run_export(root, csv_path) == 0  # the second export reads the first's CSV
    assert csv_path.read_bytes() == first and len(read_rows(csv_path)) == 1


def test_a_value_past_the_csvs_range_is_left_out_not_inf(tmp_path, capsys):
    root = make_results_dir(tmp_path / "results", GREYHOUND_BENCHMARKS)
    values, samples = random_time_results(np.random.default_rng())
    values[0], samples[0] = 1e308, [1e308] * 3  # finite seconds, inf milliseconds
    write_result(root, COMMIT_A, {TIME: entry(values, samples=samples)})
    assert run_export(root, tmp_path / "data.csv") == 0
    rows = read_rows(tmp_path / "data.csv")
    assert len(rows) == N_COMBOS - 1
    assert all(math.isfinite(float(r["y_value_50"])) for r in rows)
    assert "1 failed/skipped results left out" in capsys.readouterr().out


def test_commit_takes_a_git_ref_and_refuses_what_matches_nothing(tmp_path, capsys, monkeypatch):
    root = make_results_dir(tmp_path / "results", GREYHOUND_BENCHMARKS)
    values, samples = random_time_results(np.random.default_rng())
    write_result(root, COMMIT_A, {TIME: entry(values, samples=samples)})
    csv_path = tmp_path / "data.csv"
    assert run_export(root, csv_path, "--commit", "deadbeef") == 2
    assert "--commit deadbeef: no result file" in capsys.readouterr().err and not csv_path.exists()
    monkeypatch.setattr(export, "_git_commit", lambda ref: COMMIT_A if ref == "main" else None)
    assert run_export(root, csv_path, "--commit", "main") == 0
    assert {r["git_commit"] for r in read_rows(csv_path)} == {COMMIT_A}


def test_a_machine_without_machine_json_exports_with_a_note_not_a_failure(tmp_path, capsys):
    root = make_results_dir(tmp_path / "results", GREYHOUND_BENCHMARKS)
    (root / "h200" / "machine.json").unlink()
    values, samples = random_time_results(np.random.default_rng())
    write_result(root, COMMIT_A, {TIME: entry(values, samples=samples)})
    assert run_export(root, tmp_path / "data.csv") == 0  # before: exit 1, as for a file that could not be read
    assert "machine.json does not exist" in capsys.readouterr().err
    assert {r["gpu_name"] for r in read_rows(tmp_path / "data.csv")} == {"NVIDIA H200"}
    (root / "h200" / "machine.json").write_text("{not json")
    assert run_export(root, tmp_path / "data.csv") == 1  # unreadable: still a warning


# --- audit 2: the noise table merged, concurrent writers, result files authoritative, damaged lists, refs ----------
OTHER_TIME = "logprobs.LogprobsSuite.time_logprobs"


def _two_results_dirs(tmp_path):
    """Two results directories (e.g. results/ and docs/perf/h200-results-v1) of different benchmarks."""
    rng = np.random.default_rng(3)
    first = make_results_dir(tmp_path / "results", GREYHOUND_BENCHMARKS)
    values, samples = random_time_results(rng)
    write_result(first, COMMIT_A, {TIME: entry(values, samples=samples)})
    second = make_results_dir(tmp_path / "v1", {OTHER_TIME: meta(OTHER_TIME, "time", "seconds",
                                                                 kernel_name="logprobs", x_name="vocab_size")})
    values, samples = random_time_results(rng)
    write_result(second, COMMIT_B, {OTHER_TIME: entry(values, samples=samples)})
    return first, second


def _noise_kernels(path):
    with open(path, newline="") as f:
        return sorted(row["kernel_name"] for row in csv.DictReader(f))


def test_the_noise_table_keeps_the_series_of_other_results_directories(tmp_path, capsys):
    # before: exporting docs/perf/h200-results-v1 (as docs/benchmarking.md says) rewrote noise.csv from that
    # directory alone: 801 lines became 229
    first, second = _two_results_dirs(tmp_path)
    csv_path = tmp_path / "out" / "data.csv"
    assert run_export(first, csv_path) == 0 and run_export(second, csv_path) == 0
    noise = tmp_path / "out" / "noise.csv"
    assert _noise_kernels(noise) == ["cross_entropy_with_grad"] * N_COMBOS + ["logprobs"] * N_COMBOS
    table = noise.read_bytes()
    assert run_export(first, csv_path) == 0 and noise.read_bytes() == table  # re-exported: replaced in place
    assert f"noise of {N_COMBOS} series written to {noise} ({2 * N_COMBOS} series in the table)" \
        in capsys.readouterr().out
    both = tmp_path / "both" / "data.csv"  # one export of both directories gives the same rows
    assert export.main(["--results", str(first), "--results", str(second), "--csv", str(both)]) == 0
    assert both.read_bytes() == csv_path.read_bytes()
    assert sorted(noise.read_text().splitlines()) == sorted((both.parent / "noise.csv").read_text().splitlines())


@pytest.mark.parametrize("variant", ["--noise equal to --csv", "--csv named noise.csv"])
def test_a_noise_table_that_would_replace_the_csv_is_refused(tmp_path, capsys, variant):
    # before: the CSV was written, then replaced by the noise table; the next export refused the file (its columns)
    first, _ = _two_results_dirs(tmp_path)
    csv_path = tmp_path / ("data.csv" if variant.startswith("--noise") else "noise.csv")
    assert run_export(first, csv_path) == (0 if variant.startswith("--noise") else 2)
    before = csv_path.read_bytes() if csv_path.exists() else None
    extra = ["--noise", str(csv_path)] if variant.startswith("--noise") else []
    assert run_export(first, csv_path, *extra) == 2
    err = capsys.readouterr().err
    assert f"--noise {csv_path} and --csv {csv_path} are the same file" in err
    assert (csv_path.read_bytes() if csv_path.exists() else None) == before


def test_concurrent_exports_into_one_csv_lose_no_rows(tmp_path, monkeypatch):
    # before: both read the CSV, then each wrote its own merge: the later write dropped the other's rows
    import threading
    first, second = _two_results_dirs(tmp_path)
    csv_path = tmp_path / "data.csv"
    read_once, real_read = threading.Event(), export.read_csv_rows

    def slow_read(path):
        rows = real_read(path)
        if not read_once.is_set():  # the first reader waits until the other had its chance to read too
            read_once.set()
            threading.Event().wait(1.5)
        return rows

    monkeypatch.setattr(export, "read_csv_rows", slow_read)
    threads = [threading.Thread(target=export.export, args=(first, csv_path))]
    threads[0].start()
    read_once.wait(5)
    threads.append(threading.Thread(target=export.export, args=(second, csv_path)))
    threads[1].start()
    for thread in threads:
        thread.join(20)
    assert sorted({r["git_commit"] for r in read_rows(csv_path)}) == [COMMIT_A, COMMIT_B]
    assert len(read_rows(csv_path)) == 2 * N_COMBOS


def test_concurrent_processes_merging_rows_lose_none(tmp_path):
    # the sweep CLI and tools.modal_runner merge rows with merge_csv_rows; exports run beside them
    first, second = _two_results_dirs(tmp_path)
    csv_path = tmp_path / "data.csv"
    assert export.main(["--results", str(first), "--csv", str(tmp_path / "rows.csv"), "--noise", "none"]) == 0
    rows = read_rows(tmp_path / "rows.csv")
    script = ("import sys, csv; from tools.export import merge_csv_rows; rows = list(csv.DictReader(open(sys.argv[1])))"
              "\nfor i in range(15):\n    merge_csv_rows(sys.argv[2], [dict(r, asv_machine=f'{sys.argv[3]}-{i}') "
              "for r in rows[:2]])")
    with open(tmp_path / "rows.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "rows.csv"), str(csv_path), name],
                              cwd=ROOT) for name in ("a", "b", "c")]
    procs.append(subprocess.Popen([sys.executable, "-m", "tools.export", "--results", str(second), "--csv",
                                   str(csv_path), "--noise", "none"], cwd=ROOT, stdout=subprocess.DEVNULL))
    assert [p.wait(120) for p in procs] == [0, 0, 0, 0]
    assert len(read_rows(csv_path)) == 3 * 15 * 2 + N_COMBOS


def test_a_result_file_is_authoritative_for_its_machine_environment_and_commit(tmp_path, capsys):
    # before: a re-run in which a benchmark failed, or a bumped benchmark version, left the old rows in the CSV, so
    # the CSV depended on the export history rather than on results/
    root = make_results_dir(tmp_path / "results", GREYHOUND_BENCHMARKS)
    values, samples = random_time_results(np.random.default_rng())
    write_result(root, COMMIT_A, {TIME: entry(values, samples=samples), PEAKMEM: entry([2.0**30] * N_COMBOS)})
    write_result(root, COMMIT_B, {TIME: entry(values, samples=samples)}, date=DATE + 1000)
    csv_path = tmp_path / "data.csv"
    assert run_export(root, csv_path) == 0
    failed = [None] + values[1:]  # a re-run of COMMIT_A in which one combination failed
    write_result(root, COMMIT_A, {TIME: entry(failed, samples=[None] + samples[1:]),
                                  PEAKMEM: entry([2.0**30] * N_COMBOS)})
    assert run_export(root, csv_path, "--commit", COMMIT_A[:8]) == 0
    assert "1 earlier rows of these result files removed: the files no longer yield them" in capsys.readouterr().out
    rows = read_rows(csv_path)
    assert len(rows) == 3 * N_COMBOS - 1  # COMMIT_B's rows (not exported this time) stay
    benchmarks = dict(GREYHOUND_BENCHMARKS)
    benchmarks[PEAKMEM] = dict(benchmarks[PEAKMEM], version="v2")  # the peak-memory benchmark's code changed
    write_json(root / "benchmarks.json", {**benchmarks, "version": 2})
    assert run_export(root, csv_path) == 0
    fresh = tmp_path / "fresh.csv"
    assert run_export(root, fresh) == 0
    assert csv_path.read_bytes() == fresh.read_bytes()  # the CSV is what results/ gives, whatever came before
    assert {r["metric_name"] for r in read_rows(csv_path)} == {"speed"}


def test_a_damaged_benchmark_entry_is_warned_and_its_earlier_rows_stay(tmp_path, capsys):
    root = make_results_dir(tmp_path / "results", GREYHOUND_BENCHMARKS)
    values, samples = random_time_results(np.random.default_rng())
    write_result(root, COMMIT_A, {TIME: entry(values, samples=samples)})
    csv_path = tmp_path / "data.csv"
    assert run_export(root, csv_path) == 0
    first = csv_path.read_bytes()
    write_result(root, COMMIT_A, {TIME: entry(values[:3], samples=samples)})  # a cut result list
    assert run_export(root, csv_path) == 1
    assert "its result column holds 3 entries for 12 parameter combinations" in capsys.readouterr().err
    assert csv_path.read_bytes() == first


@pytest.mark.parametrize("damage, message", [
    ("result_short", "its result column holds 1 entries for 12 parameter combinations"),
    ("samples_short", "its samples column holds 2 entries for 12 parameter combinations"),
    ("params_str", "params is 'abc', expected a list of parameter value lists"),
])
def test_result_lists_that_do_not_match_their_grid_are_named_and_left_out(tmp_path, capsys, damage, message):
    # before: asv pads a short list with None (or the string's characters make a grid): the rows were exported with
    # exit 0, a sample list shifted onto another combination, or a bogus row made of the letters of "abc"
    root = make_results_dir(tmp_path / "results", GREYHOUND_BENCHMARKS)
    values, samples = random_time_results(np.random.default_rng())
    bad = {"result_short": entry(values[:1], samples=samples), "samples_short": entry(values, samples=samples[-2:]),
           "params_str": entry(values[:3], params="abc", samples=samples[:3])}[damage]
    path = write_result(root, COMMIT_A, {TIME: bad, PEAKMEM: entry([2.0**30] * N_COMBOS)})
    assert run_export(root, tmp_path / "data.csv") == 1
    err = capsys.readouterr().err
    assert f"{path}: benchmark {TIME}: cannot read" in err and message in err
    assert {r["metric_name"] for r in read_rows(tmp_path / "data.csv")} == {"memory"}


def test_commit_is_resolved_by_git_first_and_an_empty_one_is_refused(tmp_path, capsys, monkeypatch):
    # before: a branch named like a hash prefix (dbc9) exported both its commit and the commit with that prefix;
    # --commit '' exported everything
    git = pytest.importorskip("git")
    repo = git.Repo.init(tmp_path / "repo")
    with repo.config_writer() as config:
        config.set_value("user", "name", "t").set_value("user", "email", "t@t")
    commit = repo.index.commit("first", skip_hooks=True).hexsha
    repo.create_head(COMMIT_B[:4], commit)  # a branch named like COMMIT_B's prefix, on another commit
    root = make_results_dir(tmp_path / "results", GREYHOUND_BENCHMARKS)
    values, samples = random_time_results(np.random.default_rng())
    for sha in (commit, COMMIT_B):
        write_result(root, sha, {TIME: entry(values, samples=samples)})
    monkeypatch.chdir(tmp_path / "repo")
    assert run_export(root, tmp_path / "data.csv", "--commit", COMMIT_B[:4]) == 0
    assert {r["git_commit"] for r in read_rows(tmp_path / "data.csv")} == {commit}
    assert run_export(root, tmp_path / "b.csv", "--commit", COMMIT_B[:6]) == 0  # git does not know it: a prefix
    assert {r["git_commit"] for r in read_rows(tmp_path / "b.csv")} == {COMMIT_B}
    for ref in ("", "b2c"):
        assert run_export(root, tmp_path / "c.csv", "--commit", ref) == 2
        assert f"--commit {ref!r}:" in capsys.readouterr().err and not (tmp_path / "c.csv").exists()


def test_the_noise_tables_gpu_name_falls_back_on_machine_json_as_the_csv_does(tmp_path):
    # before: the CSV said "NVIDIA L4" (machine.json) and noise.csv the machine's name: their rows did not join
    root = make_results_dir(tmp_path / "results", GREYHOUND_BENCHMARKS,
                            machine_json={"machine": "h200", "version": 1, "gpu_name": "NVIDIA L4"})
    values, samples = random_time_results(np.random.default_rng())
    write_result(root, COMMIT_A, {TIME: entry(values, samples=samples)}, gpu_name=None)
    assert run_export(root, tmp_path / "data.csv") == 0
    with open(tmp_path / "noise.csv", newline="") as f:
        assert {row["gpu_name"] for row in csv.DictReader(f)} == {"NVIDIA L4"}
    assert {r["gpu_name"] for r in read_rows(tmp_path / "data.csv")} == {"NVIDIA L4"}


# --- found by fuzzing (session 53): malformed benchmarks.json and benchmark entries, started_at, result_columns ------
SWEEP = "cross_entropy.CrossEntropyWithGradSweep.time_cross_entropy_with_grad"  # same kernel and grid as TIME


def _exported_twice(tmp_path, benchmarks=GREYHOUND_BENCHMARKS, results=None):
    """A results directory, its CSV exported once; (root, result file, CSV path, CSV bytes, noise.csv bytes)."""
    root = make_results_dir(tmp_path / "results", benchmarks)
    values, samples = random_time_results(np.random.default_rng(7))
    path = write_result(root, COMMIT_A, results or {TIME: entry(values, samples=samples),
                                                    PEAKMEM: entry([2.0**30] * N_COMBOS)})
    csv_path = tmp_path / "data.csv"
    assert run_export(root, csv_path) == 0
    return root, path, csv_path, csv_path.read_bytes(), (tmp_path / "noise.csv").read_bytes()


@pytest.mark.parametrize("damage, message", [
    ("x", '"x" (a str), not an object'),
    ([], "[] (a list), not an object"),
    ({"version": "v1"}, "has no param_names, type, unit"),
    ({**GREYHOUND_BENCHMARKS[TIME], "param_names": "provider"}, "has param_names 'provider', expected a list"),
    ({**GREYHOUND_BENCHMARKS[TIME], "version": [1]}, "has version [1], expected a string"),
])
def test_malformed_benchmarks_json_entries_are_refused_and_nothing_written(tmp_path, capsys, damage, message):
    # before: every result was "not in benchmarks.json", each file's earlier rows removed: the CSV kept its header only,
    # exit 0
    root, _, csv_path, before, noise_before = _exported_twice(tmp_path)
    capsys.readouterr()
    write_json(root / "benchmarks.json", {TIME: damage, PEAKMEM: GREYHOUND_BENCHMARKS[PEAKMEM], "version": 2})
    assert run_export(root, csv_path) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"cannot read {root / 'benchmarks.json'}" in err
    assert f"1 of 2 are not: {TIME!r} " in err and message in err and "Traceback" not in err
    assert csv_path.read_bytes() == before and (tmp_path / "noise.csv").read_bytes() == noise_before
    from tools import noise
    assert noise.main(["--results", str(root), "--out", str(tmp_path / "noise.csv")]) == 2
    assert f"cannot read {root / 'benchmarks.json'}" in capsys.readouterr().err


def _damage_entry(path, name, damage):
    document = json.loads(path.read_text())
    found = document["results"][name]
    if damage in ("x", "{}", "[]"):
        document["results"][name] = {"x": "x", "{}": {}, "[]": []}[damage]
    elif damage == "started_at":
        found[V2_COLUMNS.index("started_at")] = "x"
    elif damage == "samples_str":
        found[V2_COLUMNS.index("samples")][2] = ["x", 0.001, 0.002]
    else:  # the first result value
        found[0][0] = {"str": "x", "true": True, "nested": [0.001]}[damage]
    path.write_text(json.dumps(document))


@pytest.mark.parametrize("damage, message", [
    ("x", "its params column is missing"), ("{}", "its params column is missing"),
    ("[]", "its params column is missing"),
    ("str", 'its result column holds "x" (a str) for parameter combination 1 of 12, expected a number or null'),
    ("true", "its result column holds true (a bool) for parameter combination 1 of 12"),
    ("nested", "its result column holds [0.001] (a list) for parameter combination 1 of 12"),
    ("samples_str", "its samples column holds [\"x\", 0.001, 0.002] (a list) for parameter combination 3 of 12"),
    ("started_at", 'its started_at is "x" (a str), expected a JavaScript timestamp (ms) or null'),
])
def test_a_malformed_benchmark_entry_is_warned_and_its_earlier_rows_stay(tmp_path, capsys, damage, message):
    # before: an entry "x", {} or [] was "1 results of an older benchmark version" and a string, true or a list result
    # a "failed/skipped" one: exit 0, no warning, and the benchmark's earlier rows of the file removed
    root, path, csv_path, before, _ = _exported_twice(tmp_path)
    capsys.readouterr()
    _damage_entry(path, TIME, damage)
    assert run_export(root, csv_path) == 1
    captured = capsys.readouterr()
    (warning,) = captured.err.strip().splitlines()
    assert warning.startswith(f"tools.export: warning: {path}: benchmark {TIME}: cannot read (ValueError: ")
    assert message in warning and warning.endswith("its entry left out")
    assert "older benchmark version" not in captured.out and "failed/skipped" not in captured.out
    assert "removed" not in captured.out and csv_path.read_bytes() == before


def test_a_started_at_that_is_not_a_timestamp_is_warned_not_a_traceback(tmp_path, capsys):
    # before: TypeError ('<' between int and str) where two benchmarks measured the same row
    benchmarks = {**GREYHOUND_BENCHMARKS,
                  SWEEP: meta(SWEEP, "time", "seconds", kernel_name="cross_entropy_with_grad", x_name="vocab_size")}
    values, samples = random_time_results(np.random.default_rng(5))
    root, path, csv_path, before, _ = _exported_twice(tmp_path, benchmarks, {
        TIME: entry(values, samples=samples), SWEEP: entry(values, samples=samples, started_at=DATE + 9)})
    assert f"{N_COMBOS} rows measured more than once" in capsys.readouterr().out
    _damage_entry(path, SWEEP, "started_at")
    assert run_export(root, csv_path) == 1
    err = capsys.readouterr().err
    assert f"{path}: benchmark {SWEEP}: cannot read (ValueError: its started_at is" in err and "Traceback" not in err
    assert csv_path.read_bytes() == before


CEILINGS = "ceilings.DeviceCeilingsTracked.time_device_ceilings"
CEILING_PARAMS = [["'torch-eager'"], ["'forward'"], ["'copy'", "'gemm'"], ["1024"], ["'bfloat16'"]]
WITH_CEILINGS = {**GREYHOUND_BENCHMARKS, CEILINGS: meta(
    CEILINGS, "time", "seconds", param_names=["provider", "mode", "op", "size", "dtype"], params=CEILING_PARAMS,
    kernel_name="device_ceilings", x_name="size",
    work={"forward|copy|1024|bfloat16": [2e9, 0], "forward|gemm|1024|bfloat16": [1e9, 1e12]})}


@pytest.mark.parametrize("damage", ["result_columns", "ceilings entry"])
def test_a_file_without_params_is_warned_not_a_traceback(tmp_path, capsys, damage):
    # before: TypeError (itertools.product() argument after * must be an iterable) while reading the ceilings; without
    # a ceilings benchmark, every entry was "an older benchmark version" and the file's earlier rows were removed
    values, samples = random_time_results(np.random.default_rng(6))
    root, path, csv_path, before, _ = _exported_twice(tmp_path, WITH_CEILINGS, {
        TIME: entry(values, samples=samples), CEILINGS: entry([0.5e-3, 2.0e-3], params=CEILING_PARAMS)})
    capsys.readouterr()
    if damage == "result_columns":
        document = json.loads(path.read_text())
        document["result_columns"] = ["result"]
        document["results"] = {name: found[:1] for name, found in document["results"].items()}
        path.write_text(json.dumps(document))
        expected = f"{path}: cannot read results (ValueError: result_columns is ['result'], expected a list naming " \
                   f"result, params (missing params))"
    else:
        _damage_entry(path, CEILINGS, "x")
        expected = f"{path}: benchmark {CEILINGS}: cannot read (ValueError: its params column is missing"
    assert run_export(root, csv_path) == 1
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err
    if damage == "result_columns":
        assert csv_path.read_bytes() == before
    else:  # the ceilings' earlier rows stay, TIME's are exported again
        rows = read_rows(csv_path)
        assert len(rows) == N_COMBOS + 2 and {r["kernel_name"] for r in rows} == {"cross_entropy_with_grad",
                                                                                "device_ceilings"}


def test_an_unknown_benchmark_with_damaged_params_is_counted_not_a_traceback(tmp_path, capsys):
    # before: TypeError ('int' object is not iterable) counting its results
    root = make_results_dir(tmp_path / "results", GREYHOUND_BENCHMARKS)
    values, samples = random_time_results(np.random.default_rng())
    write_result(root, COMMIT_A, {TIME: entry(values, samples=samples), "gone.Suite.time_removed": [[0.1], [1, 2]]})
    assert run_export(root, tmp_path / "data.csv") == 0
    assert "1 results of benchmarks not in benchmarks.json left out" in capsys.readouterr().out
    assert len(read_rows(tmp_path / "data.csv")) == N_COMBOS


def test_negative_times_and_memories_are_left_out_and_counted(tmp_path, capsys):
    # before: a time of -1 s was exported as a row of -1000 ms
    delta = "plain.Suite.track_delta"
    benchmarks = {**GREYHOUND_BENCHMARKS, delta: meta(delta, "track", "unit", param_names=[], params=[])}
    root = make_results_dir(tmp_path / "results", benchmarks)
    values, samples = random_time_results(np.random.default_rng())
    values[0], samples[1] = -1.0, [-0.001, samples[1][0], samples[1][1]]
    write_result(root, COMMIT_A, {TIME: entry(values, samples=samples),
                                  PEAKMEM: entry([-1.0] + [2.0**30] * (N_COMBOS - 1)), delta: entry([-2.5], params=[])})
    assert run_export(root, tmp_path / "data.csv") == 0
    rows = read_rows(tmp_path / "data.csv")
    assert len(rows) == 2 * (N_COMBOS - 1) + 1  # a tracked value (not a time or a memory) may be negative
    assert [float(r["y_value_50"]) for r in rows if r["kernel_name"] == delta] == [-2.5]
    assert all(float(r[c]) > 0 for r in rows if r["kernel_name"] != delta for c in ("y_value_50", "y_value_20")
               if r[c])
    assert "2 negative time or memory results left out" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["../../etc", "abc", "g" * 40, "a" * 65])
def test_a_commit_hash_that_is_not_hex_is_warned_and_the_file_left_out(tmp_path, capsys, value):
    # before: a row whose git_commit was "../../etc"
    root = make_results_dir(tmp_path / "results", GREYHOUND_BENCHMARKS)
    values, samples = random_time_results(np.random.default_rng())
    write_result(root, COMMIT_A, {TIME: entry(values, samples=samples)})
    bad = write_result(root, COMMIT_B, {TIME: entry(values, samples=samples)})
    document = json.loads(bad.read_text())
    document["commit_hash"] = value
    bad.write_text(json.dumps(document))
    assert run_export(root, tmp_path / "data.csv") == 1
    err = capsys.readouterr().err
    assert f"{bad}: cannot read results (ValueError: commit_hash is {value!r}, expected a commit hash (4 to 64 hex " \
           f"digits))" in err
    assert {r["git_commit"] for r in read_rows(tmp_path / "data.csv")} == {COMMIT_A}


def test_an_empty_noise_path_and_a_results_directory_given_twice_are_refused(tmp_path, capsys):
    # before: --noise '' wrote noise.csv beside the CSV; the same directory twice read every file twice (collisions)
    root = make_results_dir(tmp_path / "results", GREYHOUND_BENCHMARKS)
    values, samples = random_time_results(np.random.default_rng())
    write_result(root, COMMIT_A, {TIME: entry(values, samples=samples)})
    csv_path = tmp_path / "out" / "data.csv"
    assert run_export(root, csv_path, "--noise", "") == 2
    assert "--noise '' is empty, expected the path of a CSV file" in capsys.readouterr().err
    for twice in (str(root), str(tmp_path / "results" / ".." / "results")):
        assert export.main(["--results", str(root), "--results", twice, "--csv", str(csv_path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"--results {twice} is given twice" in err
    assert not csv_path.parent.exists()
    from tools import noise
    assert noise.main(["--results", str(root), "--results", str(root), "--out", str(tmp_path / "n.csv")]) == 2
    assert "is given twice" in capsys.readouterr().err and not (tmp_path / "n.csv").exists()


def test_the_noise_tool_warns_about_unreadable_files_as_the_export_does(tmp_path, capsys):
    # before: tools.noise rewrote the table from the files it could read with exit 0 and no word of the others
    from tools import noise
    root = make_results_dir(tmp_path / "results", GREYHOUND_BENCHMARKS)
    values, samples = random_time_results(np.random.default_rng())
    write_result(root, COMMIT_A, {TIME: entry(values, samples=samples)})
    corrupt = write_result(root, COMMIT_B, {TIME: entry(values, samples=samples)})
    corrupt.write_text(corrupt.read_text()[:200])  # truncated mid-write
    (root / "h200" / "c3d4e5f6-virtualenv-py3.11.json").write_text(json.dumps({"version": 99, "results": {}}))
    assert run_export(root, tmp_path / "data.csv", "--noise", "none") == 1
    export_warnings = [line.split("warning: ", 1)[1] for line in capsys.readouterr().err.splitlines()]
    assert noise.main(["--results", str(root), "--out", str(tmp_path / "noise.csv")]) == 1
    captured = capsys.readouterr()
    assert [line.split("warning: ", 1)[1] for line in captured.err.splitlines()] == export_warnings
    assert len(export_warnings) == 2 and all(line.startswith("tools.noise: warning: ")
                                             for line in captured.err.splitlines())
    assert f"wrote {N_COMBOS} series" in captured.out  # the table, from what could be read
    assert _noise_kernels(tmp_path / "noise.csv") == ["cross_entropy_with_grad"] * N_COMBOS


def test_benchmarks_without_a_version_export_as_asv_reads_them(tmp_path, capsys):
    # asv's own example results (its test data) have benchmarks.json entries with no "version": asv reads it as None
    # (`benchmarks[key].get('version')`), so a result stored without a version is current and one stored with a
    # version is of another benchmark version. Before: the whole directory was refused (exit 2, nothing exported).
    unversioned = {name: {k: v for k, v in m.items() if k != "version"} for name, m in GREYHOUND_BENCHMARKS.items()}
    root = make_results_dir(tmp_path / "results", unversioned)
    values, samples = random_time_results(np.random.default_rng(11))
    write_result(root, COMMIT_A, {TIME: entry(values, samples=samples, version=None),
                                  PEAKMEM: entry([2.0**30] * N_COMBOS, version="v1")})
    csv_path = tmp_path / "data.csv"
    assert run_export(root, csv_path) == 0
    out = capsys.readouterr().out
    rows = read_rows(csv_path)
    assert len(rows) == N_COMBOS and {r["metric_name"] for r in rows} == {"speed"}
    assert sorted(float(r["y_value_50"]) for r in rows) == pytest.approx(sorted(v * 1e3 for v in values))
    assert f"{N_COMBOS} results of an older benchmark version" in out


def test_parameter_values_stored_as_numbers_or_null_read_as_asvs_reprs(tmp_path, capsys):
    # asv stores every parameter value as its repr string; another writer's file may store a JSON number, bool or
    # null. Before: null crashed the sort (float(None)), and numbers in one file beside strings in another crashed it
    # too ('<' between int and str), with nothing written.
    names = ["provider", "batch_size", "vocab_size", "flag"]
    as_strings = [["'greyhound'"], ["8"], ["1000", "4096"], ["None", "True"]]
    as_json = [["'greyhound'"], [8], [1000, 4096], [None, True]]
    benchmarks = {TIME: meta(TIME, "time", "seconds", param_names=names, params=as_strings,
                             kernel_name="cross_entropy_with_grad", x_name="vocab_size")}
    root = make_results_dir(tmp_path / "results", benchmarks)
    rng = np.random.default_rng(3)
    values_a, values_b = (list(rng.uniform(1e-4, 5e-3, size=4)) for _ in range(2))
    write_result(root, COMMIT_A, {TIME: entry(values_a, params=as_strings)})
    write_result(root, COMMIT_B, {TIME: entry(values_b, params=as_json)})
    csv_path = tmp_path / "data.csv"
    assert run_export(root, csv_path) == 0
    first = csv_path.read_bytes()
    rows = read_rows(csv_path)
    assert len(rows) == 8
    keyed = {(r["git_commit"], r["x_value"], r["extra_benchmark_config_str"]): float(r["y_value_50"]) for r in rows}
    for commit, values in ((COMMIT_A, values_a), (COMMIT_B, values_b)):
        for (vocab, flag), value in zip([(v, f) for v in ("1000", "4096") for f in ("null", "true")], values):
            extra = json.dumps({"batch_size": 8, "flag": json.loads(flag)}, sort_keys=True)
            assert keyed[(commit, vocab, extra)] == pytest.approx(value * 1e3)
    assert run_export(root, csv_path) == 0 and csv_path.read_bytes() == first


def test_commit_option_takes_a_sha256_hash_as_result_files_may_carry():
    # before: result files of 4 to 64 hex digits were read, but --commit refused more than 40
    full = "".join(random.choice("0123456789abcdef") for _ in range(64))
    assert export.hash_prefix(full.upper()) == full
    with pytest.raises(ValueError, match="4 to 64 hex digits"):
        export.hash_prefix(full + "0")


@pytest.mark.parametrize("columns", [15, 17, 19])
def test_a_csv_of_an_earlier_schema_is_named_so(tmp_path, columns):
    # before: the hint compared the header with an 18-column schema that never was; the real 15 (before
    # asv_machine / asv_environment) and 17 (before the roofline columns) got none
    from tools import CsvFormatError, read_csv_records
    path = tmp_path / "old.csv"
    path.write_text(",".join(CSV_COLUMNS[:columns]) + "\n")
    with pytest.raises(CsvFormatError, match=f"an earlier schema of this CSV, without .*{CSV_COLUMNS[-1]}"):
        read_csv_records(path)
    path.write_text(",".join(reversed(CSV_COLUMNS[:columns])) + "\n")
    with pytest.raises(CsvFormatError) as err:
        read_csv_records(path)
    assert "earlier schema" not in str(err.value)
