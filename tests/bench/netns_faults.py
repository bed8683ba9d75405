#!/usr/bin/env python3
"""Faults on the wire of a real 3-node cluster, injected at random, under each strategy (issue 28).

One cluster of network namespaces (tests/cluster/netns_cluster.py: nodes at 5, 2.5 and 1 Gbit/s, an sshd
each), then per strategy an uninterrupted run (its wall time T0 and final accuracy) and, per fault kind,
INJECTIONS runs of the same job with [launch] wait_timeout = 20 and max_restarts = 1, each with one fault
injected on a random node at a random moment in [0.15, 0.75] x T0 (tests/cluster/netns_faults.py):
  cut       the node's link down for good          cut-5s   down for 5 s, then up
  loss1     1% of the node's packets dropped       loss10   10% dropped (for the rest of the run)
  kill      the node's dptrain processes killed    freeze   its dptrain processes stopped (SIGSTOP)
Per run: how it ended (rode it out / restarted / ended), seconds from the fault to the launcher's
restart line (or to the end), the time lost to the fault (after a restart: from the fault until training
is back at the step it had reached, so detection, restart and the steps done again; otherwise the wall time
against T0), the wall time against T0, processes left on any node (checked before the fault is undone, and
no sooner than the run's end: a node cut off ends its own ranks, so they get until 1.25 x wait_timeout + 15 s
after the fault), the data accounting across the restart (tests/cluster/accounting.py: every sample once per
completed epoch), and the final test accuracy against the median of BASELINES uninterrupted runs (their
spread is printed: CGP is asynchronous, so two uninterrupted runs differ).
A benchmark: it prints a table and the per-run lines and asserts nothing.

  netns_faults.py DPTRAIN [--injections 10] [--kinds cut,cut-5s,loss1,loss10,kill,freeze]
                          [--strategies data,cgp,pipeline] [--seed 1] [--steps 469] [--nodes node0,...]
                          [--baselines 3]
  netns_faults.py DPTRAIN --table LOG [LOG...]    the table of earlier runs' logs (parts of one campaign)
"""
import argparse, json, os, random, re, signal, statistics, subprocess, sys, tempfile, threading, time

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
sys.path.insert(0, os.path.join(root, "tests", "cluster"))
import netns_cluster  # noqa: E402

FAULTS = os.path.join(root, "tests", "cluster", "netns_faults.py")
ACCOUNTING = os.path.join(root, "tests", "cluster", "accounting.py")
TRAIN_SAMPLES = 60000  # Fashion-MNIST's training split
WAIT_TIMEOUT = 20
LEFT_GRACE = 1.25 * WAIT_TIMEOUT + 15  # after a fault, by when every process on the nodes must be gone
CLUSTER = """[launch]
ranks = 3
[cluster]
ranks_per_node = 1
[cluster.links]
gbps = [0, 5, 2.5,  5, 0, 1,  2.5, 1, 0]
"""
STEP_LINE = re.compile(r"step (\d+)/\d+ ")
STRATEGY_SETS = {"data": [], "cgp": ["parallel.strategy=cgp"], "pipeline": ["parallel.strategy=pipeline"]}


def fault(kind, name, node):
    """Starts the fault; returns the process that undoes it (cut-5s) or None, and what the fault tool said
    it did (a kill or freeze: how many dptrain processes it found on the node)."""
    args = {"cut": ["cut", name, node], "cut-5s": ["cut", name, node, "--for", "5"],
            "loss1": ["loss", name, node, "0.01"], "loss10": ["loss", name, node, "0.1"],
            "kill": ["kill", name, node], "freeze": ["freeze", name, node]}[kind]
    p = subprocess.Popen([sys.executable, FAULTS, *args], stdout=subprocess.PIPE, text=True)
    if kind != "cut-5s":
        return None, p.communicate()[0].strip()
    return p, ""


def repair(name, st):
    for node in st["nodes"]:
        subprocess.run(["ip", "-n", node["ns"], "link", "set", "eth0", "up"], capture_output=True)
        subprocess.run([sys.executable, FAULTS, "loss", name, node["host"], "0"], capture_output=True)


