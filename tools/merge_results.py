"""Merge asv results from another run (a folder or a .tar.gz of results/) into results/ without losing any.

    python -m tools.merge_results /path/to/results.tar.gz [more sources ...] [--into results] [--create]

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
* benchmarks.json: entries results/ lacks are added. An entry that differs (a benchmark whose code, and so asv's
  version of it, changed) takes the side whose results of it started later, the source's when its runs are newer:
  `asv run` rewrites benchmarks.json with the definitions it ran, and asv (publish, compare), tools.export and
  tools.gate read only results of the version benchmarks.json names. The replaced definition's results then read as
  an older version, as after `asv run`; each benchmark whose entry was taken, or kept although the source's differs,
  is named (with what to do where the source's results now read as older);
* machine.json: entries results/ lacks are added; differing entries keep results/' version and are reported;
* a result file whose two runs differ in machine, GPU model or software (params: MATCHING_PARAMS) is refused: those
  numbers belong under another machine or environment; a differing driver or host is reported and merged;
* <machine>/gpus.csv (which GPU ran which commit, for tools.noise): rows results/ lacks are added, where both files
  have the same columns.
Every file is written atomically, and only once the whole source merged: a source with one bad file writes nothing.
A damaged archive is an error naming it, and so is a source with nothing to merge (no result file, benchmarks.json,
machine.json or gpus.csv) or a file of an asv format version this tool does not read. An archive's members that
would land outside it (an absolute path, `..`) are not unpacked: the rest merges, a warning names them and the exit
status is 1. `--into` must be an existing folder; `--create` starts a new one (in an existing folder). Merging the
same source twice changes nothing the second time.
Exit status: 0 merged; 1 merged, with archive members left out (named); 2 error (the source named wrote nothing).
"""
import argparse
import json
import math
import os
import sys
import tarfile
import tempfile
from pathlib import Path

from tools._atomic import locked, write_atomic

GPUS_FILE = "gpus.csv"  # tools.noise's record of which GPU ran which commit
SCALAR_COLUMNS = {"params", "version", "started_at", "duration", "profile"}
# a result file's params that must agree for two runs to share it: the machine, the GPU model and the software that
# sets the numbers (asv keeps results of other software apart only through the environment name, which a
# requirements change in asv.conf.json need not alter); a driver or host difference is reported, not refused
MATCHING_PARAMS = ("machine", "arch", "gpu_name", "cuda", "torch", "triton", "python")
REPORTED_PARAMS = ("gpu_driver", "cpu", "num_cpu", "ram", "os")
# the asv file formats this tool reads (asv 0.6's api_version of each kind of file): another version's fields may
# mean other things, so such a file is refused by name instead of being merged as if it were this one
FORMAT_VERSIONS = {"machine.json": 1, "benchmarks.json": 2, "result file": 2}


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
    for side, row in (("ours", a), ("theirs", b)):
        for column in per_combination:
            if row[column] is not None and (not isinstance(row[column], list) or len(row[column]) != n):
                raise MergeError(f"benchmark {name}: {side}' {column} column is not a list of {n} entries (one a "
                                 f"parameter combination), got {row[column]!r:.80}")
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


def merge_result_file(ours, theirs, log=print, label=""):
    """Merge two asv result documents of one (machine, commit, environment); returns (merged, replaced count).
    MergeError where the two runs' machine, GPU model or software (MATCHING_PARAMS) differ; a differing driver or
    host (REPORTED_PARAMS) is logged and results/' params are kept."""
    for key in ("commit_hash", "env_name", "result_columns"):
        if ours.get(key) != theirs.get(key):
            raise MergeError(f"{key} differs: ours {ours.get(key)!r}, theirs {theirs.get(key)!r}")
    ours_params, theirs_params = ours.get("params") or {}, theirs.get("params") or {}
    for key in MATCHING_PARAMS:
        if ours_params.get(key) != theirs_params.get(key):
            raise MergeError(f"params {key!r} differs: ours {ours_params.get(key)!r}, theirs "
                             f"{theirs_params.get(key)!r}; runs of another GPU or other software are not merged into "
                             f"one file (run them under another asv machine name or environment)")
    for key in REPORTED_PARAMS:
        if ours_params.get(key) != theirs_params.get(key):
            log(f"{label}: params {key!r} differs (ours {ours_params.get(key)!r}, theirs "
                f"{theirs_params.get(key)!r}): merged, results/' params kept")
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
    merged["date"] = min((d for d in (ours.get("date"), theirs.get("date")) if d is not None), default=None)
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


