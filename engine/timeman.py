"""Search limits from a UCI ``go`` command and the time allotted to one move."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

# With no movestogo, plan as if this many moves remained: a game rarely lasts longer, and the
# increment keeps later moves affordable.
DEFAULT_MOVES_TO_GO = 30
# Never spend more than this share of the remaining clock on one move.
MAX_SHARE_OF_CLOCK = 0.35
# A move may overrun its planned time by this factor while the best move is still unsettled.
HARD_OVER_TARGET = 3.0
# Seconds each move costs outside the search (pipes, process scheduling, the GUI): an increment
# smaller than this cannot be spent, or the clock bleeds away move by move.
PER_MOVE_LATENCY = 0.01


@dataclass
class Limits:
    """What a ``go`` command asked for; times in milliseconds."""

    wtime: Optional[int] = None
    btime: Optional[int] = None
    winc: int = 0
    binc: int = 0
    movestogo: Optional[int] = None
    movetime: Optional[int] = None
    nodes: Optional[int] = None
    depth: Optional[int] = None
    mate: Optional[int] = None
    infinite: bool = False
    ponder: bool = False
    searchmoves: list = field(default_factory=list)

    def clock(self, white: bool) -> tuple[Optional[int], int]:
        return (self.wtime, self.winc) if white else (self.btime, self.binc)


@dataclass
class Budget:
    """How long to search: ``target`` is the planned time, ``hard`` the deadline never passed
    (both seconds; None when unlimited). ``timed`` is true for time-limited budgets, which end at
    once with a single legal move. ``prune`` allows smart pruning (stopping once the best move
    cannot change): only on the clock, since ``go movetime`` means "search exactly this long"."""

    target: Optional[float]
    hard: Optional[float]
    timed: bool
    prune: bool = False


def allocate(limits: Limits, white_to_move: bool, move_overhead_ms: int) -> Budget:
    """The time budget for one move; ``movetime`` wins over the clock."""
    overhead = move_overhead_ms / 1000.0
    if limits.movetime is not None:
        t = max(limits.movetime / 1000.0 - overhead, 0.001)
        return Budget(t, t, True)
    time_left, inc = limits.clock(white_to_move)
    if time_left is None:
        return Budget(None, None, False)
    left = max(time_left / 1000.0 - overhead, 0.0)
    inc = inc / 1000.0
    mtg = max(1, min(limits.movestogo or DEFAULT_MOVES_TO_GO, DEFAULT_MOVES_TO_GO))
    if mtg == 1:
        hard = left * 0.9  # last move before the time control: use most of what is left
        return Budget(hard, hard, True, prune=True)
    # Spread the clock and the coming increments (less what each move loses outside the
    # search) over the moves to go. Below MoveOverhead, play at once and let the increments
    # rebuild the reserve.
    target = (left + max(inc - PER_MOVE_LATENCY, 0.0) * (mtg - 1)) / mtg
    hard = min(left * MAX_SHARE_OF_CLOCK, target * HARD_OVER_TARGET)
    return Budget(min(target, hard), hard, True, prune=True)
