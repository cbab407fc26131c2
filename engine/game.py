"""The narrow game interface the tree search sees, and its chess implementation.

The search knows nothing of chess: it asks a :class:`Game` for legal moves, successor states,
exact results of finished games and repetition keys. That keeps the search testable exactly on
small games (see ``tests/toy_games.py``).

The tree holds millions of nodes, so it stores each position in the game's compact form
(:meth:`Game.pack`) and each move as a small int (:meth:`Game.move_ids`); full states are rebuilt
only for the leaf being evaluated.
"""

from __future__ import annotations

import random
import struct
from hashlib import blake2b as _blake2b
from typing import Callable, Hashable, NamedTuple, Optional, Protocol, Sequence, TypeVar

import chess
from chess import (BB_DIAG_ATTACKS, BB_DIAG_MASKS, BB_FILE_ATTACKS, BB_FILE_MASKS, BB_KING_ATTACKS,
                   BB_KNIGHT_ATTACKS, BB_PAWN_ATTACKS, BB_RANK_1, BB_RAYS, BB_RANK_3, BB_RANK_4, BB_RANK_5, BB_RANK_6,
                   BB_RANK_8, BB_RANK_ATTACKS, BB_RANK_MASKS, BB_SQUARES)

State = TypeVar("State")
Move = TypeVar("Move")


class Game(Protocol[State, Move]):
    """What the search needs to know about a two-player, zero-sum, alternating-move game."""

    def legal_moves(self, state: State) -> list[Move]:
        """All legal moves of the side to move."""

    def play(self, state: State, move: Move) -> State:
        """The state after ``move``; ``state`` itself is left unchanged."""

    def result(self, state: State, moves: Sequence[Move]) -> Optional[float]:
        """Exact value for the side to move if the game is over (given its legal moves), else None."""

    def key(self, state: State) -> Hashable:
        """A cheap hash of the position for repetition checks and caches."""

    def reversible_plies(self, state: State) -> int:
        """How many earlier positions could equal this one (0 for games without repetition)."""

    def winning_moves(self, state: State, moves: Sequence[Move]) -> list[Move]:
        """Moves that win at once (mate in one); may be empty even when such moves exist."""

    def random_playout(self, state: State, rng: random.Random, max_plies: int) -> float:
        """Play random moves to the end or ``max_plies``; the result for the side to move at ``state``."""

    def pack(self, state: State) -> Hashable:
        """The compact, immutable form of ``state`` that tree nodes keep."""

    def unpack(self, packed: Hashable) -> State:
        """A fresh full state from :meth:`pack`'s form; the caller may change it."""

    def successor(self, packed: Hashable, move_id: int) -> State:
        """The full state after the move ``move_id`` from the packed state ``packed``."""

    def legal_moves_and_ids(self, state: State) -> tuple[list[Move], list[int]]:
        """:meth:`legal_moves` and their :meth:`move_ids`, made together where that is cheaper."""

    def move_ids(self, moves: Sequence[Move]) -> list[int]:
        """Small ints (below 65536) naming ``moves``; :meth:`move_from_id` inverts them."""

    def move_from_id(self, move_id: int) -> Move:
        """The move named by ``move_id``."""


# Direct-check detection without pushing moves: a piece of type pt checks the enemy king from
# `to` if `to` is in the set of squares that pt would attack the king from.
_ROOK_LIKE = (chess.ROOK, chess.QUEEN)
_BISHOP_LIKE = (chess.BISHOP, chess.QUEEN)


# A position packed into 122 bytes: ten bitboards (white, black, pawns, knights, bishops, rooks,
# queens, kings, promoted pieces, castling rooks), turn, en passant square (64: none), half-move
# clock, move number, Chess960 flag. The move stacks and ``occupied`` are rebuilt by ``unpack``.
# A FEN may carry any counters: the half-move clock is kept up to 65535 (from 100 on the game is
# drawn anyway) and the move number up to 2**32 - 1.
_PACKED = struct.Struct("<10QBBHI?")
_MAX_HALFMOVES = 0xFFFF
_MAX_MOVE_NUMBER = 0xFFFFFFFF
_NO_EP = 64
# What makes positions the same for repetitions: white's pieces, each piece type, the castling rooks,
# the en passant square (64: none or no legal capture), turn. Packed first because Python hashes an int
# modulo 2**61 - 1: as tuple items, bitboards of f8-h8 hash like those of a1-c1, and two positions a
# rook move apart (to c1 or to h8) had one key. Hashed by BLAKE2b rather than hash(): Python salts the hash of
# bytes per process, and worker processes (engine/workers.py) must give a position the key the search gives it.
_KEY = struct.Struct("<8QBB")
_NEW_BOARD = chess.Board.__new__


