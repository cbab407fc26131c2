"""Shared fixtures: Arbor as a UCI subprocess, driven by python-chess's chess.engine."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import chess.engine
import pytest

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
    """A UCI engine process driven line by line, for what python-chess would reject or hide."""

    def __init__(self, args=None) -> None:
        self.proc = subprocess.Popen(args or ARBOR, cwd=str(ROOT), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        self.lines: list[str] = []

    def send(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def read_until(self, prefix: str, timeout: float = 30.0) -> list[str]:
        """Lines read up to and including the first that starts with ``prefix``."""
        got = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise EOFError(f"engine exited; stderr: {self.proc.stderr.read()}")
            line = line.rstrip("\n")
            got.append(line)
            self.lines.append(line)
            if line.startswith(prefix):
                return got
        raise TimeoutError(f"no '{prefix}' within {timeout}s; got {got[-5:]}")

    def ask_ready(self) -> list[str]:
        self.send("isready")
        return self.read_until("readyok")

    def close(self) -> None:
        try:
            self.send("quit")
            self.proc.wait(timeout=5)
        except Exception:
            self.proc.kill()


@pytest.fixture
def raw():
    r = RawUci()
    r.send("uci")
    r.read_until("uciok")
    yield r
    r.close()
