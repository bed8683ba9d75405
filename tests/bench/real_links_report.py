#!/usr/bin/env python3
"""The report of tests/bench/real_links.sh: per case, real links beside emulated ones, min / median over
the repetitions, each headline ratio and each cost model's prediction against the measurement.
Usage: real_links_report.py WORK_FOLDER REPS"""
import glob, json, os, re, statistics, sys

work, reps = sys.argv[1], int(sys.argv[2])
MODES = ("real", "emu")


def records(run):
    return [json.loads(l) for l in open(f"{work}/{run}/metrics.jsonl")]


def step_ms(run):
    """Median step time in ms over the steps after the first 10 (every step logged; all ranks' samples)."""
    by_step = {}
    for r in records(run):
        if r.get("kind") == "train" and r["step"] > 10:
            by_step.setdefault(r["step"], []).append(r)
    return statistics.median(1000.0 * sum(r["local_batch"] for r in rows) / rows[0]["samples_per_sec"]
                             for rows in by_step.values())


def seconds_to(run, target):
    for r in records(run):
        if r.get("kind") == "eval" and r["test_accuracy"] >= target:
            return r["train_seconds"]
    return float("inf")


def pipeline_line(run):
    return [r for r in records(run) if r.get("kind") == "pipeline"][-1]


def mm(xs, f="{:.1f}"):
    return f"{f.format(min(xs))} / {f.format(statistics.median(xs))}"


def runs(case, mode):
    return [f"{case}.{mode}.{i}" for i in range(1, reps + 1)]


def has(case):
    return os.path.isdir(f"{work}/{case}.real.1")


def err(pred, meas):
    return f"{100 * (pred / meas - 1):+.1f}%"


def against_baseline(case, base, variant, labels, speedup):
    """Per mode: the two variants' step ms, the variant's speedup, estimate's step beside each."""
    for mode in MODES:
        t = {v: [step_ms(r) for r in runs(f"{case}.{v}", mode)] for v in (base, variant)}
        sp = [a / b for a, b in zip(t[base], t[variant])]
        est = {v: 1000 * float(open(f"{work}/{case}.{v}.estimate").read()) for v in (base, variant)}
        print(f"  {mode:4}  {labels[0]} {mm(t[base])}  {labels[1]} {mm(t[variant])}  {speedup} {mm(sp, '{:.2f}')}x   "
              + ", ".join(f"estimate {v} {est[v]:.1f} ({err(est[v], statistics.median(t[v]))})" for v in (base, variant)))


for gbps in ("1", "10"):
    if has(f"mra.{gbps}.native"):
        print(f"mra: comm_heavy, 2 nodes at {gbps} Gbit/s: step ms (min / median over {reps}); estimate's step")
        against_baseline(f"mra.{gbps}", "native", "mra", ("native", "mra"), "MRA speedup")

if has("idat.equal"):
    print("idat: comm_heavy batch 32, 2 nodes at 10 Gbit/s, rank 1 at half speed: step ms; estimate's step")
    against_baseline("idat", "equal", "idat", ("equal shares, plain", "I-DAT + MRA"), "speedup")

if has("cgp.cgp"):
    print("cgp: two nodes of three ranks joined by 1 Gbit/s: train seconds to test accuracy 0.80, final accuracy;"
          " CGP's predicted samples/s against the run's")
    for mode in MODES:
        sync = [seconds_to(r, 0.80) for r in runs("cgp.sync-mra-idat", mode)]
        cgp = [seconds_to(r, 0.80) for r in runs("cgp.cgp", mode)]
        sp = [a / b for a, b in zip(sync, cgp)]
        acc = {v: statistics.median(json.load(open(f"{work}/{r}/summary.json"))["test_accuracy"]
                                    for r in runs(f"cgp.{v}", mode)) for v in ("sync-mra-idat", "cgp")}
        errs, groups = [], ""
        for r in runs("cgp.cgp", mode):
            log = open(f"{work}/{r}.log").read()
            m = re.search(r"predicted (\d+) samples/s", log)
            g = re.search(r"CGP: groups (.*?) \(", log)
            groups = g.group(1) if g else "?"
            meas = json.load(open(f"{work}/{r}/summary.json"))["samples_per_sec"]
            if m:
                errs.append(float(m.group(1)) / meas - 1)
        print(f"  {mode:4}  sync MRA + I-DAT {mm(sync)} s (accuracy {acc['sync-mra-idat']:.4f})  CGP {mm(cgp)} s "
              f"(accuracy {acc['cgp']:.4f})  CGP speedup {mm(sp, '{:.2f}')}x   groups {groups}; CGP model error "
              + (f"{100 * min(errs):+.1f}..{100 * max(errs):+.1f}%" if errs else "n/a"))

if has("pipeline.planner"):
    print("pipeline: GPT on two nodes of two joined by 0.5 Gbit/s: mini-batch ms measured; the plan's prediction")
    for mode in MODES:
        line = {v: [pipeline_line(r) for r in runs(f"pipeline.{v}", mode)] for v in ("planner", "naive")}
        meas = {v: [l["measured"]["minibatch_ms"] for l in ls] for v, ls in line.items()}
        pred = {v: statistics.median(l["predicted"]["minibatch_ms"] for l in ls) for v, ls in line.items()}
        sp = [a / b for a, b in zip(meas["naive"], meas["planner"])]
        stages = " ".join(f"{s['blocks'][0]}-{s['blocks'][1]}@{'+'.join(map(str, s['ranks']))}"
                          for s in line["planner"][0]["stages"])
        print(f"  {mode:4}  planner {mm(meas['planner'])} (predicted {pred['planner']:.1f}, "
              f"{err(pred['planner'], statistics.median(meas['planner']))})  naive {mm(meas['naive'])} (predicted "
              f"{pred['naive']:.1f}, {err(pred['naive'], statistics.median(meas['naive']))})  planner's speedup "
              f"{mm(sp, '{:.2f}')}x   plan {stages}")
