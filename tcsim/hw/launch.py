"""One way to launch a kernel: a `Launch` says what (source, kernel, defines, target), how
(grid, block, dynamic shared memory) and on what (arguments, tensor maps); `launch` runs it.

A `Launch` is plain data, so `tcsim.hw.ncu` can pickle it into a child process under Nsight
Compute. Arguments are passed as the kernel declares them: device arrays (host arrays are
copied by `device_args`), Python floats as f32 and ints as i32; NumPy scalars keep their type.
A launch with tensor maps (``Launch.tensor_maps``, encoded over its operands, or encoded maps
among its arguments) goes through ``cuLaunchKernel`` itself, as a ``__grid_constant__``
parameter is beyond CuPy's kernel call.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from . import runtime
from .memory.tma import EncodedMap, check, driver, encode


@dataclass
class Launch:
    source: str  # CUDA text, or the name of a source of tcsim.hw (runtime.source_text)
    kernel: str
    grid: tuple[int, ...]
    block: tuple[int, ...]
    args: list = field(default_factory=list)
    label: str = ""
    defines: dict = field(default_factory=dict)  # -D values for the source
    shared_bytes: int = 0  # dynamic shared memory
    arch: str = ""  # a target beyond the device's own ("sm_90a")
    tensor_maps: tuple = ()  # (operand letter, tcsim.memory.TensorMap) after the arguments
    include: tuple[str, ...] = ()  # more -I folders (a benchmark's own headers)


def per_warp(source: str, kernel: str, count: int, args: list, warps_per_block: int = 8,
             label: str = "") -> Launch:
    """One warp per item for ``count`` items (the instruction probes)."""
    blocks = max(1, -(-count // warps_per_block))
    return Launch(source, kernel, (blocks,), (32 * warps_per_block,), list(args), label)


def device_args(args: list) -> list:
    """``args`` with host arrays copied to the GPU (the copies are the kernel's arguments)."""
    import cupy

    return [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args]


def launcher(spec: Launch, args: list | None = None) -> Callable[[], None]:
    """A function that launches ``spec`` on ``args`` (arrays on the GPU; default
    ``spec.args``) without waiting: compiled, and tensor maps encoded over the device arrays,
    once, here."""
    args = spec.args if args is None else args
    fn = runtime.function(spec.source, spec.kernel, spec.defines, spec.shared_bytes, spec.arch,
                          spec.include)
    if spec.tensor_maps or any(isinstance(a, EncodedMap) for a in args):
        operands = dict(zip("ABCD", args[:4]))
        maps = [encode(t, operands[name].data.ptr) for name, t in spec.tensor_maps]
        return lambda: _driver_launch(fn, spec.grid, spec.block, [*args, *maps],
                                      spec.shared_bytes)
    values = tuple(np.float32(a) if isinstance(a, float) else np.int32(a)
                   if isinstance(a, int) else a for a in args)
    return lambda: fn(tuple(spec.grid), tuple(spec.block), values, shared_mem=spec.shared_bytes)


def launch(spec: Launch, args: list | None = None) -> list:
    """Launch ``spec`` once on ``args`` (default: its own, host arrays copied to the GPU);
    returns the device arguments, where the kernel's outputs are."""
    args = device_args(spec.args if args is None else args)
    launcher(spec, args)()
    return args


def _argument(value):
    import cupy

    if isinstance(value, cupy.ndarray):
        return ctypes.c_void_p(value.data.ptr)
    if isinstance(value, EncodedMap):
        return value
    return scalar_argument(value)


def scalar_argument(value):
    """A kernel's scalar argument on the driver path, as the twins declare theirs: a float as
    f32, an integer as i32, refused (not truncated) when it does not fit."""
    if isinstance(value, (float, np.floating)):
        return ctypes.c_float(value)
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        if not -2**31 <= int(value) < 2**31:
            raise TypeError(f"{value} does not fit a kernel's 32-bit int argument")
        return ctypes.c_int32(int(value))
    raise TypeError(f"cannot pass {type(value).__name__} to a kernel")


def _driver_launch(function, grid: tuple[int, ...], block: tuple[int, ...], args,
                   shared_bytes: int = 0) -> None:
    """``cuLaunchKernel`` of a CuPy `RawKernel` on the current stream; ``args`` as the
    kernel declares them (CuPy device arrays, floats as f32, ints as i32, `EncodedMap`)."""
    import cupy

    values = [_argument(a) for a in args]
    pointers = (ctypes.c_void_p * len(values))(
        *(ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values))
    g = tuple(grid) + (1,) * (3 - len(grid))
    b = tuple(block) + (1,) * (3 - len(block))
    handle = function.kernel.ptr  # a CuPy RawKernel's compiled CUfunction
    check(driver().cuLaunchKernel(handle, *g, *b, shared_bytes,
                                  cupy.cuda.get_current_stream().ptr, pointers, None),
          f"cuLaunchKernel({getattr(function, 'name', 'kernel')})")
