"""Stockfish as the data pipeline's player and labeller, over raw UCI pipes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Optional

import chess
import chess.engine

from engine.tools.match import position_command

from .data import MATE_CP


class StockfishMissing(RuntimeError):
    pass


def find_stockfish(path: Optional[str] = None) -> str:
    """The Stockfish executable: ``path``, else ``stockfish`` on PATH, else Debian's /usr/games/stockfish."""
    for candidate in (path, shutil.which("stockfish"), "/usr/games/stockfish"):
        if candidate and Path(candidate).is_file():
            return candidate
    raise StockfishMissing("Stockfish not found: apt-get install stockfish, or pass --stockfish PATH")


def centipawns(score: chess.engine.PovScore, turn: chess.Color) -> int:
    """The score for ``turn`` in centipawns, a mate in n plies as +-(MATE_CP - n)."""
    return score.pov(turn).score(mate_score=MATE_CP)


class UciPipe:
    """One single-threaded Stockfish over raw pipes, for the data-generation loops.

    ``analyse`` returns, per MultiPV line, the last score and first PV move that Stockfish reported, exactly
    what python-chess's ``analyse`` keeps for those fields (``test_uci_pipe_matches_python_chess``), but it
    reads only those two fields of each line: python-chess parses and validates every PV move of every
    info line, which was most of the labelling step's time at depth 6.
    """

    def __init__(self, path: Optional[str] = None, hash_mb: int = 16, multipv: int = 1):
        self._proc = subprocess.Popen([find_stockfish(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self._send("uci")
        self._read_until("uciok")
        self._send(f"setoption name Threads value 1\nsetoption name Hash value {hash_mb}\n"
                   f"setoption name MultiPV value {multipv}\nucinewgame\nisready")
        self._read_until("readyok")

    def _send(self, text: str) -> None:
        self._proc.stdin.write(text + "\n")
        self._proc.stdin.flush()

    def _read_until(self, token: str) -> list[str]:
        lines = []
        for line in self._proc.stdout:
            if line.startswith(token):
                return lines
            lines.append(line)
        raise StockfishMissing(f"Stockfish exited before '{token}'")

    def analyse(self, board: chess.Board, go: str) -> list[tuple[Optional[chess.Move], chess.engine.PovScore]]:
        """Search ``board`` (sent with its move stack, as python-chess sends it) with ``go`` (``"depth 6"``,
        ``"nodes 200"``); returns (first PV move, score) per MultiPV line, best first. The move is None for
        a line without a PV (a mated or stalemated root)."""
        self._send(f"{position_command(board)}\ngo {go}")
        lines: dict[int, list] = {}
        for line in self._read_until("bestmove"):
            fields = line.split()
            if not fields or fields[0] != "info" or "score" not in fields:
                continue
            k = int(fields[fields.index("multipv") + 1]) if "multipv" in fields else 1
            entry = lines.setdefault(k, [None, None])
            s = fields.index("score")
            kind, value = fields[s + 1], int(fields[s + 2])
            entry[1] = chess.engine.Cp(value) if kind == "cp" else chess.engine.Mate(value)
            if "pv" in fields:
                entry[0] = chess.Move.from_uci(fields[fields.index("pv") + 1])
        return [(move, chess.engine.PovScore(score, board.turn)) for _, (move, score) in sorted(lines.items())]

    def quit(self) -> None:
        try:
            self._send("quit")
            self._proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self._proc.kill()

