"""Worker processes that evaluate leaves beside the search, for an evaluator written in Python.

Python runs one thread of a process at a time (the GIL), so with an evaluator written in Python (the heuristic,
random rollouts) more cores need more processes. ``Threads`` N starts N - 1 workers, once per engine, each with
its own copy of the evaluator. The search thread keeps the tree (selection, legal moves, finished games, backup)
and sends each worker chunks of new leaves, as python-chess boards' parts and their moves; while their answers are
out it evaluates leaves itself. So the engine keeps N cores busy, and never more than N.

A worker answers its chunks in the order they came. It exits when the engine closes its pipe, and when the
engine dies without closing it the pipe reads end-of-file; on Linux the kernel also ends it with the engine
(even while it is still starting), so no worker outlives its engine.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import time
from collections import deque
from itertools import count
from typing import Any, Optional

from ..board import convert
from ..board.moves import move_ids
from ..evaluators.base import Evaluator, Leaf
from .memory import keep_large_blocks_mapped

# A leaf as a worker gets it: convert.chess_board's arguments and the board's move ids; and what comes back: value,
# draw probability and priors.
Job = tuple
Answer = tuple

# Memory a worker, and the search thread beside it, hold beyond their caches during a search (boards, message
# buffers): with one worker, the processes grew 3.6 MB past the caches and the tree at
# RamLimitMb=150 (tests/test_tree_memory.py), so RamLimitMb counts 3 MB a process.
WORKING_BYTES = 3 << 20
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
CHUNK_LEAVES = 8  # leaves per message: a pipe round trip costs tens of microseconds, a leaf about a hundred
AHEAD = 2         # chunks a worker holds, so that its next one is already there when it finishes one


def _die_with(engine: int) -> bool:
    """Have the kernel end this process when the engine dies (Linux); False if the engine is gone already.

    The closed pipe ends a waiting worker too, but a worker is deaf to it while it starts (imports, loading a
    network: seconds on a busy machine), and an engine killed then must not leave it behind."""
    if not sys.platform.startswith("linux"):
        return True  # elsewhere the closed pipe ends the worker once it listens
    try:
        import ctypes
        # The signal comes when the thread that started the worker ends: the engine's loading thread
        # (engine/uci/loading.py), which lives as long as the evaluator the workers serve.
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() == engine:
        return True  # the engine is this process's parent, and alive, so the signal is armed
    # Either a one-file executable's launcher sits between the two, or the engine died before the signal was armed
    # and this process was handed to another parent: then the engine's pid names its corpse until it is reaped.
    try:
        with open(f"/proc/{engine}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except FileNotFoundError:
        return not os.path.isdir("/proc/self")  # gone, unless there is no /proc to ask
    except (OSError, IndexError):
        return True  # cannot tell: the closed pipe will end this process once it listens


class Growth:
    """How much this process has grown since it was made (its resident set on Linux; 0 where there is no
    /proc to ask).

    A worker counts against RamLimitMb what it holds, and no less than it has grown: its cache's entries are its
    own copies, not shared with a tree as the search thread's are, and the cache's churn (the least recent
    entries go, a hit moves to the front) leaves the allocator with more than the entries themselves. With
    Threads=2 at RamLimitMb=150 a worker grew about 470 bytes an entry where its count said 330."""

    def __init__(self) -> None:
        try:
            self._statm: Optional[int] = os.open("/proc/self/statm", os.O_RDONLY)
        except OSError:
            self._statm = None
        self._start = self._resident()

    def _resident(self) -> int:
        if self._statm is None:
            return 0
        try:
            return int(os.pread(self._statm, 64, 0).split()[1]) * PAGE_BYTES
        except (OSError, ValueError, IndexError):
            return 0

    def bytes(self) -> int:
        return max(0, self._resident() - self._start)


def evaluate_jobs(evaluator: Evaluator, jobs: list[Job]) -> list[Answer]:
    """Evaluate a chunk of leaves as the search thread would (python-chess boards and moves)."""
    leaves = []
    for fields, ids in jobs:
        board = convert.chess_board(*fields)
        moves = [convert.chess_move(board, m) for m in ids]
        leaf = Leaf(board, moves, ())
        leaf.move_ids = move_ids(moves)
        leaves.append(leaf)
    evaluator.evaluate(leaves)
    return [(leaf.value, leaf.wdl[1] if leaf.wdl is not None else 0.0, list(leaf.priors)) for leaf in leaves]


def _serve(conn: multiprocessing.connection.Connection, engine: int, payload: bytes) -> None:
    """A worker's life: answer messages until the pipe closes. The evaluator comes pickled, and is unpickled
    (imports, say) only once the worker is tied to the engine's life."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C at the console is the engine's to handle
    keep_large_blocks_mapped()
    if not _die_with(engine):
        return
    evaluator = pickle.loads(payload)
    growth = Growth()
    try:
        conn.send(("ready", None, 0))
        while True:
            tag, body = conn.recv()
            if tag != "configure":
                answers = evaluate_jobs(evaluator, body)
                conn.send((tag, answers, max(evaluator.memory_bytes() + WORKING_BYTES, growth.bytes())))
                continue
            if "params" in body:
                vars(evaluator.params).update(body["params"])
            if "cache_processes" in body:
                evaluator.cache_processes = body["cache_processes"]
    except (EOFError, OSError, KeyboardInterrupt):
        return


