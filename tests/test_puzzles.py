"""``arbor puzzles``: loading EPD and Lichess CSV, scoring (bm/am, multi-move lines, alternative
mates), the moment an engine settles on a solution, reports, results files, engine failures and
the command line. Engines are the scripted fake of tests/fake_engines; Stockfish and Arbor are
used when available."""

from __future__ import annotations

import csv
import json
import shlex
import shutil
import sys
import time
from pathlib import Path

import chess
import pytest

from engine.tools import puzzles as P

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
EPD = DATA / "puzzles.epd"
CSV = DATA / "puzzles.csv"
FAKE = [sys.executable, str(HERE / "fake_engines" / "fake_uci.py")]
FAST = P.make_limit(movetime_ms=50)
STOCKFISH = shutil.which("stockfish") or shutil.which("/usr/games/stockfish")


def key(board: chess.Board) -> str:
    return " ".join(board.fen().split()[:4])


def book_engine(tmp_path: Path, book: dict[str, list[str]]) -> list[tuple[str, str]]:
    path = tmp_path / "book.json"
    path.write_text(json.dumps(book))
    return [("Strategy", "book"), ("BookFile", str(path))]


def by_id(items):
    return {x.id: x for x in items}


# -- loading ------------------------------------------------------------------------------------

def test_load_epd():
    ps = by_id(P.load_epd(EPD))
    assert list(ps) == ["Mate.001", "Mate.002", "Tactic.001", "Mate.003", "Tactic.002"]
    assert [m.uci() for m in ps["Mate.003"].best] == ["d1d8", "e1e8"]
    assert [m.uci() for m in ps["Tactic.001"].avoid] == ["f3f6"] and not ps["Tactic.001"].best
    assert ps["Tactic.002"].points == {"b5c7": 10, "d1f3": 3}
    assert ps["Mate.001"].group == "Mate" and ps["Tactic.002"].expected_text() == "bm Nc7+"


def test_load_lichess_csv():
    ps = by_id(P.load_lichess_csv(CSV))
    p = ps["arb01"]
    # The opponent's move is already played; the engine (White) is to move.
    assert p.board.turn == chess.WHITE and p.board.peek().uci() == "b6b2"
    assert [m.uci() for m in p.solution] == ["d5g8", "f8g8", "h6f7"]
    assert p.rating == 1650 and "smotheredMate" in p.themes
    assert p.expected_text() == "Qg8+ Rxg8 Nf7#"
    assert ps["arb02"].board.turn == chess.BLACK  # the mirrored puzzle: Black solves


def test_load_errors(tmp_path: Path):
    bad = tmp_path / "bad.csv"
    bad.write_text("x1,8/8/8/8/8/8/8/8 w - - 0 1,e2e4 e7e5,1000,1,1,1,t,,\n")
    with pytest.raises(ValueError, match="bad.csv:1"):
        P.load_lichess_csv(bad)
    bad.write_text("x1,6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1,a1a8,1000,1,1,1,t,,\n")
    with pytest.raises(ValueError, match="at least one reply"):
        P.load_lichess_csv(bad)
    bad_epd = tmp_path / "bad.epd"
    bad_epd.write_text("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - bm Qh7; id \"x\";\n")
    with pytest.raises(ValueError, match="bad.epd:1"):
        P.load_epd(bad_epd)
    # A header-less file and positions without bm/am are accepted / skipped.
    ok = tmp_path / "plain.epd"
    ok.write_text("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - id \"no answer\";\n")
    assert P.load_epd(ok) == []


# -- scoring with a scripted engine -----------------------------------------------------------------

