"""``arbor calibrate``: measure the strength table (engine/search/strength.py) on Stockfish 15.1's ``UCI_Elo`` scale.

``arbor calibrate measure`` plays every row of the table of the evaluator in use (or the ``--rows`` named): a row
at 1350 or more against Stockfish limited to the row's Elo, a row below against the next row up (Arbor against
Arbor). Each row's measured Elo is its opponent's Elo plus the match's Elo difference, so the rows below 1350 hang
from the row above (as measured in the same run, else as labelled). It prints the rows measured, to put into
``LEVELS``. A match's openings are shuffled by ``--seed`` plus its row's Elo, so one row measured alone plays the
games it plays in a full run.

``arbor calibrate verify`` plays Arbor at ``UCI_Elo=X`` against Stockfish at ``UCI_Elo=X`` for each level X (10 s
+ 0.1 s, one thread each, varied openings) and prints the table of docs/strength.md: a calibrated level scores
between 35% and 65%.

``arbor calibrate mistakes GAMES.pgn`` counts, for each player of the games, the moves that lost 200 centipawns
or more by Stockfish's own evaluation at depth 12: whether a limited Arbor's mistakes look like a weakened
Stockfish's (as many, as crude), not only whether it scores the same.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

import chess
import chess.engine
import chess.pgn

from ..search.strength import LEVELS, Level
from .elo import elo_difference, format_elo, score
from .match import EngineSpec, MatchConfig, load_openings, parse_tc, run_match

STOCKFISH_ELO_MIN, STOCKFISH_ELO_MAX = 1350, 2850  # Stockfish 15.1's UCI_Elo range
OPENINGS = Path(__file__).resolve().parents[2] / "tests" / "data" / "openings.pgn"


def _arbor(elo: Optional[int], evaluator_options: Sequence[tuple[str, str]]) -> EngineSpec:
    """Arbor limited to ``elo``, or at full strength for None."""
    options = list(evaluator_options) + [("Threads", "1")]
    if elo is not None:
        options += [("UCI_LimitStrength", "true"), ("UCI_Elo", str(elo))]
    return EngineSpec.from_command(None, f"Arbor {elo}" if elo is not None else "Arbor", options)


def stockfish_options(elo: int) -> list[tuple[str, str]]:
    """Stockfish limited to ``elo`` as the scale is measured: one thread, a small hash. The training rounds' yardstick
    (``nets/training/round.py``) plays it so too, so that its figures read on the same scale."""
    return [("UCI_LimitStrength", "true"), ("UCI_Elo", str(elo)), ("Threads", "1"), ("Hash", "16")]


def _stockfish(command: str, elo: int) -> EngineSpec:
    return EngineSpec.from_command(command, f"Stockfish {elo}", stockfish_options(elo))


def _play(one: EngineSpec, two: EngineSpec, args: argparse.Namespace, seed: int) -> tuple[int, int, int]:
    openings = load_openings(args.openings) if args.openings else []
    random.Random(seed).shuffle(openings)
    result = run_match(MatchConfig(one, two, games=args.games, tc=parse_tc(args.tc), openings=openings,
                                   concurrency=args.concurrency, pgn_path=args.pgn and f"{args.pgn}-{seed}.pgn",
                                   event="Arbor calibration"))
    if result.error:
        raise RuntimeError(result.error)
    return result.wins, result.draws, result.losses


def _row(label: str, opponent: str, wdl: tuple[int, int, int], elo: Optional[float] = None) -> str:
    diff, margin = elo_difference(*wdl)
    measured = f" | {elo:.0f}" if elo is not None else ""
    return (f"| {label} | {opponent} | {sum(wdl)} | {wdl[0]}-{wdl[1]}-{wdl[2]} ({score(*wdl):.1%}) | "
            f"{format_elo(diff, margin)}{measured} |")


def measure(levels: Sequence[Level], args: argparse.Namespace, evaluator_options: list[tuple[str, str]],
            rows: Optional[set[int]] = None) -> None:
    """Play the rows of ``levels`` (those named in ``rows``, or all) and print what each measured. A row below 1350
    hangs from the row above: from its measurement in this run, or else from its label (its calibrated Elo)."""
    measured: dict[int, float] = {}
    wanted = (lambda level: True) if rows is None else (lambda level: level.elo in rows)
    print("| setting | opponent | games | W-D-L (score) | Elo difference | measured Elo |\n| --- | --- | --- | --- | --- | --- |")
    for level in levels:
        if level.elo < STOCKFISH_ELO_MIN or not wanted(level):
            continue
        opponent = min(level.elo, STOCKFISH_ELO_MAX)
        wdl = _play(_arbor(None if level.visits is None else level.elo, evaluator_options),
                    _stockfish(args.stockfish, opponent), args, args.seed + level.elo)
        measured[level.elo] = opponent + elo_difference(*wdl)[0]
        print(_row(_describe(level), f"Stockfish UCI_Elo {opponent}", wdl, measured[level.elo]), flush=True)
    for level, above in reversed(list(zip(levels, levels[1:]))):
        if level.elo >= STOCKFISH_ELO_MIN or not wanted(level):
            continue
        wdl = _play(_arbor(level.elo, evaluator_options), _arbor(above.elo, evaluator_options), args,
                    args.seed + level.elo)
        measured[level.elo] = measured.get(above.elo, above.elo) + elo_difference(*wdl)[0]
        print(_row(_describe(level), f"Arbor {_describe(above)}", wdl, measured[level.elo]), flush=True)
    print("\nRows for engine/search/strength.py's LEVELS (elo: as measured):")
    for level in levels:
        if level.elo in measured:
            print(f"        Level({measured[level.elo]:.0f}, {level.visits}, {level.temperature}"
                  f"{', probe=True' if level.probe else ''}),")


def verify(levels: Sequence[int], args: argparse.Namespace, evaluator_options: list[tuple[str, str]]) -> None:
    print("| UCI_Elo | opponent | games | W-D-L (score) | Elo difference |\n| --- | --- | --- | --- | --- |")
    for elo in levels:
        wdl = _play(_arbor(elo, evaluator_options), _stockfish(args.stockfish, elo), args, args.seed + elo)
        print(_row(str(elo), f"Stockfish UCI_Elo {elo}", wdl), flush=True)


# Evaluations are capped, as lichess caps them for its average centipawn loss: going from +1500 to +1200 in a won
# position is no mistake, and a mate found or missed counts as the cap.
EVAL_CAP = 1000
MISTAKE_CP = 200
MISTAKE_DEPTH = 12


def _capped(board: chess.Board, analyse: Callable[[chess.Board], chess.engine.PovScore]) -> int:
    """The position's value for the side to move in centipawns, within +/- ``EVAL_CAP``; a finished game by the
    rules."""
    outcome = board.outcome(claim_draw=False)
    if outcome is not None:
        return 0 if outcome.winner is None else (EVAL_CAP if outcome.winner == board.turn else -EVAL_CAP)
    cp = analyse(board).pov(board.turn).score(mate_score=100_000)
    return max(-EVAL_CAP, min(EVAL_CAP, cp))


def move_losses(game: chess.pgn.Game, analyse: Callable[[chess.Board], chess.engine.PovScore]) -> list[int]:
    """Centipawns each move of ``game`` gave away (0 or more), in the order played: the mover's value before the
    move less its value after it, both capped."""
    board = game.board()
    before = _capped(board, analyse)
    losses = []
    for move in game.mainline_moves():
        board.push(move)
        after = _capped(board, analyse)   # the opponent's view
        losses.append(max(0, before + after))
        before = after
    return losses


@dataclass
class Mistakes:
    """One player's tally over the games read."""

    games: int = 0
    moves: int = 0
    mistakes: int = 0       # moves that lost MISTAKE_CP or more
    lost: int = 0           # centipawns lost in all

    def row(self, name: str) -> str:
        acpl = self.lost / self.moves if self.moves else 0.0
        per_100 = 100 * self.mistakes / self.moves if self.moves else 0.0
        return f"| {name} | {self.games} | {self.moves} | {self.mistakes} | {per_100:.1f} | {acpl:.0f} |"


