"""The network's evaluations of recent positions, sharing the tree's memory.

An entry is the compact form the search made of an evaluated leaf (engine/edges.py: value, draw, move ids and
priors in one ``bytes`` object), the very object the leaf's tree node holds, so that while the node lives the entry
costs only its key and its slot in the dict (about 80 bytes), and once the node is freed (a move played, a line given
up at RamLimitMb) the entry alone keeps what the network said. ``CACHE_ENTRY_BYTES`` counts an entry as if it held
its edges alone: RamLimitMb stays a ceiling.

The oldest entries go first, and a hit counts as new. Eviction removes a sixteenth of the entries at once: a dict
emptied from its front one key at a time scans its deleted slots on every removal.
"""

from __future__ import annotations

import threading
from itertools import islice
from typing import Optional

from .. import edges

#: What one entry costs the process when it alone holds its edges: the edges (41 + 4 bytes a move), its 60-bit key,
#: and its share of the dict's tables in a cache that has run a while. Hits move to the front and the oldest go a
#: sixteenth at a time, so the tables hold up to three slots an entry: a cache of 100,000 entries of 20 to 45 moves
#: grew the process by 280 bytes an entry when filled, 340 to 445 once churned. RamLimitMb is a ceiling: counted high.
CACHE_ENTRY_BYTES = 480


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
    """Entries by key (a hash of the network's input), at most ``size`` of them, the least recently used go first."""

    def __init__(self) -> None:
        self._entries: dict[int, bytes] = {}
        self.temperature: Optional[float] = None  # the PolicyTemperature the entries' priors were made with
        self._lock = threading.Lock()  # clear() may come from the protocol's thread during a search

    @property
    def entries(self) -> dict[int, bytes]:
        """Key -> edges, oldest first (read only)."""
        return self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: int) -> Optional[bytes]:
        entries = self._entries
        entry = entries.pop(key, None)
        if entry is not None:
            entries[key] = entry  # now the most recent
        return entry

    def put(self, key: int, entry: bytes) -> None:
        self._entries[key] = entry

    def trim(self, size: int) -> None:
        """Keep at most ``size`` entries: when over, drop the oldest down to 15/16 of ``size``."""
        entries = self._entries
        if len(entries) <= size:
            return
        with self._lock:
            drop = len(entries) - size + size // 16
            for key in list(islice(entries, drop)):
                del entries[key]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.temperature = None
