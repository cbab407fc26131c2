"""When a search on the clock stops before its hard limit: a single legal move, a settled choice at the planned
time, or smart pruning (the best move can no longer be overtaken in the time left)."""

from __future__ import annotations

from .timeman import Budget
from .tree import Node

SMART_PRUNING_WARMUP = 0.05  # seconds of simulating before the rate of playouts is trusted


def clock_says_stop(budget: Budget, root: Node, elapsed: float, simulating: float, playouts: int,
                    smart_pruning: float) -> bool:
    """Should a search with ``budget`` stop after ``elapsed`` seconds, ``simulating`` of them spent on its
    ``playouts`` (the rest on the root's tactical probe)? ``smart_pruning`` is the option's factor (0: off)."""
    if budget.hard is None:
        return False
    if elapsed >= budget.hard:
        return True
    if budget.timed and root.edge_count() == 1 and lone_move_seen(root):
        return True
    if elapsed >= budget.target:
        return settled(root)
    if budget.prune and smart_pruning > 0 and simulating > SMART_PRUNING_WARMUP:
        return cannot_change(root, (budget.target - elapsed) * playouts / simulating, smart_pruning)
    return False


def lone_move_seen(root: Node) -> bool:
    """A single legal move is played at once, but only after one visit has valued it: a batched search
    checks its limits before its first gather, and an unvisited move has no score to report (a
    tablebase win would show as 0.00)."""
    return bool(root.children) and (root.children[0].n > 0 or root.children[0].proven is not None)


def settled(root: Node) -> bool:
    """At the planned time, keep going (up to the hard limit) only if the most-visited move
    is not also the best by Q, a sign that the choice is still changing."""
    ranked = [c for c in root.ranked_children() if c.n]
    if len(ranked) < 2 or ranked[0].proven is not None:
        return True
    return ranked[0].q >= max(c.q for c in ranked[1:])


def cannot_change(root: Node, playouts_left: float, smart_pruning: float) -> bool:
    """Is the lead of the most-visited move more than the playouts left (shrunk by the pruning factor)?"""
    visits = sorted(root.children_visits(), reverse=True)
    if len(visits) < 2:
        return root.edge_count() == 1
    return visits[0] - visits[1] > playouts_left / smart_pruning
