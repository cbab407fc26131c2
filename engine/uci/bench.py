"""``bench``: fixed positions searched to a fixed simulation count, for speed comparisons.

The node count depends only on the build, the options and the positions, so two builds can be
compared by nps, and a changed node count reveals a changed search. The tree searches as on the clock, without the
root probe (which runs only in 'go movetime', 'go nodes' and analysis), so that its nodes per second are what games
see and can be set beside lc0's ``bench``; the probe's alpha-beta is then timed on the same positions, on lines of
its own. ``bench game`` plays a game against itself with short searches on the reused tree, the way moves are
searched on the clock. ``bench memory`` grows one tree and reports what a node costs.
"""

from __future__ import annotations

import copy
import math
import time
from typing import Callable, Optional

import chess

from ..evaluators.base import Evaluator
from ..params import Params
from ..search.pipeline import Pipeline
from .. import compiled, tactics
from ..search.search import Search
from ..search.timeman import Limits
from ..search.tree import Tree

BENCH_POSITIONS = (
    chess.STARTING_FEN,                                                         # opening
    "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4",      # Italian game
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",     # "Kiwipete", busy middlegame
    "r1bq1rk1/pp2ppbp/2np1np1/8/3NP3/2N1BP2/PPPQ2PP/R3KB1R w KQ - 3 9",         # Yugoslav attack
    "2r3k1/pp3ppp/2n1p3/3pP3/3P4/P1R2N2/1P3PPP/6K1 w - - 0 25",                # quiet endgame-ish
    "r2qkb1r/pp2nppp/3p4/2pNN1B1/2BnP3/3P4/PPP2PPP/R2bK2R w KQkq - 1 10",      # mate in 2
    "6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1",                                    # back-rank mate in 1
    "8/8/4k3/8/2P5/8/4K3/8 w - - 0 1",                                          # pawn endgame
    "8/5pk1/6p1/8/3Q4/8/5PPP/6K1 b - - 0 40",                                   # queen endgame, defending
    "r1b2rk1/2q1b1pp/p2ppn2/1p6/3QP3/1BN1B3/PPP3PP/R4RK1 w - - 0 14",          # tactical middlegame
)

DEFAULT_SIMULATIONS = {"rollout": 100}
DEFAULT = 800
MEMORY_SIMULATIONS = 20_000
GAME_PLIES = 40        # an opening and a middlegame: where clock games spend most of their moves
GAME_DEFAULT = 400     # new playouts per move, about a 10 s + 0.1 s game move of a network search
GAME_SIMULATIONS = {"rollout": 50}
# Positions the probe's alpha-beta searches in each bench position: a tenth of a second compiled; interpreted, a
# twentieth as many, so that the bench still ends in seconds.
PROBE_NODES = 200_000 if compiled.CORE.compiled else 10_000


def as_on_the_clock(params: Params) -> Params:
    """A copy of ``params`` whose 'go nodes' searches run as the clock's do: no root probe."""
    params = copy.copy(params)
    params.tactical_probe_share = 0.0
    return params


def run_bench(evaluator: Evaluator, params: Params, send: Callable[[str], None],
              simulations: Optional[int] = None, pipeline: Optional[Pipeline] = None) -> tuple[int, float]:
    """Search every bench position to ``simulations`` playouts; returns (nodes, seconds). ``pipeline`` is the
    engine's (its workers started and ready), so that the time is the search's alone."""
    simulations = simulations or DEFAULT_SIMULATIONS.get(evaluator.name, DEFAULT)
    params = as_on_the_clock(params)
    total_nodes, total_time = 0, 0.0
    for i, fen in enumerate(BENCH_POSITIONS, 1):
        evaluator.clear()
        board = chess.Board(fen)
        tree = Tree()
        tree.set_position(fen, [board.copy(stack=False)], [])
        search = Search(tree, evaluator, params, pipeline=pipeline)
        start = time.perf_counter()
        search.run(Limits(nodes=simulations))
        elapsed = time.perf_counter() - start
        search.close()
        nodes = search.playouts
        total_nodes += nodes
        total_time += elapsed
        send(f"info string bench position {i}/{len(BENCH_POSITIONS)}: nodes {nodes} "
             f"time {int(elapsed * 1000)} nps {int(nodes / max(elapsed, 1e-9))}")
    _send_totals(send, evaluator, params, total_nodes, total_time, probe_speed())
    return total_nodes, total_time


