"""mma.sync on the GPU, with the same signatures as `tcsim.mma` and `tcsim.mma_regs`."""

from __future__ import annotations

import numpy as np

from ...isa.fragments import mma_fragment
from ...isa.qualifier import parse
from .. import runtime
from ..launch import launch, per_warp
from .mma_probes import probe_name

PROBES = "mma_probes.cu"


def mma_regs(qualifier: str, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Run one mma.sync per instruction on the GPU on raw registers (..., 32, n) uint32."""
    runtime.require()
    import cupy

    spec = parse(qualifier)
    if spec.family == "fp8" and int(runtime.compute_capability()) < 89:
        raise runtime.HardwareUnavailable(
            f"{spec.qualifier} needs sm_89 or newer; this GPU is sm_{runtime.compute_capability()}")
    frags = {op: mma_fragment(spec, op) for op in "abcd"}
    arrays = {}
    for op, x in zip("abc", (a, b, c)):
        arrays[op] = frags[op].check_registers(x)
    batch = np.broadcast_shapes(*(x.shape[:-2] for x in arrays.values()))
    count = int(np.prod(batch, dtype=np.int64))
    dev = {
        op: cupy.asarray(
            np.ascontiguousarray(np.broadcast_to(x, batch + x.shape[-2:])).reshape(count, -1)
        )
        for op, x in arrays.items()
    }
    d = cupy.empty((count, 32 * frags["d"].registers), cupy.uint32)
    if count:
        launch(per_warp(PROBES, probe_name(spec), count,
                        [dev["a"], dev["b"], dev["c"], d, np.int32(count)]))
    return cupy.asnumpy(d).reshape(batch + (32, frags["d"].registers))


def mma(qualifier: str, A: np.ndarray, B: np.ndarray, C: np.ndarray | None = None) -> np.ndarray:
    """``D = A @ B + C`` computed by the GPU's mma.sync; same contract as `tcsim.mma` (C None:
    zeros; a wgmma qualifier runs `tcsim.hw.wgmma`), but no ``arch``: the GPU is the
    architecture."""
    from ...isa.wgmma import is_wgmma_qualifier, parse_wgmma
    from .wgmma import wgmma

    if is_wgmma_qualifier(qualifier):
        return wgmma(qualifier, A, B, parse_wgmma(qualifier).zero_c(A, B) if C is None else C)
    spec = parse(qualifier)
    C = spec.zero_c(A, B) if C is None else C
    frags = [mma_fragment(spec, op) for op in "abcd"]
    per = spec.products_per_warp
    if per == 1:
        a, b, c = (f.pack(x) for f, x in zip(frags, (A, B, C)))
        return frags[3].unpack(mma_regs(spec.qualifier, a, b, c))
    # m8n8k4: a warp computes four products; group them four to a warp (zeros pad the last).
    mats = [np.asarray(x) for x in (A, B, C)]
    batch = np.broadcast_shapes(*(m.shape[:-2] for m in mats))
    mats = [np.broadcast_to(m, batch + m.shape[-2:]) for m in mats]
    n = int(np.prod(batch, dtype=np.int64))
    warps = -(-n // per)
    regs = []
    for f, m in zip(frags, mats):
        m = m.reshape((n,) + m.shape[-2:])
        m = np.concatenate([m, np.zeros((warps * per - n,) + m.shape[1:], m.dtype)])
        regs.append(f.pack(m.reshape(warps, f.rows, f.cols)))
    D = frags[3].unpack(mma_regs(spec.qualifier, *regs))
    D = D.reshape(warps * per, frags[3].rows // per, frags[3].cols)[:n]
    return D.reshape(batch + D.shape[1:])
