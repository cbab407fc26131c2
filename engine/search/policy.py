"""The search policy: which child a simulation descends into.

PUCT (AlphaZero, lc0): Q + cpuct(N) * P * sqrt(N) / (1 + n), where an unvisited child's Q is the
first-play urgency (parent's Q minus a reduction that grows with the prior mass already
explored) and cpuct grows slowly with the parent's visits. UCB1 (classic UCT, for random
rollouts): Q + c * sqrt(ln N / n), every child tried once first.

In-flight visits of a batch count in N and n of the exploration term, so the leaves of one
batch spread over the tree. Proven losses are never chosen while anything else is left.
"""

from __future__ import annotations

from math import log, sqrt
from typing import Optional

from ..evaluators import edges as edges_
from .tree import DRAW, LOSS, Node

AVOID = -1e9  # score of a proven loss: picked only when every other child is a proven loss too


class Puct:
    """PUCT with lc0's cpuct growth and FPU reduction."""

    def __init__(self, cpuct: float, cpuct_base: float, cpuct_factor: float, fpu_reduction: float) -> None:
        self.cpuct, self.base, self.factor, self.fpu_reduction = cpuct, cpuct_base, cpuct_factor, fpu_reduction

    def exploration(self, node: Node) -> float:
        """cpuct(N) * sqrt(N): the coefficient of P / (1 + n)."""
        n = node.n + node.in_flight
        cpuct = self.cpuct + self.factor * log((n + self.base) / self.base)
        return cpuct * sqrt(max(n - 1, 1))

    def fpu(self, node: Node, visited_policy: float) -> float:
        """The value of an unvisited child: the parent's Q, less a reduction growing with the prior mass visited."""
        parent_q = -node.w / node.n if node.n else 0.0
        return parent_q - self.fpu_reduction * sqrt(visited_policy)

    def select(self, node: Node) -> Node:
        coeff = self.exploration(node)
        edges = node.edges
        k = len(node.children)
        more = k < edges_.count(edges)   # an unopened move is left
        priors = edges_.leading_priors(edges, k + 1 if more else k)
        best: Optional[Node] = None
        best_score = -1e18
        visited_policy = 0.0
        # Every unvisited child has the same Q (the FPU, known once the visited prior mass is): the best of them
        # is the one with the most exploration.
        fresh: Optional[Node] = None
        fresh_u = -1.0
        for c, prior in zip(node.children, priors):
            proven = c.proven
            n = c.n
            if n:
                visited_policy += prior
            if proven is not None:
                score = AVOID if proven == LOSS else DRAW + coeff * prior / (1 + n + c.in_flight)
            elif n:
                score = c.w / n + coeff * prior / (1 + n + c.in_flight)
            else:
                u = prior / (1 + c.in_flight)
                if u > fresh_u:
                    fresh_u, fresh = u, c
                continue
            if score > best_score:
                best_score, best = score, c
        fpu = self.fpu(node, visited_policy)
        if fresh is not None and fpu + coeff * fresh_u > best_score:
            best_score, best = fpu + coeff * fresh_u, fresh
        if more and fpu + coeff * priors[k] > best_score:
            best = node.add_child(edges_.move_id(edges, k))
        return best


class Uct:
    """UCB1 for evaluators whose priors carry no information."""

    def __init__(self, c: float) -> None:
        self.c = c

    def select(self, node: Node) -> Node:
        k = len(node.children)
        if k < node.edge_count():
            return node.add_child(node.move_id(k))
        log_n = log(max(node.n + node.in_flight, 1))
        c = self.c
        best, best_score = None, -1e18
        for child in node.children:
            proven = child.proven
            n = child.n + child.in_flight
            if proven is not None:
                score = AVOID if proven == LOSS else proven + c * sqrt(log_n / max(n, 1))
            elif n == 0:
                return child
            else:
                score = child.w / max(child.n, 1) + c * sqrt(log_n / n)
            if score > best_score:
                best_score, best = score, child
        return best