def _moves_by_id() -> list[Optional[chess.Move]]:
    """One shared ``chess.Move`` per move id (see :class:`ChessGame`): every from-to pair, and the
    promotions a pawn can make. Building a Move costs more than the rest of generating it, so the
    move generator and ``move_from_id`` hand out these instead (moves are never mutated)."""
    table: list[Optional[chess.Move]] = [None] * (6 << 12)
    for frm in range(64):
        for to in range(64):
            table[frm | to << 6] = chess.Move(frm, to)
    for frm_rank, to_rank in ((6, 7), (1, 0)):
        for file in range(8):
            frm = chess.square(file, frm_rank)
            for to_file in range(max(0, file - 1), min(8, file + 2)):
                to = chess.square(to_file, to_rank)
                for piece in (chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN):
                    table[frm | to << 6 | piece << 12] = chess.Move(frm, to, piece)
    return table


_MOVE_BY_ID = _moves_by_id()


class ChessGame:
    """Chess through python-chess; states are ``chess.Board`` objects without move stacks.

    Packed form: ``bytes`` (see ``_PACKED``), a sixth of a ``chess.Board``'s size. A move id is
    from | to << 6 | promotion << 12.
    """

    def legal_moves(self, board: chess.Board) -> list[chess.Move]:
        return self.legal_moves_and_ids(board)[0]

    @staticmethod
    def legal_moves_and_ids(board: chess.Board) -> tuple[list[chess.Move], list[int]]:
        return legal_moves_and_ids(board)

    def play(self, board: chess.Board, move: chess.Move) -> chess.Board:
        child = board.copy(stack=False)
        child.push(move)
        # Positions kept by the game never pop; dropping the undo record saves memory.
        child.move_stack.clear()
        child._stack.clear()
        return child

    @staticmethod
    def pack(board: chess.Board) -> bytes:
        oc = board.occupied_co
        ep = board.ep_square
        return _PACKED.pack(oc[True], oc[False], board.pawns, board.knights, board.bishops, board.rooks,
                            board.queens, board.kings, board.promoted, board.castling_rights, board.turn,
                            _NO_EP if ep is None else ep,
                            min(max(board.halfmove_clock, 0), _MAX_HALFMOVES),
                            min(max(board.fullmove_number, 0), _MAX_MOVE_NUMBER), board.chess960)

    @staticmethod
    def unpack(packed: bytes) -> chess.Board:
        # Filling the attributes directly is cheaper than Board.copy(); tests check it against python-chess.
        b = _NEW_BOARD(chess.Board)
        (white, black, b.pawns, b.knights, b.bishops, b.rooks, b.queens, b.kings, b.promoted, b.castling_rights,
         turn, ep, b.halfmove_clock, b.fullmove_number, b.chess960) = _PACKED.unpack(packed)
        b.turn = turn == 1
        b.ep_square = None if ep == _NO_EP else ep
        b.occupied_co = [black, white]
        b.occupied = white | black
        b.move_stack = []
        b._stack = []
        return b

    def successor(self, packed: bytes, move_id: int) -> chess.Board:
        board = self.unpack(packed)
        board.push(self.move_from_id(move_id))
        board.move_stack.clear()  # the undo record is never used: a tree position never pops
        board._stack.clear()
        return board

    @staticmethod
    def move_ids(moves: Sequence[chess.Move]) -> list[int]:
        return [m.from_square | m.to_square << 6 | (m.promotion or 0) << 12 for m in moves]

    @staticmethod
    def move_from_id(move_id: int) -> chess.Move:
        move = _MOVE_BY_ID[move_id] if move_id < len(_MOVE_BY_ID) else None
        return move if move is not None else chess.Move(move_id & 63, move_id >> 6 & 63, move_id >> 12 or None)

    def result(self, board: chess.Board, moves: Sequence[chess.Move]) -> Optional[float]:
        if not moves:
            return -1.0 if board.is_check() else 0.0
        if board.halfmove_clock >= 100:
            return 0.0
        # is_insufficient_material costs microseconds; only few-piece positions can qualify
        # (many same-coloured bishops are ignored).
        if board.occupied.bit_count() <= 4 and board.is_insufficient_material():
            return 0.0
        return None

    @staticmethod
    def key(board: chess.Board) -> Hashable:
        ep = board.ep_square
        if ep is None or not board.has_legal_en_passant():
            ep = _NO_EP
        fields = _KEY.pack(board.occupied_co[chess.WHITE], board.pawns, board.knights, board.bishops, board.rooks,
                           board.queens, board.kings, board.clean_castling_rights(), ep, board.turn)
        return int.from_bytes(_blake2b(fields, digest_size=8).digest(), "little")

    def reversible_plies(self, board: chess.Board) -> int:
        return board.halfmove_clock

    def winning_moves(self, board: chess.Board, moves: Sequence[chess.Move]) -> list[chess.Move]:
        """Mates in one among the moves that give direct check (discovered mates are left to search)."""
        them = not board.turn
        king = board.king(them)
        if king is None:
            return []
        occupied = board.occupied
        checks_from = {
            chess.PAWN: chess.BB_PAWN_ATTACKS[them][king],
            chess.KNIGHT: chess.BB_KNIGHT_ATTACKS[king],
            chess.BISHOP: chess.BB_DIAG_ATTACKS[king][chess.BB_DIAG_MASKS[king] & occupied],
            chess.ROOK: (chess.BB_RANK_ATTACKS[king][chess.BB_RANK_MASKS[king] & occupied]
                         | chess.BB_FILE_ATTACKS[king][chess.BB_FILE_MASKS[king] & occupied]),
        }
        checks_from[chess.QUEEN] = checks_from[chess.BISHOP] | checks_from[chess.ROOK]
        # Squares some piece would check from: most moves land elsewhere and need no closer look.
        checking = checks_from[chess.PAWN] | checks_from[chess.KNIGHT] | checks_from[chess.QUEEN]
        flights = None   # the king's flight squares, listed once a move checks
        piece_type_at = board.piece_type_at
        mates = []
        probe = None  # a private copy: other threads may be reading `board` (network encoding)
        for move in moves:
            if not (checking >> move.to_square) & 1 and not move.promotion:
                continue
            if flights is None:
                flights = list(chess.scan_reversed(BB_KING_ATTACKS[king] & ~board.occupied_co[them]))
            piece = move.promotion or piece_type_at(move.from_square)
            if piece == chess.KING:
                continue
            if not (checks_from[piece] >> move.to_square) & 1:
                # A promoted piece may check along the line its pawn has just left (b7-b8=Q, king on b6).
                if not move.promotion or not _attacks(piece, board.turn, move.to_square,
                                                      occupied & ~BB_SQUARES[move.from_square]) >> king & 1:
                    continue
            # Most checks leave the king a flight square, and seeing that is far cheaper than playing the move.
            if flights and not (piece == chess.PAWN and move.to_square == board.ep_square) \
                    and _king_escapes(board, move, piece, king, flights):
                continue
            if probe is None:
                probe = board.copy(stack=False)
            probe.push(move)
            if probe.is_checkmate():
                mates.append(move)
            probe.pop()
        return mates

    def random_playout(self, board: chess.Board, rng: random.Random, max_plies: int) -> float:
        b = board.copy(stack=False)
        choice = rng.choice
        for ply in range(max_plies):
            moves = list(b.generate_legal_moves())
            outcome = self.result(b, moves)
            if outcome is not None:
                # The outcome is for the side to move after `ply` plies.
                return outcome if ply % 2 == 0 else -outcome
            b.push(choice(moves))
        return 0.0


