"""The on-disk format of positions and labels: numpy arrays in compressed ``.npz`` shards.

A position is stored as the engine's own encoder row (``engine.evaluators.lc0_planes.gather``): 82 uint64 per
position holding the bitboards of the current position and of the 7 before it, the repetition flags, the
castling and side-to-move flags, the rule-50 counter and the en passant square. ``rows_to_planes`` turns a
batch of rows into the network's [B, 112, 8, 8] input, so training reads exactly what the engine feeds the
net, and the golden lc0 test that guards the encoder guards the training data too.

Positions shard (``positions/shard-00042.npz``):

- ``rows`` uint64 [N, 82]: the encoder rows;
- ``fullmove`` uint16 [N]: the move number (for rebuilding a board);
- ``game`` uint32 [N]: the game within the shard; ``ply`` uint16 [N]: the ply within that game;
- ``result`` int8 [N]: the game's result for the side to move (+1 win, 0 draw, -1 loss);
- ``branch`` uint8 [N]: 1 for a position off the game's line, one random move after a kept one (older shards
  lack the array: no branches).

Labels shard (``labels/shard-00042.npz``), aligned with the positions shard of the same number:

- ``moves`` uint16 [N, K]: lc0 policy indices of Stockfish's K best moves (K = MultiPV), 65535 = none;
- ``scores`` int32 [N, K]: their scores in centipawns for the side to move, mates as +-(MATE_CP - plies);
- ``wdl`` float32 [N, 3]: win/draw/loss of the best score by python-chess's ``Score.wdl(model="sf15.1")``;
- ``legal`` uint8 [N, 233]: the legal moves as a bit mask over the 1858 policy entries (``np.packbits``);
- ``depth`` uint8 scalar: the Stockfish depth of these labels (a rerun with another ``--depth`` only labels
  new shards, so one folder can mix depths; training reports the mix).

Shards are written to a temporary name and renamed, so a shard on disk is always complete: an interrupted
run resumes by skipping the shards that exist.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import chess
import numpy as np

from engine.evaluators import lc0_planes as planes
from engine.evaluators.lc0_policy import policy_indices_list

ROW_LEN = planes.ROW_LEN
MATE_CP = 32000
NO_MOVE = 65535
POLICY_SIZE = 1858
LEGAL_BYTES = (POLICY_SIZE + 7) // 8


def shard_name(index: int) -> str:
    return f"shard-{index:05d}.npz"


def save_shard(path: Path, **arrays: np.ndarray) -> None:
    """Write ``arrays`` to ``path`` atomically (a complete file or none)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(tmp, **arrays)
    os.replace(tmp, path)


def save_positions(path: Path, rows, fullmove, game, ply, result, branch, **extra: np.ndarray) -> None:
    """Write a positions shard (the format above) from sequences of its columns; ``extra``: further arrays."""
    n = len(rows)
    save_shard(path, rows=np.array(rows, dtype=np.uint64).reshape(n, ROW_LEN),
               fullmove=np.array(fullmove, dtype=np.uint16), game=np.array(game, dtype=np.uint32),
               ply=np.array(ply, dtype=np.uint16), result=np.array(result, dtype=np.int8),
               branch=np.array(branch, dtype=np.uint8), **extra)


def save_games(path: Path, games: Sequence[Sequence[tuple]]) -> int:
    """Write a positions shard from its games' kept positions, each game's a list of (row, ply, fullmove, result for
    the side to move, branch), game by game: the first copy of each position only. Returns the positions written."""
    columns: list[tuple] = []
    seen: set[tuple] = set()
    for number, kept in enumerate(games):
        for row, ply, fullmove, result, branch in kept:
            if row not in seen:
                seen.add(row)
                columns.append((row, fullmove, number, ply, result, branch))
    save_positions(path, *(zip(*columns) if columns else ([],) * 6))
    return len(columns)


def load_shard(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


def unlabelled(positions: str, out: str) -> tuple[Path, dict[str, np.ndarray]] | None:
    """The labels file for the positions shard ``positions`` in folder ``out`` and the shard's arrays, or None
    when that file is already written (a rerun labels only the shards it lacks)."""
    path = Path(out) / Path(positions).name
    return None if path.exists() else (path, load_shard(Path(positions)))


def shards(folder: Path) -> list[Path]:
    return sorted(p for p in Path(folder).glob("shard-*.npz") if not p.name.endswith(".tmp.npz"))


def board_from_row(row: np.ndarray, fullmove: int = 1) -> chess.Board:
    """The current position of an encoder row, as a standard-chess board (no move stack)."""
    r = [int(x) for x in row]
    ours, theirs, pawns, knights, bishops, rooks, queens, kings = r[:8]
    aux = r[planes._AUX:planes._AUX + 8]
    turn = not aux[4]
    board = chess.Board(None)
    white, black = (ours, theirs) if turn else (theirs, ours)
    for piece_type, bb in enumerate((pawns, knights, bishops, rooks, queens, kings), start=1):
        for colour, occ in ((chess.WHITE, white), (chess.BLACK, black)):
            for sq in chess.scan_forward(bb & occ):
                board.set_piece_at(sq, chess.Piece(piece_type, colour))
    board.turn = turn
    wq, wk, bq, bk = (aux[0], aux[1], aux[2], aux[3]) if turn else (aux[2], aux[3], aux[0], aux[1])
    board.castling_rights = ((chess.BB_A1 if wq else 0) | (chess.BB_H1 if wk else 0)
                             | (chess.BB_A8 if bq else 0) | (chess.BB_H8 if bk else 0))
    ep = r[planes._EP] & 127
    board.ep_square = None if ep >= 64 else ep
    board.halfmove_clock = r[planes._RULE50]
    board.fullmove_number = fullmove
    return board


def legal_mask(board: chess.Board) -> np.ndarray:
    """The legal moves of ``board`` as a packed bit mask over the policy entries."""
    mask = np.zeros(POLICY_SIZE, dtype=np.uint8)
    mask[policy_indices_list(board, list(board.legal_moves))] = 1
    return np.packbits(mask)
