"""python-chess moves as small ints, for the evaluators written in Python, and the squares a piece would give check from.

A move id is from | to << 6 | promotion << 12, castling written as python-chess writes it (the king's two-square step
in standard chess). The compiled board's ids are the same but for castling, which is always the king taking its rook
(engine/board/convert.py translates).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

import chess
from chess import BB_DIAG_ATTACKS, BB_DIAG_MASKS, BB_FILE_ATTACKS, BB_FILE_MASKS, BB_KNIGHT_ATTACKS, BB_PAWN_ATTACKS
from chess import BB_RANK_ATTACKS, BB_RANK_MASKS

_PROMOTIONS = (chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT)  # python-chess's order


def _moves_by_id() -> list[Optional[chess.Move]]:
    """One shared ``chess.Move`` per move id: every from-to pair, and the promotions a pawn can make. Building a Move
    costs more than looking one up."""
    table: list[Optional[chess.Move]] = [None] * (6 << 12)
    for frm in range(64):
        for to in range(64):
            table[frm | to << 6] = chess.Move(frm, to)
    for frm_rank, to_rank in ((6, 7), (1, 0)):
        for file in range(8):
            frm = chess.square(file, frm_rank)
            for to_file in range(max(0, file - 1), min(8, file + 2)):
                to = chess.square(to_file, to_rank)
                for piece in _PROMOTIONS:
                    table[frm | to << 6 | piece << 12] = chess.Move(frm, to, piece)
    return table


MOVE_BY_ID = _moves_by_id()


def move_ids(moves: Sequence[chess.Move]) -> list[int]:
    """The ids of ``moves``."""
    return [m.from_square | m.to_square << 6 | (m.promotion or 0) << 12 for m in moves]


def move_from_id(move_id: int) -> chess.Move:
    """The move named by ``move_id`` (a shared object: do not mutate it)."""
    move = MOVE_BY_ID[move_id] if move_id < len(MOVE_BY_ID) else None
    return move if move is not None else chess.Move(move_id & 63, move_id >> 6 & 63, move_id >> 12 or None)


def checking_squares(board: chess.Board) -> Optional[list[int]]:
    """By piece type (index 1 to 6), the squares from which a piece of the side to move would give direct check to
    the other king; None when that side has no king. Kings never check."""
    king = board.king(not board.turn)
    if king is None:
        return None
    occupied = board.occupied
    diagonal = BB_DIAG_ATTACKS[king][BB_DIAG_MASKS[king] & occupied]
    straight = (BB_RANK_ATTACKS[king][BB_RANK_MASKS[king] & occupied]
                | BB_FILE_ATTACKS[king][BB_FILE_MASKS[king] & occupied])
    return [0, BB_PAWN_ATTACKS[not board.turn][king], BB_KNIGHT_ATTACKS[king], diagonal, straight,
            diagonal | straight, 0]
