"""Folding exact forcing lines into the root before the tree search (engine/tactics.py finds them).

A mate by checks is proven at once; the short alpha-beta proves lost moves (and mates it sees exactly), and moves
it finds clearly better than the best-prior move get a share of the root's prior, so the tree search looks at
them first. The search decides when the probe runs and for how long (engine/search.py).
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, Sequence

import chess

from . import tactics
from . import edges
from .tree import LOSS, WIN, Node, prove

MATE_BY_CHECKS_MOVES = 6     # deepest mate find_mate looks for (most take milliseconds)
PROBE_GAIN_CP = 80           # a probe move this much better than the top-prior move is a find
PROBE_TIE_CP = 30            # finds this close to the best probe score share the boost
PROBE_PRIOR_SHARE = 0.5      # of the root's prior given to the finds


def probe_root(root: Node, state: chess.Board, game: Any, earlier: Sequence[Hashable], deadline: float,
               stopped: Callable[[], bool]) -> None:
    """Probe the expanded ``root`` (position ``state``; ``earlier``: the repetition keys since the last
    irreversible move) until ``deadline`` (``time.monotonic()``) or ``stopped()``, and fold in what is found:
    proven mates and lost moves, and prior for winning moves."""
    mate = tactics.find_mate(state, MATE_BY_CHECKS_MOVES, deadline, stopped, earlier)
    if mate is not None:
        children = _expand_fully(root)
        mate_id = game.move_ids([mate[0]])[0]
        if mate_id in children:
            _settle(root, children[mate_id], WIN, 2 * mate[1] - 2)
            return
    top = root.move_id(0)
    result = tactics.probe(state, deadline, stopped=stopped, earlier=earlier, reference=game.move_from_id(top))
    if not result.depth:
        return
    children = _expand_fully(root)
    # The root may search fewer moves than are legal (searchmoves, tablebases).
    ids = {m: score for m, score in zip(game.move_ids(list(result.scores)), result.scores.values())
           if m in children}
    exact = set(game.move_ids(list(result.exact)))
    for move_id, score in ids.items():
        if score >= tactics.MATE_BOUND and move_id in exact:
            _settle(root, children[move_id], WIN, tactics.MATE - score - 1)
        elif score <= -tactics.MATE_BOUND:
            _settle(root, children[move_id], LOSS, tactics.MATE + score - 1)
    if root.proven is not None:
        return
    if top not in ids:
        return
    finds = [m for m in exact if m in ids and ids[m] >= ids[top] + PROBE_GAIN_CP]
    if finds:
        best = max(ids[m] for m in finds)
        _boost(root, [m for m in finds if ids[m] >= best - PROBE_TIE_CP])


def _expand_fully(root: Node) -> dict[int, Node]:
    """Give the root a child for every move (the policy then never adds one), by move id."""
    for k in range(len(root.children), root.edge_count()):
        root.add_child(root.move_id(k))
    return {c.move: c for c in root.children}


def _settle(root: Node, child: Node, proven: float, plies: int) -> None:
    if child.proven is None:
        child.proven, child.plies = proven, max(plies, 0)
        prove(root)


def _boost(root: Node, finds: list[int]) -> None:
    """Give PROBE_PRIOR_SHARE of the root's prior to ``finds``, evenly, and re-rank."""
    share = PROBE_PRIOR_SHARE / len(finds)
    prior = {c.move: p * (1 - PROBE_PRIOR_SHARE) + (share if c.move in finds else 0.0)
             for c, p in zip(root.children, root.priors)}   # the root has a child for every move
    root.children = tuple(sorted(root.children, key=lambda c: prior[c.move], reverse=True))
    value, draw = edges.value_and_draw(root.edges)
    root.edges = edges.pack(value, draw, [c.move for c in root.children], [prior[c.move] for c in root.children])
