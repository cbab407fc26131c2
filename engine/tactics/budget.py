# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""What one of the probe's searches may spend: positions, time, and a stop flag.

The alpha-beta and the mate search both count every position they visit (``tick``) and stop at the first of their
budget of positions (exact: the same result on every machine), their deadline, or ``stopped()``; the last two are
looked at every ``CLOCK_EVERY`` positions. Compiled by Cython (``budget.pxd``) or run as it reads.
"""

from __future__ import annotations

import sys
import time
from typing import Callable, Optional

try:
    import cython
except ImportError:
    from .. import cython_shim as cython

COMPILED = cython.compiled   # this module runs compiled (core.py reports it)
# Positions between looks at the clock and the stop flag (a quarter of a millisecond compiled).
CLOCK_EVERY = cython.declare(cython.int, 256)
# Compiled, the search holds the interpreter's lock throughout. The interpreter hands the lock to a thread waiting for
# it (the one that reads 'stop' and 'isready') only after that thread has waited a whole switch interval in vain:
# letting go more often than that, only to take it straight back, wakes the waiting thread too early every time and
# starves it (seconds without an answer to isready). So the search lets go once per this many switch intervals.
YIELD_INTERVALS = 2.0


def never() -> bool:
    """A stop flag that is never raised."""
    return False


@cython.cclass
class Budget:
    """Positions up to ``max_nodes`` (None: no limit), until ``deadline`` (``time.monotonic()``) or ``stopped()``;
    ``nodes`` counts them, ``aborted`` says the budget ran out."""

    def __init__(self, deadline: float, stopped: Callable[[], bool] = never, max_nodes: Optional[int] = None) -> None:
        self.nodes = 0
        self.max_nodes = max_nodes if max_nodes is not None else 1 << 62
        self.deadline = deadline
        self.stopped = stopped
        self.clock = time.monotonic
        self.aborted = False
        self.yield_every = YIELD_INTERVALS * sys.getswitchinterval()
        self.last_yield = self.clock()

    @cython.cfunc
    def tick(self) -> cython.bint:
        """Count a position; True once the search must stop."""
        self.nodes += 1
        if self.nodes >= self.max_nodes:
            self.aborted = True
        elif self.nodes % CLOCK_EVERY == 0:
            now: cython.double = self.clock()
            if now - self.last_yield >= self.yield_every:
                self.last_yield = now
                with cython.nogil:
                    pass   # (compiled: the interpreter's lock goes to a thread that has waited for it, if any)
            if now >= self.deadline or self.stopped():
                self.aborted = True
        return self.aborted
