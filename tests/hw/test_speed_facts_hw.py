"""Rate facts the speed model rests on, measured again on the GPU (sm_90a) with the benchmarks'
own kernels (benchmarks/bench_gpu_constants.py, found in $TCSIM_REPO or beside these tests):

- wgmma's rate does not depend on B's swizzle: m64n96k16 with B in 32-column boxes under the
  64-byte swizzle (the Hopper twins' tiles 96 wide) runs at the 1/48 per SM per cycle of B in
  64-column boxes, on 1, 2 or 3 warpgroups a block;
- L2 serves TMA's box rows shorter than a line to SMs asking together hardly faster than to
  SMs apart, where 128-byte rows gain half again (`tcsim.perf.model.lockstep_lookups`);
- TMA boxes hanging past the matrix's last row (the last row tile of a GEMM whose M is not a
  multiple of the tile's rows) cost one SM alone nothing, but take several times as long as
  boxes inside the matrix when every SM copies such boxes, or when a few SMs copy them while
  the others copy boxes inside another matrix.

docs/evidence/gpu_constants_h100_2026-11-26_rows.json holds the first run of the first two,
docs/evidence/gpu_constants_h100_2026-11-26_edge_rows.json of the third.
"""

import os
import sys
from pathlib import Path

import pytest
from hw_log import log_hw

pytestmark = pytest.mark.hw

TESTS = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    from tcsim.hw import runtime

    reason = runtime.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    import cupy

    if cupy.cuda.Device().compute_capability != "90":
        pytest.skip("the rates are the H100's (sm_90a)")
    for candidate in filter(None, (os.environ.get("TCSIM_REPO"), TESTS.parent)):
        folder = Path(candidate).resolve() / "benchmarks"
        if (folder / "bench_gpu_constants.py").is_file():
            sys.path.insert(0, str(folder))
            import bench_gpu_constants

            sms = cupy.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
            return bench_gpu_constants, bench_gpu_constants.Context(sms=sms, runs=3, warmup=1)
    pytest.skip("no benchmarks/ folder: set TCSIM_REPO to the tcsim checkout")


def test_wgmma_rate_is_the_same_with_b_in_64_byte_rows(bench, monkeypatch):
    module, ctx = bench
    monkeypatch.setattr(module, "WGMMA_LAYOUT_N", (96,))
    rates = {k: v["value"] for k, v in module.wgmma_b_layouts(ctx).items()}
    log_hw({"test": "wgmma_b_layouts", "rates": rates})
    for groups in (1, 2, 3):
        wide = rates[f"wgmma_m64n96k16_f16_f32_box64_wg{groups}_per_sm_per_cycle"]
        narrow = rates[f"wgmma_m64n96k16_f16_f32_box32_wg{groups}_per_sm_per_cycle"]
        assert narrow == pytest.approx(wide, rel=0.02), groups
        assert wide == pytest.approx(1 / 48, rel=0.02), groups


def test_l2_serves_short_box_rows_to_sms_together_hardly_faster(bench):
    module, ctx = bench
    rates = {k: v["value"] for k, v in module.tma_short_rows(ctx).items()}
    log_hw({"test": "tma_short_rows", "rates": rates})
    long_gain = rates["l2_tma_read_rows128_bytes_per_s_share8"] / \
        rates["l2_tma_read_rows128_bytes_per_s_share1"]
    short_gain = rates["l2_tma_read_rows64_bytes_per_s_share8"] / \
        rates["l2_tma_read_rows64_bytes_per_s_share1"]
    assert long_gain > 1.3 and short_gain < 1.15, (long_gain, short_gain)


def test_boxes_past_the_last_row_are_slow_when_every_sm_copies_them(bench, monkeypatch):
    module, ctx = bench
    boxes = ((192, 64, 192), (4, 2)), ((192, 64, 128), (4, 2))
    monkeypatch.setattr(module, "TMA_EDGE_BOXES", boxes)
    cycles = {k: v["value"] for k, v in module.tma_edge_rows(ctx).items()}
    log_hw({"test": "tma_edge_rows", "cycles_per_box": cycles})
    one = {rows: cycles[f"tma_box192x64_inside{rows}_sms1_cycles_per_box"] for rows in (192, 128)}
    every = {rows: cycles[f"tma_box192x64_inside{rows}_sms{ctx.sms}_cycles_per_box"]
             for rows in (192, 128)}
    assert one[128] == pytest.approx(one[192], rel=0.1), one
    assert every[128] > 2 * every[192], every


def test_boxes_past_the_last_row_on_a_few_sms_are_slow_beside_other_traffic(bench, monkeypatch):
    module, ctx = bench
    monkeypatch.setattr(module, "TMA_EDGE_SMS", (22,))
    cycles = {k: v["value"] for k, v in module.tma_edge_beside_traffic(ctx).items()}
    log_hw({"test": "tma_edge_beside_traffic", "cycles_per_box": cycles})
    alone = cycles["tma_box128x64_inside64_sms22_beside0_cycles_per_box"]
    beside = cycles[f"tma_box128x64_inside64_sms22_beside{ctx.sms - 22}_cycles_per_box"]
    assert beside > 1.6 * alone, (alone, beside)
