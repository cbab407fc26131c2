"""Step 5: play a candidate net against the current default net and the heuristic evaluator.

Each opponent is a match of ``arbor match`` (Arbor against Arbor, the candidate through ``WeightsFile``),
written to a PGN; the candidate's W-D-L comes from the PGN's results and the Elo difference with its 95%
interval from ``engine.tools.elo``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Optional

import chess.pgn

from engine.tools.elo import elo_difference, format_elo

CANDIDATE = "candidate"


def tally(pgn: Path, name: str = CANDIDATE) -> tuple[int, int, int]:
    """(wins, draws, losses) of the engine called ``name`` in ``pgn``."""
    wins = draws = losses = 0
    with open(pgn, encoding="utf-8") as f:
        while (game := chess.pgn.read_headers(f)) is not None:
            result = game.get("Result", "*")
            if result == "1/2-1/2":
                draws += 1
            elif result in ("1-0", "0-1"):
                won = (result == "1-0") == (game.get("White") == name)
                wins, losses = wins + won, losses + (not won)
    return wins, draws, losses


def play(candidate: Path, opponent_options: list[str], opponent_name: str, *, games: int, tc: str,
         concurrency: int, openings: Optional[Path], pgn: Path, seed: Optional[int] = None) -> tuple[int, int, int]:
    cmd = [sys.executable, "-m", "engine", "match", "--games", str(games), "--tc", tc,
           "--concurrency", str(concurrency), "--name1", CANDIDATE, "--name2", opponent_name,
           "--option1", f"WeightsFile={candidate.resolve()}", "--pgn", str(pgn)]
    for option in opponent_options:
        cmd += ["--option2", option]
    if openings:
        cmd += ["--openings", str(openings), "--openings-order", "random"]
    if seed is not None:
        cmd += ["--seed", str(seed)]
    subprocess.run(cmd, check=True)
    return tally(pgn)


def report(label: str, wdl: tuple[int, int, int]) -> str:
    elo, margin = elo_difference(*wdl)
    return f"{label}: W-D-L {wdl[0]}-{wdl[1]}-{wdl[2]}, Elo {format_elo(elo, margin)}"


def default_net() -> Optional[Path]:
    from engine.loading import discover_network
    found = discover_network()
    return Path(found) if found else None
