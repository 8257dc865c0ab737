"""Study: which box rows a TMA multicast counts more sectors for (Nsight Compute's
l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld), cluster_m 2 against 1.

    python scripts/study_multicast_bytes.py --json FILE

On rows of whole 32-byte sectors a cluster's TMA bytes equal the trace's (A and all of B in
every SM); at rows 16 bytes into a sector every other row (N = 600, 776) the H100 counted 5-6%
more (tests/hw/test_cluster_hw.py). Each case here isolates one kind of box row: K ragged,
N's last box partly or wholly past the edge (8, 16, 24, 32, 48 columns inside), rows
aligned or not, on kernel8 (C by ordinary loads: the TMA bytes are A's and B's alone), each
with and without clusters. Prints and writes, per case, the trace's and ncu's bytes.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

import tcsim
from tcsim.hw import runtime
from tcsim.hw.kernels import twin_launch
from tcsim.hw.ncu import profile
from tcsim.trace import TMA_LD_BYTES, TMA_LD_INST

NARROW = {"block_n": 128, "warp_n": 128}
# (M, N, K), tile params: N * 2 bytes % 32 is 0 (aligned rows) or 16 (every other row not)
CASES = [((256, 1024, 512), NARROW),   # control: all whole
         ((256, 1024, 520), NARROW),   # K ragged, aligned
         ((200, 1024, 512), NARROW),   # M ragged (A only)
         ((256, 1040, 512), NARROW),   # aligned; last column: box 0 16 columns, box 1 out
         ((256, 1072, 512), NARROW),   # aligned; box 0 48 columns, box 1 out
         ((256, 1120, 512), NARROW),   # aligned; box 0 whole, box 1 32 columns
         ((256, 1032, 512), NARROW),   # misaligned; box 0 8 columns, box 1 out
         ((256, 1048, 512), NARROW),   # misaligned; box 0 24 columns
         ((256, 1096, 512), NARROW),   # misaligned; box 0 whole, box 1 8 columns
         ((256, 1112, 512), NARROW),   # misaligned; box 0 whole, box 1 24 columns
         ((256, 8200, 512), NARROW),   # misaligned; 64 whole columns, one of 8 columns
         ((256, 1032, 512), {}),       # 128 x 256, misaligned; boxes 0 (8 columns), 1-3 out
         ((256, 1280, 512), {})]       # 128 x 256 control


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", required=True)
    args = parser.parse_args()
    rng = np.random.default_rng()
    launches, rows = [], []
    for (M, N, K), tile in CASES:
        A = rng.standard_normal((M, K)).astype(np.float16)
        B = rng.standard_normal((K, N)).astype(np.float16)
        C = rng.standard_normal((M, N)).astype(np.float16)
        for c in (1, 2):
            params = {"accumulate": "f32", "persistent_blocks": 4, "cluster_m": c, **tile}
            launches.append(twin_launch("kernel8", A, B, C, 1.0, 0.5,
                                        label=f"{M}x{N}x{K} {tile} c{c}", **params))
            trace = tcsim.trace("kernel8", M, N, K, beta=1.0, **params)
            rows.append({"shape": [M, N, K], "params": params,
                         "trace": {k: trace.totals[k] for k in (TMA_LD_INST, TMA_LD_BYTES)},
                         "sites": {s.name: s.sectors for s in trace.sites.values()
                                   if s.space in ("tma", "tma_received")}})
    measured = profile(launches, (TMA_LD_INST, TMA_LD_BYTES,
                                  "l1tex__m_xbar2l1tex_read_sectors_pipe_tma.sum",
                                  "lts__t_sectors_srcunit_tex_op_read.sum"))
    for row, got in zip(rows, measured):
        row["ncu"] = got
        extra = got[TMA_LD_BYTES] - row["trace"][TMA_LD_BYTES]
        print(f"{row['shape']} {row['params'].get('block_n', 256)} c{row['params']['cluster_m']}:"
              f" trace {row['trace'][TMA_LD_BYTES]:,} ncu {got[TMA_LD_BYTES]:,.0f} extra "
              f"{extra:,.0f} bytes ({extra / 32:,.0f} sectors)", flush=True)
    with open(args.json, "w") as f:
        json.dump({"device": runtime.device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
