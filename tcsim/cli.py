"""The `tcsim` command: look at fragment layouts and run instructions from the shell.

    tcsim demo                                 a guided example on built-in inputs
    tcsim layout QUALIFIER OPERAND             which lane and register hold each element
    tcsim mma QUALIFIER [--distribution NAME]  one instruction (mma.sync or wgmma) on random
                                               inputs, bits shown
    tcsim trace KERNEL M N K [--json] [--block_m 128 ...]   per-site counters of a kernel
    tcsim compare KERNEL KERNEL M N K          two kernels' counters side by side
    tcsim explain KERNEL M N K [--gpu H100-SXM] why it takes the time it does: the predicted
                                               time, the limiter, each unit's share
    tcsim explain KERNEL M N K --choose        each tile variant explained, the fastest chosen
    (KERNEL: a built-in name such as kernel5, or your own as path/to/file.py:NAME or
    package.module:NAME; docs/own-kernel.md)
    tcsim precision [--k 16 64 ...] [--dots N] [--json PATH] [--plot PATH]
                                               f16 vs f32 accumulation error against K
    tcsim verify [--count N]                   quick simulator-against-GPU check
    tcsim blas OP M N K [--dtype bf16 ...]     a torch GEMM as cuBLAS runs it on the H100:
                                               its plan and its error (docs/blas.md)
    tcsim docs [DIR]                           regenerate the fragment-layout docs and diagrams
    tcsim --version                            the installed version

A bad argument is reported in one line on stderr, with exit status 2 (docs/errors.md). An
exception raised in your own code (a kernel's schedule, the file that defines it) shows your
code's frames first; --debug (anywhere on the line) or TCSIM_DEBUG=1 shows the full traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import sysconfig
import traceback
import zipfile
from dataclasses import fields
from pathlib import Path

import numpy as np

from . import (
    __version__,
    fragment,
    is_wgmma_qualifier,
    mma,
    mma_regs,
    parse,
    parse_wgmma,
    supported_qualifiers,
)
from .blas.report import add_parser as add_blas_parser
from .hw.runtime import HardwareUnavailable
from .isa import samples
from .kernels import HOPPER_KERNELS, KERNELS, SEED_KERNELS, GemmParams
from .kernels.checks import SimulationError
from .perf import gpu_names
from .trace import trace

DEMO_QUALIFIER = "m16n8k8.row.col.f32.f16.f16.f32"


def _demo(args) -> int:
    q = DEMO_QUALIFIER
    print(f"tcsim {q}: D = A @ B + C on one simulated warp (sm_90 arithmetic)\n")
    print(fragment(q, "a").table(), "\n")
    # Built-in inputs: C = 1 and eight products of 1.5 * 2**-24 each, plus one row of normals.
    A = np.zeros((16, 8), np.float16)
    B = np.zeros((8, 8), np.float16)
    C = np.ones((16, 8), np.float32)
    A[0, :] = 1.5 * 2.0**-12
    B[:, 0] = 2.0**-12
    A[1, :] = [0.5, -1.25, 3.0, 0.125, -2.0, 1.5, 0.75, -0.5]
    B[:, 1] = [1.0, 0.5, -0.25, 2.0, 1.5, -1.0, 0.5, 0.25]
    D = mma(q, A, B, C)
    exact = A.astype(np.float64) @ B.astype(np.float64) + C
    fma = np.float32(C[0, 0])
    for k in range(8):  # what a chain of f32 FMAs would give
        fma = np.float32(np.float64(fma) + np.float64(A[0, k]) * np.float64(B[k, 0]))
    print("D[0,0]: tensor core", _show(D[0, 0]), " f32 FMA chain", _show(fma),
          " exact", repr(float(exact[0, 0])))
    print("D[1,1]: tensor core", _show(D[1, 1]), " exact", repr(float(exact[1, 1])))
    print("\nThe kernel ladder: shared-memory bank conflicts that swizzling removes "
          "(tcsim compare kernel1 kernel2 1024 1024 1024)\n")
    print(trace("kernel1", 1024, 1024, 1024).compare(trace("kernel2", 1024, 1024, 1024)))
    print("\nNext: tcsim layout", q, "b   |   tcsim trace kernel2 4096 4096 4096")
    return 0


def _show(x) -> str:
    x = np.float32(x)
    return f"{float(x)!r} ({int(x.view(np.uint32)):#010x})"


def _layout(args) -> int:
    print(fragment(args.qualifier, args.operand).table())
    return 0


def _mma(args) -> int:
    spec = (parse_wgmma if is_wgmma_qualifier(args.qualifier) else parse)(args.qualifier)
    r, c = args.element
    if not (0 <= r < spec.m and 0 <= c < spec.n):
        raise ValueError(f"--element {r} {c} is outside D, which is {spec.m}x{spec.n} "
                         f"(rows 0..{spec.m - 1}, columns 0..{spec.n - 1})")
    if args.inputs:  # given matrices
        A, B, C = (x[None] for x in _load_inputs(args.inputs, spec))
        source = args.inputs
    else:
        # The instruction's own default: integer instructions have their own distributions.
        distribution = args.distribution or next(iter(samples.distributions(spec)))
        rng = np.random.default_rng(args.seed)
        # One matrix product each (draw stacks m8n8k4's four quad-pair products; show the first).
        A, B, C = (spec.format(op).from_bits(x.reshape((-1,) + spec.matrix_shape(op)))
                   for op, x in zip("abc", samples.draw(spec, distribution, 1, rng)))
        source = f"{distribution} inputs (seed {args.seed})" + (
            ", the first quad-pair's product" if spec.products_per_warp > 1 else "")
    D = mma(spec.qualifier, A[0], B[0], C[0], arch=args.arch)
    fd = spec.format("d")
    print(f"{spec.ptx} on {source}, element D[{r},{c}]:")
    for k in range(spec.k):
        print(f"  A[{r},{k}] * B[{k},{c}] = {float(A[0, r, k])!r} * {float(B[0, k, c])!r}")
    print(f"  C[{r},{c}] = {float(C[0, r, c])!r}")
    exact = A[0].astype(np.float64) @ B[0].astype(np.float64) + C[0].astype(np.float64)
    bits = int(fd.to_bits(D)[r, c])
    print(f"  D[{r},{c}] = {float(D[r, c])!r}  bits {bits:#0{fd.storage_bits // 4 + 2}x}"
          f"  (float64 reference {float(exact[r, c])!r})")
    return 0


def _load_inputs(path: str, spec) -> tuple[np.ndarray, ...]:
    """A, B and C of one instruction from an .npz archive, each a single matrix."""
    try:
        with np.load(path) as data:
            if not isinstance(data, np.lib.npyio.NpzFile):
                raise ValueError("it is one array, not an archive of A, B and C")
            missing = {"A", "B", "C"} - set(data.files)
            if missing:
                raise KeyError(missing)
            arrays = tuple(data[name] for name in "ABC")
    except KeyError as missing:
        raise ValueError(f"{path} lacks array(s) {sorted(missing.args[0])}; it needs A, "
                         f"B and C as np.savez(path, A=..., B=..., C=...) writes them") from None
    except (EOFError, zipfile.BadZipFile, ValueError, TypeError) as exc:
        raise ValueError(f"{path} is not an .npz archive of A, B and C that np.savez "
                         f"writes: {exc}") from None
    except AttributeError:  # np.load gave an array, which has no context manager
        raise ValueError(f"{path} is one array, not an .npz archive of A, B and C") from None
    for name, x in zip("ABC", arrays):
        rows, cols = spec.matrix_shape(name.lower())
        if x.ndim != 2:
            raise ValueError(f"{path}: {name} has shape {x.shape}; tcsim mma takes one "
                             f"instruction's matrices ({name} is {rows}x{cols})")
    return arrays


def _count(text: str, minimum: int) -> int:
    """An argparse type: an integer of at least ``minimum``."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
    return value


