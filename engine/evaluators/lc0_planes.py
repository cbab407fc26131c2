"""lc0's classical 112-plane input encoding (``INPUT_CLASSICAL_112_PLANE``), batched with numpy.

Plane layout, float32 [112, 8, 8], plane index p, square s = rank * 8 + file at ``[p, rank, file]``:

- 8 history slots × 13 planes, slot 0 the current position, slot 1 the one before, ...:
  ``13*i + 0..5`` our pawns, knights, bishops, rooks, queens, king; ``13*i + 6..11`` theirs;
  ``13*i + 12`` all ones when that position occurred before (lc0's repetition flag).
  "Our" is the side to move in the *current* position for every slot, and all boards are mirrored
  vertically (rank 1 <-> rank 8) when black is to move.
- 104: we can castle queenside, 105: we can castle kingside, 106: they can castle queenside,
  107: they can castle kingside (each all ones or all zeros). In Chess960 (``board.chess960``) queenside means
  the castling rook stands on the a-side of the king, kingside on the h-side, wherever they started: lc0's
  classical input keeps only these four booleans (``we_can_000()`` ...), the rooks' files live in its board.
- 108: all ones when black is to move.
- 109: the rule-50 half-move counter, unscaled (e.g. 37.0 on every square).
- 110: zeros. 111: all ones.

History follows lc0: positions before the game's first position are not known. When the first position is the
standard start position the missing slots stay zero; otherwise (a game started from a FEN, lc0's default
``HistoryFill=fen_only``) every missing slot repeats the first position, with a pawn that has just made a
double step (en passant square set) put back on its starting square.

The repetition flag of a position is set when an identical position (same pieces, side to move, castling
rights, and en passant capture possibility) occurs an even number of plies earlier without a capture or pawn
move in between, which is how lc0 compares positions (in Chess960 the castling rights compared are the rooks'
squares, as lc0 compares its rook files). Only the boards are read (``board.halfmove_clock``,
bitboards, ``castling_rights``, ``ep_square``), never their move stacks.

Encoding is split so that a cache can be consulted between the two halves:

- :func:`gather` reads one position (and its history) into a flat tuple of ints, the *row*, which holds everything
  the encoding depends on (plus the en passant square, which decides the legal moves, and in Chess960 the castling
  rooks' squares, which do too: two positions can differ only in which of two rooks on the same side may castle);
  :func:`pack_row` makes it bytes, whose hash is a cache key.
- :func:`rows_to_planes` (:func:`packed_rows_to_planes`) turns many rows into the float32 batch in a handful of
  numpy operations (``np.unpackbits`` on the bitboards).
"""

from __future__ import annotations

import struct
from typing import Sequence, Union

import chess
import numpy as np

HISTORY = 8
PLANES_PER_BOARD = 13
AUX_BASE = HISTORY * PLANES_PER_BOARD  # 104
NUM_PLANES = AUX_BASE + 8              # 112

# Row layout (ints): 8 slots × (ours, theirs, pawns, knights, bishops, rooks, queens, kings) with "ours" the
# colour to move in the current position, 8 repetition flags, 8 auxiliary flags (we can castle queenside,
# kingside, they can castle queenside, kingside, black to move, 0 (rule-50 placeholder), 0, 1), the rule-50
# counter and the en passant square (64 = none; it is not encoded but decides the legal moves, so it belongs
# to the cache key). In Chess960 that last int also carries the castling rooks' squares (see _castling_960).
_SLOT_INTS = 8
_REP = HISTORY * _SLOT_INTS              # 64
_AUX = _REP + HISTORY                    # 72
_RULE50 = _AUX + 8                       # 80
_EP = _RULE50 + 1                        # 81
ROW_LEN = _EP + 1                        # 82
# The rule-50 counter is kept up to this (a FEN may say anything; from 100 on the game is drawn).
MAX_RULE50 = 0xFFFF
# Python hashes an int modulo 2**61 - 1, so in a tuple the bitboards of f8, g8 and h8 hash like those
# of a1, b1 and c1: a rook moved to c1 and one moved to h8 made one key. Packed bytes hash by content.
_ROW = struct.Struct(f"<{ROW_LEN}Q")

_EMPTY_SLOT = (0,) * _SLOT_INTS
_EMPTY_SLOT_REPS = (0,) * (_SLOT_INTS * (HISTORY - 1) + HISTORY)

_START = chess.Board()
_START_RAW = (_START.occupied_co[chess.WHITE], _START.occupied_co[chess.BLACK], _START.pawns, _START.knights,
              _START.bishops, _START.rooks, _START.queens, _START.kings)
_CORNERS = chess.BB_A1 | chess.BB_H1 | chess.BB_A8 | chess.BB_H8
_PAWN_ATTACKS = chess.BB_PAWN_ATTACKS


def _raw(bd: chess.Board, turn: bool = True) -> tuple[int, ...]:
    """The slot ints of ``bd`` with colour ``turn`` first."""
    oc = bd.occupied_co
    return (oc[turn], oc[not turn], bd.pawns, bd.knights, bd.bishops, bd.rooks, bd.queens, bd.kings)


