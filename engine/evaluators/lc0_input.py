# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""lc0's 112 input planes written straight from bitboards, for the tree's leaves: compiled, no python-chess.

A game's positions, and those of the tree's line below it, are kept as records (:class:`Positions`): the eight
bitboards lc0 reads, the castling rooks, the side to move, lc0's en passant flag, the half-move clock, the position's
Zobrist key (engine/board/board.py) and lc0's repetition flag, worked out once when the record is written. The planes
of a record, with the seven records before it as history, are then a few loops over set bits; their cache key is a
hash of the same records' keys. ``lc0_planes.py`` is the reference this must equal byte for byte (the tests compare
them on games with repetitions, castling, en passant and Chess960); it stays the encoder of the training tools.

Compiled by Cython (``lc0_input.pxd``) or run as it reads, with the same results.
"""

from __future__ import annotations

import numpy as np

try:
    import cython
except ImportError:
    from .. import cython_shim as cython

from ..board.board import Board, lsb

if not cython.compiled:   # compiled, lc0_input.pxd takes them from board.pxd as C constants
    from ..board.board import BLACK, WHITE

COMPILED = cython.compiled
FULL = cython.declare(cython.ulonglong, 0xFFFF_FFFF_FFFF_FFFF)
HISTORY = cython.declare(cython.int, 8)             # positions a record's planes show: itself and seven before
PLANES = cython.declare(cython.int, 112)
SQUARES = cython.declare(cython.int, 64)
ROW = cython.declare(cython.int, 112 * 64)          # floats a position's planes take
AUX = cython.declare(cython.int, 104)               # the first plane after the history
MAX_RULE50 = cython.declare(cython.int, 0xFFFF)      # the rule-50 plane's largest value (lc0_planes.MAX_RULE50)
MIX = cython.declare(cython.ulonglong, 0x9E37_79B9_7F4A_7C15)
KEY_SEED = cython.declare(cython.ulonglong, 0x243F_6A88_85A3_08D3)
REPEATED_KEY = cython.declare(cython.ulonglong, 0x5851_F42D_4C95_7F2D)
NO_HISTORY_KEY = cython.declare(cython.ulonglong, 0x1405_7B7E_F767_814F)


@cython.cfunc
@cython.inline
@cython.exceptval(check=False)
def mix(h: cython.ulonglong, x: cython.ulonglong) -> cython.ulonglong:
    """One step of the cache key's hash (multiplication modulo 2**64, then a shift to spread the high bits down)."""
    h = ((h ^ x) * MIX) & FULL
    return h ^ (h >> 29)


