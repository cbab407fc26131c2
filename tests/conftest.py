"""Shared fixtures: Arbor as a UCI subprocess, driven by python-chess's chess.engine."""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import chess
import chess.engine
import pytest

from engine.search.tree import Batch, Tree

ROOT = Path(__file__).resolve().parent.parent
ARBOR = [sys.executable, "-m", "engine"]


@pytest.fixture
def engine():
    eng = chess.engine.SimpleEngine.popen_uci(ARBOR, cwd=str(ROOT), timeout=30)
    yield eng
    try:
        eng.quit()
    except Exception:
        eng.close()


class RawUci:
    """A UCI engine process driven line by line, for what python-chess would reject or hide.

    A reader thread moves the engine's output into a queue, so every read has a deadline that
    really fires: a hung engine fails the test at once instead of blocking in ``readline()``.
    """

    def __init__(self, args=None) -> None:
        self.proc = subprocess.Popen(args or ARBOR, cwd=str(ROOT), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        self.lines: list[str] = []
        self.stderr: list[str] = []  # drained all the time, so a chatty engine never blocks on it
        self._queue: "queue.Queue[str | None]" = queue.Queue()
        threading.Thread(target=self._pump, daemon=True, name="raw-uci-reader").start()
        threading.Thread(target=self.stderr.extend, args=(self.proc.stderr,), daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)  # end of output: the engine exited

    def send(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def read_line(self, timeout: float) -> str:
        """The next output line; TimeoutError after ``timeout`` seconds, EOFError if the engine exited."""
        try:
            line = self._queue.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            raise TimeoutError(f"no output within {timeout:.1f}s; last lines {self.lines[-5:]}") from None
        if line is None:
            self._queue.put(None)
            raise EOFError(f"engine exited (code {self.proc.poll()}); last lines {self.lines[-5:]}; "
                           f"stderr {''.join(self.stderr)[-2000:]}")
        self.lines.append(line)
        return line

    def read_until(self, prefix: str, timeout: float = 30.0) -> list[str]:
        """Lines read up to and including the first that starts with ``prefix``."""
        got = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.read_line(deadline - time.monotonic())
            except TimeoutError:
                raise TimeoutError(f"no '{prefix}' within {timeout}s; got {got[-5:]}") from None
            got.append(line)
            if line.startswith(prefix):
                return got

    def drain(self, quiet: float = 0.1) -> list[str]:
        """Lines that arrive until the engine has been silent for ``quiet`` seconds."""
        got = []
        while True:
            try:
                got.append(self.read_line(quiet))
            except TimeoutError:
                return got

    def ask_ready(self, timeout: float = 30.0) -> list[str]:
        self.send("isready")
        return self.read_until("readyok", timeout)

    def close(self) -> None:
        try:
            self.send("quit")
            self.proc.wait(timeout=5)
        except Exception:
            self.proc.kill()


@pytest.fixture
def busy_core():
    """Another process burning a core for the length of the test, as on a loaded CI machine."""
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    yield burner
    burner.kill()
    burner.wait()


@pytest.fixture
def raw():
    r = RawUci()
    r.send("uci")
    r.read_until("uciok")
    yield r
    r.close()


# ---------------------------------------------------------------------------------------------- trees
def tree_at(final, history):
    """A tree whose root is ``final``, reached from ``history[0]`` through ``history`` (python-chess boards)."""
    states = [b.copy(stack=False) for b in history] + [final.copy(stack=False)]
    tree = Tree()
    played = []
    for before, after in zip(states, states[1:]):
        played.append(next(m for m in before.legal_moves if _after(before, m) == after))
    tree.set_position(states[0].fen(), states, played)
    return tree


def _after(board, move):
    b = board.copy(stack=False)
    b.push(move)
    return b


def tree_evaluation(ev, final, history, params=None):
    """What the tree makes of the network at ``final`` (its root): {python-chess move: prior}, value and draw
    probability as its block holds them, and the input planes it wrote."""
    tree = tree_at(final, history)
    params = params or ev.params
    tree.configure(1.0, 1.0, 0.0, 0.0, False, 1.0, ev.needs_history, 0, None, True, None)
    batch = Batch(1, True)
    assert tree.gather(batch, 1) == 1
    planes = batch.input_planes().copy()
    policy, values, draws = ev.run_planes(batch.input_planes())
    tree.finish(batch, policy, values, draws, ev.columns, float(params.policy_temperature), ev.prior_floor())
    for i in batch.steered():   # a lone king's ending: the network's own priors, not steered
        tree.finish_leaf(batch, i, *tree.stashed(batch, i))
    root = tree.root_node
    priors = {tree.chess_move(m): p for m, p in zip(root.moves, root.priors)}
    return priors, root.v, root.d / root.n, planes
