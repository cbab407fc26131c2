"""``arbor calibrate``: which matches ``measure`` plays and how its rows hang together; ``mistakes``, the moves that
lost 200 cp or more, per player (engine/tools/calibrate.py)."""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
from pathlib import Path

import chess
import chess.engine
import chess.pgn

from engine.tools import calibrate
from engine.tools.calibrate import EVAL_CAP, _capped, count_mistakes, move_losses
from engine.tools.elo import elo_difference
from engine.search.strength import Level

ROOT = Path(__file__).resolve().parent.parent
FAKE_SF = ROOT / "tests" / "fake_engines" / "fake_stockfish.py"

# White leaves its queen en prise on move 2; nothing else loses more than a pawn to a one-ply look.
HUNG_QUEEN = """[White "Careless"]
[Black "Careful"]
[Result "0-1"]

1. e4 d5 2. Qg4 Bxg4 0-1
"""


def _material_analyse(board: chess.Board) -> chess.engine.PovScore:
    """The fake Stockfish's judgement (best capture by material, one ply), in-process."""
    values = {chess.PAWN: 100, chess.KNIGHT: 300, chess.BISHOP: 310, chess.ROOK: 500, chess.QUEEN: 900, chess.KING: 0}
    best = -10**9
    for move in board.legal_moves:
        board.push(move)
        mine = sum(values[p.piece_type] * (1 if p.color != board.turn else -1) for p in board.piece_map().values())
        best = max(best, mine)
        board.pop()
    return chess.engine.PovScore(chess.engine.Cp(best), board.turn)


TABLE = (Level(900, 4, 1.0), Level(1100, 16, 0.6), Level(1400, 64, 0.4), Level(1700, None, 0.0, probe=True))
RESULTS = {("Arbor 1400", "Stockfish 1400"): (40, 20, 40), ("Arbor", "Stockfish 1700"): (30, 20, 50),
           ("Arbor 1100", "Arbor 1400"): (20, 10, 70), ("Arbor 900", "Arbor 1100"): (25, 0, 75)}


def _measure(monkeypatch, capsys, rows):
    played = []

    def play(one, two, args, seed):
        played.append((one.name, two.name, seed))
        return RESULTS[one.name, two.name]

    monkeypatch.setattr(calibrate, "_play", play)
    calibrate.measure(TABLE, argparse.Namespace(seed=5000, stockfish="stockfish"), [], rows)
    return played, capsys.readouterr().out


def test_measure_plays_each_row_against_stockfish_or_the_row_above(monkeypatch, capsys):
    played, out = _measure(monkeypatch, capsys, None)
    assert played == [("Arbor 1400", "Stockfish 1400", 6400), ("Arbor", "Stockfish 1700", 6700),
                      ("Arbor 1100", "Arbor 1400", 6100), ("Arbor 900", "Arbor 1100", 5900)]
    # Below 1350 each row hangs from the row above as measured in this run.
    at_1100 = 1400 + elo_difference(20, 10, 70)[0]
    assert f"Level({at_1100:.0f}, 16, 0.6)," in out
    assert f"Level({at_1100 + elo_difference(25, 0, 75)[0]:.0f}, 4, 1.0)," in out
    assert f"Level({1700 + elo_difference(30, 20, 50)[0]:.0f}, None, 0.0, probe=True)," in out


def test_measure_of_some_rows_hangs_them_from_the_table_s_labels(monkeypatch, capsys):
    played, out = _measure(monkeypatch, capsys, {900})
    assert played == [("Arbor 900", "Arbor 1100", 5900)]
    assert f"Level({1100 + elo_difference(25, 0, 75)[0]:.0f}, 4, 1.0)," in out
    assert "Level(1" not in out


def test_each_move_s_loss_is_the_mover_s_value_before_less_after():
    game = chess.pgn.read_game(io.StringIO(HUNG_QUEEN))
    # 1. e4 (0 -> 0), 1... d5 (0 -> exd5 +100 for White), 2. Qg4 (+100 -> Bxg4 +900 for Black), 2... Bxg4 (+900 ->
    # White's best, exd5, still -800)
    assert move_losses(game, _material_analyse) == [0, 100, 1000, 100]


def test_a_finished_game_is_valued_by_the_rules_and_evaluations_are_capped():
    def says(score):
        return lambda board: chess.engine.PovScore(score, board.turn)
    mated = chess.Board("rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3")
    stalemate = chess.Board("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1")
    never = says(chess.engine.Cp(12345))   # not asked: the rules decide
    assert _capped(mated, never) == -EVAL_CAP and _capped(stalemate, never) == 0
    board = chess.Board()
    assert _capped(board, says(chess.engine.Mate(3))) == EVAL_CAP
    assert _capped(board, says(chess.engine.Mate(-2))) == -EVAL_CAP
    assert _capped(board, says(chess.engine.Cp(-5000))) == -EVAL_CAP
    assert _capped(board, says(chess.engine.Cp(37))) == 37
    # So a missed mate in one costs the cap and the mating move costs nothing.
    fools_mate = chess.pgn.read_game(io.StringIO("1. f3 e5 2. g4 Qh4# 0-1\n"))
    assert move_losses(fools_mate, _material_analyse)[-1] == 0


def test_the_tally_counts_mistakes_per_player(tmp_path):
    pgn = tmp_path / "games.pgn"
    pgn.write_text(HUNG_QUEEN + "\n" + HUNG_QUEEN.replace("Careless", "Other"))
    tally = count_mistakes(str(pgn), _material_analyse)
    assert (tally["Careless"].games, tally["Careless"].moves, tally["Careless"].mistakes) == (1, 2, 1)
    assert (tally["Careful"].games, tally["Careful"].moves, tally["Careful"].mistakes) == (2, 4, 0)
    assert tally["Careless"].lost == 1000
    assert count_mistakes(str(pgn), _material_analyse, games=1).keys() == {"Careless", "Careful"}


def test_the_command_reads_a_pgn_through_a_uci_engine(tmp_path):
    pgn = tmp_path / "games.pgn"
    pgn.write_text(HUNG_QUEEN)
    out = subprocess.run([sys.executable, "-m", "engine", "calibrate", "mistakes", str(pgn), "--stockfish",
                          f"{sys.executable} {FAKE_SF}"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "| Careless | 1 | 2 | 1 | 50.0 | 500 |" in out.stdout, out.stdout
    assert "| Careful | 1 | 2 | 0 | 0.0 | 100 |" in out.stdout, out.stdout


def test_the_command_refuses_a_missing_file_clearly(tmp_path):
    out = subprocess.run([sys.executable, "-m", "engine", "calibrate", "mistakes", str(tmp_path / "none.pgn"),
                          "--stockfish", f"{sys.executable} {FAKE_SF}"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2 and "no PGN file" in out.stderr, (out.returncode, out.stderr)
