"""Every notebook display hook lives in tcsim.views and is hung on its model from there: no model
class defines one, and what each shows is the model's own data."""

import ast
import re
from pathlib import Path

import pytest

import tcsim
from tcsim.isa.fragments import FragmentMap
from tcsim.isa.wgmma.fragments import WarpgroupFragment
from tcsim.memory.access import Access
from tcsim.perf.model import Explanation
from tcsim.trace import Trace

ROOT = Path(tcsim.__file__).resolve().parent


def test_no_model_defines_a_display_hook():
    found = []
    for path in ROOT.rglob("*.py"):
        if "views" in path.relative_to(ROOT).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name == "_repr_html_":
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, f"display hooks outside tcsim/views: {found}"


@pytest.mark.parametrize("model", [FragmentMap, WarpgroupFragment, Access, Trace, Explanation])
def test_the_views_hang_each_hook(model):
    hook = model.__dict__.get("_repr_html_")
    assert hook is not None and hook.__module__.startswith("tcsim.views."), model


def test_a_trace_shows_each_site_and_shades_its_conflicts():
    trace = tcsim.trace("kernel1", 256, 128, 64)
    html = trace._repr_html_()
    rows = re.findall(r"<tr><td>(.*?)</td><td><code>(.*?)</code></td>((?:<td.*?</td>)+)</tr>",
                      html)
    assert [(name, instruction) for name, instruction, _ in rows] == \
        [(s.name, s.instruction) for s in trace.sites.values()]
    for (_, _, cells), site in zip(rows, trace.sites.values()):
        numbers = [int(x.replace(",", "")) for x in re.findall(r">([\d,]+)</td>", cells)]
        assert numbers == [site.executions, site.wavefronts, site.conflicts, site.sectors,
                           site.mma]
        assert ("background:#fcc" in cells) == (site.conflicts > 0)
    assert any(s.conflicts for s in trace.sites.values())  # kernel1's A tile conflicts


def test_an_explanation_shows_its_limiter_and_every_unit():
    e = tcsim.trace("kernel2", 256, 256, 256).explain()
    html = e._repr_html_()
    assert f"limited by <b>{e.limiter}</b>" in html
    units = re.findall(r"<tr><td>(\w+)</td><td>([\d.]+) ms</td>", html)
    assert [u for u, _ in units] == [*e.units, "latency"]
    assert float(units[0][1]) == pytest.approx(list(e.units.values())[0] * 1e3, abs=5e-4)


def test_a_wgmma_fragment_shows_its_128_lanes_as_text():
    frag = tcsim.wgmma_fragment("m64n8k16.f32.f16.f16", "c")
    html = frag._repr_html_()
    assert html.startswith("<pre>") and html.endswith("</pre>")
    assert "T127" in html and "<td" not in html  # all 128 lanes, not a 32-colour table