def _positive(text: str) -> int:
    return _count(text, 1)


def _non_negative(text: str) -> int:
    return _count(text, 0)


def _params(args) -> dict:
    return {f.name: getattr(args, f.name) for f in fields(GemmParams)
            if getattr(args, f.name) is not None}


def _trace(args) -> int:
    t = trace(args.kernel, args.M, args.N, args.K, beta=args.beta, **_params(args))
    print(t.to_json() if args.json else t)
    return 0


def _explain(args) -> int:
    if args.choose:  # every tile variant explained, the fastest's explanation in full
        from .perf.choose import choose_tile

        choice = choose_tile(args.kernel, args.M, args.N, args.K, gpu=args.gpu,
                             registers=args.registers, beta=args.beta, **_params(args))
        print(f"{choice}\n\n{choice.explanation}")
        return 0
    t = trace(args.kernel, args.M, args.N, args.K, beta=args.beta, **_params(args))
    print(t.explain(args.gpu, args.registers))
    return 0


def _compare(args) -> int:
    params = _params(args)
    first, second = (trace(k, args.M, args.N, args.K, beta=args.beta, **params)
                     for k in args.kernels)
    print(first.compare(second))
    return 0


def _add_kernel_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("M", type=int)
    parser.add_argument("N", type=int)
    parser.add_argument("K", type=int)
    for f in fields(GemmParams):
        if f.name in ("accumulate", "inputs", "output"):
            parser.add_argument(f"--{f.name}", choices=["f16", "f32"])
        else:
            parser.add_argument(f"--{f.name}", type=int, metavar="N",
                                help=f"(default: the kernel's, e.g. {f.default})")
    parser.add_argument("--beta", type=float, default=0.0,
                        help="the epilogue's beta (default 0, as tcsim.run): kernel10 reads C "
                             "only when it is not 0")


