"""GPU descriptions as data: every constant the speed-of-light model uses, with its unit and its
source (``gpus.json`` beside this module).

The H100 SXM entry is measured on this project's H100 by ``benchmarks/bench_gpu_constants.py``
(tensor rates, shared-memory wavefronts, latencies, bandwidths, the clock) and the CUDA
programming guide's per-SM limits, but six constants whose source begins "FITTED": fitted on
named cases of issue 35's runs (``benchmarks/bench_sweep.py --fit``), the rest of them held out.
The other GPUs come from published figures and are labelled ``measured: false`` (unverified
here). The model never fits a constant to one kernel.

    gpu("H100-SXM")["sms"]                 # 132
    gpu("H100-SXM").tensor_rate("m16n8k16.row.col.f32.f16.f16.f32")   # instructions/SM/cycle
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

from ..isa.qualifier import parse
from ..isa.validate import did_you_mean
from ..isa.wgmma.spec import is_wgmma_qualifier, parse_wgmma


@dataclass(frozen=True)
class Constant:
    value: float
    unit: str
    source: str


class MissingRateError(ValueError):
    """The GPU description has no measured rate for an instruction a kernel issues."""


@dataclass(frozen=True)
class Gpu:
    key: str
    name: str
    arch: str
    measured: bool  # measured on this project's hardware, or published figures only
    constants: dict[str, Constant]
    tensor: dict[str, Constant]  # mma qualifier family -> instructions per SM per cycle

    def __getitem__(self, name: str) -> float:
        try:
            return self.constants[name].value
        except KeyError:
            raise KeyError(f"{self.key} has no constant {name!r}; it has "
                           f"{', '.join(sorted(self.constants))}") from None

    def tensor_rate(self, qualifier: str) -> float:
        """mma.sync instructions of ``qualifier`` (``m16n8k16.row.col.f32.f16.f16.f32`` or
        with the ``mma.sync.aligned.`` prefix), or warpgroup wgmma instructions of
        ``wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16``, one SM completes per cycle at
        most."""
        family = tensor_family(qualifier)
        if family not in self.tensor:  # a shape or type this description has no rate for
            raise MissingRateError(
                f"{self.key}: no tensor rate for {family!r} (a {qualifier}): the description "
                f"holds measured rates only (benchmarks/bench_gpu_constants.py measures them); "
                f"known: {', '.join(sorted(self.tensor))}")
        return self.tensor[family].value

    def clock_hz(self, wgmma: bool, accumulate: str | None = None,
                 busy_sms: int | None = None, seconds: float | None = None) -> float:
        """The SM clock the model assumes: under an mma.sync load (``clock_ghz``), or for a
        wgmma kernel the clock under a wgmma load of random data (``clock_ghz_wgmma``).

        Where the description has the clock the power cap settles a wgmma GEMM at, per
        accumulator type (``clock_ghz_wgmma_gemm_f16``, ``_f32``, all SMs busy), a wgmma kernel
        with ``accumulate`` runs at that clock, raised when only ``busy_sms`` SMs work (the
        cap holds the busy SMs' power, which grows about as the cube of the clock, the voltage
        rising with it) up to the clock of a tensor load the cap does not hold
        (``clock_ghz_tensor_uncapped``). A kernel of ``seconds`` starts at that uncapped clock
        and falls to the capped one with the time constant ``clock_cap_seconds``: its mean
        clock over the run."""
        gemm = f"clock_ghz_wgmma_gemm_{accumulate}"
        if not wgmma or gemm not in self.constants:
            return (self["clock_ghz_wgmma"] if wgmma else self["clock_ghz"]) * 1e9
        share = self["sms"] / max(busy_sms or self["sms"], 1)
        top = self["clock_ghz_tensor_uncapped"]
        capped = min(top, self[gemm] * share ** (1 / 3))
        if seconds is not None and seconds > 0 and "clock_cap_seconds" in self.constants:
            x = seconds / self["clock_cap_seconds"]
            capped += (top - capped) * -math.expm1(-x) / x
        return capped * 1e9


def tensor_family(qualifier: str) -> str:
    """What sets a tensor instruction's rate: ``"m16n8k16.f32.f16"`` (an mma.sync's shape, D
    type and A type) or ``"wgmma.m64n256k16.f32.f16"``; the qualifier with or without its
    PTX prefix (a `QualifierError` names one that is no instruction)."""
    if is_wgmma_qualifier(qualifier):
        spec = parse_wgmma(qualifier)
        return f"wgmma.{spec.shape}.{spec.d_type}.{spec.a_type}"
    spec = parse(qualifier)
    return f"{spec.shape}.{spec.d_type}.{spec.a_type}"


@cache
def _table() -> dict:
    return json.loads((files("tcsim.perf") / "gpus.json").read_text())


def gpu_names() -> list[str]:
    return list(_table())


def gpu(name: str | Gpu) -> Gpu:
    """The description of GPU ``name`` (see `gpu_names`)."""
    if isinstance(name, Gpu):
        return name
    table = _table()
    if not isinstance(name, str):
        raise TypeError(f"gpu must be a GPU name such as 'H100-SXM' or a Gpu, got {name!r}")
    if name not in table:
        raise ValueError(f"unknown GPU {name!r}{did_you_mean(name, list(table))}; known: "
                         f"{', '.join(table)}")
    entry = table[name]
    constants = {k: Constant(**v) for k, v in entry["constants"].items()}
    tensor = {k: Constant(**v) for k, v in entry["tensor"].items()}
    return Gpu(name, entry["name"], entry["arch"], entry["measured"], constants, tensor)