def _kind_of(path, root):
    """Which asv file `path` (inside the results folder `root`) is: a key of FORMAT_VERSIONS."""
    if path.name == "machine.json":
        return "machine.json"
    return "benchmarks.json" if path == root / "benchmarks.json" else "result file"


def _check_format(path, document, kind):
    """MergeError naming `path` when its `version` (asv's file format) is not the one of its kind this tool reads;
    a file without one (an older tool's) is read as it is."""
    expected = FORMAT_VERSIONS[kind]
    if "version" in document and document["version"] != expected:
        raise MergeError(f"{path}: cannot read: an asv {kind} of format version {document['version']!r}, expected "
                         f"version {expected} (asv 0.6's)")
    return document


def _check_document(path, document, kind, root):
    """MergeError naming `path` unless it sits where asv puts its kind of file in the results folder `root`
    (benchmarks.json at the top, <machine>/machine.json, <machine>/<commit>-<env>.json) and has that kind's shape: a
    result file's `results` an object, `result_columns` (where given) a list and `params` an object, and the machine a
    result file or machine.json names (params.machine, machine) the folder's. Anything else would be copied into
    results/ as it is, where tools.export and asv then trip over it."""
    if kind == "benchmarks.json":
        return document
    if len(path.relative_to(root).parts) != 2:
        raise MergeError(f"{path}: not an asv results file (expected benchmarks.json at the top, "
                         f"<machine>/machine.json or <machine>/<commit>-<environment>.json, got "
                         f"{path.relative_to(root)})")
    machine = path.parent.name
    if kind == "machine.json":
        named = document.get("machine", machine)
    else:
        for key, wanted in (("results", dict), ("result_columns", list), ("params", dict)):
            if key in document and not isinstance(document[key], wanted):
                raise MergeError(f"{path}: {key} must be a JSON {'object' if wanted is dict else 'list'}, got "
                                 f"{type(document[key]).__name__}")
        if not isinstance(document.get("results"), dict):
            raise MergeError(f"{path}: not an asv result file (no `results` object)")
        named = (document.get("params") or {}).get("machine", machine)
    if named != machine:
        raise MergeError(f"{path}: names machine {named!r} but sits in the folder {machine!r}: asv reads each "
                         f"machine's results from the folder of its name")
    return document


def _merge_dict_file(ours, theirs, label, log):
    merged = dict(ours)
    for key, value in theirs.items():
        if key not in merged:
            merged[key] = value
        elif merged[key] != value:
            log(f"{label}: {key} differs, kept results/' entry")
    return merged


def newest_runs(results_root):
    """{(benchmark, version): the latest started_at of a result of it} over the result files of a results folder
    (files that cannot be read, or in the old format without result_columns, say nothing)."""
    newest = {}
    for path in Path(results_root).glob("*/*.json"):
        if path.name == "machine.json":
            continue
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
            columns, results = document["result_columns"], document["results"]
            for name, entry in results.items():
                row = _row(entry, columns)
                key = (name, row["version"])
                newest[key] = max(newest.get(key, 0), row["started_at"] or 0)
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError):
            continue
    return newest


def _names(names, shown=5):
    return ", ".join(names[:shown]) + (f", ... ({len(names) - shown} more)" if len(names) > shown else "")


def merge_benchmarks_json(ours, theirs, source, into, label, log):
    """benchmarks.json merged: entries results/ lacks added; a differing entry takes the side whose results of it (of
    that side's version) started later, results/' on a tie. Each benchmark taken or kept is logged by name."""
    merged, taken, kept = dict(ours), [], []
    newest_theirs = newest_ours = None
    for name, entry in theirs.items():
        if name not in merged:
            merged[name] = entry
        elif merged[name] != entry:
            if not (isinstance(entry, dict) and isinstance(merged[name], dict)):
                log(f"{label}: {name} differs, kept results/' entry")
                continue
            if newest_theirs is None:  # read the result files only where a definition differs
                newest_theirs, newest_ours = newest_runs(source), newest_runs(into)
            theirs_at = newest_theirs.get((name, entry.get("version")), 0)
            ours_at = newest_ours.get((name, merged[name].get("version")), 0)
            if theirs_at > ours_at:
                merged[name] = entry
                taken.append(name)
            else:
                kept.append(name)
    if taken:
        log(f"{label}: took the source's definition of {len(taken)} benchmark(s), whose results there started later "
            f"(as `asv run` rewrites benchmarks.json with the definitions it ran): {_names(taken)}; results/' "
            f"results of their other version now read as an older version (asv publish, tools.export and tools.gate "
            f"leave them out)")
    if kept:
        log(f"{label}: warning: kept results/' definition of {len(kept)} benchmark(s) that differ in the source, "
            f"whose results of them are not newer: {_names(kept)}; the source's results of them read as an older "
            f"version (asv publish, tools.export and tools.gate leave them out): re-run those benchmarks at the "
            f"source's commits with the current code to use them")
    return merged


