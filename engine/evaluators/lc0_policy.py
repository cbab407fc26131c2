"""lc0's 1858-entry policy vector: which move each output of ``/output/policy`` stands for.

The table is generated here from its rule rather than stored:

- indices 0..1791: for every from-square in the order a1, b1, ..., h1, a2, ..., h8, every to-square that a
  queen or a knight could reach from it on an empty board, in increasing square order (a1 = 0 ... h8 = 63);
- indices 1792..1857: the promotions from the 7th rank, from-file by from-file, to-file in increasing order,
  each as queen, rook, bishop.

Moves are always written from the side to move's point of view: for black both squares are mirrored
vertically (a8 <-> a1). A knight promotion uses the index of the plain move (``a7a8`` = ``a7a8n``); a queen,
rook or bishop promotion has its own index. Castling is encoded as "king takes rook": white's ``e1g1`` uses
the index of ``e1h1`` and ``e1c1`` that of ``e1a1``.

The vectorised entry point :func:`policy_indices` maps a position's legal moves to their indices through flat
per-colour lookup tables (one list entry per (from, to, promotion, colour)), so the common case costs one list
index per move.
"""

from __future__ import annotations

from typing import Iterable, Optional, Sequence

import chess
import numpy as np

POLICY_SIZE = 1858

_PROMO_ORDER = (chess.QUEEN, chess.ROOK, chess.BISHOP)


def _build_moves() -> list[str]:
    moves: list[str] = []
    for frm in range(64):
        fr, ff = divmod(frm, 8)
        for to in range(64):
            if to == frm:
                continue
            tr, tf = divmod(to, 8)
            dr, df = abs(tr - fr), abs(tf - ff)
            queen_like = dr == 0 or df == 0 or dr == df
            knight_like = (dr, df) in ((1, 2), (2, 1))
            if queen_like or knight_like:
                moves.append(chess.SQUARE_NAMES[frm] + chess.SQUARE_NAMES[to])
    for ff in range(8):
        for tf in (ff - 1, ff, ff + 1):
            if 0 <= tf < 8:
                for piece in _PROMO_ORDER:
                    moves.append(chess.FILE_NAMES[ff] + "7" + chess.FILE_NAMES[tf] + "8" + chess.piece_symbol(piece))
    return moves


#: The 1858 moves in lc0's order, as UCI strings from white's point of view.
POLICY_MOVES: tuple[str, ...] = tuple(_build_moves())
assert len(POLICY_MOVES) == POLICY_SIZE

#: UCI string (white's point of view) -> index.
MOVE_INDEX: dict[str, int] = {uci: i for i, uci in enumerate(POLICY_MOVES)}

# Flat lookup tables: _TABLE[turn][(promotion << 12) | (from << 6) | to] -> index, or -1 when the move has no
# index (not a queen/knight move, or a promotion off the 7th rank). promotion is 0 for none, else the piece type.
_TABLE_SIZE = 7 << 12


def _build_table(turn: chess.Color) -> list[int]:
    table = [-1] * _TABLE_SIZE
    for frm in range(64):
        for to in range(64):
            rf, rt = (frm, to) if turn == chess.WHITE else (chess.square_mirror(frm), chess.square_mirror(to))
            base = MOVE_INDEX.get(chess.SQUARE_NAMES[rf] + chess.SQUARE_NAMES[rt], -1)
            for promo in (0, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN):
                if promo in (0, chess.KNIGHT):
                    idx = base
                else:
                    idx = MOVE_INDEX.get(chess.SQUARE_NAMES[rf] + chess.SQUARE_NAMES[rt] + chess.piece_symbol(promo), -1)
                table[(promo << 12) | (frm << 6) | to] = idx
    return table


_TABLES: tuple[list[int], list[int]] = (_build_table(chess.BLACK), _build_table(chess.WHITE))

# Castling in standard notation (king moves two files) -> king-takes-rook squares, per colour.
_CASTLE_TARGET = {
    chess.WHITE: {(chess.E1, chess.G1): chess.H1, (chess.E1, chess.C1): chess.A1},
    chess.BLACK: {(chess.E8, chess.G8): chess.H8, (chess.E8, chess.C8): chess.A8},
}
_BACK_RANK = (chess.BB_RANK_8, chess.BB_RANK_1)       # indexed by turn
_SEVENTH_RANK = (chess.BB_RANK_2, chess.BB_RANK_7)    # pawns about to promote, indexed by turn


def move_to_index(move: chess.Move, turn: chess.Color, castling: Optional[bool] = None) -> int:
    """lc0 policy index of ``move`` played by ``turn``.

    ``castling``: True when ``move`` is a castling move written in standard UCI (``e1g1``), False when it is
    not; None guesses that a move e1->g1 / e1->c1 (e8 for black) is castling, which is only right when the
    king makes it (a rook on e1 going to g1 gets the wrong index). Pass the flag, or use
    :func:`policy_index` with the board, when that matters. King-takes-rook castling moves (``e1h1``,
    chess960 style) need no flag. Raises ValueError for a move that has no policy index.
    """
    frm, to = move.from_square, move.to_square
    if castling or castling is None:
        target = _CASTLE_TARGET[turn].get((frm, to))
        if target is not None:
            to = target
    promo = move.promotion or 0
    idx = _TABLES[turn][(promo << 12) | (frm << 6) | to]
    if idx < 0:
        raise ValueError(f"move {move.uci()} has no lc0 policy index")
    return idx


