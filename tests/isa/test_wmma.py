"""WMMA (wmma.mma) in the simulator: the H100's own outputs reproduced, every element against
an independent scalar reference, the fragment maps' structure, and clear errors."""

import importlib.util

import numpy as np
import pytest
from conftest import SOURCE_TREE, source_tree_present
from oracle import decode, dot, encode, value
from wgmma_oracle import NAN_BITS, SM90_F16_ZERO, SM90_F32_ZERO

from tcsim.isa.qualifier import QualifierError
from tcsim.isa.wmma import (
    fragment_registers,
    parse_wmma,
    supported_wmma_qualifiers,
    wmma,
    wmma_fragment,
    wmma_regs,
)

QUALIFIERS = supported_wmma_qualifiers()
EVIDENCE = SOURCE_TREE / "docs" / "evidence" / "wmma_mma_h100_2026-11-23.npz"


def _capture_script():
    spec = importlib.util.spec_from_file_location(
        "capture_wmma", SOURCE_TREE / "scripts" / "capture_wmma.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not source_tree_present(), reason="needs the source tree's docs/evidence")
def test_the_h100s_recorded_outputs_are_reproduced():
    """1,536 wmma.mma instructions recorded on the H100 by scripts/capture_wmma.py (half of
    them uniform random register bits: NaN, infinities, subnormals), all 64 qualifiers."""
    capture = _capture_script()
    recorded = np.load(EVIDENCE)
    picked = recorded["picked"]
    for q in QUALIFIERS:
        a, b, c = (x[picked] for x in capture.inputs(q, 200))
        with np.errstate(all="ignore"):
            got = wmma_regs(q, a, b, c)
        bad = np.flatnonzero((got != recorded[q]).any(axis=(1, 2)))
        assert bad.size == 0, f"{q}: instructions {bad.tolist()} differ from the H100"


def _reference(spec, a_row, b_col, c) -> int:
    """One output as docs/wmma.md states the rule, with tests/oracle.py's scalar adder."""
    a_row, b_col, c = [int(x) for x in a_row], [int(x) for x in b_col], int(c)
    wide = "f32" if "f32" in (spec.c_type, spec.d_type) else "f16"
    if spec.c_type == "f16" and wide == "f32":  # finite inputs here
        c = encode("f32", value("f16", c), "rn")  # exact
    group = 4 if spec.a_type == "tf32" else 16
    zero = SM90_F32_ZERO if wide == "f32" else SM90_F16_ZERO
    d = dot(spec.a_type, wide, wide, a_row, b_col, c, group=group, F=25, zero_exp=zero,
            nan_bits=NAN_BITS[wide])
    if spec.d_type == "f16" and wide == "f32":
        d = encode("f16", value("f32", d), "rn") if decode("f32", d)[0] == "finite" else d
    return d


@pytest.mark.parametrize("qualifier", QUALIFIERS[::3] + ["wmma.m8n32k16.col.row.f16.f16.f16.f32"])
def test_every_element_matches_the_scalar_reference(qualifier, rng):
    spec = parse_wmma(qualifier)
    A, B, C = _draw(spec, rng)
    fa, fb, fc, fd = (spec.format(op) for op in "abcd")
    D = fd.to_bits(wmma(qualifier, fa.from_bits(A), fb.from_bits(B), fc.from_bits(C)))
    for i in range(spec.m):
        for j in range(spec.n):
            want = _reference(spec, A[i], B[:, j], C[i, j])
            assert int(D[i, j]) == want, f"D[{i},{j}]: {int(D[i, j]):#x}, reference {want:#x}"


def _draw(spec, rng):
    """Finite values over a wide range, with cancellation: bits of A (M, K), B (K, N), C."""
    fa, fc = spec.format("a"), spec.format("c")
    scale = 2.0 ** rng.integers(-8, 8, (spec.m, 1))
    A = fa.to_bits((rng.standard_normal((spec.m, spec.k)) * scale).astype(fa.dtype))
    B = fa.to_bits(rng.standard_normal((spec.k, spec.n)).astype(fa.dtype))
    C = fc.to_bits((rng.standard_normal((spec.m, spec.n)) * 4).astype(fc.dtype))
    return A, B, C


def test_f16_d_from_f32_c_rounds_twice():
    """f16 D with f32 C is an f32 HMMA (toward zero) then a rounding to nearest f16: 1 + 2^-11
    + 2^-24 truncates to 1 + 2^-11 in f32, a tie that rounds to even, 1.0; a native f16 sum
    would round the exact value up."""
    q = "wmma.m16n16k16.row.col.f16.f16.f16.f32"
    A = np.zeros((16, 16), np.float16)
    B = np.zeros((16, 16), np.float16)
    A[0, 0], B[0, 0] = 2.0**-11, 1.0
    A[0, 1], B[1, 0] = 2.0**-12, 2.0**-12
    C = np.ones((16, 16), np.float32)
    assert wmma(q, A, B, C)[0, 0] == np.float16(1.0)
    native = wmma("wmma.m16n16k16.row.col.f16.f16.f16.f16", A, B, C.astype(np.float16))
    assert native[0, 0] == np.float16(1 + 2.0**-10)


def test_fragment_maps_cover_each_element_as_often_as_ptx_repeats_it():
    for q in QUALIFIERS:
        spec = parse_wmma(q)
        for op in "abcd":
            f = wmma_fragment(spec, op)
            assert f.registers == fragment_registers(spec.shape, op, getattr(spec, f"{op}_type"))
            rows, cols = spec.matrix_shape(op)
            assert f.copies * rows * cols == 32 * f.elements
    # the H100's layout of m16n16k16's A: lane 5 holds rows 1 and 9, columns 2, 3, 10, 11,
    # then the same again (registers 4-7)
    f = wmma_fragment("wmma.m16n16k16.row.col.f32.f16.f16.f32", "a")
    assert [tuple(x) for x in f.coords[5, :8]] == [(1, 2), (1, 3), (9, 2), (9, 3), (1, 10),
                                                   (1, 11), (9, 10), (9, 11)]
    assert np.array_equal(f.coords[:, 8:], f.coords[:, :8]) and f.copies == 2


def test_duplicated_elements_are_read_from_the_first_copy(rng):
    q = "wmma.m16n16k16.row.col.f32.f16.f16.f32"
    fa = wmma_fragment(q, "a")
    A = rng.standard_normal((16, 16)).astype(np.float16)
    B = rng.standard_normal((16, 16)).astype(np.float16)
    C = np.zeros((16, 16), np.float32)
    regs = fa.pack(A)
    regs[:, 4:] = rng.integers(0, 2**32, (32, 4), dtype=np.uint64).astype(np.uint32)
    fb, fc, fd = (wmma_fragment(q, op) for op in "bcd")
    d = wmma_regs(q, regs, fb.pack(B), fc.pack(C))
    assert np.array_equal(fd.unpack(d), wmma(q, A, B, C))


@pytest.mark.parametrize("bad, words", [
    ("wmma.m16n8k16.row.col.f32.f16.f16.f32", "shapes"),
    ("wmma.m16n16k16.row.col.f16.bf16.bf16.f32", "allows"),
    ("wmma.m16n16k16.row.row.f32.f16.bf16.f32", "both"),
    ("wmma.m16n16k16.row.diag.f32.f16.f16.f32", "layouts"),
    ("m16n16k16.row.col.f32.f16.f16.f32", "not a wmma"),
])
def test_bad_qualifiers_are_named(bad, words):
    with pytest.raises(QualifierError, match=words):
        parse_wmma(bad)


def test_wrong_shapes_and_arch_are_refused():
    q = "wmma.m32n8k16.row.col.f32.f16.f16.f32"
    A, B = np.zeros((32, 16), np.float16), np.zeros((16, 8), np.float16)
    with pytest.raises(ValueError, match=r"\(\.\.\., 32, 8\)"):
        wmma(q, A, B, np.zeros((16, 16), np.float32))
    with pytest.raises(ValueError, match="sm_80"):
        wmma(q, A, B, np.zeros((32, 8), np.float32), arch="sm_80")


def test_ptx_spelling_parses_to_the_same_instruction():
    assert parse_wmma("wmma.mma.sync.aligned.col.row.m8n32k16.f16.f32").qualifier == \
        "wmma.m8n32k16.col.row.f16.f16.f16.f32"
    assert parse_wmma("wmma.m8n32k16.col.row.f16.f16.f16.f32").ptx == \
        "wmma.mma.sync.aligned.col.row.m8n32k16.f16.f32"
