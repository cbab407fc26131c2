"""Property-based fuzz test of the UCI loop, driven as a GUI or a broken client would drive it.

Hypothesis generates command sequences: valid commands (every ``go`` limit, ``setoption`` with the
real option names and good, out-of-range and garbage values, ``position`` with legal, illegal and
malformed moves, broken FENs), mutated versions of them (characters dropped, duplicated, swapped,
tokens shuffled, case changed, control characters), unknown commands, empty and very long lines,
and raw bytes that are not UTF-8. One engine process lives for a whole test function.

After every sequence it sends ``stop`` and ``isready`` and checks that the engine is alive, that
``readyok`` comes within ``READY_TIMEOUT``, that every line the engine dispatched to ``cmd_go`` got
exactly one ``bestmove``, that each ``bestmove`` (and its ``ponder`` move) is legal in the position
the engine had at that ``go`` (asked with ``d`` right before it), and that nothing raised.

How the engine splits and dispatches input is mirrored, not re-implemented: on POSIX ``sys.stdin``
splits lines at ``\\n`` only (a ``\\r`` stays in the line; ``strip()`` removes it at either end),
then ``UciEngine.handle`` strips the line, takes the text before the first space and dispatches it
when it is an identifier, case-insensitively. The engine runs in Python's UTF-8 mode, so bytes
that are not UTF-8 reach it as surrogate escapes (see the strict-locale test at the end).
"""

from __future__ import annotations

import collections
import os
import queue
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence, Union

import chess
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ARBOR, ROOT, RawUci
from engine.params import OPTIONS

READY_TIMEOUT = 10.0          # seconds from the final isready to its readyok; generous for a loaded CI box
SETTINGS = dict(deadline=None, derandomize=True, database=None, print_blob=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much, HealthCheck.large_base_example])
# Lines each test must have sent: 12,400 in all; about 15,000 are sent with these settings (the exact
# count depends on engine.params.OPTIONS, which the strategies draw from, and on the tests that ran before: 80
# sequences sent from 1,489 to 1,838 lines, so the 1,500-line tests draw 100).
MIN_LINES = {"mixed": 9000, "binary": 1500, "busy": 1500, "quit": 400}
INNER_CR = os.name != "nt"    # on Windows sys.stdin translates a bare \r into a line end

# ``info string`` texts that mean an exception inside the engine.
BUG_MARKERS = ("info string error in ", "info string search failed")

Line = Union[str, bytes]


# --------------------------------------------------------------------------- the engine


