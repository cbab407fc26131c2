"""A least prior for forcing moves: captures, promotions and direct checks.

PUCT gives a move visits in proportion to its prior. A sacrifice the policy rates at 1% gets a visit or two, its
first value looks like a lost piece, and the combination behind it is never seen (lc0's "tactical blindness").
With ``ForcingPriorFloor`` F every capture, promotion and direct check gets a prior of at least F, and the other
moves share what is left in their old proportions, so that a forcing move is always looked at a few plies deep.

The evaluators raise the priors they make, before their caches keep them (a cache is emptied when the floor
changes), so every node gets them, a worker's included.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import chess
from ..board.moves import checking_squares, move_ids

# Above this share of the whole prior, raised forcing moves would crowd out every quiet move: left as they are.
MOST_FORCING_MASS = 0.9


def prior_floor(params: Any) -> float:
    """The least prior of a forcing move the options ask for: ``ForcingPriorFloor``, or 0 under
    ``UCI_LimitStrength``, whose levels were calibrated without it."""
    if params is None or getattr(params, "limit_strength", False):
        return 0.0
    return float(getattr(params, "forcing_prior_floor", 0.0))


def forcing_moves(board: chess.Board, move_ids: Sequence[int]) -> Optional[list[bool]]:
    """For each move (by id: from | to << 6 | promotion << 12), whether it captures, promotes or gives direct check;
    None when none does. Discovered checks are left out: finding them needs the move played."""
    checks_from = checking_squares(board) or [0] * 7
    targets = board.occupied_co[not board.turn]
    if board.ep_square is not None:
        targets |= 1 << board.ep_square  # a pawn's move there is en passant (a piece cannot reach it legally)
    checking = checks_from[1] | checks_from[2] | checks_from[5]  # most moves land elsewhere: no closer look
    piece_type_at = board.piece_type_at
    flags = []
    found = False
    for move_id in move_ids:
        to = move_id >> 6 & 63
        forcing = move_id >= 4096 or bool(targets >> to & 1) or bool(
            checking >> to & 1 and checks_from[piece_type_at(move_id & 63)] >> to & 1)
        flags.append(forcing)
        found = found or forcing
    return flags if found else None


def raise_forcing(priors: Sequence[float], forcing: Sequence[bool], floor: float) -> list[float]:
    """``priors`` with each forcing move's at least ``floor`` and the others scaled to keep the sum at 1."""
    raised = [max(p, floor) if f else p for p, f in zip(priors, forcing)]
    forcing_mass = sum(p for p, f in zip(raised, forcing) if f)
    quiet_mass = sum(p for p, f in zip(priors, forcing) if not f)
    if forcing_mass > MOST_FORCING_MASS or quiet_mass <= 0.0:
        return list(priors)
    scale = (1.0 - forcing_mass) / quiet_mass
    return [p if f else p * scale for p, f in zip(raised, forcing)]


def apply(leaf: Any, floor: float) -> None:
    """Raise an evaluated leaf's forcing moves' priors to ``floor`` (nothing when it is 0)."""
    if floor <= 0.0 or not leaf.priors:
        return
    ids = leaf.move_ids if leaf.move_ids is not None else move_ids(leaf.moves)
    flags = forcing_moves(leaf.board, ids)
    if flags is not None:
        leaf.priors = raise_forcing(leaf.priors, flags, floor)