def _king_escapes(board: chess.Board, move: chess.Move, piece: chess.PieceType, king: chess.Square,
                  flights: list[chess.Square]) -> bool:
    """Whether the king checked by ``move`` (not en passant) has a safe flight square, which rules out mate.

    Our attacks are seen with the moved piece on its new square and the king lifted off the board, so a
    slider's ray through the king's square counts, as in python-chess's legality test.
    """
    us = board.turn
    to = move.to_square
    source = BB_SQUARES[move.from_square]
    occupied = (board.occupied & ~source & ~BB_SQUARES[king]) | BB_SQUARES[to]
    covered = _attacks(piece, us, to, occupied)
    attackers_mask = board.attackers_mask
    for square in flights:
        if not (covered >> square) & 1 and not attackers_mask(us, square, occupied) & ~source:
            return True
    return False


def _attacks(piece: chess.PieceType, color: chess.Color, square: chess.Square, occupied: int) -> int:
    """The squares a ``piece`` of ``color`` on ``square`` attacks, with ``occupied`` blocking its rays."""
    if piece == chess.PAWN:
        return BB_PAWN_ATTACKS[color][square]
    if piece == chess.KNIGHT:
        return BB_KNIGHT_ATTACKS[square]
    attacks = 0
    if piece != chess.ROOK:
        attacks = BB_DIAG_ATTACKS[square][BB_DIAG_MASKS[square] & occupied]
    if piece != chess.BISHOP:
        attacks |= (BB_RANK_ATTACKS[square][BB_RANK_MASKS[square] & occupied]
                    | BB_FILE_ATTACKS[square][BB_FILE_MASKS[square] & occupied])
    return attacks


