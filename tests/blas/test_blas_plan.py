"""tcsim.blas.Plan: split ranges, instruction steps, checks and words."""

import pytest

from tcsim.blas import Plan, PlanError, describe

F16 = "m16n8k16.row.col.f32.f16.f16.f32"


def test_split_ranges_are_whole_k_tiles_of_ceil_t_over_s():
    # cuBLAS (nvjet): ceil(T / S) 64-wide k-tiles per range, T = ceil(K / 64) k-tiles.
    for K, S in [(3000, 8), (8192, 6), (16384, 12), (100, 2), (64, 3), (1, 4)]:
        plan = Plan("mma", F16, 64, splits=S)
        ranges = plan.ranges(K)
        tiles = -(-K // 64)
        per = -(-tiles // S) * 64
        assert ranges[0] == (0, min(K, per))
        assert all(b - a == per for a, b in ranges[:-1])
        assert ranges[-1][1] == K and len(ranges) == -(-K // per)
        assert all(a == b for (_, b), (a, _) in zip(ranges, ranges[1:]))


def test_cutlass_ranges_round_to_eight_elements():
    plan = Plan("mma", "m16n8k8.row.col.f32.f16.f16.f32", 32, splits=9, split_align=8,
                order="residue_first")
    # 777 / 9 = 86.3 -> 87 -> 88 elements a range
    assert plan.ranges(777)[:2] == [(0, 88), (88, 176)] and plan.ranges(777)[-1] == (704, 777)


def test_steps_in_order_and_residue_first():
    plan = Plan("mma", F16, 64)
    assert plan.steps(0, 40) == [(0, 16), (16, 32), (32, 40)]
    slots = plan.positions(0, 40)  # the short last step padded with zero products (-1)
    assert len(slots) == 48 and list(slots[:40]) == list(range(40)) and (slots[40:] == -1).all()
    cutlass = Plan("mma", "m16n8k8.row.col.f32.f16.f16.f32", 32, order="residue_first")
    # 78 = 2 * 32 + 14: the 14-element partial k-tile first, in k8 steps, then whole tiles
    steps = cutlass.steps(0, 78)
    assert steps[:2] == [(0, 8), (8, 14)] and steps[2] == (14, 22) and steps[-1] == (70, 78)
    assert sum(b - a for a, b in steps) == 78


@pytest.mark.parametrize("field, value", [
    ("engine", "tensor"), ("order", "backwards"), ("partial", "f64"), ("epilogue", "magic"),
    ("splits", 0), ("k_tile", -64), ("splits", 2.0), ("promotion", 4), ("round_inputs", "bf16"),
    ("reduction", "tree"), ("instruction", "m16n8k9.row.col.f32.f16.f16.f32"),
])
def test_bad_fields_are_refused_by_name(field, value):
    with pytest.raises(PlanError, match=field if field != "instruction" else "instruction"):
        Plan(**{**dict(engine="mma", instruction=F16, k_tile=64), field: value})


def test_the_plan_reads_in_words():
    plan = Plan("wgmma_fp8", "m64n8k32.f32.e4m3.e4m3", 128, splits=3, promotion=4,
                epilogue="scale", kernel="nvjet_sm90_qqtst_x")
    text = describe(plan, K=8192)
    assert "every 4 wgmma steps" in text and "3 ranges" in text and "[0, 2816)" in text
    assert str(plan).startswith("kernel      nvjet_sm90_qqtst_x")
    fast = plan.with_(promotion=None, splits=1)
    assert "fast accumulation" in str(fast) and "none: one accumulator" in str(fast)
