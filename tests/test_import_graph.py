"""No import circle inside tcsim: the graph of which module imports which, read from the source
(module-level imports and imports inside functions alike, as either can close a circle), has no
cycle. Imports under ``if TYPE_CHECKING:`` never run and are left out. A views module may
import models; no model imports a view, by an import statement or by name (a string that is a
views module's name, as ``importlib.import_module`` takes)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import tcsim

ROOT = Path(tcsim.__file__).resolve().parent


def _modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _package(name: str) -> str:
    return name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]


def imports_of(name: str) -> set[str]:
    """The tcsim modules ``name`` imports, anywhere in its file: ``from X import y`` imports the
    module X.y where there is one, else X (a package's parents are imported on the way to it,
    but they cannot close a circle: a parent is already importing)."""
    out = set()
    tree = ast.parse(MODULES[name].read_text())
    typing_only = {id(n) for block in ast.walk(tree) if _type_checking(block)
                   for statement in block.body for n in ast.walk(statement)}
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package(name).split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.add(sub if sub in MODULES else target)
    return {m for m in out if m in MODULES and m != name}


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def graph() -> dict[str, set[str]]:
    return {name: imports_of(name) for name in MODULES}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_the_graph_sees_both_kinds_of_import():
    edges = graph()
    assert "tcsim.hw.runtime" in edges["tcsim.hw.isa.mma"]  # module level, relative
    assert "tcsim.hw.generate" in edges["tcsim.hw.runtime"]  # inside a function
    assert "tcsim.hw" not in edges["tcsim.hw.runtime"]  # `from . import generate`
    assert "tcsim.kernels" in edges["tcsim.hw.kernels.twin"]  # `from ...kernels import x`
    assert "tcsim.isa.fragments" not in edges["tcsim.views.fragments"]  # under TYPE_CHECKING
    assert "tcsim.isa.fragments" in edges["tcsim.views"]  # a view imports the model it draws
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_tcsim_has_no_import_circle():
    found = cycles(graph())
    assert not found, "import circles: " + "; ".join(" <-> ".join(c) for c in found)


def views_named_in(name: str) -> set[str]:
    """The views modules ``name`` spells out as a string ("tcsim.views.heatmap"): an import by
    name, which no import statement shows. Prose that mentions a view is not a name."""
    return {node.value for node in ast.walk(ast.parse(MODULES[name].read_text()))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and re.fullmatch(r"tcsim\.views(\.\w+)*", node.value)}


# Old names that forward to their new home in a view for one release, looked up by name when
# asked for, and the version that removes them.
FORWARDS = {"tcsim.memory": (0, 4, 0)}


def test_the_graph_sees_imports_by_name():
    assert views_named_in("tcsim.memory") == {"tcsim.views.heatmap"}
    assert not views_named_in("tcsim.memory.access")  # its docstring mentions tcsim.views


# The package itself (which imports tcsim.views so that the views hang the models' display hooks)
# and the command line sit above every room; every other module is a model.
@pytest.mark.parametrize("model", [m for m in MODULES if m not in ("tcsim", "tcsim.cli")
                                   and not m.startswith("tcsim.views")])
def test_models_never_import_views(model):
    views = sorted(m for m in imports_of(model) if m.startswith("tcsim.views"))
    assert not views, f"{model} imports {views}"
    if model not in FORWARDS:
        named = sorted(views_named_in(model))
        assert not named, f"{model} imports {named} by name"


@pytest.mark.parametrize("model", sorted(FORWARDS))
def test_forwards_to_views_go_when_their_release_comes(model):
    version = tuple(int(part) for part in tcsim.__version__.split("."))
    assert version < FORWARDS[model], f"{model}'s deprecated forwards to tcsim.views are due to go"
