"""The WMMA instructions on the GPU: fragment maps read off the hardware, and wmma.mma on raw
registers (the probes of `tcsim.hw.isa.wmma_probes`).

A load probe reads a matrix whose element (r, c) holds the bit pattern ``64 r + c + 1`` (in
16-bit or 32-bit elements, laid out row- or column-major with the given stride), so each
register half names the element it received. A store probe writes registers whose element e of
lane l holds ``64 l + e + 1`` and reads the memory back. Loads and stores only move bits, so
any pattern serves.
"""

from __future__ import annotations

import numpy as np

from ...isa.wmma.spec import fragment_registers, matrix_dims, parse_wmma
from .. import runtime
from ..launch import Launch, launch, per_warp
from .wmma_probes import load_kernel_name, mma_kernel_name, store_kernel_name

PROBE_FILE = "wmma_probes.cu"
CODE_COLUMNS = 64


def _element_bits(type_: str) -> int:
    return 16 if type_ in ("f16", "bf16") else 32


def _memory_words(rows: int, cols: int, layout: str, stride: int, bits: int) -> int:
    major = rows if layout == "row" else cols
    return -(-(major * stride * bits // 8) // 4)


def _elements(words: np.ndarray, bits: int) -> np.ndarray:
    """Per-lane registers (32, n) uint32 -> elements (32, n * 32 // bits), low half first."""
    return words.view(np.uint16) if bits == 16 else words


def capture_load(shape: str, operand: str, type_: str, layout: str, space: str,
                 stride: int | None = None) -> np.ndarray:
    """(32, elements, 2): the (row, col) each element of each lane's fragment holds after
    ``wmma.load`` on this GPU."""
    runtime.require()
    import cupy

    rows, cols = matrix_dims(shape, operand)
    bits = _element_bits(type_)
    stride = stride or (cols if layout == "row" else rows)
    r, c = np.indices((rows, cols))
    codes = r * CODE_COLUMNS + c + 1
    words = _memory_words(rows, cols, layout, stride, bits)
    memory = np.zeros(words * 32 // bits, np.uint16 if bits == 16 else np.uint32)
    index = r * stride + c if layout == "row" else c * stride + r
    memory[index] = codes
    n = fragment_registers(shape, operand, type_)
    regs = cupy.zeros(32 * n, cupy.uint32)
    launch(Launch(PROBE_FILE, load_kernel_name(shape, operand, type_, layout, space), (1,), (32,),
                  [memory.view(np.uint32), regs, np.int32(stride), np.int32(words)]))
    got = _elements(cupy.asnumpy(regs).reshape(32, n), bits).astype(np.int64) - 1
    return np.stack([got // CODE_COLUMNS, got % CODE_COLUMNS], axis=-1)


def capture_store(shape: str, type_: str, layout: str, space: str,
                  stride: int | None = None) -> np.ndarray:
    """(32, elements, 2): the (row, col) of memory where ``wmma.store.d`` puts each element of
    each lane's fragment on this GPU ((-1, -1) for an element that lands nowhere)."""
    runtime.require()
    import cupy

    rows, cols = matrix_dims(shape, "d")
    bits = _element_bits(type_)
    stride = stride or (cols if layout == "row" else rows)
    n = fragment_registers(shape, "d", type_)
    per_lane = n * 32 // bits
    lane, element = np.indices((32, per_lane))
    codes = (lane * CODE_COLUMNS + element + 1).astype(np.uint16 if bits == 16 else np.uint32)
    words = _memory_words(rows, cols, layout, stride, bits)
    memory = cupy.zeros(words, cupy.uint32)
    launch(Launch(PROBE_FILE, store_kernel_name(shape, type_, layout, space), (1,), (32,),
                  [codes.view(np.uint32).reshape(-1), memory, np.int32(stride), np.int32(words)]))
    stored = cupy.asnumpy(memory).view(np.uint16 if bits == 16 else np.uint32).astype(np.int64)
    out = np.full((32, per_lane, 2), -1, np.int64)
    r, c = np.indices((rows, cols))
    index = r * stride + c if layout == "row" else c * stride + r
    code = stored[index] - 1
    found = code >= 0
    out[code[found] // CODE_COLUMNS, code[found] % CODE_COLUMNS] = np.stack(
        [r[found], c[found]], axis=-1)
    return out


def wmma_regs(qualifier: str, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """One wmma.mma per instruction on raw registers (count, 32, n) uint32; D's registers."""
    runtime.require()
    import cupy

    spec = parse_wmma(qualifier)
    arrays = []
    for op, x in zip("abc", (a, b, c)):
        x = np.ascontiguousarray(x, np.uint32)
        if x.ndim != 3 or x.shape[1:] != (32, spec.registers(op)):
            raise ValueError(f"{spec.qualifier}: {op.upper()} registers must be (count, 32, "
                             f"{spec.registers(op)}), not {x.shape}")
        arrays.append(x)
    count = arrays[0].shape[0]
    d = cupy.empty((count, 32 * spec.registers("d")), cupy.uint32)
    if count:
        launch(per_warp(PROBE_FILE, mma_kernel_name(spec), count,
                        [*(x.reshape(count, -1) for x in arrays), d, np.int64(count)]))
    return cupy.asnumpy(d).reshape(count, 32, spec.registers("d"))
