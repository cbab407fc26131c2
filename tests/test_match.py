"""``arbor match``: results, pairing, PGN, clocks, forfeits, crashes, illegal moves, adjudication,
SPRT stop, command line. Uses the fake UCI engine of tests/fake_engines; the Arbor match is slow."""

from __future__ import annotations

import io
import shlex
import sys
import time
from pathlib import Path

import chess
import chess.pgn
import pytest

from engine.evaluators.precision import cpu_description
from engine.tools import match
from engine.tools.match import (Adjudication, EngineSpec, MatchConfig, Opening, TimeControl, UciEngine, load_openings, parse_option, parse_tc, play_game, run_match)

HERE = Path(__file__).resolve().parent
FAKE = HERE / "fake_engines" / "fake_uci.py"
ROOT = HERE.parent


def fake_cmd(name: str) -> str:
    return shlex.join([sys.executable, str(FAKE), name])


def spec(name: str, **options: object) -> EngineSpec:
    return EngineSpec([sys.executable, str(FAKE), name], None, [(k, str(v)) for k, v in options.items()])


def read_pgn(path: Path) -> list[chess.pgn.Game]:
    games = []
    with open(path) as f:
        while (g := chess.pgn.read_game(f)) is not None:
            games.append(g)
    return games


@pytest.fixture
def openings_file(tmp_path: Path) -> Path:
    p = tmp_path / "openings.epd"
    p.write_text(
        "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1\n"
        "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - bm Bb5; id \"Ruy\";\n")
    return p


# -- parsing ----------------------------------------------------------------------------------

def test_parse_tc():
    assert parse_tc("10+0.1") == TimeControl(base=10.0, inc=0.1)
    assert parse_tc("40/60") == TimeControl(base=60.0, inc=0.0, moves=40)
    assert parse_tc("1:30+1") == TimeControl(base=90.0, inc=1.0)
    assert parse_tc("10+0.1").pgn_tag() == "10+0.1" and parse_tc("40/60").pgn_tag() == "40/60"
    for bad in ("", "abc", "10+", "0/10", "0+0"):
        with pytest.raises(ValueError):
            parse_tc(bad)


def test_parse_option():
    assert parse_option("Simulations=50") == ("Simulations", "50")
    assert parse_option("Weights File = a=b.onnx") == ("Weights File", "a=b.onnx")
    assert parse_option("Clear=") == ("Clear", "")
    with pytest.raises(ValueError):
        parse_option("NoEquals")


def test_load_openings(tmp_path: Path, openings_file: Path):
    ops = load_openings(openings_file)
    assert len(ops) == 2 and ops[1].name == "Ruy" and ops[0].board.turn == chess.BLACK
    pgn = tmp_path / "o.pgn"
    pgn.write_text('[Event "A"]\n\n1. e4 e5 2. Nf3 Nc6 *\n\n[Event "B"]\n\n1. d4 d5 *\n')
    ops = load_openings(pgn, plies=3)
    assert [len(o.board.move_stack) for o in ops] == [3, 2]
    assert ops[0].board.root() == chess.Board() and ops[0].name == "A"
    (tmp_path / "bad.epd").write_text("not a fen\n")
    with pytest.raises(ValueError, match="bad.epd:1"):
        load_openings(tmp_path / "bad.epd")


def test_bundled_opening_book():
    """The 50-opening book used for Arbor's published match figures: distinct, named, from the
    initial position, each 10 to 12 half-moves deep."""
    ops = load_openings(HERE / "data" / "openings.pgn")
    assert len(ops) == 50 and all(o.name for o in ops)
    assert len({o.board.epd() for o in ops}) == 50
    assert all(o.board.root() == chess.Board() and 10 <= len(o.board.move_stack) <= 12 for o in ops)
    assert not any(o.board.is_game_over() for o in ops)


# -- games --------------------------------------------------------------------------------------

