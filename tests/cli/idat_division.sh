#!/usr/bin/env bash
# I-DAT's division on a cluster the job describes (issue 25): 4 ranks, [cluster] speeds 1, 1, 0.4, 0.4,
# emulated as a constant slowdown of ranks 2 and 3:
#  1. the first step is divided by the described speeds (run and `dptrain plan` alike), not equally;
#  2. once converged (after step 50) the division changes at most 5 times in any 100 steps, and a line
#     is logged only when it changes (each logged division differs from the one before);
#  3. --resume continues from the division in the checkpoint; on another rank count it starts from the
#     described speeds of the new launch.
# Usage: bash idat_division.sh PATH/TO/dptrain REPO_ROOT
set -u
source "$(dirname "$0")/lib/tap.sh"
cd "$TMP" || exit 1
cat >job.toml <<'TOML'
[job]
seed = 3
[model]
hidden = [128, 64]
[data]
dataset = "synthetic"
train_samples = 16384
[train]
steps = 300
global_batch = 32
threads = 1
[parallel.balance]
mode = "idat"
[cluster]
speeds = [1, 1, 0.4, 0.4]
[cluster.emulate]
slowdown = [1, 1, 2.5, 2.5]
[launch]
ranks = 4
[log]
every = 50
progress = "plain"
trace = false
[checkpoint]
every = 150
TOML

# 1. the first division
"$DPTRAIN" plan job.toml >plan.txt 2>&1
[[ $(grep -A6 "^first division (from the speeds \[cluster\] describes):" plan.txt | awk '$1 ~ /^[0-3]$/ {printf "%s ", $3}') == "11 11 5 5 " ]] &&
  ok "plan: the first division from the described speeds" || not_ok "plan" "$(grep -A3 'first division' plan.txt)"
"$DPTRAIN" run job.toml --out run >run.log 2>&1 || not_ok "run" "$(tail -3 run.log)"
grep -q "first step's shares: 11 11 5 5$" run.log && ok "run: the first step divided 11 11 5 5 by the described speeds" ||
  not_ok "run's first shares" "$(grep "first step's shares" run.log)"

# 2. changes after convergence, and one line per change
mapfile -t changes < <(sed -n 's/^step \([0-9]*\): I-DAT divides the batch as \(.*\)$/\1 \2/p' run.log)
worst=0
for ((from = 51; from + 99 <= 300; from += 10)); do
  n=0
  for c in "${changes[@]}"; do (( ${c%% *} >= from && ${c%% *} < from + 100 )) && n=$((n + 1)); done
  ((n > worst)) && worst=$n
done
((worst <= 5)) && ok "after step 50 the division changed at most $worst times in 100 steps (${#changes[@]} changes in all)" ||
  not_ok "settled division" "$worst changes in 100 steps: ${changes[*]}"
previous="11 11 5 5" repeated=""
for c in "${changes[@]}"; do
  [[ ${c#* } == "$previous" ]] && repeated+="step ${c%% *} "
  previous=${c#* }
done
[[ -z $repeated ]] && ok "a division is logged only when it changes" || not_ok "repeated division lines" "$repeated"
last=${previous}

# 3. resume: the checkpoint's division; another rank count: the described speeds
"$DPTRAIN" run job.toml --out run --resume --set train.steps=330 >resume.log 2>&1 || not_ok "resume" "$(tail -3 resume.log)"
# The checkpoint of step 300 holds the division in force after step 300: the last one logged.
grep -q "first step's shares: $last$" resume.log && ok "--resume continues with the checkpoint's division ($last)" ||
  not_ok "resumed shares" "$(grep "first step's shares" resume.log), the run ended with $last"
"$DPTRAIN" run job.toml --out run --resume --set train.steps=340 --set launch.ranks=2 --set 'cluster.speeds=[1, 0.4]' \
  --set 'cluster.emulate.slowdown=[1, 2.5]' >two.log 2>&1 || not_ok "resume on 2 ranks" "$(tail -3 two.log)"
grep -q "first step's shares: 23 9$" two.log && ok "on 2 ranks: from the described speeds (23 9)" ||
  not_ok "2-rank shares" "$(grep "first step's shares" two.log)"
finish
