"""A ``go`` from its limits to its best move: the search loop over the compiled tree, the limits, the root probe's
share, and what the search reports.

The tree (engine/search/tree.py) does the work of a simulation in compiled code: descents by PUCT, the positions
they reach, finished games, cached evaluations, and the backup of evaluated leaves. This module decides how many
leaves go out at once and to whom, and when to stop. A network gets batches of input planes: on one core each batch
is evaluated and backed up before the next is gathered; with ``Threads`` N, N batches are in flight on N threads of
onnxruntime (which lets go of the interpreter's lock) while this thread gathers and backs up. An evaluator written
in Python gets python-chess boards: on this thread, or with ``Threads`` of 2 or more also in worker processes
(engine/search/workers.py), which answer chunks of leaves while this thread works out some of its own.
"""

from __future__ import annotations

import gc
import math
import threading
import time
from typing import Any, Callable, Optional

import chess

from ..board import convert
from ..board.moves import move_ids as python_chess_ids
from ..compiled import CORE
from ..evaluators.base import Evaluator, Leaf, cache_entries
from ..params import Params
from .memory import MemoryBudget, tree_memory_note
from .mop_up import steer as steer_lone_king_ending
from .nodes import IN_FLIGHT_MOST
from .pipeline import Pipeline
from .report import LineInfo, MoveStat, move_stats, root_lines
from .root_probe import ProbeFinds, probe_root, proven_mate_lines
from .stopping import clock_says_stop
from .timeman import Budget, Limits, TimeManager
from .tree import WIN, Batch, Node, Tree
from .workers import CHUNK_LEAVES

INFO_INTERVAL = 1.0        # seconds between periodic info lines
PROBE_UNTIMED_SECONDS = 1.0  # root probe of 'go infinite', which has no budget
# A timed probe given less than this is not run: so little finds nothing the tree would miss. When its transposition
# table was still allocated afresh each move (2 to 10 ms), a probe squeezed into a clock's last moments (a few ms, or
# none below MoveOverhead) overran the move it could not help, and at 1 s + 0.01 s on a busy machine each such move
# cost more than the increment until the clock fell.
PROBE_MIN_SECONDS = 0.005
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
CACHE_ENTRY_BYTES = 200      # what a cached evaluation costs when no node holds it: its slot and its block


