#!/usr/bin/env bash
# One call on a GPU machine: install tcsim, run the hardware tests, keep the logs, summarize.
#   bash scripts/gpu_check.sh [MODE]      logs under $OUT (./out when OUT is unset)
# MODE: (none) everything, about 15 minutes on a 16-core H100 machine; the device tool allows
# 10 minutes a command, so there run the parts: m16n8 (the m16n8 shapes and every fact),
# m8n8k4 (the 12 quad-pair variants), smem (shared-memory counters), explore (model fitting),
# kernels (the kernel ladder's bits and counters against its CUDA twins), speed (GPU timings;
# BENCH_ARGS passes options to benchmarks/bench_gpu.py), checks (planted bugs under
# compute-sanitizer and the simulator), cpasync (the cp.async study; STUDY_ARGS passes options).
# mma runs the mma tests for TCSIM_HW_QUALIFIERS (comma list) filtered by TCSIM_K.
# sweep runs benchmarks/bench_sweep.py (issue 35: kernel10's tiles and cuBLAS on every shape).
# blas runs tests/hw/test_blas_hw.py (tcsim.blas against torch's cuBLAS calls; scripts/blas_sweep.py
# measures the plan table itself).
# wgmma runs tests/hw/test_wgmma_hw.py (sm_90a; TCSIM_HW_WGMMA_COUNT random instructions per
# family, default 20,000; fp8 elements for model fitting land in $OUT/wgmma_fp8_elements.npz).
# wmma runs tests/hw/test_wmma_hw.py (fragment maps; TCSIM_HW_WMMA_COUNT per qualifier).
# seeds runs tests/hw/test_seeds_hw.py (the seeds' kernels: bits and counters).
# explain measures the GPU's constants (benchmarks/bench_gpu_constants.py) and times and
# profiles every kernel for the speed model (benchmarks/bench_explain.py --measure).
# hopper runs tests/hw/test_hopper_hw.py (the bits and counters of kernel7 .. kernel10) and the
# ladder's beta-0 bits, bench_gpu.py for kernel6 .. kernel10 with beta 0 and 1 (with the wgmma
# ceiling), benchmarks/clock_power.py (sustained speed, clock and power of kernel10 and cuBLAS)
# and benchmarks/ncu_hopper.py (DRAM, L2 and tensor-pipe counters of each rung and of cuBLAS).
# counters runs every Nsight Compute comparison: each wmma.load/store alone, the seeds' kernels
# and the ladder (tests/hw/test_{wmma,seeds,kernels}_hw.py, -k nsight_compute).
# TCSIM_HW_COUNT sets random mma instructions per qualifier (default 10**6).
# tcsim is installed as users get it (not editable), and the tests run from a copy of tests/
# outside the source tree, so the hardware tests compile the CUDA files the package installed.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
repo=$(pwd)
export PYTHONUNBUFFERED=1
rm -rf build  # setuptools' build/lib from an earlier install would leak stale files into this one
python3 -m pip install --no-deps --no-build-isolation . >"$OUT/install.log" 2>&1 \
  || { cat "$OUT/install.log"; exit 1; }