def probe_speed() -> tuple[int, float]:
    """The root probe's alpha-beta on each bench position for ``PROBE_NODES`` positions: (positions, seconds)."""
    positions, seconds = 0, 0.0
    for fen in BENCH_POSITIONS:
        start = time.perf_counter()
        result = tactics.probe(chess.Board(fen), math.inf, max_depth=64, max_nodes=PROBE_NODES)
        seconds += time.perf_counter() - start
        positions += result.nodes
    return positions, seconds


def run_game_bench(evaluator: Evaluator, params: Params, send: Callable[[str], None],
                   simulations: Optional[int] = None, pipeline: Optional[Pipeline] = None) -> tuple[int, float]:
    """Self-play from the start position, each move ``go nodes``-style on the reused tree.

    Reports the new playouts of all moves per second of search, so that per-search costs (start-up,
    filling the batch pipeline, reusing the tree) weigh as they do in a game. Returns (nodes, seconds).
    """
    simulations = simulations or GAME_SIMULATIONS.get(evaluator.name, GAME_DEFAULT)
    evaluator.clear()
    board = chess.Board()
    start = board.fen()
    states = [board.copy(stack=False)]
    tree = Tree()
    total_nodes, total_time = 0, 0.0
    for ply in range(GAME_PLIES):
        tree.set_position(start, states, board.move_stack)
        search = Search(tree, evaluator, params, pipeline=pipeline)
        began = time.perf_counter()
        move, _ = search.run(Limits(nodes=simulations))
        total_time += time.perf_counter() - began
        search.close()
        total_nodes += search.playouts
        if move is None:
            break
        board.push(move)
        states.append(board.copy(stack=False))
        if board.is_game_over(claim_draw=True):
            break
    send(f"info string bench game: {len(board.move_stack)} plies of {simulations} playouts on the reused tree")
    _send_totals(send, evaluator, params, total_nodes, total_time)
    return total_nodes, total_time


def _send_totals(send: Callable[[str], None], evaluator: Evaluator, params: Params, nodes: int,
                 seconds: float, probe: Optional[tuple[int, float]] = None) -> None:
    """The summary lines that tools read, in Stockfish's layout (Nodes/second last); with ``probe`` (positions,
    seconds), the root probe's speed on lines of its own."""
    send("")
    send("===========================")
    send(f"Evaluator       : {evaluator.name}")
    send(f"Threads         : {params.threads}")
    send(f"Total time (ms) : {int(seconds * 1000)}")
    send(f"Nodes searched  : {nodes}")
    if probe is not None:
        send(f"Probe core      : {'compiled' if compiled.CORE.compiled else 'interpreted'}")
        send(f"Probe positions : {probe[0]}")
        send(f"Probe time (ms) : {int(probe[1] * 1000)}")
        send(f"Probe pos/second: {int(probe[0] / max(probe[1], 1e-9))}")
    send(f"Nodes/second    : {int(nodes / max(seconds, 1e-9))}")


def run_memory_bench(evaluator: Evaluator, params: Params, send: Callable[[str], None],
                     simulations: Optional[int] = None) -> float:
    """Grow one tree from the Italian game to ``simulations`` visits; returns its bytes per node.

    Bytes are what the tree's columns and blocks hold for its live nodes, and the cache's table and the blocks only it
    holds on lines of their own (engine/search/nodes.py); start-up memory is not counted. The process's RSS grows
    by more (the columns double as they grow; ``arbor memwatch`` measures it from outside)."""
    simulations = simulations or MEMORY_SIMULATIONS
    evaluator.clear()
    board = chess.Board(BENCH_POSITIONS[1])
    tree = Tree()
    tree.set_position(board.fen(), [board.copy(stack=False)], [])
    search = Search(tree, evaluator, params)
    search.run(Limits(nodes=simulations))
    search.close()
    nodes = tree.nodes.live
    parts = tree.nodes.bytes_held()
    held = parts["nodes"] + parts["blocks"]
    per_node = held / max(nodes, 1)
    send(f"Evaluator       : {evaluator.name}")
    send(f"Tree nodes      : {nodes}")
    send(f"Tree bytes      : {held}")
    send(f"Bytes/node      : {per_node:.0f}")
    send("Bytes/node by part: " + ", ".join(f"{name} {size / max(nodes, 1):.0f}" for name, size in parts.items()
                                          if size))
    if tree.nodes.buckets:
        send(f"Cache entries   : {tree.nodes.cache_count}")
        send(f"Cache bytes     : {parts['cache']} (its table; the blocks are counted with the tree's)")
        send(f"Cache bytes/node: {parts['cache'] / max(nodes, 1):.0f}")
    return per_node
