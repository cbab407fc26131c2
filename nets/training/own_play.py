"""Step 1, the net's side: positions from a network's own play, its policy sampled move by move.

Stockfish's self-play (``positions``) reaches the positions a strong engine reaches; the search of the net being
trained explores others, after the moves that net likes and Stockfish does not. Here the net plays itself without
search, every game of a shard in one batch: each game opens with a few uniformly random moves, then each move is
drawn from the net's policy over the legal moves (at ``OPENING_TEMPERATURE`` until ``OPENING_PLIES``, then
``TEMPERATURE``). A game the net's own value calls decided for ``ADJUDICATE_PLIES`` plies in a row is adjudicated. A
sample of each game's positions is kept in ``positions``' shard format (``result`` the game's, for the side to move),
for Stockfish to label and ``compare_fit`` to read: whether a net fits its own positions worse than a round's
(docs/training.md, "Round 28": it does not, so they are no round's source).

A shard depends only on (seed, shard number) and the net's file.
"""

from __future__ import annotations

import random
from pathlib import Path

import chess
import numpy as np

from engine.evaluators import lc0_planes as planes
from engine.evaluators.contract import INPUT_NAME, POLICY_NAME, WDL_NAME, wdl_probabilities
from engine.evaluators.lc0_policy import policy_indices_list

from .data import save_games, shard_name

MAX_PLIES = 300
OPENING_PLIES = 20
# Hotter play decides the games within 25 plies (a piece dropped at the policy's tail); at these the median game
# kept is 33 plies long and 8% of its positions are endings.
OPENING_TEMPERATURE = 0.7
TEMPERATURE = 0.3
ADJUDICATE_Q = 0.97          # |win - loss| of the net's own value that counts as decided ...
ADJUDICATE_PLIES = 12        # ... for this many plies in a row
RANDOM_PLIES = (2, 8)


def _draw(rng: random.Random, logits: np.ndarray, temperature: float) -> int:
    """An index into ``logits`` drawn from their softmax at ``temperature``."""
    z = logits.astype(np.float64) / temperature
    p = np.exp(z - z.max())
    return rng.choices(range(len(p)), weights=p.tolist())[0]


def make_shard(out: str, shard: int, seed: int, net: str, games: int, keep: float,
               random_plies: tuple[int, int] = RANDOM_PLIES) -> dict:
    """Play ``games`` games of ``net`` against itself into ``out/shard-NNNNN.npz``; returns counts."""
    from .teacher import net_session
    path = Path(out) / shard_name(shard)
    if path.exists():
        return {"shard": shard, "skipped": True}
    rng = random.Random(f"arbor-own-play-{seed}-{shard}")
    session, names = net_session(Path(net), (POLICY_NAME, WDL_NAME))
    boards, histories = [chess.Board() for _ in range(games)], [[] for _ in range(games)]
    for board, history in zip(boards, histories):
        for _ in range(rng.randint(*random_plies)):
            moves = list(board.legal_moves)
            if not moves:
                break
            history.append(board.copy(stack=False))
            board.push(rng.choice(moves))
    kept: list[list[tuple]] = [[] for _ in range(games)]   # (row, ply, turn, fullmove) a game
    results = ["1/2-1/2"] * games
    decided = [0] * games
    playing = [g for g in range(games) if not boards[g].is_game_over()]
    for g in set(range(games)) - set(playing):
        results[g] = "*"
    while playing:
        rows = [planes.gather(boards[g], histories[g]) for g in playing]
        logits, wdl = session.run(list(names), {INPUT_NAME: planes.rows_to_planes(rows)})
        q = wdl_probabilities(wdl) @ np.array([1.0, 0.0, -1.0])
        still = []
        for i, g in enumerate(playing):
            board = boards[g]
            if rng.random() < keep:
                kept[g].append((rows[i], board.ply(), board.turn, board.fullmove_number))
            decided[g] = decided[g] + 1 if abs(q[i]) >= ADJUDICATE_Q else 0
            if decided[g] >= ADJUDICATE_PLIES:
                winner = board.turn if q[i] > 0 else not board.turn
                results[g] = "1-0" if winner == chess.WHITE else "0-1"
                continue
            moves = list(board.legal_moves)
            temperature = OPENING_TEMPERATURE if board.ply() < OPENING_PLIES else TEMPERATURE
            move = moves[_draw(rng, logits[i][policy_indices_list(board, moves)], temperature)]
            histories[g].append(board.copy(stack=False))
            board.push(move)
            outcome = board.outcome(claim_draw=True)
            if outcome is not None:
                results[g] = outcome.result()
            elif board.ply() < MAX_PLIES:
                still.append(g)
        playing = still
    white = [{"1-0": 1, "0-1": -1}.get(result, 0) for result in results]
    written = save_games(path, [[(row, ply, fullmove, white[g] if turn == chess.WHITE else -white[g], False)
                                 for row, ply, turn, fullmove in kept[g]] for g in range(games)])
    return {"shard": shard, "positions": written, **{r: results.count(r) for r in ("1-0", "0-1", "1/2-1/2", "*")}}
