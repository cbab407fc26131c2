"""What a new tree node learns from its position alone, wherever that work is done.

A node reached for the first time needs its position played out from its parent's, its legal moves, whether
the game ends there (by the rules or the tablebases), and, when it goes on, the evaluator's value and its moves
sorted by prior with a mate in one first. None of this depends on the search's statistics, so with ``Threads``
of 2 or more it can run in a worker process (engine/search/workers.py) and come back as a plain tuple, an
:data:`Expansion`. What depends on the path (repetitions) stays with the search; a network, which encodes the
positions before the leaf, is given them (:class:`Boards`).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from ..evaluators.base import Evaluator, Leaf
from ..evaluators import edges
from .mop_up import steer as steer_lone_king_ending
from .tree import TB_PLIES

# (packed state, reversible plies, game result for the side to move or None, its plies,
#  edges (engine/evaluators/edges.py: raw value, draw, move ids best prior first, their priors), value, draw probability,
#  whether the first move mates)
Expansion = tuple
# (packed position of the parent, move id) or (packed position of the leaf, None), and the packed positions of the
# path between the root and the leaf (exclusive; empty for an evaluator that needs no history)
Job = tuple

BOARDS_KEPT = 1024  # unpacked positions a Boards keeps before it starts afresh (about 1.5 MB; recent paths share most)


class Boards:
    """The game's positions up to the search's root, and unpacked positions of the tree by their packed form:
    consecutive leaves share most of their paths, so each interior position is unpacked about once."""

    def __init__(self, game: Any, before_root: Sequence[Any] = ()) -> None:
        self.game = game
        self.before_root = list(before_root)
        self._unpacked: dict[bytes, Any] = {}

    def history(self, path: Sequence[bytes]) -> list[Any]:
        """The positions before a leaf whose path from the root passes through the packed ``path``."""
        unpacked = self._unpacked
        if len(unpacked) > BOARDS_KEPT:
            unpacked.clear()
        out = list(self.before_root)
        for packed in path:
            board = unpacked.get(packed)
            if board is None:
                board = unpacked[packed] = self.game.unpack(packed)
            out.append(board)
        return out


def order_moves(game: Any, leaf: Leaf) -> tuple[list[int], list[float], bool]:
    """An evaluated leaf's move ids and priors, best prior first, a mate in one in front; and whether there is one."""
    priors = leaf.priors if isinstance(leaf.priors, list) else list(leaf.priors)
    order = sorted(range(len(priors)), key=priors.__getitem__, reverse=True)
    mates = leaf.mates if leaf.mates is not None else game.winning_moves(leaf.board, leaf.moves)
    if mates:
        first = leaf.moves.index(mates[0])
        order.remove(first)
        order.insert(0, first)
    ids = leaf.move_ids if leaf.move_ids is not None else game.move_ids(leaf.moves)
    return [ids[i] for i in order], [priors[i] for i in order], bool(mates)


def leaf_edges(game: Any, evaluator: Evaluator, leaf: Leaf, steer: bool = True) -> tuple[bytes, bool]:
    """An evaluated leaf's edges (engine/evaluators/edges.py, with its raw value) and whether its first move mates; the
    evaluator may keep them (``Evaluator.keep``). Against a lone king the priors and value are then steered towards
    the mate (engine/search/mop_up.py), after the evaluator's cache has kept its own; not with ``steer`` false (the root of
    a policy player, which plays the net's own top move)."""
    ids, priors, mate = order_moves(game, leaf)
    draw = leaf.wdl[1] if leaf.wdl is not None else 0.0
    packed = edges.pack(leaf.raw_value if leaf.raw_value is not None else leaf.value, draw, ids, priors)
    evaluator.keep(leaf, packed)
    steered = steer_lone_king_ending(leaf.board, leaf.moves, leaf.value) if steer else None
    if steered is not None:   # (the cache above keeps the evaluator's own priors and value)
        leaf.priors, leaf.value = steered
        ids, priors, mate = order_moves(game, leaf)
        packed = edges.pack(leaf.value, draw, ids, priors)
    return packed, mate


def expand_positions(game: Any, evaluator: Evaluator, tablebases: Optional[Any], jobs: Sequence[Job],
                     boards: Optional[Boards] = None) -> list[Expansion]:
    """Work out the leaves of ``jobs``, evaluating those that go on in one call; ``boards`` gives a network its
    history."""
    out: list[Any] = []
    leaves: list[tuple[int, Leaf]] = []
    for packed, move_id, path in jobs:
        state = game.successor(packed, move_id) if move_id is not None else game.unpack(packed)
        moves, ids = game.legal_moves_and_ids(state)
        result, plies = game.result(state, moves), 0
        if result is None and tablebases is not None:
            result, plies = tablebases.result(state), TB_PLIES
        head = (game.pack(state), game.reversible_plies(state))
        if result is not None:
            out.append(head + (result, plies, None, 0.0, 0.0, False))
            continue
        leaf = Leaf(state, moves, boards.history(path) if boards is not None and evaluator.needs_history else ())
        leaf.move_ids = ids
        leaves.append((len(out), leaf))
        out.append(head)
    if leaves:
        evaluator.evaluate([leaf for _, leaf in leaves])
        for i, leaf in leaves:
            packed, mate = leaf_edges(game, evaluator, leaf)
            draw = leaf.wdl[1] if leaf.wdl is not None else 0.0
            out[i] += (None, 0, packed, leaf.value, draw, mate)
    return out