def merge_tree(source, into, log=print):
    """Merge the results folder `source` into `into`; returns a summary dict. Every file is checked and merged in
    memory first: a source with one bad file writes nothing (MergeError names it). `into`'s lock (its benchmarks.json's
    sibling `.benchmarks.json.lock`, as tools._atomic.locked) is held from the first read to the last write, so two
    merges into one results folder take turns instead of losing each other's runs."""
    source, into = Path(source), Path(into)
    with locked(into / "benchmarks.json"):
        return _merge_tree(source, into, log)


def _merge_tree(source, into, log):
    summary = {"copied": 0, "merged": 0, "replaced": 0, "unchanged": 0}
    writes = []  # (target, text or bytes), written once everything merged
    for path in sorted(source.rglob("*.json")):
        target = into / path.relative_to(source)
        kind = _kind_of(path, source)
        theirs = _check_document(path, _check_format(path, _read_json(path), kind), kind, source)
        if not target.exists():
            writes.append((target, path.read_bytes()))  # never a half-copied file in results/
            summary["copied"] += 1
            continue
        ours = _check_document(target, _check_format(target, _read_json(target), kind), kind, into)
        if "results" in ours and "result_columns" in ours:
            try:
                merged, replaced = merge_result_file(ours, theirs, log, str(target))
            except (MergeError, KeyError, TypeError, ValueError, IndexError) as err:
                raise MergeError(f"{path} into {target}: {err}") from None
            summary["replaced"] += replaced
            if replaced:
                log(f"{target}: {replaced} parameter combination(s) measured on both sides: the later run kept")
        elif path == source / "benchmarks.json":
            merged = merge_benchmarks_json(ours, theirs, source, into, str(target), log)
        else:  # machine.json
            merged = _merge_dict_file(ours, theirs, str(target), log)
        if merged == ours:
            summary["unchanged"] += 1
        else:
            writes.append((target, json.dumps(merged, indent=None, sort_keys=False, allow_nan=True) + "\n"))
            summary["merged"] += 1
    for path in sorted(source.glob(f"*/{GPUS_FILE}")):  # which GPU ran which commit (tools.noise): rows added
        target = into / path.relative_to(source)
        ours = _read_lines(target) if target.exists() else []
        theirs = _read_lines(path)
        if ours and theirs and theirs[0] != ours[0]:  # the same columns in the same order, or rows mean other things
            raise MergeError(f"{path}: columns {theirs[0]!r}, results/' {target} has {ours[0]!r}; not merging rows "
                             f"whose columns differ")
        added = [line for line in theirs[1:] if line and line not in ours]
        if not ours:
            ours = theirs[:1]
        if added:
            writes.append((target, "\n".join(ours + added) + "\n"))
            summary["merged"] += 1
    for target, _ in writes:  # a folder that cannot be made (a file in its way) is refused before anything is written
        blocker = next((p for p in target.parents if p.exists() or p.is_symlink()), None)
        if blocker is not None and not blocker.is_dir():
            raise MergeError(f"cannot write {target}: {blocker} is not a folder, expected a folder there")
    for target, content in writes:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, content)
    return summary


def _read_lines(path):
    """The lines of a text file (gpus.csv); MergeError naming it when it is not UTF-8 text."""
    try:
        return Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise MergeError(f"{path}: cannot read ({err})") from None


def _results_root(folder):
    folder = Path(folder)
    return folder / "results" if (folder / "results").is_dir() else folder