def _docs(args) -> int:
    from .views.fragment_docs import write

    paths = write(args.directory)
    print(f"wrote {paths[0]} and {len(paths) - 1} diagrams under {paths[0].parent / 'figures'}")
    return 0


def _verify(args) -> int:
    from . import hw

    reason = hw.unavailable_reason()
    if reason is not None:
        print(f"tcsim verify: no GPU check possible here: {reason}")
        return 2
    rng = np.random.default_rng()
    worst = 0
    for q in supported_qualifiers():
        frags = [fragment(q, op) for op in "abcd"]
        bad = 0
        for dist in samples.DISTRIBUTIONS:
            regs = [f.to_registers(f.gather_bits(x))
                    for f, x in zip(frags, samples.draw(q, dist, args.count, rng))]
            bad += int((hw.mma_regs(q, *regs) != mma_regs(q, *regs)).any(axis=(1, 2)).sum())
        n = args.count * len(samples.DISTRIBUTIONS)
        print(f"{q:38s} {n:8d} instructions  {bad} mismatching")
        worst = max(worst, bad)
    print(f"GPU: {hw.device_name()}")
    return 1 if worst else 0


def _precision(args) -> int:
    import time
    from pathlib import Path

    from . import hw
    from .precision import precision_study

    if args.backend == "hw" and hw.unavailable_reason() is not None:
        raise ValueError(f"--backend hw: no GPU here: {hw.unavailable_reason()}")
    for option, path in (("--json", args.json), ("--plot", args.plot)):
        if path is not None and not Path(path).resolve().parent.is_dir():  # before the work
            raise ValueError(f"{option} {path}: the directory {Path(path).parent} does not exist")
    if args.plot is not None:
        from .views.precision import matplotlib_missing

        if matplotlib_missing():
            raise ValueError(f"--plot: {matplotlib_missing()}")
    start = time.perf_counter()
    table = precision_study(ks=args.k, dots=args.dots, seed=args.seed, backend=args.backend)
    print(table)
    print(f"\n({time.perf_counter() - start:.1f} s)")
    if args.json is not None:
        Path(args.json).write_text(table.to_json())
        print(f"wrote {args.json}")
    if args.plot is not None:
        from .views.precision import plot_precision

        print(f"wrote {plot_precision(table, args.plot)}")
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse, reporting a bad argument in one line instead of the usage block."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="tcsim", description=__doc__.split("\n\n")[0],
                formatter_class=argparse.RawDescriptionHelpFormatter,
                epilog="\n".join(__doc__.split("\n")[2:]))
    p.add_argument("--version", action="version", version=f"tcsim {__version__}")
    p.add_argument("--debug", action="store_true",
                   help="on an error, print the full traceback (also TCSIM_DEBUG=1)")
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="a guided example on built-in inputs",
                       description="Run m16n8k8 on built-in inputs and compare with FMA and exact.")
    d.set_defaults(run=_demo)
    lay = sub.add_parser("layout", help="print a fragment map",
                         description="Example: tcsim layout m16n8k8.row.col.f32.f16.f16.f32 a")
    lay.add_argument("qualifier", help="PTX qualifier after mma.sync.aligned.")
    lay.add_argument("operand", choices=list("abcd"))
    lay.set_defaults(run=_layout)
    m = sub.add_parser("mma", help="run one instruction on random inputs",
                       description="Example: tcsim mma m16n8k16.row.col.f32.bf16.bf16.f32 "
                                   "--distribution cancel --element 3 5")
    m.add_argument("qualifier")
    m.add_argument("--distribution", choices=list(dict.fromkeys(
        [*samples.DISTRIBUTIONS, *samples.INTEGER_DISTRIBUTIONS])),
                   help="(default: normal; uniform_bits for integer instructions)")
    m.add_argument("--seed", type=_non_negative, default=0)
    m.add_argument("--element", type=_non_negative, nargs=2, default=(0, 0),
                   metavar=("ROW", "COL"))
    m.add_argument("--arch", default="sm_90")
    m.add_argument("--inputs", metavar="FILE.npz",
                   help="given matrices A, B, C (np.savez) instead of random ones")
    m.set_defaults(run=_mma)
    kernels = list(KERNELS) + list(HOPPER_KERNELS) + list(SEED_KERNELS)
    # a name is checked when it is resolved (tcsim.kernels.kernel_named): a user's kernel is
    # FILE.py:NAME or package.module:NAME
    spec = dict(metavar="KERNEL", help=f"{', '.join(kernels)}, or FILE.py:NAME or "
                                       f"package.module:NAME (a Kernel of your own)")
    t = sub.add_parser("trace", help="per-site counters of a kernel: a built-in, or your own "
                                     "as file.py:NAME or module:NAME",
                       description="Example: tcsim trace kernel1 4096 4096 4096 --block_k 32")
    t.add_argument("kernel", **spec)
    _add_kernel_options(t)
    t.add_argument("--json", action="store_true", help="print the trace as JSON")
    t.set_defaults(run=_trace)
    c = sub.add_parser("compare", help="two kernels' counters side by side (built-in or your "
                                       "own, as for trace)",
                       description="Example: tcsim compare kernel1 kernel2 1024 1024 1024")
    c.add_argument("kernels", nargs=2, **spec)
    _add_kernel_options(c)
    c.set_defaults(run=_compare)
    e = sub.add_parser("explain", help="predicted time and what limits a kernel (built-in or "
                                       "your own, as for trace)",
                       description="Example: tcsim explain kernel2 4096 4096 4096 --gpu T4 "
                                   "(docs/performance.md)")
    e.add_argument("kernel", **spec)
    _add_kernel_options(e)
    e.add_argument("--gpu", default="H100-SXM", choices=gpu_names())
    e.add_argument("--registers", type=_positive, metavar="N",
                   help="registers per thread (default: ptxas's for the twin when nvcc is "
                        "installed, else the kernel's declared budget)")
    e.add_argument("--choose", action="store_true",
                   help="explain each of the kernel's tile variants (tcsim.perf.TILE_VARIANTS: "
                        "128x256 and 64x256 for kernel7..kernel10) and the fastest in full")
    e.set_defaults(run=_explain)
    doc = sub.add_parser("docs", help="regenerate docs/fragments.md and its diagrams",
                         description="Example: tcsim docs docs (writes docs/fragments.md and "
                                     "docs/figures/*.svg from the fragment tables)")
    doc.add_argument("directory", nargs="?", default="docs")
    doc.set_defaults(run=_docs)
    pr = sub.add_parser("precision", help="how f16 and f32 accumulation error grows with K",
                        description="Example: tcsim precision --k 16 256 4096 --dots 64 "
                                    "(docs/precision.md)")
    pr.add_argument("--k", type=_positive, nargs="+", default=[16, 64, 256, 1024, 4096, 16384,
                                                                65536], metavar="K",
                    help="dot-product lengths, multiples of 16 (default: 16 to 65536)")
    pr.add_argument("--dots", type=_positive, default=256, help="dot products per K and "
                    "distribution (default: 256)")
    pr.add_argument("--seed", type=_non_negative, default=0)
    pr.add_argument("--backend", default="auto", choices=["auto", "sim", "hw"],
                    help="where the tensor cores run (default: the GPU when usable)")
    pr.add_argument("--json", metavar="PATH", help="write the table as JSON")
    pr.add_argument("--plot", metavar="PATH", help="draw it as SVG (needs matplotlib)")
    pr.set_defaults(run=_precision)
    v = sub.add_parser("verify", help="compare the simulator with the GPU",
                       description="Example: tcsim verify --count 1000 (needs CuPy and a GPU)")
    v.add_argument("--count", type=_positive, default=2000,
                   help="instructions per distribution")
    v.set_defaults(run=_verify)
    add_blas_parser(sub)  # tcsim blas OP M N K: tcsim.blas.report
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # --debug is taken anywhere on the line (before or after the subcommand)
    debug = "--debug" in argv or os.environ.get("TCSIM_DEBUG", "") not in ("", "0")
    argv = [a for a in argv if a != "--debug"]
    try:
        try:
            args = build_parser().parse_args(argv)
        finally:
            sys.stdout.flush()  # --help's text: a closed pipe shows here, not as Python exits
        code = args.run(args)
        sys.stdout.flush()
        return code
    except BrokenPipeError:  # `tcsim layout ... | head`: the reader has all it wanted
        _quiet_stdout()
        return 0
    except Exception as exc:
        raised = _user_error(exc)
        if debug:
            traceback.print_exception(exc, file=sys.stderr)
        elif raised:
            error, frames = raised
            print("Traceback (your code's frames; --debug or TCSIM_DEBUG=1 for all):",
                  file=sys.stderr)
            print("".join(traceback.format_list(frames))
                  + "".join(traceback.format_exception_only(type(error), error)),
                  end="", file=sys.stderr)
        elif not isinstance(exc, (ValueError, TypeError, IndexError, OSError, SimulationError,
                                  HardwareUnavailable)):
            raise  # not a refusal: a bug of tcsim's, shown in full
        message = " ".join(str(exc).split())  # one line, whatever the message holds
        if raised and raised[0] is exc:  # the type says what went wrong in the user's code
            message = f"{type(exc).__name__} in your code: {message}"
        print(f"tcsim: error: {message}", file=sys.stderr)
        return 2


