"""Between python-chess and the compiled board: boards, moves, the game's earlier positions.

The core's castling move is the king taking its own rook (Chess960's form); python-chess writes standard chess's
castling as the king's two-square step. Everything else is the same int as the tree's move ids.
"""

from __future__ import annotations

from typing import Any, Iterable

import chess

NO_SQUARE = 64
# A FEN may give any counters: the half-move clock is kept up to this (from 100 on the game is drawn anyway), the
# move number up to MAX_MOVE_NUMBER.
MAX_HALFMOVES = 0xFFFF
MAX_MOVE_NUMBER = 0x7FFF_FFFF

_scratch: dict[bool, Any] = {}


def core_board(core: Any, board: chess.Board, earlier: Iterable[int] = ()) -> Any:
    """``board`` on the core's ``Board``, with the positions that repeating counts as a draw: ``earlier`` (the
    Zobrist keys of the game's positions since its last irreversible move, when the board's move stack does not hold
    them; ``zobrist``) and those on the board's own move stack since its last irreversible move."""
    keys = list(earlier)
    if board.move_stack:
        copy = board.copy()
        stacked = []
        for _ in range(min(board.halfmove_clock, len(board.move_stack))):
            copy.pop()
            stacked.append(_zobrist(core, copy, copy.clean_castling_rights()))
        keys += reversed(stacked)
    return place(core.board.Board(), board, board.clean_castling_rights(), board.halfmove_clock, keys)


def place(position: Any, board: chess.Board, castling: int, halfmove: int, earlier: Iterable[int]) -> Any:
    """Set the compiled ``position`` to python-chess's ``board`` (its cleaned ``castling`` rights, ``halfmove`` clock,
    and the Zobrist keys of the positions that repeating counts as a repetition)."""
    position.setup(board.occupied_co[chess.WHITE], board.pawns, board.knights, board.bishops, board.rooks,
                   board.queens, board.kings, board.turn, castling,
                   NO_SQUARE if board.ep_square is None else board.ep_square, min(max(halfmove, 0), MAX_HALFMOVES),
                   board.chess960, earlier)
    return position


def _zobrist(core: Any, board: chess.Board, castling: int) -> int:
    scratch = _scratch.get(core.compiled)
    if scratch is None:   # one board a core for keys alone: a new one costs a few hundred kilobytes
        scratch = _scratch[core.compiled] = core.board.Board()
    return place(scratch, board, castling, 0, ()).key


def zobrist(core: Any, board: chess.Board) -> int:
    """The Zobrist key the compiled board gives ``board``'s position (the same compiled or interpreted): what
    ``earlier`` holds, and the tree's repetition key."""
    return _zobrist(core, board, board.clean_castling_rights())


def core_move(board: chess.Board, move: chess.Move) -> int:
    """``move`` (legal on ``board``) as the core's int."""
    to = move.to_square
    if board.is_castling(move) and not board.rooks & board.occupied_co[board.turn] & chess.BB_SQUARES[to]:
        to = (to & 56) | (7 if to > move.from_square else 0)   # standard chess: the rook on its corner
    return move.from_square | to << 6 | (move.promotion or 0) << 12


def chess_move(board: chess.Board, move: int) -> chess.Move:
    """The core's ``move`` (legal on ``board``) as python-chess writes it on ``board``."""
    frm, to = move & 63, (move >> 6) & 63
    if (board.kings & chess.BB_SQUARES[frm] and board.rooks & board.occupied_co[board.turn] & chess.BB_SQUARES[to]
            and not board.chess960):
        to = (to & 56) | (6 if to > frm else 2)
    return chess.Move(frm, to, (move >> 12) or None)


def chess_line(board: chess.Board, moves: Iterable[int]) -> list[chess.Move]:
    """A line of the core's moves from ``board`` (left as it was) in python-chess's."""
    copy = board.copy(stack=False)
    line = []
    for move in moves:
        line.append(chess_move(copy, move))
        copy.push(line[-1])
    return line


_NEW_BOARD = chess.Board.__new__


def chess_board(bitboards: tuple, castling: int, turn: bool, ep: int, halfmove: int, fullmove: int,
                chess960: bool) -> chess.Board:
    """A python-chess board without move stack from the compiled board's parts (``bitboards``: White's pieces,
    Black's, pawns to kings; ``castling`` the castling rooks; ``ep`` a square or 64): filling its attributes directly
    costs a tenth of a FEN's parse. The tests check it against python-chess's own."""
    white, black, pawns, knights, bishops, rooks, queens, kings = (int(b) for b in bitboards)
    b = _NEW_BOARD(chess.Board)
    b.pawns, b.knights, b.bishops, b.rooks, b.queens, b.kings = pawns, knights, bishops, rooks, queens, kings
    b.promoted = 0
    b.castling_rights, b.turn = int(castling), bool(turn)
    b.ep_square = None if ep == NO_SQUARE else int(ep)
    b.halfmove_clock, b.fullmove_number, b.chess960 = int(halfmove), int(fullmove), bool(chess960)
    b.occupied_co = [black, white]
    b.occupied = white | black
    b.move_stack = []
    b._stack = []
    return b
