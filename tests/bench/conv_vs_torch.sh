#!/usr/bin/env bash
# The convolutions alone, forward and backward, on the example CNN's layers: dptrain's production path
# (oneDNN), its sgemm reference and each PyTorch given, one thread, repetitions interleaved between the
# runners (within bench_conv_step, its two implementations call by call). Prints the machine lines and,
# per layer, median ms of forward and backward with the speedups of the production path.
# Usage: tests/bench/conv_vs_torch.sh [BUILD_DIR]   env: REPS (3 rounds), THREADS (1), BATCH (64),
#        PYTHONS (as in models_vs_torch.sh)
set -euo pipefail
cd "$(dirname "$0")/../.."
source tests/bench/machine.sh
build=${1:-build}
rounds=${REPS:-3} threads=${THREADS:-1} batch=${BATCH:-64}
bench="$build/tests/bench/bench_conv_step"
[[ -x $bench ]] || { echo "missing $bench: build first (scripts/build.sh)" >&2; exit 2; }
mapfile -t pythons < <(torch_pythons)
export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads
bench_machine "$build/dptrain" "$threads"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for ((r = 0; r < rounds; r++)); do
  "$bench" --batch "$batch" --threads "$threads" >> "$tmp/dptrain"
  for i in "${!pythons[@]}"; do
    "${pythons[$i]}" tests/bench/torch_conv.py --batch "$batch" --threads "$threads" >> "$tmp/torch$i"
  done
done
/usr/bin/python3 - "$tmp" "${#pythons[@]}" <<'PY'
import collections, json, statistics, sys
tmp, n = sys.argv[1], int(sys.argv[2])
rows = collections.defaultdict(list)  # (runner, layer) -> lines
machines, shapes, runners = [], {}, []
for f in ["dptrain"] + [f"torch{i}" for i in range(n)]:
    for line in open(f"{tmp}/{f}"):
        r = json.loads(line)
        if "machine" in r:
            if r["machine"] not in machines: machines.append(r["machine"])
            continue
        rows[(r["runner"], r["layer"])].append(r)
        shapes[r["layer"]] = r["shape"]
        if r["runner"] not in runners: runners.append(r["runner"])
for m in machines: print("#", m)
med = lambda r, l, k: statistics.median(x[k] for x in rows[(r, l)])
prod = "dptrain production"
print(f"{'layer':7} {'shape':24} | " + " | ".join(f"{r[:22]:>22} fwd/bwd ms" for r in runners) +
      " | production speedup fwd/bwd over " + ", ".join(r for r in runners if r != prod))
tot = collections.defaultdict(float)
for layer, shape in shapes.items():
    cells, speed = [], []
    for r in runners:
        f, b = med(r, layer, "fwd_median"), med(r, layer, "bwd_median")
        tot[(r, "f")] += f; tot[(r, "b")] += b
        cells.append(f"{f:13.3f} / {b:7.3f}")
    pf, pb = med(prod, layer, "fwd_median"), med(prod, layer, "bwd_median")
    for r in runners:
        if r != prod:
            speed.append(f"{med(r, layer, 'fwd_median') / pf:.2f}x/{med(r, layer, 'bwd_median') / pb:.2f}x")
    print(f"{layer:7} {shape:24} | " + " | ".join(cells) + " | " + ", ".join(speed))
cells = [f"{tot[(r, 'f')]:13.3f} / {tot[(r, 'b')]:7.3f}" for r in runners]
speed = [f"{tot[(r, 'f')] / tot[(prod, 'f')]:.2f}x/{tot[(r, 'b')] / tot[(prod, 'b')]:.2f}x" for r in runners if r != prod]
print(f"{'sum':7} {'(each layer once)':24} | " + " | ".join(cells) + " | " + ", ".join(speed))
PY
