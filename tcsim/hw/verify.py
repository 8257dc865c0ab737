"""`verify`: a kernel you already have in CUDA, proven against its tcsim schedule on the GPU.

``verify(kernel, "my_kernel.cu", M, N, K)`` compiles your file (from anywhere on disk) through
tcsim's one compile path, with the kernel's constants as ``-D`` (`Kernel.defines`), your file's
folder and tcsim's headers on the include path; launches its kernel as tcsim launches a twin
(`tcsim.hw.kernels.device_launch`: the grid, block, dynamic shared memory and tensor maps the
`Kernel` states) on fresh random A and B; compares D's bits with `tcsim.run` on the same
inputs and the Nsight Compute counters with `tcsim.trace`. The `Verification` it returns prints
where they part. `check_compiles` compiles the file with nvcc alone, on a machine without a GPU.
docs/own-kernel.md says how to write the file.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..isa.validate import integer
from ..kernels import kernel_named
from . import runtime
from .ncu import SHARED_METRICS

SHOWN = 10  # differing elements a report lists


@dataclass(frozen=True)
class UserSource:
    """A user's CUDA file: where it is and its text as the compilers get it (a ``#line``
    first, so that their messages name this file and its own line numbers)."""

    path: Path
    text: str

    @property
    def folder(self) -> str:
        """Where its quoted includes are found, besides tcsim's headers."""
        return str(self.path.parent)


def read_source(source_path) -> UserSource:
    """The CUDA file at ``source_path`` (a str or path, relative to the working directory);
    `FileNotFoundError` naming it when there is no such file."""
    if not isinstance(source_path, (str, os.PathLike)):
        raise TypeError(f"source_path must be the path of a .cu file (a str or Path), got "
                        f"{type(source_path).__name__}")
    path = Path(source_path).expanduser().resolve()
    if not path.is_file():
        what = "is a folder, not a file" if path.is_dir() else "does not exist"
        raise FileNotFoundError(f"CUDA file {str(source_path)!r} {what} (looked for {path})")
    name = str(path).replace("\\", "\\\\").replace('"', '\\"')  # a C string
    return UserSource(path, f'#line 1 "{name}"\n' + path.read_text())


def check_compiles(kernel, source_path, *, entry: str | None = None,
                   defines: dict[str, int] | None = None, **params) -> None:
    """Compile ``source_path`` with nvcc as `verify` compiles it (the kernel's constants for
    ``params`` as ``-D``, ``defines`` after them; sm_90a for a Hopper kernel, else sm_90) and
    check that it has the kernel ``entry`` (default ``kernel.entry``). Needs nvcc, no GPU.
    `CompileError` with nvcc's messages, naming the file and line, or the kernels it has."""
    kernel, source, p, entry, defines = _prepare(kernel, source_path, entry, defines, params)
    cubin = runtime.nvcc(source.text, {**kernel.defines(p), **defines}, kernel.arch or "sm_90",
                         (source.folder,), str(source.path))
    if entry not in runtime.cubin_kernels(cubin):
        raise runtime.CompileError(f"{source.path}: " + runtime.missing_kernel(
            entry, runtime.cubin_kernels(cubin)))


