"""Mistyped names get a suggestion: a kernel name ('kernal5'), a user's kernel in its file
('mien'), a GPU ('h100'); a file given without :NAME says to add it; the trace help names
the user's own kernels."""

from pathlib import Path

import pytest
from cli_run import run_cli

import tcsim
from tcsim.isa.validate import did_you_mean
from tcsim.kernels import kernel_named

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "own_kernel.py"


@pytest.mark.parametrize("name, meant", [("kernal5", "kernel5"), ("Kernel7", "kernel7"),
                                         ("wmma_basic_fixd", "wmma_basic_fixed"),
                                         ("kernel2-missing-barier", "kernel2-missing-barrier")])
def test_a_mistyped_kernel_name_gets_a_suggestion(name, meant):
    with pytest.raises(ValueError, match=f"no kernel named '{name}' \\(did you mean '{meant}'"):
        kernel_named(name)
    code, _, err = run_cli(["trace", name, "1", "1", "1"])
    assert code == 2 and f"(did you mean '{meant}'?)" in err


def test_an_unlike_name_gets_no_suggestion():
    with pytest.raises(ValueError) as error:
        kernel_named("zzzzzz")
    assert "did you mean" not in str(error.value)


def test_a_file_without_a_name_says_to_add_one():
    code, _, err = run_cli(["trace", str(EXAMPLE), "1024", "1024", "1024"])
    assert code == 2 and "add :NAME, the Kernel's variable name" in err
    assert f"{EXAMPLE}:mine" in err


def test_a_mistyped_kernel_in_a_file_gets_a_suggestion():
    with pytest.raises(ValueError, match=r"has no 'mine_swizled' \(did you mean 'mine_swizzled'"):
        kernel_named(f"{EXAMPLE}:mine_swizled")


def test_what_is_not_a_kernel_is_named_with_its_article():
    with pytest.raises(ValueError, match="ROW is an int, not a tcsim.Kernel"):
        kernel_named(f"{EXAMPLE}:ROW")
    with pytest.raises(ValueError, match="PARAMS is a GemmParams, not a tcsim.Kernel"):
        kernel_named(f"{EXAMPLE}:PARAMS")


@pytest.mark.parametrize("gpu, meant", [("h100", "H100-SXM"), ("a100", "A100-SXM4-40GB"),
                                        ("h100-sxm", "H100-SXM"), ("T 4", "T4")])
def test_a_mistyped_gpu_gets_a_suggestion(gpu, meant):
    t = tcsim.trace("kernel5", 1024, 1024, 1024)
    with pytest.raises(ValueError, match=f"unknown GPU '{gpu}' \\(did you mean '{meant}'"):
        t.explain(gpu=gpu)


def test_did_you_mean_offers_nothing_for_nothing_alike():
    assert did_you_mean("", ["H100-SXM"]) == ""
    assert did_you_mean("quux", ["H100-SXM", "T4"]) == ""


def test_the_trace_help_names_your_own_kernels():
    code, out, _ = run_cli(["--help"])
    assert code == 0
    trace_line = " ".join(out.split()).split(" trace ")[1].split(" compare ")[0]
    assert "your own" in trace_line and "file.py:NAME" in trace_line
