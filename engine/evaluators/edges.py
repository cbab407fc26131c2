"""A position's evaluation in compact form: what a tree node keeps once expanded, and what a network's cache keeps.

One ``bytes`` object: the evaluator's value (side to move's view) and draw probability as float32, then the ``n``
legal moves' 16-bit ids (``Game.move_ids``), best prior first, then their priors as float16. lc0 keeps priors in 16
bits too: three significant digits are more than PUCT can tell apart, and each move costs 4 bytes instead of 6 (80
bytes a node with 40 legal moves). One object rather than an array each for moves and priors saves their headers,
and a network evaluator's cache keeps the very object its node holds instead of a copy (``Evaluator.keep``).
"""

from __future__ import annotations

import struct
from typing import Sequence

_HEAD = struct.Struct("<ff")  # value, draw
_MOVE = struct.Struct("<H")
_HEAD_BYTES = _HEAD.size  # 8: move_id() and leading_priors() spell it out
_unpack_move = _MOVE.unpack_from
_LAYOUTS: dict[int, struct.Struct] = {}  # by number of moves
_PRIORS: dict[int, struct.Struct] = {}   # the priors alone, by number of moves
# A child keeps its move id, an int of 28 bytes when it is a fresh object: the ids of moves without promotion
# (below 4096) are shared instead.
_SHARED_IDS = tuple(range(1 << 12))


def pack(value: float, draw: float, move_ids: Sequence[int], priors: Sequence[float]) -> bytes:
    count = len(move_ids)
    layout = _LAYOUTS.get(count)
    if layout is None:
        layout = _LAYOUTS[count] = struct.Struct(f"<ff{count}H{count}e")
    return layout.pack(value, draw, *move_ids, *priors)


def count(edges: bytes) -> int:
    """The number of moves."""
    return (len(edges) - _HEAD_BYTES) // 4


def value_and_draw(edges: bytes) -> tuple[float, float]:
    return _HEAD.unpack_from(edges)


def move_ids(edges: bytes) -> list[int]:
    return list(struct.unpack_from(f"<{count(edges)}H", edges, _HEAD_BYTES))


def priors(edges: bytes) -> tuple[float, ...]:
    """The priors, best first (a node keeps no prior of its own: its parent's edges hold it)."""
    return leading_priors(edges, count(edges))


def leading_priors(edges: bytes, m: int) -> tuple[float, ...]:
    """The ``m`` best priors (selection's: the opened children's and the next move's, not a float for every move)."""
    layout = _PRIORS.get(m)
    if layout is None:
        layout = _PRIORS[m] = struct.Struct(f"<{m}e")
    return layout.unpack_from(edges, 8 + (len(edges) - 8) // 2)


def move_id(edges: bytes, k: int) -> int:
    """The id of the ``k``-th best-prior move."""
    move = _unpack_move(edges, 8 + 2 * k)[0]
    return _SHARED_IDS[move] if move < 4096 else move