def test_match_results_pairing_and_pgn(tmp_path: Path, openings_file: Path):
    pgn = tmp_path / "games.pgn"
    cfg = MatchConfig(spec("Greedy", Strategy="greedy"), spec("First"), games=4,
                      tc=parse_tc("5+0.05"), openings=load_openings(openings_file),
                      concurrency=2, pgn_path=str(pgn))
    seen = []
    res = run_match(cfg, on_game=lambda rec, r: seen.append(rec.number))
    assert sorted(seen) == [1, 2, 3, 4]
    assert res.name1 == "Greedy" and res.name2 == "First"
    assert res.wins + res.draws + res.losses == 4
    # The greedy engine (mates in one, takes the biggest piece) beats first-legal-move every time.
    assert res.wins == 4, [g.reason for g in res.games]
    games = read_pgn(pgn)
    assert len(games) == 4
    by_round = {int(g.headers["Round"]): g for g in games}
    for n, g in by_round.items():
        rec = res.games[n - 1]
        # Each opening twice, colours reversed.
        assert g.headers["White"] == ("Greedy" if n % 2 == 1 else "First")
        assert g.headers["FEN"] == load_openings(openings_file)[(n - 1) // 2].board.fen()
        assert g.headers["Result"] == rec.result and g.headers["Termination"] == "normal"
        assert g.headers["TimeControl"] == "5+0.05"
        assert g.headers["Site"] == cpu_description()   # the machine: an engine's speed turns on its CPU
        board = g.end().board()
        assert board.is_checkmate()
        assert rec.reason in ("White mates", "Black mates")
        assert rec.reason in g.end().comment
        # Clock and eval comments on every move; the clock never exceeds base + increments.
        for node in g.mainline():
            assert node.clock() is not None and 0 < node.clock() <= 5.0 + 0.05 * 200
            assert node.emt() is not None and node.eval() is not None
    assert "[%clk 0:00:0" in pgn.read_text()
    assert res.elo[0] == float("inf") and res.los > 0.95
    # Per-move figures for the summary: every move's time, and the nodes and nps of its last info line.
    for rec in res.games:
        assert {m.engine1 for m in rec.moves} == {True, False}
        assert len(rec.moves) == rec.plies
        assert all(m.nodes == 100 and m.nps == 10000 and 0 < m.seconds < 5 for m in rec.moves)
        assert set(rec.clock_left) == {True, False} and rec.forfeit is None
    lines = res.move_lines()
    assert [line.split(":")[0] for line in lines] == ["Greedy", "First"]
    assert all("median nodes 100, median nps 10000" in line and "time forfeits 0" in line for line in lines)


def test_time_forfeit_sleeping_engine(tmp_path: Path):
    """An engine that sleeps past its clock loses on time and is killed after a short grace."""
    cfg = MatchConfig(spec("Quick"), spec("Sleepy", MoveDelay=2500), games=2,
                      tc=parse_tc("0.4+0"), pgn_path=str(tmp_path / "t.pgn"))
    start = time.monotonic()
    res = run_match(cfg)
    assert time.monotonic() - start < 12
    assert (res.wins, res.draws, res.losses) == (2, 0, 0)
    for rec in res.games:
        loser = "White" if rec.white == "Sleepy" else "Black"
        assert rec.reason == f"{loser} loses on time" and rec.termination == "time forfeit"
    games = read_pgn(tmp_path / "t.pgn")
    assert {g.headers["Termination"] for g in games} == {"time forfeit"}
    assert all(rec.forfeit is False and rec.clock_left[False] == 0.0 for rec in res.games)
    assert res.move_lines()[1].endswith("median clock left at the end 0.00 s, time forfeits 2")


def test_late_move_is_a_forfeit_with_movetime():
    """A move that arrives after movetime + margin loses even though it does arrive."""
    white = UciEngine(spec("Slow", MoveDelay=300))
    black = UciEngine(spec("Fast"))
    try:
        rec = play_game(white, black, Opening(chess.Board()), TimeControl(movetime=0.1), timemargin=0.05)
        assert rec.result == "0-1" and rec.reason == "White loses on time"
        rec = play_game(white, black, Opening(chess.Board()), TimeControl(movetime=0.1), timemargin=1.0,
                        adjudication=Adjudication(maxmoves=2))
        assert rec.result == "1/2-1/2" and rec.termination == "adjudication" and rec.plies == 4
    finally:
        white.quit()
        black.quit()


def test_forfeit_against_bare_king_is_a_draw():
    white = UciEngine(spec("Sleepy", MoveDelay=1500))
    black = UciEngine(spec("Fast"))
    try:
        board = chess.Board("8/8/8/4k3/8/8/8/R3K3 w - - 0 1")
        rec = play_game(white, black, Opening(board), parse_tc("0.2+0"))
        assert rec.result == "1/2-1/2" and rec.termination == "time forfeit"
        assert "cannot mate" in rec.reason
    finally:
        white.quit()
        black.quit()


def test_illegal_move_loses(tmp_path: Path):
    cfg = MatchConfig(spec("Good"), spec("Cheat", IllegalAfter=2), games=2, tc=parse_tc("5+0"),
                      pgn_path=str(tmp_path / "i.pgn"))
    res = run_match(cfg)
    assert (res.wins, res.draws, res.losses) == (2, 0, 0)
    for rec in res.games:
        assert "makes an illegal move: a1h8" in rec.reason and rec.termination == "rules infraction"
    # The fake counts its 'go's since start: its 2nd move in game 1 (as Black), its 1st in game 2.
    assert [rec.plies for rec in res.games] == [3, 0]
    assert {g.headers["Termination"] for g in read_pgn(tmp_path / "i.pgn")} == {"rules infraction"}


def test_crashing_engine_loses_and_is_restarted():
    cfg = MatchConfig(spec("Crash", CrashAfter=3), spec("Good"), games=3, tc=parse_tc("5+0"))
    res = run_match(cfg)
    assert (res.wins, res.draws, res.losses) == (0, 0, 3)
    assert all("disconnects" in g.reason and g.termination == "abandoned" for g in res.games)


def test_unresponsive_engine_with_nodes_stalls():
    white = UciEngine(spec("Hang", MoveDelay=3000))
    black = UciEngine(spec("Fast"))
    try:
        rec = play_game(white, black, Opening(chess.Board()), TimeControl(nodes=100), hang_timeout=0.3)
        assert rec.result == "0-1" and rec.termination == "stalled connection"
        assert not white.alive  # killed after the grace period
    finally:
        white.quit()
        black.quit()


def test_rules_adjudication():
    w, b = UciEngine(spec("A", Strategy="greedy")), UciEngine(spec("B", Strategy="greedy"))
    try:
        # Bare kings: a draw before any move.
        rec = play_game(w, b, Opening(chess.Board("8/8/4k3/8/8/3K4/8/8 w - - 0 1")), parse_tc("5+0"))
        assert (rec.result, rec.reason, rec.plies) == ("1/2-1/2", "Draw by insufficient mating material", 0)
        # Stalemate already on the board.
        rec = play_game(w, b, Opening(chess.Board("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1")), parse_tc("5+0"))
        assert rec.reason == "Draw by stalemate"
        # Fifty-move rule: the halfmove clock is at 99; the first quiet move ends the game.
        rec = play_game(w, b, Opening(chess.Board("8/8/4k3/8/8/3K4/8/R6r w - - 99 80")), parse_tc("5+0"))
        assert rec.result == "1/2-1/2"
        assert rec.reason in ("Draw by fifty moves rule", "Draw by insufficient mating material")
    finally:
        w.quit()
        b.quit()


def test_resign_and_draw_adjudication():
    w, b = UciEngine(spec("Strong", Strategy="greedy")), UciEngine(spec("Weak", Strategy="greedy"))
    try:
        # White is a queen and a rook up: the fake engines' material scores make Black resign.
        board = chess.Board("4k3/pppp4/8/8/8/8/PPPP4/RQ2K3 w - - 0 1")
        rec = play_game(w, b, Opening(board), parse_tc("5+0"),
                        adjudication=Adjudication(resign_movecount=3, resign_score=500))
        assert (rec.result, rec.termination) == ("1-0", "adjudication")
        assert rec.reason == "Black resigns (adjudication)" and rec.plies == 6
        # Level material: both scores stay at 0, a draw once move 3 is reached and 2 moves each passed.
        board = chess.Board("r3k3/pppp4/8/8/8/8/PPPP4/R3K3 w - - 0 1")
        rec = play_game(w, b, Opening(board), parse_tc("5+0"),
                        adjudication=Adjudication(draw_movenumber=3, draw_movecount=2, draw_score=10))
        assert (rec.result, rec.termination) == ("1/2-1/2", "adjudication")
    finally:
        w.quit()
        b.quit()


def test_sprt_stops_the_match():
    # Opening 1 is won by the greedy engine, opening 2 (bare kings) drawn: 2 wins and 2 draws per
    # 4 games, which decides H1 of a 0..200 Elo test well before 40 games.
    ops = [Opening(chess.Board()), Opening(chess.Board("8/8/4k3/8/8/3K4/8/8 w - - 0 1"))]
    cfg = MatchConfig(spec("Greedy", Strategy="greedy"), spec("First"), games=40, tc=parse_tc("5+0"),
                      openings=ops, sprt=(0.0, 200.0))
    res = run_match(cfg)
    assert res.sprt is not None and res.sprt.decision == "H1"
    assert 4 <= res.played < 20
    assert res.losses == 0


def test_engine_that_cannot_start():
    cfg = MatchConfig(EngineSpec(["/nonexistent/engine"]), spec("B"), games=2)
    with pytest.raises(match.UciError, match="cannot start"):
        run_match(cfg)
    cfg = MatchConfig(EngineSpec([sys.executable, "-c", "print('hello')"]), spec("B"), games=2)
    with pytest.raises(match.UciError, match="exited before"):
        run_match(cfg)
    # A wrapper whose engine is missing (``taskset -c 1 stockfish`` off the PATH): its input is closed before
    # 'uci' is written, and the error says so instead of a broken pipe's traceback.
    gone = EngineSpec(["sh", "-c", "exec 0<&-; sleep 0.5"])
    with pytest.raises(match.UciError, match="exited before 'uciok'"):
        run_match(MatchConfig(gone, spec("B"), games=2))


def test_names_for_identical_engines():
    res = run_match(MatchConfig(spec("Same", Seed=1), spec("Same", Seed=2), games=1, tc=parse_tc("5+0")))
    assert (res.name1, res.name2) == ("Same (Seed=1)", "Same (Seed=2)")


# -- Chess960 ------------------------------------------------------------------------------------

FAKE960 = HERE / "fake_engines" / "fake_uci960.py"
POS0 = "bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR w KQkq - 0 1"   # Chess960 #0, X-FEN
POS97 = "bqnbrnkr/pppppppp/8/8/8/8/PPPPPPPP/BQNBRNKR w HEhe - 0 1"  # Chess960 #97, Shredder-FEN
# Castling at once on both wings: h-side with king and rook side by side (f1g1), a-side over three squares.
CASTLES = "1r3kr1/pppppppp/8/8/8/8/PPPPPPPP/1R3KR1 w GBgb - 0 1"


def spec960(name: str, *args: str, **options: object) -> EngineSpec:
    return EngineSpec([sys.executable, str(FAKE960), name, *args], None,
                      [(k, str(v)) for k, v in options.items()])


def sent(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def test_load_openings_chess960(tmp_path: Path):
    epd = tmp_path / "960.epd"
    epd.write_text(f"{POS0}\n{POS97}\n"
                   "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1\n"
                   'bqnbrnkr/pppppppp/8/8/8/8/PPPPPPPP/BQNBRNKR w HEhe - bm Ng3; id "knight";\n')
    ops = load_openings(epd)
    assert [o.board.chess960 for o in ops] == [True, True, False, True]
    assert ops[0].board == chess.Board.from_chess960_pos(0) and ops[1].board == chess.Board.from_chess960_pos(97)
    assert ops[3].name == "knight"
    # Standard lines stay standard boards, as before; --chess960 makes every opening Chess960.
    assert ops[2].board == chess.Board("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1")
    assert all(o.board.chess960 for o in load_openings(epd, chess960=True))
    # PGN: the Variant tag, or a FEN whose castling only Chess960 has; castling is stored king-takes-rook.
    pgn = tmp_path / "960.pgn"
    pgn.write_text(f'[Event "tagged"]\n[Variant "Chess960"]\n[SetUp "1"]\n[FEN "{POS97}"]\n\n'
                   "1. Ng3 Ng6 2. O-O O-O *\n\n"
                   f'[Event "untagged"]\n[SetUp "1"]\n[FEN "{POS0}"]\n\n1. f4 f5 2. Rf2 Rf7 3. O-O *\n\n'
                   '[Event "standard"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bc4 Bc5 4. O-O *\n')
    ops = load_openings(pgn)
    assert [o.board.chess960 for o in ops] == [True, True, False]
    assert [m.uci() for m in ops[0].board.move_stack][2:] == ["g1h1", "g8h8"]
    assert ops[1].board.move_stack[-1].uci() == "g1h1"
    assert ops[2].board.move_stack[-1].uci() == "e1g1"
    # Forced Chess960 on a standard game: its castling becomes king-takes-rook.
    assert load_openings(pgn, chess960=True)[2].board.move_stack[-1].uci() == "e1h1"


def test_chess960_game_switches_uci_chess960_and_writes_variant(tmp_path: Path):
    """A 960 opening: UCI_Chess960 is switched on before the game, castling (both wings) is sent and
    judged king-takes-rook, and the PGN says Variant Chess960; a standard game afterwards switches it off."""
    logs = [tmp_path / "w.log", tmp_path / "b.log"]
    white = UciEngine(spec960("W", Strategy="castle", CastleSide="h", LogFile=logs[0]))
    black = UciEngine(spec960("B", Strategy="castle", CastleSide="a", LogFile=logs[1]))
    try:
        start = chess.Board(CASTLES, chess960=True)
        rec = play_game(white, black, Opening(start), parse_tc("5+0"), adjudication=Adjudication(maxmoves=6))
        assert rec.termination == "adjudication", rec.reason
        for log, moves in zip(logs, ("f1g1 f8b8", "f1g1")):
            lines = sent(log)
            assert lines.index("setoption name UCI_Chess960 value true") < lines.index("ucinewgame")
            assert f"position fen {start.fen()} moves {moves}" in lines
        game = chess.pgn.read_game(io.StringIO(rec.pgn))
        assert game.headers["Variant"] == "Chess960" and game.headers["FEN"] == start.fen()
        board = game.board()
        castles = []
        for move in game.mainline_moves():
            assert move in board.legal_moves
            if board.is_castling(move):
                castles.append((board.turn, board.is_kingside_castling(move)))
            board.push(move)
        assert (chess.WHITE, True) in castles and (chess.BLACK, False) in castles
        # The next game is standard: the option goes back off first.
        rec = play_game(white, black, Opening(chess.Board()), parse_tc("5+0"), adjudication=Adjudication(maxmoves=2))
        assert rec.termination == "adjudication" and "Variant" not in rec.pgn
        lines = sent(logs[0])
        i = lines.index("setoption name UCI_Chess960 value false")
        assert lines[i:i + 4] == ["setoption name UCI_Chess960 value false", "ucinewgame", "isready",
                                  "position startpos"]
    finally:
        white.quit()
        black.quit()


def test_standard_match_sends_no_uci_chess960(tmp_path: Path):
    log = tmp_path / "w.log"
    res = run_match(MatchConfig(spec960("W", LogFile=log), spec960("B"), games=2, tc=parse_tc("5+0"),
                                adjudication=Adjudication(maxmoves=4)))
    assert res.played == 2 and not res.error
    assert not any("UCI_Chess960" in line for line in sent(log))


def test_chess960_warning_for_engine_without_the_option():
    warnings: list[str] = []
    cfg = MatchConfig(spec960("Has"), spec960("Lacks", "no960"), games=2, tc=parse_tc("5+0"),
                      openings=[Opening(chess.Board(POS0, chess960=True))],
                      adjudication=Adjudication(maxmoves=3))
    res = run_match(cfg, on_warning=warnings.append)
    assert res.played == 2
    assert len(warnings) == 1 and "Lacks does not declare UCI_Chess960" in warnings[0]


def test_main_chess960_without_openings(tmp_path: Path, capsys):
    """--chess960 alone: each pair of games gets a random 960 start position, both colours."""
    pgn = tmp_path / "960.pgn"
    rc = match.main(["--engine1", shlex.join([sys.executable, str(FAKE960), "A"]),
                     "--engine2", shlex.join([sys.executable, str(FAKE960), "B"]),
                     "--chess960", "--seed", "3", "--games", "4", "--tc", "5+0", "--maxmoves", "8",
                     "--pgn", str(pgn), "--no-progress"])
    assert rc == 0, capsys.readouterr().err
    games = read_pgn(pgn)
    assert len(games) == 4 and all(g.headers["Variant"] == "Chess960" for g in games)
    fens = [g.headers.get("FEN", chess.STARTING_FEN) for g in games]
    assert fens[0] == fens[1] and fens[2] == fens[3]
    for g in games:
        assert g.headers["Termination"] == "adjudication"   # no illegal move, no forfeit
        board = g.board()
        for move in g.mainline_moves():
            assert move in board.legal_moves
            board.push(move)
    # The same seed, the same positions.
    pgn2 = tmp_path / "again.pgn"
    match.main(["--engine1", shlex.join([sys.executable, str(FAKE960), "A"]),
                "--engine2", shlex.join([sys.executable, str(FAKE960), "B"]),
                "--chess960", "--seed", "3", "--games", "2", "--tc", "5+0", "--maxmoves", "1",
                "--pgn", str(pgn2), "--no-progress"])
    assert read_pgn(pgn2)[0].headers.get("FEN", chess.STARTING_FEN) == fens[0]


# -- command line -------------------------------------------------------------------------------

def test_main_command_line(tmp_path: Path, openings_file: Path, capsys):
    pgn = tmp_path / "cli.pgn"
    rc = match.main(["--engine1", fake_cmd("Greedy"), "--engine2", fake_cmd("First"),
                     "--option1", "Strategy=greedy", "--games", "4", "--tc", "3+0.05",
                     "--openings", str(openings_file), "--concurrency", "2", "--pgn", str(pgn),
                     "--sprt", "0,10", "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "Score of Greedy vs First: W-D-L 4-0-0 [1.000] 4" in out
    assert "Elo difference: +inf +/- inf, LOS:" in out and "SPRT: LLR" in out
    assert out.count("Finished game") == 4
    assert len(read_pgn(pgn)) == 4


def test_main_errors(capsys):
    assert match.main(["--engine1", "/nonexistent/engine", "--engine2", fake_cmd("B"), "--no-progress"]) == 1
    assert "cannot start" in capsys.readouterr().err
    for bad in (["--tc", "x"], ["--games", "0"], ["--sprt", "5"], ["--option1", "Nope"],
                ["--tc", "1+0", "--movetime", "100"]):
        with pytest.raises(SystemExit) as e:
            match.main(["--engine1", fake_cmd("A"), "--engine2", fake_cmd("B")] + bad)
        assert e.value.code == 2


# -- Arbor itself ---------------------------------------------------------------------------------

@pytest.mark.slow
def test_arbor_match_two_simulation_counts(tmp_path: Path):
    """Arbor with 50 simulations per move against Arbor with 5: a real two-game match."""
    pgn = tmp_path / "arbor.pgn"
    res = run_match(MatchConfig(
        EngineSpec.from_command(None, options=[("Simulations", "50")]),
        EngineSpec.from_command(None, options=[("Simulations", "5")]),
        games=2, tc=parse_tc("20+0.2"), pgn_path=str(pgn),
        adjudication=Adjudication(maxmoves=60)))
    assert res.played == 2 and not res.error
    assert res.name1.endswith("(Simulations=50)") and res.name2.endswith("(Simulations=5)")
    # Neither side may lose by a protocol fault.
    assert all(g.termination in ("normal", "adjudication") for g in res.games), [g.reason for g in res.games]
    assert len(read_pgn(pgn)) == 2
