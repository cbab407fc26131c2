# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Mates by checks alone, over the probe's board: proven exactly, and written out as lines.

Few moves to try (the checks, then every reply) let this search reach 11 plies where the alpha-beta reaches 6. A
found mate is exact: every defence was tried, and a defence that repeats a position (or leaves too little material
to mate) holds. Positions a check fails to mate from within n moves are remembered for the rest of the search
(keyed by position and n; as before this core, the memory ignores the path's repetitions, which only ever turn a
mate into a failure).

Compiled by Cython (``mates.pxd``) or run as it reads, with the same results.
"""

from __future__ import annotations

from array import array
from typing import Callable, Optional

try:
    import cython
except ImportError:
    from .. import cython_shim as cython

from ..board.board import Board
from .budget import Budget, never

if not cython.compiled:   # compiled, mates.pxd takes them from board.pxd as C constants
    from ..board.board import KING, MAX_MOVES, NO_SQUARE

COMPILED = cython.compiled   # this module runs compiled (core.py reports it)

FULL = cython.declare(cython.ulonglong, 0xFFFF_FFFF_FFFF_FFFF)
FAILED_BITS = cython.declare(cython.int, 16)   # positions remembered as failures: 65,536 slots, replaced on clashes


@cython.final
@cython.cclass
class MateSearch(Budget):
    """Mates by checks from the position on ``board`` until ``deadline`` (``time.monotonic()``), ``stopped()`` or
    ``max_nodes`` positions; ``aborted`` then says a search did not finish."""

    def __init__(self, board: Board, deadline: float, stopped: Callable[[], bool] = never,
                 max_nodes: Optional[int] = None) -> None:
        Budget.__init__(self, deadline, stopped, max_nodes)
        self.board = board
        self.failed_keys = array("Q", bytes(8 << FAILED_BITS))
        self.failed_stamps = array("i", bytes(4 << FAILED_BITS))
        self.stamp = 1
        self.order = array("i", bytes(4 * MAX_MOVES))

    @cython.cfunc
    @cython.inline
    @cython.exceptval(check=False)
    def failed_slot(self, n: cython.int) -> cython.ulonglong:
        return (self.board.key ^ (cython.cast(cython.ulonglong, n) * 0x9E37_79B9_7F4A_7C15)) & FULL

    @cython.cfunc
    @cython.exceptval(check=False)
    def checks(self, start: cython.int) -> cython.int:
        """Write the legal checking moves from ``start``: captures first, then by the distance from the square they
        land on to the other king (they end the defence soonest); return the index after the last."""
        board: Board = self.board
        end: cython.int = board.generate_legal(start)
        king: cython.int = board.king_square(board.turn ^ 1)
        n: cython.int = start
        i: cython.int
        k: cython.int
        move: cython.int
        to: cython.int
        key: cython.int
        for i in range(start, end):
            move = board.moves[i]
            if not board.gives_check(move):
                continue
            to = (move >> 6) & 63
            key = 0 if king == NO_SQUARE else max(abs((to & 7) - (king & 7)), abs((to >> 3) - (king >> 3)))
            if not board.is_capture(move):
                key += 8
            k = n
            while k > start and self.order[k - 1 - start] > key:   # insertion: stable, as the generator's order
                board.moves[k] = board.moves[k - 1]
                self.order[k - start] = self.order[k - 1 - start]
                k -= 1
            board.moves[k] = move
            self.order[k - start] = key
            n += 1
        return n

    @cython.cfunc
    @cython.exceptval(check=False)
    def replies(self, start: cython.int) -> cython.int:
        """Write the legal replies from ``start``, captures first (taking the checking piece is the defence most
        likely to hold); return the index after the last."""
        return self.board.generate_legal(start)

    @cython.ccall
    def mating_check(self, n: cython.int) -> cython.int:
        """A checking move after which every defence is mated within n - 1 more moves; 0 if none (or aborted)."""
        board: Board = self.board
        start: cython.int = board.ply * MAX_MOVES
        end: cython.int
        i: cython.int
        move: cython.int
        key: cython.ulonglong = self.failed_slot(n)
        slot: cython.ulonglong = key & ((1 << FAILED_BITS) - 1)
        if self.failed_stamps[slot] == self.stamp and self.failed_keys[slot] == key:
            return 0
        end = self.checks(start)
        for i in range(start, end):
            move = board.moves[i]
            if self.tick():
                return 0
            board.make(move)
            if not board.is_repetition() and self.all_defences_lose(n - 1):
                board.unmake()
                return move
            board.unmake()
            if self.aborted:
                return 0
        self.failed_keys[slot] = key
        self.failed_stamps[slot] = self.stamp
        return 0

    @cython.cfunc
    def all_defences_lose(self, n: cython.int) -> cython.bint:
        """The side to move is in check: is it mated now, or after any reply within n moves?"""
        board: Board = self.board
        start: cython.int = board.ply * MAX_MOVES
        end: cython.int = self.replies(start)
        i: cython.int
        if end == start:
            return True   # checks only: no legal move here is stalemate
        if n == 0:
            return False
        for i in range(start, end):
            if self.tick():
                return False
            board.make(board.moves[i])
            if board.is_repetition() or board.is_insufficient_material() or not self.mating_check(n):
                board.unmake()
                return False
            board.unmake()
        return True

    def find(self, max_moves: int) -> Optional[tuple]:
        """The side to move's fastest mate by checks in at most ``max_moves`` moves: (first move, n), or None."""
        if self.board.halfmove + 2 * max_moves > 100:
            max_moves = max(0, (100 - self.board.halfmove) // 2)
        for n in range(1, max_moves + 1):
            move = self.mating_check(n)
            if self.aborted:
                return None
            if move:
                return move, n
        return None

    def longest_defence(self, n: int) -> Optional[tuple]:
        """The side to move, in check, is mated within ``n`` moves: (moves to mate, the reply that delays it most,
        the mating check that answers it), or None if no reply is left (mate) or one of them escapes."""
        board = self.board
        start = board.ply * MAX_MOVES
        replies = [board.moves[i] for i in range(start, self.replies(start))]
        longest = None
        for reply in replies:
            if self.tick():
                return None
            board.make(reply)
            fastest = None
            if not board.is_repetition() and not board.is_insufficient_material():
                self.stamp += 1   # fresh: a failure found under another reply's path may not hold
                for m in range(1, n + 1):
                    check = self.mating_check(m)
                    if check:
                        fastest = (m, reply, check)
                        break
            board.unmake()
            if fastest is None:
                return None
            if longest is None or fastest[0] > longest[0]:
                longest = fastest
        return longest

    def line(self, move: int, n: int) -> list:
        """The line of the mate by checks ``find`` found (``move``, mating in ``n``): against each check the defence
        that holds out longest, then the fastest mating check, down to checkmate; cut short (to ``move`` at least)
        when the search stops."""
        board = self.board
        line = []
        step = (n, 0, move)
        while step is not None:
            left, reply, check = step
            if reply:
                board.make(reply)
                line.append(reply)
            board.make(check)
            line.append(check)
            step = self.longest_defence(left - 1)
        for _ in line:
            board.unmake()
        return line
