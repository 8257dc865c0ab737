"""Shared-memory instructions on the GPU: one probe launch (`probe_launch`, the kernels of
`tcsim.hw.memory.smem_probes`) and what Nsight Compute counts of it (`measured`)."""

from __future__ import annotations

import numpy as np

from ...memory.access import parse_instruction
from ...trace import LDGSTS_CONFLICTS, LDGSTS_WAVEFRONTS
from ..launch import Launch
from .smem_probes import SMEM_BYTES, kernel_name

# cp.async.ca: l1tex__data_pipe_lsu_wavefronts_mem_shared also counts 1 wavefront of the probe
# with no copy executed and 3 more once a copy executes (docs/bank-conflicts.md).
CA_OTHER_WAVEFRONTS = 4


def probe_launch(spelling: str, shared, src: np.ndarray, sources=None, mode: int = 0,
                 label: str = "") -> Launch:
    """One warp running one probe: lane l at shared ``shared[l]`` (None: left out), copying
    (cp.async) from global ``SMEM_BYTES + sources[l]`` of ``src``."""
    addresses = [-1 if a is None else int(a) for a in shared]
    sources = [0] * 32 if sources is None else [int(g) for g in sources]
    return Launch("smem_probes.cu", kernel_name(spelling), (1,), (32,),
                  [np.array(addresses + sources, np.int32), np.zeros(32 * 4, np.uint32), src,
                   np.zeros(SMEM_BYTES // 4, np.uint32), mode], label)


def measured(spelling: str, counters: dict) -> tuple[float, float]:
    """(wavefronts, conflicts) of a probe from the Nsight Compute counters that see it."""
    if spelling.startswith("cp.async.cg"):  # only the SASS-level bypass counters see it
        return counters[LDGSTS_WAVEFRONTS], counters[LDGSTS_CONFLICTS]
    if spelling.startswith("cp.async"):
        return (counters["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"] - CA_OTHER_WAVEFRONTS,
                counters["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum"])
    side = "st" if parse_instruction(spelling).is_store else "ld"
    return (counters[f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{side}.sum"],
            counters[f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{side}.sum"])
