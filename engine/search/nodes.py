# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""The tree's memory: nodes as columns of numbers, the moves and priors of each evaluated position in a block, and
the cache that finds a position's block again.

A node is a row of eleven columns (40 bytes): its visits, visits in flight, the sums of backed-up values and draw
probabilities, its proven result and the plies to it, the move into it, and three links: its first child, its next
sibling and its block. Children are a linked list in the order of their parent's moves, best prior first: the search
opens moves in that order, so the ``k``-th child is the ``k``-th move and keeps no prior of its own. Freed rows go
on a free list and are taken again first.

A block holds what the evaluator said of a position: its value and draw probability (float32), whether its first
move mates, a reference count, and the legal moves (16-bit move ids, the compiled board's: castling is the king
taking its rook) with their priors in 16 bits, best first (the prior's square root, scaled to 65535: three
significant digits down to a prior of one in a million, more than PUCT tells apart). 4 bytes a move: 150 bytes for a
middlegame's 36 moves. The nodes of a position and the cache's entry for it hold the same block, so a cache entry
costs only its slot while the node lives (the reference count frees the block with its last holder). Blocks of the
same number of moves share a free list.

The cache is a table of slots in buckets of four, keyed by the network's input (engine/evaluators/lc0_input.py): a
new entry takes an empty slot of its bucket, else the one used longest ago. Compiled by Cython (``nodes.pxd``) or
run as it reads; the columns are numpy arrays seen through memoryviews, which read and write as C numbers do.
"""

from __future__ import annotations

import numpy as np

try:
    import cython
except ImportError:
    from .. import cython_shim as cython

if cython.compiled:
    from cython.cimports.libc.math import sqrt
else:
    from math import sqrt

COMPILED = cython.compiled
if not cython.compiled:   # compiled, nodes.pxd declares them as C constants (Python sees them too)
    NO_NODE = -1
    NO_BLOCK = -1
    UNPROVEN = 2   # ``proven`` until a result is known; results are -1, 0 and 1
    HEAD = 3       # a block's units before its moves: value, draw, count/mate/references
MATE_FLAG = cython.declare(cython.uint, 0x100)
ONE_REFERENCE = cython.declare(cython.uint, 0x10000)
MOST_REFERENCES = cython.declare(cython.uint, 0xFFFF)
if not cython.compiled:
    BLOCK_LIMIT = 256   # moves a block may hold (a position has at most 218)
    BUCKET = 4
PRIOR_UNIT = cython.declare(cython.double, 1.0 / 65535.0)
AGE_MASK = cython.declare(cython.uint, 0xFFFF_FFFF)
NODE_COLUMN_BYTES = 40   # a node's row: 4 + 2 + 8 + 8 + 1 + 2 + 2 + 1 + 4 + 4 + 4, with padding to 40
SLOT_BYTES = 16          # a cache slot: key, block, age
IN_FLIGHT_MOST = 0xFFFF  # visits in flight a node counts (16 bits): the search keeps its batches within it
MAX_UNITS = cython.declare(cython.longlong, (1 << 31) - 1)   # a block's offset is a C int: 8 GiB of blocks at most


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def encode_prior(p: cython.double) -> cython.uint:
    """A prior as its 16-bit form (the square root, scaled)."""
    x: cython.double
    if p <= 0.0:
        return 0
    x = sqrt(p) * 65535.0 + 0.5
    if x >= 65535.0:
        return 65535
    return cython.cast(cython.uint, x)


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def decode_prior(u: cython.uint) -> cython.double:
    x: cython.double = u * PRIOR_UNIT
    return x * x


def _grown(column: object, capacity: int, dtype: object, used: int) -> memoryview:
    """A column of ``capacity`` numbers (calloc'd: its pages are resident once written, not before) holding the first
    ``used`` of ``column``."""
    grown = np.zeros(capacity, dtype=dtype)
    if column is not None and used:
        grown[:used] = np.asarray(column)[:used]
    return memoryview(grown)


@cython.final
@cython.cclass
class Nodes:
    """The columns of the tree's nodes, the blocks of their moves and priors, and the evaluation cache."""

    def __init__(self, capacity: int = 1024, arena_units: int = 1 << 16) -> None:
        self.capacity = 0
        self.used = 0
        self.live = 0
        self.free_head = NO_NODE
        self._grow_nodes(capacity)
        self.arena_capacity = 0
        self.top = 0
        self.arena_live = 0
        self.block_free = memoryview(np.full(BLOCK_LIMIT + 1, -1, dtype=np.int32))
        self._grow_arena(arena_units)
        self.stack = memoryview(np.zeros(1024, dtype=np.int32))
        self.buckets = 0
        self.cache_count = 0
        self.clock = 0
        self._make_cache(0)

    # ------------------------------------------------------------------------------- growing

    def _grow_nodes(self, capacity: int) -> None:
        used = self.used
        self.visits = _grown(self.visits if used else None, capacity, np.uint32, used)
        self.in_flight = _grown(self.in_flight if used else None, capacity, np.uint16, used)
        self.value_sum = _grown(self.value_sum if used else None, capacity, np.float64, used)
        self.draw_sum = _grown(self.draw_sum if used else None, capacity, np.float64, used)
        self.proven = _grown(self.proven if used else None, capacity, np.int8, used)
        self.plies = _grown(self.plies if used else None, capacity, np.uint16, used)
        self.move = _grown(self.move if used else None, capacity, np.uint16, used)
        self.child_count = _grown(self.child_count if used else None, capacity, np.uint8, used)
        self.first_child = _grown(self.first_child if used else None, capacity, np.int32, used)
        self.next_sibling = _grown(self.next_sibling if used else None, capacity, np.int32, used)
        self.block = _grown(self.block if used else None, capacity, np.int32, used)
        self.capacity = capacity

    def _grow_arena(self, units: int) -> None:
        arena = np.zeros(units, dtype=np.uint32)
        if self.top:
            arena[:self.top] = np.asarray(self.units)[:self.top]
        self.units = memoryview(arena)
        self.halves = memoryview(arena.view(np.uint16))
        self.floats = memoryview(arena.view(np.float32))
        self.arena_capacity = units

    def _grow_stack(self) -> None:
        stack = np.zeros(2 * len(self.stack), dtype=np.int32)
        stack[:len(self.stack)] = np.asarray(self.stack)
        self.stack = memoryview(stack)

    # ------------------------------------------------------------------------------- nodes

    @cython.ccall
    @cython.exceptval(-1, check=True)
    def new_node(self, move: cython.int) -> cython.int:
        """A fresh node reached by ``move``: no visits, unproven, no children, no block."""
        i: cython.int = self.free_head
        if i != NO_NODE:
            self.free_head = self.next_sibling[i]
        else:
            if self.used == self.capacity:
                self._grow_nodes(2 * self.capacity)
            i = self.used
            self.used += 1
        self.visits[i] = 0
        self.in_flight[i] = 0
        self.value_sum[i] = 0.0
        self.draw_sum[i] = 0.0
        self.proven[i] = UNPROVEN
        self.plies[i] = 0
        self.move[i] = move
        self.child_count[i] = 0
        self.first_child[i] = NO_NODE
        self.next_sibling[i] = NO_NODE
        self.block[i] = NO_BLOCK
        self.live += 1
        return i

    @cython.ccall
    @cython.exceptval(-1, check=True)
    def free_below(self, top: cython.int) -> cython.longlong:
        """Free every node below ``top`` (not ``top`` itself, which keeps its statistics and block and loses its
        children); returns how many of them had a visit."""
        count: cython.longlong = 0
        depth: cython.int = self.push_children(top, 0)
        i: cython.int
        self.first_child[top] = NO_NODE
        self.child_count[top] = 0
        while depth:
            depth -= 1
            i = self.stack[depth]
            depth = self.push_children(i, depth)
            if self.visits[i]:
                count += 1
            self.release(i)
        return count

    @cython.cfunc
    def push_children(self, node: cython.int, depth: cython.int) -> cython.int:
        """Push ``node``'s children on ``stack`` from ``depth``; returns the depth after them."""
        c: cython.int = self.first_child[node]
        while c != NO_NODE:
            if depth == len(self.stack):
                self._grow_stack()
            self.stack[depth] = c
            depth += 1
            c = self.next_sibling[c]
        return depth

    @cython.cfunc
    @cython.exceptval(check=False)
    def release(self, i: cython.int) -> cython.void:
        """Put node ``i`` on the free list (its children are the caller's business)."""
        if self.block[i] != NO_BLOCK:
            self.drop_block(self.block[i])
            self.block[i] = NO_BLOCK
        self.first_child[i] = NO_NODE
        self.next_sibling[i] = self.free_head
        self.free_head = i
        self.live -= 1

    @cython.ccall
    def clear(self) -> None:
        """Forget every node and block, the cache's too."""
        self.cache_clear()
        self.used = 0
        self.live = 0
        self.free_head = NO_NODE
        self.top = 0
        self.arena_live = 0
        for i in range(BLOCK_LIMIT + 1):
            self.block_free[i] = -1

    # ------------------------------------------------------------------------------- blocks

    @cython.ccall
    @cython.exceptval(-1, check=True)
    def new_block(self, count: cython.int, value: cython.float, draw: cython.float) -> cython.int:
        """A block for ``count`` moves (filled by ``set_edge``), referenced by no one yet."""
        b: cython.int = self.block_free[count]
        size: cython.int = HEAD + count
        if b != NO_BLOCK:
            self.block_free[count] = cython.cast(cython.int, self.units[b + 2]) - 1
        else:
            if self.top + size > MAX_UNITS:
                raise MemoryError("the tree's blocks of moves are at their most, 8 GiB")
            while self.top + size > self.arena_capacity:
                self._grow_arena(min(2 * self.arena_capacity, MAX_UNITS))
            b = self.top
            self.top += size
        self.floats[b] = value
        self.floats[b + 1] = draw
        self.units[b + 2] = count
        self.arena_live += size
        return b

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def set_edge(self, b: cython.int, k: cython.int, move: cython.int, prior: cython.double) -> cython.void:
        count: cython.int = self.units[b + 2] & 0xFF
        self.halves[2 * (cython.cast(cython.Py_ssize_t, b) + HEAD) + k] = move
        self.halves[2 * (cython.cast(cython.Py_ssize_t, b) + HEAD) + count + k] = encode_prior(prior)

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def edge_count(self, b: cython.int) -> cython.int:
        return self.units[b + 2] & 0xFF

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def edge_move(self, b: cython.int, k: cython.int) -> cython.int:
        return self.halves[2 * (cython.cast(cython.Py_ssize_t, b) + HEAD) + k]

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def edge_prior(self, b: cython.int, k: cython.int) -> cython.double:
        count: cython.int = self.units[b + 2] & 0xFF
        return decode_prior(self.halves[2 * (cython.cast(cython.Py_ssize_t, b) + HEAD) + count + k])

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def first_mates(self, b: cython.int) -> cython.bint:
        return (self.units[b + 2] & MATE_FLAG) != 0

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def set_first_mates(self, b: cython.int) -> cython.void:
        self.units[b + 2] |= MATE_FLAG

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def hold_block(self, b: cython.int) -> cython.void:
        if (self.units[b + 2] >> 16) < MOST_REFERENCES:
            self.units[b + 2] += ONE_REFERENCE

    @cython.cfunc
    @cython.exceptval(check=False)
    def drop_block(self, b: cython.int) -> cython.void:
        """One holder less; the block is free with its last (a block held by the most references stays for good)."""
        head: cython.uint = self.units[b + 2]
        count: cython.int = head & 0xFF
        if (head >> 16) >= MOST_REFERENCES:
            return
        head -= ONE_REFERENCE
        if head >> 16:
            self.units[b + 2] = head
            return
        self.units[b + 2] = self.block_free[count] + 1   # (the next free block of its size, plus one: 0 for none)
        self.block_free[count] = b
        self.arena_live -= HEAD + count

    def block_contents(self, b: int) -> tuple:
        """(value, draw, first move mates, move ids, priors) of block ``b``, for Python."""
        count = self.edge_count(b)
        return (self.floats[b], self.floats[b + 1], self.first_mates(b),
                [self.edge_move(b, k) for k in range(count)], [self.edge_prior(b, k) for k in range(count)])

    # ------------------------------------------------------------------------------- the cache

    def _make_cache(self, buckets: int) -> None:
        slots = max(buckets, 1) * BUCKET
        self.cache_keys = memoryview(np.zeros(slots, dtype=np.uint64))
        self.cache_blocks = memoryview(np.full(slots, -1, dtype=np.int32))
        self.cache_ages = memoryview(np.zeros(slots, dtype=np.uint32))
        self.buckets = buckets
        self.cache_count = 0

    @cython.ccall
    def cache_resize(self, entries: cython.longlong) -> None:
        """Keep at most about ``entries`` evaluations (0: none); a new size starts the cache afresh."""
        buckets: cython.longlong = entries // BUCKET
        if buckets == self.buckets:
            return
        self.cache_clear()
        self._make_cache(buckets)

    @cython.ccall
    def cache_clear(self) -> None:
        i: cython.int
        for i in range(self.buckets * BUCKET):
            if self.cache_keys[i]:
                self.cache_keys[i] = 0
                self.drop_block(self.cache_blocks[i])
                self.cache_blocks[i] = NO_BLOCK
        self.cache_count = 0

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def bucket(self, key: cython.ulonglong) -> cython.int:
        """The first slot of ``key``'s bucket (both halves of the key pick it)."""
        return cython.cast(cython.int, (key ^ (key >> 32)) % self.buckets) * BUCKET

    @cython.ccall
    @cython.exceptval(check=False)
    def cache_get(self, key: cython.ulonglong) -> cython.int:
        """The block cached for ``key`` (non-zero), or NO_BLOCK; a hit counts as a use."""
        at: cython.int
        j: cython.int
        if not self.buckets:
            return NO_BLOCK
        at = self.bucket(key)
        for j in range(BUCKET):
            if self.cache_keys[at + j] == key:
                self.cache_ages[at + j] = self.clock
                return self.cache_blocks[at + j]
        return NO_BLOCK

    @cython.ccall
    @cython.exceptval(check=False)
    def cache_put(self, key: cython.ulonglong, b: cython.int) -> cython.void:
        """Cache block ``b`` for ``key``: in its bucket's empty slot, else in place of the entry used longest ago."""
        at: cython.int
        j: cython.int
        slot: cython.int = -1
        oldest: cython.uint = 0
        age: cython.uint
        if not self.buckets:
            return
        at = self.bucket(key)
        for j in range(BUCKET):
            if self.cache_keys[at + j] == key:
                slot = at + j
                break
        if slot < 0:
            for j in range(BUCKET):
                if not self.cache_keys[at + j]:
                    slot = at + j
                    break
        if slot < 0:
            for j in range(BUCKET):
                age = (self.clock - self.cache_ages[at + j]) & AGE_MASK
                if slot < 0 or age > oldest:
                    slot = at + j
                    oldest = age
        self.hold_block(b)
        if self.cache_keys[slot]:
            self.drop_block(self.cache_blocks[slot])
        else:
            self.cache_count += 1
        self.cache_keys[slot] = key
        self.cache_blocks[slot] = b
        self.cache_ages[slot] = self.clock
        self.clock = (self.clock + 1) & AGE_MASK

    # ------------------------------------------------------------------------------- what it holds

    def bytes_held(self) -> dict:
        """Bytes by part: the nodes' rows in use, the blocks in use, the cache's table."""
        return {"nodes": self.live * NODE_COLUMN_BYTES, "blocks": self.arena_live * 4,
                "cache": self.buckets * BUCKET * SLOT_BYTES}

    def blocks_span(self) -> int:
        """Bytes from the arena's start to its highest block, the free ones between included: what the blocks'
        32-bit offsets must reach."""
        return self.top * 4
