#!/usr/bin/env bash
# Makes the virtual environment with a current PyTorch from PyPI that the comparison benchmarks use next
# to Debian's python3-torch 1.13 (benchmarks only, never CI: about 2.5 minutes and 5.4 GB).
# Usage: tests/bench/torch-venv.sh [DIR]   (default: $TORCH_VENV, else ~/.cache/dptrain/torch-venv)
#        env TORCH_SPEC (torch==2.15.0): the pip requirement
set -euo pipefail
dir=${1:-${TORCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/dptrain/torch-venv}}
spec=${TORCH_SPEC:-torch==2.15.0}
if [[ -x $dir/bin/python ]] && "$dir/bin/python" -c "import torch" 2>/dev/null; then
  echo "$dir: $("$dir/bin/python" -c 'import torch; print("torch", torch.__version__)') already there"
  exit 0
fi
python=$(command -v python3.11 || command -v python3)
"$python" -m venv "$dir"
"$dir/bin/pip" install --quiet "$spec" numpy
echo "$dir: $("$dir/bin/python" -c 'import torch; print("torch", torch.__version__)')"