def test_epd_scoring_and_settling(tmp_path: Path):
    ps = by_id(P.load_epd(EPD))
    book = {
        # Changes its mind: wrong at depth 1, right from depth 2 -> settles at depth 2.
        key(ps["Mate.001"].board): ["a1a2", "a1a8", "a1a8"],
        # Right, wrong, right again -> settles only at depth 3.
        key(ps["Mate.002"].board): ["d5g8", "h6f7", "d5g8"],
        key(ps["Tactic.001"].board): ["f3f6"],             # the move to avoid
        key(ps["Mate.003"].board): ["e1e8"],               # the second of two bm moves
        key(ps["Tactic.002"].board): ["d1f3"],             # a wrong move worth 3 STS points
    }
    results = by_id(P.run_puzzles(list(ps.values()), engine_cmd=FAKE, options=book_engine(tmp_path, book),
                                  limit=FAST))
    r = results["Mate.001"]
    assert r.solved and r.engine_move == "Ra8#" and r.score == "#1"
    assert (r.settled.depth, r.settled.nodes, r.settled.time) == (2, 200, pytest.approx(0.02))
    assert results["Mate.002"].solved and results["Mate.002"].settled.depth == 3
    assert not results["Tactic.001"].solved and results["Tactic.001"].engine_move == "Qxf6"
    assert results["Tactic.001"].settled is None
    assert results["Mate.003"].solved
    t2 = results["Tactic.002"]
    assert not t2.solved and (t2.points, t2.max_points) == (3, 10) and t2.score == "-1.00"

    summary = P.summarize(list(results.values()))
    assert summary["overall"] == {"solved": 3, "total": 5, "rate": 0.6}
    assert summary["by_group"]["Mate"]["solved"] == 3 and summary["by_group"]["Tactic"]["solved"] == 0
    assert summary["points"] == {"points": 3, "max": 10}
    text = P.format_failures(list(results.values()))
    assert "Tactic.001: expected am Qxf6; engine played Qxf6, score +3.00" in text
    assert "Tactic.002: expected bm Nc7+; engine played Qf3" in text
    assert "Mate.001" not in text


def test_lichess_lines_alternative_mates_and_failures(tmp_path: Path):
    ps = by_id(P.load_lichess_csv(CSV))

    def positions(p: P.Puzzle) -> list[chess.Board]:
        """The positions where the engine is to move."""
        b, out = p.board.copy(), []
        for i, m in enumerate(p.solution):
            if i % 2 == 0:
                out.append(b.copy())
            b.push(m)
        return out

    a1, a2, a3, a4 = (positions(ps[k]) for k in ("arb01", "arb02", "arb03", "arb04"))
    book = {
        key(a1[0]): ["d5g8"], key(a1[1]): ["h6f7"],   # the whole line: solved
        key(a2[0]): ["d4g1"], key(a2[1]): ["h3g1"],   # right first move, then a wrong one (Nxg1)
        key(a3[0]): ["e1e8"],                        # Re8# instead of the listed Rd8#: also mate
        key(a4[0]): ["b5c7"], key(a4[1]): ["c7a8"],   # fork, then a knight move that takes nothing
    }
    results = by_id(P.run_puzzles(list(ps.values()), engine_cmd=FAKE, options=book_engine(tmp_path, book),
                                  limit=FAST, threads=2))
    assert results["arb01"].solved and results["arb01"].found == 2 and results["arb01"].engine_move == "Nf7#"
    r = results["arb02"]
    assert not r.solved and (r.step, r.steps, r.found) == (2, 2, 1)
    assert r.engine_move == "Nxg1" and r.expected.startswith("Nf2#")
    assert results["arb03"].solved and results["arb03"].engine_move == "Re8#"
    r4 = results["arb04"]
    assert not r4.solved and r4.step == 2 and r4.engine_move == "Na8"

    summary = P.summarize(list(results.values()))
    assert summary["overall"]["solved"] == 2
    assert summary["by_rating"] == {
        "800-999": {"solved": 1, "total": 1, "rate": 1.0},
        "1200-1399": {"solved": 0, "total": 1, "rate": 0.0},
        "1600-1799": {"solved": 1, "total": 2, "rate": 0.5},
    }
    assert list(summary["by_rating"]) == ["800-999", "1200-1399", "1600-1799"]
    assert summary["by_theme"]["smotheredMate"] == {"solved": 1, "total": 2, "rate": 0.5}
    assert list(summary["by_theme"])[0] == "mate"  # most frequent first
    report = P.format_summary(summary)
    assert "Solved: 2/4 (50.0 %)" in report and "By rating:" in report and "By theme:" in report
    failures = P.format_failures(list(results.values()))
    assert "arb02 [1700] move 2/2: expected Nf2# (move 2 of 2: Qg1+ Rxg1 Nf2#); engine played Nxg1" in failures


