# Sourced by the benchmark scripts. bench_machine DPTRAIN THREADS prints what the numbers were measured on
# (dptrain's machine line for THREADS compute threads: CPU model, instruction sets, BLAS library, kernel set
# and who chose it, convolutions), plus the kernel-related environment as given.
bench_machine() {
  local dptrain=$1 threads=${2:-1}
  echo "# $(OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads "$dptrain" --version | grep '^machine:')"
  echo "# environment: OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE-<unset>} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE-<unset>}" \
       "DPTRAIN_BLAS_KERNELS=${DPTRAIN_BLAS_KERNELS-<unset>}; $(nproc --all) cores; $(date -u +%Y-%m-%dT%H:%MZ)"
}

# torch_pythons: the interpreters the comparisons run PyTorch under, one per line: $PYTHONS when set,
# else Debian's /usr/bin/python3 (python3-torch 1.13) and, when tests/bench/torch-venv.sh has made it,
# the current PyTorch from PyPI in its virtual environment ($TORCH_VENV, else ~/.cache/dptrain/torch-venv).
torch_pythons() {
  local venv=${TORCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/dptrain/torch-venv}
  if [[ -n ${PYTHONS:-} ]]; then
    printf '%s\n' $PYTHONS
  else
    echo /usr/bin/python3
    [[ -x $venv/bin/python ]] && echo "$venv/bin/python"
  fi
  return 0
}
