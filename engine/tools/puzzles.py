"""``arbor puzzles``: score any UCI engine on EPD test suites and Lichess-format puzzle files.

* **EPD** (``bm``/``am``/``id``): a position is solved when the engine's final move is one of the
  ``bm`` moves and none of the ``am`` moves. For each solved position the tool records when the
  engine first settled on a right move: the first ``info`` line from which on every reported
  principal variation starts with a right move (its time, nodes and depth). STS files also get
  their points score from the ``c8``/``c9`` opcodes; ids of the form ``Group.001`` are summed
  per group.
* **Lichess CSV** (``PuzzleId,FEN,Moves,Rating,RatingDeviation,Popularity,NbPlays,Themes,...``):
  the first move of ``Moves`` is the opponent's and is played first; then the engine must find
  each of its own moves in turn, the opponent's replies being given. As on Lichess, any move that
  mates at once also solves the puzzle. The summary gives the solve rate by rating band and by
  theme.

The engine is any UCI command (``--engine``), by default Arbor itself as a subprocess. It is
driven through python-chess's :mod:`chess.engine`; ``--threads K`` runs K engine processes on
K puzzles at once.

Chess960: a position whose castling rights exist only in Chess960 (X-FEN or Shredder-FEN), or
every position with ``--chess960``, is a Chess960 board; python-chess then switches the engine's
``UCI_Chess960`` on for it and castling moves are king-takes-rook (``e1h1``). An engine that does
not declare ``UCI_Chess960`` fails such positions without being asked.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import csv
import json
import logging
import math
import os
import queue
import shlex
import subprocess
import sys
import threading
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Optional, Sequence

import chess
import chess.engine

from .match import needs_chess960, read_epd

__all__ = [
    "Puzzle", "PuzzleResult", "PuzzleEngineFailure", "Settled", "load_epd", "load_lichess_csv", "load_puzzles",
    "make_limit", "open_engine", "solve_puzzle", "run_puzzles", "summarize", "format_summary",
    "format_failures", "write_results", "format_score", "main",
]

KILL_GRACE = 1.0  # seconds after 'stop' before an engine that does not answer is killed


# ----------------------------------------------------------------------------------------------
# Puzzles
# ----------------------------------------------------------------------------------------------

@dataclass
class Puzzle:
    """One test position.

    ``board`` is the position the engine moves in first; for a Lichess puzzle the opponent's
    first move is already on its move stack (so the engine sees it in ``position ... moves``).
    ``solution`` (Lichess) holds the moves from there on: the engine's at even indices, the
    opponent's replies at odd ones.
    """
    id: str
    board: chess.Board
    kind: str                                   # "epd" or "lichess"
    best: list[chess.Move] = field(default_factory=list)
    avoid: list[chess.Move] = field(default_factory=list)
    solution: list[chess.Move] = field(default_factory=list)
    rating: Optional[int] = None
    themes: list[str] = field(default_factory=list)
    points: dict[str, int] = field(default_factory=dict)   # STS: UCI move -> points
    line: int = 0

    @property
    def group(self) -> str:
        """EPD ids like ``STS(v1.0) Undermine.001`` -> ``STS(v1.0) Undermine``."""
        head, sep, tail = self.id.rpartition(".")
        return head if sep and tail.isdigit() else ""

    def expected_text(self) -> str:
        """The expected answer for reports: ``bm Qg6`` / ``am Nxe5`` / the Lichess line."""
        if self.kind == "lichess":
            board = self.board.copy()
            sans = []
            for move in self.solution:
                sans.append(board.san(move))
                board.push(move)
            return " ".join(sans)
        parts = []
        if self.best:
            parts.append("bm " + " ".join(self.board.san(m) for m in self.best))
        if self.avoid:
            parts.append("am " + " ".join(self.board.san(m) for m in self.avoid))
        return "; ".join(parts)


def load_epd(path: str | os.PathLike, chess960: bool = False) -> list[Puzzle]:
    """Positions with ``bm`` and/or ``am`` from an EPD file (others are skipped).

    A position is Chess960 when ``chess960`` is set or its castling rights need it.
    Raises ValueError naming the line of a malformed record.
    """
    puzzles = []
    with open(path, encoding="utf-8-sig", errors="replace") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            try:
                # The variant first: the SAN of bm/am (O-O) is read on a board of that variant.
                board, ops = read_epd(line, chess960 or needs_chess960(line))
            except ValueError as e:
                raise ValueError(f"{path}:{number}: {e}") from None
            best = list(ops.get("bm", []) or [])
            avoid = list(ops.get("am", []) or [])
            if not best and not avoid:
                continue
            points: dict[str, int] = {}
            if "c8" in ops and "c9" in ops:
                try:
                    values = [int(x) for x in str(ops["c8"]).split()]
                    moves = str(ops["c9"]).split()
                    if len(values) == len(moves):
                        points = {chess.Move.from_uci(m).uci(): v for m, v in zip(moves, values)}
                except ValueError:
                    points = {}
            puzzles.append(Puzzle(str(ops.get("id", f"line {number}")), board, "epd", best, avoid,
                                  points=points, line=number))
    return puzzles


LICHESS_COLUMNS = ["PuzzleId", "FEN", "Moves", "Rating", "RatingDeviation", "Popularity",
                   "NbPlays", "Themes", "GameUrl", "OpeningTags"]


def load_lichess_csv(path: str | os.PathLike, chess960: bool = False) -> list[Puzzle]:
    """Puzzles in the Lichess puzzle-database format (header row optional).

    A position is Chess960 (its moves' castling king-takes-rook) when ``chess960`` is set or its
    castling rights need it. Raises ValueError naming the line of a malformed record (bad FEN,
    illegal move, ...).
    """
    puzzles = []
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.reader(f)
        columns = {name: i for i, name in enumerate(LICHESS_COLUMNS)}
        for row in reader:
            number = reader.line_num
            if not row or not "".join(row).strip() or row[0].startswith("#"):
                continue
            if row[0].strip() == "PuzzleId":
                columns = {name.strip(): i for i, name in enumerate(row)}
                continue
            try:
                def col(name: str) -> str:
                    i = columns.get(name)
                    return row[i].strip() if i is not None and i < len(row) else ""
                fen = col("FEN")
                board = chess.Board(fen, chess960=chess960 or needs_chess960(fen))
                moves_text = col("Moves").split()
                if len(moves_text) < 2:
                    raise ValueError("Moves needs the opponent's move and at least one reply")
                line = []
                probe = board.copy()
                for uci in moves_text:
                    move = chess.Move.from_uci(uci)
                    if move not in probe.legal_moves:
                        raise ValueError(f"illegal move {uci} in {probe.fen()}")
                    probe.push(move)
                    line.append(move)
                board.push(line[0])
                rating = col("Rating")
                puzzles.append(Puzzle(col("PuzzleId") or f"line {number}", board, "lichess",
                                      solution=line[1:],
                                      rating=int(rating) if rating.lstrip("-").isdigit() else None,
                                      themes=col("Themes").split(), line=number))
            except ValueError as e:
                raise ValueError(f"{path}:{number}: {e}") from None
    return puzzles


def load_puzzles(path: str | os.PathLike, chess960: bool = False) -> list[Puzzle]:
    """By file name: ``.csv`` is a Lichess puzzle file, anything else EPD."""
    if str(path).lower().endswith(".csv"):
        return load_lichess_csv(path, chess960)
    return load_epd(path, chess960)


# ----------------------------------------------------------------------------------------------
# Solving
# ----------------------------------------------------------------------------------------------

@dataclass
class Settled:
    """When the engine settled on a right move for good (from its ``info`` lines)."""
    time: Optional[float]     # seconds, as the engine reported (else measured by the tool)
    nodes: Optional[int]
    depth: Optional[int]


@dataclass
class PuzzleResult:
    id: str
    kind: str
    fen: str                              # the position the engine moved in first
    expected: str
    solved: bool
    engine_move: Optional[str] = None     # SAN of the (last) move the engine played
    engine_move_uci: Optional[str] = None
    score: Optional[str] = None           # the engine's last score, from its own side
    depth: Optional[int] = None
    nodes: Optional[int] = None
    time: Optional[float] = None          # seconds of the (last) search, measured by the tool
    settled: Optional[Settled] = None     # EPD, solved only
    step: Optional[int] = None            # Lichess: the engine move (1-based) where it failed
    steps: int = 1                        # Lichess: engine moves in the solution
    found: int = 0                        # Lichess: engine moves found
    rating: Optional[int] = None
    themes: list[str] = field(default_factory=list)
    group: str = ""
    points: Optional[int] = None          # STS points, when the suite has them
    max_points: Optional[int] = None
    error: Optional[str] = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        settled = d.pop("settled")
        for key in ("time", "nodes", "depth"):
            d[f"settled_{key}"] = settled[key] if settled else None
        for key in ("time", "settled_time"):
            if d[key] is not None:
                d[key] = round(d[key], 4)
        return d


def format_score(score: Optional[chess.engine.Score]) -> Optional[str]:
    """``+1.23``, ``-0.40``, ``#3``, ``#-2`` (from the side to move)."""
    if score is None:
        return None
    if score.is_mate():
        return f"#{score.mate()}"
    return f"{score.score() / 100:+.2f}"


def make_limit(movetime_ms: Optional[int] = None, nodes: Optional[int] = None,
               depth: Optional[int] = None) -> chess.engine.Limit:
    """A search limit; 1 s per position when nothing is given."""
    if nodes is not None:
        return chess.engine.Limit(nodes=nodes)
    if depth is not None:
        return chess.engine.Limit(depth=depth)
    return chess.engine.Limit(time=(movetime_ms if movetime_ms is not None else 1000) / 1000.0)


def _default_timeout(limit: chess.engine.Limit) -> float:
    return limit.time + 10.0 if limit.time is not None else 300.0


def open_engine(cmd: Optional[Sequence[str]] = None, options: Sequence[tuple[str, str]] = (),
                *, startup_timeout: float = 60.0, debug: bool = False) -> chess.engine.SimpleEngine:
    """Start a UCI engine (default: Arbor) and set its options.

    Raises chess.engine.EngineError with a readable message on an unknown option or bad value.
    """
    from .match import _default_engine_env, default_engine_command
    env = None
    if cmd is None:
        cmd, env = default_engine_command(), _default_engine_env()
    kwargs: dict[str, Any] = {"stderr": None if debug else subprocess.DEVNULL}
    if env is not None:
        kwargs["env"] = env
    try:
        engine = chess.engine.SimpleEngine.popen_uci(list(cmd), timeout=startup_timeout, **kwargs)
    except (OSError, chess.engine.EngineError, TimeoutError, asyncio.TimeoutError) as e:
        raise chess.engine.EngineError(f"cannot start engine {shlex.join(cmd)}: {e or type(e).__name__}") from None
    def on_loop_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        # python-chess reports an unparsable bestmove (an illegal move) here and then never
        # finishes the search: remember why and close the engine, so the search ends at once.
        exc = context.get("exception")
        engine.arbor_failure = str(exc) if exc else str(context.get("message", "protocol error"))
        engine.close()

    engine.arbor_failure = None
    engine.protocol.loop.call_soon_threadsafe(engine.protocol.loop.set_exception_handler, on_loop_error)
    try:
        config: dict[str, Any] = {}
        for name, value in options:
            declared = engine.options.get(name)
            if declared is not None and declared.type == "check":
                config[name] = value.strip().lower() in ("true", "1", "yes", "on")
            else:
                config[name] = value
        if config:
            engine.configure(config)
    except BaseException:
        engine.close()
        raise
    return engine


def _watched_search(engine: chess.engine.SimpleEngine, board: chess.Board, limit: chess.engine.Limit,
                    game: object, timeout: float) -> tuple[Optional[chess.Move], list[tuple[float, dict]], float]:
    """Run one search, collecting (arrival time, info) for every info line.

    After ``timeout`` seconds the search is stopped, and KILL_GRACE seconds later the engine is
    closed (which makes python-chess raise EngineTerminatedError here).
    """
    infos: list[tuple[float, dict]] = []
    start = time.monotonic()
    killed = threading.Event()

    def kill() -> None:
        killed.set()
        engine.close()

    analysis = engine.analysis(board, limit, game=game)
    stopper = threading.Timer(timeout, analysis.stop)
    killer = threading.Timer(timeout + KILL_GRACE, kill)
    stopper.daemon = killer.daemon = True
    stopper.start()
    killer.start()
    try:
        for info in analysis:
            infos.append((time.monotonic() - start, dict(info)))
        best = analysis.wait()
    except (chess.engine.EngineError, concurrent.futures.CancelledError):
        failure = getattr(engine, "arbor_failure", None)
        if failure:
            raise chess.engine.EngineError(failure) from None
        if killed.is_set():
            raise chess.engine.EngineError(
                f"no bestmove {timeout + KILL_GRACE:g} s after go; engine killed") from None
        if engine.returncode.done():
            raise chess.engine.EngineError(
                f"engine process died (exit code {engine.returncode.result()})") from None
        raise
    finally:
        stopper.cancel()
        killer.cancel()
    elapsed = time.monotonic() - start
    return best.move, infos, elapsed


def _last(infos: list[tuple[float, dict]], key: str) -> Any:
    for _, info in reversed(infos):
        if info.get("multipv", 1) == 1 and key in info:
            return info[key]
    return None


def _settled(infos: list[tuple[float, dict]], right: Callable[[chess.Move], bool]) -> Optional[Settled]:
    """The first info line from which on every PV starts with a right move."""
    pvs = [(t, info) for t, info in infos if info.get("multipv", 1) == 1 and info.get("pv")]
    if not pvs or not right(pvs[-1][1]["pv"][0]):
        return None
    i = len(pvs) - 1
    while i > 0 and right(pvs[i - 1][1]["pv"][0]):
        i -= 1
    t, info = pvs[i]
    return Settled(info.get("time", t), info.get("nodes"), info.get("depth"))


class PuzzleEngineFailure(chess.engine.EngineError):
    """The engine crashed, hung or broke the protocol during a puzzle; ``result`` is the failed
    result so far (with ``error`` and, for Lichess puzzles, ``step`` set)."""

    def __init__(self, result: PuzzleResult) -> None:
        super().__init__(result.error)
        self.result = result


def solve_puzzle(engine: chess.engine.SimpleEngine, puzzle: Puzzle, limit: chess.engine.Limit,
                 timeout: Optional[float] = None) -> PuzzleResult:
    """Let the engine try one puzzle.

    Raises :class:`PuzzleEngineFailure` when the engine fails (the caller restarts it).
    """
    timeout = timeout if timeout is not None else _default_timeout(limit)
    res = PuzzleResult(puzzle.id, puzzle.kind, puzzle.board.fen(), puzzle.expected_text(), False,
                       rating=puzzle.rating, themes=list(puzzle.themes), group=puzzle.group)
    if puzzle.kind == "lichess":
        res.steps = (len(puzzle.solution) + 1) // 2
    if puzzle.points:
        res.points, res.max_points = 0, max(puzzle.points.values())
    if puzzle.board.chess960 and "UCI_Chess960" not in engine.options:
        # python-chess would refuse the position; the engine is fine for the standard ones.
        res.error = "engine does not declare UCI_Chess960"
        return res
    try:
        return _solve(engine, puzzle, limit, timeout, res)
    except (chess.engine.EngineError, TimeoutError, asyncio.TimeoutError) as e:
        res.solved = False
        res.error = f"engine failure: {e or type(e).__name__}"
        raise PuzzleEngineFailure(res) from e


def _solve(engine: chess.engine.SimpleEngine, puzzle: Puzzle, limit: chess.engine.Limit,
           timeout: float, res: PuzzleResult) -> PuzzleResult:
    board = puzzle.board.copy()
    game_key = object()  # a fresh key makes python-chess send ucinewgame

    def search(b: chess.Board) -> tuple[Optional[chess.Move], list[tuple[float, dict]]]:
        move, infos, elapsed = _watched_search(engine, b, limit, game_key, timeout)
        score = _last(infos, "score")
        res.score = format_score(score.relative) if score is not None else None
        res.depth, res.nodes, res.time = _last(infos, "depth"), _last(infos, "nodes"), elapsed
        res.engine_move_uci = move.uci() if move else None
        res.engine_move = b.san(move) if move and move in b.legal_moves else (move.uci() if move else None)
        return move, infos

    if puzzle.kind == "epd":
        def right(m: chess.Move) -> bool:
            return (not puzzle.best or m in puzzle.best) and m not in puzzle.avoid
        move, infos = search(board)
        if move is not None and move not in board.legal_moves:
            res.error = f"illegal move {move.uci()}"
        res.solved = move is not None and move in board.legal_moves and right(move)
        if res.solved:
            res.settled = _settled(infos, right)
        if puzzle.points:
            res.points = puzzle.points.get(move.uci(), 0) if move else 0
        return res

    for i in range(0, len(puzzle.solution), 2):
        expected = puzzle.solution[i]
        step = res.step = i // 2 + 1   # where it failed, should the engine fail here
        move, _ = search(board)
        if move is None or move not in board.legal_moves:
            res.step = step
            res.error = f"illegal move {move.uci()}" if move else "no move"
            return res
        if move != expected:
            board.push(move)
            mate = board.is_checkmate()
            board.pop()
            if not mate:
                res.step = step
                res.expected = board.san(expected) + (f" (move {step} of {res.steps}: "
                                                      f"{puzzle.expected_text()})" if res.steps > 1 else "")
                return res
            res.found, res.solved, res.step = step, True, None   # any mate in one solves it
            return res
        res.found = step
        board.push(move)
        if i + 1 < len(puzzle.solution):
            board.push(puzzle.solution[i + 1])
    res.solved, res.step = True, None
    return res


def run_puzzles(puzzles: Sequence[Puzzle], *, engine_cmd: Optional[Sequence[str]] = None,
                options: Sequence[tuple[str, str]] = (), limit: Optional[chess.engine.Limit] = None,
                threads: int = 1, timeout: Optional[float] = None, startup_timeout: float = 60.0,
                progress: bool = False, debug: bool = False,
                on_result: Optional[Callable[[PuzzleResult], None]] = None) -> list[PuzzleResult]:
    """Run the puzzles on ``threads`` engine processes; results come back in the input order.

    An engine that crashes or hangs on a puzzle is restarted, and that puzzle counts as failed
    with ``error`` set. Raises chess.engine.EngineError if an engine cannot be started.
    """
    limit = limit or make_limit()
    threads = max(1, min(threads, len(puzzles) or 1))
    results: list[Optional[PuzzleResult]] = [None] * len(puzzles)
    todo: "queue.Queue[int]" = queue.Queue()
    for i in range(len(puzzles)):
        todo.put(i)
    lock = threading.Lock()
    errors: list[BaseException] = []

    def start() -> chess.engine.SimpleEngine:
        return open_engine(engine_cmd, options, startup_timeout=startup_timeout, debug=debug)

    engines = [start()]  # the first one here, so that start-up errors surface at once

    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=len(puzzles), desc="puzzles", unit="pos", file=sys.stderr, dynamic_ncols=True)
    solved = [0]

    def worker(k: int) -> None:
        engine = None
        try:
            engine = engines[0] if k == 0 else start()
            while not errors:
                try:
                    i = todo.get_nowait()
                except queue.Empty:
                    return
                puzzle = puzzles[i]
                try:
                    r = solve_puzzle(engine, puzzle, limit, timeout)
                except PuzzleEngineFailure as e:
                    r = e.result
                    engine.close()
                    engine = start()
                results[i] = r
                with lock:
                    solved[0] += r.solved
                    if bar is not None:
                        bar.update(1)
                        bar.set_postfix_str(f"solved {solved[0]}")
                    if on_result:
                        on_result(r)
        except BaseException as e:  # start-up failure of a further engine, or interrupt
            with lock:
                errors.append(e)
        finally:
            if engine is not None:
                try:
                    engine.quit()
                except Exception:
                    pass
                engine.close()

    workers = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(threads)]
    try:
        for w in workers:
            w.start()
        for w in workers:
            while w.is_alive():
                w.join(0.2)
    except KeyboardInterrupt:
        errors.append(KeyboardInterrupt())
        for w in workers:
            w.join(KILL_GRACE + 1)
        raise
    finally:
        if bar is not None:
            bar.close()
    if errors:
        raise errors[0]
    return [r for r in results if r is not None]


