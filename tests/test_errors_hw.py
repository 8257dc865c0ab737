"""The errors of the GPU side on a machine without a GPU (or without Nsight Compute) are the
ones docs/errors.md lists, with the messages it shows; the command line reports them in one
line."""

from pathlib import Path

import numpy as np
import pytest
from cli_run import run_cli

from tcsim import hw

PAGE = Path(__file__).resolve().parent.parent / "docs" / "errors.md"
Q = "m16n8k8.row.col.f32.f16.f16.f32"


def listed(kind: str) -> str:
    """The row of docs/errors.md's table for exception type ``kind``."""
    rows = [line for line in PAGE.read_text().splitlines() if line.startswith(f"| `{kind}` |")]
    assert rows, f"docs/errors.md has no row for {kind}"
    return rows[0]


@pytest.mark.skipif(hw.available(), reason="a GPU is usable here")
def test_no_gpu_is_hardware_unavailable_as_listed():
    rng = np.random.default_rng()
    A = rng.standard_normal((16, 8)).astype(np.float16)
    B = rng.standard_normal((8, 8)).astype(np.float16)
    C = rng.standard_normal((16, 8)).astype(np.float32)
    with pytest.raises(hw.HardwareUnavailable) as error:
        hw.mma(Q, A, B, C)
    assert isinstance(error.value, RuntimeError)
    row = listed("tcsim.hw.HardwareUnavailable")
    assert "`RuntimeError`" in row and "`tcsim.hw.mma`" in row
    assert str(error.value).split(":")[0] in row  # the message's opening, as shown
    assert "tcsim.hw.HardwareUnavailable" in PAGE.read_text().split("## The exception types")[0]


def test_no_ncu_is_file_not_found_as_listed(monkeypatch):
    monkeypatch.setenv("TCSIM_NCU", "/nowhere/ncu")
    monkeypatch.setenv("PATH", "/nowhere")
    monkeypatch.setattr("glob.glob", lambda pattern: [])
    with pytest.raises(FileNotFoundError) as error:
        hw.profile([])
    row = listed("FileNotFoundError")
    assert "`tcsim.hw.profile`" in row and f"`{error.value}`" in row


def test_the_command_line_reports_hardware_unavailable_in_one_line(monkeypatch):
    monkeypatch.setattr(hw.runtime, "unavailable_reason", lambda: "no CUDA GPU is visible")
    monkeypatch.setattr("tcsim.cli._trace", lambda args: hw.runtime.require())  # tcsim raises
    code, _, err = run_cli(["trace", "kernel1", "256", "128", "64"])
    assert code == 2
    assert err == "tcsim: error: tcsim.hw needs an NVIDIA GPU with CuPy: no CUDA GPU is visible\n"
