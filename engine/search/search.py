"""Monte Carlo Tree Search: simulations, backup, the mate solver, limits and reporting.

One simulation walks from the root by the search policy to a leaf, asks the evaluator for the
leaf's value and priors (or takes the exact result of a finished game), expands the leaf and
backs the value up with alternating sign. Proven results propagate up the tree: a position with
a winning move is lost for the player who moved into it; one whose every move is a proven loss
is won for them.

Network evaluators want batches: the search then gathers leaves with in-flight visits counted,
backs up terminals and cache hits at once. With two cores a batch runs on the evaluator thread while the
next is gathered, started before the one before is backed up (engine/search/pipeline.py); on one core each batch
is backed up before the next is gathered. With worker processes
(``Threads`` of 2 or more) the search instead sends them chunks of new leaves, works out some itself while
they are out, and backs up each answer as it comes.
"""

from __future__ import annotations

import gc
import math
import random
import threading
import time
from concurrent.futures import Future
from typing import Any, Callable, Hashable, Optional

import chess

from ..evaluators.base import Evaluator, Leaf
from .expansion import Boards, Expansion, Job, expand_positions, leaf_edges
from .memory import MemoryBudget, tree_memory_note
from ..params import Params
from .pipeline import Pipeline
from .policy import Puct, Uct
from .report import LineInfo, MoveStat, move_stats, root_lines
from ..compiled import CORE
from .root_probe import ProbeFinds, probe_root, proven_mate_lines
from .stopping import clock_says_stop
from .timeman import Budget, Limits, TimeManager
from .tree import DRAW, LOSS, TB_PLIES, WIN, Node, Tree, prove
from .workers import CHUNK_LEAVES

INFO_INTERVAL = 1.0        # seconds between periodic info lines
CHECK_EVERY = 2            # simulations between clock checks
PROBE_UNTIMED_SECONDS = 1.0  # root probe of 'go infinite', which has no budget
# A search limited by simulations gives the probe positions in the ratio of the two searches' rates on one core, so
# that TacticalProbeShare means the same share of the work as of a movetime: the compiled probe searches about 2.8
# million positions a second (Win At Chess, median), the tree about 2,000 simulations with the shipped net; the
# interpreted probe about 20,000 positions.
PROBE_NODES_PER_SIMULATION = 1000 if CORE.compiled else 10
# Fewer simulations make the search a policy player ('go nodes 1' is how Maia is meant to be played): no probe, and
# the root keeps the net's own priors even against a lone king (engine/search/mop_up.py).
PROBE_MIN_SIMULATIONS = 100
# A move the root probe vetoed is played again once the tree has searched it this much itself: deeper than the
# probe's few plies (a few seconds of analysis; a 'go movetime' of a second gives the whole root about 2,000).
VETO_LAPSE_VISITS = 10_000
LOCAL_LEAVES = 2             # leaves the search thread works out itself between looks at the workers' answers
LOCAL_COLLISIONS = 16        # descents into waiting leaves it tries meanwhile before it waits for an answer
ANSWER_WAIT_SECONDS = 2.0    # longest wait at the end of a search for the workers' last answers