def extract_results(tar, scratch, dropped=None):
    """Unpack an open archive's members (none outside `scratch`) into it; returns its results folder (the
    archive's results/ if it has one, else its root). The names of members left out because they would land outside
    (an absolute path, a `..`) are appended to the list `dropped` where one is given."""
    members = []
    for member in tar.getmembers():
        if ".." in Path(member.name).parts or member.name.startswith("/"):
            if dropped is not None:
                dropped.append(member.name)
        else:
            members.append(member)
    tar.extractall(scratch, members=members, filter="data")
    return _results_root(scratch)


def _results_folder(source, scratch, dropped=None):
    if not source:  # Path("") is the current directory
        raise MergeError("source is empty, expected a results folder or a .tar.gz of one")
    source = Path(source)
    if source.is_dir():
        return _results_root(source)
    if not source.exists():
        raise MergeError(f"source {str(source)!r} does not exist, expected a results folder or a .tar.gz of one")
    try:
        if not tarfile.is_tarfile(source):
            raise MergeError(f"source must be a results folder or a .tar.gz of one, got {str(source)!r}")
        with tarfile.open(source) as tar:
            return extract_results(tar, scratch, dropped)
    except (tarfile.TarError, EOFError, OSError) as err:  # a truncated or damaged archive (zlib's error is an OSError)
        raise MergeError(f"{source}: cannot unpack ({type(err).__name__}: {err})") from None


def _check_not_empty(source, folder):
    """MergeError when the source's results folder holds nothing this tool merges."""
    if not any(folder.rglob("*.json")) and not any(folder.glob(f"*/{GPUS_FILE}")):
        raise MergeError(f"source {source}: no asv results in it (expected results/ with <machine>/*.json, "
                         f"benchmarks.json or <machine>/{GPUS_FILE}): nothing to merge")


def _check_into(into, create):
    """MergeError unless `into` is an existing folder, or (with --create) a new one in an existing folder."""
    if not into:  # Path("") is the current directory
        raise MergeError("--into is empty, expected the results folder to merge into")
    path = Path(into)
    if path.is_dir():
        return
    if path.exists() or path.is_symlink():
        raise MergeError(f"--into {into} is not a folder, expected the results folder to merge into")
    if not create:
        raise MergeError(f"--into {into} does not exist, expected an existing results folder (pass --create to "
                         f"start a new one)")
    if not path.absolute().parent.is_dir():
        raise MergeError(f"--into {into}: its parent folder {path.absolute().parent} does not exist, expected a new "
                         f"results folder in an existing folder")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tools.merge_results", description=__doc__.splitlines()[0],
                                     epilog="Exit status: 0 merged; 1 merged, with archive members that would land "
                                            "outside left out (named); 2 error.")
    parser.add_argument("sources", nargs="+", help="results folders or .tar.gz archives of results/")
    parser.add_argument("--into", default="results", help="the results folder to merge into, an existing folder "
                                                          "(default: results)")
    parser.add_argument("--create", action="store_true", help="create --into where it does not exist yet (its "
                                                              "parent folder must)")
    args = parser.parse_args(argv)
    status = 0
    source = None
    try:
        _check_into(args.into, args.create)
        for source in args.sources:
            with tempfile.TemporaryDirectory() as scratch:
                dropped = []
                folder = _results_folder(source, scratch, dropped)
                if dropped:
                    print(f"tools.merge_results: warning: {source}: {len(dropped)} archive member(s) left out, whose "
                          f"path would land outside the archive's folder: {_names(dropped)}", file=sys.stderr)
                    status = 1
                try:
                    _check_not_empty(source, folder)
                    summary = merge_tree(folder, args.into)
                except MergeError as err:  # an archive's files named as its members, not by the scratch folder's path
                    raise MergeError(str(err).replace(f"{scratch}{os.sep}", f"{source}:")) from None
            print(f"{source}: {summary['copied']} file(s) copied, {summary['merged']} merged, "
                  f"{summary['unchanged']} unchanged, {summary['replaced']} parameter combination(s) replaced")
    except (MergeError, json.JSONDecodeError) as exc:
        print(f"tools.merge_results: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # e.g. --into on a read-only file system (its lock file cannot be made)
        print(f"tools.merge_results: error: cannot merge {source} into --into {args.into}: {exc}", file=sys.stderr)
        return 2
    return status


if __name__ == "__main__":
    sys.exit(main())
