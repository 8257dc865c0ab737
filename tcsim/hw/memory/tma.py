"""Tensor maps for the GPU: the driver's encoding of a `tcsim.memory.TensorMap`.

`encode` turns a `tcsim.memory.TensorMap` and a device pointer into the 128-byte ``CUtensorMap``
that ``cuTensorMapEncodeTiled`` writes (CuPy has no binding for it; ``libcuda.so.1`` exports
it, so ctypes reaches it). A kernel takes the map as a ``__grid_constant__`` parameter, which
CuPy's kernel call cannot pass: `tcsim.hw.launch` calls ``cuLaunchKernel`` through `driver`.
"""

from __future__ import annotations

import ctypes
from functools import cache

from ...memory.tma import TensorMap
from .. import runtime

# CUtensorMapDataType by element size (unsigned integers: TMA moves bits, it converts nothing)
_DATA_TYPE = {1: 0, 2: 1, 4: 2, 8: 4}  # UINT8, UINT16, UINT32, UINT64
# SwizzleMode value (descriptor encoding) -> CU_TENSOR_MAP_SWIZZLE_{NONE, 32B, 64B, 128B}
_SWIZZLE = {0: 0, 3: 1, 2: 2, 1: 3}
_L2_PROMOTION_128B = 2
MAP_BYTES = 128


class EncodedMap(ctypes.Structure):
    """A CUtensorMap: 128 opaque bytes (the driver wants them 64-byte aligned; `encode` copies
    them out of an aligned buffer)."""

    _fields_ = [("opaque", ctypes.c_uint64 * 16)]


@cache
def driver() -> ctypes.CDLL:
    runtime.require()
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        raise runtime.HardwareUnavailable(
            f"the CUDA driver library cannot be loaded: {exc}") from exc
    u64p, u32p = ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32)
    lib.cuTensorMapEncodeTiled.argtypes = [
        ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, u64p, u64p, u32p, u32p,
        ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    lib.cuLaunchKernel.argtypes = [
        ctypes.c_void_p, *(ctypes.c_uint,) * 6, ctypes.c_uint, ctypes.c_void_p,
        ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p)]
    return lib


def check(result: int, what: str) -> None:
    if result != 0:
        name = ctypes.c_char_p()
        driver().cuGetErrorName(result, ctypes.byref(name))
        raise RuntimeError(f"{what} failed: CUDA error {result} "
                           f"({(name.value or b'?').decode()})")


def encode(tensor_map: TensorMap, pointer: int) -> EncodedMap:
    """The driver's tensor map for ``tensor_map`` over the matrix at device address
    ``pointer`` (16-byte aligned)."""
    t = tensor_map
    if pointer % 16:
        raise ValueError(f"a tensor map's global address must be 16-byte aligned, got "
                         f"{pointer:#x}")
    buffer = (ctypes.c_uint64 * 24)()  # room for a 64-byte aligned 128-byte map
    start = (-ctypes.addressof(buffer)) % 64
    dims = (ctypes.c_uint64 * 2)(t.cols, t.rows)  # innermost first
    strides = (ctypes.c_uint64 * 1)(t.cols * t.element_bytes)  # bytes, dimension 1 only
    box = (ctypes.c_uint32 * 2)(t.box_cols, t.box_rows)
    steps = (ctypes.c_uint32 * 2)(1, 1)
    check(driver().cuTensorMapEncodeTiled(
        ctypes.addressof(buffer) + start, _DATA_TYPE[t.element_bytes], 2, pointer, dims, strides,
        box, steps, 0, _SWIZZLE[int(t.swizzle)], _L2_PROMOTION_128B, 0),
        f"cuTensorMapEncodeTiled({t})")
    return EncodedMap.from_buffer_copy(ctypes.string_at(ctypes.addressof(buffer) + start,
                                                        MAP_BYTES))