def policy_index(board: chess.Board, move: chess.Move) -> int:
    """lc0 policy index of legal ``move`` in ``board`` (castling detected from the board)."""
    return move_to_index(move, board.turn, castling=board.is_castling(move) and not board.chess960)


def index_to_move(index: int, turn: chess.Color) -> chess.Move:
    """The move behind policy ``index`` for ``turn``, castling in king-takes-rook form (``e1h1``)."""
    move = chess.Move.from_uci(POLICY_MOVES[index])
    if turn == chess.BLACK:
        move = chess.Move(chess.square_mirror(move.from_square), chess.square_mirror(move.to_square),
                          move.promotion)
    return move


def policy_indices_list(board: chess.Board, moves: Sequence[chess.Move]) -> list[int]:
    """Policy indices of ``moves`` (legal moves of ``board``), as a Python list aligned with ``moves``."""
    turn = board.turn
    table = _TABLES[turn]
    out = [table[(m.from_square << 6) | m.to_square] for m in moves]
    # Promotions: only when the side to move has a pawn on its 7th rank.
    if board.pawns & board.occupied_co[turn] & _SEVENTH_RANK[turn]:
        for i, m in enumerate(moves):
            p = m.promotion
            if p:
                out[i] = table[(p << 12) | (m.from_square << 6) | m.to_square]
    # Standard-notation castling: only when the side to move still has castling rights.
    if board.castling_rights & _BACK_RANK[turn] and not board.chess960:
        targets = _CASTLE_TARGET[turn]
        kings = board.kings
        for i, m in enumerate(moves):
            target = targets.get((m.from_square, m.to_square))
            if target is not None and kings >> m.from_square & 1:
                out[i] = table[(m.from_square << 6) | target]
    return out


def _id_array(turn: chess.Color, castling: bool) -> np.ndarray:
    """A table indexed by move id (from | to << 6 | promotion << 12); with ``castling``, the king's two-file moves
    from e1 (e8) get the index of king-takes-rook."""
    table = _TABLES[turn]
    out = [table[(i >> 12) << 12 | (i & 63) << 6 | (i >> 6 & 63)] for i in range(_TABLE_SIZE)]
    if castling:
        for (frm, to), target in _CASTLE_TARGET[turn].items():
            out[frm | to << 6] = table[frm << 6 | target]
    return np.array(out, dtype=np.int64)


# The tables by move id, one row per (side to move, castling) (see id_table).
_ID_ARRAY = np.stack([_id_array(turn, castling) for turn in (chess.BLACK, chess.WHITE) for castling in (False, True)])
_HOME_KING = (chess.BB_E8, chess.BB_E1)  # indexed by turn


def id_table(board: chess.Board) -> int:
    """Which of :func:`id_columns`' tables maps ``board``'s legal move ids to policy indices: by side to move, and
    whether a king move from e1 (e8) two files over is castling (standard chess, king at home: no other piece can
    make that move)."""
    turn = board.turn
    castling = not board.chess960 and board.kings & board.occupied_co[turn] & _HOME_KING[turn]
    return 2 * turn + (1 if castling else 0)


def id_columns(policy_map: Optional[np.ndarray] = None) -> tuple[list[int], ...]:
    """Per :func:`id_table`, a list from move id (python-chess's, ``engine.board.moves.move_ids``) to policy index,
    or with ``policy_map`` to ``policy_map[index]`` (a network's column for that index). Python lists, read a move
    at a time: for the few hundred moves of a batch that is cheaper than the numpy calls of a vectorised look-up."""
    tables = _ID_ARRAY if policy_map is None else policy_map[_ID_ARRAY]
    shared: dict[int, int] = {}  # one int object per column, not one per entry
    return tuple([shared.setdefault(c, c) for c in row] for row in tables.tolist())


def core_columns(policy_map: Optional[np.ndarray] = None) -> np.ndarray:
    """An int32 [2, 6 << 12] table: by side to move (Black 0, White 1) and the compiled board's move id (from | to << 6
    | promotion << 12, castling as the king taking its rook, lc0's own form), the move's policy index, or with
    ``policy_map`` its column of a network's raw policy (-1: no such move)."""
    out = np.full((2, 6 << 12), -1, dtype=np.int64)
    for turn in (chess.BLACK, chess.WHITE):
        table = _TABLES[turn]
        out[int(turn)] = [table[(i >> 12) << 12 | (i & 63) << 6 | (i >> 6 & 63)] for i in range(6 << 12)]
    if policy_map is not None:
        out = np.where(out >= 0, policy_map[np.maximum(out, 0)], -1)
    return out.astype(np.int32)


def policy_indices(board: chess.Board, moves: Sequence[chess.Move]) -> np.ndarray:
    """Policy indices of ``moves`` (legal moves of ``board``) as an int64 numpy array."""
    return np.array(policy_indices_list(board, moves), dtype=np.int64)


def all_indices(turn: chess.Color) -> Iterable[tuple[int, chess.Move]]:
    """(index, move) for every policy entry, castling in king-takes-rook form; for tests and tools."""
    for i in range(POLICY_SIZE):
        yield i, index_to_move(i, turn)