def legal_moves_and_ids(board: chess.Board) -> tuple[list[chess.Move], list[int]]:
    """python-chess's legal moves, in its order, with their move ids, in one pass.

    This is a tenth of the whole search, so it avoids python-chess's per-move generator and
    safety test: out of check, only moves of pinned pieces, king moves and en passant can expose
    the king, and only those are tested. In check, python-chess generates the evasions.
    """
    turn = board.turn
    king = board.king(turn)
    if king is None or board.is_attacked_by(not turn, king):
        moves = list(board.generate_legal_moves())
        return moves, ChessGame.move_ids(moves)
    blockers = board._slider_blockers(king)
    risky = blockers | BB_SQUARES[king]
    is_safe = board._is_safe

    def safe(move: chess.Move) -> bool:
        return is_safe(king, blockers, move)
    us = board.occupied_co[turn]
    them = board.occupied_co[not turn]
    occupied = us | them
    knights, kings = board.knights, board.kings
    diagonal = board.bishops | board.queens
    straight = board.rooks | board.queens
    moves: list[chess.Move] = []
    ids: list[int] = []
    add_move, add_id = moves.append, ids.append
    moves_by_id = _MOVE_BY_ID
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
        if bb & risky:
            # python-chess's _is_safe, inlined: a king must not step onto an attacked square (out of check no
            # slider's ray runs through it), a pinned piece must stay on the line through its king.
            stepping = frm == king
            while targets:
                to = targets.bit_length() - 1
                targets ^= 1 << to
                if (not attackers_mask(them_color, to, occupied) if stepping
                        else BB_RAYS[frm][to] & king_bb):
                    move_id = frm | to << 6
                    add_move(moves_by_id[move_id])
                    add_id(move_id)
        else:
            while targets:
                to = targets.bit_length() - 1
                targets ^= 1 << to
                move_id = frm | to << 6
                add_move(moves_by_id[move_id])
                add_id(move_id)
    if board.castling_rights & (BB_RANK_1 if turn else BB_RANK_8):
        if board.chess960:
            castling = list(board.generate_castling_moves())  # python-chess tests their safety itself
            moves += castling
            ids += ChessGame.move_ids(castling)
        else:
            for move_id in _castling_ids(board, turn, occupied):
                add_move(moves_by_id[move_id])
                add_id(move_id)

    pawns = board.pawns & us
    if not pawns:
        return moves, ids
    attacks = BB_PAWN_ATTACKS[turn]
    capturers = pawns
    while capturers:
        frm = capturers.bit_length() - 1
        bb = 1 << frm
        capturers ^= bb
        targets = attacks[frm] & them
        check = bb & risky
        while targets:
            to = targets.bit_length() - 1
            targets ^= 1 << to
            _add_pawn_moves(frm, to, safe if check else None, add_move, add_id)
    if turn:
        single = pawns << 8 & ~occupied
        double = single << 8 & ~occupied & (BB_RANK_3 | BB_RANK_4)
        step = 8
    else:
        single = pawns >> 8 & ~occupied
        double = single >> 8 & ~occupied & (BB_RANK_6 | BB_RANK_5)
        step = -8
    while single:
        to = single.bit_length() - 1
        single ^= 1 << to
        frm = to - step
        _add_pawn_moves(frm, to, safe if risky >> frm & 1 else None, add_move, add_id)
    while double:
        to = double.bit_length() - 1
        double ^= 1 << to
        frm = to - 2 * step
        move_id = frm | to << 6
        move = moves_by_id[move_id]
        if not risky >> frm & 1 or safe(move):
            add_move(move)
            add_id(move_id)
    if board.ep_square:
        en_passant = [move for move in board.generate_pseudo_legal_ep() if safe(move)]
        moves += en_passant
        ids += ChessGame.move_ids(en_passant)
    return moves, ids


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


_PROMOTIONS = (chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT)  # python-chess's order


def _add_pawn_moves(frm: int, to: int, safe: Optional[Callable[[chess.Move], bool]],
                    add_move: Callable, add_id: Callable) -> None:
    """One pawn move, or its four promotions on the last rank; ``safe`` (when set) tests each."""
    if to < 8 or to >= 56:
        for piece in _PROMOTIONS:
            move_id = frm | to << 6 | piece << 12
            move = _MOVE_BY_ID[move_id]
            if safe is None or safe(move):
                add_move(move)
                add_id(move_id)
    else:
        move_id = frm | to << 6
        move = _MOVE_BY_ID[move_id]
        if safe is None or safe(move):
            add_move(move)
            add_id(move_id)
