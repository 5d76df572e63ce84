#!/usr/bin/env bash
# Secure-noise throughput: ppdp.noise against numpy's textbook samplers and OpenDP's
# make_laplace / make_gaussian, in one run, pinned to one core.
#
# OpenDP is only a *peer* to compare with: it lives in its own venv (benchmarks/.peer-venv,
# git-ignored) and never becomes a dependency of ppdp. ppdp itself is imported from src/.
#
# Usage: benchmarks/noise/run.sh [extra args for bench_noise.py, e.g. --samples 1000000]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="$repo/benchmarks/.peer-venv"
python="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ]; then
    echo "creating the peer venv at $venv (one-off)" >&2
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet opendp numpy scipy pandas cryptography pyyaml
fi

pin=()
if command -v taskset >/dev/null 2>&1; then
    pin=(taskset -c 0)
fi

cd "$repo"
PYTHONPATH="$repo/src" OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \
    "${pin[@]}" "$venv/bin/python" "$here/bench_noise.py" "$@"
