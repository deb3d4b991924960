"""No import cycle inside the engine, the server, the check or the window, counting the imports made
inside functions (only those under ``if TYPE_CHECKING:`` are left out: they never run).

import-linter's contracts (pyproject.toml) keep the layers; this walks every module's syntax tree
itself, so a lazy import that closes a loop is caught too. A name imported from a package that
exports it lazily (``app.lazy.lazy_exports``, an ``_EXPORTS`` table) counts as an import of the
module that defines it.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("app.engine", "app.server", "app.check", "app.ui")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted((ROOT / "app").rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node under ``body``, function bodies included, except what ``if TYPE_CHECKING:`` guards."""
    for node in body:
        if isinstance(node, ast.If) and _is_type_checking(node):
            yield from _statements(node.orelse)
            continue
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                yield from _statements([child])
            else:
                for sub in ast.walk(child):
                    if isinstance(sub, ast.stmt):  # statements inside expressions (none today)
                        yield from _statements([sub])


def _lazy_exports(tree: ast.Module) -> dict[str, str]:
    """A package's lazy-export table (name -> module), read from its ``_EXPORTS`` literal."""
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        if any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in targets) and isinstance(
            node.value, ast.Dict
        ):
            return {
                k.value: v.value
                for k, v in zip(node.value.keys, node.value.values, strict=True)
                if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)
            }
    return {}


def import_graph() -> dict[str, set[str]]:
    """module -> the app modules it imports (anywhere in it but under ``if TYPE_CHECKING:``)."""
    modules = _modules()
    with warnings.catch_warnings():  # a module's own odd escapes are not this test's business
        warnings.simplefilter("ignore")
        trees = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in modules.items()}
    exports = {name: _lazy_exports(tree) for name, tree in trees.items()}

    def existing(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, tree in trees.items():
        package = name if modules[name].name == "__init__.py" else name.rpartition(".")[0]
        out: set[str | None] = set()
        for node in _statements(tree.body):
            if isinstance(node, ast.Import):
                out.update(existing(a.name) for a in node.names if a.name.split(".")[0] == "app")
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                if source.split(".")[0] != "app":
                    continue
                for alias in node.names:
                    full = f"{source}.{alias.name}"
                    if full in modules:
                        out.add(full)
                    elif alias.name in exports.get(source, {}):
                        out.add(existing(exports[source][alias.name]))
                    else:
                        out.add(existing(source))
        out.discard(None)
        out.discard(name)
        graph[name] = {m for m in out if m is not None}
    return graph


def cycles(graph: dict[str, set[str]], inside: str) -> list[list[str]]:
    """The import cycles among the modules of package ``inside``: one list per strongly connected
    set of modules, written as a path that goes round it."""
    nodes = {m for m in graph if m == inside or m.startswith(inside + ".")}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def connect(v: str) -> None:  # Tarjan; the packages are small enough for recursion
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v] & nodes):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(_loop(graph, set(component)))

    for v in sorted(nodes):
        if v not in index:
            connect(v)
    return found


def _loop(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A path through ``component`` that comes back to its start (what the failure prints)."""
    start = min(component)
    path, seen = [start], {start}
    while True:
        nxt = sorted(graph[path[-1]] & component)
        back = [m for m in nxt if m == start]
        fresh = [m for m in nxt if m not in seen]
        if fresh:
            path.append(fresh[0])
            seen.add(fresh[0])
        else:
            return path + (back or [m for m in nxt if m in seen][:1])


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle_inside(package):
    found = cycles(import_graph(), package)
    assert not found, "import cycles (lazy imports counted):\n" + "\n".join(" -> ".join(c) for c in found)


def test_the_walk_sees_lazy_imports_and_skips_type_checking_ones():
    tree = {
        "app.x.a": {"app.x.b"},  # a module-level import
        "app.x.b": {"app.x.a"},  # an import inside a function closes the loop
        "app.x.c": set(),
    }
    assert cycles(tree, "app.x") == [["app.x.a", "app.x.b", "app.x.a"]]
    graph = import_graph()
    # llm imports the engine process inside load_model: the walk counts it
    assert "app.engine.engine_process" in graph["app.engine.llm"]
    # render names LoadedModel for type checkers only: the walk leaves it out
    assert "app.engine.llm" not in graph["app.engine.render"]
    # a name exported lazily counts as an import of the module that defines it
    assert (
        _lazy_exports(ast.parse((ROOT / "app/engine/__init__.py").read_text()))["load_model"]
        == "app.engine.llm"
    )