class Search:
    """Runs searches on a :class:`Tree` with an evaluator; one search at a time."""

    def __init__(self, tree: Tree, evaluator: Evaluator, params: Params,
                 on_info: Callable[[list[LineInfo]], None] = lambda lines: None,
                 on_string: Callable[[str], None] = lambda text: None,
                 tablebases: Optional[Any] = None, time_manager: Optional[TimeManager] = None,
                 pipeline: Optional[Pipeline] = None, stop_event: Optional[threading.Event] = None,
                 ponderhit_event: Optional[threading.Event] = None) -> None:
        """``stop_event`` and ``ponderhit_event``: the caller's, when ``stop`` or ``ponderhit`` may come before the
        search is made."""
        self.tree, self.evaluator, self.params = tree, evaluator, params
        self.time_manager = time_manager if time_manager is not None else TimeManager()
        self.tablebases = tablebases if tablebases is not None and tablebases.loaded else None
        self.on_info, self.on_string = on_info, on_string
        # The engine's pipeline outlives its searches (its threads start once); a search without one owns its own.
        self._own_pipeline = pipeline is None
        self.pipeline = pipeline if pipeline is not None else Pipeline(evaluator, params.threads)
        self.stop_event = stop_event if stop_event is not None else threading.Event()
        self.ponderhit_event = ponderhit_event if ponderhit_event is not None else threading.Event()
        self.probe_finds = ProbeFinds()  # the root probe's vetoes and proven mate lines, for this search
        self.budget = Budget(None, None, False)

    # ----------------------------------------------------------------- public

    @property
    def playouts(self) -> int:
        return self.tree.playouts

    def run(self, limits: Limits) -> tuple[Optional[chess.Move], Optional[chess.Move]]:
        """Search until a limit, ``stop`` or (when pondering) ``ponderhit`` plus the budget.

        Returns (best move, expected reply); (None, None) when the game is already over.
        """
        # The Python objects are few and long-lived; a cycle-collector pass would stall the search (and stop, and the
        # clock) for nothing.
        gc_enabled = gc.isenabled()
        gc.disable()
        try:
            return self._run(limits)
        finally:
            if gc_enabled:
                gc.enable()

    def _run(self, limits: Limits) -> tuple[Optional[chess.Move], Optional[chess.Move]]:
        p = self.params
        tree, evaluator = self.tree, self.evaluator
        self.limits = limits
        now = time.monotonic()
        self.start = limits.received if limits.received is not None else now
        # Of the elapsed time, what went before the simulations: the wait after the go (a network loading), then
        # the root probe. Smart pruning judges the simulations' rate without both; the time manager, which learns
        # how much of its plan a move uses, without the wait alone.
        self.waited = now - self.start
        self.setup_seconds = self.waited
        self.tree_full = False
        self.room_made = False
        self.max_playouts = limits.nodes if limits.nodes is not None else (p.simulations or None)
        simulations = self._simulation_limit()
        workers = self.pipeline.workers
        self.cache_size = cache_entries(p, CACHE_ENTRY_BYTES) if evaluator.planes else 0
        tree.configure(p.cpuct, p.cpuct_base, p.cpuct_factor, p.fpu_reduction, evaluator.uct, p.uct_c,
                       evaluator.needs_history, self.cache_size, self.tablebases,
                       simulations is None or simulations >= PROBE_MIN_SIMULATIONS,
                       (float(p.policy_temperature), evaluator.prior_floor()) if evaluator.planes else None)
        self.memory = MemoryBudget(tree, p.ram_limit_mb, lambda: (
            evaluator.memory_bytes() + (workers.memory_bytes() if workers is not None else 0)))
        self.last_info = self.start
        if limits.searchmoves or tree.restricted:
            tree.clear()
        root = tree.root_node
        if root.n and self.memory.over() and not self.memory.make_room():
            # The reused tree alone fills RamLimitMb (lowered since, say) and nothing in it can go: start afresh
            # rather than answer every search from a frozen tree.
            self.on_string("RamLimitMb: the reused tree is too large; starting a new tree")
            tree.clear()
            root = tree.root_node
        if not root.expanded and not self._expand_root(limits.searchmoves):
            return None, None
        self.pondering = limits.ponder
        self.budget = self._budget()
        self.probe_finds = ProbeFinds()
        if root.edge_count() > 1:
            probe_start = time.monotonic()
            self._probe_tactics()
            self.setup_seconds += time.monotonic() - probe_start
        if workers is not None:
            self._run_with_workers()
        elif evaluator.planes:
            self._run_network()
        else:
            self._run_here()
        if root.edge_count() > 1 and not self.stop_event.is_set():
            self.time_manager.record(self.budget, time.monotonic() - self.start - self.waited)
        best = self.best_child()
        self._report(final=True)
        if best is None:
            return None, None
        if best.children:
            reply = tree.chess_line([best.move, best.ranked_children()[0].move])[1]
        else:  # a mate the probe proved: the tree never searched its line
            line = self.probe_finds.lines.get(best.move)
            reply = tree.chess_line([best.move, line[0]])[1] if line else None
        return tree.chess_move(best.move), reply

    def planned_seconds(self) -> Optional[float]:
        """The time the last search planned to take (None: no time limit)."""
        return self.budget.target

    def best_child(self) -> Optional[Node]:
        """The move to play; before any child is visited, the best prior."""
        root = self.tree.root_node
        if not root.children and root.edge_count():
            self.tree.expand_root_fully()
        return self.ranked_root()[0] if root.children else None

    def ranked_root(self) -> list[Node]:
        """The root's moves, best first: by the tree, but a move the root probe vetoed comes after the others until
        the tree has proven it or given it ``VETO_LAPSE_VISITS`` visits of its own."""
        root = self.tree.root_node
        vetoed = self.probe_finds.vetoed
        if vetoed:
            vetoed = frozenset(c.move for c in root.children
                               if c.move in vetoed and c.proven is None and c.n < VETO_LAPSE_VISITS)
        return root.ranked_children(vetoed)

    def move_stats(self) -> list[MoveStat]:
        """Root move statistics, worst first, for diagnostics (VerboseMoveStats)."""
        tree = self.tree
        coeff = 0.0 if self.evaluator.uct else tree.exploration(tree.root)
        return move_stats(tree, coeff)

    # ----------------------------------------------------------------- the root

    def _expand_root(self, searchmoves: list) -> bool:
        """Evaluate the root outside the loops (its moves cut down to ``searchmoves`` and, with tablebases, to those
        keeping the best result); False if the game is over."""
        tree = self.tree
        state = tree.root_state()
        moves = list(state.legal_moves)
        allowed = [m for m in moves if m in searchmoves] if searchmoves else []
        if allowed:
            moves = allowed
        if not moves:
            return False
        if self.tablebases is not None:
            kept = self.tablebases.root_moves(state, moves)
            if kept:  # search only the moves DTZ allows; rebuild the root next time
                moves, allowed = kept, kept
        if allowed:
            tree.restrict_root(allowed)
        began = time.perf_counter()
        try:
            batch = self._batch(1)
            self._gather(batch, 1)
            if batch.size:
                self._evaluate_here(batch)
        finally:
            tree.lift_restriction()
        if not self.pipeline.seconds_per_leaf:  # the first measure of what a leaf costs on this thread
            self.pipeline.observe(time.perf_counter() - began, 1)
        return True

    def _simulation_limit(self) -> Optional[int]:
        """The simulations this search may spend ('go nodes', else the Simulations option); None: no such limit."""
        return self.limits.nodes if self.limits.nodes is not None else (self.params.simulations or None)

    # ----------------------------------------------------------------- loops

    def _batch(self, room: int) -> Batch:
        """A batch for ``room`` leaves (with input planes for a network)."""
        return Batch(room, self.evaluator.planes)

    def _gather(self, batch: Batch, room: int, limit: int = -1, collisions: int = -1) -> int:
        """The tree's gather (one method, so that ``bench phases`` can time it)."""
        return self.tree.gather(batch, room, limit, collisions)

    def _limit(self) -> int:
        return self.max_playouts if self.max_playouts is not None else -1

    def _run_network(self) -> None:
        """Batches of input planes: on one core each is evaluated here and backed up before the next is gathered, as
        lc0's single search thread does; on more, by threads of their own (``_run_network_threads``)."""
        if self.pipeline.overlap:
            self._run_network_threads()
            return
        tree, stop = self.tree, self.stop_event
        root = tree.root_node
        room = max(1, int(self.params.minibatch_size))
        batch = self._batch(room)
        # Limits are checked before each gather, the first included: a nearly spent clock is answered from the tree
        # as it stands, without a batch's delay.
        while not stop.is_set() and not self._check_limits():
            if self._idle_until_stop(root):
                continue
            size = self._gather(batch, self._room(room), self._limit())
            if size:
                self._finish_network(batch, self.pipeline.evaluate(batch.input_planes(), size))

    def _run_network_threads(self) -> None:
        """``Pipeline.threads`` threads, each gathering a batch, running the network on it (onnxruntime lets go of the
        interpreter's lock, so they run at once) and backing it up, while this thread keeps the limits and reports.
        The tree is one: a lock keeps its gathers and finishes one at a time. At a limit the batches out are waited
        for, but never past ``stop`` or the hard time limit: those are abandoned (their visits in flight undone) and
        the threads drop their results when they come."""
        tree, stop = self.tree, self.stop_event
        root = tree.root_node
        # Each thread's batch is in flight at once, and the gathering one's collisions too: the root counts them
        # all in a 16-bit column.
        room = max(1, min(int(self.params.minibatch_size), IN_FLIGHT_MOST // (self.pipeline.threads + 2)))
        lock = threading.Lock()
        halt = threading.Event()   # no more gathers (a limit), and results dropped (with ``dropped``)
        dropped = threading.Event()
        out: set[Batch] = set()    # batches gathered and not yet backed up
        failed: list[Exception] = []   # a thread's error: the others stop, and this thread raises it

        def work() -> None:
            batch = self._batch(room)
            while True:
                with lock:
                    if halt.is_set():
                        return
                    size = self._gather(batch, self._room(room), self._limit())
                    if size:
                        out.add(batch)
                if not size:   # nothing to evaluate now: proven, collisions only, or every 'go nodes' leaf out
                    time.sleep(0.001)
                    continue
                outputs = self.evaluator.run_planes(batch.input_planes())
                with lock:
                    if dropped.is_set():
                        return
                    self._finish_network(batch, outputs)
                    out.discard(batch)

        def guarded() -> None:
            try:
                work()
            except Exception as e:   # (onnxruntime out of memory, say): without it the search would wait forever
                failed.append(e)
                halt.set()
        threads = [threading.Thread(target=guarded, name="arbor-search", daemon=True)
                   for _ in range(self.pipeline.threads)]
        for thread in threads:
            thread.start()
        try:
            while not stop.is_set() and not failed:
                with lock:
                    done = self._check_limits()
                    idle = not done and self._nothing_to_search(root)
                if done:
                    break
                stop.wait(0.02 if idle else 0.002)
            halt.set()
            while not stop.is_set() and not failed and not self._past_hard_limit():
                with lock:
                    if not out:
                        break
                stop.wait(0.001)
        finally:
            with lock:
                halt.set()
                dropped.set()
                for batch in out:
                    tree.abandon(batch)
                out.clear()
        if failed:
            raise failed[0]

    def _room(self, room: int) -> int:
        """Leaves for the next batch: ``MinibatchSize``, no more than ``go nodes`` leaves and, evaluated on this
        thread against a hard time limit, than there is time left for."""
        if self.max_playouts is not None:
            room = min(room, self.max_playouts - self.tree.playouts)
        per_leaf = self.pipeline.seconds_per_leaf
        if not self.pipeline.overlap and per_leaf and self.budget.hard is not None:
            left = self.budget.hard - (time.monotonic() - self.start)
            room = min(room, max(1, int(left / per_leaf)))
        return max(room, 1)

    def _finish_network(self, batch: Batch, outputs: tuple) -> None:
        policy, values, draws = outputs
        p = self.params
        evaluator = self.evaluator
        self.tree.finish(batch, policy, values, draws, evaluator.columns, float(p.policy_temperature),
                         evaluator.prior_floor())
        for i in batch.steered() if batch.steer_count else ():
            value, draw, priors = self.tree.stashed(batch, i)
            self._finish_python(batch, i, value, draw, priors)

    def _finish_python(self, batch: Batch, i: int, value: float, draw: float, priors: list) -> None:
        """Back up an evaluation made in Python (or a network's, of a lone king's ending: steered first)."""
        tree = self.tree
        if batch.is_steered(i):
            board = tree.leaf_board(batch, i)
            moves = [convert.chess_move(board, m) for m in tree.leaf_moves(batch, i)]
            steered = steer_lone_king_ending(board, moves, value)
            if steered is not None:
                priors, value = steered
        tree.finish_leaf(batch, i, value, draw, priors)

    def _evaluate_here(self, batch: Batch) -> None:
        """Evaluate ``batch`` on this thread, whatever the evaluator."""
        if self.evaluator.planes:
            self._finish_network(batch, self.pipeline.evaluate(batch.input_planes(), batch.size))
            return
        leaves = self._leaves(batch)
        self.evaluator.evaluate(leaves)
        for i, leaf in enumerate(leaves):
            self._finish_python(batch, i, leaf.value, leaf.wdl[1] if leaf.wdl is not None else 0.0, leaf.priors)

    def _leaves(self, batch: Batch) -> list[Leaf]:
        """The batch's leaves as python-chess boards and moves, for an evaluator written in Python."""
        tree = self.tree
        leaves = []
        for i in range(batch.size):
            board = tree.leaf_board(batch, i)
            moves = [convert.chess_move(board, m) for m in tree.leaf_moves(batch, i)]
            leaf = Leaf(board, moves, ())
            leaf.move_ids = python_chess_ids(moves)
            leaves.append(leaf)
        return leaves

    def _run_here(self) -> None:
        """An evaluator written in Python, on this thread: ``MinibatchSize`` leaves a call when it takes batches."""
        tree, stop = self.tree, self.stop_event
        root = tree.root_node
        room = max(1, int(self.params.minibatch_size)) if self.evaluator.batch_size > 1 else 1
        batch = self._batch(room)
        while not stop.is_set() and not self._check_limits():
            if self._idle_until_stop(root):
                continue
            if self._gather(batch, self._room(room), self._limit()):
                self._evaluate_here(batch)

    def _run_with_workers(self) -> None:
        """Threads >= 2 with an evaluator copied into worker processes (engine/search/workers.py): leaves go to the
        workers in chunks, each worker kept a chunk ahead, and between their answers this thread works out a few
        leaves itself; answers are backed up as they come."""
        pool = self.pipeline.workers
        tree, stop = self.tree, self.stop_event
        self.pipeline.configure_workers(self.params)
        local = CHUNK_LEAVES if self.evaluator.batch_size > 1 else LOCAL_LEAVES
        root = tree.root_node
        sent: dict[int, Batch] = {}   # chunk tag -> its leaves
        spare: list[Batch] = []

        def take_answers(timeout: float) -> None:
            for tag, answers in pool.answers(timeout):
                batch = sent.pop(tag, None)  # None: a chunk of an earlier search, abandoned
                if batch is None:
                    continue
                if answers is None:
                    tree.abandon(batch)  # its worker died
                else:
                    for i, (value, draw, priors) in enumerate(answers):
                        self._finish_python(batch, i, value, draw, priors)
                spare.append(batch)

        def fresh() -> Batch:
            return spare.pop() if spare else self._batch(max(CHUNK_LEAVES, LOCAL_COLLISIONS))
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
                    batch = fresh()
                    if not self._gather(batch, CHUNK_LEAVES, self._limit()):
                        spare.append(batch)
                        break
                    sent[pool.send(worker, [self._job(batch, i) for i in range(batch.size)])] = batch
                    worker = pool.free_worker()
                # Rather than wait for the workers, this thread may try a few more descents to find work of its own.
                batch = fresh()
                if self._gather(batch, local, self._limit(), LOCAL_COLLISIONS):
                    self._evaluate_here(batch)
                    spare.append(batch)
                elif sent or pool.starting:
                    spare.append(batch)
                    # Nothing to do here (go nodes all sent, collisions, settled positions only): wait for answers.
                    # The wait lets go of the GIL long enough for the input thread to take it.
                    take_answers(0.001)
                else:
                    spare.append(batch)
            # The chunks still out are waited for (go nodes counts them), but never past the hard limit, nor for
            # long without one: a worker that stopped answering must not cost a go its bestmove.
            waited_until = time.monotonic() + ANSWER_WAIT_SECONDS
            while sent and not stop.is_set() and not self._past_hard_limit() and time.monotonic() < waited_until:
                take_answers(0.002)
        finally:
            for batch in sent.values():
                tree.abandon(batch)

    def _job(self, batch: Batch, i: int) -> tuple:
        """What a worker needs to evaluate leaf ``i``: its position's parts and its moves."""
        return self.tree.leaf_fields(batch, i), self.tree.leaf_moves(batch, i)

    def _idle_until_stop(self, root: Node) -> bool:
        """With the root proven or the tree at RamLimitMb there is nothing left to search, but 'go infinite' and 'go
        ponder' must still wait for stop or ponderhit: idle briefly instead of spinning."""
        if self._nothing_to_search(root):
            self.stop_event.wait(0.02)
            return True
        return False

    def _nothing_to_search(self, root: Node) -> bool:
        return (self.limits.infinite or self.pondering) and (root.proven is not None or self._tree_is_full())

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
                self.on_string(tree_memory_note(self.tree, memory.limit_mb, freed))
            return False
        if self.stop_event.is_set():
            return False
        self.tree_full = True
        self.on_string(f"RamLimitMb reached ({memory.limit_mb} MB, {self.tree.visited} nodes): "
                       "nothing left to free, the tree stops growing")
        return True

    def _past_hard_limit(self) -> bool:
        hard = self.budget.hard
        return hard is not None and time.monotonic() - self.start >= hard

    # ----------------------------------------------------------------- root tactics

    def _probe_tactics(self) -> None:
        """Spend a share of the budget on exact forcing lines at the root (engine/search/root_probe.py); at a root
        proven before this search, only write out again the line of a mate the probe proved.

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
            if span < PROBE_MIN_SECONDS:
                return
        elif self.limits.infinite:
            span = PROBE_UNTIMED_SECONDS
        elif simulations is not None and simulations >= PROBE_MIN_SIMULATIONS and not self.params.limit_strength:
            # The levels of UCI_LimitStrength were calibrated on the clock: their simulations stay the tree's alone.
            span = math.inf
            max_nodes = max(1, round(simulations * PROBE_NODES_PER_SIMULATION * share / max(1.0 - share, 0.05)))
        else:
            return
        tree = self.tree
        state = tree.root_state()
        earlier = tree.earlier_keys()
        deadline = time.monotonic() + span
        # A proven mate ends the search at once: its line may take the rest of a timed search's target.
        line_deadline = self.start + self.budget.target if self.budget.target is not None else deadline
        if tree.root_node.proven is not None:  # proven before this search: only a mate's line may need writing
            self.probe_finds = proven_mate_lines(tree, state, earlier, max(deadline, line_deadline),
                                                 self.stop_event.is_set, max_nodes)
            return
        self.probe_finds = probe_root(tree, state, earlier, deadline, self.stop_event.is_set,
                                      self.params.tactical_veto_cp, max_nodes, line_deadline)

    # ----------------------------------------------------------------- limits

    def _budget(self) -> Budget:
        if self.pondering or self.limits.infinite:
            return Budget(None, None, False)
        state = self.tree.root_state()
        return self.time_manager.allocate(self.limits, state.turn, self.params.move_overhead, state.fullmove_number)

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
        tree = self.tree
        root = tree.root_node
        if root.proven is not None or self._tree_is_full():
            return True
        if self.max_playouts is not None and tree.playouts >= self.max_playouts:
            return True
        limits = self.limits
        if limits.depth is not None and tree.depth_sum >= limits.depth * max(tree.playouts, 1):
            return True
        if limits.mate is not None:
            best = self.best_child()
            if best is not None and best.proven == WIN and (best.plies + 2) // 2 <= limits.mate:
                return True
        elapsed = now - self.start
        return clock_says_stop(self.budget, root, elapsed, elapsed - self.setup_seconds, tree.playouts,
                               self.params.smart_pruning)

    # ----------------------------------------------------------------- output

    def _report(self, final: bool = False) -> None:
        now = time.monotonic()
        self.last_info = now
        self.on_info(self.lines(now))

    def lines(self, now: Optional[float] = None) -> list[LineInfo]:
        """The search's ``info`` lines now, one per MultiPV move."""
        now = time.monotonic() if now is None else now
        tree = self.tree
        return root_lines(tree, self.ranked_root(), self.params.multipv, max(now - self.start, 1e-6),
                          tree.playouts, tree.depth_sum, tree.seldepth,
                          tree.tb_hits if self.tablebases is not None else 0, self.probe_finds.lines)

    def close(self) -> None:
        if self._own_pipeline:
            self.pipeline.close()
