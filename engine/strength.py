"""Playing at a chosen strength: ``UCI_LimitStrength`` and ``UCI_Elo``.

A weaker Arbor is the same search given less, the way a weaker player looks at the board:

- fewer visits a move, so it sees less far (and answers sooner);
- its move drawn from what it saw, with weight (visits + prior) ** (1 / temperature), instead of always
  the most visited. Where one move stands out (a recapture, a mate) it is still played; where the search
  spread its visits over several moves, a worse one comes out more often. So mistakes come where the
  position is hard, not as coin flips;
- no tactical probe at the root, below the level whose row turns it on.

``LEVELS`` maps a strength to these settings, one table per evaluator; between two rows the visits are
interpolated geometrically and the temperature linearly. A row's ``elo`` is what that setting measured on
Stockfish 15.1's ``UCI_Elo`` scale: ``arbor calibrate`` (engine/calibrate.py) plays each row against Stockfish
at that Elo, or against the next row below 1350, and prints the table measured. A new default net changes
the engine's strength, so run it again when one ships (README, "Playing strength").
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
# verified against Stockfish 15.1 at that UCI_Elo: 10 s + 0.1 s, one thread each, 100 games, between 35% and 65%
# (README, "Playing strength"). The network's, with the default net (arbor-r004), 2026-11-26:
#   128 visits T 0.4: 14-9-77 against Stockfish 1600 (about 1,340); 36-19-45 against 1350 (1,319 +/- 62)
#   256 visits T 0.3: 53-21-26 against 1500 (about 1,600); 512 visits T 0.2: 54-17-29 against 1700 (about 1,790)
#   the 1500 and 1700 rows, interpolated on that curve: 39-18-43 against 1500 (1,486 +/- 62),
#   35-19-46 against 1700 (1,662 +/- 62)
#   full strength: 57-8-35 against 1850 (1,928 +/- 68) and 33-15-52 against 1900 (1,833 +/- 65): about 1,880
#   over the 200 games, and within 35-65% at both; the table's top is 1850, the level it scores above 50% at.
# The rows below 1350 are PROVISIONAL, set on the slope above (190 to 270 Elo a doubling of visits with a cooler
# choice) and not measured yet: `arbor calibrate measure --rows 1150,950,750` ties them to the 1350 row.
# The heuristic's table is PROVISIONAL too (its full strength about 1,650 against Stockfish's ladder).
LEVELS: dict[str, tuple[Level, ...]] = {
    "network": (
        Level(750, 4, 1.0),
        Level(950, 16, 0.7),
        Level(1150, 48, 0.55),
        Level(1350, 128, 0.4, probe=True),
        Level(1500, 197, 0.34, probe=True),
        Level(1700, 380, 0.24, probe=True),
        Level(1850, None, 0.0, probe=True),
    ),
    "heuristic": (
        Level(800, 1, 2.0),
        Level(1000, 4, 1.0),
        Level(1200, 32, 0.8),
        Level(1400, 128, 0.5, probe=True),
        Level(1650, None, 0.0, probe=True),
    ),
}
# UCI_Elo's range: from the weakest row of any table to the default engine's (the network's) full strength.
ELO_MIN = min(levels[0].elo for levels in LEVELS.values())
ELO_MAX = LEVELS["network"][-1].elo
MIN_THINK_SECONDS = 0.3  # a limited search never answers sooner on the clock: an instant reply looks mechanical
# Expected result (W - L, from -1 to 1) from which a limited level will not take a proven draw: a pawn up, about
# (lc0's scale: q_to_cp(0.5) = 89 cp).
AHEAD_Q = 0.5


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
    """Copies of a ``go``'s limits (engine/timeman.py) and of the options for a search at ``level``: its visits
    (new playouts, as ``go nodes`` counts them) and, below the row that turns it on, no root probe."""
    limits, params = copy.copy(limits), copy.copy(params)
    if level.visits is not None:
        limits.nodes = level.visits if limits.nodes is None else min(limits.nodes, level.visits)
    if not level.probe:
        params.tactical_probe_share = 0.0
    return limits, params


def choose(stats: Sequence[Any], temperature: float, rng: random.Random) -> int:
    """Index into ``stats`` (the root moves' ``MoveStat``s: ``n``, ``prior``, ``q``, ``proven``, ``plies``) of the
    move to play: drawn with weight (visits + prior) ** (1 / temperature), or the most visited (then best prior)
    when ``temperature`` is 0.

    What the search has proven is not left to the draw: a proven win (the fastest) is played, a proven loss only
    when every move is one, and a proven draw (a stalemate, a repetition, a trade into a dead draw) not while the
    moves left open promise clearly more. A weak player misses wins he does not see; he does not see the mate
    and then stalemate the king."""
    wins = [i for i, s in enumerate(stats) if s.proven == WIN]
    if wins:
        return min(wins, key=lambda i: stats[i].plies)
    most = max(range(len(stats)), key=lambda i: (stats[i].n, stats[i].prior))
    if temperature <= 0 or len(stats) == 1:
        return most
    # Judged by the most visited move not proven: a proven draw with a high prior can hold most of a short search.
    open_moves = [s for s in stats if s.proven is None and s.n]
    ahead = bool(open_moves) and max(open_moves, key=lambda s: s.n).q >= AHEAD_Q
    candidates = [i for i, s in enumerate(stats) if s.proven is None or (s.proven == DRAW and not ahead)]
    if not candidates:
        candidates = list(range(len(stats)))
    weights = [(stats[i].n + stats[i].prior) ** (1.0 / temperature) for i in candidates]
    return candidates[rng.choices(range(len(candidates)), weights=weights)[0]]
