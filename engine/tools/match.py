"""``arbor match``: engine-versus-engine matches between any two UCI engines.

The tool talks raw UCI to both engines (one process per engine per concurrent game), keeps the
clocks itself and judges every game:

* **Pairing.** Each opening (an EPD/FEN line, or the moves of a PGN game) is played twice with
  the colours reversed: game 2k-1 has engine 1 as White, game 2k engine 2. Openings are used in
  file order and wrap around when there are more games than openings.
* **Clocks.** With ``--tc`` the tool sends ``wtime/btime/winc/binc`` (and ``movestogo``) and times
  every move itself, from writing ``go`` to reading ``bestmove``. A move that arrives after the
  side's clock plus ``--timemargin`` (default 0 ms, as in cutechess-cli) loses on time (a draw
  when the opponent has no mating material). With ``--movetime`` the limit is the move time plus
  the margin. An engine that does not answer by then is sent ``stop`` and, if it still does not
  answer within a second, killed and restarted for the next game. With ``--nodes``/``--depth``
  an engine that takes longer than ``--hang-timeout`` seconds loses (stalled connection).
* **Illegal moves and crashes** lose the game for the culprit, as in cutechess-cli.
* **Rules.** Checkmate, stalemate, threefold repetition, the 50-move rule and insufficient
  material end the game at once. Optional resign/draw adjudication on the engines' own scores,
  with cutechess-cli's semantics (``--resign-movecount/--resign-score``,
  ``--draw-movenumber/--draw-movecount/--draw-score``), and ``--maxmoves``.
* **Output.** One line per finished game and the running score (W-D-L from engine 1's side,
  Elo difference with its 95 % interval, LOS, draw ratio, SPRT LLR), a PGN of every game with
  ``[%clk]``, ``[%emt]`` and ``[%eval]`` comments and a ``Termination`` tag.
* **SPRT.** ``--sprt elo0,elo1`` (alpha = beta = 0.05 by default) stops scheduling new games as
  soon as the test is decided; games already running are finished and counted.
* **Chess960.** An opening whose castling rights exist only in Chess960 (X-FEN or Shredder-FEN), a
  PGN game with ``[Variant "Chess960"]``, or every game with ``--chess960`` is played as Chess960:
  engines that declare ``UCI_Chess960`` get it switched on for that game, castling is written
  king-takes-rook (``e1h1``) and the PGN says ``[Variant "Chess960"]``. ``--chess960`` without
  openings draws a random start position (of the 960) for each pair of games.
"""

from __future__ import annotations

import argparse
import datetime
import os
import queue
import random
import re
import shlex
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

import chess
import chess.engine
import chess.pgn

from ..evaluators.precision import cpu_description
from . import elo as elo_stats

__all__ = [
    "EngineSpec", "TimeControl", "Adjudication", "Opening", "MatchConfig", "GameRecord",
    "MatchResult", "UciEngine", "UciError", "MatchAborted", "parse_tc", "parse_option",
    "load_openings", "needs_chess960", "read_epd", "default_engine_command", "play_game", "run_match", "main",
]

MATE_CP = 30000
KILL_GRACE = 1.0  # seconds an engine gets to answer 'stop' once its time is up, before it is killed


class UciError(RuntimeError):
    """An engine could not be started or does not speak UCI."""


class MatchAborted(RuntimeError):
    """The match cannot go on (an engine fails to start or restart)."""


# ----------------------------------------------------------------------------------------------
# Configuration
# ----------------------------------------------------------------------------------------------

def default_engine_command() -> list[str]:
    """Arbor itself: this executable when frozen by PyInstaller, else ``python -m engine``."""
    if getattr(sys, "frozen", False):
        return [sys.executable]
    return [sys.executable, "-m", "engine"]


