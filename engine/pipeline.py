"""Where the search's network batches run: on the search's own thread, or overlapped on a second one.

With one core (``Threads=1``) a batch runs where the search is, so the engine uses no more CPU than it was
given. With two or more, a batch runs on an evaluator thread while the search gathers the next one: onnxruntime
releases the GIL, so the tree work and the inference share two cores.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Optional

from .evaluators.base import Evaluator

HANDOFF_TIMEOUT = 0.05  # seconds to wait for the evaluator thread to take a batch


class Pipeline:
    """Starts evaluations of prepared batches (``Evaluator.prepare``); ``Future.result()`` is ``Evaluator.run``'s."""

    def __init__(self, evaluator: Evaluator, overlap: bool) -> None:
        self.evaluator = evaluator
        self.overlap = overlap
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

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
