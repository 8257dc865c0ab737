"""Documentation blocks that tcsim draws must be what tcsim prints today."""

import re
from pathlib import Path

from doc_blocks import check_blocks, run_blocks

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
    assert len(blocks) == 3  # the third, tcsim.blas's, runs with every docs block
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


def test_layout_section_of_bank_conflicts_doc_prints_what_it_shows():
    page = DOCS / "bank-conflicts.md"
    blocks = run_blocks(page)
    check_blocks(blocks, page)
    shown = [text for _, text, _ in blocks if text is not None]
    assert len(shown) >= 2 and "(4,2):(1,4)" in shown[0]


def _generated_table(page: str, marker: str, script: str) -> tuple[str, str]:
    """(the table a page shows between ``<!-- marker LOG -->`` and ``<!-- /marker -->``, what
    ``scripts/<script>``'s ``tables(LOG)`` prints from that evidence log today)."""
    import runpy

    text = (DOCS / page).read_text()
    source, shown = re.search(rf"<!-- {marker} (\S+) -->\n(.*?)<!-- /{marker} -->",
                              text, re.S).groups()
    tables = runpy.run_path(str(DOCS.parent / "scripts" / script))["tables"]
    return shown, tables(str(DOCS.parent / source))


def test_kernel_counter_tables_are_current():
    shown, today = _generated_table("kernels.md", "kernels-table", "kernels_table.py")
    assert shown == today
    assert shown.count(" / ") > 100


def test_smem_evidence_table_is_current():
    shown, today = _generated_table("bank-conflicts.md", "smem-table", "smem_table.py")
    assert shown == today
    assert shown.count("| ") > 20


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


# ---- generated fragment docs ---------------------------------------------------------------


def test_fragment_docs_are_what_the_tables_draw_today():
    from tcsim.views.fragment_docs import render

    page, figures = render()
    assert (DOCS / "fragments.md").read_text() == page, "run `tcsim docs` to regenerate"
    other = {"precision.svg"}  # drawn by `tcsim precision --plot` (tests/test_precision.py)
    committed = {p.name for p in (DOCS / "figures").glob("*.svg")} - other
    assert committed == set(figures), "stale or missing diagrams: run `tcsim docs`"
    for name, svg in figures.items():
        assert (DOCS / "figures" / name).read_text() == svg, name


def test_a_diagram_labels_every_cell_as_the_map_says(rng):
    import xml.dom.minidom

    import tcsim
    from tcsim.views.fragments import CELL_H, CELL_W, MARGIN, fragment_svg

    frag = tcsim.fragment("m16n8k16.row.col.f32.bf16.bf16.f32", "b")
    dom = xml.dom.minidom.parseString(fragment_svg(frag))
    assert len(dom.getElementsByTagName("rect")) == frag.rows * frag.cols
    texts = {(int(t.getAttribute("x")), int(t.getAttribute("y"))): t.firstChild.data
             for t in dom.getElementsByTagName("text")}
    for _ in range(20):
        r, c = int(rng.integers(frag.rows)), int(rng.integers(frag.cols))
        x, y = MARGIN + c * CELL_W + CELL_W // 2, MARGIN + r * CELL_H
        lane, reg, half = frag.locate(r, c)
        assert texts[(x, y + 12)] == f"T{lane}"
        assert texts[(x, y + 24)] == f"r{reg}.{('lo', 'hi')[half]}"


# ---- every command and code block --------------------------------------------------------------

PAGES = sorted(DOCS.glob("*.md")) + [DOCS.parent / "README.md"]
# pages whose blocks build on each other, run in order by their own test
IN_ORDER = {"own-kernel.md", "blas.md"}  # tests/test_own_kernel_doc.py, tests/test_blas_doc.py


def test_every_python_block_in_the_docs_runs(capsys, monkeypatch):
    monkeypatch.chdir(DOCS.parent)
    count = 0
    for page in (p for p in PAGES if p.name not in IN_ORDER):
        for block in re.findall(r"```python\n(.*?)```", page.read_text(), re.S):
            exec(compile(block, page.name, "exec"), {})
            count += 1
    assert count >= 7


def test_every_tcsim_command_in_the_docs_runs(tmp_path, capsys, monkeypatch):
    from tcsim.cli import main

    monkeypatch.chdir(DOCS.parent)  # commands name files such as examples/own_kernel.py

    commands = set()
    for page in PAGES:
        text = page.read_text()
        commands |= {" ".join(c.split()) for c in re.findall(r"`(tcsim [^`]+)`", text)}
        for block in re.findall(r"```bash\n(.*?)```", text, re.S):
            commands |= {line.split("#")[0].split("&&")[-1].strip()
                         for line in block.splitlines() if "tcsim " in line.split("#")[0]}
    commands = {c for c in commands if c.startswith("tcsim ")}
    assert {"tcsim demo", "tcsim trace kernel2 4096 4096 4096"} <= commands
    for command in sorted(commands):
        argv = command.split()[1:]
        if argv[0] == "docs":
            argv = ["docs", str(tmp_path)]
        try:
            code = main(argv)
        except SystemExit as done:  # --help
            code = done.code
        assert code == (2 if argv[0] == "verify" else 0), command


