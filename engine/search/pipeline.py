"""Where the search's evaluations run: on the search's own thread, on threads beside it, or in worker processes.

With one core (``Threads=1``) everything runs where the search is, so the engine uses no more CPU than it was given.
With N cores a network's search runs on N threads, each gathering, evaluating and backing up batches of its own
with onnxruntime on one thread (engine/search/search.py): onnxruntime lets go of the interpreter's lock while it
runs, and the compiled tree needs the lock only briefly between batches. An evaluator written in Python holds the lock
while it works, so more cores need more processes: N - 1 worker processes (engine/search/workers.py), each with its
own copy of the evaluator.
"""

from __future__ import annotations

import os
import time
from typing import Any, Optional

from ..evaluators.base import Evaluator
from .workers import WorkerPool


def available_cores() -> int:
    """The cores this process may run on (its affinity, as ``taskset`` sets it): threads beyond them only queue."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class Pipeline:
    """How a search evaluates: the threads a network's search runs on, or the worker processes of an evaluator
    written in Python; and what an evaluation costs on the search's own thread."""

    def __init__(self, evaluator: Evaluator, threads: int) -> None:
        self.evaluator = evaluator
        cores = max(1, min(threads, available_cores()))
        self.workers: Optional[WorkerPool] = None
        self.problem: Optional[str] = None  # why the workers could not start, for the engine to say
        if cores >= 2 and not evaluator.planes and evaluator.copies_to_workers:
            try:
                self.workers = WorkerPool(cores - 1, evaluator)
            except (OSError, RuntimeError) as exc:  # no processes left, or an embedding script without a main guard
                self.problem = f"cannot start worker processes ({exc}); searching on one core"
        evaluator.cache_processes = cores if self.workers is not None else 1
        #: A network's batches on threads of their own (``Search._run_network_threads``), one a core; else each batch
        #: is evaluated on the search's thread.
        self.overlap = cores >= 2 and evaluator.planes
        self.threads = cores if self.overlap else 1
        evaluator.set_inference_threads(1)
        # Recent seconds per leaf of the evaluations run on this thread (0: none yet). A batch run here cannot be
        # dropped at the hard time limit, so the search sizes batches to the time it has left.
        self.seconds_per_leaf = 0.0

    def observe(self, seconds: float, leaves: int) -> None:
        """Take in the time of an evaluation of ``leaves`` leaves made on the search's thread."""
        if leaves > 0:
            rate = seconds / leaves
            self.seconds_per_leaf = rate if not self.seconds_per_leaf else 0.7 * self.seconds_per_leaf + 0.3 * rate

    def evaluate(self, planes: Any, leaves: int = 0) -> Any:
        """``Evaluator.run_planes`` on this thread, its time per leaf taken in."""
        began = time.perf_counter()
        outputs = self.evaluator.run_planes(planes)
        self.observe(time.perf_counter() - began, leaves)
        return outputs

    def configure_workers(self, params: Any) -> None:
        """Give the workers the evaluator's options (onnxruntime on one thread) and its share of the cache."""
        worker_params = None
        if getattr(self.evaluator, "params", None) is not None:
            worker_params = dict(vars(params), threads=1)
        self.workers.configure(worker_params, self.evaluator.cache_processes)

    def wait_ready(self) -> None:
        """Return once the worker processes (if any) have started, so that a timed run measures the search alone."""
        if self.workers is not None:
            self.workers.wait_ready()

    def close(self) -> None:
        if self.workers is not None:
            self.workers.close()
            self.workers = None
