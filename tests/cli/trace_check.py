#!/usr/bin/python3
"""Checks a dptrain trace.json (Chrome trace event format) and exits 1 with one line per problem.

Usage: trace_check.py TRACE --ranks N [--on-every NAME]... [--on RANK NAME]... [--track NAME]...
                      [--track-on RANK NAME]... [--steps COUNT] [--min-step S]

Checks: valid JSON with a traceEvents list; events of phase M (metadata) and X (complete) only; pids are
exactly the ranks 0..N-1, each named "rank P (host)" by a process_name event; every (pid, tid) with
events is named by a thread_name event; complete events have a name, numeric ts and dur, dur >= 0; on
each track ts never decreases in file order and events are well nested (each one inside or disjoint from
every earlier one still open: no partial overlap); --on-every NAME appears on every rank, --on RANK NAME on
that rank; --track NAME is a thread name on every rank, --track-on RANK NAME on that rank; --steps: rank 0's compute track has that many
"step" events; --min-step: every "step" event's args.step is at least S. Standard library only.
"""
import argparse
import json
import sys


def check(trace, args):
    problems = []
    events = trace.get("traceEvents") if isinstance(trace, dict) else None
    if not isinstance(events, list):
        return ["no traceEvents list"]
    process_names, thread_names, tracks = {}, {}, {}
    for i, e in enumerate(events):
        ph, pid, tid = e.get("ph"), e.get("pid"), e.get("tid")
        if not isinstance(pid, int) or not isinstance(tid, int):
            problems.append(f"event {i}: pid/tid not integers: {e}")
            continue
        if ph == "M":
            name = e.get("args", {}).get("name")
            if e.get("name") == "process_name":
                process_names[pid] = name
            elif e.get("name") == "thread_name":
                thread_names[(pid, tid)] = name
        elif ph == "X":
            ts, dur = e.get("ts"), e.get("dur")
            if not isinstance(e.get("name"), str) or not e["name"]:
                problems.append(f"event {i}: no name")
            if not isinstance(ts, (int, float)) or not isinstance(dur, (int, float)):
                problems.append(f"event {i} ({e.get('name')}): ts/dur not numbers")
                continue
            if dur < 0:
                problems.append(f"event {i} ({e['name']}): negative duration {dur}")
            tracks.setdefault((pid, tid), []).append(e)
        else:
            problems.append(f"event {i}: unexpected phase {ph!r}")

    ranks = set(range(args.ranks))
    pids = {pid for pid, _ in tracks} | set(process_names)
    if pids != ranks:
        problems.append(f"pids {sorted(pids)} are not the ranks {sorted(ranks)}")
    for pid in sorted(ranks):
        name = process_names.get(pid)
        if not isinstance(name, str) or not name.startswith(f"rank {pid} ("):
            problems.append(f"rank {pid}: process_name {name!r}, expected 'rank {pid} (host)'")
    for key, evs in sorted(tracks.items()):
        if key not in thread_names:
            problems.append(f"track {key}: {len(evs)} events but no thread_name")
        # Time order and nesting: a stack of the events that enclose the current time.
        open_events, last_ts = [], None
        for e in evs:
            ts, end = e["ts"], e["ts"] + e["dur"]
            if last_ts is not None and ts < last_ts:
                problems.append(f"track {key}: {e['name']} at {ts} starts before the previous event ({last_ts})")
            last_ts = ts
            while open_events and open_events[-1][1] <= ts:
                open_events.pop()
            if open_events and end > open_events[-1][1] + 1e-3:
                outer = open_events[-1]
                problems.append(f"track {key}: {e['name']} [{ts}, {end}] overlaps {outer[2]} "
                                f"[{outer[0]}, {outer[1]}] partially")
            open_events.append((ts, end, e["name"]))

    names_by_rank = {r: set() for r in ranks}
    for (pid, _), evs in tracks.items():
        names_by_rank.setdefault(pid, set()).update(e["name"] for e in evs)
    for name in args.on_every:
        missing = [r for r in sorted(ranks) if name not in names_by_rank.get(r, set())]
        if missing:
            problems.append(f"no {name!r} event on rank(s) {missing}")
    for rank, name in args.on:
        if name not in names_by_rank.get(int(rank), set()):
            problems.append(f"no {name!r} event on rank {rank}")
    tracks_of = lambda r: {n for (p, _), n in thread_names.items() if p == r}
    for track in args.track:
        missing = [r for r in sorted(ranks) if track not in tracks_of(r)]
        if missing:
            problems.append(f"no track named {track!r} on rank(s) {missing}")
    for rank, track in args.track_on:
        if track not in tracks_of(int(rank)):
            problems.append(f"no track named {track!r} on rank {rank}")
    steps = [e for (pid, tid), evs in tracks.items() if thread_names.get((pid, tid)) == "compute"
             for e in evs if e["name"] == "step"]
    if args.steps is not None:
        count = sum(1 for e in steps if e["pid"] == 0)
        if count != args.steps:
            problems.append(f"rank 0 has {count} step events, expected {args.steps}")
    if args.min_step is not None:
        early = sorted({e.get("args", {}).get("step", -1) for e in steps if e.get("args", {}).get("step", -1) < args.min_step})
        if early:
            problems.append(f"step events before step {args.min_step}: {early}")
    return problems


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace")
    p.add_argument("--ranks", type=int, required=True)
    p.add_argument("--on-every", action="append", default=[], metavar="NAME")
    p.add_argument("--on", action="append", nargs=2, default=[], metavar=("RANK", "NAME"))
    p.add_argument("--track", action="append", default=[], metavar="NAME")
    p.add_argument("--track-on", action="append", nargs=2, default=[], metavar=("RANK", "NAME"))
    p.add_argument("--steps", type=int)
    p.add_argument("--min-step", type=int)
    args = p.parse_args()
    try:
        with open(args.trace, encoding="utf-8") as f:
            trace = json.load(f)
    except (OSError, ValueError) as e:
        print(f"{args.trace}: not valid JSON: {e}")
        return 1
    problems = check(trace, args)
    for line in problems[:20]:
        print(f"{args.trace}: {line}")
    if len(problems) > 20:
        print(f"{args.trace}: ... and {len(problems) - 20} more")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
