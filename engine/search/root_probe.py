"""Folding exact forcing lines into the root before the tree search (the rest of engine/tactics/ finds them).

A mate by checks is proven at once; the short alpha-beta proves lost moves (and mates it sees exactly), and moves
it finds clearly better than the best-prior move get a share of the root's prior, so the tree search looks at
them first. The moves it finds clearly worse than its best are vetoed: the search does not play them on the
strength of a small tree (engine/search/search.py). The search decides when the probe runs and for how long.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional, Sequence

import chess

from .. import tactics
from ..board import convert
from .tree import LOSS, WIN, Node, Tree

MATE_BY_CHECKS_MOVES = 6     # deepest mate find_mate looks for (most take milliseconds)
# Of the probe's time or positions, the most the mate by checks may take. A position full of checks that do not mate
# can take all of it otherwise (WAC.209: 0.45 s, the alpha-beta then left with nothing); of the mates it finds, those
# of Win At Chess take at most 60 ms of the half second, and 2 of the Encyclopedia's 29 more than a quarter.
MATE_BY_CHECKS_SHARE = 0.25
PROBE_GAIN_CP = 80           # a probe move this much better than the top-prior move is a find
PROBE_TIE_CP = 30            # finds this close to the best probe score share the boost
PROBE_PRIOR_SHARE = 0.5      # of the root's prior given to the finds
# A probe that has not searched this many plies full width has seen too little to veto a move or boost one: at two
# or three plies its material-and-placement search misjudges game positions often enough (a recapture that walks
# into mate, a pawn grab refuted a move later) that its vetoes and finds doubled the engine's mistakes at
# 'go movetime 300' (docs/strength.md). From 4 plies they pay: a gate at 5 cost the puzzle suites, where half a
# second of probe often reaches 4. Proven mates stand at any depth.
TRUST_MIN_DEPTH = 4
# Vetoed moves keep this share of their prior, so the tree spends its visits on the moves it may play.
VETOED_PRIOR_SCALE = 0.1


@dataclass(frozen=True)
class ProbeFinds:
    """What the probe leaves the search besides the tree: the ids of the moves it vetoed, and the lines of the mates
    it proved (a move's id to the ids of the moves after it), which the tree, stopping at once, never searches."""

    vetoed: frozenset[int] = frozenset()
    lines: Mapping[int, Sequence[int]] = field(default_factory=dict)


def probe_root(tree: Tree, state: chess.Board, earlier: Sequence[int], deadline: float,
               stopped: Callable[[], bool], veto_cp: int = 0, max_nodes: Optional[int] = None,
               line_deadline: Optional[float] = None) -> ProbeFinds:
    """Probe ``tree``'s expanded root (position ``state``; ``earlier``: the Zobrist keys of the game's positions since
    its last irreversible move) until ``deadline`` (``time.monotonic()``) or ``stopped()``, or for ``max_nodes``
    positions (at most ``MATE_BY_CHECKS_SHARE`` of either for the mate by checks), and fold in what is found: proven
    mates and lost moves, and prior for winning moves. A proven mate's line is written out until ``line_deadline``
    (default ``deadline``): the search, which then stops at once, can leave it the rest of its time.

    Vetoes the moves it scores at least ``veto_cp`` centipawns below its best move (none when ``veto_cp`` is 0,
    or when the probe did not get deep enough to judge)."""
    mate_nodes = None if max_nodes is None else max(1, int(max_nodes * MATE_BY_CHECKS_SHARE))
    line_deadline = deadline if line_deadline is None else max(deadline, line_deadline)
    now = time.monotonic()
    mate_deadline = min(deadline, now + (deadline - now) * MATE_BY_CHECKS_SHARE)
    root = tree.root_node
    mate = tactics.find_mate(state, MATE_BY_CHECKS_MOVES, mate_deadline, stopped, earlier, max_nodes=mate_nodes)
    if mate is not None:
        children = _expand_fully(tree)
        mate_id = convert.core_move(state, mate[0])
        if mate_id in children and children[mate_id].proven is None:
            _settle(tree, children[mate_id], WIN, 2 * mate[1] - 2)
            return ProbeFinds(lines=_mate_line(state, mate, earlier, line_deadline, stopped, mate_nodes))
    top = root.move_id(0)
    # Only the root's moves (searchmoves and tablebases can leave fewer than are legal), so that the best the probe
    # scores is one the search may play. Each move the probe does not score exactly failed low against an alpha at
    # least ``window`` below that best: a window as wide as the veto's margin leaves no move in between.
    result = tactics.probe(state, deadline, window=max(tactics.PROBE_WINDOW, veto_cp), stopped=stopped,
                           earlier=earlier, reference=tree.chess_move(top),
                           moves=[tree.chess_move(m) for m in root.moves or ()], max_nodes=max_nodes)
    if not result.depth:
        return ProbeFinds()
    children = _expand_fully(tree)
    ids = {convert.core_move(state, move): score for move, score in result.scores.items()}
    exact = {convert.core_move(state, move) for move in result.exact}
    for move_id, score in ids.items():
        if score >= tactics.MATE_BOUND and move_id in exact:
            _settle(tree, children[move_id], WIN, tactics.MATE - score - 1)
        elif score <= -tactics.MATE_BOUND:
            _settle(tree, children[move_id], LOSS, tactics.MATE + score - 1)
    if root.proven is not None:  # a mate either way: the tree stops at once, so the line is written out here
        return ProbeFinds(lines=_proven_line(tree, state, earlier, line_deadline, stopped, mate_nodes))
    if result.depth < TRUST_MIN_DEPTH:
        return ProbeFinds()
    if top in ids:
        finds = [m for m in exact if m in ids and ids[m] >= ids[top] + PROBE_GAIN_CP]
        if finds:
            best = max(ids[m] for m in finds)
            _boost(tree, [m for m in finds if ids[m] >= best - PROBE_TIE_CP])
    vetoed = _vetoed(ids, veto_cp)
    if vetoed and VETOED_PRIOR_SCALE < 1:
        tree.set_root_priors({c.move: p * (VETOED_PRIOR_SCALE if c.move in vetoed else 1.0)
                              for c, p in zip(root.children, root.priors)})
    return ProbeFinds(vetoed)


def proven_mate_lines(tree: Tree, state: chess.Board, earlier: Sequence[int], deadline: float,
                      stopped: Callable[[], bool], max_nodes: Optional[int] = None) -> ProbeFinds:
    """The line of a mate that an earlier search's probe proved at the root (proven already; the tree holds nothing
    below the move), written out again for this search's ``info`` lines."""
    root = tree.root_node
    best = root.ranked_children()[0] if root.children else None
    if best is None or best.proven is None or best.children:
        return ProbeFinds()
    if best.proven == WIN:  # the same line as the first time when checks alone mate
        n = best.plies // 2 + 1
        mate = tactics.find_mate(state, n, deadline, stopped, earlier, max_nodes=max_nodes)
        if mate is not None and mate[1] == n and convert.core_move(state, mate[0]) == best.move:
            return ProbeFinds(lines=_mate_line(state, mate, earlier, deadline, stopped, max_nodes))
    return ProbeFinds(lines=_proven_line(tree, state, earlier, deadline, stopped, max_nodes))


def _core_line(state: chess.Board, line: Sequence[chess.Move]) -> list[int]:
    """A line of python-chess moves from ``state`` as the tree's move ids."""
    board = state.copy(stack=False)
    ids = []
    for move in line:
        ids.append(convert.core_move(board, move))
        board.push(move)
    return ids


def _proven_line(tree: Tree, state: chess.Board, earlier: Sequence[int], deadline: float,
                 stopped: Callable[[], bool], max_nodes: Optional[int]) -> dict[int, tuple[int, ...]]:
    """The line of the mate (either way) behind the proven root's best move, as the alpha-beta sees it."""
    best = tree.root_node.ranked_children()[0]
    if best.proven is None or best.children:
        return {}
    line = _core_line(state, tactics.probe_mate_line(state, tree.chess_move(best.move), best.plies, deadline, stopped,
                                                     earlier, _line_nodes(max_nodes)))
    return {line[0]: tuple(line[1:])}


def _mate_line(state: chess.Board, mate: tuple[chess.Move, int], earlier: Sequence[int],
               deadline: float, stopped: Callable[[], bool], max_nodes: Optional[int]) -> dict[int, tuple[int, ...]]:
    line = _core_line(state, tactics.mate_line(state, mate[0], mate[1], deadline, stopped, earlier,
                                               _line_nodes(max_nodes)))
    return {line[0]: tuple(line[1:])}


def _line_nodes(max_nodes: Optional[int]) -> int:
    return min(max_nodes or tactics.MATE_LINE_NODES, tactics.MATE_LINE_NODES)


def _vetoed(scores: dict[int, int], veto_cp: int) -> frozenset[int]:
    """The moves scored at least ``veto_cp`` below the best (upper bounds included: with a window of at least
    ``veto_cp`` a bound is that far below). Not when every move loses: the probe's scores then only say how fast,
    and the tree may know a better defence."""
    if veto_cp <= 0 or not scores:
        return frozenset()
    best = max(scores.values())
    if best <= -tactics.MATE_BOUND:
        return frozenset()
    return frozenset(m for m, score in scores.items() if score <= best - veto_cp)


def _expand_fully(tree: Tree) -> dict[int, Node]:
    """Give the root a child for every move (the policy then never adds one), by move id."""
    tree.expand_root_fully()
    return {c.move: c for c in tree.root_node.children}


def _settle(tree: Tree, child: Node, proven: float, plies: int) -> None:
    if child.proven is None:
        child.proven, child.plies = proven, max(plies, 0)
        tree.prove(tree.root)


def _boost(tree: Tree, finds: list[int]) -> None:
    """Give PROBE_PRIOR_SHARE of the root's prior to ``finds``, evenly, and re-rank."""
    root = tree.root_node
    share = PROBE_PRIOR_SHARE / len(finds)
    tree.set_root_priors({c.move: p * (1 - PROBE_PRIOR_SHARE) + (share if c.move in finds else 0.0)
                          for c, p in zip(root.children, root.priors)})   # the root has a child for every move