def test_every_script_the_docs_name_exists_and_answers_help():
    import subprocess
    import sys

    scripts = set()
    for page in PAGES:
        for block in re.findall(r"```bash\n(.*?)```", page.read_text(), re.S):
            scripts |= set(re.findall(r"\b((?:scripts|benchmarks)/\w+\.(?:py|sh))", block))
    assert len(scripts) >= 6
    for script in sorted(scripts):
        path = DOCS.parent / script
        assert path.exists(), script
        if script.endswith(".py"):
            run = subprocess.run([sys.executable, str(path), "--help"], capture_output=True,
                                 text=True, cwd=DOCS.parent)
            assert run.returncode == 0 and "usage" in run.stdout, (script, run.stderr[-500:])


def test_the_index_links_every_page():
    index = (DOCS / "index.md").read_text()
    for page in DOCS.glob("*.md"):
        if page.name != "index.md":
            assert f"]({page.name})" in index, page.name


# ---- notebook views ------------------------------------------------------------------------------


def test_notebook_views():
    import tcsim
    from tcsim.views.fragments import lane_color

    html = tcsim.fragment("m16n8k8.row.col.f32.f16.f16.f32", "c")._repr_html_()
    assert html.count("<td") == 16 * 8 and f"background:{lane_color(31)}" in html
    conflicting = access("ld.shared.b32", [128 * lane for lane in range(32)])._repr_html_()
    assert "#e34a33" in conflicting
    assert "#e34a33" not in access("ld.shared.b32", [4 * x for x in range(32)])._repr_html_()
    trace = tcsim.trace("kernel1", 256, 128, 64)._repr_html_()
    assert "A_smem_ldmatrix" in trace and "background:#fcc" in trace


def test_the_gpu_tables_are_the_logged_runs():
    text = (DOCS / "benchmarks.md").read_text()
    tables = re.findall(r"<!-- bench-gpu (\S+) -->\n```text\n(.*?)\n```", text, re.S)
    for source, shown in tables:
        assert shown == (DOCS.parent / source).read_text().rstrip("\n")
    assert [shown.count("bit-exact") for _, shown in tables] == [60, 100, 30]


def _tool_cell(cell: str, verdict: dict) -> bool:
    """A sanitizer cell of docs/checks.md against its logged verdict: a count of errors,
    "hang" (killed at the time limit) or "fault" (no error of its own, the run failed)."""
    if cell == "hang":
        return verdict["first"].startswith("timed out")
    if cell == "fault":
        return verdict["errors"] == 0 and verdict["exit"] != 0
    return int(re.match(r"\**(\d+)", cell).group(1)) == verdict["errors"]


def _gpu_cell(cell: str, effect: str | None) -> bool:
    if not cell:
        return effect is None
    if cell == "hang":
        return effect.startswith("timed out")
    if cell == "illegal address":
        return "IllegalAddress" in effect
    percent = float(re.match(r"([\d.]+)% of D wrong", cell).group(1))
    return effect.startswith("wrong ") and round(100 * float(effect.split()[1]), 1) == percent


def test_hopper_checks_tables_are_the_logged_runs():
    import json

    text = (DOCS / "checks.md").read_text()
    tables = re.findall(r"<!-- hopper-checks (\S+) -->\n(.*?)<!-- /hopper-checks -->", text,
                        re.S)
    sizes = []
    for source, table in tables:
        log = {r["kernel"]: r for r in map(json.loads, (DOCS.parent / source).open())}
        rows = [[c.strip() for c in line.strip("|").split("|")]
                for line in table.splitlines()[2:]]
        checked = set()
        for name_cell, *tools, gpu, simulator in rows:
            names = re.findall(r"`([\w-]+)`", name_cell) or re.findall(r"kernel\d+", name_cell)
            for name in names:
                entry = log[name]
                verdicts = [entry["sanitizer"][t] for t in ("memcheck", "racecheck",
                                                             "initcheck", "synccheck")]
                assert all(_tool_cell(c, v) for c, v in zip(tools, verdicts)), name
                assert _gpu_cell(gpu, entry["on_gpu"]), (name, gpu, entry["on_gpu"])
                found = entry["simulator"].split(":")[0]
                assert simulator.strip("*") == (found or "no error"), name
                checked.add(name)
        assert checked == set(log), source
        sizes.append(len(checked))
    assert sorted(sizes) == [4, 6]
