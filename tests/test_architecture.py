"""The import contract: the layering of the package, no import cycle, no module too long.

Every ``import`` of a package module counts, at the top of a module or inside a function (a
lazy import still ties two modules together).  Layers, lowest first: a module may import
from its own layer's other packages only where listed, and from every layer below.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "hja_bayes"

#: Top-level modules and packages by layer, lowest first (see ARCHITECTURE and the README's
#: layout): foundations; the data; readers; the likelihood seam and the canonical map;
#: statistics that read fits without fitting; the MAP solver; what builds on fits; the
#: confidence ranker (it may read a fitted panel); reports; the command line and the facade
#: (``methods``: the data and result classes' methods that delegate upwards).
LAYERS = [
    {"errors", "checks", "version", "cache", "programs", "jitting", "categories", "graphs",
     "threads", "answer_text"},
    {"clusters", "summary", "comparisons", "sources", "position_locked"},
    {"verdicts", "prompt_columns", "row_keys", "names", "readers", "features", "datasets",
     "scan"},
    {"likelihood", "decomposition"},
    {"btl", "simulate", "inference", "diagnostics"},
    {"hja"},
    {"bayes", "design", "persistence", "fit_folder", "by_category"},
    {"confidence"},
    {"reporting"},
    {"cli", "methods", "__init__", "__main__"},
]
LONGEST = 450


def modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports(name: str, path: Path, known) -> set[str]:
    """The package modules ``name`` imports (as far as they resolve to modules)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            if not base.startswith("hja_bayes"):
                continue
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in known else base)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("hja_bayes"))
    return {m for m in found if m in known and m != name}


def layer(module: str) -> int:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else "__init__"
    for index, members in enumerate(LAYERS):
        if top in members:
            return index
    raise AssertionError(f"{module} is in no layer: add it to LAYERS")


@pytest.fixture(scope="module")
def graph():
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def test_no_module_imports_from_a_higher_layer(graph):
    upward = sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                    if layer(b) > layer(a))
    assert upward == []


def test_no_import_cycle(graph):
    """Strongly connected components of the module graph (Tarjan), package __init__ files
    left out: they re-export their modules' names, which is not a dependency of theirs."""
    nodes = {m for m, p in modules().items() if p.name != "__init__.py"}
    edges = {m: {t for t in graph[m] if t in nodes} for m in nodes}
    index, low, stack, on, cycles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
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
                cycles.append(sorted(component))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    assert cycles == []


def test_no_module_is_too_long():
    long = {name: n for name, path in modules().items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > LONGEST}
    assert long == {}


def test_every_public_name_resolves():
    """The lazily loaded names of the package and of ``hja_bayes.reporting`` (and its modules
    by name) load, so a typo in a table of homes cannot hide until a user asks."""
    import hja_bayes
    import hja_bayes.reporting as reporting

    for module in (hja_bayes, reporting):
        missing = [name for name in module.__all__ if not hasattr(module, name)]
        assert missing == [], module.__name__
    assert reporting.biases.bias_table is hja_bayes.bias_table
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        reporting.nothing


def test_a_submodule_named_like_its_function_does_not_shadow_it():
    """``import hja_bayes.design.plan`` (a doctest run, a reader of the source) binds the
    module on the package; ``hja_bayes.plan`` had then returned the module, not the
    function.  In a fresh process, so no earlier import hides it."""
    import subprocess
    import sys

    code = ("import hja_bayes.design.plan, hja_bayes as hb; "
            "print(callable(hb.plan), callable(hb.next_comparisons))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["True", "True"]


def test_arviz_is_imported_only_through_import_arviz():
    """ArviZ 0.x announces its 1.0 refactor in a FutureWarning on first import: a newcomer's
    first posterior had printed it.  ``bayes.convert.import_arviz`` keeps it quiet, so no
    other module imports ArviZ itself (imports for type checking aside)."""
    direct = set()
    for name, path in modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                       and getattr(node.test, "id", None) == "TYPE_CHECKING"
                       for n in ast.walk(node)}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in typing_only:
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module or ""]
                if any(n.split(".")[0] == "arviz" for n in names):
                    direct.add(name)
    assert direct == {"hja_bayes.bayes.convert"}
