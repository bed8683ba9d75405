#!/usr/bin/env python3
"""Fault injection for `dptrain run` (issue 16): faults at random moments of a 4-rank job, per strategy.

  kill:   SIGKILL to a random rank. The launcher must end within a bounded time with status 137, mpirun
          naming the rank and its host, and dptrain's line naming the newest checkpoint (or none) with
          the command to continue; resuming (or, without a checkpoint, starting again) must finish.
  signal: SIGTERM, SIGINT, SIGHUP, SIGUSR1 or SIGUSR2 to the launcher or to a random rank. The run must
          stop at a step boundary, write that step's checkpoint and stopped.json, and the launcher exit
          with 128 + the signal and the line naming the checkpoint; no process of the job may be left.

Every interrupted run is finished by resuming, then compared with an uninterrupted run of the same job:
for the synchronous strategies (data with MRA, I-DAT, pipeline) every logged step's loss and the final
test loss and accuracy must be the same numbers; for CGP (asynchronous between groups) the final test
accuracy within --cgp-tolerance. It reports, per strategy, the faults injected, how long the job took to
end after each, and the work each kill lost (training steps past the newest checkpoint).

Usage: faults.py DPTRAIN [--strategies data,idat,cgp,pipeline] [--kills N] [--signals N] [--seed S]
The CTest runs one of each per strategy; tests/bench/faults.sh runs 20 kills per strategy.
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

JOB = """\
[job]
name = "faults"
seed = 5
[model]
hidden = [128, 128]
[data]
dataset = "synthetic"
train_samples = 4096
[train]
steps = {steps}
global_batch = 64
threads = 1
[checkpoint]
every = {every}
keep = 2
[log]
every = 1
progress = "none"
trace = false
[launch]
ranks = 4
"""

STRATEGIES = {
    "data": [],  # MRA (the default algorithm), equal shares
    "idat": ["parallel.balance.mode=idat", "parallel.balance.every=4", "cluster.emulate.slowdown=[1,1,2,2]"],
    "cgp": ["parallel.strategy=cgp", "parallel.cgp.groups=[0,0,1,1]"],
    # One rank per stage: replicas would share each micro-batch by measured speeds, as I-DAT does.
    "pipeline": ["parallel.strategy=pipeline", "model.hidden=[128, 128, 128]", 'parallel.pipeline.stages="0,1,2,3"',
                 "parallel.pipeline.micro_batches=4"],
}
STOP_SIGNALS = [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2]
END_LIMIT_S = 60  # a job that has not ended this long after a fault hangs


class Failure(Exception):
    pass


def run_dir_processes(out):
    """pid -> (rank or None, argv0) of every process whose command line names `--out out`."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            if f"--out\0{out}".encode() not in b"\0".join(argv):
                continue
            rank = None
            with open(f"/proc/{pid}/environ", "rb") as f:
                for entry in f.read().split(b"\0"):
                    if entry.startswith(b"OMPI_COMM_WORLD_RANK="):
                        rank = int(entry.split(b"=", 1)[1])
            found[int(pid)] = (rank, os.path.basename(argv[0].decode()))
        except (OSError, ValueError):
            continue
    return found


def metrics(out):
    """(train losses by step as JSON text of rank 0's lines, highest step logged)."""
    losses, top = {}, 0
    try:
        with open(f"{out}/metrics.jsonl") as f:
            for line in f:
                if '"kind":"train"' not in line or not line.endswith("\n"):
                    continue
                step = int(re.search(r'"step":(\d+)', line).group(1))
                top = max(top, step)
                if '"rank":0,' in line:
                    losses[step] = re.search(r'"loss":([^,}]+)', line).group(1)
    except OSError:
        pass
    return losses, top


def newest_checkpoint_step(out):
    steps = [int(m.group(1)) for f in os.listdir(f"{out}/checkpoints") if (m := re.match(r"step-(\d+)\.ckpt$", f))] \
        if os.path.isdir(f"{out}/checkpoints") else []
    return max(steps, default=0)


class Runner:
    def __init__(self, dptrain, tmp, strategy, steps, every):
        self.dptrain, self.tmp, self.strategy = dptrain, tmp, strategy
        self.job = f"{tmp}/{strategy}.toml"
        with open(self.job, "w") as f:
            f.write(JOB.format(steps=steps, every=every))
        self.sets = [a for s in STRATEGIES[strategy] for a in ("--set", s)]

    def start(self, out, resume=False):
        log = open(f"{out}.log", "a")
        args = [self.dptrain, "run", self.job, "--out", out] + self.sets + (["--resume"] if resume else ["--force"])
        return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)

    def finish(self, out, resume):
        p = self.start(out, resume)
        try:
            status = p.wait(timeout=600)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            raise Failure(f"{out}: the run did not finish in 600 s")
        if status != 0:
            raise Failure(f"{out}: {'resume' if resume else 'run'} failed with status {status}: {tail(out)}")


