"""What a new tree node learns from its position alone, wherever that work is done.

A node reached for the first time needs its position played out from its parent's, its legal moves, whether
the game ends there (by the rules or the tablebases), and, when it goes on, the evaluator's value and its moves
sorted by prior with a mate in one first. None of this depends on the path that led there, so with
``Threads`` of 2 or more it can run in a worker process (engine/workers.py) and come back as a plain tuple,
an :data:`Expansion`. What does depend on the path (repetitions, the tree's statistics) stays with the search.
"""

from __future__ import annotations

from array import array
from typing import Any, Optional

from .evaluators.base import Evaluator, Leaf
from .tree import TB_PLIES, move_array, prior_array

# (packed state, repetition key, reversible plies, game result for the side to move or None, its plies,
#  move ids best prior first, their priors, value, draw probability, raw value, whether the first move mates)
Expansion = tuple


def order_moves(game: Any, leaf: Leaf) -> tuple[array, array, bool]:
    """An evaluated leaf's moves and priors, best prior first, a mate in one in front; and whether there is one."""
    priors = leaf.priors if isinstance(leaf.priors, list) else list(leaf.priors)
    order = sorted(range(len(priors)), key=priors.__getitem__, reverse=True)
    mates = leaf.mates if leaf.mates is not None else game.winning_moves(leaf.board, leaf.moves)
    if mates:
        first = leaf.moves.index(mates[0])
        order.remove(first)
        order.insert(0, first)
    ids = leaf.move_ids if leaf.move_ids is not None else game.move_ids(leaf.moves)
    return move_array([ids[i] for i in order]), prior_array([priors[i] for i in order]), bool(mates)


def expand_position(game: Any, evaluator: Evaluator, tablebases: Optional[Any], packed: bytes,
                    move_id: Optional[int]) -> Expansion:
    """Work out the position after ``move_id`` from the packed ``packed`` (or ``packed`` itself when
    ``move_id`` is None) for an evaluator that needs no history."""
    state = game.successor(packed, move_id) if move_id is not None else game.unpack(packed)
    moves, ids = game.legal_moves_and_ids(state)
    result, plies = game.result(state, moves), 0
    if result is None and tablebases is not None:
        result, plies = tablebases.result(state), TB_PLIES
    head = (game.pack(state), game.key(state), game.reversible_plies(state))
    if result is not None:
        return head + (result, plies, None, None, 0.0, 0.0, None, False)
    leaf = Leaf(state, moves)
    leaf.move_ids = ids
    evaluator.evaluate([leaf])
    moves_out, priors_out, mate = order_moves(game, leaf)
    draw = leaf.wdl[1] if leaf.wdl is not None else 0.0
    return head + (None, 0, moves_out, priors_out, leaf.value, draw, leaf.raw_value, mate)