@cython.final
@cython.cclass
class Positions:
    """Records of positions by index: a game's from its first position (index 0), then the tree's line below its
    root. ``set_start`` tells what lc0 shows for the history before the first position."""

    def __init__(self, capacity: int = 512) -> None:
        self.capacity = 0
        self.first_is_start = True
        self.fill_array = np.zeros(8, dtype=np.uint64)
        self.fill = memoryview(self.fill_array)
        self.fill_key = 0
        self._grow(capacity)

    def _grow(self, capacity: int) -> None:
        """Room for ``capacity`` records, those kept."""
        old = self.capacity
        bitboards = np.zeros(8 * capacity, dtype=np.uint64)
        castling = np.zeros(capacity, dtype=np.uint64)
        keys = np.zeros(capacity, dtype=np.uint64)
        small = np.zeros(3 * capacity, dtype=np.int32)   # side to move, en passant flag, half-move clock
        repeated = np.zeros(capacity, dtype=np.uint8)
        if old:
            bitboards[:8 * old] = np.asarray(self.bitboards)
            castling[:old] = np.asarray(self.castling)
            keys[:old] = np.asarray(self.keys)
            small[:3 * old] = np.asarray(self.small)
            repeated[:old] = np.asarray(self.repeated)
        self.bitboards, self.castling, self.keys = memoryview(bitboards), memoryview(castling), memoryview(keys)
        self.small, self.repeated = memoryview(small), memoryview(repeated)
        self.capacity = capacity

    def reserve(self, count: int) -> None:
        """Room for records up to index ``count - 1``."""
        if count > self.capacity:
            self._grow(max(count, 2 * self.capacity))

    def set_start(self, first_is_start: bool, fill: tuple, fill_key: int) -> None:
        """lc0's history before the game's first position: nothing when it is the standard start position, else the
        first position again (``fill``: its eight bitboards White first, a double step undone; ``fill_key`` names
        it in cache keys)."""
        self.first_is_start = first_is_start
        for i in range(8):
            self.fill[i] = fill[i]
        self.fill_key = fill_key & FULL

    def set_record(self, index: int, bitboards: tuple, castling: int, turn: bool, ep: int, halfmove: int,
                   key: int) -> None:
        """Write record ``index`` (the records before it written already): ``bitboards`` White's pieces, Black's,
        then pawns to kings; ``castling`` the castling rooks (python-chess's cleaned rights); ``ep`` lc0's en passant
        flag (the square when a pawn of the side to move attacks it, else 64); ``key`` the Zobrist key."""
        i: cython.int
        self.reserve(index + 1)
        for i in range(8):
            self.bitboards[8 * index + i] = bitboards[i]
        self.castling[index] = castling
        self.keys[index] = key & FULL
        self.small[3 * index] = 1 if turn else 0
        self.small[3 * index + 1] = ep
        self.small[3 * index + 2] = min(max(halfmove, 0), MAX_RULE50)
        self.repeated[index] = self.repeats(index)

    @cython.cfunc
    @cython.exceptval(check=False)
    def copy_board(self, index: cython.int, board: Board, ep: cython.int) -> cython.void:
        """Write record ``index`` from the compiled ``board`` (its position after the move that made lc0's en passant
        square ``ep`` or NO_SQUARE); the caller has reserved room."""
        at: cython.int = 8 * index
        self.bitboards[at] = board.by_color[WHITE]
        self.bitboards[at + 1] = board.by_color[BLACK]
        self.bitboards[at + 2] = board.by_type[1]
        self.bitboards[at + 3] = board.by_type[2]
        self.bitboards[at + 4] = board.by_type[3]
        self.bitboards[at + 5] = board.by_type[4]
        self.bitboards[at + 6] = board.by_type[5]
        self.bitboards[at + 7] = board.by_type[6]
        self.castling[index] = board.castling
        self.keys[index] = board.key
        self.small[3 * index] = board.turn
        self.small[3 * index + 1] = ep
        self.small[3 * index + 2] = board.halfmove if board.halfmove < MAX_RULE50 else MAX_RULE50
        self.repeated[index] = self.repeats(index)

    @cython.cfunc
    @cython.exceptval(check=False)
    def same(self, a: cython.int, b: cython.int) -> cython.bint:
        """Positions ``a`` and ``b`` are equal as lc0 compares them: pieces, side to move, en passant flag, castling."""
        i: cython.int
        if self.small[3 * a] != self.small[3 * b] or self.small[3 * a + 1] != self.small[3 * b + 1]:
            return False
        if self.castling[a] != self.castling[b]:
            return False
        for i in range(8):
            if self.bitboards[8 * a + i] != self.bitboards[8 * b + i]:
                return False
        return True

    @cython.ccall
    @cython.exceptval(check=False)
    def repeats(self, k: cython.int) -> cython.bint:
        """lc0's repetition flag of position ``k``: an equal position an even number of plies earlier, with no capture
        or pawn move in between (lc0_planes._repeated's scan)."""
        j: cython.int
        if self.small[3 * k + 2] < 4 or k < 4:
            return False
        j = k - 2
        while j >= 0:
            if self.bitboards[8 * j] == self.bitboards[8 * k] and self.bitboards[8 * j + 1] == self.bitboards[8 * k + 1] \
                    and self.same(j, k):
                return True
            if self.small[3 * j + 2] < 2:
                return False
            j -= 2
        return False

    @cython.cfunc
    @cython.exceptval(check=False)
    def put(self, out: cython.float[::1], plane: cython.int, bits: cython.ulonglong, flip: cython.int) -> cython.void:
        """The set squares of ``bits`` as ones of ``plane`` (ranks mirrored with ``flip`` 56 for Black to move)."""
        while bits:
            out[plane * 64 + (lsb(bits) ^ flip)] = 1.0
            bits &= bits - 1

    @cython.cfunc
    @cython.exceptval(check=False)
    def fill_plane(self, out: cython.float[::1], plane: cython.int, value: cython.float) -> cython.void:
        i: cython.int
        for i in range(64):
            out[plane * 64 + i] = value

    @cython.cfunc
    @cython.exceptval(check=False)
    def write(self, k: cython.int, out: cython.float[::1], history: cython.bint) -> cython.void:
        """The planes of position ``k`` into ``out`` (112 * 64 floats, all zero before), with its seven
        predecessors as history unless ``history`` is false."""
        turn: cython.int = self.small[3 * k]
        flip: cython.int = 0 if turn == WHITE else 56
        ours: cython.int = 0 if turn == WHITE else 1      # which of the record's colour bitboards is the mover's
        slots: cython.int = HISTORY if history else 1
        i: cython.int
        t: cython.int
        g: cython.int
        at: cython.int
        own: cython.ulonglong
        other: cython.ulonglong
        piece: cython.ulonglong
        rooks: cython.ulonglong
        king: cython.ulonglong
        for i in range(slots):
            g = k - i
            if g >= 0:
                at = 8 * g
                own = self.bitboards[at + ours]
                other = self.bitboards[at + 1 - ours]
                for t in range(6):
                    piece = self.bitboards[at + 2 + t]
                    self.put(out, 13 * i + t, own & piece, flip)
                    self.put(out, 13 * i + 6 + t, other & piece, flip)
                if history and self.repeated[g]:
                    self.fill_plane(out, 13 * i + 12, 1.0)
            elif not self.first_is_start:
                own = self.fill[ours]
                other = self.fill[1 - ours]
                for t in range(6):
                    piece = self.fill[2 + t]
                    self.put(out, 13 * i + t, own & piece, flip)
                    self.put(out, 13 * i + 6 + t, other & piece, flip)
        # Castling: a right is a rook on the back rank; queenside when it stands on the a-side of its king.
        for i in range(2):   # 0: the side to move, 1: the other
            t = turn if i == 0 else 1 - turn
            rooks = self.castling[k] & (0xFF if t == WHITE else 0xFF00_0000_0000_0000)
            king = self.bitboards[8 * k + 7] & self.bitboards[8 * k + (0 if t == WHITE else 1)]
            if rooks & (king - 1) & FULL:
                self.fill_plane(out, AUX + 2 * i, 1.0)
            if rooks & ~((king - 1) & FULL) & FULL:
                self.fill_plane(out, AUX + 2 * i + 1, 1.0)
        if turn != WHITE:
            self.fill_plane(out, AUX + 4, 1.0)
        self.fill_plane(out, AUX + 5, self.small[3 * k + 2])
        self.fill_plane(out, AUX + 7, 1.0)

    @cython.ccall
    @cython.exceptval(check=False)
    def cache_key(self, k: cython.int, history: cython.bint) -> cython.ulonglong:
        """A 64-bit hash of what the planes of ``k`` show (and of its legal moves): equal planes, equal keys; other
        planes collide only by chance. Never 0."""
        h: cython.ulonglong = KEY_SEED
        i: cython.int
        g: cython.int
        slots: cython.int = HISTORY if history else 1
        for i in range(slots):
            g = k - i
            if g >= 0:
                h = mix(h, self.keys[g] ^ (REPEATED_KEY if history and self.repeated[g] else 0))
            else:
                h = mix(h, self.fill_key)
        h = mix(h, self.small[3 * k + 2] if history else self.small[3 * k + 2] ^ NO_HISTORY_KEY)
        h ^= h >> 32
        return h if h else 1

    def planes(self, k: int, history: bool = True) -> np.ndarray:
        """The [112, 8, 8] float32 planes of position ``k`` (for tests and tools)."""
        out = np.zeros(112 * 64, dtype=np.float32)
        self.write(k, memoryview(out), history)
        return out.reshape(112, 8, 8)
