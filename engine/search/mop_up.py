"""Endings against a lone king: a direction for the search where every position is simply won.

Against a bare king a queen or a rook wins, and so do two bishops or bishop and knight. A net's value says so
about as much whether the lone king is cornered or in the centre (+0.99 with a rook; with two bishops anything from
+0.3 to +0.8, at random), so the tree has nothing to steer by, and a short search on the clock wanders until the
fifty-move rule draws: against Stockfish, K+R against K from a mate in 16 was drawn so. As Stockfish's endgame
evaluation does (push the lone king to the edge, bring the other king close; for two bishops to a corner, for bishop
and knight to a corner the bishop covers; for a rook or queen also the box its lines close around the king), such a
position is valued by how far the mate has come, from ``VALUE_AT_START`` to 1, so the tree prefers progress and a
proven mate is still worth the most. The net's policy knows these endings no better, so the priors follow the same
measure one move ahead. Where the lone king is to move and can take something, the evaluator's value stands: the
ending may be about to change.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import chess

from ..evaluators.heuristic import CENTRE_DISTANCE   # 0 in the centre, 3 on the edge

# The value of a won position against a lone king with no progress made; a finished net (king in the corner, the
# other beside it) is worth 1. The gap is what the tree steers by; at its bottom a win is still worth more than the
# positions just before the last capture usually are (a rook against a knight is mostly a draw).
VALUE_AT_START = 0.8
# Priors by the progress after each move, softmax at this temperature: a move that gains a tenth of the way gets
# about seven times the prior of one that stands still.
PRIOR_TEMPERATURE = 0.05
EDGE_WEIGHT = 0.7        # of the progress: the lone king's way to the edge (or the right corner)
PROXIMITY_WEIGHT = 0.3   # and the attacking king's approach
DARK_CORNERS, LIGHT_CORNERS = (chess.A1, chess.H8), (chess.H1, chess.A8)


def mating_progress(board: chess.Board) -> Optional[tuple[chess.Color, float]]:
    """For an ending of a lone king against mating material: (the side that mates, how far the mate has come, from 0
    to 1); None for any other position."""
    black, white = board.occupied_co   # indexed by colour: False (Black) first
    if white & (white - 1) and black & (black - 1):
        return None   # neither king is alone: most positions end here
    attacker = chess.WHITE if black & (black - 1) == 0 else chess.BLACK
    if board.occupied_co[attacker] & (board.occupied_co[attacker] - 1) == 0:
        return None   # two bare kings
    own = board.occupied_co[attacker]
    bishops, knights = board.bishops & own, board.knights & own
    lone, king = board.king(not attacker), board.king(attacker)
    if lone is None or king is None:
        return None
    if (board.queens | board.rooks) & own:   # the edge, and the box the rook or queen holds the king in
        edge = (CENTRE_DISTANCE[lone] / 3 + (49 - _box(lone, (board.queens | board.rooks) & own)) / 48) / 2
    elif bishops & chess.BB_DARK_SQUARES and bishops & chess.BB_LIGHT_SQUARES:   # they mate in a corner only
        edge = (3 - min(chess.square_distance(lone, c) for c in DARK_CORNERS + LIGHT_CORNERS)) / 3
    elif bishops and knights and not board.pawns & own:
        corners = DARK_CORNERS if bishops & chess.BB_DARK_SQUARES else LIGHT_CORNERS
        edge = (7 - min(chess.square_distance(lone, c) for c in corners)) / 7
    else:
        return None   # pawns or knights alone: no mate to steer towards (or a promotion to come first)
    proximity = min(1.0, (7 - chess.square_distance(lone, king)) / 5)
    return attacker, EDGE_WEIGHT * edge + PROXIMITY_WEIGHT * proximity


def steer(board: Any, moves: list, value: float) -> Optional[tuple[list[float], float]]:
    """For a won ending against a lone king, the priors of ``moves`` (legal) and the value (side to move's view) to
    search with instead of the evaluator's (``value``); None for any other position, most of them at once."""
    progress = mating_progress(board) if isinstance(board, chess.Board) else None
    if progress is None:
        return None
    return _priors(board, moves, progress[0]), _value(board, value, progress)


def _priors(board: chess.Board, moves: list, attacker: chess.Color) -> list[float]:
    scores = []
    for move in moves:
        board.push(move)
        after = mating_progress(board)
        if after is None:   # the ending changed: a capture by the lone king, or a promotion
            score = 1.0 if board.turn == attacker else 0.0
        elif board.turn == attacker:
            score = 1.0 - after[1]
        else:
            score = -1.0 if _lone_king_can_take(board, attacker) else after[1]
        board.pop()
        scores.append(score)
    top = max(scores)
    weights = [math.exp((score - top) / PRIOR_TEMPERATURE) for score in scores]
    total = sum(weights)
    return [w / total for w in weights]


def _value(board: chess.Board, value: float, progress: tuple[chess.Color, float]) -> float:
    attacker, done = progress
    if board.turn != attacker and _lone_king_can_take(board, attacker):
        return value
    won = VALUE_AT_START + (1 - VALUE_AT_START) * done
    return won if board.turn == attacker else -won


def _lone_king_can_take(board: chess.Board, attacker: chess.Color) -> bool:
    """The lone king, to move, can take one of the attacker's pieces (only those beside it need looking at)."""
    beside = board.occupied_co[attacker] & chess.BB_KING_ATTACKS[board.king(not attacker)]
    return bool(beside) and any(board.generate_legal_captures())


def _box(lone: chess.Square, pieces: int) -> int:
    """The fewest squares (1 to 49) of the rectangles that a rook's or queen's file and rank close around the lone
    king, with the piece's lines as walls: the classic measure of a rook's mate (49 when none closes one)."""
    king_file, king_rank = chess.square_file(lone), chess.square_rank(lone)
    smallest = 49
    for square in chess.scan_forward(pieces):
        file, rank = chess.square_file(square), chess.square_rank(square)
        if file == king_file or rank == king_rank:
            continue   # in check, or about to cross
        files = file if king_file < file else 7 - file
        ranks = rank if king_rank < rank else 7 - rank
        smallest = min(smallest, files * ranks)
    return max(1, smallest)