def _ep_flag(bd: chess.Board) -> int:
    """lc0's en passant flag: the square when a pawn of the side to move could capture there, else 64."""
    ep = bd.ep_square
    if ep is None:
        return 64
    turn = bd.turn
    if _PAWN_ATTACKS[not turn][ep] & bd.pawns & bd.occupied_co[turn]:
        return ep
    return 64


def _same_position(a: chess.Board, b: chess.Board) -> bool:
    """Positions equal as lc0 compares them (for repetitions); the caller has compared ``occupied``."""
    if not (a.turn == b.turn and a.pawns == b.pawns and a.knights == b.knights and a.bishops == b.bishops
            and a.rooks == b.rooks and a.queens == b.queens and a.kings == b.kings
            and a.occupied_co[True] == b.occupied_co[True] and _ep_flag(a) == _ep_flag(b)):
        return False
    if a.chess960:
        # Castling rooks may stand anywhere on the back ranks: compare the squares python-chess deems valid.
        return a.clean_castling_rights() == b.clean_castling_rights()
    return (a.castling_rights & _CORNERS) == (b.castling_rights & _CORNERS)


def _castling_960(board: chess.Board) -> tuple[int, int, int, int, int]:
    """(white queenside, white kingside, black queenside, black kingside, key) of a Chess960 board.

    Queenside is a castling rook on the a-side of its king, as lc0 reads X-FEN and Shredder-FEN. ``key``: the
    castling rooks' squares packed into 16 bits and shifted above the en passant int of the row.
    """
    cr = board.clean_castling_rights()
    if not cr:
        return 0, 0, 0, 0, 0
    # A right survives cleaning only with its king on the back rank, so ``king - 1`` masks the a-side squares.
    wk = board.kings & board.occupied_co[chess.WHITE] & chess.BB_RANK_1
    bk = board.kings & board.occupied_co[chess.BLACK] & chess.BB_RANK_8
    w = cr & chess.BB_RANK_1
    b = cr & chess.BB_RANK_8
    return (1 if w & (wk - 1) else 0, 1 if w & ~(wk - 1) else 0,
            1 if b & (bk - 1) else 0, 1 if b & ~(bk - 1) else 0,
            (w | b >> 48) << 7)


def _repeated(history: Sequence[chess.Board], k: int, bd: chess.Board) -> int:
    """1 when position ``k`` (``bd``) repeats an earlier one, following lc0's scan."""
    if bd.halfmove_clock < 4 or k < 4:
        return 0
    occ = bd.occupied
    j = k - 2
    while j >= 0:
        pj = history[j]
        if pj.occupied == occ and _same_position(pj, bd):
            return 1
        if pj.halfmove_clock < 2:
            return 0
        j -= 2
    return 0


def is_startpos(bd: chess.Board) -> bool:
    """True for lc0's start board: standard pieces, white to move, all castling rights, no en passant."""
    return (bd.turn and bd.ep_square is None and (bd.castling_rights & _CORNERS) == _CORNERS
            and _raw(bd) == _START_RAW)


def _fill_slot(first: chess.Board, turn: bool) -> tuple[int, ...]:
    """The slot lc0 repeats for unknown history before a FEN: the first position, double step undone."""
    raw = list(_raw(first, turn))
    ep = first.ep_square
    if ep is not None:
        if chess.square_rank(ep) == 2:      # white just played e.g. e2e4: pawn on ep+8 back to ep-8
            now, before, mover = ep + 8, ep - 8, chess.WHITE
        else:                                # black just played e.g. d7d5: pawn on ep-8 back to ep+8
            now, before, mover = ep - 8, ep + 8, chess.BLACK
        colour = 0 if mover == turn else 1
        move = (1 << now) | (1 << before)
        if raw[2] >> now & 1 and raw[colour] >> now & 1 and not (raw[0] | raw[1]) >> before & 1:
            raw[2] ^= move
            raw[colour] ^= move
    return tuple(raw)


def _repetition_flags(history: Sequence[chess.Board], board: chess.Board, slots: int) -> list[int]:
    """Repetition flags of the last ``slots`` positions (current first).

    Short windows are scanned directly. For long ones (a high rule-50 count) a cheap pre-filter (is the
    occupancy bitboard among those of the same-side-to-move positions since the last zeroing move?) runs as a
    C-level list scan, and only a hit runs lc0's exact comparison loop.
    """
    nh = len(history)
    flags = [0] * HISTORY
    occs = None
    lo = 0
    bd = board
    for i in range(slots):
        k = nh - i
        if i:
            bd = history[k]
        hm = bd.halfmove_clock
        if hm < 4 or k < 4:
            continue
        if hm < 16:             # a short scan: compare directly
            flags[i] = _repeated(history, k, bd)
            continue
        lo_k = k - hm - 1
        if lo_k < 0:
            lo_k = 0
        if occs is None:
            # Occupancies of the window, read once for all slots; extended below if a slot needs more.
            lo = max(0, lo_k - HISTORY)
            occs = [h.occupied for h in history[lo:nh]]
        elif lo_k < lo:
            occs = [h.occupied for h in history[lo_k:lo]] + occs
            lo = lo_k
        start = lo_k + ((k - lo_k) & 1) - lo
        if bd.occupied in occs[start:k - 1 - lo:2]:
            flags[i] = _repeated(history, k, bd)
    return flags


