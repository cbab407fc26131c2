"""Step 1: varied positions from Stockfish self-play.

Each game starts with a few uniformly random moves (``random_plies``: fewer keep the positions balanced),
then Stockfish plays at a small node budget and MultiPV, each move drawn from a softmax over the candidates'
scores (hotter in the opening), so that games rarely repeat. Decided games are adjudicated. A sample of each
game's positions is kept, with its history (the encoder row carries the 7 positions before it) and the
game's result. With ``random_children`` > 0, that share of the kept positions also gives a branch: the
position after a uniformly random legal move, off the game's line. Self-play by a strong engine never
reaches the positions a search explores after a blunder (a piece left hanging, a mate in one allowed), so
without branches the net has never seen them. A branch's result is its parent game's, from the branch's side
to move: a noisy proxy, flagged by ``branch``. Duplicates within a shard are dropped (``train`` drops
duplicates across shards). One shard = a fixed number of games with its own seed and its own Stockfish
process, so a shard's content depends only on (seed, shard number).
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Optional

import chess

from engine.evaluators import lc0_planes as planes

from .data import save_games, shard_name
from .stockfish import UciPipe, centipawns

MAX_PLIES = 300
ADJUDICATE_CP = 1000      # both sides' scores beyond this for ADJUDICATE_PLIES plies: the game is decided
ADJUDICATE_PLIES = 6
OPENING_PLIES = 30        # hotter move choice until here
RANDOM_PLIES = (2, 8)     # default range of uniformly random moves that open each game


def choose(rng: random.Random, candidates: list[tuple[chess.Move, int]], temperature_cp: float) -> chess.Move:
    """A move drawn from softmax(score / temperature) over Stockfish's candidates."""
    best = max(s for _, s in candidates)
    weights = [math.exp(max(-50.0, (s - best) / temperature_cp)) for _, s in candidates]
    return rng.choices([m for m, _ in candidates], weights)[0]


def play_game(engine: UciPipe, rng: random.Random, nodes: int, keep: float,
              random_plies: tuple[int, int] = RANDOM_PLIES,
              random_children: float = 0.0, branch_rng: Optional[random.Random] = None) -> tuple[list[tuple], str]:
    """One self-play game: ([(row, ply, fullmove, result for the side to move, branch)] of the kept positions,
    the result "1-0" / "0-1" / "1/2-1/2", or "*" when the random opening ended the game). Branches draw
    from ``branch_rng`` (default: a fixed seed), so the game itself does not depend on them."""
    branch_rng = branch_rng or random.Random(0)
    board = chess.Board()
    history: list[chess.Board] = []
    kept: list[tuple[tuple, int, bool, int, bool]] = []   # (row, ply, turn, fullmove, branch)
    for _ in range(rng.randint(*random_plies)):
        moves = list(board.legal_moves)
        history.append(board.copy(stack=False))
        board.push(rng.choice(moves))
        if board.is_game_over():
            return [], "*"
    result = "1/2-1/2"
    decided = 0
    go = f"nodes {nodes}"
    while True:
        outcome = board.outcome(claim_draw=True)
        if outcome is not None:
            result = outcome.result()
            break
        if board.ply() >= MAX_PLIES:
            break
        if rng.random() < keep:
            kept.append((planes.gather(board, history), board.ply(), board.turn, board.fullmove_number, False))
            if random_children and branch_rng.random() < random_children:
                child = board.copy(stack=False)
                child.push(branch_rng.choice(list(board.legal_moves)))
                if not child.is_game_over():
                    kept.append((planes.gather(child, history + [board.copy(stack=False)]), child.ply(),
                                 child.turn, child.fullmove_number, True))
        candidates = [(move, centipawns(score, board.turn)) for move, score in engine.analyse(board, go)
                      if move is not None]
        best = max(s for _, s in candidates)
        decided = decided + 1 if abs(best) >= ADJUDICATE_CP else 0
        if decided >= ADJUDICATE_PLIES:
            winner = board.turn if best > 0 else not board.turn
            result = "1-0" if winner == chess.WHITE else "0-1"
            break
        temperature = 60.0 if board.ply() < OPENING_PLIES else 20.0
        move = choose(rng, candidates, temperature)
        history.append(board.copy(stack=False))
        board.push(move)
    white = {"1-0": 1, "0-1": -1}.get(result, 0)
    rows = [(row, ply, fullmove, white if turn == chess.WHITE else -white, branch)
            for row, ply, turn, fullmove, branch in kept]
    return rows, result


def make_shard(out: str, shard: int, seed: int, games: int, nodes: int, multipv: int, keep: float,
               stockfish: Optional[str], random_plies: tuple[int, int] = RANDOM_PLIES,
               random_children: float = 0.0) -> dict:
    """Play ``games`` games into ``out/shard-NNNNN.npz``; returns counts."""
    path = Path(out) / shard_name(shard)
    if path.exists():
        return {"shard": shard, "skipped": True}
    rng = random.Random(f"arbor-positions-{seed}-{shard}")
    branch_rng = random.Random(f"arbor-branches-{seed}-{shard}")
    engine = UciPipe(stockfish, multipv=multipv)
    played: list[list[tuple]] = []
    outcomes = {"1-0": 0, "0-1": 0, "1/2-1/2": 0, "*": 0}
    try:
        for _ in range(games):
            kept, result = play_game(engine, rng, nodes, keep, random_plies, random_children, branch_rng)
            outcomes[result] += 1
            played.append(kept)
    finally:
        engine.quit()
    return {"shard": shard, "positions": save_games(path, played), **outcomes}
