"""Step 1b: the children of game positions, one per legal move, for a value that ranks siblings.

The search compares the values of a position's children: which move leads somewhere better. Game positions show
the net one child per position (the move played, plus one random branch), so a value copied from a teacher on
them can get the level of positions right and still rank siblings badly (round 11: the right share of decided
positions, half the teacher's spread between siblings wrong). A children shard holds every legal child of a sample
of a positions shard's game positions, so the teacher's ranking of siblings is what the net is taught.

A child's encoder row is built from its parent's row alone: the child position in the first slot, the parent's
seven newest slots shifted one back (seen from the child's side to move), the parent's repetition flags shifted
likewise. The child's own repetition flag is exact within the eight positions the row holds; a repetition further
back (or one with other castling rights) is not visible in the row and counts as none. A children shard has a
positions shard's fields, with its parent's ``game`` (so that a game's children stay on its side of the
validation split: ``source`` names the positions folder, relative to the children's, whose shard of the same name
holds the parent games), ``branch`` 2 and ``result`` its parent's game result from the child's side (a noisy proxy,
as for branches). It depends only on its positions shard and the seed; the same shard name pairs it with its labels.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import chess
import numpy as np

from engine.evaluators import lc0_planes as planes

from .data import board_from_row, load_shard, save_positions

CHILD = 2          # ``branch`` of a child (1: a game's one random branch)
SLOT = planes._SLOT_INTS
REP = planes._REP


def child_row(parent_row: np.ndarray, child: chess.Board) -> np.ndarray:
    """The encoder row of ``child`` (a board one move after the position of ``parent_row``), history included."""
    own = np.array(planes.gather(child, ()), dtype=np.uint64)
    row = own.copy()
    history = parent_row[:REP - SLOT].reshape(planes.HISTORY - 1, SLOT).copy()
    history[:, [0, 1]] = history[:, [1, 0]]          # "ours" is now the other side
    row[SLOT:REP] = history.ravel()
    flags = np.zeros(planes.HISTORY, dtype=np.uint64)
    flags[1:] = parent_row[REP:REP + planes.HISTORY - 1]
    flags[0] = _repeats(row, child)
    row[REP:REP + planes.HISTORY] = flags
    return row


def _repeats(row: np.ndarray, child: chess.Board) -> int:
    """1 when the child's position stands in an earlier slot of ``row`` with the same side to move, within the
    rule-50 count (lc0's scan, as far as the row reaches)."""
    clock = child.halfmove_clock
    if clock < 4:
        return 0
    current = row[:SLOT]
    for back in range(2, min(clock, planes.HISTORY - 1) + 1, 2):
        slot = row[back * SLOT:(back + 1) * SLOT]
        if not slot.any():
            return 0                                 # before the game's start
        if np.array_equal(slot, current):
            return 1
    return 0


def children_of(row: np.ndarray, fullmove: int) -> list[tuple[np.ndarray, chess.Board]]:
    """Every legal child of the position of ``row`` that is not over (mate, stalemate or a dead draw: the search does
    not ask the net about those), with its row."""
    board = board_from_row(row, fullmove)
    out = []
    for move in board.legal_moves:
        child = board.copy(stack=False)
        child.push(move)
        if child.is_checkmate() or child.is_stalemate() or child.is_insufficient_material():
            continue
        out.append((child_row(row, child), child))
    return out


def make_children(positions: str, out: str, parents: int, seed: int) -> dict:
    """All children of ``parents`` game positions (not branches) of the shard ``positions``, drawn by ``seed``,
    into ``out/<same name>``; returns counts."""
    path = Path(out) / Path(positions).name
    if path.exists():
        return {"shard": path.name, "skipped": True}
    data = load_shard(Path(positions))
    on_line = np.flatnonzero(data.get("branch", np.zeros(len(data["rows"]), dtype=np.uint8)) == 0)
    rng = random.Random(f"arbor-children-{seed}-{path.name}")
    chosen = sorted(rng.sample(list(on_line), min(parents, len(on_line))))
    rows, fullmoves, games, plies, results = [], [], [], [], []
    seen: set[bytes] = set()
    for i in chosen:
        for row, child in children_of(data["rows"][i], int(data["fullmove"][i])):
            key = row.tobytes()
            if key in seen:
                continue
            seen.add(key)
            rows.append(row)
            fullmoves.append(child.fullmove_number)
            games.append(data["game"][i])
            plies.append(data["ply"][i] + 1)
            results.append(-data["result"][i])
    n = len(rows)
    save_positions(path, rows, fullmoves, games, plies, results, [CHILD] * n,
                   source=np.array(os.path.relpath(Path(positions).parent, Path(out))))
    return {"shard": path.name, "positions": n}
