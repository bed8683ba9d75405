#!/usr/bin/env bash
# BLAS kernel selection, end to end (lib/machine), on whatever CPU this is: every expectation comes from
# `dptrain --version`'s machine line (the kernel set this machine runs, who chose it, and, when dptrain
# corrected the library, the set the library picked itself):
#   1. a run's machine line and summary.json's "machines" say the same as --version, with the CPU, its
#      instruction sets and the threads;
#   2. a kernel set requested with DPTRAIN_BLAS_KERNELS is put into effect on every rank (re-executing
#      before MPI starts, under dptrain's own mpirun and a foreign one) and is reported as the request's,
#      also when it is the set the library or dptrain would have run anyway; training matches the default
#      kernels' losses to 3 decimals; "auto" is no request, "library" keeps the library's pick;
#   3. OPENBLAS_CORETYPE given by the user is kept and reported as the user's;
#   4. a request the CPU cannot run, or that names no kernel set, is one line and exit 2, nothing written.
# With KIND = misdetected or recognised only the checks that exist on that kind of CPU run (an OpenBLAS
# that does not know this CPU and so picks old kernels, which dptrain replaces; or one that knows it), and
# the script exits 77 (skipped) on the other kind. Prescott (SSE3) runs on every x86-64 CPU, so the test
# requests it and never a newer set than the machine's.
# Usage: bash blas_kernels.sh PATH/TO/dptrain REPO_ROOT [misdetected|recognised]
set -u
source "$(dirname "$0")/lib/tap.sh"
KIND=${3:-any}
# dptrain's own records of an earlier exec are never the test's to inherit (OPENBLAS_CORETYPE is: a
# machine may need it, and the checks then say so).
unset DPTRAIN_BLAS_KERNELS DPTRAIN_BLAS_CHOSEN DPTRAIN_BLAS_LIBRARY_PICK DPTRAIN_BLAS_REJECTED DPTRAIN_BLAS_REEXEC
if [[ $(uname -m) != x86_64 ]]; then
  echo "ok - # SKIP OpenBLAS's kernel sets are chosen on x86-64 only; this is $(uname -m)"
  exit 77
fi
cd "$TMP" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

cat >job.toml <<'TOML'
[job]
name = "blas"
seed = 3
[model]
hidden = [64]
[data]
dataset = "synthetic"
train_samples = 1024
[train]
steps = 12
global_batch = 64
threads = 1
[launch]
ranks = 2
[log]
every = 1
progress = "plain"
TOML

# field DIR KEY: summary.json's machines[0][KEY] when every rank ran alike, else "kinds=N"
field() {
  python3 -c "import json,sys; m=json.load(open(sys.argv[1]))['machines']; print(m[0][sys.argv[2]] if len(m)==1 else 'kinds=%d' % len(m))" \
    "$1/summary.json" "$2"
}
losses() { python3 -c "import json,sys; print(' '.join(repr(json.loads(l)['loss']) for l in open(sys.argv[1]) if '\"train\"' in l and '\"rank\":0' in l))" "$1/metrics.jsonl"; }
# same_losses A B: equal within 1e-4 relative, step by step (other kernels sum in another order; text
# rounded to 3 decimals could differ in the last digit on some machine)
same_losses() {
  python3 -c "import sys; a, b = sys.argv[1].split(), sys.argv[2].split(); sys.exit(not (len(a) == len(b) > 0 and all(abs(float(x) - float(y)) <= 1e-4 * max(1, abs(float(y))) for x, y in zip(a, b))))" \
    "$(losses "$1")" "$(losses "$2")"
}
machine_line() { grep -m1 '^machine: ' "$1"; }
# kernels_of LINE: the set a machine line names; who_of LINE: its parenthesis
kernels_of() { sed -n 's/^machine: .*OpenBLAS [0-9.]* \([A-Za-z0-9_]*\) kernels (.*/\1/p' <<<"$1"; }
who_of() { sed -n 's/^machine: .*OpenBLAS [0-9.]* [A-Za-z0-9_]* kernels (\([^)]*\)).*/\1/p' <<<"$1"; }

# What this machine runs, and who chose it, by --version.
version_line=$("$DPTRAIN" --version | grep '^machine: ')
K=$(kernels_of "$version_line")
WHO=$(who_of "$version_line")
case $WHO in
  "the library's choice"*) SOURCE=library LIBRARY_PICK=$K this_kind=recognised ;;
  "chosen by dptrain; instead of "*) SOURCE=dptrain LIBRARY_PICK=${WHO#chosen by dptrain; instead of } this_kind=misdetected ;;
  "chosen by dptrain"*) SOURCE=dptrain LIBRARY_PICK="" this_kind=misdetected ;;
  "OPENBLAS_CORETYPE, set by the user"*) SOURCE=OPENBLAS_CORETYPE LIBRARY_PICK="" this_kind=user ;;
  *) SOURCE="" LIBRARY_PICK="" this_kind=unknown ;;