def tail(out, n=3):
    try:
        with open(f"{out}.log") as f:
            return " | ".join(f.read().strip().splitlines()[-n:])
    except OSError:
        return ""


def wait_end(p, out):
    """The launcher's status and seconds to end; fails when it or any process of the job is left."""
    t0 = time.monotonic()
    try:
        status = p.wait(timeout=END_LIMIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        for pid in run_dir_processes(out):
            os.kill(pid, signal.SIGKILL)
        raise Failure(f"{out}: the job had not ended {END_LIMIT_S} s after the fault (hang): {tail(out)}")
    took = time.monotonic() - t0
    deadline = time.monotonic() + 5
    while (left := run_dir_processes(out)) and time.monotonic() < deadline:
        time.sleep(0.1)
    if left:
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        raise Failure(f"{out}: processes left after the launcher ended: {left}")
    return status, took


def inject(runner, out, kind, rng, duration):
    """Starts the job, injects one fault at a random moment; returns a record of what happened, or None
    when the run finished before the fault landed."""
    p = runner.start(out)
    # A random moment of training (startup included for kills: the ranks exist once mpirun started them).
    delay = rng.uniform(0.1, 0.9) * duration
    t0 = time.monotonic()
    ranks = {}
    # Signals ask for a checkpoint of the step reached: they are sent once training has begun.
    while time.monotonic() - t0 < delay or not ranks or (kind == "signal" and metrics(out)[1] == 0):
        if p.poll() is not None:
            return None
        ranks = {r: pid for pid, (r, _) in run_dir_processes(out).items() if r is not None}
        if len(ranks) < 4:
            ranks = {}
        time.sleep(0.02)
    _, reached = metrics(out)
    ckpt = newest_checkpoint_step(out)
    rank = rng.randrange(4)
    if kind == "kill":
        target, sig, pid = f"rank {rank}", signal.SIGKILL, ranks[rank]
    else:
        sig = rng.choice(STOP_SIGNALS)
        to_launcher = rng.random() < 0.5
        target = "the launcher" if to_launcher else f"rank {rank}"
        pid = p.pid if to_launcher else ranks[rank]
    try:
        os.kill(pid, sig)
    except ProcessLookupError:  # the rank had just ended: the run finished before the fault landed
        wait_end(p, out)
        return None
    status, took = wait_end(p, out)
    log = open(f"{out}.log").read()
    if status == 0 and os.path.exists(f"{out}/summary.json"):
        return None  # the run had finished (a signal after the last step included: the launcher says so)
    record = {"kind": kind, "signal": signal.Signals(sig).name, "target": target, "status": status,
              "end_s": took, "reached": reached, "checkpoint": ckpt}
    if kind == "kill":
        if status != 137:
            raise Failure(f"{out}: SIGKILL to {target}: status {status}, expected 137: {tail(out)}")
        if not re.search(rf"process rank {rank} with PID \d+ on node \S+ exited on signal 9", log):
            raise Failure(f"{out}: mpirun did not name rank {rank} and its host: {tail(out, 8)}")
        ckpt = newest_checkpoint_step(out)
        want = (rf"dptrain: the run ended: a process was killed by SIGKILL; its newest checkpoint is "
                rf"\S+step-0*{ckpt}\.ckpt: continue with --resume --out {re.escape(out)}" if ckpt else
                r"dptrain: the run ended: a process was killed by SIGKILL; it wrote no checkpoint")
        if not re.search(want, log):
            raise Failure(f"{out}: SIGKILL to {target}: no line naming checkpoint {ckpt}: {tail(out)}")
        record["lost_steps"] = max(0, reached - ckpt)
    else:
        stopped = json.load(open(f"{out}/stopped.json")) if os.path.exists(f"{out}/stopped.json") else None
        if status != 128 + sig:
            raise Failure(f"{out}: {signal.Signals(sig).name} to {target}: status {status}, expected {128 + sig}: "
                          f"{tail(out)}")
        if not stopped or newest_checkpoint_step(out) != stopped["step"]:
            raise Failure(f"{out}: {signal.Signals(sig).name} to {target}: no checkpoint of the step it stopped "
                          f"after ({stopped}): {tail(out)}")
        want = (rf"dptrain: the run stopped on {signal.Signals(sig).name} after step {stopped['step']}; it wrote "
                rf"\S+step-0*{stopped['step']}\.ckpt: continue with --resume --out {re.escape(out)}")
        if not re.search(want, log):
            raise Failure(f"{out}: no line naming the stop's checkpoint: {tail(out)}")
        record["stopped_after"] = stopped["step"]
        record["lost_steps"] = 0
    # Continue: resume from the checkpoint, or start again without one.
    runner.finish(out, resume=newest_checkpoint_step(out) > 0)
    return record


def compare(strategy, ref, out, tolerance):
    a = json.load(open(f"{ref}/summary.json"))
    b = json.load(open(f"{out}/summary.json"))
    if strategy == "cgp":  # asynchronous between groups: the order of updates differs from run to run
        if abs(a["test_accuracy"] - b["test_accuracy"]) > tolerance:
            raise Failure(f"{out}: test accuracy {b['test_accuracy']:.4f}, uninterrupted {a['test_accuracy']:.4f}")
        return f"accuracy {b['test_accuracy']:.4f} vs {a['test_accuracy']:.4f}"
    la, _ = metrics(ref)
    lb, _ = metrics(out)
    if strategy == "idat":
        # I-DAT divides each batch by measured speeds, which differ from run to run (between uninterrupted
        # runs too), and so do the sums' roundings, which training then amplifies: only the end is compared.
        if abs(a["test_loss"] - b["test_loss"]) > 0.02 * a["test_loss"] or \
                abs(a["test_accuracy"] - b["test_accuracy"]) > tolerance:
            raise Failure(f"{out}: test loss {b['test_loss']:.4f} accuracy {b['test_accuracy']:.4f}, uninterrupted "
                          f"{a['test_loss']:.4f} {a['test_accuracy']:.4f}")
        return f"accuracy {b['test_accuracy']:.4f} vs {a['test_accuracy']:.4f}, test loss {b['test_loss']:.4f} " \
               f"vs {a['test_loss']:.4f}"
    if la != lb:
        diff = [s for s in sorted(la) if la.get(s) != lb.get(s)][:3]
        raise Failure(f"{out}: losses differ from the uninterrupted run at steps {diff}: "
                      f"{[(lb.get(s), la.get(s)) for s in diff]}")
    for key in ("test_loss", "test_accuracy"):
        if a[key] != b[key]:
            raise Failure(f"{out}: {key} {b[key]} != uninterrupted {a[key]}")
    return f"all {len(la)} losses and the test loss identical"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dptrain")
    ap.add_argument("--strategies", default="data,idat,cgp,pipeline")
    ap.add_argument("--kills", type=int, default=1)
    ap.add_argument("--signals", type=int, default=1)
    ap.add_argument("--steps", type=int, default=4096)
    ap.add_argument("--every", type=int, default=128, help="steps between checkpoints")
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--cgp-tolerance", type=float, default=0.03)
    args = ap.parse_args()
    dptrain = os.path.realpath(args.dptrain)
    rng = random.Random(args.seed)
    tmp = tempfile.mkdtemp(prefix="dptrain-faults.")
    print(f"# seed {args.seed}; {args.kills} kill(s) and {args.signals} signal(s) per strategy; {tmp}")
    failures = 0
    try:
        for strategy in args.strategies.split(","):
            runner = Runner(dptrain, tmp, strategy, args.steps, args.every)
            ref = f"{tmp}/{strategy}-ref"
            t0 = time.monotonic()
            runner.finish(ref, resume=False)
            duration = time.monotonic() - t0
            records = []
            for kind, count in (("kill", args.kills), ("signal", args.signals)):
                done = tries = 0
                while done < count and tries < 3 * count:
                    tries += 1
                    out = f"{tmp}/{strategy}-{kind}-{tries}"
                    try:
                        record = inject(runner, out, kind, rng, duration)
                        if record is None:
                            continue
                        record["same"] = compare(strategy, ref, out, args.cgp_tolerance)
                        records.append(record)
                        done += 1
                        shutil.rmtree(out, ignore_errors=True)
                    except Failure as e:
                        failures += 1
                        print(f"not ok - {strategy}: {e}")
                        done += 1
            for r in records:
                where = f"after step {r['stopped_after']}" if "stopped_after" in r else \
                    f"at step {r['reached']}, newest checkpoint {r['checkpoint']}, lost {r['lost_steps']} step(s)"
                print(f"ok - {strategy}: {r['signal']} to {r['target']} {where}: exit {r['status']} "
                      f"{r['end_s']:.2f} s later; resumed: {r['same']}")
            kills = [r for r in records if r["kind"] == "kill"]
            sigs = [r for r in records if r["kind"] == "signal"]
            print(f"# {strategy}: uninterrupted {duration:.1f} s; {len(kills)} kill(s), ended within "
                  f"{max((r['end_s'] for r in kills), default=0):.2f} s, lost at most "
                  f"{max((r['lost_steps'] for r in kills), default=0)} step(s) (checkpoints every {args.every}); "
                  f"{len(sigs)} signal(s), ended within {max((r['end_s'] for r in sigs), default=0):.2f} s, "
                  f"lost 0 steps")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"# {'all passed' if failures == 0 else f'{failures} failure(s)'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