def _default_engine_env() -> dict[str, str]:
    """Environment for the default engine: Arbor's package importable from any directory."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])  # the folder that holds the engine package
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


@dataclass
class EngineSpec:
    """How to start one engine: its command line, a display name and UCI options to set."""
    cmd: list[str]
    name: Optional[str] = None
    options: list[tuple[str, str]] = field(default_factory=list)
    env: Optional[dict[str, str]] = None

    @classmethod
    def from_command(cls, command: Optional[str], name: Optional[str] = None,
                     options: Sequence[tuple[str, str]] = ()) -> "EngineSpec":
        """A spec from a shell-like command string; None means Arbor itself."""
        if command is None:
            return cls(default_engine_command(), name, list(options), _default_engine_env())
        cmd = shlex.split(command)
        if not cmd:
            raise ValueError("empty engine command")
        return cls(cmd, name, list(options))


@dataclass(frozen=True)
class TimeControl:
    """Exactly one of: a clock (base seconds, increment, optional moves per period), a fixed
    time per move, a node count or a depth."""
    base: Optional[float] = None
    inc: float = 0.0
    moves: Optional[int] = None
    movetime: Optional[float] = None
    nodes: Optional[int] = None
    depth: Optional[int] = None

    @property
    def has_clock(self) -> bool:
        return self.base is not None

    def pgn_tag(self) -> str:
        if self.base is not None:
            text = f"{self.base:g}" + (f"+{self.inc:g}" if self.inc else "")
            return f"{self.moves}/{text}" if self.moves else text
        return "-"

    def describe(self) -> str:
        if self.base is not None:
            return f"tc {self.pgn_tag()}"
        if self.movetime is not None:
            return f"movetime {self.movetime * 1000:g} ms"
        if self.nodes is not None:
            return f"nodes {self.nodes}"
        return f"depth {self.depth}"


def parse_tc(text: str) -> TimeControl:
    """Parse a cutechess-style time control: ``[moves/]base[+inc]``, base in seconds or ``m:ss``.

    ``10+0.1`` = 10 s plus 0.1 s per move; ``40/60`` = 60 s for every 40 moves; ``1:30+1``.
    """
    m = re.fullmatch(r"\s*(?:(\d+)/)?(?:(\d+):)?(\d+(?:\.\d*)?)(?:\+(\d+(?:\.\d*)?))?\s*", text)
    if not m:
        raise ValueError(f"bad time control '{text}' (expected e.g. 10+0.1, 40/60, 1:30+1)")
    moves = int(m.group(1)) if m.group(1) else None
    base = float(m.group(3)) + (60 * int(m.group(2)) if m.group(2) else 0)
    inc = float(m.group(4)) if m.group(4) else 0.0
    if base <= 0 and inc <= 0:
        raise ValueError(f"time control '{text}' gives no time")
    if moves == 0:
        raise ValueError(f"time control '{text}': moves per period must be positive")
    return TimeControl(base=base, inc=inc, moves=moves)


def parse_option(text: str) -> tuple[str, str]:
    """``Name=Value`` -> (name, value); the name may contain spaces, the value may be empty."""
    if "=" not in text:
        raise ValueError(f"option '{text}' is not Name=Value")
    name, value = text.split("=", 1)
    if not name.strip():
        raise ValueError(f"option '{text}' has no name")
    return name.strip(), value.strip()


@dataclass(frozen=True)
class Adjudication:
    """Optional adjudication on the engines' scores (centipawns, from the mover's side).

    Resign: a side whose score is <= -resign_score for resign_movecount consecutive moves of its
    own loses (with ``resign_twosided`` only if the opponent's score was >= resign_score for as
    many moves). Draw: from move number draw_movenumber on, once both engines' scores have been
    within +-draw_score for draw_movecount consecutive moves each. maxmoves: a draw after that
    many full moves. 0 disables each.
    """
    resign_movecount: int = 0
    resign_score: int = 0
    resign_twosided: bool = False
    draw_movenumber: int = 0
    draw_movecount: int = 0
    draw_score: int = 0
    maxmoves: int = 0


@dataclass
class Opening:
    """A start position with the moves that lead to it (played as book moves in the PGN).

    The game is Chess960 when ``board.chess960`` is set."""
    board: chess.Board
    name: str = ""


def needs_chess960(fen: str) -> bool:
    """True when the castling rights of a FEN or EPD line (its first four fields) exist only in
    Chess960, as in the X-FEN or Shredder-FEN of a 960 start position; False for an unreadable one
    (its real parser reports what is wrong)."""
    try:
        return chess.Board(" ".join(fen.split()[:4])).has_chess960_castling_rights()
    except (ValueError, IndexError):
        return False


class _Chess960Board(chess.Board):
    """A board that is Chess960 unless told otherwise.

    python-chess's ``Board.from_epd(line, chess960=True)`` reads the SAN of the operations (``bm O-O``)
    on a board it makes with ``type(self)(fen)``, which is a standard one; this class makes it Chess960.
    """

    def __init__(self, fen: Optional[str] = chess.STARTING_FEN, *, chess960: bool = True) -> None:
        super().__init__(fen, chess960=chess960)


def read_epd(line: str, chess960: bool = False) -> tuple[chess.Board, dict]:
    """(board, operations) of one EPD line, with the operations' moves read in the board's variant.

    Raises ValueError for a malformed line.
    """
    if not chess960:
        return chess.Board.from_epd(line)
    board, ops = _Chess960Board.from_epd(line, chess960=True)
    return chess.Board(board.fen(en_passant="fen"), chess960=True), ops   # a plain Board, its e.p. square as written


def load_openings(path: str | os.PathLike, plies: Optional[int] = None,
                  chess960: bool = False) -> list[Opening]:
    """Openings from an EPD/FEN file (one position a line) or a PGN file (each game's main line,
    cut to ``plies`` half-moves when given).

    An opening is Chess960 when ``chess960`` is set, when its castling rights need Chess960 (see
    :func:`needs_chess960`) or when its PGN game has ``[Variant "Chess960"]``.
    """
    path = Path(path)
    openings: list[Opening] = []
    if path.suffix.lower() == ".pgn":
        with open(path, encoding="utf-8-sig", errors="replace") as f:
            while True:
                game = chess.pgn.read_game(f)
                if game is None:
                    break
                if game.errors:
                    raise ValueError(f"{path}: game {len(openings) + 1}: {game.errors[0]}")
                board = game.board()   # python-chess reads the Variant tag and 960-only castling rights
                if chess960:
                    # Before the moves: push() turns a standard castling move (e1g1) into e1h1.
                    board.chess960 = True
                for i, move in enumerate(game.mainline_moves()):
                    if plies is not None and i >= plies:
                        break
                    board.push(move)
                name = game.headers.get("Opening") or game.headers.get("Event", "")
                openings.append(Opening(board, "" if name == "?" else name))
    else:
        with open(path, encoding="utf-8-sig", errors="replace") as f:
            for number, line in enumerate(f, 1):
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                # The variant is decided before the EPD operations are read: their SAN (O-O) needs it.
                c960 = chess960 or needs_chess960(line)
                try:
                    if ";" not in line and len(line.split()) in (4, 5, 6) and \
                            all(x.isdigit() for x in line.split()[4:]):
                        board, ops = chess.Board(line, chess960=c960), {}
                    else:
                        board, ops = read_epd(line, c960)
                except ValueError as e:
                    raise ValueError(f"{path}:{number}: {e}") from None
                if not board.is_valid():
                    raise ValueError(f"{path}:{number}: invalid position")
                openings.append(Opening(board, str(ops.get("id", "")) if ops else ""))
    if not openings:
        raise ValueError(f"{path}: no openings")
    return openings


@dataclass
class MatchConfig:
    engine1: EngineSpec
    engine2: EngineSpec
    games: int = 2
    tc: TimeControl = field(default_factory=lambda: TimeControl(base=10.0, inc=0.1))
    openings: list[Opening] = field(default_factory=list)  # empty: the starting position
    concurrency: int = 1
    pgn_path: Optional[str] = None
    sprt: Optional[tuple[float, float]] = None
    sprt_alpha: float = 0.05
    sprt_beta: float = 0.05
    sprt_model: str = "logistic"
    timemargin: float = 0.0          # seconds
    hang_timeout: float = 60.0       # seconds, for --nodes/--depth
    startup_timeout: float = 60.0    # seconds for uciok / readyok
    adjudication: Adjudication = field(default_factory=Adjudication)
    event: str = "Arbor match"
    debug: bool = False


# ----------------------------------------------------------------------------------------------
# A raw UCI client
# ----------------------------------------------------------------------------------------------

@dataclass
class SearchResult:
    status: str                      # ok | timeout | crash
    bestmove: Optional[str] = None
    elapsed: float = 0.0             # seconds from 'go' to 'bestmove' (or to the deadline)
    score: Optional[chess.engine.Score] = None   # from the mover's side
    depth: Optional[int] = None
    nodes: Optional[int] = None
    nps: Optional[int] = None


def _parse_score(tokens: list[str]) -> tuple[Optional[chess.engine.Score], Optional[int], Optional[int],
                                             Optional[int], bool]:
    """(score, depth, nodes, nps, is_secondary_pv) from the tokens of an ``info`` line."""
    score = depth = nodes = nps = None
    secondary = False
    i = 1
    while i < len(tokens):
        t = tokens[i]
        try:
            if t == "depth":
                depth = int(tokens[i + 1]); i += 2; continue
            if t == "nodes":
                nodes = int(tokens[i + 1]); i += 2; continue
            if t == "nps":
                nps = int(tokens[i + 1]); i += 2; continue
            if t == "multipv":
                secondary = int(tokens[i + 1]) > 1; i += 2; continue
            if t == "score":
                kind, value = tokens[i + 1], int(tokens[i + 2])
                score = chess.engine.Cp(value) if kind == "cp" else chess.engine.Mate(value)
                i += 3; continue
            if t in ("pv", "string"):
                break
        except (IndexError, ValueError):
            break
        i += 1
    return score, depth, nodes, nps, secondary


class UciEngine:
    """One engine process spoken to in raw UCI. Not thread-safe: one game thread owns it."""

    def __init__(self, spec: EngineSpec, *, startup_timeout: float = 60.0, debug: bool = False,
                 label: str = "") -> None:
        self.spec = spec
        self.startup_timeout = startup_timeout
        self.debug = debug
        self.label = label or (spec.name or spec.cmd[0])
        self.proc: Optional[subprocess.Popen] = None
        self.lines: "queue.Queue[tuple[float, Optional[str]]]" = queue.Queue()
        self.id_name: Optional[str] = None
        self.option_names: dict[str, str] = {}   # lower-case -> declared name
        self.warnings: list[str] = []
        self.chess960 = False                    # UCI_Chess960 as the engine has it now

    # -- process -------------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        """Start the process, do the ``uci`` handshake, set the options and wait for readyok."""
        self.kill()
        self.lines = queue.Queue()
        try:
            self.proc = subprocess.Popen(
                self.spec.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=None if self.debug else subprocess.DEVNULL, text=True, bufsize=1,
                encoding="utf-8", errors="replace", env=self.spec.env,
                start_new_session=(os.name == "posix"))
        except OSError as e:
            raise UciError(f"cannot start engine {shlex.join(self.spec.cmd)}: {e}") from None
        threading.Thread(target=self._reader, args=(self.proc, self.lines), daemon=True,
                         name=f"uci-reader-{self.label}").start()
        deadline = time.monotonic() + self.startup_timeout
        try:
            self.send("uci")
        except OSError:
            pass   # gone already (a wrapper such as taskset that could not run it): _expect below says so
        self.option_names = {}
        while True:
            line = self._expect(deadline, "uciok")
            if line.startswith("id name "):
                self.id_name = line[len("id name "):].strip()
            elif line.startswith("option name "):
                m = re.match(r"option name (.+?) type ", line)
                if m:
                    self.option_names[m.group(1).strip().lower()] = m.group(1).strip()
            elif line.strip() == "uciok":
                break
        self.chess960 = False   # UCI's default for a fresh process
        for name, value in self.spec.options:
            if name.lower() == "uci_chess960":
                self.chess960 = value.strip().lower() == "true"
            declared = self.option_names.get(name.lower())
            if declared is None:
                self.warnings.append(f"engine {self.display_name} has no option '{name}' (sent anyway)")
                declared = name
            try:
                self.send(f"setoption name {declared} value {value}" if value != ""
                          else f"setoption name {declared}")
            except OSError:
                self.kill()
                raise UciError(f"engine {self.display_name} exited while its options were set "
                               f"(command: {shlex.join(self.spec.cmd)})") from None
        self.isready(self.startup_timeout)

    @staticmethod
    def _reader(proc: subprocess.Popen, lines: "queue.Queue[tuple[float, Optional[str]]]") -> None:
        try:
            for line in proc.stdout:
                lines.put((time.monotonic(), line.rstrip("\r\n")))
        except (OSError, ValueError):
            pass
        lines.put((time.monotonic(), None))

    def send(self, line: str) -> None:
        if self.debug:
            print(f"[{self.label}] < {line}", file=sys.stderr, flush=True)
        if self.proc is None or self.proc.stdin is None:
            raise BrokenPipeError("engine not running")
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def _get(self, deadline: float) -> tuple[float, Optional[str]]:
        """The next line (with its arrival time); raises queue.Empty at the deadline."""
        t, line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        if self.debug and line is not None:
            print(f"[{self.label}] > {line}", file=sys.stderr, flush=True)
        return t, line

    def _expect(self, deadline: float, what: str) -> str:
        try:
            _, line = self._get(deadline)
        except queue.Empty:
            self.kill()
            raise UciError(f"engine {self.display_name} did not answer '{what}' in time") from None
        if line is None:
            self.kill()
            raise UciError(f"engine {self.display_name} exited before '{what}' "
                           f"(command: {shlex.join(self.spec.cmd)})")
        return line

    def isready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        try:
            self.send("isready")
        except OSError:
            self.kill()
            raise UciError(f"engine {self.display_name} is not running") from None
        while self._expect(deadline, "readyok").strip() != "readyok":
            pass

    @property
    def supports_chess960(self) -> bool:
        """Whether the engine declared ``UCI_Chess960``."""
        return "uci_chess960" in self.option_names

    def _set_chess960(self, on: bool) -> None:
        # Only a change is sent, so a standard match talks to the engine exactly as before.
        declared = self.option_names.get("uci_chess960")
        if declared is not None and on != self.chess960:
            self.send(f"setoption name {declared} value {'true' if on else 'false'}")
            self.chess960 = on

    def new_game(self, chess960: bool = False) -> None:
        """``ucinewgame`` + ``isready``; (re)starts the engine first when it is not running.

        ``UCI_Chess960`` is set to ``chess960`` before, when the engine declares it and has the
        other value.
        """
        if not self.alive:
            self.start()
        try:
            self._set_chess960(chess960)
            self.send("ucinewgame")
        except OSError:
            self.start()
            self._set_chess960(chess960)
            self.send("ucinewgame")
        self.isready(self.startup_timeout)

    def search(self, position: str, go: str, limit: float) -> SearchResult:
        """Send position and go; wait up to ``limit`` seconds for bestmove."""
        result = SearchResult("crash")
        try:
            self.send(position)
            start = time.monotonic()  # before 'go': the reader stamps a quick reply before we could look
            self.send(go)
        except OSError:
            return result
        deadline = start + limit
        while True:
            try:
                t, line = self._get(deadline)
            except queue.Empty:
                result.status, result.elapsed = "timeout", time.monotonic() - start
                return result
            if line is None:
                result.elapsed = t - start
                return result
            tokens = line.split()
            if not tokens:
                continue
            if tokens[0] == "info":
                score, depth, nodes, nps, secondary = _parse_score(tokens)
                if not secondary:
                    if score is not None:
                        result.score, result.depth = score, depth
                    if nodes is not None:
                        result.nodes = nodes
                    if nps is not None:
                        result.nps = nps
            elif tokens[0] == "bestmove":
                result.status = "ok"
                result.bestmove = tokens[1] if len(tokens) > 1 else ""
                result.elapsed = t - start
                return result

    def stop_or_kill(self, grace: float = KILL_GRACE) -> None:
        """After a timeout: send ``stop`` and wait ``grace`` seconds for bestmove, else kill."""
        if not self.alive:
            return
        try:
            self.send("stop")
        except OSError:
            self.kill()
            return
        deadline = time.monotonic() + grace
        while True:
            try:
                _, line = self._get(deadline)
            except queue.Empty:
                self.kill()
                return
            if line is None:
                self.kill()
                return
            if line.startswith("bestmove"):
                return

    def kill(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            try:
                if os.name == "posix":
                    os.killpg(proc.pid, signal.SIGKILL)
                else:
                    proc.kill()
            except (OSError, ProcessLookupError):
                pass
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except (OSError, ValueError, AttributeError):
                pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass

    def quit(self) -> None:
        if self.alive:
            try:
                self.send("quit")
                self.proc.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()

    @property
    def display_name(self) -> str:
        return self.spec.name or self.id_name or Path(self.spec.cmd[0]).name


# ----------------------------------------------------------------------------------------------
# One game
# ----------------------------------------------------------------------------------------------

@dataclass
class MoveRecord:
    """One engine move: whose it was, the time it took and the last ``nodes``/``nps`` the engine reported."""

    engine1: bool
    seconds: float
    nodes: Optional[int]
    nps: Optional[int]


@dataclass
class GameRecord:
    number: int
    white: str
    black: str
    engine1_white: bool
    result: str                  # 1-0 | 0-1 | 1/2-1/2 | *
    reason: str                  # e.g. "White mates", "Black loses on time"
    termination: str             # PGN Termination: normal, time forfeit, rules infraction, ...
    plies: int
    opening: int                 # index into the openings, -1 for the starting position
    pgn: str = ""
    moves: list[MoveRecord] = field(default_factory=list)
    clock_left: dict[bool, float] = field(default_factory=dict)   # engine1? -> seconds at the end
    forfeit: Optional[bool] = None                                 # engine1? of the side out of time

    @property
    def engine1_points(self) -> Optional[float]:
        if self.result == "1/2-1/2":
            return 0.5
        if self.result in ("1-0", "0-1"):
            return 1.0 if (self.result == "1-0") == self.engine1_white else 0.0
        return None


def position_command(board: chess.Board) -> str:
    """The UCI ``position`` command for ``board``: its starting position and the moves since, the FEN's en
    passant square written whenever a pawn has just made a double step, as python-chess and GUIs send it."""
    fen = board.root().fen(en_passant="fen")
    moves = " ".join(m.uci() for m in board.move_stack)
    head = "position startpos" if fen == chess.STARTING_FEN else f"position fen {fen}"
    return head + (f" moves {moves}" if moves else "")


def _cp(score: Optional[chess.engine.Score]) -> Optional[int]:
    return None if score is None else score.score(mate_score=MATE_CP)


def _side(color: chess.Color) -> str:
    return "White" if color == chess.WHITE else "Black"


def _rules_outcome(board: chess.Board) -> Optional[tuple[str, str]]:
    """(result, reason) when the rules end the game in this position."""
    if board.is_checkmate():
        return ("0-1" if board.turn == chess.WHITE else "1-0"), f"{_side(not board.turn)} mates"
    if board.is_stalemate():
        return "1/2-1/2", "Draw by stalemate"
    if board.is_insufficient_material():
        return "1/2-1/2", "Draw by insufficient mating material"
    if board.halfmove_clock >= 100:
        return "1/2-1/2", "Draw by fifty moves rule"
    if board.is_repetition(3):
        return "1/2-1/2", "Draw by 3-fold repetition"
    return None


def _loss(color: chess.Color) -> str:
    return "0-1" if color == chess.WHITE else "1-0"


def play_game(white: UciEngine, black: UciEngine, opening: Opening, tc: TimeControl, *,
              adjudication: Adjudication = Adjudication(), timemargin: float = 0.0,
              hang_timeout: float = 60.0, number: int = 1, engine1_white: bool = True,
              opening_index: int = -1, event: str = "Arbor match",
              white_name: Optional[str] = None, black_name: Optional[str] = None,
              abort: Optional[threading.Event] = None) -> Optional[GameRecord]:
    """Play one game; returns None only when ``abort`` is set during the game.

    Raises :class:`UciError` if an engine cannot be (re)started for the game.
    """
    white_name = white_name or white.display_name
    black_name = black_name or black.display_name
    board = opening.board.copy()
    for eng in (white, black):
        eng.new_game(chess960=board.chess960)
    game = chess.pgn.Game()
    game.headers["Event"] = event
    game.headers["Site"] = cpu_description()   # where it was played: the engines' speed turns on the CPU
    game.headers["Date"] = datetime.date.today().strftime("%Y.%m.%d")
    game.headers["Round"] = str(number)
    game.headers["White"] = white_name
    game.headers["Black"] = black_name
    game.setup(board.root())
    node: chess.pgn.GameNode = game
    for move in board.move_stack:
        node = node.add_variation(move, comment="book")
    game.headers["TimeControl"] = tc.pgn_tag()
    if not tc.has_clock:
        game.headers["Limit"] = tc.describe()

    clock = {chess.WHITE: tc.base or 0.0, chess.BLACK: tc.base or 0.0}
    moves_done = {chess.WHITE: 0, chess.BLACK: 0}
    engines = {chess.WHITE: white, chess.BLACK: black}
    resign_count = {chess.WHITE: 0, chess.BLACK: 0}
    winning_count = {chess.WHITE: 0, chess.BLACK: 0}
    draw_count = 0
    start_ply = len(board.move_stack)
    result = reason = termination = None
    move_records: list[MoveRecord] = []
    forfeit: Optional[bool] = None   # engine1? of the side that lost on time

    while True:
        outcome = _rules_outcome(board)
        if outcome:
            result, reason = outcome
            termination = "normal"
            break
        if adjudication.maxmoves and (len(board.move_stack) - start_ply) >= 2 * adjudication.maxmoves:
            result, reason, termination = "1/2-1/2", "Draw by adjudication: maximum moves", "adjudication"
            break
        if abort is not None and abort.is_set():
            return None
        side = board.turn
        eng = engines[side]
        if tc.has_clock:
            def ms(x: float) -> int:
                return max(1, int(x * 1000))
            go = (f"go wtime {ms(clock[chess.WHITE])} btime {ms(clock[chess.BLACK])} "
                  f"winc {int(tc.inc * 1000)} binc {int(tc.inc * 1000)}")
            if tc.moves:
                go += f" movestogo {tc.moves - moves_done[side] % tc.moves}"
            limit = clock[side] + timemargin
        elif tc.movetime is not None:
            go, limit = f"go movetime {int(tc.movetime * 1000)}", tc.movetime + timemargin
        elif tc.nodes is not None:
            go, limit = f"go nodes {tc.nodes}", hang_timeout
        else:
            go, limit = f"go depth {tc.depth}", hang_timeout
        res = eng.search(position_command(board), go, max(0.0, limit))
        if res.status == "ok":
            move_records.append(MoveRecord(engine1_white == (side == chess.WHITE), res.elapsed, res.nodes, res.nps))
        name = _side(side)
        if res.status == "crash":
            eng.kill()
            result, reason, termination = _loss(side), f"{name} disconnects", "abandoned"
            break
        if res.status == "timeout" or (res.elapsed > limit and (tc.has_clock or tc.movetime is not None)):
            if res.status == "timeout":
                eng.stop_or_kill()
            if tc.has_clock or tc.movetime is not None:
                if board.has_insufficient_material(not side):
                    result, reason = "1/2-1/2", f"Draw: {name} loses on time but {_side(not side)} cannot mate"
                else:
                    result, reason = _loss(side), f"{name} loses on time"
                termination = "time forfeit"
                clock[side] = 0.0
                forfeit = engine1_white == (side == chess.WHITE)
            else:
                result, reason, termination = _loss(side), f"{name}'s connection stalls", "stalled connection"
            if res.status == "timeout":
                node.comment = (node.comment + " " if node.comment else "") + \
                    f"no move after {res.elapsed:.3f}s"
            break
        try:
            move = chess.Move.from_uci(res.bestmove or "")
        except ValueError:
            move = None
        if move is None or not move or move not in board.legal_moves:
            result, reason = _loss(side), f"{name} makes an illegal move: {res.bestmove or '(empty)'}"
            termination = "rules infraction"
            break
        node = node.add_variation(move)
        if tc.has_clock:
            clock[side] -= res.elapsed
            moves_done[side] += 1
            clock[side] += tc.inc
            if tc.moves and moves_done[side] % tc.moves == 0:
                clock[side] += tc.base
            node.set_clock(max(0.0, clock[side]))
        node.set_emt(res.elapsed)
        if res.score is not None:
            node.set_eval(chess.engine.PovScore(res.score, side), res.depth)
        board.push(move)

        # Adjudication on the engines' scores (cutechess-cli semantics).
        cp = _cp(res.score)
        if adjudication.resign_movecount:
            resign_count[side] = resign_count[side] + 1 if cp is not None and cp <= -adjudication.resign_score else 0
            winning_count[side] = winning_count[side] + 1 if cp is not None and cp >= adjudication.resign_score else 0
            if resign_count[side] >= adjudication.resign_movecount and (
                    not adjudication.resign_twosided or winning_count[not side] >= adjudication.resign_movecount):
                if _rules_outcome(board) is None:
                    result, reason = _loss(side), f"{name} resigns (adjudication)"
                    termination = "adjudication"
                    break
        if adjudication.draw_movenumber or adjudication.draw_movecount:
            draw_count = draw_count + 1 if cp is not None and abs(cp) <= adjudication.draw_score else 0
            if (board.ply() // 2 >= adjudication.draw_movenumber
                    and draw_count >= 2 * max(1, adjudication.draw_movecount)
                    and _rules_outcome(board) is None):
                result, reason, termination = "1/2-1/2", "Draw by adjudication", "adjudication"
                break

    game.headers["Result"] = result
    game.headers["Termination"] = termination
    game.headers["PlyCount"] = str(len(board.move_stack))
    if node is game:
        game.comment = reason
    else:
        node.comment = (node.comment + " " if node.comment else "") + reason
    exporter = chess.pgn.StringExporter(headers=True, variations=False, comments=True)
    clock_left = ({engine1_white == (color == chess.WHITE): max(0.0, left) for color, left in clock.items()}
                  if tc.has_clock else {})
    return GameRecord(number, white_name, black_name, engine1_white, result, reason, termination,
                      len(board.move_stack) - start_ply, opening_index, game.accept(exporter),
                      move_records, clock_left, forfeit)


# ----------------------------------------------------------------------------------------------
# The match
# ----------------------------------------------------------------------------------------------

@dataclass
class MatchResult:
    name1: str
    name2: str
    wins: int = 0       # engine 1's
    draws: int = 0
    losses: int = 0
    games: list[GameRecord] = field(default_factory=list)
    sprt: Optional[elo_stats.SprtResult] = None
    aborted: bool = False
    error: Optional[str] = None

    @property
    def played(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        return elo_stats.score(self.wins, self.draws, self.losses)

    @property
    def elo(self) -> tuple[float, float]:
        return elo_stats.elo_difference(self.wins, self.draws, self.losses)

    @property
    def los(self) -> float:
        return elo_stats.los(self.wins, self.draws, self.losses)

    def score_line(self) -> str:
        n = self.played
        return (f"Score of {self.name1} vs {self.name2}: W-D-L {self.wins}-{self.draws}-{self.losses} "
                f"[{self.score:.3f}] {n}" if n else f"Score of {self.name1} vs {self.name2}: no games")

    def stats_line(self) -> str:
        n = self.played
        if not n:
            return ""
        e, margin = self.elo
        text = (f"Elo difference: {elo_stats.format_elo(e, margin)}, LOS: {100 * self.los:.1f} %, "
                f"DrawRatio: {100 * self.draws / n:.1f} %")
        if self.sprt is not None:
            text += f"\nSPRT: {self.sprt}"
        return text


    def move_lines(self) -> list[str]:
        """Per engine: time, nodes and nps of its moves (each move's last ``info``), and in clock games the
        median clock left at the end and the time forfeits. Game-move nps is what decides strength at the
        clock; a ``bench`` figure comes from longer searches."""
        lines = []
        for engine1, name in ((True, self.name1), (False, self.name2)):
            moves = [m for g in self.games for m in g.moves if m.engine1 == engine1]
            text = f"{name}: {len(moves)} moves"
            if moves:
                text += f", {statistics.mean(m.seconds for m in moves):.3f} s per move"
            nodes = [m.nodes for m in moves if m.nodes is not None]
            nps = [m.nps for m in moves if m.nps is not None]
            if nodes:
                text += f", median nodes {statistics.median(nodes):.0f}"
            if nps:
                text += f", median nps {statistics.median(nps):.0f}"
            left = [g.clock_left[engine1] for g in self.games if engine1 in g.clock_left]
            if not moves and not left:
                continue
            if left:
                forfeits = sum(g.forfeit == engine1 for g in self.games)
                text += f", median clock left at the end {statistics.median(left):.2f} s, time forfeits {forfeits}"
            lines.append(text)
        return lines


def _engine_names(spec1: EngineSpec, spec2: EngineSpec, id1: str, id2: str) -> tuple[str, str]:
    n1, n2 = spec1.name or id1, spec2.name or id2
    if n1 == n2:
        o1 = ",".join(f"{k}={v}" for k, v in spec1.options)
        o2 = ",".join(f"{k}={v}" for k, v in spec2.options)
        if o1 != o2 and not (spec1.name or spec2.name):
            n1, n2 = (f"{n1} ({o1})" if o1 else n1), (f"{n2} ({o2})" if o2 else n2)
        if n1 == n2:
            n1, n2 = f"{n1} #1", f"{n2} #2"
    return n1, n2


def run_match(config: MatchConfig, *, on_game: Optional[Callable[[GameRecord, MatchResult], None]] = None,
              on_start: Optional[Callable[[int, str, str], None]] = None,
              on_warning: Optional[Callable[[str], None]] = None,
              abort: Optional[threading.Event] = None) -> MatchResult:
    """Play the match; ``on_game`` is called (under a lock) after each finished game.

    Raises :class:`UciError` when an engine cannot be started at all.
    """
    abort = abort or threading.Event()
    openings = config.openings or [Opening(chess.Board())]
    workers = max(1, min(config.concurrency, config.games))

    # Start the first pair here, so that start-up failures are reported before any game.
    first = [UciEngine(config.engine1, startup_timeout=config.startup_timeout, debug=config.debug, label="1"),
             UciEngine(config.engine2, startup_timeout=config.startup_timeout, debug=config.debug, label="2")]
    try:
        for eng in first:
            eng.start()
            for w in eng.warnings:
                (on_warning or (lambda s: None))(w)
    except BaseException:
        for eng in first:
            eng.kill()
        raise
    if any(o.board.chess960 for o in openings):
        for eng in first:
            if not eng.supports_chess960:
                (on_warning or (lambda s: None))(
                    f"engine {eng.display_name} does not declare UCI_Chess960; it gets Chess960 "
                    f"positions without it and may castle in the wrong notation")
    name1, name2 = _engine_names(config.engine1, config.engine2,
                                 first[0].display_name, first[1].display_name)
    result = MatchResult(name1, name2)
    lock = threading.Lock()
    next_game = [1]
    stop_new = threading.Event()
    pgn_file = open(config.pgn_path, "w", encoding="utf-8") if config.pgn_path else None

    def take() -> Optional[int]:
        with lock:
            if stop_new.is_set() or abort.is_set() or next_game[0] > config.games:
                return None
            n = next_game[0]
            next_game[0] += 1
            return n

    def worker(pair: list[UciEngine]) -> None:
        try:
            while True:
                n = take()
                if n is None:
                    return
                pair_index = (n - 1) // 2
                opening_index = pair_index % len(openings)
                engine1_white = (n - 1) % 2 == 0
                white, black = (pair[0], pair[1]) if engine1_white else (pair[1], pair[0])
                wn, bn = (name1, name2) if engine1_white else (name2, name1)
                if on_start:
                    with lock:
                        on_start(n, wn, bn)
                try:
                    rec = play_game(white, black, openings[opening_index], config.tc,
                                    adjudication=config.adjudication, timemargin=config.timemargin,
                                    hang_timeout=config.hang_timeout, number=n,
                                    engine1_white=engine1_white,
                                    opening_index=opening_index if config.openings else -1,
                                    event=config.event, white_name=wn, black_name=bn, abort=abort)
                except UciError as e:
                    with lock:
                        result.error = str(e)
                    abort.set()
                    return
                if rec is None:
                    return
                with lock:
                    points = rec.engine1_points
                    if points == 1.0:
                        result.wins += 1
                    elif points == 0.5:
                        result.draws += 1
                    elif points == 0.0:
                        result.losses += 1
                    result.games.append(rec)
                    if pgn_file is not None:
                        pgn_file.write(rec.pgn + "\n\n")
                        pgn_file.flush()
                    if config.sprt is not None:
                        result.sprt = elo_stats.sprt_status(
                            result.wins, result.draws, result.losses, config.sprt[0], config.sprt[1],
                            config.sprt_alpha, config.sprt_beta, config.sprt_model)
                        if result.sprt.decision is not None:
                            stop_new.set()
                    if on_game:
                        on_game(rec, result)
        finally:
            for eng in pair:
                eng.quit()

    pairs = [first] + [
        [UciEngine(config.engine1, startup_timeout=config.startup_timeout, debug=config.debug, label=f"1.{i}"),
         UciEngine(config.engine2, startup_timeout=config.startup_timeout, debug=config.debug, label=f"2.{i}")]
        for i in range(1, workers)]
    threads = [threading.Thread(target=worker, args=(p,), daemon=True, name=f"game-worker-{i}")
               for i, p in enumerate(pairs)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(0.2)
    except KeyboardInterrupt:
        abort.set()
        result.aborted = True
        for t in threads:
            t.join(10)
    finally:
        if pgn_file is not None:
            pgn_file.close()
    if result.error:
        result.aborted = True
    result.games.sort(key=lambda g: g.number)
    return result


# ----------------------------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="arbor match",
        description="Play a match between two UCI engines (Arbor when an engine is not given).",
        epilog="example: arbor match --engine1 'python -m engine' --engine2 stockfish "
               "--option2 UCI_LimitStrength=true --option2 UCI_Elo=1500 --games 100 --tc 10+0.1 "
               "--concurrency 2 --pgn games.pgn")
    p.add_argument("--engine1", metavar="CMD", help="first engine's command line (default: Arbor)")
    p.add_argument("--engine2", metavar="CMD", help="second engine's command line (default: Arbor)")
    p.add_argument("--name1", help="display name of engine 1 (default: its 'id name')")
    p.add_argument("--name2", help="display name of engine 2")
    p.add_argument("--option1", action="append", default=[], metavar="NAME=VALUE",
                   help="UCI option for engine 1 (repeatable)")
    p.add_argument("--option2", action="append", default=[], metavar="NAME=VALUE",
                   help="UCI option for engine 2 (repeatable)")
    p.add_argument("--games", type=int, default=2, help="number of games (default 2)")
    limit = p.add_mutually_exclusive_group()
    limit.add_argument("--tc", help="clock per side: [moves/]seconds[+increment], e.g. 10+0.1 "
                                    "(default 10+0.1)")
    limit.add_argument("--movetime", type=int, metavar="MS", help="fixed time per move")
    limit.add_argument("--nodes", type=int, metavar="N", help="fixed nodes per move (go nodes)")
    limit.add_argument("--depth", type=int, metavar="D", help="fixed depth per move (go depth)")
    p.add_argument("--timemargin", type=int, default=0, metavar="MS",
                   help="how far past its clock (or movetime) a move may arrive before it loses "
                        "on time (default 0, as in cutechess-cli)")
    p.add_argument("--hang-timeout", type=float, default=60.0, metavar="SEC",
                   help="with --nodes/--depth, a move taking longer loses (default 60)")
    p.add_argument("--openings", metavar="FILE", help="EPD/FEN or PGN file of openings")
    p.add_argument("--opening-plies", type=int, metavar="N", help="cut PGN openings to N half-moves")
    p.add_argument("--openings-order", choices=("sequential", "random"), default="sequential")
    p.add_argument("--seed", type=int, help="seed for --openings-order random and for the "
                                            "positions of --chess960 without --openings")
    p.add_argument("--chess960", action="store_true",
                   help="play every game as Chess960 (UCI_Chess960 on, castling king-takes-rook), like "
                        "cutechess-cli's -variant fischerandom; without --openings each pair of games "
                        "gets a random 960 start position. Without it only openings whose castling "
                        "rights need Chess960, or PGN games with [Variant \"Chess960\"], are")
    p.add_argument("--concurrency", type=int, default=1, metavar="K", help="games played at once")
    p.add_argument("--pgn", metavar="OUT", help="write every game to this PGN file")
    p.add_argument("--sprt", metavar="ELO0,ELO1", help="stop when the SPRT of H0: elo=ELO0 vs "
                                                      "H1: elo=ELO1 is decided")
    p.add_argument("--sprt-alpha", type=float, default=0.05)
    p.add_argument("--sprt-beta", type=float, default=0.05)
    p.add_argument("--sprt-model", choices=("logistic", "bayesian"), default="logistic",
                   help="logistic Elo GSPRT as fishtest (default) or cutechess's BayesElo")
    p.add_argument("--resign-movecount", type=int, default=0, metavar="N",
                   help="adjudicate a loss after N consecutive moves scored <= -resign-score")
    p.add_argument("--resign-score", type=int, default=1000, metavar="CP")
    p.add_argument("--resign-twosided", action="store_true",
                   help="resign only when the opponent's score agrees")
    p.add_argument("--draw-movenumber", type=int, default=0, metavar="N",
                   help="draw adjudication from move N on (needs --draw-movecount)")
    p.add_argument("--draw-movecount", type=int, default=0, metavar="N",
                   help="adjudicate a draw after N consecutive moves each within +-draw-score")
    p.add_argument("--draw-score", type=int, default=10, metavar="CP")
    p.add_argument("--maxmoves", type=int, default=0, metavar="N", help="draw after N full moves")
    p.add_argument("--event", default="Arbor match", help="PGN Event tag")
    p.add_argument("--startup-timeout", type=float, default=60.0, metavar="SEC",
                   help="time an engine gets to answer uci/isready")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--quiet", action="store_true", help="print only the final result")
    p.add_argument("--debug", action="store_true", help="log all UCI traffic and engine stderr")
    return p


def config_from_args(args: argparse.Namespace) -> MatchConfig:
    """Build a MatchConfig from parsed arguments; raises ValueError with a message for the user."""
    if args.games < 1:
        raise ValueError("--games must be at least 1")
    if args.concurrency < 1:
        raise ValueError("--concurrency must be at least 1")
    if args.movetime is not None:
        if args.movetime <= 0:
            raise ValueError("--movetime must be positive")
        tc = TimeControl(movetime=args.movetime / 1000.0)
    elif args.nodes is not None:
        if args.nodes <= 0:
            raise ValueError("--nodes must be positive")
        tc = TimeControl(nodes=args.nodes)
    elif args.depth is not None:
        if args.depth <= 0:
            raise ValueError("--depth must be positive")
        tc = TimeControl(depth=args.depth)
    else:
        tc = parse_tc(args.tc or "10+0.1")
    sprt = None
    if args.sprt:
        try:
            e0, e1 = (float(x) for x in args.sprt.split(","))
        except ValueError:
            raise ValueError(f"--sprt expects elo0,elo1, got '{args.sprt}'") from None
        if e0 >= e1:
            raise ValueError("--sprt: elo0 must be below elo1")
        sprt = (e0, e1)
    openings: list[Opening] = []
    if args.openings:
        openings = load_openings(args.openings, args.opening_plies, chess960=args.chess960)
        if args.openings_order == "random":
            random.Random(args.seed).shuffle(openings)
    elif args.chess960:
        rng = random.Random(args.seed)
        openings = []
        for _ in range((args.games + 1) // 2):
            n = rng.randrange(960)
            openings.append(Opening(chess.Board.from_chess960_pos(n), f"Chess960 #{n}"))
    spec1 = EngineSpec.from_command(args.engine1, args.name1, [parse_option(o) for o in args.option1])
    spec2 = EngineSpec.from_command(args.engine2, args.name2, [parse_option(o) for o in args.option2])
    adjudication = Adjudication(args.resign_movecount, args.resign_score, args.resign_twosided,
                                args.draw_movenumber, args.draw_movecount, args.draw_score, args.maxmoves)
    return MatchConfig(spec1, spec2, games=args.games, tc=tc, openings=openings,
                       concurrency=args.concurrency, pgn_path=args.pgn, sprt=sprt,
                       sprt_alpha=args.sprt_alpha, sprt_beta=args.sprt_beta, sprt_model=args.sprt_model,
                       timemargin=args.timemargin / 1000.0, hang_timeout=args.hang_timeout,
                       startup_timeout=args.startup_timeout, adjudication=adjudication,
                       event=args.event, debug=args.debug)


def main(argv: Optional[list[str]] = None) -> int:
    """Entry point of ``arbor match``; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        config = config_from_args(args)
    except (ValueError, OSError) as e:
        parser.error(str(e))
    from tqdm import tqdm

    bar = tqdm(total=config.games, desc="games", unit="game", file=sys.stderr,
               disable=args.no_progress or args.quiet, dynamic_ncols=True)

    def say(text: str) -> None:
        if not args.quiet and text:
            tqdm.write(text, file=sys.stdout)
            sys.stdout.flush()

    def on_start(n: int, white: str, black: str) -> None:
        if args.debug:
            say(f"Started game {n} of {config.games} ({white} vs {black})")

    def on_game(rec: GameRecord, res: MatchResult) -> None:
        say(f"Finished game {rec.number} ({rec.white} vs {rec.black}): {rec.result} {{{rec.reason}}}")
        say(res.score_line())
        say(res.stats_line())
        bar.update(1)
        bar.set_postfix_str(f"{res.wins}-{res.draws}-{res.losses}")

    def on_warning(text: str) -> None:
        print(f"warning: {text}", file=sys.stderr)

    print(f"Match: {config.games} games, {config.tc.describe()}, concurrency {config.concurrency}"
          + (f", {len(config.openings)} openings" if config.openings else "")
          + (", Chess960" if any(o.board.chess960 for o in config.openings) else ""), file=sys.stderr)
    try:
        res = run_match(config, on_game=on_game, on_start=on_start, on_warning=on_warning)
    except UciError as e:
        bar.close()
        print(f"arbor match: error: {e}", file=sys.stderr)
        return 1
    bar.close()
    print()
    print(res.score_line())
    if res.played:
        print(res.stats_line())
        reasons: dict[str, int] = {}
        for g in res.games:
            key = re.sub(r"^(White|Black)", "", g.reason).strip()
            key = re.sub(r": .*$", "", key)
            reasons[key] = reasons.get(key, 0) + 1
        print("Results: " + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items(), key=lambda kv: -kv[1])))
        for line in res.move_lines():
            print(line)
    if res.sprt is not None and res.sprt.decision:
        print(f"SPRT decided: {res.sprt.decision} accepted after {res.played} games")
    if config.pgn_path:
        print(f"PGN written to {config.pgn_path}")
    if res.error:
        print(f"arbor match: error: {res.error}", file=sys.stderr)
        return 1
    if res.aborted:
        print("match interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
