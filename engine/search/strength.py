"""Playing at a chosen strength: ``UCI_LimitStrength`` and ``UCI_Elo``.

A weaker Arbor is the same search given less, the way a weaker player looks at the board:

- fewer visits a move, so it sees less far (and answers sooner);
- its move drawn from what it saw, with weight (visits + prior) ** (1 / temperature), instead of always
  the most visited. Where one move stands out (a recapture, a mate) it is still played; where the search
  spread its visits over several moves, a worse one comes out more often. So mistakes come where the
  position is hard, not as coin flips; and what the search has proven (a mate, a stalemate) is never a coin flip;
- no tactical probe at the root, below the level whose row turns it on.

``LEVELS`` maps a strength to these settings, one table per evaluator; between two rows the visits are
interpolated geometrically and the temperature linearly. A row's ``elo`` is what that setting measured on
Stockfish 15.1's ``UCI_Elo`` scale: ``arbor calibrate`` (engine/tools/calibrate.py) plays each row against Stockfish
at that Elo, or against the next row below 1350, and prints the table measured. A new default net changes
the engine's strength, so run it again when one ships (docs/strength.md, "Limited strength").
"""

from __future__ import annotations

import copy
import math
import random
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from .tree import DRAW, WIN


@dataclass(frozen=True)
class Level:
    """The search settings of one strength."""

    elo: int                # on Stockfish 15.1's UCI_Elo scale
    visits: Optional[int]   # playouts a move; None: the search's own limits (full strength)
    temperature: float      # of the move choice; 0: the most visited move
    probe: bool = False     # the root's tactical probe (TacticalProbeShare)


# Settings by evaluator, weakest first; the last row of each is full strength. From 1350 up, a row's elo is a level
# verified against Stockfish 15.1 at that UCI_Elo (10 s + 0.1 s, one thread each, 100 games, between 35% and 65%);
# below 1350 a row's elo is the row above's plus the Elo difference of its games against it. A stronger net plays
# better at the same visits, so the network's rows follow the default net: docs/strength.md ("Limited strength") has
# each row's measurement and the history of the tables, `arbor calibrate` measures them again.
LEVELS: dict[str, tuple[Level, ...]] = {
    "network": (
        Level(710, 5, 0.66),
        Level(890, 7, 0.62),
        Level(1175, 14, 0.53),
        Level(1350, 24, 0.45, probe=True),
        Level(1500, 39, 0.38, probe=True),
        Level(1700, 66, 0.3, probe=True),
        Level(2000, 500, 0.1, probe=True),
        Level(2100, None, 0.0, probe=True),
    ),
    "heuristic": (
        Level(450, 32, 0.8),
        Level(940, 128, 0.5, probe=True),
        Level(1350, 320, 0.35, probe=True),
        Level(1500, 800, 0.25, probe=True),
        Level(1650, None, 0.0, probe=True),
    ),
}
# The heuristic plays a UCI_Elo above its full strength (1650) at full strength.
MIN_THINK_SECONDS = 0.3  # a limited search never answers sooner on the clock: an instant reply looks mechanical
# Expected result (W - L, from -1 to 1) from which a limited level will not take a proven draw: a pawn up, about
# (lc0's scale: q_to_cp(0.5) = 89 cp).
AHEAD_Q = 0.5
# The network's rows were measured with one-core batches of 16 leaves. Smaller batches play better at equal visits
# (the default became 8 after the rows were measured), so a level keeps the batch its row was measured with.
LEVEL_MINIBATCH = 16


def level_for(elo: int, evaluator: str) -> Level:
    """The settings that play at ``elo`` with ``evaluator`` (its table, or the network's for an evaluator
    without one); above the table's last row, full strength."""
    levels = LEVELS.get(evaluator, LEVELS["network"])
    if elo <= levels[0].elo:
        return levels[0]
    for low, high in zip(levels, levels[1:]):
        if elo < high.elo:
            return _between(low, high, elo)
        if elo == high.elo:
            return high
    return levels[-1]


def _between(low: Level, high: Level, elo: int) -> Level:
    """Interpolated settings: visits geometrically, temperature linearly. On the way to full strength (no visit
    limit) the visits grow to four times the row below's."""
    share = (elo - low.elo) / (high.elo - low.elo)
    top = high.visits if high.visits is not None else 4 * low.visits
    visits = round(math.exp(math.log(low.visits) + share * (math.log(top) - math.log(low.visits))))
    temperature = low.temperature + share * (high.temperature - low.temperature)
    return Level(elo, max(1, visits), temperature, low.probe)


def limited(limits: Any, params: Any, level: Level) -> tuple[Any, Any]:
    """Copies of a ``go``'s limits (engine/search/timeman.py) and of the options for a search at ``level``: its visits
    (new playouts, as ``go nodes`` counts them) in batches of ``LEVEL_MINIBATCH``, below the row that turns it
    on no root probe, and below full strength no veto of the probe's (``TacticalVetoCp``); at full strength, the
    engine as it plays without the limit."""
    limits, params = copy.copy(limits), copy.copy(params)
    if level.visits is None and level.temperature <= 0:
        params.limit_strength = False   # full strength is the engine itself ('go nodes' probes as it does)
    if level.visits is not None:
        limits.nodes = level.visits if limits.nodes is None else min(limits.nodes, level.visits)
        params.minibatch_size = LEVEL_MINIBATCH
    if not level.probe:
        params.tactical_probe_share = 0.0
    if level.visits is not None or level.temperature > 0:
        params.tactical_veto_cp = 0  # calibrated before the veto existed; the draw from the visits ignores it
        params.tactical_clock_share = 0.0   # and without a probe on the clock
    return limits, params


def choose(stats: Sequence[Any], temperature: float, rng: random.Random, value: Optional[float] = None) -> int:
    """Index into ``stats`` (the root moves' ``MoveStat``s: ``n``, ``prior``, ``q``, ``proven``, ``plies``) of the
    move to play: drawn with weight (visits + prior) ** (1 / temperature), or the most visited (then best prior)
    when ``temperature`` is 0.

    What the search has proven is not left to the draw: a proven win (the fastest) is played, a proven loss only
    when every move is one, and a proven draw (a stalemate, a repetition, a trade into a dead draw) not while the
    moves left open promise clearly more (judged by the most visited of them or, when none has a visit, by the root's
    own ``value``, the evaluator's for the side to move). A weak player misses wins he does not see; he does not see
    the mate and then stalemate the king."""
    wins = [i for i, s in enumerate(stats) if s.proven == WIN]
    if wins:
        return min(wins, key=lambda i: stats[i].plies)
    most = max(range(len(stats)), key=lambda i: (stats[i].n, stats[i].prior))
    if temperature <= 0 or len(stats) == 1:
        return most
    # Judged by the most visited move not proven: a proven draw with a high prior can hold most of a short search,
    # or all of it (a stalemating capture at 70%: the others' first-play urgency stays below the draw's).
    open_moves = [s for s in stats if s.proven is None and s.n]
    if open_moves:
        ahead = max(open_moves, key=lambda s: s.n).q >= AHEAD_Q
    else:
        ahead = value is not None and value >= AHEAD_Q
    candidates = [i for i, s in enumerate(stats) if s.proven is None or (s.proven == DRAW and not ahead)]
    if not candidates:
        candidates = list(range(len(stats)))
    weights = [(stats[i].n + stats[i].prior) ** (1.0 / temperature) for i in candidates]
    return candidates[rng.choices(range(len(candidates)), weights=weights)[0]]