def count_mistakes(pgn_path: str, analyse: Callable[[chess.Board], chess.engine.PovScore],
                   games: Optional[int] = None) -> dict[str, Mistakes]:
    """Each player's moves and mistakes over the first ``games`` games of ``pgn_path`` (all by default)."""
    tally: dict[str, Mistakes] = {}
    with open(pgn_path, encoding="utf-8", errors="replace") as handle:
        read = 0
        while games is None or read < games:
            game = chess.pgn.read_game(handle)
            if game is None:
                break
            read += 1
            names = {chess.WHITE: game.headers.get("White", "White"), chess.BLACK: game.headers.get("Black", "Black")}
            for name in names.values():
                tally.setdefault(name, Mistakes()).games += 1
            turn = game.board().turn
            for loss in move_losses(game, analyse):
                mover = tally[names[turn]]
                mover.moves += 1
                mover.lost += loss
                mover.mistakes += loss >= MISTAKE_CP
                turn = not turn
    return tally


def mistakes(args: argparse.Namespace) -> int:
    if not Path(args.pgn_file).is_file():
        print(f"arbor calibrate mistakes: no PGN file '{args.pgn_file}'", file=sys.stderr)
        return 2
    with chess.engine.SimpleEngine.popen_uci(args.stockfish.split()) as engine:
        engine.configure({"Threads": 1, "Hash": 64})
        limit = chess.engine.Limit(depth=args.depth)
        tally = count_mistakes(args.pgn_file, lambda board: engine.analyse(board, limit)["score"], args.first)
    print(f"Moves that lost {MISTAKE_CP} cp or more by Stockfish at depth {args.depth} (evaluations capped at "
          f"+/- {EVAL_CAP} cp)\n\n| player | games | moves | mistakes | per 100 moves | average cp loss |\n"
          "| --- | --- | --- | --- | --- | --- |")
    for name, mine in tally.items():
        print(mine.row(name))
    return 0