# ----------------------------------------------------------------------------------------------
# Reports
# ----------------------------------------------------------------------------------------------

def _rate(solved: int, total: int) -> dict[str, Any]:
    return {"solved": solved, "total": total, "rate": solved / total if total else None}


def rating_band(rating: Optional[int], width: int = 200) -> str:
    if rating is None:
        return "unrated"
    low = (rating // width) * width
    return f"{low}-{low + width - 1}"


def summarize(results: Sequence[PuzzleResult], band_width: int = 200) -> dict[str, Any]:
    """Solved/total overall, and by rating band, theme and EPD id group where those exist."""
    total = len(results)
    solved = sum(r.solved for r in results)
    summary: dict[str, Any] = {"overall": _rate(solved, total)}

    def grouped(keys: Callable[[PuzzleResult], list[str]], order: Callable) -> dict[str, Any]:
        counts: dict[str, list[int]] = {}
        for r in results:
            for key in keys(r):
                c = counts.setdefault(key, [0, 0])
                c[0] += r.solved
                c[1] += 1
        return OrderedDict((k, _rate(*counts[k])) for k in sorted(counts, key=lambda k: order(k, counts[k])))

    if any(r.kind == "lichess" for r in results):
        def band_key(k: str, c: list[int]) -> float:
            return math.inf if k == "unrated" else int(k.split("-")[0])
        summary["by_rating"] = grouped(lambda r: [rating_band(r.rating, band_width)], band_key)
        summary["by_theme"] = grouped(lambda r: r.themes, lambda k, c: (-c[1], k))
    groups = {r.group for r in results if r.group}
    if len(groups) > 1:
        summary["by_group"] = grouped(lambda r: [r.group] if r.group else [], lambda k, c: k)
    with_points = [r for r in results if r.max_points is not None]
    if with_points:
        summary["points"] = {"points": sum(r.points or 0 for r in with_points),
                             "max": sum(r.max_points or 0 for r in with_points)}
    settled = [r.settled for r in results if r.settled is not None]
    times = sorted(s.time for s in settled if s.time is not None)
    if times:
        summary["settled_time_median"] = times[len(times) // 2]
    return summary


def _pct(d: dict[str, Any]) -> str:
    rate = d["rate"]
    return f"{d['solved']}/{d['total']}" + (f" ({100 * rate:.1f} %)" if rate is not None else "")


def format_summary(summary: dict[str, Any], max_themes: int = 30) -> str:
    lines = [f"Solved: {_pct(summary['overall'])}"]
    if "points" in summary:
        p = summary["points"]
        lines.append(f"Points: {p['points']}/{p['max']}"
                     + (f" ({100 * p['points'] / p['max']:.1f} %)" if p["max"] else ""))
    if "settled_time_median" in summary:
        lines.append(f"Median time to settle on a solution: {summary['settled_time_median']:.3f} s")
    for key, title, limit_rows in (("by_rating", "By rating", None), ("by_theme", "By theme", max_themes),
                                   ("by_group", "By group", None)):
        if key in summary and summary[key]:
            lines.append(f"{title}:")
            items = list(summary[key].items())
            for name, d in items[:limit_rows] if limit_rows else items:
                lines.append(f"  {name:<28} {_pct(d)}")
            if limit_rows and len(items) > limit_rows:
                lines.append(f"  ... {len(items) - limit_rows} more themes in the results file")
    return "\n".join(lines)


def format_failures(results: Sequence[PuzzleResult], limit: Optional[int] = None) -> str:
    failures = [r for r in results if not r.solved]
    lines = []
    for r in failures[:limit] if limit is not None else failures:
        where = f" move {r.step}/{r.steps}" if r.kind == "lichess" and r.step else ""
        rating = f" [{r.rating}]" if r.rating is not None else ""
        played = r.engine_move or "-"
        score = f", score {r.score}" if r.score is not None else ""
        err = f" ({r.error})" if r.error else ""
        lines.append(f"  {r.id}{rating}{where}: expected {r.expected}; engine played {played}{score}{err}")
    if limit is not None and len(failures) > limit:
        lines.append(f"  ... {len(failures) - limit} more")
    return "\n".join(lines)


def write_results(results: Sequence[PuzzleResult], path: str | os.PathLike,
                  summary: Optional[dict[str, Any]] = None) -> None:
    """``.csv``: one row per puzzle; anything else: JSON ``{"summary": ..., "results": [...]}``."""
    rows = [r.to_dict() for r in results]
    if str(path).lower().endswith(".csv"):
        fields = list(rows[0].keys()) if rows else list(PuzzleResult("", "", "", "", False).to_dict())
        with open(path, "w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=fields)
            writer.writeheader()
            for row in rows:
                row["themes"] = " ".join(row["themes"])
                writer.writerow(row)
    else:
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"summary": summary if summary is not None else summarize(results),
                       "results": rows}, f, indent=1)
            f.write("\n")


# ----------------------------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="arbor puzzles",
        description="Score a UCI engine (Arbor by default) on an EPD suite or a Lichess puzzle CSV.",
        epilog="examples: arbor puzzles wac.epd --movetime 1000 --threads 2 --output wac.json; "
               "arbor puzzles puzzles.csv --engine stockfish --nodes 100000")
    p.add_argument("file", help="EPD file (bm/am/id) or Lichess puzzle CSV (.csv)")
    p.add_argument("--engine", metavar="CMD", help="UCI engine command line (default: Arbor)")
    limit = p.add_mutually_exclusive_group()
    limit.add_argument("--movetime", type=int, metavar="MS", help="time per search (default 1000)")
    limit.add_argument("--nodes", type=int, metavar="N", help="nodes per search (go nodes)")
    limit.add_argument("--depth", type=int, metavar="D", help="depth per search (go depth)")
    p.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                   help="UCI option for the engine (repeatable)")
    p.add_argument("--threads", type=int, default=1, metavar="K",
                   help="engine processes working on puzzles at once (default 1)")
    p.add_argument("--limit", type=int, metavar="N", help="only the first N puzzles")
    p.add_argument("--chess960", action="store_true",
                   help="treat every position as Chess960 (castling king-takes-rook, UCI_Chess960 on); "
                        "without it only positions whose castling rights need Chess960 are")
    p.add_argument("--output", metavar="FILE", help="results file: .csv, else JSON")
    p.add_argument("--band-width", type=int, default=200, help="rating band width (default 200)")
    p.add_argument("--max-failures", type=int, metavar="N", help="list at most N failures")
    p.add_argument("--timeout", type=float, metavar="SEC",
                   help="stop (then kill) a search running this long "
                        "(default: movetime + 10 s, or 300 s with --nodes/--depth)")
    p.add_argument("--startup-timeout", type=float, default=60.0, metavar="SEC")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--debug", action="store_true", help="show the engine's stderr")
    return p


