"""Playing at a chosen strength: UCI_LimitStrength and UCI_Elo (engine/strength.py)."""

from __future__ import annotations

import random
import time

import chess
import pytest

from engine.evaluators.heuristic import HeuristicEvaluator
from engine.game import ChessGame
from engine.params import OptionError, Params
from engine.search import Search
from engine.strength import ELO_MAX, ELO_MIN, LEVELS, choose, level_for, limited
from engine.timeman import Limits
from engine.tree import Tree

POSITIONS = (
    chess.STARTING_FEN,
    "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4",
    "r1bq1rk1/pp2ppbp/2np1np1/8/3NP3/2N1BP2/PPPQ2PP/R3KB1R w KQ - 3 9",
    "2r3k1/pp3ppp/2n1p3/3pP3/3P4/P1R2N2/1P3PPP/6K1 w - - 0 25",
)


def test_options_are_listed_with_their_bounds(raw):
    raw.send("uci")
    lines = raw.read_until("uciok")
    assert "option name UCI_LimitStrength type check default false" in lines
    assert f"option name UCI_Elo type spin default {ELO_MAX} min {ELO_MIN} max {ELO_MAX}" in lines


def test_out_of_range_or_non_numbers_are_refused_and_keep_the_value(raw):
    params = Params()
    params.set("UCI_Elo", "1200")
    for bad in (str(ELO_MIN - 1), str(ELO_MAX + 1), "strong", ""):
        with pytest.raises(OptionError):
            params.set("UCI_Elo", bad)
        assert params.uci_elo == 1200
    raw.send(f"setoption name UCI_Elo value {ELO_MAX + 1}")
    raw.send("isready")
    lines = raw.read_until("readyok")
    assert any(line.startswith("info string option UCI_Elo must be between") for line in lines), lines


def _search_lines(raw, commands):
    for command in commands:
        raw.send(command)
    raw.send("position startpos moves e2e4 c7c5")
    raw.send("go nodes 400")
    lines = raw.read_until("bestmove")
    return [line for line in lines if line.startswith("info depth")][-1].split(" pv ")[0], lines[-1]


def test_without_the_limit_play_is_unchanged_whatever_uci_elo_says(raw):
    plain = _search_lines(raw, ["setoption name Evaluator value heuristic", "ucinewgame"])
    with_elo = _search_lines(raw, ["setoption name UCI_Elo value 900", "setoption name UCI_LimitStrength value false",
                                   "ucinewgame"])
    assert with_elo[0].split(" time ")[0] == plain[0].split(" time ")[0]  # depth, seldepth
    assert with_elo[0].split(" nodes ")[1].split()[0] == plain[0].split(" nodes ")[1].split()[0]
    assert with_elo[1] == plain[1]


def test_the_top_uci_elo_is_the_full_engine(raw):
    plain = _search_lines(raw, ["setoption name Evaluator value heuristic", "ucinewgame"])
    top = _search_lines(raw, [f"setoption name UCI_Elo value {ELO_MAX}", "setoption name UCI_LimitStrength value true",
                              "ucinewgame"])
    assert top[0].split(" nodes ")[1].split()[0] == plain[0].split(" nodes ")[1].split()[0]
    assert top[1] == plain[1]


def test_levels_grow_with_the_elo():
    for evaluator, table in LEVELS.items():
        assert table[-1].visits is None and table[-1].temperature == 0  # full strength on top
        previous = None
        for elo in range(ELO_MIN, ELO_MAX + 1, 25):
            level = level_for(elo, evaluator)
            visits = level.visits if level.visits is not None else float("inf")
            if previous is not None:
                assert visits >= previous[0] and level.temperature <= previous[1] + 1e-9, (evaluator, elo)
            previous = (visits, level.temperature)


def test_a_low_level_plays_moves_the_full_engine_does_not():
    """At a fixed seed: where the full search plays its most visited move, a weak level (a few visits, a move drawn
    from them) plays a lower-visit or lower-prior move in some of the positions, and at temperature 0 never."""
    game, evaluator = ChessGame(), HeuristicEvaluator()
    low = level_for(ELO_MIN, "heuristic")
    rng = random.Random(7)
    differs = 0
    for fen in POSITIONS:
        board = chess.Board(fen)
        full = _searched(game, evaluator, board, Limits(nodes=400), Params(tactical_probe_share=0))
        best = max(full, key=lambda s: (s.n, s.prior)).move
        limits, params = limited(Limits(wtime=60_000, btime=60_000), Params(), low)
        assert limits.nodes == low.visits and params.tactical_probe_share == 0
        stats = _searched(game, evaluator, board, limits, params)
        moves = [s.move for s in stats]
        assert moves[choose(moves, [s.n for s in stats], [s.prior for s in stats], 0.0, rng)] == \
            max(stats, key=lambda s: (s.n, s.prior)).move
        picks = [moves[choose(moves, [s.n for s in stats], [s.prior for s in stats], low.temperature, rng)]
                 for _ in range(5)]
        differs += any(pick != best for pick in picks)
    assert differs >= 2


def _searched(game, evaluator, board, limits, params):
    tree = Tree(game)
    tree.set_position(board.fen(), [board.copy(stack=False)], [])
    search = Search(game, tree, evaluator, params)
    search.run(limits)
    return search.move_stats()


@pytest.mark.parametrize("evaluator", ["heuristic", "network"])
def test_a_limited_search_answers_within_its_time_but_not_at_once(raw, evaluator):
    if evaluator == "heuristic":
        raw.send("setoption name Evaluator value heuristic")
    raw.send("setoption name UCI_LimitStrength value true")
    raw.send(f"setoption name UCI_Elo value {ELO_MIN}")
    raw.ask_ready(timeout=60)
    board = chess.Board()
    for _ in range(3):
        moves = " ".join(m.uci() for m in board.move_stack)
        raw.send("position startpos" + (f" moves {moves}" if moves else ""))
        sent = time.monotonic()
        raw.send("go wtime 60000 btime 60000 winc 1000 binc 1000")
        line = raw.read_until("bestmove", timeout=10)[-1]
        took = time.monotonic() - sent
        assert 0.25 <= took < 3.0, took  # a full search plans seconds here
        move = chess.Move.from_uci(line.split()[1])
        assert move in board.legal_moves
        board.push(move)