def test_results_files(tmp_path: Path):
    ps = P.load_epd(EPD)[:2]
    results = P.run_puzzles(ps, engine_cmd=FAKE, options=[("Strategy", "greedy")], limit=FAST)
    assert [r.solved for r in results] == [True, False]  # greedy finds the mate in one only
    P.write_results(results, tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["summary"]["overall"]["solved"] == 1
    assert data["results"][0]["id"] == "Mate.001" and data["results"][0]["settled_depth"] == 1
    P.write_results(results, tmp_path / "r.csv")
    rows = list(csv.DictReader(open(tmp_path / "r.csv")))
    assert [r["id"] for r in rows] == ["Mate.001", "Mate.002"] and rows[0]["solved"] == "True"
    assert rows[1]["engine_move"] and rows[1]["expected"] == "bm Qg8+"


# -- engine failures ----------------------------------------------------------------------------

def test_engine_failures_are_reported_and_engine_restarted():
    ps = P.load_epd(EPD)[:2]
    for options, message in (([("CrashAfter", "1")], "died"),
                             ([("IllegalAfter", "1")], "illegal uci: 'a1h8'"),
                             ([("MoveDelay", "3000")], "engine killed")):
        start = time.monotonic()
        results = P.run_puzzles(ps, engine_cmd=FAKE, options=options, limit=FAST, timeout=0.2)
        assert [r.solved for r in results] == [False, False]
        assert all(message in (r.error or "") for r in results), [r.error for r in results]
        assert time.monotonic() - start < 8


def test_engine_start_errors():
    with pytest.raises(P.chess.engine.EngineError, match="cannot start"):
        P.run_puzzles(P.load_epd(EPD)[:1], engine_cmd=["/nonexistent/engine"])
    with pytest.raises(P.chess.engine.EngineError, match="NoSuchOption"):
        P.run_puzzles(P.load_epd(EPD)[:1], engine_cmd=FAKE, options=[("NoSuchOption", "1")])


# -- Chess960 ------------------------------------------------------------------------------------

FAKE960 = [sys.executable, str(HERE / "fake_engines" / "fake_uci960.py"), "Fake960"]
# Only a-side castling mates: king b1 -> c1, rook a1 -> d1 checks down the open d-file.
MATE960 = "2b1b3/2pkp3/8/6N1/1N6/8/8/RK6 w Q -"


def write_960_puzzles(tmp_path: Path) -> tuple[Path, Path]:
    epd = tmp_path / "960.epd"
    epd.write_text(f'{MATE960} bm O-O-O; id "960.xfen";\n'
                   f'{MATE960.replace(" Q ", " A ")} bm O-O-O#; id "960.shredder";\n'
                   '6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - bm Ra8#; id "standard";\n')
    lichess = tmp_path / "960.csv"
    lichess.write_text("c960,4b3/2pkp3/b7/6N1/1N6/8/8/RK6 b Q - 0 1,a6c8 b1a1,1500,75,90,100,mate mateIn1,,\n")
    return epd, lichess


def test_load_chess960_puzzles(tmp_path: Path):
    epd, lichess = write_960_puzzles(tmp_path)
    ps = P.load_epd(epd)
    assert [p.board.chess960 for p in ps] == [True, True, False]
    # bm O-O-O is read on the Chess960 board: king takes rook.
    assert ps[0].best == ps[1].best == [chess.Move(chess.B1, chess.A1)]
    assert ps[0].board == ps[1].board == chess.Board(MATE960, chess960=True)   # castling rights kept
    assert ps[0].expected_text() == "bm O-O-O#"
    assert all(p.board.chess960 for p in P.load_epd(epd, chess960=True))
    (c,) = P.load_lichess_csv(lichess)
    assert c.board.chess960 and c.board.peek().uci() == "a6c8" and c.solution == [chess.Move(chess.B1, chess.A1)]
    assert c.expected_text() == "O-O-O#"


def test_chess960_puzzles_with_and_without_uci_chess960(tmp_path: Path):
    epd, lichess = write_960_puzzles(tmp_path)
    ps = P.load_epd(epd) + P.load_lichess_csv(lichess)
    castler = [("Strategy", "castle"), ("CastleSide", "a")]
    results = P.run_puzzles(ps, engine_cmd=FAKE960, options=castler, limit=FAST)
    assert [r.solved for r in results] == [True] * 4, [(r.id, r.engine_move, r.error) for r in results]
    assert results[0].engine_move == "O-O-O#" and results[0].engine_move_uci == "b1a1"
    # An engine without UCI_Chess960 fails the 960 positions, without a restart, and solves the others.
    results = P.run_puzzles(ps, engine_cmd=FAKE960 + ["no960"], options=castler, limit=FAST)
    assert [r.solved for r in results] == [False, False, True, False]
    assert all(r.error == "engine does not declare UCI_Chess960" for r in results if not r.solved)


def test_main_chess960_flag(tmp_path: Path, capsys):
    epd = tmp_path / "std.epd"
    epd.write_text('r3k3/8/8/8/8/8/8/4K2R w Kq - bm O-O; id "castle";\n')
    args = [str(epd), "--engine", shlex.join(FAKE960), "--option", "Strategy=castle", "--movetime", "50",
            "--no-progress"]
    # Standard: bm O-O is e1g1, the engine (standard mode) answers e1g1. Chess960: both are e1h1.
    assert P.main(args) == 0 and "Solved: 1/1" in capsys.readouterr().out
    assert P.main(args + ["--chess960"]) == 0 and "Solved: 1/1" in capsys.readouterr().out
    assert P.load_epd(epd, chess960=True)[0].best == [chess.Move(chess.E1, chess.H1)]


# -- command line ---------------------------------------------------------------------------------

def test_main_epd(tmp_path: Path, capsys):
    out_file = tmp_path / "out.json"
    rc = P.main([str(EPD), "--engine", shlex.join(FAKE), "--option", "Strategy=greedy",
                 "--movetime", "50", "--threads", "2", "--output", str(out_file), "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "Solved: 2/5 (40.0 %)" in out and "Failures:" in out and "By group:" in out
    assert "Median time to settle" in out
    assert json.loads(out_file.read_text())["summary"]["overall"]["total"] == 5


def test_main_csv_limit(tmp_path: Path, capsys):
    rc = P.main([str(CSV), "--engine", shlex.join(FAKE), "--option", "Strategy=greedy", "--nodes", "10",
                 "--limit", "3", "--output", str(tmp_path / "o.csv"), "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0
    # Greedy only finds arb03's mate in one (the sacrifices of arb01/02 are not greedy moves).
    assert "Solved: 1/3 (33.3 %)" in out and "800-999" in out
    assert len(list(csv.DictReader(open(tmp_path / "o.csv")))) == 3


def test_main_errors(tmp_path: Path, capsys):
    assert P.main([str(EPD), "--engine", "/nonexistent/engine", "--no-progress"]) == 1
    assert "cannot start" in capsys.readouterr().err
    for bad in ([str(tmp_path / "missing.epd")], [str(EPD), "--movetime", "0"],
                [str(EPD), "--movetime", "10", "--nodes", "5"], [str(EPD), "--option", "x"]):
        with pytest.raises(SystemExit) as e:
            P.main(bad)
        assert e.value.code == 2


# -- real engines -----------------------------------------------------------------------------------

@pytest.mark.skipif(STOCKFISH is None, reason="stockfish is not installed (apt-get install stockfish)")
def test_stockfish_solves_the_hand_written_puzzles():
    """Checks the test data itself: a strong engine solves every puzzle, multi-move lines included."""
    ps = P.load_epd(EPD) + P.load_lichess_csv(CSV)
    results = P.run_puzzles(ps, engine_cmd=[STOCKFISH], limit=P.make_limit(nodes=200_000), threads=2)
    assert [r.id for r in results if not r.solved] == []
    assert all(r.settled is not None for r in results if r.kind == "epd")


@pytest.mark.slow
def test_arbor_default_engine(tmp_path: Path):
    """The default engine is Arbor as a subprocess; it must at least find the mates in one."""
    ps = [p for p in P.load_epd(EPD) if p.id in ("Mate.001", "Mate.003")]
    results = P.run_puzzles(ps, limit=P.make_limit(movetime_ms=500))
    assert all(r.error is None for r in results), [r.error for r in results]
    assert all(r.solved for r in results), [(r.id, r.engine_move) for r in results]
