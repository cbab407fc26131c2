"""The house's layout, read from the source: the engine never imports its tools, the tools live in their own package,
and no import circle is left in ``engine/`` or ``nets/``. Imports inside functions count: they are still edges a
reader has to follow."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "nets")
TOOLS = "engine.tools"
#: The command line dispatches to the tools; it is the one engine module allowed to import them.
COMMAND_LINE = "engine.__main__"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[module_name(path)] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules ``name`` imports, anywhere in the file, relative imports resolved."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            # "from package import module" names a module; "from module import name" names the module
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports(name, path, known) for name, path in found.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
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
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_reader_sees_relative_and_function_level_imports():
    edges = graph()
    assert "engine.search.search" in edges["engine.uci.protocol"]       # from ..search.search import Search
    assert "engine.evaluators.network" in edges["engine.uci.loading"]   # inside a function
    assert "engine.tools.match" in edges["engine.tools.puzzles"]        # from .match import ...
    assert "engine.evaluators.lc0_planes" in edges["nets.training.data"]  # from engine.evaluators import lc0_planes
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circle_in_engine_or_nets():
    assert cycles(graph()) == []


def test_the_engine_never_imports_a_tool():
    edges = graph()
    engine = [name for name in edges if name.startswith("engine") and not name.startswith(TOOLS)]
    offenders = {name: sorted(t for t in edges[name] if t.startswith(TOOLS))
                 for name in engine if name != COMMAND_LINE}
    assert {name: found for name, found in offenders.items() if found} == {}


def test_no_tool_at_the_engine_s_top_level():
    """A tool drives UCI engines from outside, with python-chess's UCI client: only ``engine/tools`` may use it."""
    for path in sorted((ROOT / "engine").rglob("*.py")):
        if TOOLS.replace(".", "/") in path.relative_to(ROOT).as_posix():
            continue
        tree = ast.parse(path.read_text(), str(path))
        used = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        used |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        assert "chess.engine" not in used, f"{path.relative_to(ROOT)} drives engines: it belongs in engine/tools/"
    for name in ("match", "puzzles", "calibrate", "elo"):
        assert not (ROOT / "engine" / f"{name}.py").exists()
        assert (ROOT / "engine" / "tools" / f"{name}.py").exists()


#: engine/'s folders from the bottom floor up: each imports only the floors below it (and the top-level modules that
#: every floor shares: the options and the compiled-core loader).
FLOORS = ("engine.board", "engine.evaluators", "engine.tactics", "engine.search", "engine.uci")
SHARED = ("engine.params", "engine.compiled", "engine.cython_shim", "engine")


def floor(name: str) -> int:
    for i, prefix in enumerate(FLOORS):
        if name == prefix or name.startswith(prefix + "."):
            return i
    return -1


def test_each_folder_imports_only_the_folders_below_it():
    edges = graph()
    upward = {name: sorted(t for t in targets if floor(t) > floor(name) >= 0 or (floor(name) < 0 and name in SHARED
                                                                                 and floor(t) >= 0))
              for name, targets in edges.items() if name.startswith("engine") and not name.startswith(TOOLS)
              and name != COMMAND_LINE}
    assert {name: found for name, found in upward.items() if found} == {}
