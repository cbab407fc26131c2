"""Step 2: Stockfish labels for every stored position.

For each positions shard, Stockfish (one thread, fixed depth, MultiPV K) gives the K best moves with their
scores. The value target is the best score's win/draw/loss under python-chess's ``sf15.1`` model (the model
Stockfish 15.1 itself uses for ``UCI_ShowWDL``); the policy target is built from the K moves at training time.
The legal moves are stored too, so training can mask the illegal policy entries. A labels shard depends only
on its positions shard and the settings (Stockfish is restarted for every shard).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np

from engine.evaluators.lc0_policy import policy_index

from .data import NO_MOVE, board_from_row, legal_mask, save_shard, unlabelled
from .stockfish import UciPipe, centipawns


def label_shard(positions: str, out: str, depth: int, multipv: int, stockfish: Optional[str]) -> dict:
    """Label ``positions`` (a shard file) into ``out/<same name>``; returns counts."""
    todo = unlabelled(positions, out)
    if todo is None:
        return {"shard": Path(positions).name, "skipped": True}
    path, data = todo
    rows, fullmoves = data["rows"], data["fullmove"]
    n = len(rows)
    moves = np.full((n, multipv), NO_MOVE, dtype=np.uint16)
    scores = np.zeros((n, multipv), dtype=np.int32)
    wdl = np.zeros((n, 3), dtype=np.float32)
    legal = np.zeros((n, (1858 + 7) // 8), dtype=np.uint8)
    engine = UciPipe(stockfish, multipv=multipv)
    go = f"depth {depth}"
    try:
        for i in range(n):
            board = board_from_row(rows[i], int(fullmoves[i]))
            lines = engine.analyse(board, go)
            for k, (move, score) in enumerate(lines[:multipv]):
                if move is None:
                    continue
                moves[i, k] = policy_index(board, move)
                scores[i, k] = centipawns(score, board.turn)
            w = lines[0][1].pov(board.turn).wdl(model="sf15.1", ply=board.ply())
            wdl[i] = (w.wins / 1000.0, w.draws / 1000.0, w.losses / 1000.0)
            legal[i] = legal_mask(board)
    finally:
        engine.quit()
    save_shard(path, moves=moves, scores=scores, wdl=wdl, legal=legal, depth=np.array(depth, dtype=np.uint8))
    return {"shard": path.name, "positions": n}
