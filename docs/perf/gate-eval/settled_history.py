"""Session 58's check of tools.gate's settled-runs rule (SETTLED_HISTORY) on the committed results, in-process: no
timing, only the gate's verdicts on results asv already wrote.

    PYTHONPATH=. python docs/perf/gate-eval/settled_history.py [--results results]

(1) The newest settled run of a machine as BASE against 20 re-draws of its own samples (bootstrap), every greyhound
time series x f: what a clean run of unchanged or slowed code after it would meet. (2) Every consecutive pair of the
machine's history with HEAD x f. (3) A/A: identical-code pairs (git) and re-drawn HEADs (resampled; 1-3 outliers of
x1.5-5). Each with the rule off and on."""
import argparse
import copy
import random
import statistics
import sys

from tools import gate


def redraw(run, rng, factor=1.0, model="resample"):
    copied = copy.copy(run)
    copied.values = {}
    for series, (value, samples, unit) in run.values.items():
        if samples and unit == "seconds":
            if model == "resample":
                new = [rng.choice(samples) for _ in samples]
            else:
                new = list(samples)
                for i in rng.sample(range(len(new)), rng.randint(1, 3)):
                    new[i] *= rng.uniform(1.5, 5)
            new = [s * (factor if series.is_greyhound else 1.0) for s in new]
            copied.values[series] = (statistics.median(new), new, unit)
        else:
            copied.values[series] = (value, samples, unit)
    copied.commit, copied.date = run.commit + "-redrawn", run.date + 1
    return copied


def caught(report, base):
    hits = total = 0
    for verdict in report.verdicts:
        if verdict.series.is_greyhound and base.values[verdict.series][2] == "seconds":
            total += 1
            hits += verdict.status == "regression"
    return hits, total


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--results", default="results")
    args = parser.parse_args(argv)
    for machine in gate.machine_names([args.results]):
        runs = gate.load_runs([args.results], machine, tier=None, warnings=[])
        ordered = gate.history_for(runs)
        settled = [r for r in ordered if all(not gate.unsettled(v[1]) for s, v in r.values.items()
                                              if s.is_greyhound and v[2] == "seconds" and v[1])]
        newest = settled[-1] if settled else ordered[-1]
        pairs = list(zip(ordered, ordered[1:]))
        aa_pairs = gate.identical_code_pairs(runs)
        for rule in (False, True):
            gate.SETTLED_HISTORY = rule
            line = [f"{machine} settled-history={rule}: newest settled run {newest.commit[:8]}"]
            for factor in (1.0, 1.05, 1.1, 2.0):
                rng, hits, total = random.Random(1), 0, 0
                for _ in range(20):
                    report = gate.judge(newest, redraw(newest, rng, factor), ordered)
                    h, t = (len(report.regressions), len(report.verdicts)) if factor == 1.0 else caught(report, newest)
                    hits, total = hits + h, total + t
                line.append(f"x{factor}: {hits}/{total}")
            print(" ".join(line))
            line = ["  consecutive pairs, HEAD x f:"]
            for factor in (1.05, 1.1, 2.0):
                hits = total = 0
                for a, b in pairs:
                    h, t = caught(gate.judge(a, gate.scaled(b, factor), gate.history_for(runs, exclude={b.commit})), a)
                    hits, total = hits + h, total + t
                line.append(f"x{factor}: {hits}/{total}")
            aa = sum(len(gate.judge(runs[a], runs[b], gate.history_for(runs, exclude={b})).regressions)
                     for a, b in aa_pairs)
            line.append(f"identical-code A/A flags: {aa} over {len(aa_pairs)} pairs")
            for model in ("resample", "outliers"):
                rng, flags = random.Random(0), 0
                for _ in range(60):
                    base = rng.choice(ordered[-20:])
                    flags += len(gate.judge(base, redraw(base, rng, model=model), ordered).regressions)
                line.append(f"re-drawn A/A ({model}) flags: {flags} over 60")
            print(" ".join(line))


if __name__ == "__main__":
    sys.exit(main())
