#!/usr/bin/env python3
"""The data accounting of a run folder across its restarts: did each completed epoch read every sample once?

metrics.jsonl holds, per launch, a "start" line (its first step) and then the ranks' train lines, each with
the digest of the samples that rank read (lib/data/dataset.h, samples_digest: a sum over samples of a
64-bit mix, so parts add up). A launch's lines at or after the next launch's first step were trained again
from the checkpoint and do not count. For each epoch the kept lines cover, the digests must add up to the
digest of 0..N-1 (N training samples) and no step may be missing or counted twice.
(Data parallelism and pipelines write a line per rank per step, at [log] every = 1; CGP a line per member
per exchange, each covering its chunk of the global sample order.)

  accounting.py RUN_FOLDER N     prints one line per epoch; exits 1 if an epoch is wrong
"""
import json, sys

MASK = (1 << 64) - 1


def mix(i):
    z = (i + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def launches(path):
    """[(first_step, strategy, steps_per_epoch, [train lines])] in order."""
    out = []
    for line in open(path):
        r = json.loads(line)
        if r["kind"] == "start":
            out.append((r["first_step"], r["strategy"], r.get("steps_per_epoch"), []))
        elif r["kind"] == "train" and out:
            out[-1][3].append(r)
    return out


def main():
    folder, n = sys.argv[1], int(sys.argv[2])
    full = sum(mix(i) for i in range(n)) & MASK
    runs = launches(f"{folder}/metrics.jsonl")
    if not runs:
        print(f"accounting: {folder}/metrics.jsonl has no start line")
        return 1
    kept = []
    for k, (_, _, _, lines) in enumerate(runs):
        until = runs[k + 1][0] if k + 1 < len(runs) else float("inf")
        kept += [r for r in lines if r["step"] < until]
    steps_per_epoch, by_step = runs[-1][2], runs[-1][1] != "cgp"  # CGP's lines: per exchange, epoch given
    digest, steps = {}, {}
    for r in kept:
        e = (r["step"] - 1) // steps_per_epoch if by_step else r["epoch"]
        digest[e] = (digest.get(e, 0) + r["samples_digest"]) & MASK
        steps.setdefault(e, set()).add(r["step"])
    last = max(r["step"] for r in kept)
    bad = 0
    for e in sorted(digest):
        complete = (e + 1) * steps_per_epoch <= last
        want = set(range(e * steps_per_epoch + 1, min(last, (e + 1) * steps_per_epoch) + 1)) if by_step else set()
        missing = sorted(want - steps[e])
        ok = not missing and (digest[e] == full or not complete)
        bad += not ok
        print(f"epoch {e}: {'complete' if complete else 'partial'}, digest {'= every sample once' if digest[e] == full else 'differs'}"
              + (f", steps missing: {missing[:5]}" if missing else "") + ("" if ok else "  <- WRONG"))
    print(f"{len(runs)} launch(es), first steps {[r[0] for r in runs]}, last step {last}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
