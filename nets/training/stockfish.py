"""Stockfish as a labeller and a sparring partner, through python-chess's UCI client."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Optional

import chess
import chess.engine

from .data import MATE_CP


class StockfishMissing(RuntimeError):
    pass


def find_stockfish(path: Optional[str] = None) -> str:
    """The Stockfish executable: ``path``, else ``stockfish`` on PATH, else Debian's /usr/games/stockfish."""
    for candidate in (path, shutil.which("stockfish"), "/usr/games/stockfish"):
        if candidate and Path(candidate).is_file():
            return candidate
    raise StockfishMissing("Stockfish not found: apt-get install stockfish, or pass --stockfish PATH")


def open_stockfish(path: Optional[str] = None, hash_mb: int = 16) -> chess.engine.SimpleEngine:
    """One single-threaded Stockfish (deterministic for a fixed sequence of depth- or node-limited searches)."""
    engine = chess.engine.SimpleEngine.popen_uci(find_stockfish(path))
    engine.configure({"Threads": 1, "Hash": hash_mb})
    return engine


def centipawns(score: chess.engine.PovScore, turn: chess.Color) -> int:
    """The score for ``turn`` in centipawns, a mate in n plies as +-(MATE_CP - n)."""
    return score.pov(turn).score(mate_score=MATE_CP)