def verify(kernel, source_path, M: int, N: int, K: int, *, entry: str | None = None,
           counters: bool = True, seed: int | None = None,
           defines: dict[str, int] | None = None, **params) -> Verification:
    """Run the CUDA file ``source_path`` on the GPU as ``kernel``'s twin and compare it with
    ``kernel``'s schedule on an (M, N, K) problem.

    ``entry``: the file's ``extern "C" __global__`` kernel (default ``kernel.entry``, the
    kernel's name); ``params`` override the kernel's tile parameters (as in `tcsim.run`) and
    reach the file as ``-D`` constants (`Kernel.defines`), ``defines`` add the file's own
    (``{"PAD": 8}``). A and B are drawn at random (uniform in [-1, 1), from ``seed``; a fresh
    seed when None, recorded in the report); D's bits are compared with ``tcsim.run(kernel, A,
    B)``, and with ``counters`` the Nsight Compute counters the trace predicts with
    ``tcsim.trace(kernel, M, N, K)`` (one more run of the file, under ncu).

    Errors, before anything runs on the GPU: `FileNotFoundError` (no such file),
    `ProblemSizeError` (M, N, K the tiles do not divide), `HardwareUnavailable` (no GPU, or
    not the one the kernel needs); then `CompileError` (the compiler's messages, or the
    kernels the file has when ``entry`` is not one of them)."""
    from ..kernels.executor import check_operands, run
    from ..trace import trace
    from .kernels.twin import device_launch
    from .launch import launch
    from .ncu import profile

    kernel, source, p, entry, defines = _prepare(kernel, source_path, entry, defines, params)
    M, N, K = p.check_problem(M, N, K, kernel.name)
    seed = int(np.random.SeedSequence().generate_state(1)[0]) if seed is None else \
        integer(seed, "seed", minimum=0)
    runtime.require()
    if kernel.arch:
        runtime.require_arch(kernel.arch)
    import cupy

    A, B = random_operands(p, M, N, K, seed)
    expected = run(kernel, A, B, **params)
    A, B, C = check_operands(kernel, p, A, B, None)
    D = np.zeros((M, N), p.output_dtype)
    spec = device_launch(kernel, p, A, B, C, D, label=f"{kernel.name} ({source.path.name})",
                         source=source.text, entry=entry, include=(source.folder,),
                         defines=defines)
    got = cupy.asnumpy(launch(spec)[3])
    table = None
    if counters:
        predicted = trace(kernel, M, N, K, **params).totals
        measured = profile([spec], tuple(predicted))[0]
        table = {metric: (value, measured.get(metric, float("nan")))
                 for metric, value in predicted.items()}
    return Verification(kernel.name, str(source.path), entry, (M, N, K), dict(params), seed,
                        expected, got, (p.block_m, p.block_n), table, runtime.device_name())


def _prepare(kernel, source_path, entry, defines, params):
    """The checks `verify` and `check_compiles` share, in the order a user meets them: the
    kernel, the file, the parameters, the entry's name, the extra defines."""
    kernel = kernel_named(kernel)
    source = read_source(source_path)
    p = kernel.params(**params)
    entry = kernel.entry if entry is None else entry
    if not isinstance(entry, str) or not re.fullmatch(r"[A-Za-z_]\w*", entry):
        raise ValueError(f"entry must be the name of the file's kernel (a C identifier), got "
                         f"{entry!r}")
    if defines is not None and not isinstance(defines, dict):
        raise TypeError(f"defines must be a dict of name -> int, got {type(defines).__name__}")
    checked = {}
    for name, value in (defines or {}).items():
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_]\w*", name):
            raise ValueError(f"defines: {name!r} is not a macro name")
        checked[name] = integer(value, f"defines[{name!r}]", type_error=TypeError)
    return kernel, source, p, entry, checked


