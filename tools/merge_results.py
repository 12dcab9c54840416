"""Merge asv results from another run (a folder or a .tar.gz of results/) into results/ without losing any.

    python -m tools.merge_results /path/to/results.tar.gz [more sources ...] [--into results]

asv keeps one JSON file per (machine, commit, environment) and rewrites it on every run. Benchmarks run in
slices on remote GPUs (`scripts/h200_asv.sh`, `tools.modal_runner`) come back as whole files, so unpacking one over
results/ would drop whatever the local file held that the remote one lacks. This merges per benchmark and per
parameter combination instead:

* a file, machine.json or benchmarks.json that results/ lacks is copied;
* a benchmark only one side measured is kept as it is; for a benchmark in both, each parameter combination takes
  the side that has a value (asv writes null or NaN for combinations a `-b` filter left out); where both have one,
  the run that started later wins and the combination is reported as replaced;
* a benchmark whose parameter grid or version (asv's hash of its code) differs between the two sides is refused
  with an error naming it: those numbers measure different code and are not merged;
* benchmarks.json and machine.json: entries results/ lacks are added; differing entries keep results/' version and
  are reported;
* <machine>/gpus.csv (which GPU ran which commit, for tools.noise): rows results/ lacks are added.
Every file is written atomically; merging the same source twice changes nothing the second time.
"""
import argparse
import json
import math
import sys
import tarfile
import tempfile
from pathlib import Path

from tools._atomic import write_atomic

GPUS_FILE = "gpus.csv"  # tools.noise's record of which GPU ran which commit
SCALAR_COLUMNS = {"params", "version", "started_at", "duration", "profile"}


class MergeError(ValueError):
    pass


def _has_value(value):
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _row(entry, columns):
    row = list(entry) + [None] * (len(columns) - len(entry))
    return dict(zip(columns, row))


def merge_benchmark(name, ours, theirs, columns):
    """Merged result row (a list in `columns` order) and the number of parameter combinations both sides measured
    (with different values: the later run's is kept)."""
    a, b = _row(ours, columns), _row(theirs, columns)
    for key in ("params", "version"):
        if a[key] != b[key]:
            raise MergeError(f"benchmark {name}: {key} differs between the two results "
                             f"(ours {a[key]!r}, theirs {b[key]!r}); not merging numbers from different code")
    newer = b if (b["started_at"] or 0) > (a["started_at"] or 0) else a
    merged, replaced = dict(a), 0
    per_combination = [c for c in columns if c not in SCALAR_COLUMNS]
    n = len(a["result"] or [])
    if len(b["result"] or []) != n:
        raise MergeError(f"benchmark {name}: {len(b['result'] or [])} parameter combinations in theirs, {n} in ours")
    for column in per_combination:  # columns asv left empty on both sides (peak-memory rows have no stats) stay so
        if a[column] is not None or b[column] is not None:
            merged[column] = list(a[column]) if a[column] is not None else [None] * n
    taken = 0
    for i in range(n):
        a_has, b_has = _has_value(a["result"][i]), _has_value(b["result"][i])
        both = a_has and b_has and a["result"][i] != b["result"][i]
        replaced += both  # measured on both sides: the later run's value is kept
        if not b_has or (a_has and (newer is a or not both)):
            continue  # ours stays
        taken += 1
        for column in per_combination:
            if merged[column] is not None:
                merged[column][i] = b[column][i] if b[column] is not None else None
    if not taken:  # a source that adds nothing leaves the row exactly as it was
        return list(ours), replaced
    merged["started_at"] = max(a["started_at"] or 0, b["started_at"] or 0) or None
    merged["duration"] = (a["duration"] or 0) + (b["duration"] or 0)  # the time both runs spent measuring
    row = [merged[c] for c in columns]
    while row and row[-1] is None:  # asv drops trailing empty columns
        row.pop()
    return row, replaced


def merge_result_file(ours, theirs):
    """Merge two asv result documents of one (machine, commit, environment); returns (merged, replaced count)."""
    for key in ("commit_hash", "env_name", "result_columns"):
        if ours.get(key) != theirs.get(key):
            raise MergeError(f"{key} differs: ours {ours.get(key)!r}, theirs {theirs.get(key)!r}")
    columns = ours["result_columns"]
    merged = dict(ours)
    merged["results"] = dict(ours["results"])
    replaced = 0
    for name, entry in theirs["results"].items():
        if name in merged["results"]:
            merged["results"][name], count = merge_benchmark(name, merged["results"][name], entry, columns)
            replaced += count
        else:
            merged["results"][name] = entry
    merged["durations"] = {**theirs.get("durations", {}), **ours.get("durations", {})}
    merged["date"] = min(d for d in (ours.get("date"), theirs.get("date")) if d is not None)
    return merged, replaced


