"""Documentation blocks that tcsim draws must be what tcsim prints today."""

import re
from pathlib import Path

from tcsim.memory import access

DOCS = Path(__file__).resolve().parent.parent / "docs"
HEATMAP = re.compile(r"<!-- tcsim-heatmap (\S+) (.+?) -->\n```text\n(.*?)\n```", re.S)


def test_heatmaps_in_bank_conflicts_doc_are_current():
    text = (DOCS / "bank-conflicts.md").read_text()
    blocks = HEATMAP.findall(text)
    assert len(blocks) >= 3
    for instruction, expression, shown in blocks:
        addresses = eval(expression, {"__builtins__": {"range": range}})
        assert access(instruction, addresses).heatmap() == shown, instruction


def test_readme_python_example_runs(capsys):
    readme = (DOCS.parent / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert len(blocks) == 2
    namespace: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    assert namespace["D"].shape == (512, 256)
    exec(compile(blocks[1], "README.md", "exec"), namespace)
    D, regs = namespace["D"], namespace["regs"]
    assert D.shape == (1000, 16, 8) and regs.shape == (1000, 32, 2)
    assert "T0:r0.lo" in capsys.readouterr().out


def test_layout_example_in_bank_conflicts_doc():
    from tcsim.memory import visualize_layout

    text = (DOCS / "bank-conflicts.md").read_text()
    shown = [line[2:] for line in text.splitlines() if line.startswith("# (")]
    printed = visualize_layout("TensorOpMultiplicand<16,32>", extent=(32, 32), vectorize=8,
                               output_shape=(64, 4)).splitlines()
    assert shown == printed[: len(shown)] and len(shown) == 2


def test_kernel_counter_tables_are_current():
    import runpy

    text = (DOCS / "kernels.md").read_text()
    source, shown = re.search(r"<!-- kernels-table (\S+) -->\n(.*?)<!-- /kernels-table -->",
                              text, re.S).groups()
    tables = runpy.run_path(str(DOCS.parent / "scripts" / "kernels_table.py"))["tables"]
    assert shown == tables(str(DOCS.parent / source))
    assert shown.count(" / ") > 100


def test_kernels_doc_python_example_runs(capsys):
    text = (DOCS / "kernels.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    namespace: dict = {}
    exec(compile(blocks[0], "kernels.md", "exec"), namespace)
    assert namespace["D"].shape == (256, 256)
    assert "A_smem_ldmatrix" in capsys.readouterr().out


def test_checks_doc_example_prints_what_it_shows(capsys):
    text = (DOCS / "checks.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    shown = re.search(r"prints\n\n```text\n(.*?)\n```", text, re.S).group(1)
    exec(compile(code, "checks.md", "exec"), {})
    assert capsys.readouterr().out.strip() == shown
