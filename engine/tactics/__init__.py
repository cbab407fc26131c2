"""Exact forcing-line search at the root: mates by checks, and a short alpha-beta on material.

The tree search gives a move visits in proportion to its prior and its first values. A sacrifice that mates or wins
material a few plies later looks like a blunder after one visit and is hardly ever visited again: in most of the Win
At Chess positions Arbor missed, the solution had a prior rank of 20 to 50 and one or two visits. Before the tree
search, :func:`find_mate` proves mates that the attacker forces with checks alone (few moves to try, so it reaches
11 plies), and :func:`probe` runs a full-width alpha-beta search on material and piece-square placement with a
capture quiescence, which sees short combinations whatever the priors say. ``root.py`` folds what they find into the
tree's root.

Both run on a bitboard core of their own (``board.py``, ``alphabeta.py``, ``mates.py``), compiled at install and
interpreted where nothing could compile it (``engine/compiled.py``); these functions take python-chess boards and moves. Both
respect a deadline, a stop flag and a budget of positions, and treat any repetition as a draw so that a proof never
relies on a line the opponent could draw.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

import chess

from ..board import convert
from .. import compiled
from ..compiled import Core
from ..evaluators.heuristic import FULL_PHASE, TAPERED
from . import table
from .settings import DEFAULT, EXHAUSTIVE, ProbeSettings

MATE = 100_000            # score of delivering mate now; a mate in k plies scores MATE - k (alphabeta.py's)
MATE_BOUND = MATE - 1000  # scores beyond this are mates
MATE_LINE_NODES = 20_000  # positions spent writing out a found mate's line (most take a few hundred)
# Root moves scoring this far below the best get only an upper bound: a narrow window cuts off most of the root's
# work, and the caller only needs exact scores near the best.
PROBE_WINDOW = 40
# The deepest iteration: the alpha-beta's own limit (check extensions included), so that the probe deepens until its
# time or positions run out. (At 8, the limit before the compiled core, it stopped short of its time in most
# positions: Win At Chess at 1 s 261 against 267, cores 0 and 1.)
MAX_DEPTH = 32

_tables: dict[int, list[int]] = {}


@dataclass
class ProbeResult:
    """Scores of the root moves (centipawns, side to move's view) from the deepest finished iteration. ``exact``
    moves scored within the window; the others are upper bounds. ``nodes``: the positions searched."""

    depth: int = 0
    nodes: int = 0
    scores: dict[chess.Move, int] = field(default_factory=dict)
    exact: set[chess.Move] = field(default_factory=set)


def _never() -> bool:
    return False


def probe(board: chess.Board, deadline: float, max_depth: int = MAX_DEPTH, window: int = PROBE_WINDOW,
          stopped: Callable[[], bool] = _never, earlier: Iterable[int] = (),
          reference: Optional[chess.Move] = None, moves: Optional[Iterable[chess.Move]] = None,
          max_nodes: Optional[int] = None, settings: ProbeSettings = DEFAULT, core: Optional[Core] = None) -> ProbeResult:
    """Iteratively deepened alpha-beta over the root's ``moves`` (legal ones; default: every legal move) until
    ``deadline`` (``time.monotonic()``), ``stopped()`` or ``max_nodes`` positions.

    ``reference`` (if legal) and the moves within ``window`` centipawns of the best get exact scores; the rest are
    upper bounds (fail-soft, so a bound at or below -MATE_BOUND still proves the move loses), and each of them is at
    least ``window`` below the best. The result holds the deepest iteration that finished (depth 0 if none did).
    ``earlier``: the Zobrist keys (``convert.zobrist``) of the game's positions since its last irreversible move, when
    the board's move stack does not hold them; reaching one again is a draw.
    """
    core = core or compiled.CORE
    moves = list(board.legal_moves) if moves is None else list(moves)
    if not moves:
        return ProbeResult()
    position = convert.core_board(core, board, earlier)
    by_int = {convert.core_move(board, move): move for move in moves}
    with table.lent(settings.table_bits) as empty:
        search = core.alphabeta.AlphaBeta(position, scoring_tables(board), settings, deadline, stopped, max_nodes,
                                          empty)
        depth, scores, exact = search.probe(list(by_int), convert.core_move(board, reference) if reference in moves
                                            else -1, max_depth, window)
    return ProbeResult(depth, search.nodes, {by_int[m]: score for m, score in scores.items()},
                       {by_int[m] for m in exact})


def find_mate(board: chess.Board, max_moves: int, deadline: float, stopped: Callable[[], bool] = _never,
              earlier: Iterable[int] = (), max_nodes: Optional[int] = None,
              core: Optional[Core] = None) -> Optional[tuple[chess.Move, int]]:
    """The side to move's fastest mate, found with checks only, in at most ``max_moves`` moves.

    Returns (first move, mate in n moves) or None: none exists with checks alone, or the deadline, ``stopped()`` or
    ``max_nodes`` came first. A found mate is exact: every defence was tried, and a defence that repeats a position
    counts as a draw. ``earlier`` as for :func:`probe`.
    """
    core = core or compiled.CORE
    search = core.mates.MateSearch(convert.core_board(core, board, earlier), deadline, stopped, max_nodes)
    found = search.find(max_moves)
    return None if found is None else (convert.chess_move(board, found[0]), found[1])


def mate_line(board: chess.Board, move: chess.Move, n: int, deadline: float, stopped: Callable[[], bool] = _never,
              earlier: Iterable[int] = (), max_nodes: int = MATE_LINE_NODES,
              core: Optional[Core] = None) -> list[chess.Move]:
    """The line of a mate that :func:`find_mate` found (``move``, mating in ``n``): against each check the defence
    that holds out longest, then the fastest mating check, down to checkmate: what a user expects to read after
    ``score mate n``. Cut short (to ``move`` at least) at ``deadline``, ``stopped()`` or after ``max_nodes``
    positions."""
    core = core or compiled.CORE
    search = core.mates.MateSearch(convert.core_board(core, board, earlier), deadline, stopped, max_nodes)
    return convert.chess_line(board, search.line(convert.core_move(board, move), n))


def probe_mate_line(board: chess.Board, move: chess.Move, plies: int, deadline: float,
                    stopped: Callable[[], bool] = _never, earlier: Iterable[int] = (),
                    max_nodes: int = MATE_LINE_NODES, core: Optional[Core] = None) -> list[chess.Move]:
    """The line of a mate that :func:`probe` proved for ``move`` (by either side, ``plies`` plies after it, by any
    moves, checks or not): at each position the move :func:`probe` scores best, the fastest mate for the side that
    mates and the longest defence for the other, down to checkmate, searched with nothing pruned (``EXHAUSTIVE``).
    Cut short (to ``move`` at least) at ``deadline``, ``stopped()``, after ``max_nodes`` positions in all, or where a
    search proves no mate."""
    core = core or compiled.CORE
    line = [move]
    board.push(move)
    try:
        left, budget = plies, max_nodes
        while left > 0 and budget > 0:
            result = probe(board, deadline, max_depth=left, stopped=stopped, earlier=earlier, max_nodes=budget,
                           settings=EXHAUSTIVE, core=core)
            budget -= result.nodes
            if not result.scores:
                break
            best = max(result.scores, key=result.scores.__getitem__)
            score = result.scores[best]
            distance = MATE - abs(score)   # plies to the mate, ``best`` included
            if abs(score) < MATE_BOUND or distance > left or best not in result.exact:
                break   # the budget ran out before the mate was seen again
            board.push(best)
            line.append(best)
            left = distance - 1
    finally:
        for _ in line:
            board.pop()
    return line


def scoring_tables(board: chess.Board) -> list[int]:
    """The alpha-beta's scoring tables at ``board``'s phase: the heuristic's tapered piece-square values in whole
    centipawns, ``[colour * 448 + piece type * 64 + square]``."""
    phase = min(FULL_PHASE, (board.knights | board.bishops).bit_count() + 2 * board.rooks.bit_count()
                + 4 * board.queens.bit_count())
    found = _tables.get(phase)
    if found is None:
        found = _tables[phase] = [round(TAPERED[color][phase][piece][square]) if piece else 0
                                  for color in (chess.BLACK, chess.WHITE) for piece in range(7) for square in range(64)]
    return found
