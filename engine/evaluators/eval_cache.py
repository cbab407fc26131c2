"""The network's evaluations of recent positions, sharing the tree's memory.

An entry is the compact form the search made of an evaluated leaf (engine/evaluators/edges.py: value, draw, move ids and
priors in one ``bytes`` object), the very object the leaf's tree node holds, so that while the node lives the entry
costs only its slot in the table, and once the node is freed (a move played, a line given up at RamLimitMb) the
entry alone keeps what the network said. ``CACHE_ENTRY_BYTES`` counts an entry as if it held its edges alone:
RamLimitMb stays a ceiling.

The table is open addressing in three flat arrays (key, entry, age: 17 bytes a slot, at most three quarters full)
rather than a dict: a dict with int keys cost about 110 bytes of the process an entry (the key object, the dict's
index and entry tables, and the holes a least-recently-used order leaves in them), a fifth of a tree node's
memory. The oldest entries go first, and a hit counts as new: an entry's age is the generation of its last use, a
generation being a sixteenth of the cache's size in new entries.
"""

from __future__ import annotations

import threading
from array import array
from typing import Iterator, Optional

import numpy as np

from . import edges

#: What one entry costs the process when it alone holds its edges: measured as RSS growth in a full cache that
#: churns, 215 bytes with 20 moves, 250 with 30, 300 with 45 (the edges are 41 + 4 bytes a move; a table slot is 17
#: bytes, a quarter to three quarters full). RamLimitMb is a ceiling: counted high, for positions with many moves and
#: the moment a rebuild holds two tables.
CACHE_ENTRY_BYTES = 360

MIN_SLOTS = 1024
MAX_LOAD = 0.75
GENERATIONS = 16        # a full cache holds about this many generations; the oldest goes first
DROPPED = -1            # the key of a dropped entry's slot (keys are hashes from 1 to 2**63 - 1)
LAST_AGE = 255          # ages are bytes: the table is rebuilt (ages renumbered) before a generation passes this


def priors_for(entry: bytes, move_ids: list[int]) -> Optional[list[float]]:
    """The entry's priors in the order of ``move_ids``; None if the entry has other moves (a root whose moves were
    cut down, say)."""
    if edges.count(entry) != len(move_ids):
        return None
    by_id = dict(zip(edges.move_ids(entry), edges.priors(entry)))
    try:
        return [by_id[m] for m in move_ids]
    except KeyError:
        return None