def gather(board: chess.Board, history: Sequence[chess.Board] = (), use_history: bool = True) -> tuple[int, ...]:
    """The row of ints the encoding of ``board`` depends on (see the module docstring).

    ``history``: the positions before ``board``, oldest first, from the game's first position.
    ``use_history=False``: only the current position is encoded (history slots and repetition flags zero).
    """
    turn = board.turn
    row = list(_raw(board, turn))
    if use_history:
        nh = len(history)
        last = min(HISTORY, nh + 1)
        for i in range(1, last):
            row.extend(_raw(history[nh - i], turn))
        if last < HISTORY:
            first = history[0] if nh else board
            if is_startpos(first):
                row.extend(_EMPTY_SLOT * (HISTORY - last))
            else:
                row.extend(_fill_slot(first, turn) * (HISTORY - last))
        row.extend(_repetition_flags(history, board, last))
    else:
        row.extend(_EMPTY_SLOT_REPS)
    ep = board.ep_square
    ep = 64 if ep is None else ep
    if board.chess960:
        wq, wk, bq, bk, key = _castling_960(board)
        ep |= key
    else:
        # Standard chess: the rights live on the corners (python-chess's bits for a1, h1, a8, h8).
        cr = board.castling_rights
        wq, wk, bq, bk = cr & 1, cr >> 7 & 1, cr >> 56 & 1, cr >> 63
    if turn:
        row.extend((wq, wk, bq, bk, 0, 0, 0, 1, min(board.halfmove_clock, MAX_RULE50), ep))
    else:
        row.extend((bq, bk, wq, wk, 1, 0, 0, 1, min(board.halfmove_clock, MAX_RULE50), ep))
    return tuple(row)


def pack_row(row: tuple[int, ...]) -> bytes:
    """``row`` as 82 little-endian uint64: hashed by content for caches (equal rows give equal keys, different rows
    collide only by chance, one in 2**64, unlike ``hash(row)``), and read by :func:`packed_rows_to_planes` without
    converting each int."""
    return _ROW.pack(*row)


def packed_rows_to_planes(packed: Sequence[bytes], dtype=np.float32) -> np.ndarray:
    """:func:`rows_to_planes` of rows given by :func:`pack_row`."""
    return rows_to_planes(np.frombuffer(b"".join(packed), dtype="<u8").reshape(len(packed), ROW_LEN), dtype)


def rows_to_planes(rows: Union[Sequence[tuple[int, ...]], np.ndarray], dtype=np.float32) -> np.ndarray:
    """Encode rows from :func:`gather` (or a uint64 array of them) as a [len(rows), 112, 8, 8] array."""
    b = len(rows)
    arr = rows if isinstance(rows, np.ndarray) else np.array(rows, dtype=np.uint64)
    pieces = arr[:, :_REP].reshape(b, HISTORY, _SLOT_INTS)
    black = arr[:, _AUX + 4] != 0
    if black.any():
        # Mirror ranks (a1 <-> a8) for black to move: reverse the bytes of every bitboard.
        pieces = np.where(black[:, None, None], pieces.byteswap(), pieces)
    masks = np.empty((b, NUM_PLANES), dtype=np.uint64)
    hist = masks[:, :AUX_BASE].reshape(b, HISTORY, PLANES_PER_BOARD)
    # [b, 8, 2, 6]: (ours, theirs) × (pawns .. kings)
    np.bitwise_and(pieces[:, :, None, 2:8], pieces[:, :, 0:2, None],
                   out=hist[:, :, :12].reshape(b, HISTORY, 2, 6))
    zero = np.uint64(0)
    np.subtract(zero, arr[:, _REP:_AUX], out=hist[:, :, 12])      # 0/1 -> all zeros / all ones
    np.subtract(zero, arr[:, _AUX:_RULE50], out=masks[:, AUX_BASE:])
    bits = np.unpackbits(masks.view(np.uint8), axis=1, bitorder="little")
    planes = bits.reshape(b, NUM_PLANES, 8, 8).astype(dtype)
    planes[:, AUX_BASE + 5] = arr[:, _RULE50].astype(dtype)[:, None, None]
    return planes


def encode(board: chess.Board, history: Sequence[chess.Board] = (), use_history: bool = True) -> np.ndarray:
    """[112, 8, 8] float32 planes of one position (convenience wrapper, not the fast path)."""
    return rows_to_planes([gather(board, history, use_history)])[0]
