"""The wgmma probes without a GPU: every probe and immediate variant is in the generated source,
and the shared-memory staging the host computes is read back by the descriptors it issues, as
`tcsim.memory.MatrixDescriptor` models the H100 reading them."""

import re

import numpy as np
import pytest

from tcsim.hw.isa.wgmma import ALIGN, staging
from tcsim.hw.isa.wgmma_probes import PROBES, _variants, probe_name, probe_source
from tcsim.isa.wgmma import parse_wgmma, supported_wgmma_qualifiers
from tcsim.memory import MatrixDescriptor

SOURCE = probe_source()


def test_every_probe_is_in_the_source():
    assert len(PROBES) == len(set(PROBES))
    for q, a_source in PROBES:
        spec = parse_wgmma(q)
        assert f"// {q}, A from {a_source}\n" in SOURCE
        assert f"void __launch_bounds__(128) {probe_name(spec, a_source)}(" in SOURCE
        assert f'"wgmma.mma_async.sync.aligned.{q} ' in SOURCE
    assert SOURCE.count("defined(__CUDA_ARCH_FEAT_SM90_ALL)") == 1


def test_probes_cover_each_family_type_pair_and_n():
    specs = [parse_wgmma(q) for q, _ in PROBES]
    for family in ("f16", "bf16", "tf32", "fp8", "int8"):
        ns = {s.n for s in specs if s.family == family}
        assert {8, 24, 64, 128, 256} <= ns and (200 in ns or 208 in ns), family
    pairs = {(s.d_type, s.a_type, s.b_type, s.saturate) for s in specs}
    every = {(s.d_type, s.a_type, s.b_type, s.saturate)
             for s in map(parse_wgmma, supported_wgmma_qualifiers())}
    assert pairs == every
    assert {a for _, a in PROBES} == {"smem", "registers"}


@pytest.mark.parametrize("qualifier, a_source", [p for p in PROBES if p[0].startswith(
    ("m64n8k16", "m64n256k16.f16", "m64n24k8", "m64n200k32", "m64n208k32"))])
def test_switch_holds_exactly_the_legal_immediates(qualifier, a_source):
    spec = parse_wgmma(qualifier)
    name = probe_name(spec, a_source)
    body = SOURCE[SOURCE.index(f"void __launch_bounds__(128) {name}("):]
    body = body[:body.index("default:")]
    cases = sorted(int(c) for c in re.findall(r"case (\d+):", body))
    want = sorted(na | nb << 1 | ta << 2 | tb << 3 for na, nb, ta, tb in _variants(spec, a_source))
    assert cases == want
    assert len(want) == {"f16": 16 if a_source == "smem" else 8, "bf16": 16 if a_source == "smem"
                         else 8, "tf32": 4, "fp8": 4, "int8": 1}[spec.family]


STAGING = [("m64n8k16.f32.f16.f16", "smem", False, False, "128B"),
           ("m64n128k16.f16.f16.f16", "smem", True, True, "128B"),
           ("m64n64k16.f32.bf16.bf16", "smem", True, False, "64B"),
           ("m64n24k16.f32.f16.f16", "registers", False, True, "none"),
           ("m64n200k16.f32.f16.f16", "smem", False, False, "32B"),
           ("m64n256k8.f32.tf32.tf32", "smem", False, False, "128B"),
           ("m64n24k32.f32.e4m3.e5m2", "smem", False, False, "none"),
           ("m64n208k32.s32.s8.s8", "registers", False, False, "128B"),
           ("m64n200k16.f16.f16.f16", "smem", True, True, None),
           ("m64n96k16.f32.bf16.bf16", "registers", False, True, None)]


@pytest.mark.parametrize("qualifier, a_source, trans_a, trans_b, swizzle", STAGING)
def test_staged_tiles_read_back_through_their_descriptors(qualifier, a_source, trans_a, trans_b,
                                                          swizzle, rng):
    """Emulate the probe: chunks copied to their offsets in a 1024-aligned window; then what
    the descriptors (plus the window address, as the kernel adds it) denote is A and B^T."""
    spec = parse_wgmma(qualifier)
    plan = staging(qualifier, a_source, trans_a, trans_b, swizzle)
    ea, eb = (spec.format(op).storage_bits // 8 for op in "ab")
    A = rng.integers(0, 256, (64, spec.k * ea), dtype=np.uint8)  # raw element bytes
    Bt = rng.integers(0, 256, (spec.n, spec.k * eb), dtype=np.uint8)  # B^T: N x K
    parts = [Bt.ravel()[plan.b_order]]
    if a_source == "smem":
        parts.insert(0, A.ravel()[plan.a_order])
    chunks = np.concatenate(parts).reshape(-1, 16)
    assert chunks.shape[0] == plan.chunk_offsets.size
    window = 3 * ALIGN  # the kernel's window address: any multiple of 1024
    smem = np.zeros(window + plan.window_bytes + ALIGN, np.uint8)
    smem[window + plan.chunk_offsets[:, None] + np.arange(16)] = chunks
    assert len(set(plan.chunk_offsets.tolist())) == plan.chunk_offsets.size

    def read(desc, rows, e, major):
        d = MatrixDescriptor.decode(desc + (window >> 4))
        addresses = d.layout(e, major, rows).addresses()  # (rows, K) element starts
        return smem[addresses[..., None] + np.arange(e)].reshape(rows, -1)

    assert np.array_equal(read(plan.desc_b, spec.n, eb, "MN" if trans_b else "K"), Bt)
    if a_source == "smem":
        assert np.array_equal(read(plan.desc_a, 64, ea, "MN" if trans_a else "K"), A)
    assert plan.window_bytes + ALIGN <= 48 * 1024


def test_mn_major_tiles_must_be_whole_swizzle_atoms():
    with pytest.raises(ValueError, match="not whole 128B swizzle atoms"):
        staging("m64n24k16.f32.f16.f16", "smem", False, True, "128B")
    # swizzle=None: 128B where it fits, else the widest whose atoms the tile fills
    modes = {n: str(staging(f"m64n{n}k16.f32.f16.f16", "smem", True, True).tiles[1].swizzle)
             for n in (8, 24, 32, 48, 64, 200, 256)}
    assert modes == {8: "none", 24: "none", 32: "64B", 48: "32B", 64: "128B", 200: "none",
                     256: "128B"}
    assert str(staging("m64n24k16.f32.f16.f16", "smem", False, False).tiles[1].swizzle) == "128B"


def test_hw_wgmma_without_a_gpu_says_why():
    from tcsim import hw

    if hw.available():
        pytest.skip("a GPU is usable here")
    A = np.zeros((64, 16), np.float16)
    with pytest.raises(hw.HardwareUnavailable, match="CuPy|GPU|driver"):
        hw.wgmma("m64n8k16.f32.f16.f16", A, np.zeros((16, 8), np.float16),
                 np.zeros((64, 8), np.float32))
