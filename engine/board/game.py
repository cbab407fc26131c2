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
from typing import Hashable, Optional, Protocol, Sequence, TypeVar

import chess
from chess import BB_A1, BB_A8, BB_E1, BB_E8, BB_H1, BB_H8, BB_KING_ATTACKS, BB_RANK_1, BB_RANK_8, BB_SQUARES

from . import movegen
from .movegen import attacks

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
        """The position's repetition key: equal for positions that count as the same, the same in every process."""

    def packed_key(self, packed: Hashable) -> Hashable:
        """``key`` of a :meth:`pack`'s form (tree nodes keep no key of their own: a repetition check asks)."""

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

    def legal_moves_and_ids(self, state: State) -> tuple[Sequence[Move], list[int]]:
        """:meth:`legal_moves` (any sequence of them) and their :meth:`move_ids`, made together where that is
        cheaper."""

    def move_ids(self, moves: Sequence[Move]) -> list[int]:
        """Small ints (below 65536) naming ``moves``; :meth:`move_from_id` inverts them."""

    def move_from_id(self, move_id: int) -> Move:
        """The move named by ``move_id``."""


# Direct-check detection without pushing moves: a piece of type pt checks the enemy king from
# `to` if `to` is in the set of squares that pt would attack the king from.
_ROOK_LIKE = (chess.ROOK, chess.QUEEN)
_BISHOP_LIKE = (chess.BISHOP, chess.QUEEN)


# A position packed into a 108-byte object (112 with the allocator's rounding; every node keeps one): eight
# What makes positions the same for repetitions comes first: the bitboards of white's pieces and of each piece type,
# the castling rooks' files (first rank in the low byte, eighth in the high; only rights that can still be used), turn
# and the en passant square (64: none, or no legal capture there). Then the promoted pieces, the half-move clock, the
# move number and the Chess960 flag. So the first ``_IDENTITY`` bytes are the position's repetition key (``key``):
# a node needs no key of its own, and a key is the same bytes in every process. Black's pieces are the rest of the
# board; the move stacks and ``occupied`` are rebuilt by ``unpack``. A FEN may carry any counters: the half-move clock
# is kept up to 65535 (from 100 on the game is drawn anyway) and the move number up to 2**32 - 1.
_PACKED = struct.Struct("<7QHBBQHI?")
_IDENTITY = 7 * 8 + 2 + 1 + 1
_KEY = struct.Struct("<7QHBB")   # the identity's fields alone
_MAX_HALFMOVES = 0xFFFF
_MAX_MOVE_NUMBER = 0xFFFFFFFF
_NO_EP = 64
# The network's cache keys its rows by 60-bit hashes: an int of two 30-bit digits takes 32 bytes, one of 64 bits 36,
# which the allocator rounds to 48. Two positions share a key by chance one time in 2**60.
KEY_MASK = (1 << 60) - 1
_NEW_BOARD = chess.Board.__new__


def _castling_files(rights: int) -> int:
    """The castling rooks (a bitboard of first- and eighth-rank squares) as ``_PACKED`` keeps them."""
    return rights & 0xFF | (rights >> 48) & 0xFF00


def _castling_rooks(files: int) -> int:
    return files & 0xFF | (files & 0xFF00) << 48


def _board(white: int, black: int, pawns: int, knights: int, bishops: int, rooks: int, queens: int, kings: int,
           promoted: int, rights: int, turn: int, ep: int, halfmoves: int, move_number: int,
           chess960: bool) -> chess.Board:
    """A ``chess.Board`` without move stacks from the fields of ``_PACKED``: filling the attributes directly is
    cheaper than ``Board.copy()``; tests check the result against python-chess."""
    b = _NEW_BOARD(chess.Board)
    b.pawns, b.knights, b.bishops, b.rooks, b.queens, b.kings = pawns, knights, bishops, rooks, queens, kings
    b.promoted, b.castling_rights, b.turn = promoted, rights, turn == 1
    b.ep_square = None if ep == _NO_EP else ep
    b.halfmove_clock, b.fullmove_number, b.chess960 = halfmoves, move_number, chess960
    b.occupied_co = [black, white]
    b.occupied = white | black
    b.move_stack = []
    b._stack = []
    return b