def main(argv: Optional[list[str]] = None) -> int:
    """Entry point of ``arbor puzzles``; returns the exit status."""
    from .match import parse_option
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.debug:  # python-chess logs every protocol slip of a broken engine
        logging.getLogger("chess.engine").setLevel(logging.CRITICAL)
    for name, value in (("--movetime", args.movetime), ("--nodes", args.nodes), ("--depth", args.depth),
                        ("--threads", args.threads), ("--band-width", args.band_width)):
        if value is not None and value <= 0:
            parser.error(f"{name} must be positive")
    try:
        options = [parse_option(o) for o in args.option]
        puzzles = load_puzzles(args.file, args.chess960)
    except (ValueError, OSError) as e:
        parser.error(str(e))
    if args.limit is not None:
        puzzles = puzzles[:args.limit]
    if not puzzles:
        print(f"arbor puzzles: no puzzles in {args.file}", file=sys.stderr)
        return 1
    limit = make_limit(args.movetime, args.nodes, args.depth)
    cmd = shlex.split(args.engine) if args.engine else None
    try:
        results = run_puzzles(puzzles, engine_cmd=cmd, options=options, limit=limit,
                              threads=args.threads, timeout=args.timeout,
                              startup_timeout=args.startup_timeout,
                              progress=not args.no_progress, debug=args.debug)
    except chess.engine.EngineError as e:
        print(f"arbor puzzles: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    summary = summarize(results, args.band_width)
    failures = format_failures(results, args.max_failures)
    if failures:
        print("Failures:")
        print(failures)
    print(format_summary(summary))
    if args.output:
        write_results(results, args.output, summary)
        print(f"Results written to {args.output}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
