"""docs/own-kernel.md: its blocks run in order and print what the page shows, its kernel code
is examples/own_kernel.py's, and its reference names every call a schedule may make."""

import re
from pathlib import Path

import pytest
from doc_blocks import check_blocks, run_blocks

import tcsim

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "own-kernel.md"
EXAMPLE = ROOT / "examples" / "own_kernel.py"
# Machine methods the engines call, not schedules (run_roles' engines, the checks' helpers)
ENGINE_SIDE = {"begin_blocks", "end_blocks", "integers", "require_full_warp", "global_elements",
               "check_shared", "check_local", "describe"}



@pytest.fixture(scope="module")
def blocks():
    import os

    here = os.getcwd()
    os.chdir(ROOT)
    try:
        return run_blocks(PAGE)
    finally:
        os.chdir(here)


def test_every_block_prints_what_the_page_shows(blocks):
    shown = [(code, text, printed) for code, text, printed in blocks if text is not None]
    assert len(blocks) >= 15 and len(shown) >= 8
    check_blocks(shown, PAGE)


def test_the_page_proves_its_kernels_bits(blocks):
    printed = "".join(p for _, _, p in blocks)
    assert "bit for bit the chain of products: True" in printed
    assert "bit for bit the chain of wgmma: True" in printed
    assert "same bits: True" in printed


def test_the_kernel_code_shown_is_the_example_file():
    text, example = PAGE.read_text(), EXAMPLE.read_text()
    marked = re.findall(r"<!-- from examples/own_kernel.py -->\n```python\n(.*?)```", text, re.S)
    assert len(marked) >= 7
    for code in marked:
        assert code in example, code[:200]
    # and every definition of the file is on the page
    defined = set(re.findall(r"^(?:def (\w+)|(\w+) = )", example, re.M))
    names = {a or b for a, b in defined}
    assert {"mine", "mine_swizzled", "mine_padded", "mine_hopper", "program"} <= names
    for name in names:
        assert re.search(rf"^(def {name}\(|{name} = )", "".join(marked), re.M), name


def test_the_reference_names_every_call_a_schedule_may_make():
    text = PAGE.read_text()
    table = text[text.index("### `tcsim.Machine`"):]
    public = {name for name in dir(tcsim.Machine) if not name.startswith("_")
              and callable(getattr(tcsim.Machine, name))} - ENGINE_SIDE
    listed = set(re.findall(r"^\| `(\w+)\(", table, re.M)) | \
        set(re.findall(r"`(\w+)(?:\([^`]*\))?`", table))
    assert public - listed == set()


def test_the_names_the_page_imports_are_tcsim_s():
    for name in ("Kernel", "Machine", "SharedTile", "GemmParams", "RowMajor", "ColumnMajor",
                 "Swizzle", "Swizzled", "TensorMap", "MatrixDescriptor", "SwizzleMode",
                 "ProblemSizeError"):
        assert name in tcsim.__all__ and getattr(tcsim, name)
