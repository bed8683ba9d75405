#!/usr/bin/env bash
# Requirement: "Kill a run after a checkpoint, resume it: the losses after the resume point equal those of
# an uninterrupted run exactly."
# Usage: bash resume_exact.sh PATH/TO/dptrain REPO_ROOT
#
# Run B is started in its own session, killed with SIGKILL (mpirun, the launcher and every rank) once a
# checkpoint beyond the first exists, then resumed with --resume to completion. Run A is the same job
# uninterrupted. Every metrics.jsonl line of B must be valid JSON, no (kind, step, rank) may appear twice,
# B must log exactly A's steps, and every loss (both ranks' lines), lr and evaluation must be the same
# JSON number text in A and B, as must the summary's losses and the final checkpoint's bytes.
# Two more resumes start from copies of the killed directory whose metrics.jsonl ends in a partial line
# (what SIGKILL during a buffered write leaves), and must give the same clean log.
set -u

DPTRAIN=$(realpath "${1:?usage: resume_exact.sh DPTRAIN REPO_ROOT}")
TMP=$(mktemp -d "${TMPDIR:-/tmp}/dptrain-resume.XXXXXX")
SESSION=""
cleanup() {
  # Processes of run B that might have survived (only ours: the session we created).
  if [[ -n $SESSION ]]; then
    local left
    left=$(ps -o pid= -s "$SESSION" 2>/dev/null)
    [[ -n $left ]] && kill -9 $left 2>/dev/null
  fi
  rm -rf "$TMP"
}
trap cleanup EXIT
cd "$TMP" || exit 1

fail() {
  echo "not ok - $1"
  for f in "${@:2}"; do [[ -f $f ]] && sed 's/^/#   /' "$f" | tail -15; done
  exit 1
}

write_job() {
  cat >job.toml <<EOF
[job]
name = "resume-exact"
seed = 11

[model]
hidden = [64, 64]

[data]
dataset = "synthetic"
train_samples = 4096

[train]
epochs = $1
global_batch = 64
threads = 1

[launch]
ranks = 2

[checkpoint]
every = 20
keep = 3

[log]
every = 1
progress = "none"
EOF
}