rm -rf build
# The tests (and pyproject.toml for their pytest settings) in a folder without tcsim/ beside them.
tests_copy=$(mktemp -d)
trap 'rm -rf "$tests_copy"' EXIT
cp -r tests pyproject.toml "$tests_copy/"
(cd "$tests_copy" && python3 -c "import sys, tcsim; from pathlib import Path
where = Path(tcsim.__file__).resolve()
assert not where.is_relative_to(Path(sys.argv[1]).resolve()), f'{where} is the source tree'
print('tcsim', tcsim.__version__, 'installed at', where.parent)" "$repo") | tee "$OUT/installed.txt" \
  || { echo "tcsim is not the installed package"; exit 1; }
# The installed package holds every file it needs (CUDA headers included); no GPU needed.
(cd "$tests_copy" && TCSIM_REPO=$repo python3 -m pytest -q -p no:cacheprovider \
  tests/test_packaging.py tests/test_imports.py) >"$OUT/packaging.log" 2>&1 \
  || { cat "$OUT/packaging.log"; exit 1; }
tail -n 1 "$OUT/packaging.log"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
status=0
mode=${1:-}
all_quals=$(python3 -c "import tcsim; print(','.join(tcsim.supported_qualifiers()))")
if [ "$mode" = m16n8 ]; then
  export TCSIM_HW_QUALIFIERS=$(echo "$all_quals" | tr ',' '\n' | grep -v m8n8k4 | paste -sd,)
  mode=mma
elif [ "$mode" = m8n8k4 ]; then
  export TCSIM_HW_QUALIFIERS=$(echo "$all_quals" | tr ',' '\n' | grep m8n8k4 | paste -sd,)
  export TCSIM_K="m8n8k4"
  mode=mma
fi
# Hw test files (optionally filtered by TCSIM_K), their log, and the summary table.
hw_tests() {
  export TCSIM_HW_LOG="$OUT/hw_results.jsonl"
  rm -f "$TCSIM_HW_LOG"
  (cd "$tests_copy" && python3 -m pytest -m hw -q -rs -p no:cacheprovider \
    "${@/#/tests/hw/}" ${TCSIM_K:+-k "$TCSIM_K"}) 2>&1 | tee "$OUT/pytest_hw.log"
  status=${PIPESTATUS[0]}
  python3 scripts/summarize_hw.py "$TCSIM_HW_LOG" | tee "$OUT/summary.txt"
}
if [ "$mode" = mma ]; then  # only the mma tests, optionally filtered: TCSIM_K="m8n8k4"
  hw_tests test_mma_hw.py
elif [ "$mode" = smem ]; then
  hw_tests test_smem_hw.py
elif [ "$mode" = wgmma ]; then  # wgmma.mma_async against the simulator (issue 14)
  hw_tests test_wgmma_hw.py
elif [ "$mode" = wmma ]; then  # WMMA: fragment maps and wmma.mma (issue 16)
  hw_tests test_wmma_hw.py
elif [ "$mode" = seeds ]; then  # the seeds' kernels: bits and counters against the twins
  hw_tests test_seeds_hw.py
elif [ "$mode" = counters ]; then  # every trace against Nsight Compute
  TCSIM_K=nsight_compute hw_tests test_wmma_hw.py test_seeds_hw.py test_kernels_hw.py
elif [ "$mode" = explain ]; then  # the speed model's constants and its validation (issue 17)
  # CONSTANTS=0 skips the constants; EXPLAIN_ARGS="--kernels ..." measures only those kernels.
  if [ "${CONSTANTS:-1}" = 1 ]; then
    timeout 300 python3 benchmarks/bench_gpu_constants.py --json "$OUT/gpu_constants.json" 2>&1 \
      | tee "$OUT/gpu_constants.log"
  fi
  python3 benchmarks/bench_explain.py --measure "$OUT/explain.json" ${EXPLAIN_ARGS:-} 2>&1 \
    | tee "$OUT/pytest_hw.log"
  status=${PIPESTATUS[0]}
elif [ "$mode" = hopper ]; then  # issue 15: bits and counters against the twins, speed
  hw_tests test_hopper_hw.py test_kernels_hw.py::test_beta_zero_ignores_c_on_the_gpu
  python3 benchmarks/bench_gpu.py --kernels kernel6 kernel7 kernel8 kernel9 kernel10 --runs 15 \
    --beta 0 1 --json "$OUT/bench_gpu.json" ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench_gpu.log"
  python3 benchmarks/clock_power.py --json "$OUT/clock_power.json" 2>&1 \
    | tee "$OUT/clock_power.log"
  python3 benchmarks/ncu_hopper.py --json "$OUT/ncu_hopper.json" 2>&1 | tee "$OUT/ncu_hopper.log"
elif [ "$mode" = blas ]; then  # issue 32: tcsim.blas against torch/cuBLAS, every element
  # TCSIM_BLAS_CALLS="table,held-out" call counts; wrong calls are kept under $OUT/dump.
  TCSIM_BLAS_DUMP="$OUT/dump" hw_tests test_blas_hw.py
elif [ "$mode" = sweep ]; then  # issue 35: kernel10's tile variants against cuBLAS, every shape
  # SWEEP_ARGS="--shapes 1536x1536x1536 ..." picks the shapes (default: the issue's sweep).
  (cd benchmarks && python3 bench_sweep.py --measure "$OUT/bench_sweep.json" --runs 10 \
    ${SWEEP_ARGS:-} && python3 bench_sweep.py --table "$OUT/bench_sweep.json") 2>&1 \
    | tee "$OUT/pytest_hw.log"
  status=${PIPESTATUS[0]}
elif [ "$mode" = kernels ]; then  # the kernel ladder: bits and counters against the twins
  hw_tests test_kernels_hw.py
elif [ "$mode" = checks ]; then  # planted bugs: compute-sanitizer against the simulator
  hw_tests test_checks_hw.py
elif [ "$mode" = speed ]; then  # GPU speed: mma.sync ceilings, cuBLAS, the ladder (issue 5)
  python3 benchmarks/bench_gpu.py --json "$OUT/bench_gpu.json" ${BENCH_ARGS:-} 2>&1 \
    | tee "$OUT/bench_gpu.log"
  status=${PIPESTATUS[0]}
  echo "bench_gpu: exit $status" >"$OUT/pytest_hw.log"
elif [ "$mode" = cpasync ]; then  # the cp.async wavefront study (notes/cp-async-counters.md)
  python3 scripts/study_cp_async.py "$OUT/cp_async_study.jsonl" ${STUDY_ARGS:-} 2>&1 \
    | tee "$OUT/pytest_hw.log"
  status=${PIPESTATUS[0]}
elif [ "$mode" = explore ]; then
  python3 scripts/explore_numerics.py "$OUT" "${EXPLORE_COUNT:-20000}" 2>&1 | tee "$OUT/explore.log"
  status=$?
else
  # Studies that need the GPU machine's tools: m8n8k4 lowering (SASS), the shared counters ncu has.
  nvcc -arch=sm_90 -cubin -o "$OUT/study_m8n8k4.cubin" scripts/study_m8n8k4.cu \
    && cuobjdump -sass "$OUT/study_m8n8k4.cubin" >"$OUT/m8n8k4_sass.txt" 2>&1
  rm -f "$OUT/study_m8n8k4.cubin"
  ncu=$(python3 -c "from tcsim.hw.ncu import find_ncu; print(find_ncu())" 2>/dev/null)
  [ -n "$ncu" ] && "$ncu" --query-metrics --chip gh100 2>&1 | grep -iE "shared|ldsm|ldgsts" \
    >"$OUT/ncu_shared_metrics.txt"
  export TCSIM_HW_LOG="$OUT/hw_results.jsonl"
  rm -f "$TCSIM_HW_LOG"
  start=$(date +%s)
  (cd "$tests_copy" && python3 -m pytest -m hw -q -rs -p no:cacheprovider tests) 2>&1 \
    | tee "$OUT/pytest_hw.log"
  status=${PIPESTATUS[0]}
  echo "pytest -m hw: exit $status in $(( $(date +%s) - start )) s" | tee -a "$OUT/pytest_hw.log"
  python3 scripts/summarize_hw.py "$TCSIM_HW_LOG" | tee "$OUT/summary.txt"
fi
echo "== summary"
tail -n 2 "$OUT/pytest_hw.log" 2>/dev/null
exit $status
