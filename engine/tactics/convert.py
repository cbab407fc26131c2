"""Between python-chess and the probe's core: boards, moves, the game's earlier positions, the evaluation tables.

The core's castling move is the king taking its own rook (Chess960's form); python-chess writes standard chess's
castling as the king's two-square step. Everything else is the same int as the tree's move ids.
"""

from __future__ import annotations

from typing import Any, Hashable, Iterable

import chess

from ..evaluators.heuristic import FULL_PHASE, TAPERED
from ..game import ChessGame

NO_SQUARE = 64
KEYS_KEPT = 4096   # the earlier positions' Zobrist keys remembered between probes (a game's repeat every move)

_tables: dict[int, list[int]] = {}
_keys: dict[Hashable, int] = {}
_scratch: dict[bool, Any] = {}


def core_board(core: Any, board: chess.Board, earlier: Iterable[Hashable] = ()) -> Any:
    """``board`` on the core's ``Board``, with the positions that repeating counts as a draw: ``earlier`` (keys,
    ``ChessGame.key``, of the game's positions since its last irreversible move, when the board's move stack does not
    hold them) and those on the board's own move stack since its last irreversible move."""
    keys = [_earlier_key(core, key) for key in earlier]
    if board.move_stack:
        copy = board.copy()
        stacked = []
        for _ in range(min(board.halfmove_clock, len(board.move_stack))):
            copy.pop()
            stacked.append(_zobrist(core, copy, copy.clean_castling_rights()))
        keys += reversed(stacked)
    return _place(core.board.Board(), board, board.clean_castling_rights(), board.halfmove_clock, keys)


def _place(position: Any, board: chess.Board, castling: int, halfmove: int, earlier: Iterable[int]) -> Any:
    position.setup(board.occupied_co[chess.WHITE], board.pawns, board.knights, board.bishops, board.rooks,
                   board.queens, board.kings, board.turn, castling,
                   NO_SQUARE if board.ep_square is None else board.ep_square, halfmove, board.chess960, earlier)
    return position


def _zobrist(core: Any, board: chess.Board, castling: int) -> int:
    scratch = _scratch.get(core.compiled)
    if scratch is None:   # one board a core for keys alone: a new one costs a few hundred kilobytes
        scratch = _scratch[core.compiled] = core.board.Board()
    return _place(scratch, board, castling, 0, ()).key


def _earlier_key(core: Any, key: Hashable) -> int:
    found = _keys.get((core.compiled, key))
    if found is None:
        if len(_keys) >= KEYS_KEPT:
            _keys.clear()
        board = ChessGame.board_of_key(key)
        found = _keys[(core.compiled, key)] = _zobrist(core, board, board.castling_rights)
    return found


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


def tables(board: chess.Board) -> list[int]:
    """The alpha-beta's scoring tables at ``board``'s phase: the heuristic's tapered piece-square values in whole
    centipawns, ``[colour * 448 + piece type * 64 + square]``."""
    phase = min(FULL_PHASE, (board.knights | board.bishops).bit_count() + 2 * board.rooks.bit_count()
                + 4 * board.queens.bit_count())
    found = _tables.get(phase)
    if found is None:
        found = _tables[phase] = [round(TAPERED[color][phase][piece][square]) if piece else 0
                                  for color in (chess.BLACK, chess.WHITE) for piece in range(7) for square in range(64)]
    return found
