"""Arbor: a UCI chess engine with a tree-reusing PUCT Monte Carlo Tree Search."""

__version__ = "0.1.0"
__author__ = "the Arbor developers"
