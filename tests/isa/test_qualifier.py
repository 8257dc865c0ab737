import pytest

import tcsim
from tcsim import QualifierError, parse


def test_parse_fields():
    s = parse("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32")
    assert (s.m, s.n, s.k) == (16, 8, 16)
    assert (s.d_type, s.a_type, s.b_type, s.c_type) == ("f32", "bf16", "bf16", "f32")
    assert s.qualifier == "m16n8k16.row.col.f32.bf16.bf16.f32"
    assert s.matrix_shape("a") == (16, 16) and s.matrix_shape("b") == (16, 8)


@pytest.mark.parametrize("bad, message", [
    ("m16n8k8.row.col.f32.f16.f16", "expected shape"),
    ("m16n8k32.row.col.f32.f16.f16.f32", "shapes"),
    ("m16n8k8.col.row.f32.f16.f16.f32", "requires .row.col"),
    ("m16n8k8.row.col.f32.f16.bf16.f32", "same type"),
    ("m16n8k8.row.col.f16.bf16.bf16.f16", "not allowed"),
    ("m16n8k8.row.col.f32.f16.f16.f16", "same type"),
    ("m16n8k8.row.col.s32.s4.s4.s32", "unsupported input type"),
    ("m8n8k4.row.col.f16.f16.f16.f32", r"same type or \.f32 D with \.f16 C"),
    ("m8n8k4.row.col.f32.bf16.bf16.f32", "shapes m16n8k8"),
    ("mX.row.col.f32.f16.f16.f32", "not a shape"),
])
def test_bad_qualifiers_name_the_problem(bad, message):
    with pytest.raises(QualifierError, match=message):
        parse(bad)


def test_supported_list_parses_and_is_complete():
    quals = tcsim.supported_qualifiers()
    # 12 m8n8k4 (4 layouts x 3 types), 8 more f16/bf16/tf32, 16 fp8 (2 shapes x 2 accumulators
    # x 4 type pairs), 16 integer (2 shapes x 4 type pairs x with and without .satfinite)
    assert len(quals) == len(set(quals)) == 52
    for q in quals:
        assert parse(q).qualifier == q
