"""Positions of real games as shards: a held-out set from the games that decide a match.

Self-play's positions are not the positions a net meets against another engine: in ``arbor-r023``'s games against
Stockfish 2100 the value's cross-entropy against depth-8 labels is 0.63, on self-play's held-out games about 0.35.
Each game of a PGN (plain or gzipped) gives every ``every``-th position from ``first_ply`` on (the book moves before
it are the openings file's, the same in every match), with its history and the game's result for the side to move,
in the shard format of ``positions``: ``label`` labels them, ``compare_fit`` reads them.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Iterator, Sequence

import chess
import chess.pgn

from engine.evaluators import lc0_planes as planes

from .data import save_positions, shard_name

POSITIONS_PER_SHARD = 5000   # the labeller's unit of work, as a round's shards


def _games(pgn: Path) -> Iterator[chess.pgn.Game]:
    opener = gzip.open if pgn.suffix == ".gz" else open
    with opener(pgn, "rt", encoding="utf-8", errors="replace") as f:
        while (game := chess.pgn.read_game(f)) is not None:
            yield game


def make_shards(pgns: Sequence[Path], out: Path, *, every: int = 3, first_ply: int = 12,
                per_shard: int = POSITIONS_PER_SHARD) -> tuple[int, int]:
    """Write the games' positions to ``out/shard-NNNNN.npz``, each position once; returns (games, positions)."""
    kept: list[tuple] = []   # (row, fullmove, game, ply, result for the side to move)
    seen: set[tuple] = set()
    games = 0
    for pgn in pgns:
        for game in _games(pgn):
            board = game.board()
            history: list[chess.Board] = []
            white = {"1-0": 1, "0-1": -1}.get(game.headers.get("Result", "*"), 0)
            for move in game.mainline_moves():
                if board.ply() >= first_ply and (board.ply() - first_ply) % every == 0:
                    row = planes.gather(board, history)
                    if row not in seen:
                        seen.add(row)
                        kept.append((row, board.fullmove_number, games, board.ply(),
                                     white if board.turn == chess.WHITE else -white))
                history.append(board.copy(stack=False))
                board.push(move)
            games += 1
    for shard, start in enumerate(range(0, len(kept), per_shard)):
        rows, fullmove, game_ids, plies, results = zip(*kept[start:start + per_shard])
        save_positions(out / shard_name(shard), rows, fullmove, game_ids, plies, results, [0] * len(rows))
    return games, len(kept)
