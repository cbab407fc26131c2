"""The compiled search against the same source interpreted (ARBOR_CORE=interpreted): node for node the same search.

The tree, its board and the network's input are compiled at install and run interpreted where nothing could compile
them; both must play the same game. Here both engines search the same positions (openings with their move history,
Chess960 starts, puzzles) to the same number of nodes with the shipped network, and must give the same best move,
node count and principal variation, line for line.
"""

from __future__ import annotations

import os
import subprocess

import chess
import chess.pgn
import pytest

from conftest import ARBOR, ROOT
from engine import compiled
from engine.uci.loading import discover_network

NODES = 120
DATA = ROOT / "tests" / "data"


def positions() -> list[tuple[str, bool]]:
    """(UCI position command, Chess960) for 100 opening positions with their moves, 10 Chess960 starts with a few
    moves, and the puzzles."""
    out = []
    with open(DATA / "openings.pgn") as f:
        while (game := chess.pgn.read_game(f)) is not None:
            moves = [m.uci() for m in game.mainline_moves()]
            for cut in (len(moves) // 2, len(moves)):
                out.append(("position startpos moves " + " ".join(moves[:cut]), False))
    for line in (DATA / "chess960.epd").read_text().splitlines():
        board = chess.Board(" ".join(line.split()[:4]) + " 0 1", chess960=True)
        moves = []
        for _ in range(6):
            move = sorted(board.legal_moves, key=lambda m: m.uci())[len(moves) * 7 % board.legal_moves.count()]
            moves.append(move.uci())
            board.push(move)
        out.append((f"position fen {' '.join(line.split()[:4])} 0 1 moves " + " ".join(moves), True))
    for line in (DATA / "puzzles.epd").read_text().splitlines():
        out.append((f"position fen {' '.join(line.split()[:4])} 0 1", False))
    return out


def searches(env: dict, commands: list[tuple[str, bool]]) -> list[tuple[str, str, str]]:
    """(best move, nodes, pv) of the last info line, for each position, from one engine process."""
    proc = subprocess.Popen(ARBOR, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=str(ROOT), env=env,
                            bufsize=1)

    def send(line: str) -> None:
        proc.stdin.write(line + "\n")
        proc.stdin.flush()

    def read_until(prefix: str) -> list[str]:
        lines = []
        while True:
            line = proc.stdout.readline()
            assert line, f"the engine ended: {lines[-3:]}"
            lines.append(line.strip())
            if line.startswith(prefix):
                return lines
    try:
        send("uci")
        send("setoption name TacticalProbeShare value 0")
        chess960 = False
        out = []
        for position, is960 in commands:
            if is960 != chess960:
                send(f"setoption name UCI_Chess960 value {'true' if is960 else 'false'}")
                chess960 = is960
            send(position)
            send(f"go nodes {NODES}")
            lines = read_until("bestmove")
            words = next(line for line in reversed(lines) if line.startswith("info depth")).split()
            out.append((lines[-1].split()[1], words[words.index("nodes") + 1], " ".join(words[words.index("pv") + 1:])))
        send("quit")
        return out
    finally:
        proc.wait(timeout=30)


@pytest.mark.slow
@pytest.mark.skipif(not compiled.CORE.compiled, reason="the core is not compiled here: nothing to compare")
@pytest.mark.skipif(discover_network() is None, reason="no network shipped")
def test_the_compiled_and_interpreted_search_are_the_same_search():
    commands = positions()
    assert len(commands) >= 100
    fast = searches(dict(os.environ), commands)
    slow = searches(dict(os.environ, **{compiled.ENVIRONMENT: "interpreted"}), commands)
    assert len(fast) == len(slow) == len(commands)
    differ = [(cmd, a, b) for cmd, a, b in zip(commands, fast, slow) if a != b]
    assert not differ, differ[:3]
    assert sum(int(nodes) == NODES for _, nodes, _ in fast) >= 100   # (a proven mate ends a search early)
