#!/usr/bin/env bash
# End-to-end bad-input checks of `dptrain run` on the real binary.
# Usage: bash bad_input.sh PATH/TO/dptrain REPO_ROOT
#
# For every case: the exit status (2 for bad input), exactly one stderr line containing "error" that
# names what is wrong (file:line:col for job files, the key, the hint), no crash text, nothing launched
# under mpirun, and the work directory (job files and earlier runs) left exactly as it was.
set -u

DPTRAIN=$(realpath "${1:?usage: bad_input.sh DPTRAIN REPO_ROOT}")
REPO=$(realpath "${2:?usage: bad_input.sh DPTRAIN REPO_ROOT}")  # for ../shared's profiles; jobs are written here
[[ -x $DPTRAIN ]] || { echo "not ok - setup: $DPTRAIN is not executable"; exit 1; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/dptrain-bad-input.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
W=$TMP/w   # working directory of every command: job files and earlier runs
O=$TMP/o   # captured output of the command under test
mkdir -p "$W" "$O"
cd "$W" || exit 1

failures=0
passes=0
CRASH_RE='terminate called|Segmentation|Abort|core dumped|what\(\)|MPI_ABORT|Stack trace|Bus error|Floating point exception|Illegal instruction'

ok() { echo "ok - $1"; passes=$((passes + 1)); }
not_ok() { echo "not ok - $1: $2"; failures=$((failures + 1)); }

# The base job: synthetic data, ~1 s per run on 2 ranks.
base_job() {
  cat <<'EOF'
[job]
name = "bad-input"
seed = 7

[model]
hidden = [16]

[data]
dataset = "synthetic"
train_samples = 512

[train]
epochs = 1
global_batch = 64

[launch]
ranks = 2

[checkpoint]
every = 4
keep = 2

[log]
every = 1
progress = "none"
EOF
}

# The line number (1-based) of the first line of FILE matching the fixed string PATTERN.
line_of() { grep -nF -m1 -- "$2" "$1" | cut -d: -f1; }

# Snapshot of a directory tree: every path with its type, and the sha256 of every regular file.
snapshot() {
  if [[ ! -e $1 ]]; then
    echo "ABSENT $1"
    return
  fi
  (cd "$1" && find . -printf '%y %p\n' | LC_ALL=C sort && find . -type f -exec sha256sum {} + | LC_ALL=C sort -k2)
}

# expect_error NAME STATUS FRAGMENTS -- COMMAND...
#   STATUS is the exit status expected ("nonzero" for any non-zero status, and then the error line may
#   appear more than once: mpirun adds its own notices). FRAGMENTS is a '|'-separated list of fixed strings
#   that must all appear in the error line. The whole work directory must be unchanged afterwards.
expect_error() {
  local name=$1 want=$2 fragments=$3
  shift 4
  local before after rc why=()
  before=$(snapshot "$W")
  "$@" >"$O/stdout" 2>"$O/stderr" </dev/null
  rc=$?
  after=$(snapshot "$W")

  if [[ $want == nonzero ]]; then
    ((rc != 0)) || why+=("exit status $rc, expected non-zero")
  else
    ((rc == want)) || why+=("exit status $rc, expected $want")
  fi
  ((rc < 128)) || why+=("killed by signal $((rc - 128))")

  local nerr
  nerr=$(grep -ci 'error' "$O/stderr")
  if [[ $want == nonzero ]]; then
    ((nerr >= 1)) || why+=("no stderr line contains 'error'")
  else
    ((nerr == 1)) || why+=("$nerr stderr lines contain 'error', expected exactly 1")
  fi
  local line
  line=$(grep -i -m1 'error' "$O/stderr")
  local frags frag
  IFS='|' read -r -a frags <<<"$fragments"
  for frag in "${frags[@]}"; do
    [[ $line == *"$frag"* ]] || why+=("error line lacks '$frag'")
  done

  if grep -Eq "$CRASH_RE" "$O/stdout" "$O/stderr"; then
    why+=("crash text: $(grep -Eh -m1 "$CRASH_RE" "$O/stdout" "$O/stderr" | head -1)")
  fi
  # Bad input is found before ranks start (only for the launcher path, not when we run mpirun ourselves).
  if [[ $want != nonzero ]] && grep -q '^dptrain: running ' "$O/stderr"; then
    why+=("launched mpirun despite bad input")
  fi
  if [[ $before != "$after" ]]; then
    why+=("work directory changed: $(diff <(echo "$before") <(echo "$after") | grep '^[<>]' | head -3 | tr '\n' ' ')")
  fi

  if ((${#why[@]} == 0)); then
    ok "$name"
  else
    local joined
    joined=$(printf '%s; ' "${why[@]}")
    not_ok "$name" "${joined%; }"
    echo "#   command: $*"
    sed 's/^/#   stderr: /' "$O/stderr" | head -8
  fi
}

# expect_ok NAME OUT_FRAGMENTS WARNING_FRAGMENTS -- COMMAND...
#   Input that is accepted, perhaps with a warning: exit status 0, stdout holding every OUT_FRAGMENT
#   ('|'-separated; none when empty), no stderr line containing "error", and exactly one stderr line
#   containing "warning" holding every WARNING_FRAGMENT (none at all when WARNING_FRAGMENTS is empty); no
#   crash text, and the work directory unchanged.
expect_ok() {
  local name=$1 out_fragments=$2 warning_fragments=$3
  shift 4
  local before after rc why=() frags frag
  before=$(snapshot "$W")
  "$@" >"$O/stdout" 2>"$O/stderr" </dev/null
  rc=$?
  after=$(snapshot "$W")
  ((rc == 0)) || why+=("exit status $rc, expected 0")
  ! grep -qi 'error' "$O/stderr" || why+=("an error line: $(grep -i -m1 'error' "$O/stderr")")
  if [[ -n $out_fragments ]]; then
    IFS='|' read -r -a frags <<<"$out_fragments"
    for frag in "${frags[@]}"; do
      grep -qF -- "$frag" "$O/stdout" || why+=("stdout lacks '$frag'")
    done
  fi
  local nwarn line
  nwarn=$(grep -ci 'warning' "$O/stderr")
  if [[ -z $warning_fragments ]]; then
    ((nwarn == 0)) || why+=("$nwarn stderr lines contain 'warning', expected none")
  else
    ((nwarn == 1)) || why+=("$nwarn stderr lines contain 'warning', expected exactly 1")
    line=$(grep -i -m1 'warning' "$O/stderr")
    IFS='|' read -r -a frags <<<"$warning_fragments"
    for frag in "${frags[@]}"; do
      [[ $line == *"$frag"* ]] || why+=("warning line lacks '$frag'")
    done
  fi
  if grep -Eq "$CRASH_RE" "$O/stdout" "$O/stderr"; then
    why+=("crash text: $(grep -Eh -m1 "$CRASH_RE" "$O/stdout" "$O/stderr" | head -1)")
  fi
  if [[ $before != "$after" ]]; then
    why+=("work directory changed: $(diff <(echo "$before") <(echo "$after") | grep '^[<>]' | head -3 | tr '\n' ' ')")
  fi
  if ((${#why[@]} == 0)); then
    ok "$name"
  else
    local joined
    joined=$(printf '%s; ' "${why[@]}")
    not_ok "$name" "${joined%; }"
    echo "#   command: $*"
    sed 's/^/#   stderr: /' "$O/stderr" | head -8
  fi
}

# --- Earlier runs the bad commands must not touch ----------------------------------------------------------
base_job >good.toml
# A complete run with checkpoints at steps 4 and 8.
if ! "$DPTRAIN" run good.toml --out prev >"$O/setup.out" 2>&1; then
  not_ok "setup: good run" "$(tail -3 "$O/setup.out" | tr '\n' ' ')"
  exit 1
fi
newest=$(ls prev/checkpoints/step-*.ckpt 2>/dev/null | LC_ALL=C sort | tail -1)
if [[ -z $newest ]] || [[ ! -s prev/metrics.jsonl ]] || [[ ! -s prev/summary.json ]]; then
  not_ok "setup: good run" "prev/ lacks checkpoints, metrics.jsonl or summary.json"
  exit 1
fi
ckpt_name=$(basename "$newest")
size=$(stat -c %s "$newest")
# A run without checkpoints: it holds a run but has nothing to resume.
sed 's/^every = 4$/every = 4\nenabled = false/' good.toml >nockpt.toml
"$DPTRAIN" run nockpt.toml --out nockpt >"$O/setup.out" 2>&1 ||
  { not_ok "setup: run without checkpoints" "$(tail -3 "$O/setup.out" | tr '\n' ' ')"; exit 1; }
if [[ -n $(ls nockpt/checkpoints 2>/dev/null) ]]; then
  not_ok "setup: run without checkpoints" "checkpoints written although [checkpoint] enabled = false"
fi
mkdir -p emptydir

# Damaged copies of prev/.
cp -a prev trunc && truncate -s $((size / 2)) "trunc/checkpoints/$ckpt_name"
cp -a prev trunc0 && truncate -s 0 "trunc0/checkpoints/$ckpt_name"
cp -a prev trunchdr && truncate -s 12 "trunchdr/checkpoints/$ckpt_name"
cp -a prev corrupt
mid=$((size / 2))
old=$(od -An -tu1 -j "$mid" -N1 "corrupt/checkpoints/$ckpt_name" | tr -d ' ')
printf "\\$(printf '%03o' $(((old ^ 0xff) & 0xff)))" |
  dd of="corrupt/checkpoints/$ckpt_name" bs=1 seek="$mid" count=1 conv=notrunc status=none
if cmp -s "prev/checkpoints/$ckpt_name" "corrupt/checkpoints/$ckpt_name"; then
  not_ok "setup: corrupt checkpoint" "byte flip did not change the file"
fi
[[ $(stat -c %s "corrupt/checkpoints/$ckpt_name") == "$size" ]] || not_ok "setup: corrupt checkpoint" "size changed"
cp -a prev garbage && head -c "$size" /dev/urandom >"garbage/checkpoints/$ckpt_name"

# --- Bad job files -----------------------------------------------------------------------------------------
{ base_job | sed '/^\[train\]$/,$d'; printf '[train]\nepochs = = 1\n'; } >malformed.toml
L=$(line_of malformed.toml 'epochs = = 1')
expect_error "malformed TOML" 2 "malformed.toml:$L:10|not valid TOML" -- "$DPTRAIN" run malformed.toml --out prev

{ base_job | sed '/^\[train\]$/,$d'; printf '[train\nepochs = 1\n'; } >malformed_header.toml
L=$(line_of malformed_header.toml '[train')
expect_error "malformed TOML table header" 2 "malformed_header.toml:$L:7|not valid TOML" -- \
  "$DPTRAIN" run malformed_header.toml --out prev

base_job | sed 's/^global_batch = 64$/global_bach = 64/' >unknown_key.toml
L=$(line_of unknown_key.toml 'global_bach')
expect_error "unknown key with did-you-mean" 2 "unknown_key.toml:$L:1|global_bach|did you mean|global_batch" -- \
  "$DPTRAIN" run unknown_key.toml --out prev

base_job | sed 's/^epochs = 1$/epochs = "three"/' >wrong_type.toml
L=$(line_of wrong_type.toml 'epochs = "three"')
expect_error "wrong type" 2 "wrong_type.toml:$L:10|train.epochs|integer" -- "$DPTRAIN" run wrong_type.toml --out prev

base_job | sed 's/^ranks = 2$/ranks = 0/' >zero_ranks.toml
L=$(line_of zero_ranks.toml 'ranks = 0')
expect_error "launch.ranks = 0" 2 "zero_ranks.toml:$L:9|launch.ranks|at least 1" -- "$DPTRAIN" run zero_ranks.toml --out prev

expect_error "missing job file" 2 "no-such-job.toml|cannot read" -- "$DPTRAIN" run no-such-job.toml --out prev

# --- Bad --set -----------------------------------------------------------------------------------------------
expect_error "--set with a bad value" 2 "--set train.epochs=abc|train.epochs|integer" -- \
  "$DPTRAIN" run good.toml --set train.epochs=abc --out prev
# CGP and the cluster description (strategy "cgp" checks its grouping before any rank starts).
cgp=(--set parallel.strategy=cgp --set launch.ranks=4)
expect_error "a staleness bound no grouping meets" 2 "parallel.cgp.max_staleness|no grouping into 3 groups|raise" -- \
  "$DPTRAIN" run good.toml "${cgp[@]}" --set parallel.cgp.group_count=3 --set parallel.cgp.max_staleness=0 --out cgp-new
expect_error "a zero speed" 2 "cluster.speeds[2]|greater than 0" -- \
  "$DPTRAIN" run good.toml "${cgp[@]}" --set "cluster.speeds=[1, 1, 0, 1]" --out prev
expect_error "a negative speed" 2 "cluster.speeds[1]|greater than 0" -- \
  "$DPTRAIN" run good.toml "${cgp[@]}" --set "cluster.speeds=[1, -2, 1, 1]" --out prev
expect_error "a non-finite speed" 2 "cluster.speeds[3]|finite" -- \
  "$DPTRAIN" run good.toml "${cgp[@]}" --set "cluster.speeds=[1, 1, 1, nan]" --out prev
expect_error "more groups than workers" 2 "parallel.cgp.group_count|5 groups cannot be formed" -- \
  "$DPTRAIN" run good.toml "${cgp[@]}" --set parallel.cgp.group_count=5 --out prev
expect_error "node sizes that disagree with the ranks" 2 "cluster.node_sizes|adds up to 5|launch.ranks is 4" -- \
  "$DPTRAIN" run good.toml "${cgp[@]}" --set "cluster.node_sizes=[2, 3]" --out prev
expect_error "a link of bandwidth 0" 2 "cluster.links.cross_gbps|greater than 0" -- \
  "$DPTRAIN" run good.toml "${cgp[@]}" --set cluster.links.cross_gbps=0 --out prev
expect_error "CGP of pipelines in groups of unequal size" 2 "[parallel.cgp] groups|groups of 3 and 1 ranks|equal in size" -- \
  "$DPTRAIN" run good.toml --set parallel.strategy=cgp-pipeline --set launch.ranks=4 \
  --set "parallel.cgp.groups=[0, 0, 0, 1]" --out hybrid-new
expect_error "estimate of CGP of pipelines in groups of unequal size" 2 "[parallel.cgp] groups|groups of 3 and 1 ranks" -- \
  "$DPTRAIN" estimate good.toml --set parallel.strategy=cgp-pipeline --set launch.ranks=4 \
  --set "parallel.cgp.groups=[0, 0, 0, 1]"
# Pipelines (strategy "pipeline" checks its stages, its profile and, with memory limits, that a plan fits
# before any rank starts). The MLP of hidden [16, 16] has 3 blocks: fc1, fc2, fc3.
pipe=(--set parallel.strategy=pipeline --set "model.hidden=[16, 16]")
expect_error "stages leaving a block out" 2 "[parallel.pipeline] stages|blocks 2-2 are in no stage|blocks 0-2" -- \
  "$DPTRAIN" run good.toml "${pipe[@]}" --set 'parallel.pipeline.stages="0,1"' --out pipe-new
expect_error "overlapping stages" 2 "[parallel.pipeline] stages|stage 1 (1-2) overlaps" -- \
  "$DPTRAIN" run good.toml "${pipe[@]}" --set 'parallel.pipeline.stages="0-1,1-2"' --out pipe-new
expect_error "stages past the last block" 2 "[parallel.pipeline] stages|runs past the last block, 2" -- \
  "$DPTRAIN" run good.toml "${pipe[@]}" --set 'parallel.pipeline.stages="0,1-5"' --out pipe-new
expect_error "more stages than devices" 2 "[parallel.pipeline] stages|more devices than the cluster's 2" -- \
  "$DPTRAIN" run good.toml "${pipe[@]}" --set 'parallel.pipeline.stages="0,1,2"' --out pipe-new
expect_error "micro-batches not dividing the batch" 2 "parallel.pipeline.micro_batches|do not divide" -- \
  "$DPTRAIN" run good.toml "${pipe[@]}" --set parallel.pipeline.micro_batches=7 --out pipe-new
"$DPTRAIN" profile --layers good.toml --set "model.hidden=[16, 16]" --batch 8 --out "$TMP/layers.toml" >/dev/null
"$DPTRAIN" profile --layers good.toml --batch 8 --out "$TMP/other.toml" >/dev/null
sed '0,/forward_ms = /s/forward_ms = /forward_ms = -/' "$TMP/layers.toml" >"$TMP/negative.toml"
expect_error "a profile with a negative time" 2 "negative.toml:$(line_of "$TMP/negative.toml" 'forward_ms = -'):|negative" -- \
  "$DPTRAIN" run good.toml "${pipe[@]}" --set "parallel.pipeline.profile=\"$TMP/negative.toml\"" --out pipe-new
expect_error "a profile of another model" 2 "other.toml|has 2 blocks|has 3|profile --layers" -- \
  "$DPTRAIN" run good.toml "${pipe[@]}" --set "parallel.pipeline.profile=\"$TMP/other.toml\"" --out pipe-new
expect_error "PipeDream's graph as the run's profile" 2 "[parallel.pipeline] profile|not a dptrain layer profile" -- \
  "$DPTRAIN" run good.toml "${pipe[@]}" --set "parallel.pipeline.profile=\"$(realpath "$(dirname "$DPTRAIN")/../../shared/profiles/pipedream/alexnet_graph.txt" 2>/dev/null || echo /nonexistent)\"" --out pipe-new
# An output directory that cannot be created or written: found before ranks start (even as root).
expect_error "an output directory under /proc" 2 "/proc/dptrain-test/run|cannot create or write the output directory|--out" -- \
  "$DPTRAIN" run good.toml --out /proc/dptrain-test/run
expect_error "an output directory under a file" 2 "good.toml/run|cannot create or write the output directory" -- \
  "$DPTRAIN" run good.toml --out good.toml/run
expect_error "a rank count far beyond this machine's cores" 2 "[launch] ranks|$(( $(nproc) * 8 + 1 )) ranks|per core|hosts or hostfile" -- \
  "$DPTRAIN" run good.toml --set launch.ranks=$(( $(nproc) * 8 + 1 )) --out many-ranks
# Elastic launches: a negative restart count; more ranks than the machines named have slots.
expect_error "a negative max_restarts" 2 "launch.max_restarts|at least 0|-1" -- \
  "$DPTRAIN" run good.toml --set launch.max_restarts=-1 --out restarts
printf 'localhost slots=1\n' >one-slot.hostfile
expect_error "more ranks than the hostfile's slots" 2 "one-slot.hostfile|1 slot(s)|2 rank(s)|lower [launch] ranks to 1" -- \
  "$DPTRAIN" run good.toml --set launch.ranks=2 --set 'launch.hostfile="one-slot.hostfile"' --out slots
# estimate: its device, its profile.
expect_error "estimate on an unknown device" 2 "--device|unknown device 'h900'|known: h200" -- \
  "$DPTRAIN" estimate good.toml --device h900
expect_error "estimate --fit without a device" 2 "--fit|needs a device kind|--device" -- \
  "$DPTRAIN" estimate good.toml --fit
expect_error "estimate with a profile of another model" 2 "other.toml|not of|profile --layers" -- \
  "$DPTRAIN" estimate good.toml --set "model.hidden=[16, 16]" --profile "$TMP/other.toml"
if ! "$DPTRAIN" --version | grep -q 'device(s)'; then  # no GPU here to time a GPU job's blocks on
  expect_error "estimate of a GPU job with nothing to time it on" 2 "--profile|has none to time|--device NAME" -- \
    "$DPTRAIN" estimate good.toml --set train.device=cuda
fi
expect_ok "estimate on a device named in capitals" "step:" "" -- "$DPTRAIN" estimate good.toml --device H200
expect_error "estimate --emit of an unknown scheduler" 2 "--emit|pbs" -- \
  "$DPTRAIN" estimate good.toml --emit pbs
expect_error "a memory limit nothing fits" 2 "[cluster] memory_gb|nothing fits|add devices or memory" -- \
  "$DPTRAIN" run good.toml "${pipe[@]}" --set "parallel.pipeline.profile=\"$TMP/layers.toml\"" \
  --set "cluster.memory_gb=[1e-6, 1e-6]" --out pipe-new
# This machine (and CI) has no GPU: asking for one, or for GPU-only arithmetic, is an input error. On a
# GPU machine these two cases are skipped.
if ! "$DPTRAIN" --version | grep -q 'device(s)'; then
  expect_error "device = cuda without a GPU" 2 "[train] device|device = \"cuda\" but|use device" -- \
    "$DPTRAIN" run good.toml --set train.device=cuda --out prev
  expect_error "bf16 on the CPU" 2 "[train] precision|bf16|needs a GPU|fp32" -- \
    "$DPTRAIN" run good.toml --set train.precision=bf16 --out prev
fi
expect_error "--set with an unknown key" 2 "train.epoch|did you mean|train.epochs" -- \
  "$DPTRAIN" run good.toml --set train.epoch=3 --out prev
expect_error "--set without =" 2 "train.epochs|KEY=VALUE" -- "$DPTRAIN" run good.toml --set train.epochs --out prev
expect_error "--set out of range" 2 "train.global_batch|at least 1" -- \
  "$DPTRAIN" run good.toml --set train.global_batch=0 --out prev

# --- Missing data ----------------------------------------------------------------------------------------------
base_job | sed 's|^dataset = "synthetic"$|dataset = "fashion-mnist"\npath = "/nonexistent"|' >no_data.toml
expect_error "missing dataset" 2 "/nonexistent|dataset-fashion-mnist" -- "$DPTRAIN" run no_data.toml --out newrun

# --- Output directory --------------------------------------------------------------------------------------------
expect_error "new run into a directory holding a run" 2 "prev|already holds a run|--force" -- \
  "$DPTRAIN" run good.toml --out prev
expect_error "new run into a directory holding a run without checkpoints" 2 "nockpt|already holds a run" -- \
  "$DPTRAIN" run good.toml --out nockpt
expect_error "--out is a regular file" 2 "good.toml|not a directory" -- "$DPTRAIN" run good.toml --out good.toml

# --- --resume ------------------------------------------------------------------------------------------------
expect_error "--resume into a missing directory" 2 "fresh|no checkpoint" -- "$DPTRAIN" run good.toml --out fresh --resume
expect_error "--resume into an empty directory" 2 "emptydir|no checkpoint" -- \
  "$DPTRAIN" run good.toml --out emptydir --resume
expect_error "--resume a run without checkpoints" 2 "nockpt|no checkpoint" -- \
  "$DPTRAIN" run good.toml --out nockpt --resume
expect_error "--resume with a truncated checkpoint" 2 "trunc/checkpoints/$ckpt_name|truncated" -- \
  "$DPTRAIN" run good.toml --out trunc --resume
expect_error "--resume with an empty checkpoint file" 2 "trunc0/checkpoints/$ckpt_name" -- \
  "$DPTRAIN" run good.toml --out trunc0 --resume
expect_error "--resume with a checkpoint cut inside its header" 2 "trunchdr/checkpoints/$ckpt_name" -- \
  "$DPTRAIN" run good.toml --out trunchdr --resume
expect_error "--resume with a corrupted checkpoint" 2 "corrupt/checkpoints/$ckpt_name|corrupt" -- \
  "$DPTRAIN" run good.toml --out corrupt --resume
expect_error "--resume with a random-bytes checkpoint" 2 "garbage/checkpoints/$ckpt_name" -- \
  "$DPTRAIN" run good.toml --out garbage --resume
expect_error "--resume with a checkpoint from a different model" 2 "prev/checkpoints/$ckpt_name|different model" -- \
  "$DPTRAIN" run good.toml --out prev --resume --set 'model.hidden=[32]'
expect_error "--resume with a checkpoint from a different optimizer" 2 "prev/checkpoints/$ckpt_name|optimizer" -- \
  "$DPTRAIN" run good.toml --out prev --resume --set optim.name=sgd

# --- Model zoo: shapes that do not fit, text corpora -------------------------------------------------------------
printf 'a tiny corpus, long enough for a few windows of eight characters each.\n%.0s' {1..20} >corpus.txt
: >empty.txt
printf 'valid text on line one\nthen a bad byte: \xff here\n' >latin1.txt
text_job() {  # a GPT job on TEXT-FILE with extra [model] lines (heads, by default 4)
  printf '[model]\ntype = "gpt"\nlayers = 1\nwidth = 16\ncontext = 8\n%s\n[data]\ndataset = "text"\npath = "%s"\ncontext = 8\n[train]\nsteps = 2\nglobal_batch = 4\n[launch]\nranks = 2\n[log]\nprogress = "none"\n' "$2" "$1"
}
text_job corpus.txt 'heads = 3' >bad_heads.toml
expect_error "heads not dividing the width" 2 "bad_heads.toml:$(line_of bad_heads.toml 'heads = 3'):9|model.heads|must divide model.width (16)" -- \
  "$DPTRAIN" run bad_heads.toml --out zoo
text_job corpus.txt '' >long_seq.toml
expect_error "sequence longer than the position table" 2 "--set data.context=9|position table" -- \
  "$DPTRAIN" run long_seq.toml --out zoo --set data.context=9
text_job empty.txt '' >empty_corpus.toml
expect_error "empty corpus" 2 "empty.txt|empty" -- "$DPTRAIN" run empty_corpus.toml --out zoo
text_job latin1.txt '' >latin1.toml
expect_error "non-UTF-8 corpus" 2 "latin1.txt:2:18|UTF-8|byte offset 40" -- "$DPTRAIN" run latin1.toml --out zoo
text_job missing.txt '' >missing_corpus.toml
expect_error "missing corpus" 2 "missing.txt" -- "$DPTRAIN" run missing_corpus.toml --out zoo
expect_error "cnn on non-image data" 2 "cnn|image" -- "$DPTRAIN" run good.toml --out zoo --set model.type=cnn
expect_error "gpt on image data" 2 "gpt|text" -- "$DPTRAIN" run good.toml --out zoo --set model.type=gpt
# Data files that never end or cannot fit (outside the snapshotted folder: a 200 GiB sparse file is not read).
mkfifo "$TMP/fifo.txt"
truncate -s 200G "$TMP/huge.txt"
mkdir -p "$TMP/idx"  # Fashion-MNIST with its training images replaced by /dev/zero
for f in $(dpkg -L dataset-fashion-mnist | grep 'ubyte.gz$'); do ln -s "$f" "$TMP/idx/"; done
ln -sf /dev/zero "$TMP/idx/train-images-idx3-ubyte.gz"
text_job "$TMP/fifo.txt" '' >fifo.toml
expect_error "a named pipe as the corpus" 2 "fifo.txt|named pipe|never end" -- "$DPTRAIN" run fifo.toml --out zoo
text_job /dev/zero '' >zero.toml
expect_error "a device as the corpus" 2 "/dev/zero|character device" -- "$DPTRAIN" run zero.toml --out zoo
text_job "$TMP/huge.txt" '' >huge.toml
expect_error "a corpus larger than memory" 2 "huge.txt|200.0 GiB|available" -- "$DPTRAIN" run huge.toml --out zoo
expect_error "an IDX file that is /dev/zero" 2 "train-images-idx3-ubyte.gz|character device" -- \
  "$DPTRAIN" run good.toml --out zoo --set data.dataset=fashion-mnist --set "data.path=\"$TMP/idx\""
expect_error "a model larger than memory" 2 "[model]|parameters|at most about" -- \
  "$DPTRAIN" run good.toml --out zoo --set "model.hidden=[200000, 200000, 200000]"
expect_error "a job file that is /dev/zero" 2 "/dev/zero|not a regular file" -- "$DPTRAIN" run /dev/zero --out zoo
{ printf '[cluster]\nfile = "/dev/zero"\n'; cat good.toml; } >cluster_zero.toml
expect_error "a cluster file that is /dev/zero" 2 "cluster_zero.toml:2|/dev/zero|not a regular file" -- \
  "$DPTRAIN" run cluster_zero.toml --out zoo
# An allocation that fails anyway (here a 4 GB address-space limit under the machine's memory): one line,
# exit 1, never an abort with std::bad_alloc. Not under AddressSanitizer (scripts/sanitize.sh exports
# ASAN_OPTIONS), whose shadow memory cannot be reserved under such a limit.
[[ -z ${ASAN_OPTIONS:-} ]] &&
  expect_error "an allocation that fails (ulimit -v)" 1 "out of memory|dptrain estimate" -- \
    bash -c 'ulimit -v 4000000 && exec "$@"' - "$DPTRAIN" run good.toml --out zoo --set "model.hidden=[16000, 16000]"
expect_error "mlp on text" 2 "text" -- "$DPTRAIN" run empty_corpus.toml --out zoo --set model.type=mlp --set data.path=corpus.txt
expect_error "unknown model option" 2 "model.layer|did you mean 'model.layers'" -- \
  "$DPTRAIN" run good.toml --out zoo --set model.layer=2

# --- Cluster files: --set cluster.file is read and checked like the key in the job file (relative to the
# current directory); sizes that disagree with the ranks, memory of 0, a misspelt table; link levels out of
# order are a warning, shown once by the launcher (not by every rank).
printf '[cluster]\nspeeds = [1, 3]\nmemory_gb = [16, 32]\nranks_per_node = 1\n' >other_cluster.toml
printf '[cluster]\nranks_per_node = 5\n' >five_per_node.toml
printf '[cluster]\nmemory_gb = [0, 16]\n' >no_memory.toml
printf '# the lab\n[clustr]\nspeeds = [1, 2]\n' >clustr.toml
printf '[cluster]\nranks_per_node = 1\n[cluster.links]\nnode_gbps = 5\nrack_gbps = 10\n' >slow_node.toml
expect_error "--set cluster.file of a missing file" 2 "--set cluster.file=missing.toml|cannot read the cluster file missing.toml" -- \
  "$DPTRAIN" run good.toml --set cluster.file=missing.toml --out cluster-new
expect_ok "--set cluster.file is the cluster estimated on" '"ranks_per_node": 1|"memory_limit_bytes": 16000000000' "" -- \
  "$DPTRAIN" estimate good.toml --set cluster.file=other_cluster.toml --json
expect_error "ranks_per_node disagreeing with the ranks" 2 "five_per_node.toml:2:18|cluster.ranks_per_node|more than launch.ranks (2)" -- \
  "$DPTRAIN" run good.toml --set cluster.file=five_per_node.toml --out cluster-new
expect_error "memory_gb of 0 in a cluster file" 2 "no_memory.toml:2:13|cluster.memory_gb[0]|greater than 0|leave the key out" -- \
  "$DPTRAIN" plan good.toml --set cluster.file=no_memory.toml
expect_error "a misspelt table in a cluster file" 2 "clustr.toml:2:1|unknown table '[clustr]'|did you mean '[cluster]'?" -- \
  "$DPTRAIN" estimate good.toml --cluster clustr.toml
expect_ok "links inside a node slower than between nodes" "" \
  "slow_node.toml:4:13: warning: cluster.links.node_gbps|slower than cluster.links.rack_gbps (10 Gbit/s)" -- \
  "$DPTRAIN" run good.toml --set cluster.file=slow_node.toml --out "$TMP/slow-node"
grep -qxF "node_gbps = 5.0" "$TMP/slow-node/job.toml" 2>/dev/null &&
  ok "the ranks read the --set cluster file" ||
  not_ok "the ranks read the --set cluster file" "$TMP/slow-node/job.toml (rank 0's job) lacks node_gbps = 5.0"

# --- Command line ------------------------------------------------------------------------------------------------
expect_error "unknown subcommand" 2 "frobnicate" -- "$DPTRAIN" frobnicate good.toml
expect_error "profile without a measurement" 2 "nothing to profile|--collectives" -- "$DPTRAIN" profile
expect_error "profile with an unknown algorithm" 2 "rign|valid: native, ring" -- \
  "$DPTRAIN" profile --collectives --algorithms native,rign
expect_error "profile with sizes out of order" 2 "--min-bytes|--max-bytes" -- \
  "$DPTRAIN" profile --collectives --min-bytes 100 --max-bytes 10
expect_error "profile --compute without a job" 2 "profile --compute|needs a job file" -- "$DPTRAIN" profile --compute
expect_error "plan of a missing job file" 2 "missing.toml|cannot read" -- "$DPTRAIN" plan missing.toml
expect_error "plan with a bad override" 2 "parallel.balance.mode|idta" -- \
  "$DPTRAIN" plan good.toml --set parallel.balance.mode=idta
expect_error "unknown option" 2 "--frobnicate" -- "$DPTRAIN" run --frobnicate good.toml --out prev
expect_error "missing job argument" 2 "job" -- "$DPTRAIN" run --out prev

# --- The same bad input with the ranks started by hand under mpirun ---------------------------------------------
MPIRUN=(mpirun --allow-run-as-root --oversubscribe -np 2)
if command -v mpirun >/dev/null; then
  expect_error "under mpirun: unknown key" nonzero "unknown_key.toml:$(line_of unknown_key.toml global_bach):1|global_bach" -- \
    "${MPIRUN[@]}" "$DPTRAIN" run unknown_key.toml --out prev
  expect_error "under mpirun: malformed TOML" nonzero "malformed.toml:$(line_of malformed.toml 'epochs = = 1'):10" -- \
    "${MPIRUN[@]}" "$DPTRAIN" run malformed.toml --out prev
  expect_error "under mpirun: existing run without --force" nonzero "already holds a run" -- \
    "${MPIRUN[@]}" "$DPTRAIN" run good.toml --out prev
  expect_error "under mpirun: corrupted checkpoint" nonzero "corrupt/checkpoints/$ckpt_name" -- \
    "${MPIRUN[@]}" "$DPTRAIN" run good.toml --out corrupt --resume
  for strategy in cgp pipeline; do  # both plan on [cluster]'s ranks: refused, never a hang or a crash
    expect_error "under mpirun: $strategy on fewer ranks than the job's" nonzero "[launch] ranks|job's 3 rank(s), this launch has 2" -- \
      timeout 120 "${MPIRUN[@]}" "$DPTRAIN" run good.toml --out "mismatch-$strategy" --set launch.ranks=3 \
      --set parallel.strategy=$strategy
  done
else
  not_ok "under mpirun" "mpirun not found"
fi

echo "# $passes passed, $failures failed"
((failures == 0))
