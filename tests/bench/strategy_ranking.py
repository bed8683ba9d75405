#!/usr/bin/env python3
"""Does the one model rank the strategies as they measure? (issue 29, target 1)

For each case (a job and a cluster), `dptrain plan --compare --json` predicts every candidate (data
parallelism with equal or I-DAT shares, ring or MRA; CGP with its solver's groups; the pipeline planner's
plan) on step times from a layer profile written once per case; then every candidate that fits is run
REPS times, interleaved (candidate order rotated each repetition), and its samples/s taken after the
first quarter of its steps (metrics.jsonl: the steady state, without the start's one-off costs). Per case: the measured median per candidate, the prediction's error, Kendall's tau over the
pairs of candidates (predicted order against measured), and whether the predicted winner is within 10%
of the measured best. Over all cases: tau summed over the pairs, the lowest per-case tau, the median
absolute error. A candidate predicted not to fit must fail cleanly (non-zero exit, one line) and is left
out of tau; one predicted to fit that fails is a miss.

Every rank's machine is emulated slower than a core ([cluster.emulate] slowdown on every rank, on top
of the speeds the cluster describes): a slowed rank sleeps until its compute has taken its factor times
the least CPU time seen for that work, so the two cores of this machine are not what limits the runs. Steps are sized to tens of
milliseconds or more (global batch 1024 for the quickstart MLP): with four ranks on two cores, every hop
of a collective can wait for the scheduler to run the rank it needs, a millisecond or more per step that
no cluster of four devices has and the model leaves out. Samples/s are compared as
measured; CGP's accuracy cost (more steps for the same accuracy) is not part of this throughput ranking.

Usage: strategy_ranking.py DPTRAIN [--cases lab,slow-link,...] [--reps 3] [--steps 60]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

GPT = [f"{ROOT}/configs/gpt.toml", "--set", "model.tied_head=false", "--set", "model.layers=2"]
QUICK = [f"{ROOT}/configs/quickstart.toml"]


def sets(*kv):
    out = []
    for x in kv:
        out += ["--set", x]
    return out


# name: (job and its overrides, what the case is built to show)
CASES = {
    "lab": (GPT + sets("launch.ranks=4", 'cluster.kinds=["fast","old"]', "cluster.kind_counts=[2,2]",
                       "cluster.kind_speeds=[1.0,0.4]", "cluster.ranks_per_node=1", "cluster.nodes_per_rack=2",
                       "cluster.links.rack_gbps=10", "cluster.links.cross_gbps=1",
                       "cluster.emulate.as_described=true", "cluster.emulate.slowdown=[4,4,4,4]"),
            "the issue's mixed lab cluster: two fast, two old devices, racks joined by 1 Gbit/s"),
    "one-slow": (QUICK + sets("launch.ranks=4", "train.global_batch=1024", "cluster.speeds=[1,1,1,0.25]",
                              "cluster.ranks_per_node=1", "cluster.links.rack_gbps=10",
                              "cluster.emulate.as_described=true", "cluster.emulate.slowdown=[12,12,12,12]"),
                 "one device four times slower on a fast network"),
    "slow-link": (QUICK + sets("launch.ranks=4", "model.hidden=[1024,1024]", "train.global_batch=64",
                               "cluster.ranks_per_node=2", "cluster.links.node_gbps=10", "cluster.links.rack_gbps=1",
                               "cluster.emulate.as_described=true", "cluster.emulate.slowdown=[4,4,4,4]"),
                  "a comm-heavy model on two nodes joined by 1 Gbit/s"),
    "equal-fast": (QUICK + sets("launch.ranks=4", "train.global_batch=1024", "cluster.ranks_per_node=1",
                                "cluster.links.rack_gbps=10", "cluster.emulate.as_described=true",
                                "cluster.emulate.slowdown=[12,12,12,12]"),
                   "equal devices on a fast network"),
    "pipeline-only": (QUICK + sets("launch.ranks=4", "model.hidden=[2048,2048,2048]", "cluster.ranks_per_node=1",
                                   "cluster.links.rack_gbps=10", "cluster.memory_gb=[0.1,0.1,0.1,0.1]",
                                   "cluster.emulate.as_described=true", "cluster.emulate.slowdown=[4,4,4,4]"),
                      "a model of 10 M parameters no device of 100 MB holds whole, with its gradients and "
                      "optimizer state"),
}


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def steady_samples_per_s(run_dir):
    """Samples/s after the first quarter of the steps (rank 0's train lines, logged every quarter): the
    strategy's steady state, without the start's one-off costs (buffers, the first division, warm caches),
    which weigh on runs of a few milliseconds a step."""
    lines = [json.loads(x) for x in open(f"{run_dir}/metrics.jsonl")]
    start = next(x for x in lines if x["kind"] == "start")
    train = [x for x in lines if x["kind"] == "train" and x.get("rank", 0) == 0]
    first, last = train[0], train[-1]
    return (last["step"] - first["step"]) * start["global_batch"] / (last["t"] - first["t"])


def kendall(pred, meas):
    """tau over the pairs of keys, ties counted as neither."""
    keys = list(pred)
    concordant = discordant = 0
    for i in range(len(keys)):
        for j in range(i + 1, len(keys)):
            a, b = keys[i], keys[j]
            s = (pred[a] - pred[b]) * (meas[a] - meas[b])
            concordant += s > 0
            discordant += s < 0
    pairs = concordant + discordant
    return (concordant - discordant) / pairs if pairs else 1.0, concordant, discordant


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dptrain")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--steps", type=int, default=60)
    a = ap.parse_args()
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    work = tempfile.mkdtemp(prefix="strategy-ranking.")
    total_c = total_d = 0
    taus, errors, lines = [], [], []
    try:
        for name in a.cases.split(","):
            job, what = CASES[name]
            base = job + sets(f"train.steps={a.steps}", "train.eval_every=0", "checkpoint.enabled=false",
                              "log.progress=plain", f"log.every={max(1, a.steps // 4)}")
            profile = f"{work}/{name}.profile.toml"
            p = run([a.dptrain, "profile", "--layers", *base, "--out", profile], env=env)
            if p.returncode:
                sys.exit(f"{name}: profile --layers failed: {p.stderr.strip()}")
            c = run([a.dptrain, "plan", *base, "--profile", profile, "--compare", "--json"], env=env)
            if c.returncode not in (0, 1):
                sys.exit(f"{name}: plan --compare failed: {c.stderr.strip()}")
            rows = json.loads(c.stdout)["rows"]
            predicted = {r["name"]: r["samples_per_s"] for r in rows if r["planned"] and r["fits"]}
            sets_of = {r["name"]: r["sets"] for r in rows}
            winner = rows[0]["name"] if rows and rows[0]["planned"] and rows[0]["fits"] else None
            measured = {n: [] for n in sets_of}
            failed = {}
            order = list(sets_of)
            for rep in range(a.reps):
                for n in order[rep % len(order):] + order[:rep % len(order)]:
                    out = f"{work}/{name}.{len(measured[n])}.{order.index(n)}"
                    # A pipeline plans from the same profile the prediction read.
                    extra = sets(*sets_of[n]) + (sets("parallel.pipeline.profile=" + profile)
                                                 if n.startswith("pipeline") else [])
                    r = run([a.dptrain, "run", *base, *extra, "--out", out, "--force"], env=env)
                    if r.returncode:
                        failed[n] = (r.stderr.strip().splitlines() or ["?"])[-1]
                        continue
                    measured[n].append(steady_samples_per_s(out))
                    shutil.rmtree(out, ignore_errors=True)
            med = {n: statistics.median(v) for n, v in measured.items() if v}
            first = len(lines)
            lines.append(f"\n## {name}: {what}\n\n| strategy | predicted samples/s | measured (median of {a.reps}; "
                         f"min-max) | error |\n|---|---:|---:|---:|")
            for n in sets_of:
                if n in med and n in predicted:
                    err = predicted[n] / med[n] - 1
                    errors.append(abs(err))
                    lines.append(f"| {n} | {predicted[n]:.0f} | {med[n]:.0f} ({min(measured[n]):.0f}-"
                                 f"{max(measured[n]):.0f}) | {err:+.1%} |")
                elif n in predicted:
                    lines.append(f"| {n} | {predicted[n]:.0f} | MISS: failed: {failed.get(n, '?')} | - |")
                else:
                    clean = n in failed
                    lines.append(f"| {n} | does not fit | {'failed cleanly' if clean else 'ran'}"
                                 f"{(': ' + failed[n]) if clean else ''} | - |")
            both = {n: predicted[n] for n in predicted if n in med}
            tau, conc, disc = kendall(both, {n: med[n] for n in both})
            total_c += conc
            total_d += disc
            taus.append((tau, name))
            best = max(med, key=med.get) if med else None
            within = winner in med and med[winner] >= 0.9 * med[best]
            lines.append(f"\nKendall tau {tau:+.2f} ({conc} concordant, {disc} discordant pairs); predicted "
                         f"winner {winner}: {med.get(winner, float('nan')):.0f} samples/s, measured best {best}: "
                         f"{med.get(best, float('nan')):.0f} ({'within' if within else 'NOT within'} 10%)")
            print("\n".join(lines[first:]), flush=True)
        pairs = total_c + total_d
        print(f"\nover {len(taus)} case(s): Kendall tau {(total_c - total_d) / max(1, pairs):+.2f} "
              f"({total_c} concordant, {total_d} discordant pairs); lowest per case "
              f"{min(taus)[0]:+.2f} ({min(taus)[1]}); median absolute error "
              f"{statistics.median(errors):.1%}" if taus and errors else "nothing measured")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
