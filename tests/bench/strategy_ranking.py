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

A case marked "real" runs on a cluster of network namespaces (tests/cluster/netns_cluster.py: nodes
joined by links the kernel shapes, ranks started over ssh; needs root): `profile --links` measures its
links once and writes the cluster file both the prediction and the runs read ([cluster] file); compute
slowness stays emulated there ([cluster.emulate] slowdown), links are the kernel's.

Every rank's machine is emulated slower than a core ([cluster.emulate] slowdown on every rank, on top
of the speeds the cluster describes): a slowed rank sleeps until its compute has taken its factor times
the least CPU time seen for that work, so the two cores of this machine are not what limits the runs. Steps are sized to tens of
milliseconds or more (global batch 1024 for the quickstart MLP): with four ranks on two cores, every hop
of a collective can wait for the scheduler to run the rank it needs, a millisecond or more per step that
no cluster of four devices has and the model leaves out. Samples/s are compared as
measured; CGP's accuracy cost (more steps for the same accuracy) is not part of this throughput ranking.

Usage: strategy_ranking.py DPTRAIN [--cases lab,slow-link,...] [--reps 3] [--steps 60]   (root for "real")
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
sys.path.insert(0, os.path.join(ROOT, "tests", "cluster"))
import netns_cluster  # noqa: E402

GPT = [f"{ROOT}/configs/gpt.toml", "--set", "model.tied_head=false", "--set", "model.layers=2"]
QUICK = [f"{ROOT}/configs/quickstart.toml"]


def sets(*kv):
    out = []
    for x in kv:
        out += ["--set", x]
    return out


HYBRID = [f"{ROOT}/tests/bench/hybrid.toml", "--set", "model.layers=2", "--set", "model.width=128",
          "--set", "train.global_batch=64", "--set", "parallel.strategy=data"]

# name: (job and its overrides, what the case is built to show[, options: "real": the cluster to run it on,
# built of network namespaces (tests/cluster/netns_cluster.py) from this description, its links measured
# by `profile --links` for the prediction; "steps": the case's own step count])
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
    "fluctuating": (QUICK + sets("launch.ranks=4", "train.global_batch=1024", "cluster.ranks_per_node=1",
                                 "cluster.links.rack_gbps=10", "cluster.emulate.as_described=true",
                                 "cluster.emulate.slowdown=[12,12,12,12]", "cluster.emulate.fluctuate_rank=0",
                                 "cluster.emulate.fluctuate_factor=3", "cluster.emulate.fluctuate_to=1000000",
                                 "cluster.emulate.fluctuate_move_every=10"),
                    "equal devices, one of them at a time 3x slower, the slowness moving to the next every 10 steps"),
    "hybrid": (HYBRID + sets("launch.ranks=4", "cluster.ranks_per_node=2", "cluster.speeds=[1,1,0.5,0.5]",
                             "cluster.links.node_gbps=10", "cluster.links.rack_gbps=0.1",
                             "cluster.memory_gb=[0.015,0.015,0.015,0.015]", "cluster.emulate.as_described=true",
                             "cluster.emulate.slowdown=[4,4,4,4]"),
               "built for CGP of pipelines: a GPT of 0.44 M parameters on two nodes of unequal devices (1 and 0.5) "
               "joined by 0.1 Gbit/s, devices of 15 MB (the model's training state is 36 MB: data parallelism "
               "fits only in micro-batches, CGP not at all)", {"steps": 40}),
    "real-slow-link": (QUICK + sets("launch.ranks=4", "model.hidden=[1024,1024]", "train.global_batch=64",
                                    "cluster.emulate.slowdown=[4,4,4,4]"),
                       "slow-link over real links: two namespace nodes of two ranks (shared memory inside) joined "
                       "by 1 Gbit/s shaped by the kernel, ranks started over ssh; predicted and run on the "
                       "cluster file `profile --links` wrote",
                       {"real": "[launch]\nranks = 4\n[cluster]\nranks_per_node = 2\n[cluster.links]\n"
                                "rack_gbps = 1\n"}),
}


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def real_cluster(work, case, description):
    """The namespace cluster a case runs on, built from its description (needs root)."""
    path = f"{work}/{case}.cluster.toml"
    with open(path, "w") as f:
        f.write(description)
    return netns_cluster.up(path, f"sr{os.getpid() % 1000}")


