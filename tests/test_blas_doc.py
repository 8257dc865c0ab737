"""docs/blas.md: its blocks run in order and print what the page shows, and what they print
says what the page claims (checked against float64 and NumPy, not against tcsim itself)."""

from pathlib import Path

import pytest
from doc_blocks import check_blocks, run_blocks

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "blas.md"


@pytest.fixture(scope="module")
def blocks():
    return run_blocks(PAGE)



def test_every_block_prints_what_the_page_shows(blocks):
    shown = [(code, text, printed) for code, text, printed in blocks if text is not None]
    assert len(blocks) >= 9 and len(shown) == len(blocks)
    check_blocks(shown, PAGE)


def test_the_examples_show_the_effects_the_page_names(blocks):
    printed = "".join(p for _, _, p in blocks)
    # the tensor core's truncation: NumPy and the exact sum round up, the GPU does not
    assert "NumPy float32    1.001\nGPU (tcsim.blas) 1.0\n" in printed
    assert "allow_tf32=False 1.0007324\nallow_tf32=True  1.0009766" in printed
    counts = printed.split("split counts: ")[1].split("\n")[0].split(" and ")
    assert counts[0] != counts[1]
    assert "of 960 outputs computed from the same inputs, 0 " not in printed
    fp8 = [float(line.split("error ")[1].split(",")[0]) for line in printed.splitlines()
           if line.startswith("use_fast_accum=")]
    assert len(fp8) == 2 and fp8[1] > 10 * fp8[0]


def test_the_held_out_rate_is_filled_in_or_marked():
    text = PAGE.read_text()
    assert "HELD-OUT-RATE" in text or "held-out" in text.lower()


def test_the_figures_exist_and_the_script_answers_help():
    import subprocess
    import sys

    for name in ("blas-error-vs-k.png", "blas-split-k-bits.png"):
        assert (ROOT / "docs" / "figures" / name).stat().st_size > 10_000
        assert f"figures/{name}" in PAGE.read_text()
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "blas_figures.py"), "--help"],
                         capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0 and "usage" in run.stdout
