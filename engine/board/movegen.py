"""Legal move generation for the search: python-chess's moves, in its order, as move ids, faster.

Every new tree node needs its legal moves, so this is one of the largest costs of a node. python-chess's
generator builds a ``Move`` per move and tests every move's safety; here moves are ids, only moves that can
expose the king are tested (those of pinned pieces, the king's own, en passant), and the moves of a piece or of
the pawns as a group are looked up by their target bitboard: positions in one search share most of their pieces'
targets, so a dictionary lookup replaces a loop over the moves. The search, a network and the heuristic read only
the ids; a ``Move`` (one shared object per id, never mutated) is looked up when one is read (:class:`MoveIds`).
``tests/test_tree_memory.py`` checks the result against python-chess.

A move id is from | to << 6 | promotion << 12.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable, Iterator, NamedTuple, Optional

import chess
from chess import (BB_DIAG_ATTACKS, BB_DIAG_MASKS, BB_FILE_A, BB_FILE_ATTACKS, BB_FILE_H, BB_FILE_MASKS,
                   BB_KING_ATTACKS, BB_KNIGHT_ATTACKS, BB_PAWN_ATTACKS, BB_RANK_1, BB_RANK_3, BB_RANK_4, BB_RANK_5,
                   BB_RANK_6, BB_RANK_8, BB_RANK_ATTACKS, BB_RANK_MASKS, BB_RAYS, BB_SQUARES)

_PROMOTIONS = (chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT)  # python-chess's order
# Target sets remembered per from-square, and pawn-push sets per side, before a table starts afresh: a
# search's positions share most of them, and this bounds the tables to a few MB over a long game.
SPREADS_KEPT = 512
PUSHES_KEPT = 4096


def _moves_by_id() -> list[Optional[chess.Move]]:
    """One shared ``chess.Move`` per move id: every from-to pair, and the promotions a pawn can make.
    Building a Move costs more than the rest of generating it, so the generator hands out these."""
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


class MoveIds(Sequence):
    """A position's legal moves held as move ids (``ids``): a sequence of ``chess.Move`` whose items are looked up
    when read. Equal to any sequence of the same moves."""

    __slots__ = ("ids",)

    def __init__(self, ids: list[int]) -> None:
        self.ids = ids

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [move_from_id(i) for i in self.ids[index]]
        return move_from_id(self.ids[index])

    def __iter__(self) -> Iterator[chess.Move]:
        return map(move_from_id, self.ids)

    def index(self, move: Any, start: int = 0, stop: Optional[int] = None) -> int:
        return self.ids.index(move_ids((move,))[0], start, len(self.ids) if stop is None else stop)

    def __contains__(self, move: object) -> bool:
        return isinstance(move, chess.Move) and move_ids((move,))[0] in self.ids

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MoveIds):
            return self.ids == other.ids
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __repr__(self) -> str:
        return f"MoveIds({list(self)!r})"


def attacks(piece: chess.PieceType, color: chess.Color, square: chess.Square, occupied: int) -> int:
    """The squares a ``piece`` of ``color`` on ``square`` attacks, with ``occupied`` blocking its rays."""
    if piece == chess.PAWN:
        return BB_PAWN_ATTACKS[color][square]
    if piece == chess.KNIGHT:
        return BB_KNIGHT_ATTACKS[square]
    targets = 0
    if piece != chess.ROOK:
        targets = BB_DIAG_ATTACKS[square][BB_DIAG_MASKS[square] & occupied]
    if piece != chess.BISHOP:
        targets |= (BB_RANK_ATTACKS[square][BB_RANK_MASKS[square] & occupied]
                    | BB_FILE_ATTACKS[square][BB_FILE_MASKS[square] & occupied])
    return targets


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


# ----------------------------------------------------------------------------- tables of moves by targets

_SPREADS: list[dict[int, tuple[int, ...]]] = [{} for _ in range(64)]
_PUSHES: tuple[dict[int, tuple[int, ...]], dict[int, tuple[int, ...]]] = ({}, {})   # by side (black, white): single
_DOUBLES: tuple[dict[int, tuple[int, ...]], dict[int, tuple[int, ...]]] = ({}, {})  # and double pushes, by targets


def _spread(frm: int, targets: int) -> tuple[int, ...]:
    """The moves from ``frm`` to each square of ``targets``, highest square first (python-chess's order)."""
    key, ids = targets, []
    while targets:
        to = targets.bit_length() - 1
        targets ^= 1 << to
        ids.append(frm | to << 6)
    entry = tuple(ids)
    table = _SPREADS[frm]
    if len(table) >= SPREADS_KEPT:
        table.clear()
    table[key] = entry
    return entry


def _pushes(targets: int, step: int, table: dict[int, tuple[int, ...]]) -> tuple[int, ...]:
    """Pawn pushes by ``step`` squares onto each square of ``targets``, highest first, each promotion
    spelled out (queen, rook, bishop, knight)."""
    key, ids = targets, []
    while targets:
        to = targets.bit_length() - 1
        targets ^= 1 << to
        frm = to - step
        if to < 8 or to >= 56:
            ids += [frm | to << 6 | piece << 12 for piece in _PROMOTIONS]
        else:
            ids.append(frm | to << 6)
    entry = tuple(ids)
    if len(table) >= PUSHES_KEPT:
        table.clear()
    table[key] = entry
    return entry


# ----------------------------------------------------------------------------- the generator

def legal_moves_and_ids(board: chess.Board) -> tuple[MoveIds, list[int]]:
    """python-chess's legal moves, in its order (as :class:`MoveIds`), and their move ids.

    Out of check, only moves of pinned pieces, king moves and en passant can expose the king, and only
    those are tested. In check, python-chess generates the evasions.
    """
    turn = board.turn
    king = board.king(turn)
    if king is None or board.is_attacked_by(not turn, king):
        ids = move_ids(list(board.generate_legal_moves()))
        return MoveIds(ids), ids
    blockers = board._slider_blockers(king)
    risky = blockers | BB_SQUARES[king]
    is_safe = board._is_safe

    def safe(move_id: int) -> bool:
        return is_safe(king, blockers, MOVE_BY_ID[move_id])
    us = board.occupied_co[turn]
    them = board.occupied_co[not turn]
    occupied = us | them
    knights, kings = board.knights, board.kings
    diagonal = board.bishops | board.queens
    straight = board.rooks | board.queens
    ids: list[int] = []
    add_id, add_ids = ids.append, ids.extend
    spreads = _SPREADS
    attackers_mask, them_color, king_bb = board.attackers_mask, not turn, BB_SQUARES[king]

    pieces = us & ~board.pawns
    while pieces:
        frm = pieces.bit_length() - 1
        bb = 1 << frm
        pieces ^= bb
        if bb & knights:
            targets = BB_KNIGHT_ATTACKS[frm]
        elif bb & kings:
            targets = BB_KING_ATTACKS[frm]
        else:
            targets = BB_DIAG_ATTACKS[frm][BB_DIAG_MASKS[frm] & occupied] if bb & diagonal else 0
            if bb & straight:
                targets |= (BB_RANK_ATTACKS[frm][BB_RANK_MASKS[frm] & occupied]
                            | BB_FILE_ATTACKS[frm][BB_FILE_MASKS[frm] & occupied])
        targets &= ~us
        if not targets:
            continue
        if bb & risky:
            # python-chess's _is_safe, inlined: a king must not step onto an attacked square (out of check no
            # slider's ray runs through it), a pinned piece must stay on the line through its king.
            stepping = frm == king
            while targets:
                to = targets.bit_length() - 1
                targets ^= 1 << to
                if (not attackers_mask(them_color, to, occupied) if stepping
                        else BB_RAYS[frm][to] & king_bb):
                    add_id(frm | to << 6)
        else:
            entry = spreads[frm].get(targets)
            add_ids(entry if entry is not None else _spread(frm, targets))
    if board.castling_rights & (BB_RANK_1 if turn else BB_RANK_8):
        if board.chess960:
            add_ids(move_ids(list(board.generate_castling_moves())))  # python-chess tests their safety itself
        else:
            add_ids(_castling_ids(board, turn, occupied))

    pawns = board.pawns & us
    if not pawns:
        return MoveIds(ids), ids
    pawn_attacks = BB_PAWN_ATTACKS[turn]
    if turn:
        hits = ((pawns & ~BB_FILE_A) << 7 | (pawns & ~BB_FILE_H) << 9) & them
    else:
        hits = ((pawns & ~BB_FILE_A) >> 9 | (pawns & ~BB_FILE_H) >> 7) & them
    capturers = pawns if hits else 0  # most positions have no pawn capture: skip the loop over pawns
    while capturers:
        frm = capturers.bit_length() - 1
        bb = 1 << frm
        capturers ^= bb
        targets = pawn_attacks[frm] & them
        check = bb & risky
        while targets:
            to = targets.bit_length() - 1
            targets ^= 1 << to
            _add_pawn_moves(frm, to, safe if check else None, add_id)
    if turn:
        single = pawns << 8 & ~occupied
        double = single << 8 & ~occupied & (BB_RANK_3 | BB_RANK_4)
        step, risky_single, risky_double = 8, risky << 8, risky << 16
    else:
        single = pawns >> 8 & ~occupied
        double = single >> 8 & ~occupied & (BB_RANK_6 | BB_RANK_5)
        step, risky_single, risky_double = -8, risky >> 8, risky >> 16
    if single & risky_single:
        while single:
            to = single.bit_length() - 1
            single ^= 1 << to
            frm = to - step
            _add_pawn_moves(frm, to, safe if risky >> frm & 1 else None, add_id)
    elif single:
        table = _PUSHES[turn]
        add_ids(table.get(single) or _pushes(single, step, table))
    if double & risky_double:
        while double:
            to = double.bit_length() - 1
            double ^= 1 << to
            frm = to - 2 * step
            move_id = frm | to << 6
            if not risky >> frm & 1 or safe(move_id):
                add_id(move_id)
    elif double:
        table = _DOUBLES[turn]
        add_ids(table.get(double) or _pushes(double, 2 * step, table))
    if board.ep_square:
        add_ids([i for i in move_ids(list(board.generate_pseudo_legal_ep())) if safe(i)])
    return MoveIds(ids), ids


class _Castling(NamedTuple):
    """One standard-chess castling move and what python-chess's ``generate_castling_moves`` tests for it."""

    move_id: int
    king: int           # the king's bitboard (e1 / e8)
    rook: int           # the rook's bitboard (a1, h1, a8, h8)
    empty: int          # squares that must be empty
    passed: int         # square the king passes over: not attacked with the king lifted
    lands: int          # the king's square after castling
    occupancy: int      # occupancy change for the test of ``lands``: king and rook lifted, rook landed


def _castling_table() -> tuple[tuple[_Castling, ...], tuple[_Castling, ...]]:
    """Per colour (black, white), kingside first: the order python-chess generates them in."""
    table = []
    for back in (7, 0):
        side = []
        for rook_file, king_file, rook_to_file in ((7, 6, 5), (0, 2, 3)):
            king, rook = chess.square(4, back), chess.square(rook_file, back)
            lands, rook_to = chess.square(king_file, back), chess.square(rook_to_file, back)
            path = chess.between(king, lands) | chess.between(rook, rook_to) | BB_SQUARES[lands] | BB_SQUARES[rook_to]
            side.append(_Castling(king | lands << 6, BB_SQUARES[king], BB_SQUARES[rook],
                                  path & ~BB_SQUARES[king] & ~BB_SQUARES[rook],
                                  chess.between(king, lands).bit_length() - 1, lands,
                                  BB_SQUARES[king] | BB_SQUARES[rook] | BB_SQUARES[rook_to]))
        table.append(tuple(side))
    return table[0], table[1]


_CASTLING = _castling_table()


def _castling_ids(board: chess.Board, turn: bool, occupied: int) -> list[int]:
    """Move ids of the legal castling moves of a standard-chess board whose king is not in check: the
    moves ``generate_castling_moves`` yields, tested the same way, without its generic Chess960 path."""
    rights = board.castling_rights
    us = board.occupied_co[turn]
    rooks = board.rooks & us
    attackers = board.attackers_mask
    out = []
    for c in _CASTLING[turn]:
        if not (rights & c.rook and rooks & c.rook and board.kings & us & ~board.promoted & c.king):
            continue
        if occupied & c.empty:
            continue
        if attackers(not turn, c.passed, occupied ^ c.king) or attackers(not turn, c.lands, occupied ^ c.occupancy):
            continue
        out.append(c.move_id)
    return out


def _add_pawn_moves(frm: int, to: int, safe: Optional[Callable[[int], bool]], add_id: Callable) -> None:
    """One pawn move, or its four promotions on the last rank, by id; ``safe`` (when set) tests each."""
    if to < 8 or to >= 56:
        for piece in _PROMOTIONS:
            move_id = frm | to << 6 | piece << 12
            if safe is None or safe(move_id):
                add_id(move_id)
    else:
        move_id = frm | to << 6
        if safe is None or safe(move_id):
            add_id(move_id)