class EvaluationCache:
    """Entries by key (a hash of the network's input: a non-zero int below 2**63), at most the size the last
    ``trim`` was given; the least recently used go first."""

    def __init__(self) -> None:
        # What the entries' priors were made with (PolicyTemperature, ForcingPriorFloor): other settings empty the cache.
        self.made_with: Optional[tuple[float, float]] = None
        self._lock = threading.Lock()  # clear() may come from the protocol's thread during a search
        self._per_generation = MIN_SLOTS
        self._reset(MIN_SLOTS)

    def _reset(self, slots: int) -> None:
        self._set_table(array("q", bytes(8 * slots)), [None] * slots, bytearray(slots))  # key 0: an empty slot
        self._count = self._used = 0   # entries; entries and holes
        self._age = 1
        self._new = 0   # entries put in this generation

    def __len__(self) -> int:
        return self._count

    def get(self, key: int) -> Optional[bytes]:
        keys, entries, ages, mask = self._table  # one read: clear() may swap the table meanwhile
        i = key & mask
        while True:
            k = keys[i]
            if k == key:
                ages[i] = self._age  # now among the most recent
                return entries[i]
            if not k:
                return None
            i = (i + 1) & mask

    def put(self, key: int, entry: bytes) -> None:
        if not key:
            return
        if self._new >= self._per_generation:
            # A new generation before the entry goes in, so that it is younger than the last one's: a small cache
            # then drops exactly its oldest entry.
            self._new = 0
            self._age += 1
            if self._age > LAST_AGE:
                with self._lock:
                    self._rebuild(self._mask + 1)
        keys, entries, ages, mask = self._table
        i = key & mask
        k = keys[i]
        while k and k != key:  # past entries and the holes of dropped ones
            i = (i + 1) & mask
            k = keys[i]
        keys[i] = key
        entries[i] = entry
        ages[i] = self._age
        if k:
            return
        self._count += 1
        self._used += 1
        self._new += 1
        if self._used > self._limit:
            with self._lock:
                self._rebuild(_slots_for(self._count))

    def trim(self, size: int) -> None:
        """Keep at most ``size`` entries: when over, drop the least recently used down to 15/16 of ``size``."""
        self._per_generation = max(1, size // GENERATIONS)
        if self._count <= size:
            return
        with self._lock:
            drop = self._count - size + size // GENERATIONS
            ages = np.frombuffer(self._ages, dtype=np.uint8)
            occupied = np.frombuffer(self._keys, dtype=np.int64) > 0
            older = np.cumsum(np.bincount(ages[occupied], minlength=LAST_AGE + 1))
            last = int(np.searchsorted(older, drop))   # the youngest age to go, partly
            gone = occupied & (ages < last)
            if last > 0:
                drop -= int(older[last - 1])
            gone[np.flatnonzero(occupied & (ages == last))[:drop]] = True
            gone_slots = np.flatnonzero(gone)
            # Holes, not empty slots: a look-up goes on past them to the keys placed beyond. A rebuild clears them
            # when they and the entries fill the table.
            np.frombuffer(self._keys, dtype=np.int64)[gone_slots] = DROPPED
            ages[gone_slots] = 0
            entries = self._entries
            for i in gone_slots.tolist():
                entries[i] = None
            self._count -= len(gone_slots)
            if 4 * _slots_for(self._count) <= self._mask + 1:
                self._rebuild(_slots_for(self._count))

    def _rebuild(self, slots: int) -> None:
        """The table again with ``slots`` slots, its entries without the holes; ages renumbered from 1."""
        where = np.flatnonzero(np.frombuffer(self._keys, dtype=np.int64) > 0)
        keys = np.frombuffer(self._keys, dtype=np.int64)[where]
        ages = np.frombuffer(self._ages, dtype=np.uint8)[where].astype(np.int64)
        entries = np.empty(len(where), dtype=object)
        old_entries = self._entries
        entries[:] = [old_entries[i] for i in where.tolist()]
        # Ages from 1 up; if they span too many generations (hits without new entries), the oldest are merged.
        first = int(ages.min()) if len(ages) else self._age
        shift = max(first - 1, self._age - LAST_AGE // 2)
        slot = _placed(keys, slots - 1)
        new_keys = np.zeros(slots, dtype=np.int64)
        new_keys[slot] = keys
        new_ages = np.zeros(slots, dtype=np.uint8)
        new_ages[slot] = np.maximum(ages - shift, 1)
        new_entries = np.full(slots, None, dtype=object)
        new_entries[slot] = entries
        self._set_table(array("q", new_keys.tobytes()), new_entries.tolist(), bytearray(new_ages.tobytes()))
        self._count = self._used = len(where)
        self._age -= shift

    def _set_table(self, keys: array, entries: list, ages: bytearray) -> None:
        self._keys, self._entries, self._ages, self._mask = keys, entries, ages, len(keys) - 1
        self._table = (keys, entries, ages, self._mask)
        self._limit = int(len(keys) * MAX_LOAD)

    def values(self) -> Iterator[bytes]:
        return (entry for entry in self._entries if entry is not None)

    def items(self) -> Iterator[tuple[int, bytes]]:
        return ((key, entry) for key, entry in zip(self._keys, self._entries) if key > 0)

    def table_bytes(self) -> int:
        """What the table itself takes (not its entries)."""
        return self._keys.itemsize * len(self._keys) + 8 * len(self._entries) + len(self._ages)

    def clear(self) -> None:
        with self._lock:
            self._reset(MIN_SLOTS)
            self.made_with = None


def _slots_for(entries: int) -> int:
    """Slots for a table that holds ``entries`` with room to grow: at most two thirds of its load limit."""
    slots = MIN_SLOTS
    while entries > slots * MAX_LOAD * 2 / 3:
        slots *= 2
    return slots


def _placed(keys: np.ndarray, mask: int) -> np.ndarray:
    """Slots for ``keys`` (distinct, non-zero) in an empty table of ``mask + 1`` slots under linear probing: each
    key at the first free slot from ``key & mask`` on, so that a look-up finds it before an empty slot."""
    slot = keys & mask
    owner = np.full(mask + 1, -1, dtype=np.int64)
    waiting = np.arange(len(keys))
    while waiting.size:
        free = owner[slot[waiting]] < 0
        candidates = waiting[free]
        claimed, first = np.unique(slot[candidates], return_index=True)
        owner[claimed] = candidates[first]
        waiting = waiting[owner[slot[waiting]] != waiting]
        slot[waiting] = (slot[waiting] + 1) & mask
    return slot
