"""Which of the engine's compiled modules run: compiled (Cython, built by ``pip install``), or the same source interpreted.

The board (``engine/board/board.py``) and the root probe's search (``engine/tactics/``) are written in Cython's
pure-Python mode: ``pip install .`` compiles them, and Python then imports the compiled modules first. Where
compilation failed (no C compiler) or the compiled files do not load, the engine plays with the interpreted source,
over a hundred times slower, and ``describe()`` says so (the engine's ``info string`` at ``isready``).
``ARBOR_CORE=interpreted`` in the environment forces the interpreted modules: the tests use it to check that both
give the same results, and that the engine plays with them.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from types import ModuleType

# The compiled modules, by the name the core gives them, in the order they import each other.
MODULES = {
    "board": "engine.board.board",
    "budget": "engine.tactics.budget",
    "alphabeta": "engine.tactics.alphabeta",
    "mates": "engine.tactics.mates",
}
ENVIRONMENT = "ARBOR_CORE"   # "interpreted" forces the interpreted core; anything else: compiled if it loads
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # the folder that holds engine/


@dataclass(frozen=True)
class Core:
    """The compiled modules, and what they are."""

    board: ModuleType
    budget: ModuleType
    alphabeta: ModuleType
    mates: ModuleType
    compiled: bool
    note: str   # why it is interpreted ("" when compiled)


def load(kind: str = "auto") -> Core:
    """The compiled core if ``kind`` is not "interpreted" and it loads, else the interpreted one."""
    if kind == "interpreted":
        return _interpreted(f"{ENVIRONMENT}=interpreted")
    try:
        modules = [importlib.import_module(name) for name in MODULES.values()]
    except ImportError as error:   # (a compiled module built for another Python, say)
        return _interpreted(f"the compiled core did not load: {error}")
    if all(module.COMPILED for module in modules):
        return Core(*modules, compiled=True, note="")
    if not any(module.COMPILED for module in modules):
        return Core(*modules, compiled=False, note="not compiled at install: no C compiler, or no Cython")
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
            path = os.path.join(ROOT, *name.split(".")) + ".py"
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
            loaded.append(module)
    finally:
        for name in names:
            sys.modules.pop(name, None)
        sys.modules.update(saved)
    return Core(*loaded, compiled=False, note=note)


CORE = load(os.environ.get(ENVIRONMENT, "auto"))


def prepare(core: Core = CORE) -> None:
    """Fill the core's tables now (a tenth of a second compiled, holding the interpreter's lock throughout), so that
    no search, which must answer 'stop' within milliseconds, pays for it."""
    core.board.init_tables()


def describe(core: Core = CORE) -> str:
    """One line for the engine's ``info string``."""
    if core.compiled:
        return "tactics core compiled"
    return f"tactics core interpreted ({core.note}): the root probe searches over a hundred times fewer positions"
