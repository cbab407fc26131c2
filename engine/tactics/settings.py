"""The probe's search parameters, each declared once with its default and what it does (lc0's params.cc style).

The compiled alpha-beta copies them into C fields when a search starts, so a test or a tuning run changes a search
by passing other settings, never by patching the module.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProbeSettings:
    """How the probe's alpha-beta prunes, reduces and orders."""

    #: Null move: from this many plies left, pass; if the opponent still cannot reach beta, cut off.
    null_move_min_depth: int = 3
    #: Plies the search after a null move is shortened by.
    null_move_reduction: int = 2
    #: Late move reductions: quiet moves after this many searched moves go a ply shorter first...
    late_move_index: int = 3
    #: ...with at least this many plies left,
    late_move_min_depth: int = 2
    #: and those after this many, two plies shorter...
    very_late_move_index: int = 6
    #: ...with at least this many plies left.
    very_late_min_depth: int = 4
    #: Futility: two plies from the quiescence, a quiet move that leaves the static score this far below alpha and
    #: gives no check is not searched (one ply from it, with no margin: exact).
    futility_margin: int = 300
    #: The most plies left at which moves are pruned so (0: none, 1: only the exact pruning).
    futility_depth: int = 2
    #: Late move pruning, by plies left (index 0: the quiescence): quiet moves that give no check after this many
    #: quiet ones are not searched (killers and the history put the likeliest first). Empty: none pruned.
    late_move_pruning: tuple[int, ...] = (0, 6, 10, 16)
    #: The quiescence's first ply also tries the quiet moves that give check (a mate or fork by check just past the
    #: horizon is what a combination's last move most often is).
    quiescence_checks: bool = True
    #: Captures that lose material to the recapture are searched after the quiet moves (else with the others).
    losing_captures_last: bool = True
    #: The quiescence skips a capture whose victim, plus this, cannot bring the score up to alpha.
    delta_margin: int = 200
    #: A capture by a piece worth more than this above its defended victim loses material to the recapture.
    losing_capture_slack: int = 50
    #: The transposition table holds 2**table_bits positions (20 bytes each).
    table_bits: int = 19


DEFAULT = ProbeSettings()
#: For writing out a proven mate's line: nothing pruned or reduced that could hide a faster mate or a longer
#: defence (the root probe's mates are proven, but pruning can leave them a move or two longer than the fastest).
EXHAUSTIVE = ProbeSettings(null_move_min_depth=1000, late_move_index=1000, futility_depth=1, late_move_pruning=())
