#!/usr/bin/env bash
# One call on a GPU machine: install tcsim, run the hardware tests and studies, keep the logs.
#   bash scripts/gpu_check.sh [explore]   (logs under $OUT, or ./out when OUT is unset)
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install --no-deps --no-build-isolation -e . >"$OUT/install.log" 2>&1 || { cat "$OUT/install.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
mode=${1:-all}
status=0
if [ "$mode" = explore ]; then
  python3 scripts/explore_numerics.py "$OUT" "${EXPLORE_COUNT:-20000}" 2>&1 | tee "$OUT/explore.log"
  status=$?
else
  python3 -m pytest -m hw -q -rs tests 2>&1 | tee "$OUT/pytest_hw.log"
  status=$?
fi
echo "== summary"
tail -n 3 "$OUT"/*.log
exit $status