class FuzzUci(RawUci):
    """RawUci over binary pipes: sends raw bytes (not UTF-8 included), reads output as bytes split
    at ``\\n`` only and decoded leniently (the engine echoes undecodable input back)."""

    def __init__(self, env: Optional[dict] = None) -> None:
        full_env = dict(os.environ)
        full_env.pop("PYTHONIOENCODING", None)
        full_env["PYTHONUTF8"] = "1"  # stdin/stdout: UTF-8 with surrogateescape, whatever the locale
        full_env.update(env or {})
        self.proc = subprocess.Popen(ARBOR, cwd=str(ROOT), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=full_env)
        self.lines: list[str] = []
        self.stderr: list[str] = []
        self._queue: "queue.Queue[str | None]" = queue.Queue()
        self.sent = 0
        self.recent: collections.deque = collections.deque(maxlen=40)
        threading.Thread(target=self._pump, daemon=True, name="fuzz-uci-reader").start()
        threading.Thread(target=self._pump_stderr, daemon=True, name="fuzz-uci-stderr").start()

    def _pump(self) -> None:
        for raw in self.proc.stdout:
            self._queue.put(raw.rstrip(b"\n").decode("utf-8", "replace"))
        self._queue.put(None)

    def _pump_stderr(self) -> None:
        for raw in self.proc.stderr:
            self.stderr.append(raw.decode("utf-8", "replace"))

    def send(self, line: Line) -> None:
        data = line.encode("utf-8") if isinstance(line, str) else line
        assert b"\n" not in data, data
        self.recent.append(data)
        self.sent += 1
        try:
            self.proc.stdin.write(data + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise AssertionError(f"engine gone while sending: {e}\n{self.context()}") from None

    def context(self) -> str:
        sent = "\n".join(f"  {d[:200]!r}{' ...' if len(d) > 200 else ''}" for d in self.recent)
        out = "\n".join(f"  {line[:200]}" for line in self.lines[-30:])
        return (f"exit code {self.proc.poll()}\nlast lines sent:\n{sent}\nlast lines received:\n{out}\n"
                f"stderr:\n{''.join(self.stderr)[-3000:]}")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class EngineHolder:
    """One engine per test function; replaced only after a failure (so shrinking starts clean)."""

    def __init__(self, env: Optional[dict] = None) -> None:
        self.env = env
        self.engine: Optional[FuzzUci] = None
        self.sent_before = 0
        self.sequences = 0
        self.bestmoves = 0
        self.restarts = -1

    def get(self) -> FuzzUci:
        if self.engine is None:
            self.engine = FuzzUci(self.env)
            self.restarts += 1
        return self.engine

    def discard(self) -> None:
        if self.engine is not None:
            self.sent_before += self.engine.sent
            self.engine.kill()
            self.engine = None

    @property
    def sent(self) -> int:
        return self.sent_before + (self.engine.sent if self.engine else 0)

    def close(self) -> None:
        if self.engine is not None:
            self.sent_before += self.engine.sent
            self.engine.close()
            self.engine = None


# --------------------------------------------------------------------------- what the engine does with a line


def dispatched(data: bytes) -> Optional[str]:
    """The command ``UciEngine.handle`` dispatches this input line to (``cmd_<name>``): None for an
    empty line, '?' for an unknown command. Mirrors handle(): strip, tabs as spaces, partition on the first
    space, identifier check, lower()."""
    text = data.decode("utf-8", "surrogateescape").strip()
    if not text:
        return None
    cmd = text.replace("\t", " ").partition(" ")[0]
    if not cmd.isidentifier():
        return "?"
    return cmd.lower()


def setoption_name_value(data: bytes) -> tuple[str, str]:
    """Option name (lowercase) and value as ``cmd_setoption`` and ``Params.set`` read them."""
    text = data.decode("utf-8", "surrogateescape").strip()
    tokens = text.replace("\t", " ").partition(" ")[2].strip().split()
    if not tokens or tokens[0] != "name":
        return "", ""
    if "value" in tokens:
        i = tokens.index("value")
        return " ".join(tokens[1:i]).strip().lower(), " ".join(tokens[i + 1:]).strip()
    return " ".join(tokens[1:]).strip().lower(), ""


@dataclass
class Paths:
    """Files the fuzzer may name: log files only in a temporary folder, garbage networks."""

    logfiles: tuple[str, ...]
    weights: tuple[str, ...]


def is_safe(data: bytes, paths: Paths, allow_quit: bool = False) -> bool:
    """No quit (outside its own test), no bench (slow), no log file outside the temporary folder,
    no network file that exists unless it is one of the garbage ones made for this test."""
    cmd = dispatched(data)
    if cmd == "bench" or (cmd == "quit" and not allow_quit):
        return False
    if cmd != "setoption":
        return True
    name, value = setoption_name_value(data)
    if name == "logfile":
        return value in paths.logfiles or value in ("", "<empty>")
    if name == "weightsfile":
        if value in paths.weights or value in ("", "<empty>", "<autodiscover>"):
            return True
        try:
            return not (os.path.exists(value) or os.path.exists(ROOT / value))
        except (ValueError, OSError):
            return False
    return True


# --------------------------------------------------------------------------- strategies

FENS = [
    chess.STARTING_FEN,
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",   # castling both ways
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",          # en passant
    "8/P6k/8/8/8/8/6Kp/8 w - - 0 1",                                          # promotions
    "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1",                                         # stalemate
    "rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3",          # checkmated
    "6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1",                                  # mate in one
    "8/8/8/4k3/8/8/8/4K3 w - - 0 1",                                          # bare kings
    "4k3/8/8/8/8/8/4P3/4K3 w - - 150 200",                                    # past the fifty-move rule
    "b3r2k/8/5n2/8/4K3/8/8/8 w - - 0 1",                                      # three checkers (accepted)
    "k7/8/1Q6/8/8/8/8/7K b - - 0 1",                                          # one legal move... or none
    "r2qkb1r/pp2nppp/3p4/2pNN1B1/2BnP3/3P4/PPP2PPP/R2bK2R w KQkq - 1 10",     # mate in two
]
BROKEN_FENS = [
    "", "startpos", "8/8/8/8/8/8/8/8 w - - 0 1", "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1",
    "rnbqkbnr/pppppppp/9/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP w KQkq - 0 1",
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR/8 w KQkq - 0 1", "Pnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w - - 0 1",
    "4k3/8/8/8/8/8/8/4K3 w KQkq - 0 1", "4k3/8/8/8/8/8/8/4K3 w - e3 0 1", "4k3/8/8/8/8/8/8/4K3 w - - -5 1",
    f"4k3/8/8/8/8/8/8/4K3 w - - 0 {10**30}", f"4k3/8/8/8/8/8/8/4K3 w - - {10**30} 1",  # counters beyond the packed form
    "4k3/8/8/8/8/8/8/4K3 w - - 65535 1", "4k3/8/8/8/8/8/8/4K3 b - - 0 4294967295", "4K3/8/8/8/8/8/8/4k3 b - - 0 1 extra",
    "4k3/4Q3/8/8/8/8/8/4K3 w - - 0 1",  # side not to move in check
    "kK6/8/8/8/8/8/8/8 w - - 0 1", "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w HAha - 0 1",
    "xyz", "/////// w", "8/8/8/8/8/8/8/8", "  ", "\u265a/8/8/8/8/8/8/8 w - - 0 1",
]
MALFORMED_MOVES = ["0000", "e2e4e", "e9e4", "i2i4", "e2", "E2E4", "e2-e4", "Nf3", "O-O", "e1g1", "e1h1", "a7a8",
                   "a7a8q", "a7a8Q", "e7e8k", "@@@@", "null", "1234", "e2e2", "e1e1q", "h7h8n", "a2a1r", "--"]
HUGE = ["0", "-1", "-100000", str(10**30), str(-10**30), str(2**63), str(2**64 + 1), "1" + "0" * 400,
        "9" * 5000, "", "abc", "1.5", "1e3", "0x10", "+7", "1_000", "\u0663", "\u22125", "NaN", "inf", "--1"]
GO_NORMAL = {
    "nodes": st.integers(1, 300), "depth": st.integers(1, 4), "mate": st.integers(1, 3),
    "movetime": st.integers(1, 80), "wtime": st.integers(0, 3000), "btime": st.integers(0, 3000),
    "winc": st.integers(0, 100), "binc": st.integers(0, 100), "movestogo": st.integers(1, 40),
}
SEPARATORS = [" ", "  ", "\t", "\x00", "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\xa0", "\u2028", "\u3000", "\ufeff"]
WORDS = ["uci", "isready", "go", "stop", "position", "setoption", "name", "value", "moves", "fen", "startpos",
         "ponderhit", "ucinewgame", "debug", "d", "infinite", "ponder", "searchmoves", "register", "quit", "bench"]

squares = st.sampled_from(chess.SQUARE_NAMES)
uci_like = st.builds(lambda a, b, p: a + b + p, squares, squares, st.sampled_from(["", "", "", "q", "n", "k"]))
some_move = st.one_of(uci_like, st.sampled_from(MALFORMED_MOVES),
                      st.sampled_from(sorted(m.uci() for m in chess.Board().legal_moves)))
text_chars = st.characters(blacklist_characters="\n\r", blacklist_categories=("Cs",))


def number(name: str):
    return st.one_of(GO_NORMAL[name].map(str), GO_NORMAL[name].map(str), st.sampled_from(HUGE))


@st.composite
def go_line(draw) -> str:
    tokens = ["go"]
    for key in draw(st.lists(st.sampled_from(list(GO_NORMAL) + ["infinite", "ponder", "searchmoves"]), max_size=5)):
        tokens.append(key)
        if key in GO_NORMAL and draw(st.integers(0, 9)):  # sometimes the number is missing
            tokens.append(draw(number(key)))
        elif key == "searchmoves":
            tokens += draw(st.lists(some_move, max_size=4))
    return " ".join(tokens)


@st.composite
def position_line(draw) -> str:
    if draw(st.integers(0, 5)) == 0:
        fen = draw(st.sampled_from(BROKEN_FENS))
        head, board = f"position fen {fen}", None
    elif draw(st.booleans()):
        head, board = "position startpos", chess.Board()
    else:
        fen = draw(st.sampled_from(FENS))
        head, board = f"position fen {fen}", chess.Board(fen)
    moves = []
    if board is not None:
        for pick in draw(st.lists(st.integers(0, 10_000), max_size=12)):
            legal = sorted(board.legal_moves, key=chess.Move.uci)
            if not legal:
                break
            move = legal[pick % len(legal)]
            board.push(move)
            moves.append(move.uci())
    if draw(st.integers(0, 3)) == 0:  # an illegal or malformed move somewhere
        moves.insert(draw(st.integers(0, len(moves))), draw(some_move))
    if not moves and draw(st.booleans()):
        return head
    return head + " moves " + " ".join(moves)


@st.composite
def setoption_line(draw, paths: Paths) -> str:
    option = draw(st.sampled_from(OPTIONS))
    name = draw(st.sampled_from([option.name, option.name, option.name.lower(), option.name.upper(),
                                 option.name + "x", "Unknown Option"]))
    if option.kind in ("spin", "float"):
        lo, hi = option.min, option.max
        good = (st.integers(int(lo), int(hi)).map(str) if option.kind == "spin"
                else st.floats(lo, hi, allow_nan=False).map(repr))
        bad = st.sampled_from([str(lo - 1), str(hi + 1), repr(hi * 10), "nan", "inf", "-inf", "1e400", "1,5"] + HUGE)
        value = draw(st.one_of(good, good, bad))
    elif option.kind == "check":
        value = draw(st.sampled_from(["true", "false", "TRUE", "False", "yes", "1", ""]))
    elif option.kind == "combo":
        value = draw(st.sampled_from(list(option.choices) + [c.upper() for c in option.choices] + ["", "nnue", "auto x"]))
    elif option.name == "LogFile":
        value = draw(st.sampled_from(paths.logfiles + ("<empty>", "")))
    elif option.name == "WeightsFile":
        value = draw(st.one_of(st.sampled_from(paths.weights + ("<empty>", "<autodiscover>", "")),
                               st.text(text_chars, max_size=30)))
    else:
        value = draw(st.text(text_chars, max_size=20))
    form = draw(st.integers(0, 9))
    if form == 0:
        return f"setoption name {name}"
    if form == 1:
        return f"setoption name {name} value"
    if form == 2:
        return f"setoption {name} {value}"
    return f"setoption name {name} value {value}"


def valid_line(paths: Paths):
    return st.one_of(
        go_line(), go_line(), go_line(), position_line(), position_line(), setoption_line(paths),
        st.sampled_from(["uci", "isready", "ucinewgame", "stop", "stop", "ponderhit", "ponderhit", "d",
                         "debug on", "debug off", "debug maybe", "go infinite", "go ponder", "go"]),
    )


@st.composite
def mutated(draw, base) -> str:
    line = draw(base)
    for op in draw(st.lists(st.sampled_from(["drop", "dup", "swap", "shuffle", "case", "insert", "truncate",
                                             "separator", "pad"]), min_size=1, max_size=3)):
        n = len(line)
        i = draw(st.integers(0, max(n - 1, 0)))
        if op == "drop" and n:
            line = line[:i] + line[i + 1:]
        elif op == "dup" and n:
            line = line[:i] + line[i] + line[i:]
        elif op == "swap" and n > 1:
            i = min(i, n - 2)
            line = line[:i] + line[i + 1] + line[i] + line[i + 2:]
        elif op == "shuffle":
            line = " ".join(draw(st.permutations(line.split(" "))))
        elif op == "case":
            line = draw(st.sampled_from([line.upper(), line.swapcase(), line.title()]))
        elif op == "insert":
            line = line[:i] + draw(text_chars) + line[i:]
        elif op == "truncate":
            line = line[:i]
        elif op == "separator":
            line = line.replace(" ", draw(st.sampled_from(SEPARATORS)), draw(st.integers(1, 3)))
        elif op == "pad":
            line = draw(st.sampled_from(SEPARATORS)) + line + draw(st.sampled_from(SEPARATORS))
    return line


@st.composite
def long_line(draw) -> str:
    chunk = draw(st.one_of(st.sampled_from(["nodes 1 ", "searchmoves e2e4 ", "x", "moves ", "e2e4 ", " ", "\x00"]),
                           st.text(text_chars, min_size=1, max_size=8)))
    head = draw(st.sampled_from(["", "go ", "d ", "position startpos ", "setoption name MultiPV value ",
                                 "stop ", "isready ", "ponderhit "]))
    return head + chunk * draw(st.integers(1_000, 50_000 // len(chunk)))


@st.composite
def long_game(draw) -> str:
    """A legal game of up to 300 plies, as a GUI sends late in a long game."""
    board = chess.Board()
    rng = draw(st.randoms(use_true_random=False))
    for _ in range(draw(st.integers(50, 300))):
        legal = list(board.legal_moves)
        if not legal:
            break
        board.push(rng.choice(legal))
    return "position startpos moves " + " ".join(m.uci() for m in board.move_stack)


garbage_line = st.one_of(
    st.text(text_chars, max_size=40),
    st.lists(st.sampled_from(WORDS + MALFORMED_MOVES + HUGE), max_size=8).map(" ".join),
    st.sampled_from(["", " ", "\t", "\x00", "\x0c", "\ufeffuci", "\ufeffisready", "GO", "Go nodes 5", "go\tnodes 5",
                     "go\x00", "\x1cgo nodes 3", "d\x85", "isready\u2028", "register later", "xboard", "protover 2",
                     "\u0433\u043e", "go_", "stop!", "position", "position fen", "position startpos moves",
                     "setoption", "setoption name", "setoption value 3", "setoption name value"]),
)


def binary_line():
    raw = st.binary(max_size=60).map(lambda b: b.replace(b"\n", b"").replace(b"\r", b""))
    return st.one_of(
        raw,
        st.sampled_from([b"\xff", b"\xfe\xff", b"\x80go", b"go \xff", b"go nodes 5\xff", b"\xc3", b"\xe2\x82",
                         b"isready\xff", b"\xffisready", b"d \xff\xfe", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
                         b"position fen \xff/8/8/8/8/8/8/8 w - - 0 1", b"setoption name Cpuct value \xff",
                         b"\xef\xbb\xbfisready", b"\x00" * 100, bytes(range(1, 10)), bytes(range(0x80, 0x100))]),
        st.tuples(st.binary(max_size=8), st.sampled_from([b"go", b"d", b"isready", b"stop", b"uci"]),
                  st.binary(max_size=8)).map(lambda t: b"".join(t).replace(b"\n", b"").replace(b"\r", b"")),
    )


def finish(line: Line, cr: bool, inner_cr: bool) -> bytes:
    """To bytes without \\n (and \\r only where it does not end the line on this platform), maybe CRLF."""
    data = line.encode("utf-8") if isinstance(line, str) else line
    data = data.replace(b"\n", b"")
    if not inner_cr:
        data = data.replace(b"\r", b"")
    return data + (b"\r" if cr else b"")


@st.composite
def step(draw, valid, binary_weight: int = 1) -> Union[bytes, float]:
    kind = draw(st.integers(0, 19 + binary_weight * 4))
    if kind < 9:
        line: Line = draw(valid)
    elif kind < 13:
        line = draw(mutated(valid))
    elif kind < 16:
        line = draw(garbage_line)
    elif kind == 16:
        line = draw(st.one_of(long_line(), long_game()))
    elif kind < 19:
        return draw(st.sampled_from([0.0, 0.002, 0.01, 0.03]))  # a pause: let searches run
    else:
        line = draw(binary_line())
    return finish(line, draw(st.integers(0, 9)) == 0, INNER_CR and draw(st.booleans()))


def sequences(paths: Paths, binary_weight: int = 1, min_size: int = 10, max_size: int = 100):
    safe = lambda s: not isinstance(s, bytes) or is_safe(s, paths)  # noqa: E731
    return st.lists(step(valid_line(paths), binary_weight).filter(safe), min_size=min_size, max_size=max_size)


# --------------------------------------------------------------------------- the check


def check_sequence(holder: EngineHolder, steps: list) -> None:
    """Send the steps (a ``d`` before every line the engine takes as ``go``), then ``stop`` and
    ``isready``, and check the invariants."""
    eng = holder.get()
    try:
        holder.bestmoves += _check(eng, steps)
    except BaseException:
        holder.discard()  # a fresh engine for the next example (hypothesis goes on to shrink)
        raise
    holder.sequences += 1


def _check(eng: FuzzUci, steps: list) -> int:
    assert eng.proc.poll() is None, f"engine not running before the sequence\n{eng.context()}"
    first_output = len(eng.lines)
    n_d = n_ready = 0
    go_fen_index: list[int] = []
    for s in steps:
        if isinstance(s, float):
            time.sleep(s)
            continue
        cmd = dispatched(s)
        if cmd == "go":
            eng.send("d")
            n_d += 1
            go_fen_index.append(n_d - 1)
        elif cmd == "d":
            n_d += 1
        elif cmd == "isready":
            n_ready += 1
        eng.send(s)
    eng.send("stop")
    eng.send("isready")
    n_ready += 1
    deadline = time.monotonic() + READY_TIMEOUT
    got_ready = 0
    while got_ready < n_ready:
        try:
            line = eng.read_line(deadline - time.monotonic())
        except (TimeoutError, EOFError) as e:
            raise AssertionError(f"{type(e).__name__}: {got_ready} of {n_ready} readyok within "
                                 f"{READY_TIMEOUT}s of the final isready: {e}\n{eng.context()}") from None
        got_ready += line == "readyok"
    out = eng.lines[first_output:]
    assert eng.proc.poll() is None, f"engine exited\n{eng.context()}"
    bugs = [line for line in out if line.startswith(BUG_MARKERS)]
    assert not bugs, f"exception inside the engine: {bugs[:3]}\n{eng.context()}"
    assert "Traceback" not in "".join(eng.stderr), f"traceback on stderr\n{eng.context()}"

    fens = [line[len("Fen: "):] for line in out if line.startswith("Fen: ")]
    bestmoves = [line for line in out if line.startswith("bestmove")]
    assert len(fens) == n_d, f"{n_d} d commands, {len(fens)} Fen lines\n{eng.context()}"
    assert len(bestmoves) == len(go_fen_index), (
        f"{len(go_fen_index)} go commands, {len(bestmoves)} bestmoves: {bestmoves}\n{eng.context()}")
    for fen_index, line in zip(go_fen_index, bestmoves):
        board = chess.Board(fens[fen_index])
        tokens = line.split()
        assert len(tokens) in (2, 4) and (len(tokens) == 2 or tokens[2] == "ponder"), line
        legal = list(board.legal_moves)
        if not legal:
            assert tokens[1] == "0000", f"{line} with no legal move in {board.fen()}\n{eng.context()}"
            continue
        move = chess.Move.from_uci(tokens[1])
        assert move in legal, f"illegal {line} in {board.fen()}\n{eng.context()}"
        if len(tokens) == 4:
            board.push(move)
            reply = chess.Move.from_uci(tokens[3])
            assert reply in board.legal_moves, f"illegal ponder move in {line} after {board.fen()}\n{eng.context()}"
    return len(bestmoves)


@pytest.fixture
def paths(tmp_path: Path) -> Paths:
    (tmp_path / "garbage.onnx").write_bytes(bytes(range(256)) * 64)
    (tmp_path / "empty.onnx").write_bytes(b"")
    (tmp_path / "text.onnx").write_text("not a network\n")
    return Paths(logfiles=(str(tmp_path / "arbor.log"), str(tmp_path / "no such dir" / "arbor.log"), str(tmp_path)),
                 weights=(str(tmp_path / "garbage.onnx"), str(tmp_path / "empty.onnx"), str(tmp_path / "text.onnx"),
                          str(tmp_path / "missing.onnx"), str(tmp_path)))


def run_fuzz(paths: Paths, examples: int, binary_weight: int, min_lines: int, label: str,
             first: Sequence[bytes] = ()) -> None:
    """``first``: lines sent before every sequence (the sequence may still change what they set)."""
    holder = EngineHolder()
    try:
        @settings(max_examples=examples, **SETTINGS)
        @given(steps=sequences(paths, binary_weight))
        def fuzz(steps):
            check_sequence(holder, list(first) + steps)

        fuzz()
        eng = holder.get()
        stray = [line for line in eng.drain(0.3) if line.startswith(("bestmove", "readyok"))]
        assert not stray, f"output after the last readyok: {stray}\n{eng.context()}"
    finally:
        holder.close()
    print(f"\n[test_fuzz {label}] {holder.sent} lines sent in {holder.sequences} sequences, "
          f"{holder.bestmoves} bestmoves checked")
    assert holder.sent >= min_lines, holder.sent


# --------------------------------------------------------------------------- tests


@pytest.mark.slow
def test_fuzz_uci_sequences(paths):
    run_fuzz(paths, examples=500, binary_weight=1, min_lines=MIN_LINES["mixed"], label="mixed")


def test_fuzz_binary_garbage(paths):
    run_fuzz(paths, examples=80, binary_weight=6, min_lines=MIN_LINES["binary"], label="binary")


def test_fuzz_with_worker_processes(paths):
    """Threads=2: every search hands leaves to a worker process, whose answers may outlive it."""
    run_fuzz(paths, examples=100, binary_weight=1, min_lines=MIN_LINES["busy"], label="workers",
             first=[b"setoption name Threads value 2"])


def test_fuzz_on_a_busy_machine(paths, busy_core):
    run_fuzz(paths, examples=100, binary_weight=1, min_lines=MIN_LINES["busy"], label="busy")


def test_fuzz_quit(paths):
    """``quit`` anywhere: the engine exits at once with status 0, having answered every isready
    and d before it, and reads nothing after it."""
    sent = 0

    @settings(max_examples=20, **SETTINGS)
    @given(before=sequences(paths, min_size=20, max_size=40), quit_line=st.sampled_from(["quit", "QUIT", " quit now", "quit\r"]),
           after=st.lists(st.sampled_from(["isready", "d", "go nodes 5", "uci"]), max_size=5))
    def fuzz(before, quit_line, after):
        nonlocal sent
        eng = FuzzUci()
        try:
            n_ready = n_d = n_go = 0
            for s in before:
                if isinstance(s, float):
                    time.sleep(s)
                    continue
                cmd = dispatched(s)
                n_ready += cmd == "isready"
                n_d += cmd == "d"
                n_go += cmd == "go"
                eng.send(s)
            for line in [quit_line] + after:
                try:
                    eng.send(line)
                except AssertionError:
                    break  # the pipe may close as soon as the engine has quit
            try:
                eng.proc.stdin.close()
            except OSError:
                pass
            assert eng.proc.wait(timeout=5) == 0, eng.context()
            out = []
            while True:
                try:
                    out.append(eng.read_line(5))
                except EOFError:
                    break
            assert out.count("readyok") == n_ready, f"{n_ready} isready before quit\n{eng.context()}"
            assert sum(line.startswith("Fen: ") for line in out) == n_d, eng.context()
            assert "Traceback" not in "".join(eng.stderr), eng.context()
            bestmoves = sum(line.startswith("bestmove") for line in out)
            # A search still running at quit may or may not get its bestmove out (quit waits 1 s).
            assert n_go - 1 <= bestmoves <= n_go, eng.context()
            sent += eng.sent
        finally:
            eng.kill()

    fuzz()
    print(f"\n[test_fuzz quit] {sent} lines sent")
    assert sent >= MIN_LINES["quit"], sent


# --------------------------------------------------------------------------- bugs the fuzz found, kept as regressions


def test_go_number_too_large_for_a_float():
    """Found by the fuzz: 'go movetime 1' and 400 zeros overflowed the time manager's floats."""
    eng = FuzzUci()
    try:
        eng.send("go movetime 1" + "0" * 400)
        eng.send("stop")
        lines = eng.read_until("bestmove", timeout=10)
        assert not [line for line in lines if line.startswith(BUG_MARKERS)], lines
    finally:
        eng.close()


@pytest.mark.parametrize("fen", ["4k3/8/8/8/8/8/8/4K3 w - - 0 4294967296", "4k3/8/8/8/8/8/8/4K3 w - - 65536 1",
                                 "4k3/8/8/8/8/8/8/4K3 w - - 65535 1", "4k3/8/8/8/8/8/8/4K3 b - - 0 4294967295"])
def test_fen_move_counters_beyond_the_packed_form(fen):
    """Found by the fuzz: counters too large for the tree's packed position failed in 'position' after the
    board had changed but not the tree, so 'go' answered a move of the old position."""
    eng = FuzzUci()
    try:
        eng.send(f"position fen {fen}")
        eng.send("go nodes 50")
        eng.send("stop")
        lines = eng.read_until("bestmove", timeout=10)
        assert not [line for line in lines if line.startswith(BUG_MARKERS)], lines
        assert chess.Move.from_uci(lines[-1].split()[1]) in chess.Board(fen).legal_moves, lines[-1]
    finally:
        eng.close()


def test_non_utf8_byte_with_a_strict_utf8_stdin():
    """Found by the fuzz: one byte that is not UTF-8 ended the input loop (and the engine) silently."""
    eng = FuzzUci(env={"PYTHONUTF8": "0", "PYTHONIOENCODING": "utf-8:strict"})
    try:
        eng.send("isready")
        eng.send(b"\xff")
        eng.send("isready")
        lines = eng.read_until("readyok", timeout=10)
        lines += eng.read_until("readyok", timeout=10)
        assert eng.proc.poll() is None
    finally:
        eng.kill()