_TCSIM = str(Path(__file__).resolve().parent)
# Code that neither the user nor tcsim wrote: an error raised in it (numpy's IndexError on the
# user's indexing) belongs to the code that called it.
_LIBRARIES = tuple(str(Path(sysconfig.get_paths()[k]).resolve()) for k in ("stdlib", "platstdlib"))
_LIBRARIES += (str(Path(np.__file__).resolve().parent),)


def _home(filename: str) -> str:
    """Whose code a frame runs: "tcsim", "library" or "user"."""
    if filename.startswith("<"):  # <frozen importlib._bootstrap>, <string>
        return "library"
    path = str(Path(filename).resolve())
    if path.startswith(_TCSIM):
        return "tcsim"
    return "library" if path.startswith(_LIBRARIES) else "user"


def _user_error(exc: BaseException):
    """(the error, the user's frames of its traceback) when the user's code raised ``exc``
    or what it wraps (a kernel file that failed to load); None when tcsim raised it (its
    refusals are one line) or a kernel's ``requires`` refused the params (a refusal too)."""
    for error in (exc, exc.__cause__):
        if error is None:
            continue
        frames = traceback.extract_tb(error.__traceback__)
        homes = [_home(f.filename) for f in frames]
        if next((h for h in reversed(homes) if h != "library"), "tcsim") != "user":
            continue  # the innermost frame that is not a library's is tcsim's
        first = homes.index("user")
        caller = frames[first - 1] if first else None
        if caller is not None and caller.name == "params" and "requires(" in (caller.line or ""):
            return None  # Kernel.params calling the kernel's requires
        return error, [f for f, h in zip(frames, homes) if h == "user"]
    return None


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that the flush as Python exits does not fail again
    (the Python docs' recipe for SIGPIPE)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (a test's StringIO)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