esac
echo "# this machine: $K kernels ($WHO); kind: $this_kind"
if [[ -z $K || -z $SOURCE ]]; then
  not_ok "--version" "names no kernel set and chooser: $version_line"
  finish
  exit
fi
if [[ $KIND != any && $KIND != "$this_kind" ]]; then
  echo "ok - # SKIP the $KIND checks: OpenBLAS's own pick on this CPU makes it $this_kind ($version_line)"
  exit 77
fi

"$DPTRAIN" run job.toml --out base >base.log 2>&1 || not_ok "default run" "$(tail -3 base.log)"

if [[ $KIND == any ]]; then
  # 1. the default run says what --version says
  line=$(machine_line base.log)
  [[ $(kernels_of "$line") == "$K" && $(who_of "$line") == "$WHO" && $line == *", 1 thread; convolutions: "* ]] &&
    ok "default run: $K kernels ($WHO)" || not_ok "default run's machine line" "$line"
  [[ $(field base blas_kernels) == "$K" && $(field base blas_kernels_source) == "$SOURCE" ]] &&
    ok "summary: $K, $SOURCE" || not_ok "summary" "$(field base blas_kernels) $(field base blas_kernels_source)"
  [[ $(field base threads) == 1 ]] || not_ok "summary threads" "$(field base threads)"
  [[ $(python3 -c "import json; print(json.load(open('base/summary.json'))['machines'][0]['ranks'])") == "[0, 1]" ]] ||
    not_ok "summary machines" "do not list both ranks"
  python3 -c "import json; m=json.load(open('base/summary.json'))['machines'][0]; assert 'sse3' in m['isa'] and m['cpu'] and m['blas']=='OpenBLAS'" ||
    not_ok "summary" "lacks the CPU or its instruction sets"

  # 2. requests, by dptrain's own launch and under a foreign mpirun: Prescott, the library's own pick
  # (on a CPU OpenBLAS does not know, that is Prescott too: the case this test once failed), dptrain's pick
  requests=(Prescott)
  [[ -n $LIBRARY_PICK && $LIBRARY_PICK != Prescott ]] && requests+=("$LIBRARY_PICK")
  [[ $K != Prescott && $K != "$LIBRARY_PICK" ]] && requests+=("$K")
  for set in "${requests[@]}"; do
    lower=${set,,}  # any case
    DPTRAIN_BLAS_KERNELS=$lower "$DPTRAIN" run job.toml --out "self-$set" >"self-$set.log" 2>&1 ||
      not_ok "DPTRAIN_BLAS_KERNELS=$lower" "run failed: $(tail -3 "self-$set.log")"
    DPTRAIN_BLAS_KERNELS=$lower mpirun -np 2 -x DPTRAIN_BLAS_KERNELS --mca btl self,vader "$DPTRAIN" run job.toml \
      --out "foreign-$set" >"foreign-$set.log" 2>&1 || not_ok "foreign mpirun, $set" "run failed: $(tail -3 "foreign-$set.log")"
    for run in "self-$set" "foreign-$set"; do
      line=$(machine_line $run.log)
      [[ $(kernels_of "$line") == "$set" && $(who_of "$line") == "set by DPTRAIN_BLAS_KERNELS"* ]] &&
        ok "$run: $set kernels, set by DPTRAIN_BLAS_KERNELS" || not_ok "$run: machine line" "$line"
      [[ $(field $run blas_kernels) == "$set" && $(field $run blas_kernels_source) == DPTRAIN_BLAS_KERNELS ]] &&
        ok "$run: summary says every rank ran the request" ||
        not_ok "$run: summary" "$(field $run blas_kernels) $(field $run blas_kernels_source)"
      same_losses $run base ||
        not_ok "$run: losses" "differ from the default kernels' ($(losses $run) vs $(losses base))"
    done
  done
  # "auto" is no request; "library" keeps the library's pick (or the user's OPENBLAS_CORETYPE)
  DPTRAIN_BLAS_KERNELS=auto "$DPTRAIN" run job.toml --out auto >auto.log 2>&1 || not_ok "auto" "$(tail -3 auto.log)"
  [[ $(machine_line auto.log) == "$(machine_line base.log)" && $(field auto blas_kernels_source) == "$SOURCE" ]] &&
    ok "DPTRAIN_BLAS_KERNELS=auto is the default" || not_ok "auto" "$(machine_line auto.log)"
  if [[ -n $LIBRARY_PICK ]]; then
    DPTRAIN_BLAS_KERNELS=library "$DPTRAIN" run job.toml --out lib >lib.log 2>&1 || not_ok "library" "$(tail -3 lib.log)"
    line=$(machine_line lib.log)
    [[ $(kernels_of "$line") == "$LIBRARY_PICK" && $(who_of "$line") == "the library's choice"* &&
       $(field lib blas_kernels_source) == library ]] &&
      ok "DPTRAIN_BLAS_KERNELS=library: $LIBRARY_PICK, the library's" || not_ok "library" "$line"
  else
    echo "ok - # SKIP DPTRAIN_BLAS_KERNELS=library: the library's own pick is not known here ($WHO)"
  fi

  # 3. the user's OPENBLAS_CORETYPE
  OPENBLAS_CORETYPE=Prescott "$DPTRAIN" run job.toml --out user >user.log 2>&1 || not_ok "user run" "$(tail -3 user.log)"
  [[ $(machine_line user.log) == *"Prescott kernels (OPENBLAS_CORETYPE, set by the user, is kept"* &&
     $(field user blas_kernels_source) == OPENBLAS_CORETYPE ]] &&
    ok "OPENBLAS_CORETYPE=Prescott is kept" || not_ok "user" "$(machine_line user.log)"

  # 4. requests that cannot be met
  # SapphireRapids: OpenBLAS before 0.3.22 has no such kernels, and a CPU without AMX cannot run them;
  # a newer OpenBLAS on an AMX CPU runs them, and there is nothing to refuse.
  sapphire="has no such kernels"
  [[ $version_line != *"OpenBLAS 0.3.2"[01]* && $version_line != *"OpenBLAS 0.3."[01]* ]] && sapphire="lacks their instructions"
  for bad in "Skylake-X:names no OpenBLAS kernel set" "SapphireRapids:$sapphire"; do
    value=${bad%%:*} want=${bad#*:}
    if [[ $value == SapphireRapids && $want == "lacks their instructions" ]] &&
       DPTRAIN_BLAS_KERNELS=SapphireRapids "$DPTRAIN" --version >/dev/null 2>&1; then
      echo "ok - # SKIP DPTRAIN_BLAS_KERNELS=SapphireRapids: this CPU and OpenBLAS run those kernels"
      continue
    fi
    out=$(DPTRAIN_BLAS_KERNELS=$value "$DPTRAIN" run job.toml --out never 2>&1)
    status=$?
    [[ $status == 2 && $(printf '%s\n' "$out" | wc -l) == 1 && $out == *"$want"* && ! -e never ]] &&
      ok "DPTRAIN_BLAS_KERNELS=$value refused" || not_ok "DPTRAIN_BLAS_KERNELS=$value" "exit $status: '$out'"
  done
fi

if [[ $KIND == misdetected ]]; then
  # The library runs old kernels here; dptrain re-executes every rank with better ones, also ranks that a
  # foreign mpirun starts with nothing set, and says which the library had picked.
  line=$(machine_line base.log)
  [[ $(kernels_of "$line") == "$K" && $(who_of "$line") == "$WHO" && $(field base blas_kernels_source) == dptrain ]] &&
    ok "dptrain's launch: $K instead of $LIBRARY_PICK" || not_ok "dptrain's launch" "$(machine_line base.log)"
  mpirun -np 2 --mca btl self,vader "$DPTRAIN" run job.toml --out foreign >foreign.log 2>&1 ||
    not_ok "foreign mpirun" "$(tail -3 foreign.log)"
  [[ $(field foreign blas_kernels) == "$K" && $(field foreign blas_kernels_source) == dptrain ]] &&
    ok "a foreign mpirun's ranks re-execute themselves onto $K" ||
    not_ok "foreign mpirun" "$(field foreign blas_kernels) $(field foreign blas_kernels_source)"
  if [[ -n $LIBRARY_PICK ]]; then
    DPTRAIN_BLAS_KERNELS=library "$DPTRAIN" run job.toml --out lib >lib.log 2>&1 || not_ok "library" "$(tail -3 lib.log)"
    [[ $(machine_line lib.log) == *"$LIBRARY_PICK kernels (the library's choice; this CPU can run "* ]] &&
      ok "DPTRAIN_BLAS_KERNELS=library says the CPU can run better" || not_ok "library" "$(machine_line lib.log)"
  fi
fi

if [[ $KIND == recognised ]]; then
  # The library's pick is kept: no re-execution, under a foreign mpirun either, and nothing to add.
  line=$(machine_line base.log)
  [[ $(kernels_of "$line") == "$K" && $(who_of "$line") == "$WHO" && $(field base blas_kernels_source) == library ]] &&
    ok "dptrain keeps the library's $K" || not_ok "dptrain's launch" "$(machine_line base.log)"
  mpirun -np 2 --mca btl self,vader "$DPTRAIN" run job.toml --out foreign >foreign.log 2>&1 ||
    not_ok "foreign mpirun" "$(tail -3 foreign.log)"
  [[ $(field foreign blas_kernels) == "$K" && $(field foreign blas_kernels_source) == library ]] &&
    ok "a foreign mpirun's ranks keep $K" ||
    not_ok "foreign mpirun" "$(field foreign blas_kernels) $(field foreign blas_kernels_source)"
fi

finish
