"""Search limits from a UCI ``go`` command and the time allotted to one move."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

# With no movestogo, plan as if MOVES_LEFT_AT_START moves remained at move 1, one fewer every
# MOVES_PER_MOVE_LEFT moves, never fewer than MIN_MOVES_LEFT: a game that has gone on is nearer its end,
# and the increment keeps the later moves affordable.
MOVES_LEFT_AT_START = 35
MOVES_PER_MOVE_LEFT = 4
MIN_MOVES_LEFT = 15
# Smart pruning ends most clock searches before their planned time. The plan is divided by the share of
# it that recent searches used (as lc0's smooth time manager does), or the saved time is never spent and
# the game ends with much of the clock unused. The share is a running average over the game's moves.
INITIAL_USED_SHARE = 0.6
MIN_USED_SHARE = 0.3
USED_SHARE_DECAY = 0.1    # weight of the latest move in the running average
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
    received: Optional[float] = None  # time.monotonic() when the go arrived: the search's clock runs from there

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


def moves_left(fullmove: int) -> int:
    """The moves a game is planned to last beyond move ``fullmove`` when the GUI gives no movestogo."""
    return max(MIN_MOVES_LEFT, MOVES_LEFT_AT_START - fullmove // MOVES_PER_MOVE_LEFT)


def allocate(limits: Limits, white_to_move: bool, move_overhead_ms: int, fullmove: int = 1,
             used_share: float = 1.0) -> Budget:
    """The time budget for one move; ``movetime`` wins over the clock. On the clock, the planned time is
    the move's fair share of the clock divided by ``used_share`` (the share of its plan a search is
    expected to use before smart pruning stops it)."""
    overhead = move_overhead_ms / 1000.0
    if limits.movetime is not None:
        t = max(limits.movetime / 1000.0 - overhead, 0.001)
        return Budget(t, t, True)
    time_left, inc = limits.clock(white_to_move)
    if time_left is None:
        return Budget(None, None, False)
    left = max(time_left / 1000.0 - overhead, 0.0)
    inc = inc / 1000.0
    mtg = moves_left(fullmove)
    if limits.movestogo:
        mtg = max(1, min(limits.movestogo, mtg))
    if mtg == 1:
        hard = left * 0.9  # last move before the time control: use most of what is left
        return Budget(hard, hard, True, prune=True)
    # Spread the clock and the coming increments (less what each move loses outside the
    # search) over the moves to go. Below MoveOverhead, play at once and let the increments
    # rebuild the reserve.
    fair = (left + max(inc - PER_MOVE_LATENCY, 0.0) * (mtg - 1)) / mtg
    target = fair / min(max(used_share, MIN_USED_SHARE), 1.0)
    hard = min(left * MAX_SHARE_OF_CLOCK, target * HARD_OVER_TARGET)
    return Budget(min(target, hard), hard, True, prune=True)


class TimeManager:
    """Plans each move's time within a game, learning from the searches before it how much of a plan
    smart pruning leaves unused. One per engine; ``new_game`` forgets what it learnt."""

    def __init__(self) -> None:
        self.new_game()

    def new_game(self) -> None:
        self.used_share = INITIAL_USED_SHARE

    def allocate(self, limits: Limits, white_to_move: bool, move_overhead_ms: int, fullmove: int) -> Budget:
        return allocate(limits, white_to_move, move_overhead_ms, fullmove, self.used_share)

    def record(self, budget: Budget, elapsed: float) -> None:
        """A search with ``budget`` ended after ``elapsed`` seconds (not ended by ``stop``)."""
        if not budget.prune or not budget.target:
            return   # movetime, infinite and ponder searches say nothing about smart pruning on the clock
        used = min(elapsed / budget.target, 1.0)
        self.used_share = max(MIN_USED_SHARE, self.used_share + USED_SHARE_DECAY * (used - self.used_share))
