#!/usr/bin/env bash
# Two builds of dptrain side by side on the three throughput benchmarks, for a change meant to leave speed
# as it was (a refactoring): ROUNDS rounds, the builds alternating (before/after, after/before, ...), each
# round running models_vs_torch.sh (REPS=3), ddp_vs_dptrain.sh (REPS=3) and pipeline.sh (REPS=1) with one
# build. Then one table: per metric and build, the best run's min .. the median of the runs' medians, and
# whether the two ranges overlap. Not a test: it asserts nothing. Run it on a quiet machine (about 50
# minutes with the defaults on 2 cores); the outputs stay in OUT.
# Usage: tests/bench/before_after.sh BEFORE_BUILD_DIR AFTER_BUILD_DIR [OUT]   (build dirs with
#        tests/bench/bench_model_step and dptrain; both built alike, e.g. -DDPTRAIN_WITH_CUDA=OFF)
# Environment: ROUNDS [3]
set -euo pipefail
cd "$(dirname "$0")/../.."
[[ $# -ge 2 ]] || { echo "usage: $0 BEFORE_BUILD_DIR AFTER_BUILD_DIR [OUT]" >&2; exit 2; }
declare -A build=([before]=$(realpath "$1") [after]=$(realpath "$2"))
out=${3:-$(mktemp -d /tmp/before-after.XXXXXX)}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for ((round = 1; round <= ${ROUNDS:-3}; round++)); do
  order="before after"
  ((round % 2)) || order="after before"
  for which in $order; do
    d=${build[$which]}
    echo "round $round: $which ($d) $(date +%T)" >&2
    REPS=3 tests/bench/models_vs_torch.sh "$d" >"$out/models.$which.$round" 2>&1
    REPS=3 tests/bench/ddp_vs_dptrain.sh "$d/dptrain" >"$out/ddp.$which.$round" 2>&1
    REPS=1 tests/bench/pipeline.sh "$d/dptrain" >"$out/pipeline.$which.$round" 2>&1
  done
done
echo "outputs: $out" >&2

python3 - "$out" <<'PY'
import collections, glob, re, sys
runs = collections.defaultdict(lambda: collections.defaultdict(list))  # metric -> build -> [(min, median)]
def add(metric, build, lo, med=None):
    runs[metric][build].append((lo, lo if med is None else med))
for path in sorted(glob.glob(sys.argv[1] + '/*.*.*')):
    kind, build, _ = path.split('/')[-1].split('.')
    t = open(path).read()
    if kind == 'models':
        for m in re.finditer(r'^(mlp|cnn|gpt)\s+\d+\s+\d+ \|\s+([\d.]+) /\s+([\d.]+) \|.*\|\s+([\d.]+)x', t, re.M):
            add(f'{m[1]} step ms (bench_model_step)', build, float(m[2]), float(m[3]))
            add(f'{m[1]} torch/dptrain, medians', build, float(m[4]))
    elif kind == 'ddp':
        if m := re.search(r'^dptrain\s+(\d+)\s+(\d+)', t, re.M):
            add('ddp dptrain samples/s (slowest, median)', build, float(m[1]), float(m[2]))
        if m := re.search(r'medians ([\d.]+)x, bests ([\d.]+)x', t):
            add('ddp dptrain/torch (bests, medians)', build, float(m[2]), float(m[1]))
        if m := re.search(r'comm ([\d.]+) ms, update [\d.]+ ms; total ([\d.]+) ms', t):
            add('ddp per-step comm ms', build, float(m[1]))
            add('ddp per-step total ms', build, float(m[2]))
    elif kind == 'pipeline':
        for m in re.finditer(r'^  (\S+)\s+predicted\s+([\d.]+) /\s+[\d.]+\s+measured\s+([\d.]+) /', t, re.M):
            add(f'pipeline {m[1]} mini-batch ms', build, float(m[3]))
            add(f'pipeline {m[1]} predicted ms', build, float(m[2]))
        for name, pattern in [('hetero planner/naive', r'naive one, measured: ([\d.]+)'),
                              ('recompute auto/all', r'recomputing every block, measured: ([\d.]+)')]:
            if m := re.search(pattern, t):
                add(f'pipeline {name} x', build, float(m[1]))
def span(v):
    meds = sorted(x[1] for x in v)
    a, b = min(x[0] for x in v), meds[len(meds) // 2]
    return min(a, b), max(a, b)
print(f'{"metric":44} {"before":>19} {"after":>19}')
for metric, builds in runs.items():
    if not builds['before'] or not builds['after']:
        continue
    b, a = span(builds['before']), span(builds['after'])
    overlap = 'overlap' if b[0] <= a[1] and a[0] <= b[1] else 'apart'
    print(f'{metric:44} {b[0]:>8.4g}..{b[1]:<9.4g} {a[0]:>8.4g}..{a[1]:<9.4g} {overlap}')
PY