def _clean_castling_rights(rights: int, rooks: int, white: int, black: int, kings: int) -> int:
    """python-chess's ``clean_castling_rights`` for standard chess and a board without a move stack: rooks on their
    corners, kings (never promoted ones) on e1 / e8."""
    castling = rights & rooks
    out = castling & BB_RANK_1 & white & (BB_A1 | BB_H1) if white & kings & BB_E1 else 0
    if black & kings & BB_E8:
        out |= castling & BB_RANK_8 & black & (BB_A8 | BB_H8)
    return out


class ChessGame:
    """Chess through python-chess; states are ``chess.Board`` objects without move stacks.

    Packed form: ``bytes`` (see ``_PACKED``), a sixth of a ``chess.Board``'s size. A move id is
    from | to << 6 | promotion << 12.
    """

    def legal_moves(self, board: chess.Board) -> list[chess.Move]:
        return list(self.legal_moves_and_ids(board)[0])

    legal_moves_and_ids = staticmethod(movegen.legal_moves_and_ids)

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
        if ep is not None and not board.has_legal_en_passant():
            ep = None   # the same position as without the square (FIDE, python-chess): the same key
        rights = board.castling_rights
        if rights:
            rights = board.clean_castling_rights()
        return _PACKED.pack(oc[True], board.pawns, board.knights, board.bishops, board.rooks,
                            board.queens, board.kings, _castling_files(rights), board.turn,
                            _NO_EP if ep is None else ep, board.promoted,
                            min(max(board.halfmove_clock, 0), _MAX_HALFMOVES),
                            min(max(board.fullmove_number, 0), _MAX_MOVE_NUMBER), board.chess960)

    @staticmethod
    def packed_key(packed: bytes) -> bytes:
        """``key`` of a packed position, without unpacking it."""
        return packed[:_IDENTITY]

    @staticmethod
    def unpack(packed: bytes) -> chess.Board:
        (white, pawns, knights, bishops, rooks, queens, kings, files, turn, ep, promoted, half, full,
         chess960) = _PACKED.unpack(packed)
        return _board(white, (pawns | knights | bishops | rooks | queens | kings) & ~white, pawns, knights, bishops,
                      rooks, queens, kings, promoted, _castling_rooks(files), turn, ep, half, full, chess960)

    def successor(self, packed: bytes, move_id: int) -> chess.Board:
        """python-chess's ``push`` worked out on the packed bitboards, without its undo record (a tree position
        never pops); castling, en passant and Chess960 go through ``push`` itself. Tests compare the two."""
        (white, pawns, knights, bishops, rooks, queens, kings, files, turn, ep, promoted, half, full,
         chess960) = _PACKED.unpack(packed)
        black = (pawns | knights | bishops | rooks | queens | kings) & ~white
        rights = _castling_rooks(files) if files else 0
        frm, to, promotion = move_id & 63, move_id >> 6 & 63, move_id >> 12
        source, target = 1 << frm, 1 << to
        if chess960 or (kings & source and (to - frm == 2 or frm - to == 2)) or (to == ep and pawns & source):
            board = _board(white, black, pawns, knights, bishops, rooks, queens, kings, promoted, rights, turn,
                           ep, half, full, chess960)
            board.push(self.move_from_id(move_id))
            board.move_stack.clear()
            board._stack.clear()
            return board
        if rights:  # push first drops the rights the position cannot have
            rights = _clean_castling_rights(rights, rooks, white, black, kings & ~promoted)
        half += 1
        if not turn:
            full += 1
        if (black if turn else white) & target:  # a capture: the piece on ``target`` goes
            keep = ~target
            pawns, knights, bishops = pawns & keep, knights & keep, bishops & keep
            rooks, queens = rooks & keep, queens & keep
            white, black = white & keep, black & keep
            half = 0
        moved = source | target
        if turn:
            white ^= moved
        else:
            black ^= moved
        was_promoted = promoted & source
        promoted &= ~moved
        rights &= ~moved
        ep = _NO_EP
        if pawns & source:
            half = 0
            pawns ^= source
            if promotion:
                was_promoted = 1
                if promotion == chess.QUEEN:
                    queens |= target
                elif promotion == chess.KNIGHT:
                    knights |= target
                elif promotion == chess.ROOK:
                    rooks |= target
                else:
                    bishops |= target
            else:
                pawns |= target
                if to - frm == 16 or frm - to == 16:
                    ep = (frm + to) >> 1
        elif knights & source:
            knights ^= moved
        elif bishops & source:
            bishops ^= moved
        elif rooks & source:
            rooks ^= moved
        elif queens & source:
            queens ^= moved
        else:
            kings ^= moved
            if not was_promoted:
                rights &= ~(BB_RANK_1 if turn else BB_RANK_8)
        if was_promoted:
            promoted |= target
        return _board(white, black, pawns, knights, bishops, rooks, queens, kings, promoted, rights, not turn, ep,
                      half, full, chess960)

    move_ids = staticmethod(movegen.move_ids)
    move_from_id = staticmethod(movegen.move_from_id)

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
        return ChessGame.pack(board)[:_IDENTITY]

    @staticmethod
    def board_of_key(key: bytes) -> chess.Board:
        """The position a ``key`` names (pieces, castling rights, side to move, en passant square), with the
        counters at zero: what the root probe needs to recognise the game's earlier positions."""
        white, pawns, knights, bishops, rooks, queens, kings, files, turn, ep = _KEY.unpack(key)
        return _board(white, (pawns | knights | bishops | rooks | queens | kings) & ~white, pawns, knights, bishops,
                      rooks, queens, kings, 0, _castling_rooks(files), turn, ep, 0, 1, False)

    def reversible_plies(self, board: chess.Board) -> int:
        return board.halfmove_clock

    def winning_moves(self, board: chess.Board, moves: Sequence[chess.Move]) -> list[chess.Move]:
        """Mates in one among the moves that give direct check (discovered mates are left to search)."""
        checks_from = movegen.checking_squares(board)
        if checks_from is None:
            return []
        them = not board.turn
        king = board.king(them)
        occupied = board.occupied
        # Squares some piece would check from: most moves land elsewhere and need no closer look.
        checking = checks_from[chess.PAWN] | checks_from[chess.KNIGHT] | checks_from[chess.QUEEN]
        flights = None   # the king's flight squares, listed once a move checks
        piece_type_at = board.piece_type_at
        mates = []
        probe = None  # a private copy: other threads may be reading `board` (network encoding)
        # By id: most moves are ruled out without reading their Move objects.
        ids = moves.ids if isinstance(moves, movegen.MoveIds) else movegen.move_ids(moves)
        for k, move_id in enumerate(ids):
            if not (checking >> (move_id >> 6 & 63)) & 1 and move_id < 4096:  # neither checking nor a promotion
                continue
            move = moves[k]
            if flights is None:
                flights = list(chess.scan_reversed(BB_KING_ATTACKS[king] & ~board.occupied_co[them]))
            piece = move.promotion or piece_type_at(move.from_square)
            if piece == chess.KING:
                continue
            if not (checks_from[piece] >> move.to_square) & 1:
                # A promoted piece may check along the line its pawn has just left (b7-b8=Q, king on b6).
                if not move.promotion or not attacks(piece, board.turn, move.to_square,
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
    covered = attacks(piece, us, to, occupied)
    attackers_mask = board.attackers_mask
    for square in flights:
        if not (covered >> square) & 1 and not attackers_mask(us, square, occupied) & ~source:
            return True
    return False
