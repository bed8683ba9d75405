#!/usr/bin/env python3
"""Faults on the wire of a cluster netns_cluster.py built (issue 28), one node at a time.

  netns_faults.py cut NAME NODE [--for S]     the node's link down (for good, or for S seconds: then up)
  netns_faults.py loss NAME NODE P            drop a fraction P of the packets the node receives and sends
                                              (iptables' statistic match; P = 0 removes it)
  netns_faults.py kill NAME NODE              SIGKILL the node's dptrain processes (its sshd stays)
  netns_faults.py freeze NAME NODE [--for S]  SIGSTOP the node's dptrain processes (for S seconds: then SIGCONT)

NODE is a node's host name (node0, node1, ...). Each prints one line saying what it did and when (seconds
since the epoch), for the test's record; --for blocks until the fault is undone.
"""
import argparse, os, signal, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netns_cluster  # noqa: E402


def node_of(name, host):
    st = netns_cluster.load(name)
    if not st:
        netns_cluster.fail(f"no cluster named {name}", "netns_cluster.py up CLUSTER.toml --name NAME")
    for node in st["nodes"]:
        if node["host"] == host:
            return node
    netns_cluster.fail(f"{name} has no node {host}", "name one of " + ", ".join(n["host"] for n in st["nodes"]))


def dptrain_pids(node):
    """The node's dptrain processes (ranks and their re-executions), not its sshd or OpenMPI's daemon."""
    out = []
    for pid in netns_cluster.node_pids(node["ns"]):
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == "dptrain":
                    out.append(pid)
        except OSError:
            pass
    return out


def signal_all(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def say(what):
    print(f"{time.time():.3f} {what}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fault", choices=["cut", "loss", "kill", "freeze"])
    ap.add_argument("name")
    ap.add_argument("node")
    ap.add_argument("p", nargs="?", type=float)
    ap.add_argument("--for", dest="seconds", type=float, default=0)
    a = ap.parse_args()
    node = node_of(a.name, a.node)
    ns = node["ns"]
    if a.fault == "cut":
        netns_cluster.sh("ip", "-n", ns, "link", "set", "eth0", "down")
        say(f"cut {a.node}" + (f" for {a.seconds:g} s" if a.seconds else " for good"))
        if a.seconds:
            time.sleep(a.seconds)
            netns_cluster.sh("ip", "-n", ns, "link", "set", "eth0", "up")
            say(f"restored {a.node}")
    elif a.fault == "loss":
        if a.p is None or not 0 <= a.p < 1:
            netns_cluster.fail("loss needs a fraction P in [0, 1)", "netns_faults.py loss NAME NODE 0.01")
        for chain in ("INPUT", "OUTPUT"):
            netns_cluster.sh("ip", "netns", "exec", ns, "iptables", "-F", chain)
            if a.p > 0:
                netns_cluster.sh("ip", "netns", "exec", ns, "iptables", "-A", chain, "-m", "statistic", "--mode",
                                 "random", "--probability", str(a.p), "-j", "DROP")
        say(f"loss {a.p:g} on {a.node}")
    elif a.fault == "kill":
        pids = dptrain_pids(node)
        signal_all(pids, signal.SIGKILL)
        say(f"killed {len(pids)} dptrain process(es) on {a.node}")
    else:
        pids = dptrain_pids(node)
        signal_all(pids, signal.SIGSTOP)
        say(f"froze {len(pids)} dptrain process(es) on {a.node}" + (f" for {a.seconds:g} s" if a.seconds else ""))
        if a.seconds:
            time.sleep(a.seconds)
            signal_all(pids, signal.SIGCONT)
            say(f"thawed {a.node}")


if __name__ == "__main__":
    main()
