"""``bench phases``: where a search's time goes, per node and per phase, on the bench positions.

The same searches as ``bench`` (same positions, same node counts), with the search's steps wrapped in timers: the
tree's compiled gather (descents by PUCT, the new leaves' legal moves, finished games and repetitions, the cache's
look-ups, the mate-in-one test, the input planes), the network, the compiled finish (priors, blocks, backup and the
lone king's steering), and an evaluator written in Python. Times are exclusive: a phase that calls another is
charged only for its own part. The search thread's time is split into the phases below plus "other" (the Python
loop, limits, reporting), the network's run among them. The search is timed at ``Threads=1`` whatever the option
says: with more, the same phases run on several threads (a network's) or in worker processes (an evaluator written
in Python), where one thread's timers cannot add them up. The wrappers cost about a microsecond a batch; judge speed
changes by ``bench`` itself.
"""

from __future__ import annotations

import copy
import threading
import time
from typing import Any, Callable, Optional

import chess

from .bench import BENCH_POSITIONS, DEFAULT, DEFAULT_SIMULATIONS, as_on_the_clock
from ..evaluators.base import Evaluator
from ..params import Params
from ..search.search import Search
from ..search.timeman import Limits
from ..search.tree import Tree

#: (method, phase). Search methods are wrapped per search; the evaluator's once.
SEARCH_PHASES = (
    ("_gather", "gather (compiled): descents, new leaves, cache, planes"),
    ("_finish_network", "finish (compiled): priors, blocks, backup"),
    ("_leaves", "leaves as python-chess boards (Python evaluators)"),
    ("_finish_python", "finish in Python: steering, Python evaluators' leaves"),
)
EVALUATOR_PHASES = (("evaluate", "evaluate (an evaluator in Python)"),)
NETWORK = "network run (evaluator threads, overlap the search)"
NETWORK_INLINE = "network run (Threads=1: on the search thread)"
OTHER = "other: loops, limits, bookkeeping"


class PhaseTimer:
    """Exclusive time per phase on one thread (the search's), plus the evaluator thread's busy time."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._stack: list[str] = []
        self._mark = 0.0
        self._owner = threading.get_ident()

    def wrap(self, fn: Callable, phase: str) -> Callable:
        seconds, calls, stack, clock = self.seconds, self.calls, self._stack, time.perf_counter
        seconds.setdefault(phase, 0.0)
        calls.setdefault(phase, 0)
        owner = self._owner

        def timed(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() != owner:   # the evaluator thread: busy time, not on the stack
                start = clock()
                try:
                    return fn(*args, **kwargs)
                finally:
                    seconds[NETWORK] = seconds.get(NETWORK, 0.0) + clock() - start
                    calls[NETWORK] = calls.get(NETWORK, 0) + 1
            now = clock()
            if stack:
                seconds[stack[-1]] += now - self._mark
            stack.append(phase)
            self._mark = now
            calls[phase] += 1
            try:
                return fn(*args, **kwargs)
            finally:
                now = clock()
                seconds[stack.pop()] += now - self._mark
                self._mark = now
        return timed


def run_phase_bench(evaluator: Evaluator, params: Params, send: Callable[[str], None],
                    simulations: Optional[int] = None) -> dict[str, float]:
    """The bench searches with phase timers; returns microseconds per node by phase (search thread phases,
    ``OTHER``, and ``NETWORK``)."""
    simulations = simulations or DEFAULT_SIMULATIONS.get(evaluator.name, DEFAULT)
    if params.threads > 1:
        # Worker processes or threads would do the leaves' work out of one thread's timers' sight.
        send(f"info string bench phases: Threads={params.threads} searches on several threads or processes; "
             "timing the search on one, at Threads=1")
        params = copy.copy(params)
        params.threads = 1
    params = as_on_the_clock(params)
    timer = PhaseTimer()
    originals = []
    for name, phase in EVALUATOR_PHASES:
        if hasattr(evaluator, name):
            originals.append((evaluator, name, evaluator.__dict__.get(name)))
            setattr(evaluator, name, timer.wrap(getattr(evaluator, name), phase))
    if evaluator.planes:   # on an evaluator thread it is counted apart, as NETWORK
        originals.append((evaluator, "run_planes", evaluator.__dict__.get("run_planes")))
        setattr(evaluator, "run_planes", timer.wrap(evaluator.run_planes, NETWORK_INLINE))
    nodes, wall = 0, 0.0
    try:
        for fen in BENCH_POSITIONS:
            evaluator.clear()
            board = chess.Board(fen)
            tree = Tree()
            tree.set_position(fen, [board.copy(stack=False)], [])
            search = Search(tree, evaluator, params)
            for name, phase in SEARCH_PHASES:
                setattr(search, name, timer.wrap(getattr(search, name), phase))
            start = time.perf_counter()
            search.run(Limits(nodes=simulations))
            wall += time.perf_counter() - start
            search.close()
            nodes += search.playouts
    finally:
        for owner, name, original in originals:
            if original is None:
                delattr(owner, name)
            else:
                setattr(owner, name, original)
    network = timer.seconds.pop(NETWORK, 0.0)
    per_node = {phase: 1e6 * s / max(nodes, 1) for phase, s in timer.seconds.items() if timer.calls[phase]}
    per_node[OTHER] = 1e6 * (wall - sum(timer.seconds.values())) / max(nodes, 1)
    send(f"info string bench phases: {len(BENCH_POSITIONS)} positions, {nodes} nodes in {wall:.2f} s "
         f"({nodes / max(wall, 1e-9):.0f} nps with the timers), {evaluator.name} evaluator")
    send(f"{'phase (search thread)':<56} {'us/node':>8} {'share':>6}")
    total = sum(per_node.values())
    for phase, us in sorted(per_node.items(), key=lambda item: -item[1]):
        send(f"{phase:<56} {us:8.1f} {us / total:6.1%}")
    send(f"{'total (wall time of the search thread)':<56} {total:8.1f}")
    if network:
        per_node[NETWORK] = 1e6 * network / max(nodes, 1)
        send(f"{NETWORK:<56} {per_node[NETWORK]:8.1f} {per_node[NETWORK] / total:6.1%}")
    return per_node