def steady_samples_per_s(run_dir):
    """Samples/s after the first quarter of the steps (rank 0's train lines, logged every quarter): the
    strategy's steady state, without the start's one-off costs (buffers, the first division, warm caches),
    which weigh on runs of a few milliseconds a step."""
    lines = [json.loads(x) for x in open(f"{run_dir}/metrics.jsonl")]
    start = next(x for x in lines if x["kind"] == "start")
    train = [x for x in lines if x["kind"] == "train" and x.get("rank", 0) == 0]
    first, last = train[0], train[-1]
    return (last["step"] - first["step"]) * start["global_batch"] / (last["t"] - first["t"])


def kendall(pred, meas, apart=None):
    """tau over the pairs of keys, ties counted as neither; with `apart` (key -> (min, max) of its runs),
    only over the pairs whose measured ranges do not overlap (the pairs the measurement orders)."""
    keys = list(pred)
    concordant = discordant = 0
    for i in range(len(keys)):
        for j in range(i + 1, len(keys)):
            a, b = keys[i], keys[j]
            if apart and not (apart[a][0] > apart[b][1] or apart[b][0] > apart[a][1]):
                continue
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
    os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")  # the cluster's launcher too
    env = dict(os.environ)
    work = tempfile.mkdtemp(prefix="strategy-ranking.")
    total_c = total_d = apart_c = apart_d = 0
    taus, errors, lines = [], [], []
    cluster = None  # the namespace cluster of a case run over real links
    try:
        for name in a.cases.split(","):
            job, what, *more = CASES[name]
            opts = more[0] if more else {}
            steps = opts.get("steps", a.steps)
            base = job + sets(f"train.steps={steps}", "train.eval_every=0", "checkpoint.enabled=false",
                              "log.progress=plain", f"log.every={max(1, steps // 4)}")
            profile = f"{work}/{name}.profile.toml"
            p = run([a.dptrain, "profile", "--layers", *base, "--out", profile], env=env)
            if p.returncode:
                sys.exit(f"{name}: profile --layers failed: {p.stderr.strip()}")
            launch = lambda cmd: run(cmd, env=env)  # noqa: E731
            if "real" in opts:
                cluster = real_cluster(work, name, opts["real"])
                hostfile = sets(f"launch.hostfile={cluster['state']}/hostfile")
                launch = lambda cmd: netns_cluster.in_launcher(cluster, cmd + hostfile)  # noqa: E731
                links = f"{work}/{name}.links.toml"
                p = launch([a.dptrain, "profile", "--links", *base, "--out", links])
                if p.returncode:
                    sys.exit(f"{name}: profile --links failed: {p.stderr.strip()}")
                base += sets(f"cluster.file={links}")  # its nodes and links for the prediction and the runs
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
                    r = launch([a.dptrain, "run", *base, *extra, "--out", out, "--force"])
                    if r.returncode:
                        said = r.stderr.strip().splitlines() or ["?"]
                        cause = [x for x in said if "error" in x.lower() and x != said[-1]][:1]
                        failed[n] = " | ".join(cause + said[-1:])
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
            _, sep_c, sep_d = kendall(both, {n: med[n] for n in both},
                                      {n: (min(measured[n]), max(measured[n])) for n in both})
            total_c += conc
            total_d += disc
            apart_c += sep_c
            apart_d += sep_d
            taus.append((tau, name))
            best = max(med, key=med.get) if med else None
            within = winner in med and med[winner] >= 0.9 * med[best]
            lines.append(f"\nKendall tau {tau:+.2f} ({conc} concordant, {disc} discordant pairs; of the pairs whose "
                         f"runs do not overlap: {sep_c} concordant, {sep_d} discordant); predicted "
                         f"winner {winner}: {med.get(winner, float('nan')):.0f} samples/s, measured best {best}: "
                         f"{med.get(best, float('nan')):.0f} ({'within' if within else 'NOT within'} 10%)")
            print("\n".join(lines[first:]), flush=True)
            if cluster:
                netns_cluster.down(cluster["name"])
                cluster = None
        pairs = total_c + total_d
        print(f"\nover {len(taus)} case(s): Kendall tau {(total_c - total_d) / max(1, pairs):+.2f} "
              f"({total_c} concordant, {total_d} discordant pairs); lowest per case "
              f"{min(taus)[0]:+.2f} ({min(taus)[1]}); median absolute error "
              f"{statistics.median(errors):.1%}; over the pairs whose runs do not overlap: tau "
              f"{(apart_c - apart_d) / max(1, apart_c + apart_d):+.2f} ({apart_c} concordant, {apart_d} discordant)"
              if taus and errors else "nothing measured")
    finally:
        if cluster:
            netns_cluster.down(cluster["name"])
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
