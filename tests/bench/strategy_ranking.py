#!/usr/bin/env python3
"""Does the one model rank the strategies as they measure? (issue 29, target 1)

For each case (a job and a cluster), `dptrain plan --compare --json` predicts every candidate (data
parallelism with equal or I-DAT shares, ring or MRA; CGP with its solver's groups; the pipeline planner's
plan; CGP of pipelines) on step times from a layer profile; then every candidate that fits is run REPS
times, interleaved (candidate order rotated each repetition), and its samples/s taken after the first
quarter of its steps (metrics.jsonl: the steady state, without the start's one-off costs). The profile
is written again before every repetition (this machine's speed drifts by a fifth over minutes, the
runs' with it): the prediction is the median of the repetitions' (a pipeline plans from its
repetition's profile). Per case: the measured median per candidate, the prediction's error, Kendall's tau over the
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

Beside each prediction the simulator's (`plan --compare --workers N` at the job's own N ranks: its own
cluster, discrete events with noise, the runtime's balancer, the server's queue) and its error in step
time against the measured one (issue 29, target 3: within 15% on every case).

Usage: strategy_ranking.py DPTRAIN [--cases lab,slow-link,...] [--reps 3] [--steps 60]   (root for "real")
       strategy_ranking.py DPTRAIN --rescore LOG [LOG...]   (predict again, score against logged runs)
       either with --noise SIGMA: the simulator's per-operation noise (plan --compare --noise)
"""
import argparse
import json
import os
import re
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


def measure_links(dptrain, name, base, work, launch_in):
    """A real cluster's links, measured once by `profile --links`: the job's overrides with its cluster file
    (its nodes and links, for the prediction and the runs)."""
    links = f"{work}/{name}.links.toml"
    p = launch_in([dptrain, "profile", "--links", *base, "--out", links])
    if p.returncode:
        sys.exit(f"{name}: profile --links failed: {p.stderr.strip()}")
    return base + sets(f"cluster.file={links}")


def predict(dptrain, name, base, profile, env, noise=None):
    """One prediction from a layer profile written now: (rows of `plan --compare --json`, the simulator's
    samples/s per candidate at the job's own ranks, from `--compare --workers`, at `noise` if given)."""
    p = run([dptrain, "profile", "--layers", *base, "--out", profile], env=env)
    if p.returncode:
        sys.exit(f"{name}: profile --layers failed: {p.stderr.strip()}")
    c = run([dptrain, "plan", *base, "--profile", profile, "--compare", "--json"], env=env)
    if c.returncode not in (0, 1):
        sys.exit(f"{name}: plan --compare failed: {c.stderr.strip()}")
    rows = json.loads(c.stdout)["rows"]
    ranks = next(int(x.split("=")[1]) for x in reversed(base) if x.startswith("launch.ranks="))
    s = run([dptrain, "plan", *base, "--profile", profile, "--compare", "--workers", str(ranks), "--json"]
          + (["--noise", str(noise)] if noise is not None else []), env=env)
    simulated = {}
    if s.returncode in (0, 1):
        simulated = {q["strategy"]: q["simulated_samples_per_s"] for q in json.loads(s.stdout)["points"]
                     if q["planned"] and q["simulated_samples_per_s"] > 0}
    return rows, simulated


def median_prediction(predictions):
    """Per candidate the median over the predictions (each from its own profile) of the model's and the
    simulator's samples/s; the rows of the first (candidates, their overrides, whether they fit)."""
    rows = predictions[0][0]
    model, simulated = {}, {}
    for r in rows:
        if r["planned"] and r["fits"]:
            got = [x["samples_per_s"] for rs, _ in predictions for x in rs
                   if x["name"] == r["name"] and x["planned"] and x["fits"]]
            model[r["name"]] = statistics.median(got)
        sims = [sim[r["name"]] for _, sim in predictions if r["name"] in sim]
        if sims:
            simulated[r["name"]] = statistics.median(sims)
    return rows, model, simulated


