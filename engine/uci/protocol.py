"""The UCI protocol: reads commands, keeps the game state, runs searches in a thread, prints.

The input loop never blocks on a search: ``go`` starts a search thread that prints its own
``info`` and ``bestmove`` lines; ``stop``, ``ponderhit`` and ``quit`` only set events. Bad input
is answered with ``info string`` and leaves the previous state in place.

Every ``go`` gets exactly one ``bestmove``. A search's life cycle is explicit (:class:`SearchJob`):
searching, then bestmove sent, then joined. A ``go`` (or ``position``, ``ucinewgame``, ...) that
arrives while a search runs stops it first, as Stockfish does, so its ``bestmove`` comes out before
the new search starts; a search that has sent its ``bestmove`` but whose thread is still winding
down is simply joined. Nothing is ever refused for "already searching".
"""

from __future__ import annotations

import os
import random
import sys
import threading
import time
from typing import Callable, Optional, TextIO

import chess
import chess.polyglot

from .. import __author__, __version__
from .loading import EVALUATOR_OPTIONS, EvaluatorLoader
from ..params import OPTIONS, OptionError, Params
from ..search.report import LineInfo, q_to_cp
from ..search.search import Search
from ..search.strength import MIN_THINK_SECONDS, Level, choose, level_for, limited
from .. import compiled
from ..search.timeman import Limits, TimeManager
from ..search.tree import Tree

ENGINE_NAME = f"Arbor {__version__}"
GO_INT_ARGS = {"wtime", "btime", "winc", "binc", "movestogo", "movetime", "nodes", "depth", "mate"}
# go numbers are clamped to this (about 31 years in milliseconds): anything larger means
# "unlimited" and would only overflow the float arithmetic of the time manager.
GO_INT_MAX = 10**12


# What python-chess's Board.status() flags mean, in the words a GUI user reads in an 'info string'.
POSITION_PROBLEMS = {
    chess.STATUS_EMPTY: "the board is empty",
    chess.STATUS_NO_WHITE_KING: "White has no king",
    chess.STATUS_NO_BLACK_KING: "Black has no king",
    chess.STATUS_TOO_MANY_KINGS: "too many kings",
    chess.STATUS_TOO_MANY_WHITE_PAWNS: "White has more than 8 pawns",
    chess.STATUS_TOO_MANY_BLACK_PAWNS: "Black has more than 8 pawns",
    chess.STATUS_PAWNS_ON_BACKRANK: "a pawn stands on the first or last rank",
    chess.STATUS_TOO_MANY_WHITE_PIECES: "White has more than 16 pieces",
    chess.STATUS_TOO_MANY_BLACK_PIECES: "Black has more than 16 pieces",
    chess.STATUS_BAD_CASTLING_RIGHTS: "castling rights without the king or rook on its square",
    chess.STATUS_INVALID_EP_SQUARE: "an en passant square no pawn can have skipped",
    chess.STATUS_OPPOSITE_CHECK: "the side not to move is in check",
}


# FEN fields that Stockfish reads leniently, as puzzle files and hand-made FENs need: castling rights without their
# king and rook, and an en passant square no pawn can have skipped, are dropped (with a word why), not the position.
LENIENT = {
    chess.STATUS_BAD_CASTLING_RIGHTS: lambda board: setattr(board, "castling_rights", board.clean_castling_rights()),
    chess.STATUS_INVALID_EP_SQUARE: lambda board: setattr(board, "ep_square", None),
}


def parse_move(board: chess.Board, text: str) -> chess.Move:
    """``text`` as a UCI move legal in ``board``, its promotion letter in either case (``e7e8Q``, as Stockfish reads
    it); ValueError if it is not one."""
    return board.parse_uci(text[:4] + text[4:].lower())


def position_problems(status: chess.Status) -> str:
    """Why ``Board.status()`` refuses a position, in words."""
    return "; ".join(text for flag, text in POSITION_PROBLEMS.items() if status & flag) or repr(status)


