"""Classic UCT evaluation: uniform priors and the result of one random playout."""

from __future__ import annotations

import random
from typing import Any

from .base import Evaluator, Leaf

# Random games rarely end on their own before this; a playout cut off here counts as a draw.
MAX_PLAYOUT_PLIES = 100


class RolloutEvaluator(Evaluator):
    """Values a leaf by playing random moves to the end of the game (capped in length)."""

    name = "rollout"
    uct = True
    copies_to_workers = True

    def __init__(self, game: Any, seed: int = 0, max_plies: int = MAX_PLAYOUT_PLIES) -> None:
        self.game, self.seed, self.max_plies = game, seed, max_plies
        self.rng = random.Random(seed)

    def evaluate(self, leaves: list[Leaf]) -> None:
        for leaf in leaves:
            n = len(leaf.moves)
            leaf.priors = [1.0 / n] * n
            leaf.value = self.game.random_playout(leaf.board, self.rng, self.max_plies)

    def clear(self) -> None:
        self.rng = random.Random(self.seed)
