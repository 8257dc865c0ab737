"""A library GEMM's plan: everything about a cuBLAS kernel that decides its output bits.

A `Plan` names the kernel cuBLAS ran and says, in data, how that kernel reaches each output:
which tensor-core instruction takes each step along K and how K is cut into steps, split
ranges and k-tiles; in what type partial results are kept and added; how fp8 accumulators are
promoted; how inputs are rounded first; and the order of the epilogue's operations. The
engine in `tcsim.blas.chain` turns a plan and the inputs into bits; `str(plan)` says it in
words.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from math import ceil

import numpy as np

from ..isa.qualifier import QualifierError

ENGINES = ("mma", "wgmma_fp8", "ffma", "int")
ORDERS = ("in_order", "residue_first")
PARTIALS = ("f32", "f16", "bf16")
REDUCTIONS = (
    "parallel",  # each range's result stored as `partial`; the ranges added in order in f32
    "serial",  # each range adds its f32 result to the D the previous range stored, in turn
)
LANE_REDUCTIONS = (
    # lanes added pairwise, halving: lane i += lane i + P/2, ..., over P = the next power of
    # two of the lane count, the lanes past it zeros (warp shuffles; a block's threads)
    "tree",
    "in_order",  # lane 0 + lane 1 + ... in turn (one thread reading shared memory)
)
EPILOGUES = (
    "round",  # out = round(acc)
    "add",  # out = round(acc + c), the addition in f32 (bias, or C with alpha = beta = 1)
    "round_add",  # out = round(f32(round(acc)) + c): C added to the rounded result (beta = 1)
    "c_first",  # the accumulator starts from C (f32) instead of zero; out = round(acc)
    "alpha_beta",  # out = round(alpha * acc + beta * c): two f32 products, then their f32 sum
    "alpha_fma",  # out = round(fma(alpha, acc, beta * c)): one rounding for alpha's term
    "scale",  # fp8: out = round((acc * (scale_a * scale_b) + 0) [+ bias]), each step in f32
    "scale_each",  # fp8: out = round(((acc * scale_a) * scale_b) [+ bias])
    "scale_b_first",  # fp8: out = round(((acc * scale_b) * scale_a) [+ bias]) (row-wise)
)


class PlanError(ValueError):
    """A plan that cannot describe a kernel: an unknown field value or a shape it cannot run."""


@dataclass(frozen=True)
class Plan:
    """How a library kernel computes ``D = epilogue(A @ B)``.

    ``engine``: "mma" (a chain of f16/bf16/tf32 tensor-core steps, as mma.sync and wgmma
    compute them on the H100), "wgmma_fp8" (fp8 wgmma k32 steps), "ffma" (f32 fused
    multiply-adds on the CUDA cores, one per k) or "int" (exact integer sums).
    ``instruction``: the PTX qualifier of one step (tcsim's own instruction model runs it).
    ``k_tile``: the K width of the kernel's main-loop tile. ``splits``: how many ranges K is cut
    into (split-K); each range is ``round_up(ceil(K / splits), split_align)`` elements, the
    last one shorter, and starts from zero. ``reduction``: "parallel" (a reduction kernel adds
    the ranges' partials, stored as ``partial``, in order in f32) or "serial" (CUTLASS 2.x's
    in-kernel split-K: each range in turn adds its f32 result to the D the previous one stored,
    rounding to the output type every time). ``order``: "in_order" walks each range from its
    start in steps of the instruction's K (a short last step is padded with zeros);
    "residue_first" takes the range's partial k-tile (its first ``len % k_tile`` elements)
    first, as CUTLASS 2.x kernels do. ``partial``: the type each range's result is stored in
    before the ranges are added in order in f32. ``promotion``: fp8 only, how many k32 steps
    the tensor core sums from zero before the sum is added to an f32 register accumulator
    (None: one accumulator over the whole range, cuBLAS's "fast accumulation").
    ``round_inputs``: "tf32" when A and B are first rounded to tf32 to nearest even.
    ``epilogue``: one of `EPILOGUES`. ``kernel``: the kernel's name as the profiler shows it.
    ``lanes``, ``lane_width``, ``lane_reduction`` ("ffma" only: cuBLAS's gemv and gemmSN
    kernels): the threads that share one output's K within a range. Element k of a range goes
    to lane ``(k // lane_width) % lanes`` (``lane_width`` 0: ``ceil(len / lanes)``, one
    contiguous piece per lane); each lane is an FMA chain from zero over its elements in k
    order, and the lanes' sums are added as ``lane_reduction`` says (one of
    `LANE_REDUCTIONS`; a "tree" of a lane count that is not a power of two runs over the next
    power of two, the missing lanes zeros, as gemvNSP's 24 threads do). ``lane_chunk`` (0: one
    chain per lane): each lane's chain starts again from zero every ``lane_chunk`` of its
    elements, and each such sum is added in f32 to the lane's running sum (gemv2T).
    """

    engine: str
    instruction: str
    k_tile: int
    splits: int = 1
    split_align: int = 0  # 0: the k-tile
    order: str = "in_order"
    partial: str = "f32"
    reduction: str = "parallel"
    promotion: int | None = None
    round_inputs: str | None = None
    epilogue: str = "round"
    kernel: str = ""
    source: str = ""
    lanes: int = 1
    lane_width: int = 1
    lane_reduction: str = "tree"
    lane_chunk: int = 0

    def __post_init__(self) -> None:
        for name, allowed in (("engine", ENGINES), ("order", ORDERS), ("partial", PARTIALS),
                              ("reduction", REDUCTIONS), ("epilogue", EPILOGUES),
                              ("lane_reduction", LANE_REDUCTIONS)):
            if getattr(self, name) not in allowed:
                raise PlanError(f"Plan.{name} must be one of {', '.join(allowed)}; "
                                f"got {getattr(self, name)!r}")
        for name, low in (("k_tile", 1), ("splits", 1), ("split_align", 0), ("lanes", 1),
                          ("lane_width", 0), ("lane_chunk", 0)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise PlanError(f"Plan.{name} must be an int >= {low}; got {value!r}")
        if self.promotion is not None and (
                self.engine != "wgmma_fp8" or not isinstance(self.promotion, int)
                or isinstance(self.promotion, bool) or self.promotion < 1):
            raise PlanError(f"Plan.promotion is a positive int count of fp8 wgmma steps, or "
                            f"None; got {self.promotion!r}")
        if (self.lanes > 1 or self.lane_chunk) and self.engine != "ffma":
            raise PlanError(f"Plan.lanes above 1 and Plan.lane_chunk are for the 'ffma' engine "
                            f"only; got {self.lanes!r} and {self.lane_chunk!r} ({self.engine!r})")
        if self.round_inputs not in (None, "tf32"):
            raise PlanError(f"Plan.round_inputs must be None or 'tf32'; got {self.round_inputs!r}")
        for name in ("instruction", "kernel", "source"):
            if not isinstance(getattr(self, name), str):
                raise PlanError(f"Plan.{name} must be a string; got {getattr(self, name)!r}")
        self.input_type  # noqa: B018 (checks the instruction fits the engine)

    @property
    def input_type(self) -> str:
        """The inputs the instruction reads: "f16", "bf16", "tf32", "f32", "e4m3.e5m2" (fp8, A
        then B), "int8"."""
        from ..isa.qualifier import parse
        from ..isa.wgmma import is_wgmma_qualifier, parse_wgmma

        kinds = {"mma": "an mma.sync qualifier (f16, bf16 or tf32)",
                 "wgmma_fp8": "an fp8 wgmma qualifier", "ffma": "fma.rn.f32.<f32|f16|bf16>",
                 "int": "int8"}
        try:
            if self.engine == "int" and self.instruction == "int8":
                return "int8"
            if self.engine == "ffma" and self.instruction.startswith("fma.rn.f32."):
                kind = self.instruction.rsplit(".", 1)[1]
                if kind in ("f32", "f16", "bf16"):
                    return kind
            if self.engine == "wgmma_fp8" and is_wgmma_qualifier(self.instruction):
                spec = parse_wgmma(self.instruction)
                if spec.family == "fp8":
                    return f"{spec.a_type}.{spec.b_type}"
            if self.engine == "mma" and not is_wgmma_qualifier(self.instruction):
                spec = parse(self.instruction)
                if spec.family in ("f16", "bf16", "tf32") and spec.d_type == "f32":
                    return spec.a_type
        except (QualifierError, ValueError) as e:
            raise PlanError(f"Plan.instruction {self.instruction!r}: {e}") from None
        raise PlanError(f"Plan.instruction for the {self.engine!r} engine is "
                        f"{kinds[self.engine]}; got {self.instruction!r}")

    @property
    def step_k(self) -> int:
        """The K of one instruction step."""
        if self.engine == "ffma":
            return 1
        if self.engine == "int":
            return self.k_tile
        from ..isa.qualifier import parse
        from ..isa.wgmma import is_wgmma_qualifier, parse_wgmma

        if is_wgmma_qualifier(self.instruction):
            return parse_wgmma(self.instruction).k
        return parse(self.instruction).k

    def ranges(self, K: int) -> list[tuple[int, int]]:
        """The split ranges [start, end) of K, in the order their partials are added."""
        align = self.split_align or self.k_tile
        chunk = max(align, -(-ceil(K / self.splits) // align) * align)
        return [(s, min(K, s + chunk)) for s in range(0, K, chunk)] or [(0, 0)]

    def steps(self, start: int, end: int) -> list[tuple[int, int]]:
        """The K ranges of the instruction steps of one split range, in order; a step shorter
        than the instruction's K is padded with zeros."""
        k = self.step_k
        first = []
        if self.order == "residue_first" and (end - start) % self.k_tile:
            cut = start + (end - start) % self.k_tile
            first = [(s, min(cut, s + k)) for s in range(start, cut, k)]
            start = cut
        return first + [(s, min(end, s + k)) for s in range(start, end, k)]

    def positions(self, start: int, end: int) -> np.ndarray:
        """The K index of every product slot of the range's steps, step after step, each step
        padded to the instruction's K with -1 (a zero product)."""
        steps, k = self.steps(start, end), self.step_k
        slots = np.full((len(steps), k), -1, np.int64)
        for i, (s, e) in enumerate(steps):
            slots[i, :e - s] = np.arange(s, e)
        return slots.reshape(-1)

    def with_(self, **changes) -> Plan:
        """A copy with some fields changed (checked like a new plan)."""
        return replace(self, **changes)

    def to_dict(self) -> dict:
        defaults = {"lanes": 1, "lane_width": 1, "lane_reduction": "tree", "lane_chunk": 0}
        return {k: v for k, v in asdict(self).items()
                if v not in (None, "") and defaults.get(k, object()) != v}

    def __str__(self) -> str:
        return describe(self)


_STEP_WORDS = {
    "mma": "tensor-core step",
    "wgmma_fp8": "fp8 wgmma step",
    "ffma": "fused multiply-add",
    "int": "integer step",
}


def describe(plan: Plan, K: int | None = None) -> str:
    """The plan in words; with ``K``, also the split ranges it gives."""
    lines = []
    if plan.kernel:
        lines.append(f"kernel      {plan.kernel}")
    if plan.engine == "ffma":
        lines.append("instruction f32 fused multiply-add on the CUDA cores, one k at a time")
        if plan.lanes > 1 or plan.lane_chunk:
            how = ("pairwise, halving (warp shuffles)" if plan.lane_reduction == "tree"
                   else "in order")
            if plan.lane_reduction == "tree" and plan.lanes & (plan.lanes - 1):
                how = (f"pairwise, halving over {1 << (plan.lanes - 1).bit_length()} lanes, "
                       f"the missing ones zero")
            split = (f"element k to lane (k // {plan.lane_width}) % {plan.lanes}"
                     if plan.lane_width else "one contiguous piece of ceil(K / lanes) each")
            chain = ("an FMA chain from zero" if not plan.lane_chunk else
                     f"FMA chains from zero over {plan.lane_chunk} of its elements at a time, "
                     f"each added to the lane's sum")
            lines.append(f"lanes       {plan.lanes} threads share each output's K: {split}, "
                         f"each lane {chain}; the lanes' sums added {how}")
    elif plan.engine == "int":
        lines.append("instruction int8 tensor-core steps with exact int32 sums "
                     "(any order gives the same bits)")
    else:
        lines.append(f"instruction {plan.instruction} ({_STEP_WORDS[plan.engine]} of "
                     f"K = {plan.step_k}), k-tile {plan.k_tile}")
    if plan.round_inputs == "tf32":
        lines.append("inputs      A and B rounded to tf32 to nearest even first")
    if plan.splits == 1:
        lines.append("split-K     none: one accumulator from zero over all of K")
    else:
        align = plan.split_align or plan.k_tile
        how = (f"partials stored as {plan.partial}, added in order in f32"
               if plan.reduction == "parallel" else
               "each range in turn adds its f32 result to the D stored before it and "
               "rounds to the output type (serial split-K)")
        lines.append(f"split-K     {plan.splits} ranges of round_up(ceil(K / {plan.splits}), "
                     f"{align}) elements, each from zero; {how}")
        if K is not None:
            lines.append("            ranges " + ", ".join(f"[{s}, {e})"
                                                       for s, e in plan.ranges(K)))
    if plan.engine != "int":
        order = ("in order" if plan.order == "in_order"
                 else "each range's partial k-tile first, then whole k-tiles")
        lines.append(f"k order     {order}; a short step is padded with zeros")
    if plan.engine == "wgmma_fp8":
        if plan.promotion:
            lines.append(f"promotion   every {plan.promotion} wgmma steps summed from zero in the "
                         f"tensor core (13 fraction bits), then added to an f32 register "
                         f"accumulator")
        else:
            lines.append("promotion   none (fast accumulation): one wgmma accumulator "
                         "(13 fraction bits) over the whole range")
    elif plan.engine == "mma":
        lines.append("accumulate  f32, rounded toward zero after every step (the tensor core)")
    if plan.engine == "int":
        lines.append("epilogue    none: the int32 sums are the output (wrapping past 2**31)")
    else:
        lines.append("epilogue    " + _EPILOGUE_WORDS[plan.epilogue])
    if plan.source:
        lines.append(f"source      {plan.source}")
    return "\n".join(lines)


_EPILOGUE_WORDS = {
    "round": "the f32 result rounded to the output type (to nearest even)",
    "add": "f32 result + C or bias (f32 add), rounded to the output type",
    "round_add": "the f32 result rounded to the output type, then + C in f32, rounded again",
    "c_first": "none: C is loaded into the accumulator before the first step; the f32 result "
               "rounded to the output type",
    "alpha_beta": "alpha * result + beta * C (two f32 products, an f32 sum), rounded",
    "alpha_fma": "fma(alpha, result, beta * C) in f32, rounded",
    "scale": "result * (scale_a * scale_b) + 0 in f32 (+ bias), rounded to the output type",
    "scale_each": "(result * scale_a) * scale_b in f32 (+ bias), rounded to the output type",
    "scale_b_first": "(result * scale_b) * scale_a in f32 (+ bias), rounded to the output type",
}
