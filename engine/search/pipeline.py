"""Where the search's evaluations run: on the search's own thread, overlapped on a second one, or in workers.

With one core (``Threads=1``) everything runs where the search is, so the engine uses no more CPU than it was
given. With two or more, new leaves also go to ``Threads`` - 1 worker processes (engine/search/workers.py), each with
its own copy of the evaluator: Python holds the GIL, so more cores need more processes. An evaluator that
cannot be copied into a process runs its batches on an evaluator thread instead, overlapping the tree work (a
native runtime such as onnxruntime releases the GIL).
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Optional

from ..evaluators.base import Evaluator
from .workers import WorkerPool

HANDOFF_TIMEOUT = 0.05  # seconds to wait for the evaluator thread to take a batch


def available_cores() -> int:
    """The cores this process may run on (its affinity, as ``taskset`` sets it): workers beyond them only queue."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class Pipeline:
    """Starts evaluations of prepared batches (``Evaluator.prepare``); ``Future.result()`` is ``Evaluator.run``'s."""

    def __init__(self, evaluator: Evaluator, threads: int, game: Any = None) -> None:
        """``game`` (the rules, engine/board/game.py) is needed when ``threads`` >= 2 and the evaluator copies to workers."""
        self.evaluator = evaluator
        workers = min(threads, available_cores()) - 1
        self.workers: Optional[WorkerPool] = None
        self.problem: Optional[str] = None  # why the workers could not start, for the engine to say
        if workers >= 1 and evaluator.copies_to_workers:
            try:
                self.workers = WorkerPool(workers, game, evaluator)
            except (OSError, RuntimeError) as exc:  # no processes left, or an embedding script without a main guard
                self.problem = f"cannot start worker processes ({exc}); searching on one core"
        # The search's cache and each worker's take equal shares, so that all together keep to the limits.
        evaluator.cache_processes = workers + 1 if self.workers is not None else 1
        self.overlap = threads >= 2 and self.workers is None
        # With workers, every process evaluates on its own core: onnxruntime gets one thread in each.
        evaluator.set_inference_threads(1 if self.workers is not None else max(1, threads - 1))
        self._pool: Optional[ThreadPoolExecutor] = None
        # Recent seconds per leaf of the evaluations run on this thread (0: none yet). A batch run here cannot be
        # dropped at the hard time limit, so the search sizes batches to the time it has left.
        self.seconds_per_leaf = 0.0

    def observe(self, seconds: float, leaves: int) -> None:
        """Take in the time of an evaluation of ``leaves`` leaves made on the search's thread."""
        if leaves > 0:
            rate = seconds / leaves
            self.seconds_per_leaf = rate if not self.seconds_per_leaf else 0.7 * self.seconds_per_leaf + 0.3 * rate

    def start(self, prepared: Any, leaves: int = 0) -> Future:
        """Begin evaluating ``prepared``: at once on this thread (the future is done when this returns), or on
        the evaluator thread, returning once that thread has begun.

        The evaluator thread needs the GIL to begin, and CPython hands it over only after
        ``sys.getswitchinterval()`` (5 ms), longer than gathering the next batch takes: without the wait the
        two threads would take turns instead of overlapping. The wait is short because the evaluator soon
        releases the GIL inside onnxruntime.
        """
        run = self.evaluator.run
        if not self.overlap:
            future: Future = Future()
            began = time.perf_counter()
            try:
                future.set_result(run(prepared))
            except BaseException as exc:  # delivered by result(), as the evaluator thread's would be
                future.set_exception(exc)
            self.observe(time.perf_counter() - began, leaves)
            return future
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="arbor-eval")
        started = threading.Event()

        def job() -> Any:
            started.set()
            return run(prepared)
        future = self._pool.submit(job)
        started.wait(HANDOFF_TIMEOUT)
        return future

    def configure_workers(self, params: Any, tablebases: str, history: Optional[list[bytes]]) -> None:
        """Give the workers what a search needs beside its leaves: the Syzygy folders, the evaluator's options
        (onnxruntime on one thread), its share of the cache, and a network's history up to the root."""
        worker_params = None
        if getattr(self.evaluator, "params", None) is not None:
            worker_params = dict(vars(params), threads=1)
        self.workers.configure(tablebases, worker_params, history, self.evaluator.cache_processes)

    def wait_ready(self) -> None:
        """Return once the worker processes (if any) have started, so that a timed run measures the search alone."""
        if self.workers is not None:
            self.workers.wait_ready()

    def close(self) -> None:
        if self.workers is not None:
            self.workers.close()
            self.workers = None
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
