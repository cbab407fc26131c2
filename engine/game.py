"""The narrow game interface the tree search sees, and its chess implementation.

The search knows nothing of chess: it asks a :class:`Game` for legal moves, successor states,
exact results of finished games and repetition keys. That keeps the search testable exactly on
small games (see ``tests/toy_games.py``).
"""

from __future__ import annotations

import random
from typing import Hashable, Optional, Protocol, Sequence, TypeVar

import chess

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


# Direct-check detection without pushing moves: a piece of type pt checks the enemy king from
# `to` if `to` is in the set of squares that pt would attack the king from.
_ROOK_LIKE = (chess.ROOK, chess.QUEEN)
_BISHOP_LIKE = (chess.BISHOP, chess.QUEEN)


class ChessGame:
    """Chess through python-chess; states are ``chess.Board`` objects without move stacks."""

    def legal_moves(self, board: chess.Board) -> list[chess.Move]:
        return list(board.generate_legal_moves())

    def play(self, board: chess.Board, move: chess.Move) -> chess.Board:
        child = board.copy(stack=False)
        child.push(move)
        # The child never pops; dropping the undo record saves memory in every tree node.
        child.move_stack.clear()
        child._stack.clear()
        return child

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

    def key(self, board: chess.Board) -> Hashable:
        return hash(board._transposition_key())

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
        piece_type_at = board.piece_type_at
        mates = []
        probe = None  # a private copy: other threads may be reading `board` (network encoding)
        for move in moves:
            piece = move.promotion or piece_type_at(move.from_square)
            if piece == chess.KING or not (checks_from[piece] >> move.to_square) & 1:
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