class Worker:
    """One worker process, its end of the pipe, and the tags of the chunks it holds, oldest first."""

    def __init__(self, context: Any, evaluator: Evaluator, number: int) -> None:
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child, os.getpid(), pickle.dumps(evaluator)),
                                       daemon=True, name=f"arbor-worker-{number}")
        self.process.start()
        child.close()
        self.ready = False
        self.holding: deque[int] = deque()
        self.memory = 0  # bytes it held at its last answer: its cache and working memory, or its growth if more


class WorkerPool:
    """Worker processes for an evaluator that can be copied into them (``Evaluator.copies_to_workers``).

    The workers start in the background: until a worker says it is ready, the search simply does its share.
    """

    def __init__(self, workers: int, evaluator: Evaluator) -> None:
        # spawn, not fork: the engine has threads (input, search) that a forked child would inherit half-way.
        context = multiprocessing.get_context("spawn")
        self.workers = [Worker(context, evaluator, i + 1) for i in range(workers)]
        self._tags = count(1)
        self._sent: dict[str, Any] = {}  # the settings the workers have
        self._undelivered: list[tuple[int, None]] = []  # chunks lost with a worker found dead while sending

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Wait (at most ``timeout`` seconds) until every worker has started; answers that come meanwhile are
        dropped, so only call this between searches."""
        deadline = time.monotonic() + timeout
        while self.starting and time.monotonic() < deadline:
            self.answers(0.05)

    def configure(self, params: Optional[dict] = None, cache_processes: int = 1) -> None:
        """Before a search: the evaluator's options (None: it has none) and the processes that share its cache
        (``Evaluator.cache_processes``). What is unchanged is not sent again."""
        settings: dict[str, Any] = {}
        if cache_processes != self._sent.get("cache_processes", 1):
            settings["cache_processes"] = cache_processes
        if params is not None and params != self._sent.get("params"):
            settings["params"] = params
        if settings:
            self._sent.update(settings)
            for worker in self.workers:
                self._send(worker, "configure", settings)

    @property
    def starting(self) -> bool:
        """Is a worker still starting up (its 'ready' not yet read)?"""
        return any(not w.ready and not w.conn.closed for w in self.workers)

    def free_worker(self) -> Optional[Worker]:
        """A ready worker that holds fewer than ``AHEAD`` chunks, if any."""
        for worker in self.workers:
            if worker.ready and len(worker.holding) < AHEAD:
                return worker
        return None

    def send(self, worker: Worker, jobs: list[Job]) -> int:
        """Hand ``worker`` a chunk of leaves to evaluate; returns the chunk's tag."""
        tag = next(self._tags)
        if worker.conn.closed:
            self._undelivered.append((tag, None))
        else:
            worker.holding.append(tag)  # before sending: a worker found dead then gives it back as lost
            self._send(worker, tag, jobs)
        return tag

    def answers(self, timeout: float = 0.0) -> list[tuple[int, Optional[list[Answer]]]]:
        """The chunks answered so far, as (tag, answers), waiting up to ``timeout`` seconds for the first.
        A chunk whose worker died comes back as (tag, None)."""
        out, self._undelivered = self._undelivered, []
        conns = [w.conn for w in self.workers if not w.conn.closed]
        if not conns:
            return out
        for conn in multiprocessing.connection.wait(conns, timeout):
            worker = next(w for w in self.workers if w.conn is conn)
            while True:
                try:
                    if not conn.poll():
                        break
                    tag, answers, worker.memory = conn.recv()
                except (EOFError, OSError):
                    out += self._lost(worker)
                    break
                if tag == "ready":
                    worker.ready = True
                    continue
                if worker.holding and worker.holding[0] == tag:
                    worker.holding.popleft()
                out.append((tag, answers))
        return out

    def memory_bytes(self) -> int:
        """What the workers hold as at their last answers, and the search thread's working memory beside them
        (counted against RamLimitMb)."""
        return sum(w.memory for w in self.workers) + WORKING_BYTES

    def _send(self, worker: Worker, tag: Any, body: Any) -> bool:
        if worker.conn.closed:
            return False
        try:
            worker.conn.send((tag, body))
            return True
        except OSError:
            self._undelivered += self._lost(worker)
            return False

    @staticmethod
    def _lost(worker: Worker) -> list[tuple[int, None]]:
        """A worker that died: its chunks will never be answered."""
        lost = [(tag, None) for tag in worker.holding]
        worker.holding.clear()
        worker.ready = False
        worker.conn.close()
        return lost

    def close(self) -> None:
        """Close the pipes (the workers then exit) and reap the processes."""
        for worker in self.workers:
            if not worker.conn.closed:
                worker.conn.close()
        for worker in self.workers:
            worker.process.join(0.5)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join(0.5)