def _describe(level: Level) -> str:
    if level.visits is None:
        return "full strength"
    return f"{level.visits} visits, T {level.temperature:g}" + (", probe" if level.probe else "")


def _elos(text: str) -> set[int]:
    """``--levels``/``--rows``: Elo figures separated by commas."""
    try:
        return {int(x) for x in text.split(",") if x.strip()}
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected Elo figures separated by commas, got '{text}'") from None


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="arbor calibrate", description=__doc__.split("\n\n")[0])
    parser.add_argument("step", choices=["measure", "verify", "mistakes"])
    parser.add_argument("pgn_file", nargs="?", help="mistakes: the games to look at")
    parser.add_argument("--evaluator", choices=sorted(LEVELS), default="network",
                        help="the table to measure: network (the bundled net, WeightsFile's default) or heuristic")
    parser.add_argument("--levels", type=_elos, help="verify: the UCI_Elo levels, comma-separated, from 1350 up "
                        "(default: the table's rows from 1350 up, full strength included)")
    parser.add_argument("--rows", type=_elos,
                        help="measure: only these rows of the table, by their Elo, comma-separated (default: all)")
    parser.add_argument("--games", type=int, default=100, help="games a row or level (default 100)")
    parser.add_argument("--tc", default="10+0.1", help="time control (default 10+0.1)")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--stockfish", default=shutil.which("stockfish") or "/usr/games/stockfish",
                        help="Stockfish 15.1's command (default: on PATH, else Debian's /usr/games/stockfish)")
    parser.add_argument("--openings", default=str(OPENINGS) if OPENINGS.exists() else None)
    parser.add_argument("--seed", type=int, default=310000,
                        help="a match's openings are shuffled with this plus its level's Elo (default 310000)")
    parser.add_argument("--pgn", help="write each match's games to PGN-<seed>.pgn")
    parser.add_argument("--depth", type=int, default=MISTAKE_DEPTH, help="mistakes: Stockfish's depth (default 12)")
    parser.add_argument("--first", type=int, help="mistakes: only the first N games of the file")
    args = parser.parse_args(argv)
    if shutil.which(args.stockfish.split()[0]) is None:
        print(f"arbor calibrate: no Stockfish at '{args.stockfish}' (apt-get install stockfish)", file=sys.stderr)
        return 2
    if args.step == "mistakes":
        if not args.pgn_file:
            parser.error("mistakes needs a PGN file")
        return mistakes(args)
    evaluator_options = [("Evaluator", "heuristic")] if args.evaluator == "heuristic" else []
    table = LEVELS[args.evaluator]
    if args.step == "measure":
        unknown = sorted((args.rows or set()) - {level.elo for level in table})
        if unknown:
            print(f"arbor calibrate measure: no row {unknown[0]} in the {args.evaluator} table; its rows: "
                  f"{', '.join(str(level.elo) for level in table)}", file=sys.stderr)
            return 2
        measure(table, args, evaluator_options, args.rows)
    else:
        levels = (sorted(args.levels) if args.levels
                  else [level.elo for level in table if level.elo >= STOCKFISH_ELO_MIN])
        if levels[0] < STOCKFISH_ELO_MIN:
            print(f"arbor calibrate verify: Stockfish plays no weaker than {STOCKFISH_ELO_MIN}; the levels below are "
                  "measured against each other by 'arbor calibrate measure'", file=sys.stderr)
            return 2
        verify(levels, args, evaluator_options)
    return 0