class SearchJob:
    """One ``go``: the thread running it, its ``stop`` and ``ponderhit`` events, and whether its ``bestmove`` is out.

    Created by the input thread and joined only by it; the search thread's single duty towards
    it is to set ``answered`` once the ``bestmove`` line has been written. The events exist from the
    ``go`` on, so a ``stop`` that comes while the network still loads is not lost.
    """

    def __init__(self, target: Callable[["SearchJob"], None]) -> None:
        self.stop_event = threading.Event()
        self.ponderhit_event = threading.Event()
        self.answered = threading.Event()
        self.thread = threading.Thread(target=target, args=(self,), daemon=True, name="arbor-search")

    @property
    def running(self) -> bool:
        """True until the ``bestmove`` of this ``go`` has been sent."""
        return not self.answered.is_set()

    def stop_and_join(self, timeout: Optional[float] = None) -> None:
        if self.running:
            self.stop_event.set()
        self.thread.join(timeout)


class GameLine:
    """The game a ``position`` command names: its start, its moves, and its positions (python-chess boards without
    move stacks).

    GUIs resend the whole game before every move. Extending the previous line parses and plays only
    the new moves, so ``position`` costs as little at move 150 as at move 1; replaying 300 plies
    took 6 ms, more than half of a 10 ms increment.
    """

    def __init__(self, base: Optional[tuple], start: chess.Board) -> None:
        self.base = base  # the command's tokens before 'moves' and the Chess960 mode; None: never extended
        self.texts: list[str] = []
        self.moves: list[chess.Move] = []
        self.board = start.copy(stack=False)  # the position at the end
        self.states = [start.copy(stack=False)]

    def extends(self, base: tuple, texts: list[str]) -> bool:
        return base == self.base and texts[:len(self.texts)] == self.texts

    def extended(self, texts: list[str]) -> "GameLine":
        """A copy with ``texts[len(self.texts):]`` played; ValueError names an illegal move."""
        line = GameLine.__new__(GameLine)
        line.base = self.base
        line.texts, line.moves, line.states = list(texts), list(self.moves), list(self.states)
        line.board = board = self.board.copy(stack=False)
        for text in texts[len(self.texts):]:
            try:
                move = parse_move(board, text)
            except ValueError:
                raise ValueError(f"illegal move '{text}' in position {board.fen()}") from None
            board.push(move)
            line.moves.append(move)
            line.states.append(board.copy(stack=False))
        return line


