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
import sys
import time
from typing import Any, Callable, Optional

import chess

from ..evaluators.base import Evaluator
from ..params import Params
from ..search.pipeline import Pipeline
from .. import compiled, tactics
from ..search.search import Search
from ..search.timeman import Limits
from ..search.tree import Node, Tree

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


def run_bench(game: Any, evaluator: Evaluator, params: Params, send: Callable[[str], None],
              simulations: Optional[int] = None, pipeline: Optional[Pipeline] = None) -> tuple[int, float]:
    """Search every bench position to ``simulations`` playouts; returns (nodes, seconds). ``pipeline`` is the
    engine's (its workers started and ready), so that the time is the search's alone."""
    simulations = simulations or DEFAULT_SIMULATIONS.get(evaluator.name, DEFAULT)
    params = as_on_the_clock(params)
    total_nodes, total_time = 0, 0.0
    for i, fen in enumerate(BENCH_POSITIONS, 1):
        evaluator.clear()
        board = chess.Board(fen)
        tree = Tree(game)
        tree.set_position(fen, [board.copy(stack=False)], [])
        search = Search(game, tree, evaluator, params, pipeline=pipeline)
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


def run_game_bench(game: Any, evaluator: Evaluator, params: Params, send: Callable[[str], None],
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
    tree = Tree(game)
    total_nodes, total_time = 0, 0.0
    for ply in range(GAME_PLIES):
        tree.set_position(start, states, board.move_stack)
        search = Search(game, tree, evaluator, params, pipeline=pipeline)
        began = time.perf_counter()
        move, _ = search.run(Limits(nodes=simulations))
        total_time += time.perf_counter() - began
        search.close()
        total_nodes += search.playouts
        if move is None:
            break
        states.append(game.play(states[-1], move))
        board.push(move)
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


def run_memory_bench(game: Any, evaluator: Evaluator, params: Params, send: Callable[[str], None],
                     simulations: Optional[int] = None) -> float:
    """Grow one tree from the Italian game to ``simulations`` visits; returns its bytes per node.

    Bytes are the sizes of every object the tree holds (``sys.getsizeof``, each object once), so start-up memory is
    not counted; the evaluator's cache is reported on its own lines, without what it shares with the tree. The
    process's RSS grows by about a fifth more (allocator overhead; ``arbor memwatch`` measures it from outside).
    """
    simulations = simulations or MEMORY_SIMULATIONS
    evaluator.clear()
    board = chess.Board(BENCH_POSITIONS[1])
    tree = Tree(game)
    tree.set_position(board.fen(), [board.copy(stack=False)], [])
    search = Search(game, tree, evaluator, params)
    search.run(Limits(nodes=simulations))
    search.close()
    nodes, parts, seen = tree_parts(tree.root)
    tree_bytes = sum(parts.values())
    per_node = tree_bytes / nodes
    send(f"Evaluator       : {evaluator.name}")
    send(f"Tree nodes      : {nodes}")
    send(f"Tree bytes      : {tree_bytes}")
    send(f"Bytes/node      : {per_node:.0f}")
    send("Bytes/node by part: " + ", ".join(f"{name} {size / nodes:.0f}" for name, size in parts.items() if size))
    contents = evaluator.cache_contents()
    if contents is not None:
        cache_bytes = cache_size(contents, seen)
        send(f"Cache entries   : {len(contents)}")
        send(f"Cache bytes     : {cache_bytes} (what the tree does not already hold)")
        send(f"Cache bytes/node: {cache_bytes / nodes:.0f}")
    return per_node


def cache_size(contents: Any, seen: set[int]) -> int:
    """Bytes of an evaluator's cache: its table (a mapping and its keys, or the network cache's arrays) and its
    entries (with the items of a tuple or list entry), each object once and none that ``seen`` (the tree's objects,
    by id) holds already."""
    getsizeof = sys.getsizeof
    if hasattr(contents, "table_bytes"):
        size = contents.table_bytes()
    else:
        size = getsizeof(contents) + sum(getsizeof(key) for key in contents)
    for entry in contents.values():
        if id(entry) in seen:
            continue
        seen.add(id(entry))
        size += getsizeof(entry)
        if isinstance(entry, (tuple, list)):
            for part in entry:
                if id(part) not in seen:
                    seen.add(id(part))
                    size += getsizeof(part)
    return size


def tree_size(root: Node) -> tuple[int, int]:
    """(nodes, bytes) of the tree below ``root``: every object its nodes hold, each counted once."""
    nodes, parts, _ = tree_parts(root)
    return nodes, sum(parts.values())


def tree_parts(root: Node) -> tuple[int, dict[str, int], set[int]]:
    """(nodes, bytes by part: the node objects and each slot's values, the ids of the objects counted) of the tree
    below ``root``; an object two nodes share is counted once, with the first."""
    getsizeof = sys.getsizeof
    slots = Node.__slots__
    parts = dict.fromkeys(("node",) + slots, 0)
    seen: set[int] = set()
    nodes = 0
    todo = [root]
    while todo:
        node = todo.pop()
        nodes += 1
        parts["node"] += getsizeof(node)
        for name in slots:
            value = getattr(node, name)
            if id(value) not in seen:
                seen.add(id(value))
                parts[name] += getsizeof(value)
        todo.extend(node.children)
    return nodes, parts, seen
