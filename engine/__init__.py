"""Arbor: a UCI chess engine with a tree-reusing PUCT Monte Carlo Tree Search."""

import os

__version__ = "0.1.0"
__author__ = "the Arbor developers"

if os.environ.get("ARBOR_CORE") == "interpreted":   # engine/compiled.py: every compiled module from its source
    from .compiled import interpret
    interpret()
