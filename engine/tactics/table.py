"""The probe's transposition table, kept between probes.

Allocating the table's 10 MB afresh cost 2 to 10 ms a probe (the kernel zeroes each page at its first write), more
than a short probe's whole search on a tight clock and paid on every move. A kept table cleared in place costs under
half a millisecond, and a cleared table leaves the search exactly as a fresh one would: the same scores and node
counts.
"""

from __future__ import annotations

from array import array
from contextlib import contextmanager
from typing import Iterator

_zeros: dict[int, memoryview] = {}       # by size in bytes: read only, so the kernel's shared zero page backs them
_spare: dict[int, "TranspositionTable"] = {}   # by bits: the table the last probe gave back


class TranspositionTable:
    """2**bits positions: each a Zobrist key, a best move, a score and depth * 4 + bound (20 bytes)."""

    def __init__(self, bits: int) -> None:
        self.bits = bits
        self.keys = array("Q", bytes(8 << bits))
        self.moves = array("i", bytes(4 << bits))
        self.values = array("i", bytes(4 << bits))
        self.depths = array("i", bytes(4 << bits))

    def clear(self) -> None:
        """Every slot empty, as when the table was made."""
        for column in (self.keys, self.moves, self.values, self.depths):
            raw = memoryview(column).cast("B")
            zeros = _zeros.get(len(raw))
            if zeros is None:
                zeros = _zeros[len(raw)] = memoryview(bytes(len(raw)))
            raw[:] = zeros


@contextmanager
def lent(bits: int) -> Iterator[TranspositionTable]:
    """An empty table of 2**bits positions for one probe, kept afterwards for the next one. Probes running at the
    same time (threads) each get a table of their own."""
    table = _spare.pop(bits, None)
    if table is None:
        table = TranspositionTable(bits)
    else:
        table.clear()
    try:
        yield table
    finally:
        _spare[bits] = table