def random_operands(p, M: int, N: int, K: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A (M, K) and B (K, N) of the kernel's input type, uniform in [-1, 1) from ``seed``."""
    rng = np.random.default_rng(seed)
    dtype = p.input_dtype
    return (rng.uniform(-1, 1, (M, K)).astype(dtype), rng.uniform(-1, 1, (K, N)).astype(dtype))


def is_shared(metric: str) -> bool:
    """A shared-memory counter: wavefronts, conflicts and instructions of shared memory
    (`tcsim.hw.ncu.SHARED_METRICS`, and wgmma's and cp.async's shared wavefronts)."""
    return metric in SHARED_METRICS or "_mem_shared" in metric


@dataclass
class Verification:
    """What `verify` found: D from the schedule (``expected``) and from the GPU (``got``),
    and the counters, ``{metric: (trace, ncu)}`` (None when not measured). ``print`` it for
    the report; ``ok`` when bits and counters agree."""

    kernel: str
    source: str
    entry: str
    problem: tuple[int, int, int]
    params: dict
    seed: int
    expected: np.ndarray
    got: np.ndarray
    tile: tuple[int, int]  # (block_m, block_n): the blocks' tiles of D
    counters: dict[str, tuple[float, float]] | None = None
    device: str = ""
    shown: int = field(default=SHOWN, repr=False)

    def __post_init__(self) -> None:
        if self.expected.shape != self.got.shape or self.expected.dtype != self.got.dtype:
            raise ValueError(f"expected and got must be alike: {self.expected.shape} "
                             f"{self.expected.dtype} vs {self.got.shape} {self.got.dtype}")

    @property
    def differing(self) -> np.ndarray:
        """(row, col) of every element whose bits differ, row by row."""
        return np.argwhere(_bits(self.expected) != _bits(self.got))

    @property
    def bits_equal(self) -> bool:
        return not (_bits(self.expected) != _bits(self.got)).any()

    @property
    def tiles(self) -> dict[tuple[int, int], int]:
        """(tile row, tile column) of D's block tiles -> elements that differ there."""
        where = self.differing
        return dict(sorted(Counter(zip((where[:, 0] // self.tile[0]).tolist(),
                                       (where[:, 1] // self.tile[1]).tolist())).items()))

    @property
    def counter_differences(self) -> dict[str, tuple[float, float]]:
        """The counters whose trace and ncu values differ (all of them: None measured)."""
        return {m: v for m, v in (self.counters or {}).items() if v[0] != v[1]}

    @property
    def counters_equal(self) -> bool | None:
        return None if self.counters is None else not self.counter_differences

    @property
    def shared_counters_equal(self) -> bool | None:
        """The shared-memory counters (`is_shared`) agree."""
        return None if self.counters is None else \
            not any(is_shared(m) for m in self.counter_differences)

    @property
    def ok(self) -> bool:
        return self.bits_equal and self.counters_equal is not False

    def __str__(self) -> str:
        M, N, K = self.problem
        params = "".join(f", {k}={v}" for k, v in self.params.items())
        lines = [f"{self.kernel} as {self.source} (kernel {self.entry}), M={M} N={N} K={K}"
                 f"{params}, seed {self.seed}" + (f", on {self.device}" if self.device else "")]
        lines += self._bits_report()
        lines += self._counters_report()
        return "\n".join(lines)

    def _bits_report(self) -> list[str]:
        total = self.expected.size
        if self.bits_equal:
            return [f"bits: equal ({total:,} elements of D)"]
        where, tiles = self.differing, self.tiles
        rows, cols = (-(-n // t) for n, t in zip(self.expected.shape, self.tile))
        out = [f"bits: {len(where):,} of {total:,} elements of D differ, in {len(tiles)} of "
               f"{rows * cols} tiles of {self.tile[0]} x {self.tile[1]}"]
        cells = [("(row, col)", "schedule", "GPU")]
        for row, col in where[:self.shown].tolist():
            cells.append((f"({row}, {col})", _value(self.expected[row, col]),
                          _value(self.got[row, col])))
        out += _columns(cells, right=())
        if len(where) > self.shown:
            out.append(f"  ... and {len(where) - self.shown:,} more")
        out.append("tiles that differ, (tile row, tile col): elements")
        listed = [f"({r}, {c}): {n:,}" for (r, c), n in tiles.items()]
        out += ["  " + "   ".join(listed[i:i + 6]) for i in range(0, len(listed), 6)]
        return out

    def _counters_report(self) -> list[str]:
        if self.counters is None:
            return ["counters: not measured (counters=False)"]
        differ = self.counter_differences
        head = (f"counters: equal ({len(self.counters)} that the trace predicts)" if not differ
                else f"counters: {len(differ)} of {len(self.counters)} differ"
                     f"{'' if self.shared_counters_equal else ', shared memory among them'}")
        cells = [("metric", "trace", "ncu", "ncu - trace")]
        for metric, (trace, ncu) in self.counters.items():
            gap = "" if trace == ncu else "n/a" if ncu != ncu else f"{ncu - trace:+,.0f}"
            cells.append((metric, f"{trace:,.0f}", "n/a" if ncu != ncu else f"{ncu:,.0f}", gap))
        return [head, *_columns(cells, right=(1, 2, 3))]

    def __repr__(self) -> str:
        M, N, K = self.problem
        counters = {None: "not measured", True: "equal", False: "differ"}[self.counters_equal]
        return (f"<Verification {self.kernel} ({self.entry} in {Path(self.source).name}) "
                f"{M}x{N}x{K}: bits {'equal' if self.bits_equal else 'differ'}, counters "
                f"{counters}>")


def _bits(x: np.ndarray) -> np.ndarray:
    return x.view(np.uint16 if x.dtype.itemsize == 2 else np.uint32)


def _value(x) -> str:
    """An element as its bits in hex and as a float: ``0x3c00 (1)``."""
    digits = 2 * x.dtype.itemsize
    bits = int(np.asarray(x).view(np.uint16 if digits == 4 else np.uint32))
    return f"0x{bits:0{digits}x} ({float(x):.{5 if digits == 4 else 9}g})"


def _columns(cells: list[tuple[str, ...]], right: tuple[int, ...]) -> list[str]:
    """Rows of cells, padded to columns (``right``: the columns aligned right), indented."""
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    return ["  " + "  ".join(c.rjust(w) if i in right else c.ljust(w)
                             for i, (c, w) in enumerate(zip(row, widths))).rstrip()
            for row in cells]
