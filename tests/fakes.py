"""Evaluators that stand in for the real ones, so that tests see the search alone."""

from __future__ import annotations

import numpy as np

from engine.evaluators import lc0_policy
from engine.evaluators.base import Evaluator, Leaf


class Scripted(Evaluator):
    """An evaluator written in Python: uniform priors, value 0."""

    name = "scripted"

    def evaluate(self, leaves: list[Leaf]) -> None:
        for leaf in leaves:
            leaf.priors = [1.0 / len(leaf.moves)] * len(leaf.moves)
            leaf.value = 0.0


class Batching(Scripted):
    """The same, in batches of ``MinibatchSize``; records the batch sizes."""

    batch_size = 16

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def evaluate(self, leaves: list[Leaf]) -> None:
        self.sizes.append(len(leaves))
        super().evaluate(leaves)


class UniformNetwork(Evaluator):
    """A network's stand-in through the planes interface: equal logits for every move, value 0, no draws."""

    name = "network"
    planes = True
    needs_history = True
    batch_size = 16
    columns = lc0_policy.core_columns()

    def __init__(self) -> None:
        self.params = None
        self.batches = 0
        self.sizes: list[int] = []

    def prior_floor(self) -> float:
        return 0.0

    def run_planes(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        self.batches += 1
        self.sizes.append(len(planes))
        n = len(planes)
        return np.zeros((n, lc0_policy.POLICY_SIZE), dtype=np.float32), np.zeros(n), np.zeros(n)

    def evaluate(self, leaves: list[Leaf]) -> None:
        Scripted.evaluate(self, leaves)   # type: ignore[arg-type]
