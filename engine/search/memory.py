"""RamLimitMb: what the tree and the evaluation cache hold, and room made at the cap so that the search goes on.

The tree counts its own bytes (engine/search/nodes.py): the rows of its live nodes, the blocks of moves and priors
that nodes or the cache hold, and the cache's table; what else grows during a search (a Python evaluator's own cache,
the worker processes) counts itself. Freed rows and blocks are taken again before the columns grow, so the process
stays at what the tree held at its largest.

At the cap the search does not stop (lc0's does): it frees the subtrees it has given up on most, down to
``ROOM_SHARE`` of the limit. A given-up subtree hangs from a child that is not its parent's most visited; those with
the smallest share of their parent's visits go first. Subtrees smaller than ``SMALLEST_SHARE`` of the nodes to free
are not looked at, so that a pass frees a lot by looking at few nodes. The child itself stays with its visits, value,
draws, moves and priors, so the reported lines and scores do not change, and its subtree grows again if the search
comes back to it. A subtree that holds a proven result (a mate the solver found, a tablebase result) is never freed,
nor one with a visit in flight.

The process's allocator matters as much as the tree: glibc's malloc raises its mmap threshold (up to 32 MB) each
time it frees a large mapped block, such as a column of nodes after it doubles. From then on blocks up to that size
(a batch's input planes, the next column) come from the heap, whose holes stay resident. ``keep_large_blocks_mapped``
fixes the threshold at start-up.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Callable

from ..params import TREE_MAX_MB, ram_limit_mb
from .tree import Tree

MB = 1 << 20
ROOM_SHARE = 0.9      # a pass frees the tree down to this share of what it may hold
SMALLEST_SHARE = 1 / 256  # subtrees smaller than this share of the nodes to free are not looked at
MMAP_THRESHOLD_BYTES = 256 << 10  # blocks from this size up are mapped, and unmapped when freed
M_MMAP_THRESHOLD = -3             # glibc's mallopt parameter (malloc.h)


def keep_large_blocks_mapped() -> None:
    """Fix glibc's mmap threshold at ``MMAP_THRESHOLD_BYTES`` (see the module's docstring), which also stops it from
    moving; on other systems and C libraries, nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)


class MemoryBudget:
    """``RamLimitMb`` (MB; 0: ``TREE_MAX_MB``) for the tree, with ``other_bytes()`` (what else grows) counted first."""

    def __init__(self, tree: Tree, limit_mb: int, other_bytes: Callable[[], int]) -> None:
        self.tree, self.limit_mb, self.other_bytes = tree, ram_limit_mb(limit_mb), other_bytes

    def held(self) -> int:
        """The bytes counted against the limit now."""
        return self.tree.bytes_held() + self.other_bytes()

    def over(self) -> bool:
        return self.held() >= self.limit_mb * MB or self.tree.nodes.blocks_span() >= TREE_MAX_MB * MB

    def make_room(self, stopped: Callable[[], bool] = lambda: False) -> int:
        """Free given-up subtrees until the tree is at ``ROOM_SHARE`` of the limit; returns the nodes freed (0: nothing
        could be freed, the tree stays full)."""
        tree = self.tree
        excess = self.held() - int(self.limit_mb * MB * ROOM_SHARE)
        per_node = max(1.0, tree.bytes_held() / max(tree.nodes.live, 1))
        goal = int(excess / per_node) + 1
        if goal <= 0:
            return 0
        smallest = max(2, int(min(goal, tree.root_node.n) * SMALLEST_SHARE))
        return tree.free_given_up(goal, smallest, stopped)


def tree_memory_note(tree: Tree, limit_mb: int, freed: int) -> str:
    """What the search says the first time it makes room in a search."""
    return (f"RamLimitMb reached ({limit_mb} MB, {tree.visited + freed} nodes): freed {freed} nodes of lines the "
            "search has given up on; the search goes on")
