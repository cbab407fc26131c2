"""Step 5: play a candidate net against the current default net and the heuristic evaluator.

Each opponent is a match of ``arbor match`` (Arbor against Arbor, the candidate through ``WeightsFile``),
written to a PGN; the candidate's W-D-L comes from the PGN's results and the Elo difference with its 95%
interval from ``engine.tools.elo``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

import chess.pgn

from engine.tools.elo import elo_difference, format_elo

CANDIDATE = "candidate"
ARBOR = [sys.executable, "-m", "engine"]


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


def pinned_engines(swap: bool, opponent: Optional[list[str]] = None) -> Optional[tuple[list[str], list[str]]]:
    """Arbor's command and the opponent's (``opponent``, another engine's command; by default Arbor's again), each
    under ``taskset`` on a core of its own (the first two this process may use; the other way round with ``swap``),
    so that neither engine's search takes time from the other's; None where there are fewer than two cores or no
    ``taskset``."""
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []   # Linux only, as taskset
    if len(cores) < 2 or shutil.which("taskset") is None:
        return None
    first, second = (cores[1], cores[0]) if swap else (cores[0], cores[1])
    return (["taskset", "-c", str(first), *ARBOR], ["taskset", "-c", str(second), *(opponent or ARBOR)])


def play(candidate: Path, opponent_options: list[str], opponent_name: str, *, games: int, tc: str,
         concurrency: int, openings: Optional[Path], pgn: Path, seed: Optional[int] = None,
         engines: Optional[tuple[list[str], list[str]]] = None) -> tuple[int, int, int]:
    """Play ``games`` of the candidate net against Arbor with ``opponent_options`` into ``pgn``; ``engines``: the two
    engines' commands (candidate first; ``pinned_engines``, or Arbor's and another engine's), else Arbor's own for
    both."""
    cmd = [*ARBOR, "match", "--games", str(games), "--tc", tc,
           "--concurrency", str(concurrency), "--name1", CANDIDATE, "--name2", opponent_name,
           "--option1", f"WeightsFile={candidate.resolve()}", "--pgn", str(pgn)]
    if engines is not None:
        cmd += ["--engine1", shlex.join(engines[0]), "--engine2", shlex.join(engines[1])]
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
    from engine.uci.loading import discover_network
    found = discover_network()
    return Path(found) if found else None
