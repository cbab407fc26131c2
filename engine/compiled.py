"""Which of the engine's compiled modules run: compiled (Cython, built by ``pip install``), or the same source interpreted.

The board (``engine/board/board.py``), the tree (``engine/search/nodes.py``, ``tree.py``), the network's input
(``engine/evaluators/lc0_input.py``) and the root probe's search (``engine/tactics/``) are written in Cython's
pure-Python mode: ``pip install .`` compiles them, and Python then imports the compiled modules first. Where
compilation failed (no C compiler) or the compiled files do not load, the engine plays with the interpreted source,
its own work over a hundred times slower (with the default net about a twelfth of the nodes a second), and
``describe()`` says so (the engine's ``info string`` at ``isready``).
``ARBOR_CORE=interpreted`` in the environment makes every import of them take the source (``interpret``, called
by ``engine/__init__.py``): the tests use it to check that both play the same, node for node.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Optional

# The compiled modules, by the name the core gives them, in the order they import each other.
MODULES = {
    "board": "engine.board.board",
    "budget": "engine.tactics.budget",
    "alphabeta": "engine.tactics.alphabeta",
    "mates": "engine.tactics.mates",
    "lc0_input": "engine.evaluators.lc0_input",
    "nodes": "engine.search.nodes",
    "tree": "engine.search.tree",
}
ENVIRONMENT = "ARBOR_CORE"   # "interpreted": every import takes the source; anything else: compiled if it loads
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # the folder that holds engine/


@dataclass(frozen=True)
class Core:
    """The compiled modules, and what they are."""

    board: ModuleType
    budget: ModuleType
    alphabeta: ModuleType
    mates: ModuleType
    lc0_input: ModuleType
    nodes: ModuleType
    tree: ModuleType
    compiled: bool
    note: str   # why it is interpreted ("" when compiled)


def _source(name: str) -> str:
    return os.path.join(ROOT, *name.split(".")) + ".py"


class _SourceFirst(importlib.abc.MetaPathFinder):
    """Finds the core's modules as their ``.py`` sources, even where compiled ones stand beside them."""

    def find_spec(self, fullname: str, path: Any, target: Optional[ModuleType] = None) -> Any:
        if fullname in MODULES.values():
            return importlib.util.spec_from_file_location(fullname, _source(fullname))
        return None


def interpret() -> None:
    """From now on, import the core's modules from their sources (before any of them is imported)."""
    if not any(isinstance(finder, _SourceFirst) for finder in sys.meta_path):
        sys.meta_path.insert(0, _SourceFirst())


def load(kind: str = "auto") -> Core:
    """The compiled core if ``kind`` is not "interpreted" and it loads, else the interpreted one (imported apart
    from the engine's own modules, for tests that compare the two in one process)."""
    if kind == "interpreted":
        return _interpreted(f"{ENVIRONMENT}=interpreted")
    try:
        modules = [importlib.import_module(name) for name in MODULES.values()]
    except ImportError as error:   # (a compiled module built for another Python, say)
        return _interpreted(f"the compiled core did not load: {error}")
    if all(module.COMPILED for module in modules):
        return Core(*modules, compiled=True, note="")
    if not any(module.COMPILED for module in modules):
        note = (f"{ENVIRONMENT}=interpreted" if os.environ.get(ENVIRONMENT) == "interpreted"
                else "not compiled at install: no C compiler, or no Cython")
        return Core(*modules, compiled=False, note=note)
    return _interpreted("only part of it was compiled")   # the interpreted modules need each other's Python side


def _interpreted(note: str) -> Core:
    """Load the modules from their ``.py`` sources even where compiled ones stand beside them, the interpreted
    modules importing each other (each is put in ``sys.modules`` while the next loads; the compiled ones, if any
    were imported, are put back after)."""
    names = list(MODULES.values())
    saved = {name: sys.modules.pop(name) for name in names if name in sys.modules}
    loaded = []
    try:
        for name in names:
            spec = importlib.util.spec_from_file_location(name, _source(name))
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
            loaded.append(module)
    finally:
        for name in names:
            sys.modules.pop(name, None)
        sys.modules.update(saved)
    return Core(*loaded, compiled=False, note=note)


def __getattr__(name: str) -> Any:
    """``CORE``, the core the engine runs on, loaded at first use."""
    if name == "CORE":
        return _core()
    raise AttributeError(name)


def _core() -> Core:
    core = globals().get("CORE")
    if core is None:
        core = globals()["CORE"] = load(os.environ.get(ENVIRONMENT, "auto"))
    return core


def prepare(core: Optional[Core] = None) -> None:
    """Fill the core's tables now (a tenth of a second compiled, holding the interpreter's lock throughout), so that
    no search, which must answer 'stop' within milliseconds, pays for it."""
    (core or _core()).board.init_tables()


def describe(core: Optional[Core] = None) -> str:
    """One line for the engine's ``info string``."""
    core = core or _core()
    if core.compiled:
        return "core compiled (board, tree, tactics)"
    return (f"core interpreted ({core.note}): the tree searches about a twelfth of the nodes a second, "
            "the root probe over a hundred times fewer positions")
