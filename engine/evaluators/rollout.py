"""Classic UCT evaluation: uniform priors and the result of one random playout."""

from __future__ import annotations

import random

import chess

from .base import Evaluator, Leaf

# Random games rarely end on their own before this; a playout cut off here counts as a draw.
MAX_PLAYOUT_PLIES = 100


def random_playout(board: chess.Board, rng: random.Random, max_plies: int) -> float:
    """Play uniformly random moves from ``board`` to the end of the game or ``max_plies``; the result for the side to
    move at ``board`` (a playout cut off is a draw)."""
    b = board.copy(stack=False)
    for ply in range(max_plies):
        moves = list(b.generate_legal_moves())
        if not moves:
            outcome = -1.0 if b.is_check() else 0.0
        elif b.halfmove_clock >= 100 or (b.occupied.bit_count() <= 4 and b.is_insufficient_material()):
            outcome = 0.0
        else:
            b.push(rng.choice(moves))
            continue
        # The outcome is for the side to move after ``ply`` plies.
        return outcome if ply % 2 == 0 else -outcome
    return 0.0


class RolloutEvaluator(Evaluator):
    """Values a leaf by playing random moves to the end of the game (capped in length)."""

    name = "rollout"
    uct = True
    copies_to_workers = True

    def __init__(self, seed: int = 0, max_plies: int = MAX_PLAYOUT_PLIES) -> None:
        self.seed, self.max_plies = seed, max_plies
        self.rng = random.Random(seed)

    def evaluate(self, leaves: list[Leaf]) -> None:
        for leaf in leaves:
            n = len(leaf.moves)
            leaf.priors = [1.0 / n] * n
            leaf.value = random_playout(leaf.board, self.rng, self.max_plies)

    def clear(self) -> None:
        self.rng = random.Random(self.seed)