# Steps of the checkpoints in DIR/checkpoints, one per line, ascending.
ckpt_steps() {
  local f
  for f in "$1"/checkpoints/step-*.ckpt; do
    [[ -e $f ]] || continue
    f=${f##*/step-}
    echo $((10#${f%.ckpt}))
  done | sort -n
}

session_pids() { ps -o pid= -s "$1" 2>/dev/null | tr -s ' \n' ' '; }

# --- Run B: start, kill after the second checkpoint, resume ---------------------------------------------
# The job is made longer (more epochs) until the kill lands before the end of the run.
epochs=40
killed=0
for _ in 1 2 3 4; do
  write_job "$epochs"
  rm -rf B B.log
  setsid "$DPTRAIN" run job.toml --out B >B.log 2>&1 </dev/null &
  leader=$!
  SESSION=$leader
  # setsid from a non-interactive shell does not fork: the launcher is the session (and group) leader.
  [[ $(ps -o sid= -p "$leader" | tr -d ' ') == "$leader" ]] || fail "run B is not a session leader" B.log
  deadline=$((SECONDS + 120))
  while kill -0 "$leader" 2>/dev/null; do
    last=$(ckpt_steps B | tail -1)
    [[ -n $last ]] && ((last > 20)) && break
    ((SECONDS < deadline)) || fail "run B wrote no second checkpoint in 120 s" B.log
    sleep 0.01
  done
  # SIGKILL the whole session at once: the launcher's group (it and mpirun) and the ranks, which mpirun
  # puts in process groups of their own.
  pids=$(session_pids "$leader")
  [[ -n $pids ]] && kill -9 $pids 2>/dev/null
  wait "$leader" 2>/dev/null
  deadline=$((SECONDS + 20))
  while [[ -n $(session_pids "$leader") ]]; do
    ((SECONDS < deadline)) || fail "processes of run B survived SIGKILL: $(session_pids "$leader")"
    sleep 0.1
  done
  SESSION=""
  if [[ -e B/summary.json ]]; then
    echo "# run B with $epochs epochs finished before it could be killed; doubling the epochs"
    epochs=$((epochs * 2))
    continue
  fi
  killed=1
  break
done
((killed)) || fail "could not kill run B before it finished, even with $epochs epochs"

kill_ckpt=$(ckpt_steps B | tail -1)
((kill_ckpt > 20)) || fail "newest checkpoint after the kill is step $kill_ckpt, expected beyond 20"
cp -a B Bkilled   # the killed state, for the partial-line resumes below
echo "# killed run B ($epochs epochs) with checkpoints at steps $(ckpt_steps B | tr '\n' ' ')and $(wc -l <B/metrics.jsonl) metrics lines"

"$DPTRAIN" run job.toml --out B --resume >B.resume.log 2>&1 </dev/null || fail "resuming run B failed (exit $?)" B.resume.log
[[ -s B/summary.json ]] || fail "resumed run B wrote no summary.json" B.resume.log

# --- Runs C and D: the killed state, with metrics.jsonl cut inside a line ----------------------------------
# SIGKILL during a buffered write leaves a partial last line: C's is cut before its step number, D's inside
# it (so that the digits left read as a step before the resume point). Resuming must drop it like any
# line after the checkpoint.
for v in C D; do
  cp -a Bkilled "$v"
  python3 - "$v" <<'PY'
import re, sys
p = sys.argv[1] + "/metrics.jsonl"
t = open(p).read()
t = t[: t.rfind("\n") + 1]  # complete lines only
steps = [int(s) for s in re.findall(r'"step":(\d+)', t)]
nxt = str(max(steps) + 1)
cut = '{"kind":"train","st' if sys.argv[1] == "C" else '{"kind":"train","step":' + nxt[0]
open(p, "w").write(t + cut)
PY
  "$DPTRAIN" run job.toml --out "$v" --resume >"$v.resume.log" 2>&1 </dev/null ||
    fail "resuming run $v failed (exit $?)" "$v.resume.log"
done

# --- Run A: uninterrupted ------------------------------------------------------------------------------------
"$DPTRAIN" run job.toml --out A >A.log 2>&1 </dev/null || fail "uninterrupted run A failed (exit $?)" A.log

# --- Compare ------------------------------------------------------------------------------------------------
python3 - "$kill_ckpt" <<'EOF'
import json, re, sys, filecmp, os

kill_ckpt = int(sys.argv[1])
bad = []

def load(run):
    """(kind, step, rank) -> raw line; plus the list of problems in the file."""
    lines, problems = {}, []
    with open(f"{run}/metrics.jsonl", encoding="utf-8", errors="replace") as f:
        for n, raw in enumerate(f, 1):
            raw = raw.rstrip("\n")
            try:
                obj = json.loads(raw)
            except ValueError:
                problems.append(f"{run}/metrics.jsonl:{n}: not a JSON line: {raw[:60]!r}")
                continue
            if obj.get("kind") == "start":
                continue  # one per process (a resumed run writes its own), like "t"
            key = (obj.get("kind"), obj.get("step"), obj.get("rank"))
            if key in lines:
                problems.append(f"{run}/metrics.jsonl:{n}: duplicate line for {key}")
            lines[key] = raw
    return lines, problems

def field(raw, name):
    m = re.search(r'"%s":([^,}]+)' % name, raw)
    return m.group(1) if m else None

def summary(run):
    with open(f"{run}/summary.json") as f:
        text = f.read()
    return text, json.loads(text)

A, pa = load("A")
bad += pa
sa_text, sa = summary("A")
total = sa["steps"]

for run in ("B", "C", "D"):
    R_lines, pr = load(run)
    bad += pr
    sr_text, sr = summary(run)
    R = sr["resumed_from_step"]
    if R != kill_ckpt:
        bad.append(f"{run}: resumed_from_step {R}, expected the newest checkpoint {kill_ckpt}")
    if not 20 < R < total:
        bad.append(f"{run}: resume point {R} not strictly inside the run (total {total})")
    if set(R_lines) != set(A):
        missing = sorted(set(A) - set(R_lines), key=str)[:5]
        extra = sorted(set(R_lines) - set(A), key=str)[:5]
        bad.append(f"{run}: logged lines differ from A: missing {missing}, extra {extra}")
    after = 0
    for key, raw_a in sorted(A.items(), key=lambda kv: (kv[0][1], str(kv[0]))):
        raw_r = R_lines.get(key)
        if raw_r is None:
            continue
        kind, step, rank = key
        names = ("loss", "lr", "epoch", "local_batch") if kind == "train" else ("test_loss", "test_accuracy", "epoch")
        for name in names:
            if field(raw_a, name) != field(raw_r, name):
                bad.append(f"{run}: {kind} step {step} rank {rank}: {name} {field(raw_r, name)} != A's {field(raw_a, name)}")
        if kind == "train" and step > R:
            after += 1
    steps_after = len({k[1] for k in A if k[0] == "train" and k[1] > R})
    ranks = sorted({k[2] for k in A if k[0] == "train"})
    if ranks != [0, 1]:
        bad.append(f"A: train lines for ranks {ranks}, expected [0, 1]")
    for name in ("test_loss", "test_accuracy", "train_loss", "steps", "epochs", "parameters"):
        va = re.search(r'"%s": ([^,\n]+)' % name, sa_text).group(1)
        vr = re.search(r'"%s": ([^,\n]+)' % name, sr_text).group(1)
        if va != vr:
            bad.append(f"{run}: summary {name} {vr} != A's {va}")
    # Same final parameters and optimizer state, byte for byte.
    last = f"checkpoints/step-{total:08d}.ckpt"
    if not os.path.exists(f"A/{last}") or not os.path.exists(f"{run}/{last}"):
        bad.append(f"{run}: final checkpoint {last} missing")
    elif not filecmp.cmp(f"A/{last}", f"{run}/{last}", shallow=False):
        bad.append(f"{run}: final checkpoint {last} differs from A's")
    mine = [b for b in bad if b.startswith(run)]
    what = {"B": "resume after SIGKILL", "C": "resume with a partial last metrics line (no step)",
            "D": "resume with a partial last metrics line (step cut)"}[run]
    print(f"{'not ok' if mine else 'ok'} - {what}: compared {steps_after} steps ({after} train lines, ranks {ranks}) "
          f"after resume point {R} of {total}, test_loss {sr['test_loss']}: "
          + ("DIFFERENT" if mine else "identical to the uninterrupted run"))
    for b in mine[:10]:
        print("#   " + b)

for b in [b for b in bad if b.startswith("A")][:10]:
    print("#   " + b)
sys.exit(1 if bad else 0)
EOF
exit $?