class Search:
    """Runs searches on a :class:`Tree` with an evaluator; one search at a time."""

    def __init__(self, game: Any, tree: Tree, evaluator: Evaluator, params: Params,
                 on_info: Callable[[list[LineInfo]], None] = lambda lines: None,
                 on_string: Callable[[str], None] = lambda text: None,
                 tablebases: Optional[Any] = None, time_manager: Optional[TimeManager] = None,
                 pipeline: Optional[Pipeline] = None, stop_event: Optional[threading.Event] = None,
                 ponderhit_event: Optional[threading.Event] = None) -> None:
        """``stop_event`` and ``ponderhit_event``: the caller's, when ``stop`` or ``ponderhit`` may come before the
        search is made."""
        self.game, self.tree, self.evaluator, self.params = game, tree, evaluator, params
        self.time_manager = time_manager if time_manager is not None else TimeManager()
        self.tablebases = tablebases if tablebases is not None and tablebases.loaded else None
        self.on_info, self.on_string = on_info, on_string
        self.rng = random.Random(0)
        # The engine's pipeline outlives its searches (its thread starts once); a search without one owns its own.
        self._own_pipeline = pipeline is None
        self.pipeline = pipeline if pipeline is not None else Pipeline(evaluator, params.threads, game)
        self.stop_event = stop_event if stop_event is not None else threading.Event()
        self.ponderhit_event = ponderhit_event if ponderhit_event is not None else threading.Event()
        self.probe_finds = ProbeFinds()  # the root probe's vetoes and proven mate lines, for this search

    # ----------------------------------------------------------------- public

    def run(self, limits: Limits) -> tuple[Optional[Any], Optional[Any]]:
        """Search until a limit, ``stop`` or (when pondering) ``ponderhit`` plus the budget.

        Returns (best move, expected reply); (None, None) when the game is already over.
        """
        # The tree is acyclic and freed by reference counting; a cycle-collector pass over a
        # large tree would stall the search (and stop, and the clock) for tens of milliseconds.
        gc_enabled = gc.isenabled()
        gc.disable()
        try:
            return self._run(limits)
        finally:
            gc.freeze()  # survivors (the tree) are never scanned again
            if gc_enabled:
                gc.enable()

    def _run(self, limits: Limits) -> tuple[Optional[Any], Optional[Any]]:
        p = self.params
        self.policy = (Uct(p.uct_c) if self.evaluator.uct
                       else Puct(p.cpuct, p.cpuct_base, p.cpuct_factor, p.fpu_reduction))
        self.limits = limits
        now = time.monotonic()
        self.start = limits.received if limits.received is not None else now
        # Of the elapsed time, what went before the simulations: the wait after the go (a network loading), then
        # the root probe. Smart pruning judges the simulations' rate without both; the time manager, which learns
        # how much of its plan a move uses, without the wait alone.
        self.waited = now - self.start
        self.setup_seconds = self.waited
        self.playouts = 0
        self.depth_sum = 0
        self.seldepth = 0
        self.tree_full = False
        self.room_made = False
        workers = self.pipeline.workers
        self.memory = MemoryBudget(self.tree, p.ram_limit_mb, lambda: self.evaluator.memory_bytes() + (
            workers.memory_bytes() if workers is not None else 0))
        self.last_info = self.start
        # Positions of the tree unpacked for a network's history: the leaves of a batch share the top of the tree.
        self._boards = Boards(self.game, self.tree.history)
        root = self.tree.root
        if limits.searchmoves or self.tree.restricted:
            self.tree.clear()
            self.tree.restricted = bool(limits.searchmoves)
            root = self.tree.root
        if root.n and self.memory.over() and not self.memory.make_room():
            # The reused tree alone fills RamLimitMb (lowered since, say) and nothing in it can go: start afresh
            # rather than answer every search from a frozen tree.
            self.on_string("RamLimitMb: the reused tree is too large; starting a new tree")
            self.tree.clear()
            root = self.tree.root
        if root.edges is None and not self._expand_root(root, limits.searchmoves):
            return None, None
        self.pondering = limits.ponder
        self.budget = self._budget()
        self.probe_finds = ProbeFinds()
        if root.edge_count() > 1:
            probe_start = time.monotonic()
            self._probe_tactics(root)
            self.setup_seconds += time.monotonic() - probe_start
        max_playouts = limits.nodes if limits.nodes is not None else (p.simulations or None)
        self.max_playouts = max_playouts
        if self.pipeline.workers is not None:
            self._run_with_workers()
        elif self.evaluator.batch_size > 1 and not self.evaluator.uct:
            self._run_batched()
        else:
            self._run_serial()
        if root.edge_count() > 1 and not self.stop_event.is_set():
            self.time_manager.record(self.budget, time.monotonic() - self.start - self.waited)
        best = self.best_child()
        self._report(final=True)
        if best is None:
            return None, None
        move_from_id = self.game.move_from_id
        if best.children:
            reply = move_from_id(best.ranked_children()[0].move)
        else:  # a mate the probe proved: the tree never searched its line
            line = self.probe_finds.lines.get(best.move)
            reply = move_from_id(line[0]) if line else None
        return move_from_id(best.move), reply

    def planned_seconds(self) -> Optional[float]:
        """The time the last search planned to take (None: no time limit)."""
        return self.budget.target

    def best_child(self) -> Optional[Node]:
        """The move to play; before any child is visited, the best prior."""
        root = self.tree.root
        if not root.children and root.edge_count():
            root.add_child(root.move_id(0))
        return self.ranked_root()[0] if root.children else None

    def ranked_root(self) -> list[Node]:
        """The root's moves, best first: by the tree, but a move the root probe vetoed comes after the others until
        the tree has proven it or given it ``VETO_LAPSE_VISITS`` visits of its own."""
        root = self.tree.root
        vetoed = self.probe_finds.vetoed
        if vetoed:
            vetoed = frozenset(c.move for c in root.children
                               if c.move in vetoed and c.proven is None and c.n < VETO_LAPSE_VISITS)
        return root.ranked_children(vetoed)

    def move_stats(self) -> list[MoveStat]:
        """Root move statistics, worst first, for diagnostics (VerboseMoveStats)."""
        coeff = self.policy.exploration(self.tree.root) if isinstance(self.policy, Puct) else 0.0
        return move_stats(self.tree.root, self.game, coeff)

    # ----------------------------------------------------------------- loops

    def _run_serial(self) -> None:
        simulate = self._simulate
        stop = self.stop_event
        root = self.tree.root
        while not stop.is_set():
            if self._idle_until_stop(root):
                if self._check_limits():
                    break
                continue
            for _ in range(CHECK_EVERY):
                simulate()
                if stop.is_set() or self.max_playouts is not None and self.playouts >= self.max_playouts:
                    break
            if self._check_limits():
                break

    def _idle_until_stop(self, root: Node) -> bool:
        """With the root proven or the tree at RamLimitMb there is nothing left to search, but
        'go infinite' and 'go ponder' must still wait for stop or ponderhit: idle briefly instead
        of spinning."""
        if (self.limits.infinite or self.pondering) and (root.proven is not None or self._tree_is_full()):
            self.stop_event.wait(0.02)
            return True
        return False

    def _tree_is_full(self) -> bool:
        """Has the tree (with the evaluators' caches) reached RamLimitMb with nothing left to free? At the cap the
        search frees the lines it has given up on and goes on (engine/search/memory.py); says so once per search."""
        if self.tree_full:
            return True
        memory = self.memory
        if not memory.over():
            return False
        freed = memory.make_room(self.stop_event.is_set)
        if freed:
            if not self.room_made:
                self.room_made = True
                self.on_string(tree_memory_note(self.tree, self.params.ram_limit_mb, freed))
            return False
        if self.stop_event.is_set():
            return False
        self.tree_full = True
        self.on_string(f"RamLimitMb reached ({self.params.ram_limit_mb} MB, {self.tree.nodes} nodes): "
                       "nothing left to free, the tree stops growing")
        return True

    def _run_batched(self) -> None:
        """Overlapped, two batches in flight: one evaluated on the evaluator thread, one being gathered. Run on
        this thread, each batch is backed up as soon as it is evaluated, before the next is gathered."""
        stop = self.stop_event
        pending: Optional[tuple[Future, list]] = None
        root = self.tree.root
        try:
            # Limits are checked before each gather, the first included: a nearly spent clock is
            # answered from the tree as it stands, without a batch's delay.
            while not stop.is_set() and not self._check_limits():
                if self._idle_until_stop(root):
                    continue
                batch = self._gather(self._batch_room(pending))
                done = None
                if pending is not None:
                    if not self._wait(pending[0]):
                        self._abandon([path for path, _ in batch])  # gathered, never to be evaluated
                        break
                    done, pending = pending, None
                if batch:
                    # The next batch starts before the finished one is backed up, so the network
                    # never idles while the tree takes in its results.
                    prepared = self.evaluator.prepare([leaf for _, leaf in batch])
                    pending = (self._start_evaluation(prepared, len(batch)), batch)
                if done is not None:
                    self._finish_batch(*done)
                if pending is not None and not self.pipeline.overlap:
                    # Already evaluated: held back, it would gain nothing and its in-flight visits would steer the
                    # next gather off the best lines. lc0's single search thread, too, backs up before gathering.
                    done, pending = pending, None
                    self._finish_batch(*done)
            if pending is not None and not stop.is_set() and self._wait(pending[0]):
                self._finish_batch(*pending)
                pending = None
        finally:
            if pending is not None:
                self._abandon([path for path, _ in pending[1]])

    def _run_with_workers(self) -> None:
        """Threads >= 2 with an evaluator copied into worker processes (engine/search/workers.py): new leaves go to the
        workers in chunks, each worker kept a chunk ahead, and between their answers this thread works out a few
        leaves itself; answers are backed up as they come."""
        pool = self.pipeline.workers
        game, evaluator, tablebases = self.game, self.evaluator, self.tablebases
        boards = None
        if evaluator.needs_history:
            before_root = self.tree.history + [self.tree.root_state()]
            boards = Boards(game, before_root)
            history = [game.pack(board) for board in before_root]
        self.pipeline.configure_workers(self.params, tablebases.path if tablebases is not None else "",
                                        history if boards is not None else None)
        # A network's call costs the same for a few leaves as for one: this thread takes whole chunks too.
        local = CHUNK_LEAVES if evaluator.batch_size > 1 else LOCAL_LEAVES
        stop = self.stop_event
        root = self.tree.root
        sent: dict[int, list[list[Node]]] = {}  # chunk tag -> the paths of its leaves

        def take_answers(timeout: float) -> None:
            for tag, expansions in pool.answers(timeout):
                paths = sent.pop(tag, None)  # None: a chunk of an earlier search, abandoned
                if paths is not None and expansions is None:
                    self._abandon(paths)  # its worker died
                elif paths is not None:
                    for path, expansion in zip(paths, expansions):
                        self._take(path, expansion)
        try:
            while not stop.is_set() and not self._check_limits():
                if self._idle_until_stop(root):
                    continue
                # Poll the pipes only when an answer can come. A poll lets go of the GIL for a microsecond and takes
                # it straight back: the input thread, woken each time, never wins it, and a search that only meets
                # settled positions (a proven draw down its best line) would leave isready and stop unanswered.
                if sent or pool.starting:
                    take_answers(0.0)
                worker = pool.free_worker()
                while worker is not None:
                    paths = self._gather_new(CHUNK_LEAVES, CHUNK_LEAVES)
                    if not paths:
                        break
                    sent[pool.send(worker, [self._job(path, boards) for path in paths])] = paths
                    worker = pool.free_worker()
                # Rather than wait for the workers, this thread may try a few more descents to find work of its own.
                paths = self._gather_new(local, LOCAL_COLLISIONS)
                if paths:
                    expansions = expand_positions(game, evaluator, tablebases,
                                                  [self._job(path, boards) for path in paths], boards)
                    for path, expansion in zip(paths, expansions):
                        self._take(path, expansion)
                if not paths and (sent or pool.starting):
                    # Nothing to do here (go nodes all sent, collisions, settled positions only): wait for answers.
                    # The wait lets go of the GIL long enough for the input thread to take it.
                    take_answers(0.001)
            # The chunks still out are waited for (go nodes counts them), but never past the hard limit, nor for
            # long without one: a worker that stopped answering must not cost a go its bestmove.
            waited_until = time.monotonic() + ANSWER_WAIT_SECONDS
            while sent and not stop.is_set() and not self._past_hard_limit() and time.monotonic() < waited_until:
                take_answers(0.002)
        finally:
            for paths in sent.values():
                self._abandon(paths)

    def _gather_new(self, room: int, collisions: int) -> list[list[Node]]:
        """Up to ``room`` descents to nodes that wait for their first visit, their visits left in flight; proven
        nodes met on the way are backed up at once. Ends early after ``collisions`` descents into a node already
        waiting, or ``room`` proven nodes. Collided descents keep their visits in flight until the end, so that
        the next ones turn elsewhere (as :meth:`_gather` does)."""
        paths: list[list[Node]] = []
        collided: list[list[Node]] = []
        settled = 0
        root = self.tree.root
        max_playouts = self.max_playouts
        while (len(paths) < room and len(collided) < collisions and settled < room and root.proven is None
               and not self.stop_event.is_set() and (max_playouts is None or self.playouts < max_playouts)):
            path = self._descend(True)
            node = path[-1]
            if node.in_flight > 1 and node.proven is None:
                collided.append(path)
                continue
            self._count(len(path) - 1)
            if node.proven is not None:
                self._backup(path, node.proven, 1.0 if node.proven == DRAW else 0.0, False, True)
                settled += 1
            else:
                paths.append(path)
        for path in collided:
            self._release(path)
        return paths

    def _job(self, path: list[Node], boards: Optional[Boards]) -> Job:
        """What a worker needs to work out the leaf ``path[-1]``: its parent's position and the move (the root's own
        position when the root is the leaf); with ``boards`` (a network's history), the positions between the root
        and the leaf."""
        if len(path) == 1:
            return path[0].state, None, ()
        parent = self._parent_state(path)
        return parent, path[-1].move, [n.state for n in path[1:-1]] if boards is not None else ()

    def _parent_state(self, path: list[Node]) -> Any:
        """The packed position of the leaf's parent ``path[-2]``. A node keeps its position only once it has children
        (the root always): most nodes are leaves that never get one, and a position is a fifth of a node's memory.
        So at its first child a node's position is worked out from its parent's, which has one."""
        parent = path[-2]
        if parent.state is None:
            parent.state = self.game.pack(self.game.successor(path[-3].state, parent.move))
        return parent.state

    def _take(self, path: list[Node], expansion: Expansion) -> None:
        """Settle or attach the worked-out leaf ``path[-1]`` (its visit in flight) and back it up."""
        state, reversible, result, plies, edges, value, draw, mate = expansion
        node = path[-1]
        if result is None and self._repeated(path, reversible, lambda: self.game.packed_key(state)):
            result, plies = DRAW, 0
        if result is not None:
            if plies == TB_PLIES and self.tablebases is not None:
                self.tablebases.hits += 1
            node.proven, node.plies = -result, plies   # terminal: a result 0 plies (or a tablebase's) away
            self._backup(path, node.proven, 1.0 if node.proven == DRAW else 0.0, True, True)
            return
        self._attach(path, edges, value, draw, mate, True)

    def _start_evaluation(self, prepared: Any, leaves: int) -> Future:
        return self.pipeline.start(prepared, leaves)

    def _batch_room(self, pending: Optional[tuple[Future, list]]) -> int:
        room = self.params.minibatch_size
        if self.max_playouts is not None:
            in_flight = len(pending[1]) if pending else 0
            room = min(room, self.max_playouts - self.playouts - in_flight)
        per_leaf = self.pipeline.seconds_per_leaf
        if not self.pipeline.overlap and per_leaf and self.budget.hard is not None:
            # Run on this thread, a batch cannot be dropped at the hard limit: no more leaves than time is left for.
            left = self.budget.hard - (time.monotonic() - self.start)
            room = min(room, max(1, int(left / per_leaf)))
        return max(room, 0)

    def _wait(self, future: Future) -> bool:
        """Wait for an evaluation, but never past ``stop`` or the hard time limit: with a clock
        near zero, one batch's wait is more than the increment gives back."""
        while True:
            try:
                future.result(timeout=0.002)
                return True
            except TimeoutError:
                if self.stop_event.is_set() or self._past_hard_limit():
                    return False

    def _past_hard_limit(self) -> bool:
        hard = self.budget.hard
        return hard is not None and time.monotonic() - self.start >= hard

    # ----------------------------------------------------------------- simulation

    def _descend(self, track_in_flight: bool) -> list[Node]:
        """The path from the root to the node this simulation stops at."""
        node = self.tree.root
        path = [node]
        append = path.append
        select = self.policy.select
        if track_in_flight:
            node.in_flight += 1
        while node.edges is not None and node.proven is None:
            node = select(node)
            append(node)
            if track_in_flight:
                node.in_flight += 1
        return path

    def _visit_new(self, path: list[Node]) -> Optional[Leaf]:
        """Rebuild the full state of a freshly reached node; settle it if the game is over there.

        Returns the leaf to evaluate, or None when the node is now proven (a finished game).
        """
        game = self.game
        node = path[-1]
        state = game.unpack(node.state) if len(path) == 1 else game.successor(self._parent_state(path), node.move)
        moves, ids = game.legal_moves_and_ids(state)
        result = game.result(state, moves)
        plies = 0
        if result is None and self._repeated(path, game.reversible_plies(state), lambda: game.key(state)):
            result = DRAW
        if result is None and self.tablebases is not None:
            result = self.tablebases.result(state)
            plies = TB_PLIES
        if result is not None:
            node.proven = -result
            node.plies = plies
            return None
        if self.evaluator.needs_history:
            history = self._boards.history([n.state for n in path[:-1]])
        else:
            history = ()
        leaf = Leaf(state, moves, history)
        leaf.move_ids = ids
        return leaf

    def _repeated(self, path: list[Node], plies: int, leaf_key: Callable[[], Hashable]) -> bool:
        """Has the leaf's position (repetition key ``leaf_key()``), ``plies`` plies after the last irreversible move,
        occurred since, in the tree or the game?"""
        if plies < 4:
            return False
        packed_key = self.game.packed_key
        key = leaf_key()
        i = len(path) - 2
        while i >= 0 and plies > 0:
            if packed_key(path[i].state) == key:
                return True
            i -= 1
            plies -= 1
        if plies > 0:
            keys = self.tree.history_keys
            return key in keys[max(0, len(keys) - plies):]
        return False

    def _simulate(self) -> None:
        path = self._descend(False)
        self._count(len(path) - 1)
        node = path[-1]
        if node.proven is not None:
            self._backup(path, node.proven, 1.0 if node.proven == DRAW else 0.0, False, False)
            return
        leaf = self._visit_new(path)
        if leaf is None:
            self._backup(path, node.proven, 1.0 if node.proven == DRAW else 0.0, True, False)
            return
        self.evaluator.evaluate([leaf])
        self._expand(path, leaf)

    def _gather(self, room: int) -> list[tuple[list[Node], Leaf]]:
        """Select up to ``room`` leaves for one network batch.

        It also ends after ``room`` visits that need no network (a proven node, a finished game, a
        cache hit), as lc0 caps its out-of-order evaluations: near the fifty-move rule or in a
        mating net nearly every descent ends in one, and a gather that waited for ``room`` network
        leaves ran for half a second without looking at the clock."""
        batch: list[tuple[list[Node], Leaf]] = []
        collided: list[list[Node]] = []
        settled = 0
        probe = self.evaluator.probe
        root = self.tree.root
        while (len(batch) < room and len(collided) < room and settled < room and root.proven is None
               and not self.stop_event.is_set()):
            path = self._descend(True)
            node = path[-1]
            if node.proven is not None:
                self._count(len(path) - 1)
                self._backup(path, node.proven, 1.0 if node.proven == DRAW else 0.0, False, True)
                settled += 1
                continue
            if node.in_flight > 1:
                # Already waiting for an evaluation: a collision. Its in-flight visits stay until the
                # gather ends (as lc0 does), so the next descents turn elsewhere instead of repeating it.
                collided.append(path)
                continue
            leaf = self._visit_new(path)
            self._count(len(path) - 1)
            if leaf is None:
                self._backup(path, node.proven, 1.0 if node.proven == DRAW else 0.0, True, True)
                settled += 1
            elif probe(leaf):
                self._expand(path, leaf, True)
                settled += 1
            else:
                batch.append((path, leaf))
            if self.max_playouts is not None and self.playouts >= self.max_playouts:
                break
        for path in collided:
            self._release(path)
        return batch

    def _finish_batch(self, future: Future, batch: list[tuple[list[Node], Leaf]]) -> None:
        self.evaluator.finish(future.result())
        for path, leaf in batch:
            self._expand(path, leaf, True)

    def _abandon(self, paths: list[list[Node]]) -> None:
        """Undo the in-flight visits of leaves whose results will not be used."""
        for path in paths:
            self._release(path)
            self.playouts -= 1

    @staticmethod
    def _release(path: list[Node]) -> None:
        for node in path:
            node.in_flight -= 1

    def _count(self, depth: int) -> None:
        self.playouts += 1
        self.depth_sum += depth
        if depth > self.seldepth:
            self.seldepth = depth

    def _expand(self, path: list[Node], leaf: Leaf, in_flight: bool = False, steer: bool = True) -> None:
        """Attach moves sorted by prior (a mate in one first), and back the value up (``steer``: see leaf_edges)."""
        edges, mate = leaf_edges(self.game, self.evaluator, leaf, steer)
        draw = leaf.wdl[1] if leaf.wdl is not None else 0.0
        self._attach(path, edges, leaf.value, draw, mate, in_flight)

    def _attach(self, path: list[Node], edges: bytes, value: float, draw: float, mate: bool, in_flight: bool) -> None:
        """Give the leaf ``path[-1]`` its edges and back up its value (or the mate its first move gives)."""
        node = path[-1]
        node.edges = edges
        if mate:
            child = node.add_child(node.move_id(0))
            child.proven, child.plies = WIN, 0   # checkmate there: terminal
            node.proven, node.plies = LOSS, 1
            self._backup(path, LOSS, 0.0, True, in_flight)
            return
        self._backup(path, -value, draw, False, in_flight)

    def _backup(self, path: list[Node], value: float, draw: float, proven_changed: bool,
                in_flight: bool) -> None:
        """Add one visit of ``value`` (for the player who moved into ``path[-1]``) up to the root."""
        if not path[-1].n:
            self.tree.nodes += 1
        for i in range(len(path) - 1, -1, -1):
            node = path[i]
            node.n += 1
            node.w += value
            node.d += draw
            if in_flight:
                node.in_flight -= 1
            if i and proven_changed:
                parent = path[i - 1]
                proven_changed = parent.proven is None and prove(parent)
            value = -value

    def _expand_root(self, root: Node, searchmoves: list) -> bool:
        """Expand the root outside the simulation loop; False if the game is over."""
        state = self.tree.root_state()
        moves = self.game.legal_moves(state)
        if searchmoves:
            moves = [m for m in moves if m in searchmoves] or moves
        if not moves:
            return False
        if self.tablebases is not None:
            allowed = self.tablebases.root_moves(state, moves)
            if allowed:  # search only the moves DTZ allows; rebuild the root next time
                moves = allowed
                self.tree.restricted = True
        leaf = Leaf(state, moves, list(self.tree.history) if self.evaluator.needs_history else ())
        if not self.evaluator.probe(leaf):
            began = time.perf_counter()
            self.evaluator.evaluate([leaf])
            if not self.pipeline.seconds_per_leaf:  # the first measure of what a leaf costs on this thread
                self.pipeline.observe(time.perf_counter() - began, 1)
        self._count(0)
        simulations = self._simulation_limit()
        self._expand([root], leaf, steer=simulations is None or simulations >= PROBE_MIN_SIMULATIONS)
        return True

    def _simulation_limit(self) -> Optional[int]:
        """The simulations this search may spend ('go nodes', else the Simulations option); None: no such limit."""
        return self.limits.nodes if self.limits.nodes is not None else (self.params.simulations or None)

    # ----------------------------------------------------------------- root tactics

    def _probe_tactics(self, root: Node) -> None:
        """Spend a share of the budget on exact forcing lines at the root (engine/search/root_probe.py); at a root proven
        before this search, only write out again the line of a mate the probe proved.

        For 'go movetime' and 'go infinite' a share of the time; for a search limited by simulations alone ('go
        nodes', or the Simulations option), a share of the work, counted in the probe's positions, so that it is
        reproducible node for node. On the clock its own, smaller share (TacticalClockShare: a tenth
        won 57% of 10 s + 0.1 s games against none, docs/strength.md; the python-chess probe before the compiled
        one lost them); never in ponder searches."""
        if self.pondering:
            return
        share, max_nodes = self.params.tactical_probe_share, None
        if self.budget.prune:
            share = self.params.tactical_clock_share
        if share <= 0:
            return
        simulations = self._simulation_limit()
        if self.budget.target is not None:
            span = self.budget.target * share
        elif self.limits.infinite:
            span = PROBE_UNTIMED_SECONDS
        elif simulations is not None and simulations >= PROBE_MIN_SIMULATIONS and not self.params.limit_strength:
            # The levels of UCI_LimitStrength were calibrated on the clock: their simulations stay the tree's alone.
            span = math.inf
            max_nodes = max(1, round(simulations * PROBE_NODES_PER_SIMULATION * share / max(1.0 - share, 0.05)))
        else:
            return
        state = self.tree.root_state()
        if not isinstance(state, chess.Board):
            return
        keys = self.tree.history_keys
        earlier = keys[max(0, len(keys) - state.halfmove_clock):]
        deadline = time.monotonic() + span
        # A proven mate ends the search at once: its line may take the rest of a timed search's target.
        line_deadline = self.start + self.budget.target if self.budget.target is not None else deadline
        if root.proven is not None:  # proven before this search: only a mate's line may need writing out again
            self.probe_finds = proven_mate_lines(root, state, self.game, earlier, max(deadline, line_deadline),
                                                 self.stop_event.is_set, max_nodes)
            return
        self.probe_finds = probe_root(root, state, self.game, earlier, deadline, self.stop_event.is_set,
                                      self.params.tactical_veto_cp, max_nodes, line_deadline)

    # ----------------------------------------------------------------- limits

    def _budget(self) -> Budget:
        if self.pondering or self.limits.infinite:
            return Budget(None, None, False)
        state = self.tree.root_state()
        white = bool(getattr(state, "turn", True))
        return self.time_manager.allocate(self.limits, white, self.params.move_overhead,
                                          getattr(state, "fullmove_number", 1))

    def _check_limits(self) -> bool:
        """Report periodically and decide whether to stop."""
        now = time.monotonic()
        if now - self.last_info >= INFO_INTERVAL:
            self._report()
        if self.pondering:
            if not self.ponderhit_event.is_set():
                return False
            # ponderhit: the opponent played the expected move; our clock runs from now.
            self.pondering = False
            self.start = now
            self.waited = self.setup_seconds = 0.0
            self.budget = self._budget()
        if self.limits.infinite:
            return False
        root = self.tree.root
        if root.proven is not None or self._tree_is_full():
            return True
        if self.max_playouts is not None and self.playouts >= self.max_playouts:
            return True
        limits = self.limits
        if limits.depth is not None and self.depth_sum >= limits.depth * max(self.playouts, 1):
            return True
        if limits.mate is not None:
            best = self.best_child()
            if best is not None and best.proven == WIN and (best.plies + 2) // 2 <= limits.mate:
                return True
        elapsed = now - self.start
        return clock_says_stop(self.budget, root, elapsed, elapsed - self.setup_seconds, self.playouts,
                               self.params.smart_pruning)

    # ----------------------------------------------------------------- output

    def _report(self, final: bool = False) -> None:
        now = time.monotonic()
        self.last_info = now
        self.on_info(self.lines(now))

    def lines(self, now: Optional[float] = None) -> list[LineInfo]:
        """The search's ``info`` lines now, one per MultiPV move."""
        now = time.monotonic() if now is None else now
        return root_lines(self.tree.root, self.ranked_root(), self.game, self.params.multipv,
                          max(now - self.start, 1e-6), self.playouts, self.depth_sum, self.seldepth,
                          self.tablebases.hits if self.tablebases is not None else 0, self.probe_finds.lines)

    def close(self) -> None:
        if self._own_pipeline:
            self.pipeline.close()