class UciEngine:
    """One UCI session."""

    def __init__(self, out: TextIO = sys.stdout) -> None:
        self.out = out
        self.out_lock = threading.Lock()
        self.params = Params()
        self.tree = Tree()
        self.time_manager = TimeManager()
        self.board = chess.Board()
        self.debug = False
        self.rng = random.Random()  # the move choice of a limited strength
        self.log: Optional[TextIO] = None
        # The evaluator and its pipeline, made at the first isready or go and kept across searches.
        self.loader = EvaluatorLoader(self.params, self.say)
        self.job: Optional[SearchJob] = None
        self.tablebases = None  # engine.tablebase.Tablebases once SyzygyPath is set
        self.line = GameLine(None, chess.Board())
        self._restart_line(chess.Board())
        self.core_reported = False

    # ----------------------------------------------------------------- output

    def send(self, line: str) -> None:
        with self.out_lock:
            self.out.write(line + "\n")
            self.out.flush()
            if self.log is not None:
                self._log(">>", line)

    def say(self, text: str) -> None:
        self.send(f"info string {text}")

    def _log(self, direction: str, line: str) -> None:
        try:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S") + f".{int(time.time() * 1000) % 1000:03d}"
            self.log.write(f"{stamp} {direction} {line}\n")
            self.log.flush()
        except (OSError, ValueError):
            self.log = None

    # ----------------------------------------------------------------- loop

    def loop(self, stream: TextIO = sys.stdin) -> None:
        for line in stream:
            if not self.handle(line):
                return
        self._quit()

    def handle(self, line: str) -> bool:
        """Process one input line; False after ``quit``."""
        line = line.strip()
        if self.log is not None and line:
            with self.out_lock:
                self._log("<<", line)
        if not line:
            return True
        cmd, _, rest = line.replace("\t", " ").partition(" ")   # any whitespace between tokens, the spec says
        handler = getattr(self, "cmd_" + cmd.lower(), None) if cmd.isidentifier() else None
        if handler is None:
            self.say(f"unknown command: {line[:80]}")
            return True
        try:
            return handler(rest.strip()) is not False
        except Exception as e:  # a bug in one command must not end the session
            self.say(f"error in '{cmd}': {type(e).__name__}: {e}")
            return True

    # ----------------------------------------------------------------- commands

    def cmd_uci(self, _: str) -> None:
        self.send(f"id name {ENGINE_NAME}")
        self.send(f"id author {__author__}")
        for option in OPTIONS:
            self.send(option.uci_line())
        self.send("uciok")

    def cmd_debug(self, arg: str) -> None:
        if arg not in ("on", "off"):
            self.say("debug expects on or off")
            return
        self.debug = arg == "on"

    def cmd_isready(self, _: str) -> None:
        if not self.core_reported:   # once a session: whether the root probe runs compiled (docs/uci.md)
            self.core_reported = True
            self.say(compiled.describe())
        if not self.searching():
            self.loader.wait()
        self.send("readyok")

    def cmd_setoption(self, arg: str) -> None:
        tokens = arg.split()
        if not tokens or tokens[0] != "name":
            self.say("setoption expects: setoption name <name> [value <value>]")
            return
        if "value" in tokens:
            i = tokens.index("value")
            name, value = " ".join(tokens[1:i]), " ".join(tokens[i + 1:])
        else:
            name, value = " ".join(tokens[1:]), ""
        try:
            option = self.params.set(name, value)
        except OptionError as e:
            self.say(str(e))
            return
        if option.attr in EVALUATOR_OPTIONS:
            self._wait_search()
            self.loader.drop()
            self.tree.forget_everything()   # the cache holds the old evaluator's priors
        elif option.attr == "log_file":
            self._open_log(self.params.log_file)
        elif option.attr == "syzygy_path":
            from ..search.tablebase import Tablebases  # chess.syzygy only when tables are wanted
            self._wait_search()
            self.tablebases = Tablebases(self.params.syzygy_path, self.say) if self.params.syzygy_path else None
            self.tree.clear()  # proven results depend on the tables
        elif option.attr == "clear_tree":
            self._wait_search()
            self.tree.forget_everything()
            if self.loader.ready:
                self.loader.evaluator.clear()
        elif option.attr == "chess960" and self.board.chess960 != self.params.chess960:
            # Castling is written differently: the position and tree start afresh in the new mode.
            self._wait_search()
            self.tree = Tree()
            start = self.line.states[0].copy(stack=False)
            start.chess960 = self.params.chess960
            self._restart_line(start)

    def cmd_ucinewgame(self, _: str) -> None:
        self._wait_search()
        self.time_manager.new_game()
        self.tree.forget_everything()
        self._restart_line(self.line.states[0])
        if self.loader.ready:
            self.loader.evaluator.clear()

    def cmd_position(self, arg: str) -> None:
        tokens = arg.split()
        if not tokens:
            self.say("position expects startpos or fen <fen>")
            return
        chess960 = self.params.chess960
        end = tokens.index("moves") if "moves" in tokens else len(tokens)
        base, texts = (chess960, *tokens[:end]), tokens[end + 1:]
        line = self.line if self.line.extends(base, texts) else None
        if line is None:
            if tokens[0] == "startpos":
                board, rest = chess.Board(chess960=chess960), tokens[1:]
            elif tokens[0] == "fen":
                fen = " ".join(tokens[1:end])
                try:
                    board = chess.Board(fen, chess960=chess960)
                except ValueError as e:
                    self.say(f"invalid FEN '{fen}': {e}")
                    return
                status = board.status()
                repaired = [flag for flag in LENIENT if status & flag]
                for flag in repaired:
                    LENIENT[flag](board)
                if board.status() & ~(chess.STATUS_TOO_MANY_CHECKERS | chess.STATUS_IMPOSSIBLE_CHECK):
                    self.say(f"invalid position '{fen}': {position_problems(status)}")
                    return
                for flag in repaired:
                    self.say(f"position: ignoring {POSITION_PROBLEMS[flag]} (playing {board.fen()})")
                rest = tokens[end:]
            else:
                self.say(f"position expects startpos or fen, got '{tokens[0]}'")
                return
            if rest and rest[0] != "moves":
                self.say(f"position: expected 'moves', got '{rest[0]}'")
                return
            line = GameLine(base, board)
        try:
            line = line.extended(texts)
        except ValueError as e:
            self.say(f"{e}; position unchanged")
            return
        self._wait_search()
        self._set_position(line)

    def cmd_go(self, arg: str) -> None:
        received = time.monotonic()  # the clock runs from here, whatever the engine still has to do
        if self.searching():
            self.say("go during a search: stopping the running search first")
        self._wait_search()
        limits = self._parse_go(arg.split())
        limits.received = received
        self.loader.start()  # the search thread waits for it, so stop, isready and quit are read meanwhile
        self.job = SearchJob(lambda job: self._run_search(job, limits))
        self.job.thread.start()

    def cmd_stop(self, _: str) -> None:
        self._wait_search()

    def cmd_ponderhit(self, _: str) -> None:
        if self.job is not None and self.job.running:
            self.job.ponderhit_event.set()

    def cmd_quit(self, _: str) -> bool:
        self._quit()
        return False

    def cmd_d(self, _: str) -> None:
        for row in str(self.board).splitlines():
            self.send(row)
        self.send(f"Fen: {self.board.fen()}")
        self.send(f"Key: {chess.polyglot.zobrist_hash(self.board):016X}")
        checkers = " ".join(chess.square_name(s) for s in self.board.checkers())
        self.send(f"Checkers: {checkers}")

    def cmd_bench(self, arg: str) -> None:
        """``bench [N]``: speed on fixed positions; ``bench game [N]``: speed of short searches on a
        reused tree, move after move of a self-play game; ``bench memory [N]``: bytes per tree node;
        ``bench phases [N]``: the bench's time per node, by phase of the search."""
        from .bench import run_bench, run_game_bench, run_memory_bench
        from .bench_phases import run_phase_bench
        self._wait_search()
        tokens = arg.split()
        runs = {"memory": run_memory_bench, "game": run_game_bench, "phases": run_phase_bench}
        run = runs.get(tokens[0], run_bench) if tokens else run_bench
        count = tokens[1:] if run is not run_bench else tokens
        try:
            simulations = int(count[0]) if count else None
            if len(count) > 1 or (simulations is not None and simulations <= 0):
                raise ValueError
        except ValueError:
            self.say(f"bench expects [game|memory|phases] and a positive number of simulations, got '{arg}'")
            return
        self.loader.wait()
        evaluator, pipeline = self.loader.evaluator, self.loader.pipeline
        if run in (run_bench, run_game_bench):
            pipeline.wait_ready()
            run(evaluator, self.params, self.send, simulations, pipeline)
        else:
            run(evaluator, self.params, self.send, simulations)

    # ----------------------------------------------------------------- helpers

    def searching(self) -> bool:
        """True from ``go`` until that search's ``bestmove`` has been sent."""
        return self.job is not None and self.job.running

    def _wait_search(self) -> None:
        """Stop a running search (it prints its bestmove) and join its thread; afterwards idle."""
        if self.job is not None:
            self.job.stop_and_join()
            self.job = None

    def _quit(self) -> None:
        if self.job is not None:
            self.job.stop_and_join(timeout=1.0)
        if self.loader.pipeline is not None and not self.searching():
            self.loader.pipeline.close()  # the workers exit with their pipes
        with self.out_lock:
            self.out.flush()
        if self.log is not None:
            self.log.close()
            self.log = None

    def _set_position(self, line: GameLine) -> None:
        self.reused = self.tree.set_position(line.states[0].fen(), line.states, line.moves)
        # Only once the tree agrees, so a failure keeps the old position whole.
        self.board, self.line = line.board, line

    def _restart_line(self, start: chess.Board) -> None:
        """Set the position ``start``, which no later ``position`` command extends."""
        self._set_position(GameLine(None, start))

    def _open_log(self, path: str) -> None:
        if self.log is not None:
            self.log.close()
            self.log = None
        if path:
            try:
                self.log = open(path, "a", encoding="utf-8")
            except OSError as e:
                self.say(f"cannot open log file '{path}': {e}")

    def _parse_go(self, tokens: list[str]) -> Limits:
        limits = Limits()
        i = 0
        while i < len(tokens):
            token = tokens[i]
            if token in GO_INT_ARGS:
                try:
                    value = min(int(tokens[i + 1]), GO_INT_MAX)
                    setattr(limits, token, max(value, 0) if token not in ("wtime", "btime") else max(value, -GO_INT_MAX))
                    i += 2
                except (IndexError, ValueError):
                    self.say(f"go: '{token}' needs an integer")
                    i += 1
                    continue
            elif token in ("infinite", "ponder"):
                setattr(limits, token, True)
                i += 1
            elif token == "searchmoves":
                i += 1
                while i < len(tokens) and tokens[i] not in GO_INT_ARGS | {"infinite", "ponder"}:
                    try:
                        move = parse_move(self.board, tokens[i])
                        if not move:   # '0000': python-chess's null move, which 'position' may play but no search can
                            raise ValueError(tokens[i])
                        limits.searchmoves.append(move)
                    except ValueError:
                        self.say(f"go searchmoves: ignoring illegal move '{tokens[i]}'")
                    i += 1
            else:
                self.say(f"go: ignoring unknown token '{token}'")
                i += 1
        return limits

    def _run_search(self, job: SearchJob, limits: Limits) -> None:
        """The search thread: wait for the evaluator, search, then send exactly one bestmove, whatever happens."""
        try:
            if not self.loader.wait(job.stop_event):
                self.send(self._bestmove_before_loading(limits))
                return
            search, limits, level = self._make_search(job, limits)
            if self.reused:
                self.say(f"reused {self.reused} visits from the previous search")
                self.reused = 0
            self.send(self._search_to_bestmove(search, limits, level))
        except Exception as e:  # never leave a go without a bestmove
            self.say(f"search failed: {type(e).__name__}: {e}")
            moves = list(self.board.legal_moves)
            self.send(f"bestmove {moves[0].uci() if moves else '0000'}")
        finally:
            job.answered.set()

    def _make_search(self, job: SearchJob, limits: Limits) -> tuple[Search, Limits, Optional[Level]]:
        """The search of ``job`` with the loaded evaluator, and the limits and level of ``UCI_LimitStrength``."""
        loader = self.loader
        if loader.problem:
            self.say(f"Evaluator=network: {loader.problem}; playing with the heuristic")
        params, level = self.params, None
        if params.limit_strength:
            level = level_for(params.uci_elo, loader.evaluator.name)
            limits, params = limited(limits, params, level)
        search = Search(self.tree, loader.evaluator, params,
                        on_info=self._send_lines, on_string=self.say, tablebases=self.tablebases,
                        time_manager=self.time_manager, pipeline=loader.pipeline,
                        stop_event=job.stop_event, ponderhit_event=job.ponderhit_event)
        return search, limits, level

    def _bestmove_before_loading(self, limits: Limits) -> str:
        """``stop`` came before the evaluator was loaded: a move chosen without a search, at once."""
        from ..evaluators.heuristic import move_without_search
        move = move_without_search(self.board, limits.searchmoves or None)
        self.say("stopped before the evaluator was loaded: a move chosen by the heuristic evaluator, one ply deep")
        return f"bestmove {move.uci() if move else '0000'}"

    def _search_to_bestmove(self, search: Search, limits: Limits, level: Optional[Level] = None) -> str:
        """Run the search and return its ``bestmove`` line, waiting first where UCI says so. At a limited
        strength (``level``) the move is drawn from the search's visits, and never sent at once on a clock."""
        began = limits.received if limits.received is not None else time.monotonic()
        best, ponder = search.run(limits)
        if level is not None and best is not None:
            if level.temperature > 0:  # at 0 the search's own choice stands (a proven mate before more visits)
                stats = search.move_stats()
                pick = stats[choose(stats, level.temperature, self.rng, self.tree.root_node.v)].move
                if pick != best:
                    best, ponder = pick, None
            planned = search.planned_seconds()
            # Full strength (no visit limit) keeps the search's own timing, so the top UCI_Elo is the unlimited engine.
            if planned is not None and level.visits is not None and not (limits.infinite or limits.ponder):
                search.stop_event.wait(min(MIN_THINK_SECONDS, planned) - (time.monotonic() - began))
        if best is None:
            # Game over: mated or stalemated. Wait as UCI asks when pondering or infinite.
            checkmated = self.board.is_checkmate()
            self.say("no legal moves: " + ("checkmate" if checkmated else "stalemate"))
            self.send("info depth 0 score " + ("mate 0" if checkmated else "cp 0"))
            if limits.infinite or limits.ponder:
                self._hold_bestmove(search, limits)
            return "bestmove 0000"
        if limits.infinite or (limits.ponder and not search.ponderhit_event.is_set()):
            self._hold_bestmove(search, limits)
        if self.params.verbose_move_stats:
            self._send_move_stats(search)
        return f"bestmove {best.uci()}" + (f" ponder {ponder.uci()}" if ponder else "")

    @staticmethod
    def _hold_bestmove(search: Search, limits: Limits) -> None:
        """UCI: no bestmove before stop (or ponderhit) even if the search ended early."""
        while not search.stop_event.wait(0.02):
            if limits.ponder and not limits.infinite and search.ponderhit_event.is_set():
                return

    def _send_lines(self, lines: list[LineInfo]) -> None:
        for info in lines:
            score = f"mate {info.mate}" if info.mate is not None else f"cp {q_to_cp(info.q)}"
            wdl = " wdl {} {} {}".format(*info.wdl) if self.params.show_wdl else ""
            pv = " ".join(m.uci() for m in info.pv)
            tbhits = f" tbhits {info.tbhits}" if self.tablebases is not None and self.tablebases.loaded else ""
            self.send(f"info depth {info.depth} seldepth {info.seldepth} time {info.time_ms} "
                      f"nodes {info.nodes} score {score}{wdl} nps {info.nps}{tbhits} multipv {info.multipv} pv {pv}")

    def _send_move_stats(self, search: Search) -> None:
        """lc0's VerboseMoveStats layout, worst move first, then the root node itself."""
        from ..evaluators.lc0_policy import policy_index
        for s in search.move_stats():
            q = s.q if s.q is not None else 0.0
            d = s.d if s.d is not None else 0.0
            v = f"{s.value:7.4f}" if s.value is not None else " -.----"
            if s.proven is not None:
                v = "T"
            self.say(f"{s.move.uci():<5} ({policy_index(self.board, s.move):<4}) N: {s.n:7d} (+{s.in_flight:2d}) "
                     f"(P: {s.prior * 100:5.2f}%) (WL: {q:8.5f}) (D: {d:5.3f}) (M: {0.0:4.1f}) "
                     f"(Q: {q:8.5f}) (U: {s.u:7.5f}) (S: {q + s.u:8.5f}) (V: {v}) ")
        root = self.tree.root_node
        v = f"{root.v:7.4f}" if root.v is not None else " -.----"
        q = -root.w / root.n if root.n else 0.0
        d = root.d / root.n if root.n else 0.0
        self.say(f"node  ({root.edge_count():4d}) N: {root.n:7d} (+{root.in_flight:2d}) "
                 f"(P: {root.visited_policy() * 100:5.2f}%) (WL: {q:8.5f}) "
                 f"(D: {d:5.3f}) (M: {0.0:4.1f}) (Q: {q:8.5f}) (V: {v}) ")


def main() -> None:
    sys.setswitchinterval(0.001)  # the input thread must get the GIL quickly to answer stop
    try:  # a stray non-UTF-8 byte from a GUI must become a bad line, not end the input loop
        sys.stdin.reconfigure(errors="replace")
    except (AttributeError, ValueError):  # not a TextIOWrapper (embedded use)
        pass
    engine = UciEngine()
    try:
        engine.loop(sys.stdin)
    except KeyboardInterrupt:
        pass
    finally:
        sys.stdout.flush()
        os._exit(0)  # do not wait for onnxruntime or evaluator threads

