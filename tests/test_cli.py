"""The tcsim command: each subcommand runs, and errors are one readable line."""

import pytest

from tcsim.cli import main


def test_demo_shows_tensor_core_and_fma_chain(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "0x3f800006" in out and "0x3f800008" in out  # tensor core vs f32 FMA chain


def test_layout_prints_the_map(capsys):
    assert main(["layout", "m16n8k16.row.col.f32.bf16.bf16.f32", "b"]) == 0
    assert "T0:r0.lo" in capsys.readouterr().out


def test_mma_shows_bits(capsys):
    assert main(["mma", "m16n8k8.row.col.f16.f16.f16.f16", "--distribution", "cancel",
                 "--element", "3", "5"]) == 0
    assert "D[3,5]" in capsys.readouterr().out


def test_bad_qualifier_is_one_line(capsys):
    assert main(["mma", "m16n8k9.row.col.f16.f16.f16.f16"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tcsim: error:") and "\n" not in err


def test_verify_without_gpu_says_so(capsys):
    from tcsim import hw

    if hw.available():
        pytest.skip("a GPU is present")
    assert main(["verify"]) == 2
    assert "no GPU" in capsys.readouterr().out


def test_trace_prints_the_table_and_json(capsys):
    import json

    assert main(["trace", "kernel1", "512", "256", "128", "--block_k", "32"]) == 0
    out = capsys.readouterr().out
    assert "A_smem_ldmatrix" in out and "l1tex__data_bank_conflicts" in out
    assert main(["trace", "kernel5", "256", "256", "64", "--json", "--accumulate", "f32"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["params"]["accumulate"] == "f32" and data["params"]["block_k"] == 32


def test_compare_shows_the_conflicts_swizzling_removes(capsys):
    assert main(["compare", "kernel1", "kernel2", "512", "256", "128"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines()
                if x.startswith("A_smem_ldmatrix"))
    assert line.split()[-1] == "0" and line.split()[2] != "0"  # kernel2: none; kernel1: some


def test_hopper_kernels_trace_and_beta_zero_drops_c(capsys):
    import json

    assert main(["trace", "kernel10", "256", "512", "128", "--beta", "1"]) == 0
    assert "C_tma" in capsys.readouterr().out
    assert main(["trace", "kernel10", "256", "512", "128"]) == 0  # beta 0, as tcsim.run
    out = capsys.readouterr().out
    assert "D_tma" in out and "C_tma" not in out
    assert main(["trace", "kernel10", "256", "512", "128", "--beta", "-2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["beta"] == -2
    assert main(["explain", "kernel10", "4096", "4096", "4096"]) == 0
    out = capsys.readouterr().out
    assert "limited by" in out and "1 block(s) of 12 warps" in out
    assert main(["explain", "kernel10", "4096", "4096", "4096", "--gpu", "T4"]) == 2
    err = capsys.readouterr().err.strip()
    assert "kernel10 needs sm_90a; T4 is sm_75" in err and "\n" not in err


def test_indivisible_size_is_one_line(capsys):
    assert main(["trace", "kernel1", "100", "128", "64"]) == 2
    err = capsys.readouterr().err.strip()
    assert "M=100 is not a multiple of block_m=256" in err and "\n" not in err


def test_mma_on_given_inputs(tmp_path, capsys):
    import numpy as np

    path = tmp_path / "in.npz"
    A = np.full((16, 8), 0.5, np.float16)
    B = np.full((8, 8), 2.0, np.float16)
    C = np.full((16, 8), 1.0, np.float32)
    np.savez(path, A=A, B=B, C=C)
    assert main(["mma", "m16n8k8.row.col.f32.f16.f16.f32", "--inputs", str(path)]) == 0
    assert "D[0,0] = 9.0" in capsys.readouterr().out  # 8 * 0.5 * 2 + 1
    np.savez(path, A=A, B=B)
    assert main(["mma", "m16n8k8.row.col.f32.f16.f16.f32", "--inputs", str(path)]) == 2
    assert "lacks array(s) ['C']" in capsys.readouterr().err


def test_trace_takes_the_seeds_kernels(capsys):
    assert main(["trace", "tf32_puzzle", "256", "128", "64"]) == 0
    out = capsys.readouterr().out
    assert "ld.local.v2.f32" in out and "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum" in out