def measure(dptrain, name, base, rows, reps, work, launch, profile_for):
    """Every candidate run `reps` times, interleaved: (samples/s per candidate, the failures' lines).
    `profile_for(rep)`: the layer profile of that repetition (a pipeline plans from it)."""
    sets_of = {r["name"]: r["sets"] for r in rows}
    measured = {n: [] for n in sets_of}
    failed = {}
    order = list(sets_of)
    for rep in range(reps):
        profile = profile_for(rep)
        for n in order[rep % len(order):] + order[:rep % len(order)]:
            out = f"{work}/{name}.{len(measured[n])}.{order.index(n)}"
            # A pipeline (and every group of CGP of pipelines) plans from the profile the prediction read.
            extra = sets(*sets_of[n]) + (sets("parallel.pipeline.profile=" + profile)
                                         if "pipeline" in n else [])
            r = launch([dptrain, "run", *base, *extra, "--out", out, "--force"])
            if r.returncode:
                said = r.stderr.strip().splitlines() or ["?"]
                cause = [x for x in said if "error" in x.lower() and x != said[-1]][:1]
                failed[n] = " | ".join(cause + said[-1:])
                continue
            measured[n].append(steady_samples_per_s(out))
            shutil.rmtree(out, ignore_errors=True)
    return measured, failed


def logged(paths):
    """The measured runs of earlier logs of this script: case -> (candidate -> [min, median, max], failed)."""
    cases, case = {}, None
    for path in paths:
        for line in open(path):
            m = re.match(r"## (\S+): ", line)
            if m:
                case = m.group(1)
                cases[case] = ({}, {})
                continue
            m = re.match(r"\| (.+?) \| [^|]+ \| (\d+) \((\d+)-(\d+)\) \|", line)
            if case and m:
                cases[case][0][m.group(1)] = [float(m.group(3)), float(m.group(2)), float(m.group(4))]
                continue
            m = re.match(r"\| (.+?) \| [^|]+ \| (?:failed cleanly|MISS: failed): (.+?) \| - \|", line)
            if case and m:
                cases[case][1][m.group(1)] = m.group(2)
    return cases


