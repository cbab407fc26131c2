"""RamLimitMb: what the tree and the evaluators' caches hold, and room made at the cap so that the search goes on.

The tree is counted in nodes (``Tree.nodes``, the nodes that have had a visit), each at ``NODE_BYTES``, the
process's memory growth per node measured from outside; the caches count themselves
(``Evaluator.memory_bytes``), in the worker processes too.

At the cap the search does not stop (lc0's does): it frees the subtrees it has given up on most, down to
``ROOM_SHARE`` of what the tree may hold. A given-up subtree hangs from a child that is not its parent's most visited;
those with the smallest share of their parent's visits go first. Subtrees smaller than ``SMALLEST_SHARE`` of the
nodes to free are not looked at, so that a pass frees a lot by looking at few nodes. The child itself stays
with its visits, value, draws, moves and priors, so the reported lines and scores do not change, and its subtree
grows again if the search comes back to it. A subtree that holds a proven result (a mate the solver found, a
tablebase result) is never freed, nor one with a visit in flight.

The process's allocator matters as much as the objects: glibc's malloc raises its mmap threshold (up to 32 MB) each
time it frees a large mapped block, such as the network cache's table after it doubles. From then on blocks up to
that size (a batch's input planes, the next table) come from the heap, whose holes the search's churn keeps
resident: 670 bytes of RSS a node instead of 611 in `go nodes 30000`. ``keep_large_blocks_mapped`` fixes the
threshold at start-up.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Callable, Optional

from .tree import NO_CHILDREN, NODE_BYTES, Node, Tree

MB = 1 << 20
ROOM_SHARE = 0.9      # a pass frees the tree down to this share of what it may hold
SMALLEST_SHARE = 1 / 256  # subtrees smaller than this share of the nodes to free are not looked at
STOP_CHECK_NODES = 4096  # nodes counted between looks at stop
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
    """The tree's share of ``RamLimitMb`` (MB; 0: no limit), what the caches take being counted first."""

    def __init__(self, tree: Tree, limit_mb: int, cache_bytes: Callable[[], int]) -> None:
        self.tree, self.limit_mb, self.cache_bytes = tree, limit_mb, cache_bytes

    def tree_allowance(self) -> Optional[int]:
        """Nodes the tree may hold now; None without a limit."""
        if not self.limit_mb:
            return None
        return max(0, (self.limit_mb * MB - self.cache_bytes()) // NODE_BYTES)

    def over(self) -> bool:
        allowance = self.tree_allowance()
        return allowance is not None and self.tree.nodes >= allowance

    def make_room(self, stopped: Callable[[], bool] = lambda: False) -> int:
        """Free given-up subtrees until the tree is at ``ROOM_SHARE`` of its allowance; returns the nodes freed
        (0: nothing could be freed, the tree stays full)."""
        allowance = self.tree_allowance()
        if allowance is None:
            return 0
        goal = self.tree.nodes - int(allowance * ROOM_SHARE)
        freed = free_given_up(self.tree.root, goal, stopped) if goal > 0 else 0
        self.tree.nodes -= freed
        return freed


def free_given_up(root: Node, goal: int, stopped: Callable[[], bool] = lambda: False) -> int:
    """Free subtrees below ``root`` the search has given up on, smallest visit share first, until about ``goal``
    nodes are freed; returns the nodes freed."""
    smallest = max(2, int(min(goal, root.n) * SMALLEST_SHARE))
    candidates: list[tuple[float, int, Node]] = []
    todo = [root]
    while todo:
        node = todo.pop()
        if node.proven is not None or not node.children:
            continue
        best = max(node.children, key=_visits)
        for child in node.children:
            if child.n < smallest:
                continue
            todo.append(child)
            if child is not best and child.children and not child.in_flight and child.proven is None:
                candidates.append((child.n / node.n, id(child), child))
    candidates.sort(key=lambda c: c[:2])
    freed = 0
    gone: set[int] = set()  # candidates inside a subtree already freed
    for _, ident, child in candidates:
        if freed >= goal or stopped():
            break
        if ident in gone:
            continue
        count = _count_if_freeable(child, gone, stopped)
        if count is not None:
            child.children = NO_CHILDREN
            child.state = None   # a node without children keeps no position (engine/search/search.py)
            freed += count
    return freed


def _visits(node: Node) -> int:
    return node.n


def _count_if_freeable(top: Node, gone: set[int], stopped: Callable[[], bool]) -> Optional[int]:
    """The visited nodes below ``top``; None if one of them holds a proven result that is not a finished game (a
    solver's proof, kept), or stop came meanwhile. Nodes met are added to ``gone``."""
    count = 0
    met: list[int] = []
    todo = list(top.children)
    while todo:
        node = todo.pop()
        if node.proven is not None and not node.terminal:
            return None
        if node.n:
            count += 1
        met.append(id(node))
        if len(met) % STOP_CHECK_NODES == 0 and stopped():
            return None
        todo.extend(node.children)
    gone.update(met)
    return count


def tree_memory_note(tree: Tree, limit_mb: int, freed: int) -> str:
    """What the search says the first time it makes room in a search."""
    return (f"RamLimitMb reached ({limit_mb} MB, {tree.nodes + freed} nodes): freed {freed} nodes of lines the "
            "search has given up on; the search goes on")