def run(dptrain, st, out, sets, inject=None):
    """One run on the cluster; inject = (seconds, callable).
    Returns wall, rc, stamped stderr lines, fault time, stamped steps [(seconds, step)] from the progress lines."""
    cmd = [dptrain, "run", os.path.join(root, "configs", "quickstart.toml"), "--out", out, "--force"]
    for s in sets:
        cmd += ["--set", s]
    cmd += ["--set", f"launch.hostfile={st['state']}/hostfile"]
    env = {**os.environ, **st["env"]}
    start = time.time()
    p = subprocess.Popen(["ip", "netns", "exec", st["launcher"]["ns"], "unshare", "--uts", "--", "sh", "-c",
                          'hostname launcher && exec "$@"', "sh", *cmd], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    lines, steps = [], []

    def read_steps():
        for line in p.stdout:
            m = STEP_LINE.match(line)
            if m:
                steps.append((time.time() - start, int(m.group(1))))
    readers = [threading.Thread(target=lambda: [lines.append((time.time() - start, l.rstrip())) for l in p.stderr]),
               threading.Thread(target=read_steps)]
    for r in readers:
        r.start()
    at = None
    if inject:
        while p.poll() is None and time.time() - start < inject[0]:
            time.sleep(0.05)
        if p.poll() is None:
            at = time.time() - start
            inject[1]()
    try:
        p.wait(timeout=900)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    for r in readers:
        r.join()
    return time.time() - start, p.returncode, lines, at, steps


def leftovers_after(st, at, wall):
    """The processes left on the nodes once a cut-off node's own watchdog has had its time: a node the
    launcher cannot reach ends its ranks itself ([launch] wait_timeout after their last progress, a
    quarter more for ranks other than 0) and its orted follows; polled until none is left or until
    LEFT_GRACE s after the fault (`at`, seconds into a run of `wall` s, which has just ended)."""
    deadline = time.time() + ((at + LEFT_GRACE - wall) if at is not None else 0)
    while True:
        left = netns_cluster.leftovers(st)
        if not left or time.time() >= deadline:
            return left
        time.sleep(0.5)


def back_at_step(steps, at, restarted_at):
    """Seconds from the fault until a step line after the restart reaches the step last printed before it."""
    before = [s for t, s in steps if t <= at]
    reached = before[-1] if before else 0
    back = [t for t, s in steps if t > restarted_at and s >= reached]
    return back[0] - at if back else float("nan")


def accuracy(out):
    try:
        return json.load(open(f"{out}/summary.json"))["test_accuracy"]
    except (OSError, KeyError, ValueError):
        return float("nan")


RUN_LINE = re.compile(r"^(\S+)\s+(\S+)\s+(\S+) at\s+(\S+) s: ([^;]+); (?:fault to restart/end (\S+) s; )?lost (\S+) s; "
                      r"wall (\S+) s; left (\d+); accounting (\S+); accuracy (\S+)")


def rows_of_logs(paths):
    """The per-run lines of earlier campaigns' logs, as rows (to put several parts into one table)."""
    rows = []
    for path in paths:
        for line in open(path):
            m = RUN_LINE.match(line)
            if not m:
                continue
            strategy, kind, node, at, how, detect, lost, slower, left, acct, acc = m.groups()
            rc = 0 if how in ("restarted", "rode it out") else int(re.search(r"exit (\d+)", how).group(1))
            rows.append(dict(strategy=strategy, kind=kind, node=node, at=float(at), rc=rc, how=how,
                             detect=float(detect) if detect else float("nan"), lost=float(lost),
                             slower=float(slower), left=int(left), accounting=acct == "exact", acc=float(acc)))
    return rows


def print_table(rows, strategies, kinds):
    print("\nstrategy kind    runs finished restarted  fault->restart/end s (median / max)  time lost s (median / max)"
          "  wall vs uninterrupted s (median / max)  accounting exact  left  accuracy vs uninterrupted (median / worst)")
    for strategy in strategies:
        for kind in kinds:
            rs = [r for r in rows if r["strategy"] == strategy and r["kind"] == kind]
            if not rs:
                continue
            det = [r["detect"] for r in rs if r["detect"] == r["detect"]]
            lost = [r["lost"] for r in rs if r["lost"] == r["lost"]]
            slower = [r["slower"] for r in rs]
            acc = [r["acc"] for r in rs if r["acc"] == r["acc"]]
            print(f"{strategy:8} {kind:7} {len(rs):4} {sum(r['rc'] == 0 for r in rs):8} "
                  f"{sum(r['how'] == 'restarted' for r in rs):9}  "
                  + (f"{statistics.median(det):8.1f} / {max(det):5.1f}" if det else f"{'-':>16}") + "              "
                  + (f"{statistics.median(lost):7.1f} / {max(lost):5.1f}" if lost else f"{'-':>15}") + "          "
                  + f"{statistics.median(slower):7.1f} / {max(slower):5.1f}                     "
                  + f"{sum(r['accounting'] for r in rs):3} of {len(rs):<3}   {sum(r['left'] for r in rs):4}  "
                  + (f"{statistics.median(acc):+.4f} / {max(acc, key=abs):+.4f}" if acc else "-"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dptrain")
    ap.add_argument("--injections", type=int, default=10)
    ap.add_argument("--kinds", default="cut,cut-5s,loss1,loss10,kill,freeze")
    ap.add_argument("--strategies", default="data,cgp,pipeline")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--steps", type=int, default=469)
    ap.add_argument("--nodes", default="node0,node1,node2", help="the nodes a fault may hit")
    ap.add_argument("--baselines", type=int, default=3, help="uninterrupted runs per strategy")
    ap.add_argument("--at", type=float, help="every fault this many seconds into its run (default: at random, "
                                             "0.15 to 0.75 of the uninterrupted run)")
    ap.add_argument("--table", nargs="+", metavar="LOG", help="print only the table of these logs' runs")
    a = ap.parse_args()
    if a.table:
        rows = rows_of_logs(a.table)
        seen = lambda key: list(dict.fromkeys(r[key] for r in rows))  # noqa: E731
        print_table(rows, seen("strategy"), seen("kind"))
        return
    dptrain = os.path.abspath(a.dptrain)
    rng = random.Random(a.seed)
    tmp = tempfile.mkdtemp(prefix="netns-faults.")
    with open(f"{tmp}/cluster.toml", "w") as f:
        f.write(CLUSTER)
    name = f"nf{os.getpid() % 1000}"
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the cluster comes down (finally) on kill too
    netns_cluster.up(f"{tmp}/cluster.toml", name)
    st = netns_cluster.load(name)
    rows = []
    try:
        for strategy in a.strategies.split(","):
            sets = ["train.threads=1", "log.every=1", "log.progress=plain", f"train.steps={a.steps}",
                    "checkpoint.every=100", f"launch.wait_timeout={WAIT_TIMEOUT}", "launch.max_restarts=1",
                    "launch.ranks=3", *STRATEGY_SETS[strategy]]
            bases = []
            for b in range(a.baselines):
                base_out = f"{tmp}/{strategy}.base{b}"
                wall, rc, _, _, _ = run(dptrain, st, base_out, sets)
                bases.append((wall, accuracy(base_out), rc))
            t0 = statistics.median(w for w, _, _ in bases)
            acc0 = statistics.median(acc for _, acc, _ in bases)
            print(f"# {strategy}: uninterrupted, {a.baselines} runs: {t0:.1f} s median "
                  f"({', '.join(f'{w:.1f}' for w, _, _ in bases)}), exits {[rc for _, _, rc in bases]}, accuracy "
                  f"{acc0:.4f} median ({', '.join(f'{acc:.4f}' for _, acc, _ in bases)})", flush=True)
            for kind in a.kinds.split(","):
                for i in range(a.injections):
                    node = rng.choice(a.nodes.split(","))
                    when = a.at if a.at is not None else rng.uniform(0.15, 0.75) * t0
                    out = f"{tmp}/{strategy}.{kind}.{i}"
                    undo = []
                    wall, rc, lines, at, steps = run(dptrain, st, out, sets,
                                              (when, lambda: undo.append(fault(kind, name, node))))
                    left = leftovers_after(st, at, wall)
                    sockets = {host: subprocess.run(["ip", "netns", "exec", next(n["ns"] for n in st["nodes"]
                                                                                  if n["host"] == host),
                                                     "ss", "-tnoip"], capture_output=True, text=True).stdout
                               for host in sorted({h for h, _, _ in left})}
                    for u, _ in undo:
                        if u:
                            u.wait()
                    repair(name, st)
                    if left:  # a frozen process left behind: removed so that the next run starts clean
                        for _, pid, _ in left:
                            for sig in (signal.SIGCONT, signal.SIGKILL):
                                try:
                                    os.kill(pid, sig)
                                except ProcessLookupError:
                                    pass
                    restart = [(t, l) for t, l in lines if "dptrain: restart" in l]
                    after = (restart[0][0] - at) if restart and at is not None else (wall - at if at else float("nan"))
                    acct = subprocess.run([sys.executable, ACCOUNTING, out, str(TRAIN_SAMPLES)], capture_output=True,
                                          text=True)
                    how = ("restarted" if restart else "rode it out") if rc == 0 else f"ended (exit {rc})"
                    row = dict(strategy=strategy, kind=kind, node=node, at=at, wall=wall, rc=rc, how=how,
                               detect=after if restart or rc != 0 else float("nan"), slower=wall - t0,
                               lost=(back_at_step(steps, at, restart[0][0]) if restart and rc == 0 and at is not None
                                     else wall - t0), left=len(left),
                               accounting=acct.returncode == 0, acc=accuracy(out) - acc0,
                               said=" | ".join([d for _, d in undo if d] +
                                               [l for _, l in lines if "last heartbeat" in l or "dptrain: restart" in l
                                                or (rc != 0 and l is lines[-1][1])]))
                    rows.append(row)
                    detect = "" if row["detect"] != row["detect"] else f"fault to restart/end {row['detect']:.1f} s; "
                    when_s = f"{at:5.1f}" if at is not None else "  end"
                    print(f"{strategy:8} {kind:6} {node} at {when_s} s: {how}; {detect}lost {row['lost']:+.1f} s; "
                          f"wall {row['slower']:+.1f} s; "
                          f"left {row['left']}; accounting {'exact' if row['accounting'] else 'WRONG'}; "
                          f"accuracy {row['acc']:+.4f}\n    {row['said'][:600]}"
                          + "".join(f"\n    left on {host}: pid {pid} {cmd[:200]}" for host, pid, cmd in left)
                          + "".join(f"\n    TCP on {host}:\n" + text.rstrip() for host, text in sockets.items()), flush=True)
    finally:
        netns_cluster.down(name)
    print_table(rows, a.strategies.split(","), a.kinds.split(","))

if __name__ == "__main__":
    main()
