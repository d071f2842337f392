"""The shape of the package, checked on its source: no import cycle, and the layering rules.

Every import counts, the function-local ones included (they are how a cycle hides). The rules:

* the data path reads one way: face → dispatch → core → chain → provider → engine; no
  provider knows a face, the core or the answerer, and the core knows no face;
* the short-lived path (client, daemon lifecycle, hooks, routing, config tables) imports
  no core, no pydantic model and no server (its import time is measured in test_imports.py);
* a heavy dependency is imported where it is used: scikit-learn in learn/, FastAPI and uvicorn
  in the HTTP face, the mcp SDK in the MCP faces and `smoke`;
* the console helpers are imported by the console scripts only.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "src" / "system1_gateway"
PKG = "system1_gateway"


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in ROOT.rglob("*.py")}


def _imports(path: Path, tree: ast.AST | None = None) -> set[str]:
    """Every module this file imports (ours resolved to the deepest module; others by top name)."""
    name = _name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(tree if tree is not None else ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            candidates = [target] + [f"{target}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        else:
            continue
        for candidate in candidates:
            if not candidate.startswith(PKG):
                found.add(candidate.split(".")[0])
                continue
            while candidate and candidate not in MODULES:
                candidate = candidate.rsplit(".", 1)[0] if "." in candidate else ""
            if candidate and candidate != name:
                found.add(candidate)
    return found


GRAPH = {name: _imports(path) for name, path in MODULES.items()}


def _at_import(path: Path) -> set[str]:
    """What importing the module runs: its top-level imports (in `try` blocks too), not those
    inside functions nor under `if TYPE_CHECKING:`."""
    lines: set[int] = set()

    def collect(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                lines.add(node.lineno)
            elif isinstance(node, ast.Try):
                collect(node.body)
                for handler in node.handlers:
                    collect(handler.body)
            elif isinstance(node, ast.If) and not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                collect(node.body)
                collect(node.orelse)

    tree = ast.parse(path.read_text(encoding="utf-8"))
    collect(tree.body)
    stripped = ast.Module(body=[n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                                and n.lineno in lines], type_ignores=[])
    return _imports_of(stripped, path)


def _imports_of(tree: ast.AST, path: Path) -> set[str]:
    return _imports(path, tree)


def _ours(name: str) -> set[str]:
    return {m for m in GRAPH[name] if m.startswith(PKG)}


def _cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in _ours(v):
            if w not in index:
                visit(w)
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
                out.append(sorted(component))

    for v in GRAPH:
        if v not in index:
            visit(v)
    return out


def test_the_graph_is_read_from_the_real_source():
    """A check that cannot pass vacuously: known edges, function-local ones included."""
    assert len(MODULES) > 80
    assert f"{PKG}.core.chain" in _ours(f"{PKG}.core.gateway") and f"{PKG}.daemon.client" in _ours(f"{PKG}.hooks.common")
    assert f"{PKG}.core.gateway" in _ours(f"{PKG}.daemon.dispatch")  # imported inside a function
    assert "sklearn" in GRAPH[f"{PKG}.learn.fit"]


def test_no_import_cycle_among_the_package_modules():
    assert _cycles() == []


def _reach(name: str) -> set[str]:
    """Every module of ours `name` imports, directly or not."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        for m in _ours(todo.pop()):
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return seen


HTTP = {m for m in MODULES if m == f"{PKG}.http" or m.startswith(f"{PKG}.http.")}
FACES = {f"{PKG}.cli", f"{PKG}.mcp_server", f"{PKG}.smoke", f"{PKG}.jev_ask", f"{PKG}.daemon.dispatch",
         f"{PKG}.console", *HTTP}
HEAVY = {"sklearn": (f"{PKG}.learn",), "fastapi": (f"{PKG}.http",),
         "uvicorn": (f"{PKG}.http",), "mcp": (f"{PKG}.mcp_server", f"{PKG}.http", f"{PKG}.smoke")}


def _package(name: str) -> list[str]:
    """A package and every module in it."""
    return sorted(m for m in MODULES if m == f"{PKG}.{name}" or m.startswith(f"{PKG}.{name}."))


# The short-lived path: whole packages (daemon, hooks, routing, the light part of config).
# config.settings (pydantic) and config.edit (it writes
# through settings) are the config package's two heavy modules.
SHORT_LIVED = [*_package("daemon"),
               *[m for m in _package("config") if m not in (f"{PKG}.config.settings", f"{PKG}.config.edit")],
               *_package("routing"), *_package("hooks")]


@pytest.mark.parametrize("name", sorted(m for m in MODULES if m.startswith(f"{PKG}.providers")))
def test_no_provider_knows_a_face_the_core_or_the_dispatch(name):
    banned = FACES | {f"{PKG}.core.gateway", f"{PKG}.core.chain", *_package("hooks")}
    assert not (_reach(name) & banned), sorted(_reach(name) & banned)


def test_the_core_knows_no_face():
    for name in _package("core"):
        assert not (_reach(name) & FACES), (name, sorted(_reach(name) & FACES))


AT_IMPORT = {name: _at_import(path) for name, path in MODULES.items()}


@pytest.mark.parametrize("name", SHORT_LIVED)
def test_the_short_lived_path_imports_no_core_model_or_server(name):
    """What importing a short-lived module loads (transitively): never the core, the pydantic
    models, a server or a heavy library. (Their in-process fallbacks import more, inside the
    functions that need it; test_imports.py measures the import time.)"""
    banned = {*_package("core"), f"{PKG}.config.settings", f"{PKG}.model.requests", f"{PKG}.model.results", *HTTP,
              f"{PKG}.mcp_server", f"{PKG}.cli", f"{PKG}.providers"}
    seen, todo = {name}, [name]
    while todo:
        for m in AT_IMPORT[todo.pop()]:
            if m.startswith(PKG) and m not in seen:
                seen.add(m)
                todo.append(m)
    assert not (seen & banned), sorted(seen & banned)
    assert not ({m for n in seen for m in AT_IMPORT[n]} & {"pydantic", "fastapi", "numpy", "mcp", "typing_extensions"})


@pytest.mark.parametrize("dependency, home", sorted(HEAVY.items(), key=lambda kv: kv[0]))
def test_a_heavy_dependency_is_imported_where_it_is_used(dependency, home):
    users = {m for m, deps in GRAPH.items() if dependency in deps}
    assert users and all(any(u == h or u.startswith(h + ".") for h in home) for u in users), sorted(users)


def test_only_the_console_scripts_use_the_console_helpers():
    users = {m for m, deps in GRAPH.items() if f"{PKG}.console" in deps}
    assert users <= {f"{PKG}.cli", f"{PKG}.daemon.lifecycle", f"{PKG}.jev_ask"}, sorted(users)
