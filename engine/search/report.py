"""What a search reports: its ``info`` lines (one per MultiPV move) and lc0-style statistics of the root moves.

Read from the tree alone, so the UCI layer prints them without looking into the search.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from .tree import DRAW, LOSS, TB_PLIES, WIN, Node, Tree


@dataclass
class LineInfo:
    """One line of search output (one MultiPV entry)."""

    multipv: int
    depth: int
    seldepth: int
    time_ms: int
    nodes: int
    nps: int
    q: float                     # expected result for the side to move, in [-1, 1]
    mate: Optional[int]          # moves to mate, negative when being mated
    wdl: tuple[int, int, int]    # per mille
    pv: list[Any]
    tbhits: int = 0              # tablebase probes that answered


@dataclass
class MoveStat:
    """Statistics of one root move, for VerboseMoveStats."""

    move: Any
    n: int
    in_flight: int
    prior: float
    q: Optional[float]
    d: Optional[float]
    u: float
    value: Optional[float]
    proven: Optional[float]
    plies: int


def root_lines(tree: Tree, ranked: list[Node], multipv: int, elapsed: float, playouts: int,
               depth_sum: int, seldepth: int, tbhits: int,
               known_lines: Optional[Mapping[int, Sequence[int]]] = None) -> list[LineInfo]:
    """The ``info`` lines of the best ``multipv`` root moves (``ranked``: the root's children, best first) after
    ``elapsed`` seconds and ``playouts`` simulations (whose depths add up to ``depth_sum``). ``known_lines``: the
    moves after a root move (by id) found outside the tree, such as a proven mate's, shown in place of the tree's
    line."""
    ranked = ranked[:max(1, multipv)]
    depth = round(depth_sum / playouts) if playouts else 0
    out = []
    root = tree.root_node
    for i, child in enumerate(ranked, 1):
        if child.n == 0 and child.proven is None and i > 1:
            break
        # Unvisited (the search stopped before its first visit): the root's own value is the estimate.
        q = child.q if child.n or child.proven is not None or root.v is None else root.v
        mate = None
        if child.plies >= TB_PLIES:
            pass  # a tablebase result: exact, but no distance to mate
        elif child.proven == WIN:
            mate = (child.plies + 2) // 2
        elif child.proven == LOSS:
            mate = -((child.plies + 1) // 2)
        draw = child.d / child.n if child.n else (1.0 if child.proven == DRAW else 0.0)
        if child.proven is not None:
            draw = 1.0 if child.proven == DRAW else 0.0
        win = min(max(0.0, (1.0 + q - draw) / 2), 1.0 - draw)
        wdl = (round(win * 1000), round(draw * 1000), 1000 - round(win * 1000) - round(draw * 1000))
        known = known_lines.get(child.move) if known_lines else None
        line = list(known) if known is not None else child.principal_variation()
        out.append(LineInfo(i, max(depth, 1), max(seldepth, 1), int(elapsed * 1000), root.n,
                            int(playouts / elapsed), q, mate, wdl, tree.chess_line([child.move] + line),
                            tbhits))
    return out


def move_stats(tree: Tree, exploration: float) -> list[MoveStat]:
    """Every root move's statistics, worst first; ``exploration`` is PUCT's cpuct(N) * sqrt(N) at the root (0
    for UCB1)."""
    root = tree.root_node
    stats = []
    opened = {c.move: c for c in root.children}
    for move, prior in zip(root.moves or [], root.priors):
        c = opened.get(move)
        n = c.n if c else 0
        inflight = c.in_flight if c else 0
        stats.append(MoveStat(
            tree.chess_move(move), n, inflight, prior,
            c.q if c and (c.n or c.proven is not None) else None,
            c.d / c.n if c and c.n else None,
            exploration * prior / (1 + n + inflight),
            c.v if c is not None else None,
            c.proven if c else None, c.plies if c else 0))
    stats.sort(key=lambda s: (s.n, s.prior))
    return stats


def q_to_cp(q: float) -> int:
    """lc0's mapping of an expected result to centipawns: 90 * tan(1.5637541897 * q)."""
    q = max(-0.999, min(0.999, q))
    return int(round(90.0 * math.tan(1.5637541897 * q)))
