"""The search life cycle: every ``go`` gets exactly one ``bestmove``, whatever the thread timing.

These run with another process burning a core (the ``busy_core`` fixture), the condition under
which a ``go`` sent right after a ``bestmove`` used to be refused and never answered.
"""

from __future__ import annotations

import sys
import time

import chess
import pytest

from conftest import RawUci

BACK_TO_BACK = 2000


def _play_back_to_back(raw: RawUci, commands: list[str], count: int) -> None:
    """Send ``commands`` the moment the previous ``bestmove`` arrives, ``count`` times; each must be
    answered by exactly one legal bestmove."""
    raw.send("position startpos")
    legal = {m.uci() for m in chess.Board().legal_moves}
    for i in range(count):
        for command in commands:
            raw.send(command)
        lines = raw.read_until("bestmove", timeout=10)
        move = lines[-1].split()[1]
        assert move in legal, (i, lines[-1])
        assert not any("searching" in line and "string" in line for line in lines), lines
    assert not [line for line in raw.drain(0.2) if line.startswith("bestmove")], "a bestmove too many"
    raw.ask_ready(timeout=5)


@pytest.mark.slow
def test_back_to_back_go_nodes_on_a_busy_machine(raw, busy_core):
    _play_back_to_back(raw, ["go nodes 1"], BACK_TO_BACK)


@pytest.mark.slow
def test_back_to_back_ponder_and_ponderhit_on_a_busy_machine(raw, busy_core):
    _play_back_to_back(raw, ["go ponder wtime 200 btime 200", "ponderhit"], BACK_TO_BACK // 2)


@pytest.mark.slow
def test_back_to_back_infinite_and_stop_on_a_busy_machine(raw, busy_core):
    _play_back_to_back(raw, ["go infinite", "stop"], BACK_TO_BACK // 2)


def test_go_during_a_search_stops_it_first(raw):
    """Stockfish's rule: the running search is stopped and answered, then the new one runs."""
    raw.send("position startpos")
    raw.send("go infinite")
    time.sleep(0.2)
    raw.send("go nodes 50")
    first = raw.read_until("bestmove", timeout=5)
    second = raw.read_until("bestmove", timeout=10)
    assert any("stopping the running search" in line for line in first + second)
    assert first[-1].startswith("bestmove") and second[-1].startswith("bestmove")
    assert not [line for line in raw.drain(0.3) if line.startswith("bestmove")]


def test_go_during_ponder_answers_both(raw):
    raw.send("position startpos")
    raw.send("go ponder wtime 10000 btime 10000")
    time.sleep(0.1)
    raw.send("go nodes 10")
    raw.read_until("bestmove", timeout=5)
    raw.read_until("bestmove", timeout=10)
    raw.send("ponderhit")  # late: belongs to no search, must change nothing
    raw.send("stop")       # nothing runs: no bestmove
    assert not [line for line in raw.drain(0.3) if line.startswith("bestmove")]
    raw.ask_ready(timeout=5)


def test_stop_and_ponderhit_without_a_search_are_silent(raw):
    raw.send("stop")
    raw.send("ponderhit")
    lines = raw.ask_ready(timeout=5)
    assert not [line for line in lines if line.startswith(("bestmove", "info depth"))], lines


def test_stop_isready_and_quit_are_read_while_the_network_loads(raw):
    """A GUI that sends go without isready first (or right after changing WeightsFile) has its isready and stop
    answered at once, not after the network's load (half a second here, seconds on a busy machine)."""
    raw.send("position startpos moves e2e4")
    raw.send("go infinite")
    start = time.monotonic()
    raw.send("isready")
    lines = raw.read_until("readyok", timeout=5)
    assert time.monotonic() - start < 0.25, lines
    start = time.monotonic()
    raw.send("stop")
    lines += raw.read_until("bestmove", timeout=5)
    assert time.monotonic() - start < 0.25, lines
    board = chess.Board()
    board.push_uci("e2e4")
    assert chess.Move.from_uci(lines[-1].split()[1]) in board.legal_moves
    # the load went on behind: isready waits for it, and the next search runs with the network
    lines += raw.ask_ready(timeout=60)
    raw.send("go nodes 30")
    lines += raw.read_until("bestmove", timeout=30)
    assert any("loaded network" in line for line in lines), lines
    assert any(line.startswith("info depth") for line in lines)
    raw.send("position startpos")
    raw.send("go infinite")
    start = time.monotonic()
    raw.send("quit")
    raw.proc.wait(timeout=5)
    assert time.monotonic() - start < 1.0


def test_options_before_the_first_isready_load_nothing(raw):
    """Changing an option that remakes the evaluator only forgets it: the network is loaded once, at isready."""
    for line in ("setoption name NNCacheSize value 100000", "setoption name MinibatchSize value 8",
                 "setoption name Threads value 1"):
        raw.send(line)
    first = raw.ask_ready(timeout=60)
    raw.send("setoption name NNCacheSize value 200000")
    raw.send("setoption name NNCacheSize value 300000")
    second = raw.ask_ready(timeout=60)
    for lines in (first, second):
        assert len([line for line in lines if "loaded network" in line or "heuristic" in line]) == 1, lines


def test_reader_timeout_really_fires():
    """A silent engine must fail a test after its timeout, not hang it."""
    silent = RawUci([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        start = time.monotonic()
        with pytest.raises(TimeoutError):
            silent.read_until("uciok", timeout=0.5)
        assert time.monotonic() - start < 2.0
    finally:
        silent.proc.kill()


def test_reader_reports_an_exited_engine():
    dead = RawUci([sys.executable, "-c", "print('id name x')"])
    with pytest.raises(EOFError):
        dead.read_until("uciok", timeout=10)
