// Timing bounds, not kernels: kernel8's twin (hopper.cuh) with a part taken out, to time the
// rest (scripts/explore_epilogue.py; bench_gpu_constants.py's tma_gemm_feed; ncu_tma.py).
// benchmarks/explore.py puts this header ahead of the twin's source and sets the switches:
//   EXPLORE_NO_C         the epilogue loads no C (D then ignores C: the contract only when beta
//                        is 0 and C finite)
//   EXPLORE_NO_D         kernel8 stores no D (nor does the arithmetic only D needs)
//   EXPLORE_NO_EPILOGUE  no epilogue at all
//   EXPLORE_NO_MMA       the consumers issue no wgmma (the tiles still arrive and are
//                        released): the kernel is its TMA copies alone
// D and the epilogue stay behind a test of alpha that never holds, so that the compiler keeps
// the accumulators (and the work that feeds them) that it would otherwise drop as unused.
#pragma once

#ifndef EXPLORE_NO_C
#define EXPLORE_NO_C 0
#endif
#ifndef EXPLORE_NO_D
#define EXPLORE_NO_D 0
#endif
#ifndef EXPLORE_NO_EPILOGUE
#define EXPLORE_NO_EPILOGUE 0
#endif
#ifndef EXPLORE_NO_MMA
#define EXPLORE_NO_MMA 0
#endif

#define EXPLORE_NEVER(alpha) ((alpha) == 12345.0f)
#define EXPLORE_KEEP_C_LOADS(alpha) (!EXPLORE_NO_C)
#define EXPLORE_KEEP_D_STORES(alpha) (!EXPLORE_NO_D || EXPLORE_NEVER(alpha))
#define EXPLORE_KEEP_EPILOGUE(alpha) (!EXPLORE_NO_EPILOGUE || EXPLORE_NEVER(alpha))
#define EXPLORE_KEEP_MMA(alpha) (!EXPLORE_NO_MMA)
// hopper.cuh's hook: whether the kernel keeps `part`
#define TIMING_KEEP(part, alpha) EXPLORE_KEEP_##part(alpha)