def _read_json(path):
    """A JSON object from `path`; MergeError naming the file when it is not one (truncated, binary, a list)."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise MergeError(f"{path}: cannot read ({err})") from None
    if not isinstance(document, dict):
        raise MergeError(f"{path}: expected a JSON object, got {type(document).__name__}")
    return document


def _merge_dict_file(ours, theirs, label, log):
    merged = dict(ours)
    for key, value in theirs.items():
        if key not in merged:
            merged[key] = value
        elif merged[key] != value:
            log(f"{label}: {key} differs, kept results/' entry")
    return merged


def _dump(path, document):
    write_atomic(path, json.dumps(document, indent=None, sort_keys=False, allow_nan=True) + "\n")


def merge_tree(source, into, log=print):
    """Merge the results folder `source` into `into`; returns a summary dict."""
    source, into = Path(source), Path(into)
    summary = {"copied": 0, "merged": 0, "replaced": 0, "unchanged": 0}
    for path in sorted(source.rglob("*.json")):
        target = into / path.relative_to(source)
        theirs = _read_json(path)
        if not target.exists():
            write_atomic(target, path.read_bytes())  # never a half-copied file in results/
            summary["copied"] += 1
            continue
        ours = _read_json(target)
        if "results" in ours and "result_columns" in ours:
            try:
                merged, replaced = merge_result_file(ours, theirs)
            except (MergeError, KeyError, TypeError, ValueError) as err:
                raise MergeError(f"{path} into {target}: {err}") from None
            summary["replaced"] += replaced
            if replaced:
                log(f"{target}: {replaced} parameter combination(s) measured on both sides: the later run kept")
        else:  # benchmarks.json, machine.json
            merged = _merge_dict_file(ours, theirs, str(target), log)
        if merged == ours:
            summary["unchanged"] += 1
        else:
            _dump(target, merged)
            summary["merged"] += 1
    for path in sorted(source.glob(f"*/{GPUS_FILE}")):  # which GPU ran which commit (tools.noise): rows added
        target = into / path.relative_to(source)
        ours = target.read_text().splitlines() if target.exists() else []
        theirs = path.read_text().splitlines()
        added = [line for line in theirs[1:] if line and line not in ours]
        if not ours:
            ours = theirs[:1]
        if added:
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(target, "\n".join(ours + added) + "\n")
            summary["merged"] += 1
    return summary


def _results_root(folder):
    folder = Path(folder)
    return folder / "results" if (folder / "results").is_dir() else folder


def extract_results(tar, scratch):
    """Unpack an open archive's members (none outside `scratch`) into it; returns its results folder (the
    archive's results/ if it has one, else its root)."""
    members = [m for m in tar.getmembers() if ".." not in Path(m.name).parts and not m.name.startswith("/")]
    tar.extractall(scratch, members=members, filter="data")
    return _results_root(scratch)


def _results_folder(source, scratch):
    source = Path(source)
    if source.is_dir():
        return _results_root(source)
    if not tarfile.is_tarfile(source):
        raise MergeError(f"source must be a results folder or a .tar.gz of one, got {str(source)!r}")
    with tarfile.open(source) as tar:
        return extract_results(tar, scratch)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tools.merge_results", description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="+", help="results folders or .tar.gz archives of results/")
    parser.add_argument("--into", default="results", help="the results folder to merge into (default: results)")
    args = parser.parse_args(argv)
    try:
        for source in args.sources:
            with tempfile.TemporaryDirectory() as scratch:
                folder = _results_folder(source, scratch)
                summary = merge_tree(folder, args.into)
            print(f"{source}: {summary['copied']} file(s) copied, {summary['merged']} merged, "
                  f"{summary['unchanged']} unchanged, {summary['replaced']} parameter combination(s) replaced")
    except (MergeError, FileNotFoundError, json.JSONDecodeError) as exc:
        print(f"tools.merge_results: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
