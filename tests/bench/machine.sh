# Sourced by the benchmark scripts: bench_machine DPTRAIN THREADS prints what the numbers were measured on
# (dptrain's machine line for THREADS compute threads: CPU model, instruction sets, BLAS library, kernel set
# and who chose it, convolutions), plus the kernel-related environment as given.
bench_machine() {
  local dptrain=$1 threads=${2:-1}
  echo "# $(OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads "$dptrain" --version | grep '^machine:')"
  echo "# environment: OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE-<unset>} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE-<unset>}" \
       "DPTRAIN_BLAS_KERNELS=${DPTRAIN_BLAS_KERNELS-<unset>}; $(nproc --all) cores; $(date -u +%Y-%m-%dT%H:%MZ)"
}