class Score:
    """Kendall tau summed over the cases, the lowest per case, the errors of the model and the simulator."""

    def __init__(self):
        self.c = self.d = self.apart_c = self.apart_d = self.within = 0
        self.taus, self.errors, self.sim_errors = [], [], []

    def case(self, name, what, rows, predicted, simulated, measured, failed, reps):
        winner = max(predicted, key=predicted.get) if predicted else None
        med = {n: statistics.median(v) for n, v in measured.items() if v}
        lines = [f"\n## {name}: {what}\n\n| strategy | predicted samples/s | measured (median of {reps}; min-max) | "
                 "error | simulated | its error in step time |\n|---|---:|---:|---:|---:|---:|"]
        for r in sorted(rows, key=lambda r: -predicted.get(r["name"], -1.0)):
            n = r["name"]
            if n in med and n in predicted:
                err = predicted[n] / med[n] - 1
                self.errors.append(abs(err))
                sim = "-", "-"
                if n in simulated:
                    step_err = med[n] / simulated[n] - 1  # simulated step time against measured
                    self.sim_errors.append((abs(step_err), f"{name}: {n}"))
                    sim = f"{simulated[n]:.0f}", f"{step_err:+.1%}"
                lines.append(f"| {n} | {predicted[n]:.0f} | {med[n]:.0f} ({min(measured[n]):.0f}-"
                             f"{max(measured[n]):.0f}) | {err:+.1%} | {sim[0]} | {sim[1]} |")
            elif n in predicted:
                lines.append(f"| {n} | {predicted[n]:.0f} | MISS: failed: {failed.get(n, '?')} | - | - | - |")
            else:
                clean = n in failed
                lines.append(f"| {n} | does not fit | {'failed cleanly' if clean else 'ran'}"
                             f"{(': ' + failed[n]) if clean else ''} | - | - | - |")
        both = {n: predicted[n] for n in predicted if n in med}
        tau, conc, disc = kendall(both, {n: med[n] for n in both})
        _, sep_c, sep_d = kendall(both, {n: med[n] for n in both},
                                  {n: (min(measured[n]), max(measured[n])) for n in both})
        self.c, self.d = self.c + conc, self.d + disc
        self.apart_c, self.apart_d = self.apart_c + sep_c, self.apart_d + sep_d
        self.taus.append((tau, name))
        best = max(med, key=med.get) if med else None
        within = winner in med and med[winner] >= 0.9 * med[best]
        self.within += within
        lines.append(f"\nKendall tau {tau:+.2f} ({conc} concordant, {disc} discordant pairs; of the pairs whose "
                     f"runs do not overlap: {sep_c} concordant, {sep_d} discordant); predicted "
                     f"winner {winner}: {med.get(winner, float('nan')):.0f} samples/s, measured best {best}: "
                     f"{med.get(best, float('nan')):.0f} ({'within' if within else 'NOT within'} 10%)")
        print("\n".join(lines), flush=True)

    def summary(self):
        if not self.taus or not self.errors:
            return "nothing measured"
        pairs = self.c + self.d
        out = (f"\nover {len(self.taus)} case(s): Kendall tau {(self.c - self.d) / max(1, pairs):+.2f} ({self.c} "
               f"concordant, {self.d} discordant pairs); lowest per case {min(self.taus)[0]:+.2f} "
               f"({min(self.taus)[1]}); median absolute error {statistics.median(self.errors):.1%}; chosen within "
               f"10% of the best in {self.within} of {len(self.taus)}; over the pairs whose runs do not overlap: "
               f"tau {(self.apart_c - self.apart_d) / max(1, self.apart_c + self.apart_d):+.2f} "
               f"({self.apart_c} concordant, {self.apart_d} discordant)")
        if self.sim_errors:
            worst = max(self.sim_errors)
            inside = sum(e <= 0.15 for e, _ in self.sim_errors)
            out += (f"\nthe simulator's step time against the measured: within 15% for {inside} of "
                    f"{len(self.sim_errors)} candidates, median absolute error "
                    f"{statistics.median(e for e, _ in self.sim_errors):.1%}, worst {worst[0]:.1%} ({worst[1]})")
        return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dptrain")
    ap.add_argument("--cases", default=None, help="comma-separated (default: every case, or the logs' cases)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--rescore", nargs="+", metavar="LOG",
                    help="run nothing: predict (and simulate) again with DPTRAIN, from --reps profiles "
                         "written now, and score against the measurements these earlier logs of this "
                         "script hold (a model's change does not change what runs measure)")
    ap.add_argument("--noise", type=float, default=None, metavar="SIGMA",
                    help="the simulator's per-operation noise (plan --compare --noise; default: plan's)")
    a = ap.parse_args()
    os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")  # the cluster's launcher too
    env = dict(os.environ)
    earlier = logged(a.rescore) if a.rescore else {}
    names = a.cases.split(",") if a.cases else list(earlier) if a.rescore else list(CASES)
    work = tempfile.mkdtemp(prefix="strategy-ranking.")
    score = Score()
    cluster = None  # the namespace cluster of a case run over real links
    try:
        for name in names:
            job, what, *more = CASES[name]
            opts = more[0] if more else {}
            steps = opts.get("steps", a.steps)
            base = job + sets(f"train.steps={steps}", "train.eval_every=0", "checkpoint.enabled=false",
                              "log.progress=plain", f"log.every={max(1, steps // 4)}")
            launch, launch_in = (lambda cmd: run(cmd, env=env)), None  # noqa: E731
            if "real" in opts:
                cluster = real_cluster(work, name, opts["real"])
                hostfile = sets(f"launch.hostfile={cluster['state']}/hostfile")
                launch = launch_in = lambda cmd: netns_cluster.in_launcher(cluster, cmd + hostfile)  # noqa: E731
                base = measure_links(a.dptrain, name, base, work, launch_in)
            # A profile, and the prediction from it, before every repetition (the runs' machine drifts):
            # the prediction is their median.
            predictions, profiles = [], []

            def profile_for(rep):
                profiles.append(f"{work}/{name}.profile.{rep}.toml")
                predictions.append(predict(a.dptrain, name, base, profiles[-1], env, a.noise))
                return profiles[-1]

            profile_for(0)
            if a.rescore:
                if name not in earlier:
                    sys.exit(f"{name}: no measurements of this case in {' '.join(a.rescore)}")
                for rep in range(1, a.reps):
                    profile_for(rep)
                # min, median, max stand for the runs: their median and range are what the score reads.
                measured, failed = earlier[name]
                reps = "the logged runs"
            else:
                measured, failed = measure(a.dptrain, name, base, predictions[0][0], a.reps, work, launch,
                                           lambda rep: profiles[0] if rep == 0 else profile_for(rep))
                reps = a.reps
            rows, predicted, simulated = median_prediction(predictions)
            score.case(name, what, rows, predicted, simulated, measured, failed, reps)
            if cluster:
                netns_cluster.down(cluster["name"])
                cluster = None
        print(score.summary())
    finally:
        if cluster:
            netns_cluster.down(cluster["name"])
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
