"""Playing at a chosen strength: UCI_LimitStrength and UCI_Elo (engine/search/strength.py)."""

from __future__ import annotations

import random
import time

import chess
import pytest

from engine.evaluators.base import Evaluator
from engine.evaluators.heuristic import HeuristicEvaluator
from engine.params import OptionError, Params
from engine.search.search import Search
from engine.params import ELO_MAX, ELO_MIN
from engine.search.strength import LEVEL_MINIBATCH, LEVELS, choose, level_for, limited
from engine.search.timeman import Limits
from engine.search.report import MoveStat
from engine.search.tree import DRAW, LOSS, WIN, Tree

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


def test_uci_elo_runs_from_the_network_s_weakest_row_to_its_full_strength():
    assert (LEVELS["network"][0].elo, LEVELS["network"][-1].elo) == (ELO_MIN, ELO_MAX)


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
    evaluator = HeuristicEvaluator()
    low = level_for(ELO_MIN, "heuristic")
    rng = random.Random(7)
    differs = 0
    for fen in POSITIONS:
        board = chess.Board(fen)
        full = _searched(evaluator, board, Limits(nodes=400), Params(tactical_probe_share=0))
        best = max(full, key=lambda s: (s.n, s.prior)).move
        limits, params = limited(Limits(wtime=60_000, btime=60_000), Params(), low)
        assert limits.nodes == low.visits and params.tactical_probe_share == 0
        stats = _searched(evaluator, board, limits, params)
        moves = [s.move for s in stats]
        assert moves[choose(stats, 0.0, rng)] == max(stats, key=lambda s: (s.n, s.prior)).move
        picks = [moves[choose(stats, low.temperature, rng)] for _ in range(5)]
        differs += any(pick != best for pick in picks)
    assert differs >= 2


class BatchSizes(Evaluator):
    """Takes batches; uniform priors, an even value; records each batch's size."""

    name = "network"
    batch_size = 2

    def __init__(self):
        self.sizes = []

    def evaluate(self, leaves):
        self.sizes.append(len(leaves))
        for leaf in leaves:
            leaf.priors = [1.0 / len(leaf.moves)] * len(leaf.moves)
            leaf.value = 0.0


def test_a_limited_level_searches_in_the_batches_its_row_was_measured_with():
    """The network's rows were measured with batches of LEVEL_MINIBATCH: a limited level gathers that many whatever
    MinibatchSize says, and full strength keeps MinibatchSize."""
    board = chess.Board()
    user = Params(tactical_probe_share=0, minibatch_size=4)
    for elo, batch in ((1500, LEVEL_MINIBATCH), (ELO_MAX, 4)):
        level = level_for(elo, "network")
        limits, params = limited(Limits(nodes=200), user, level)
        evaluator = BatchSizes()
        _searched(evaluator, board, limits, params)
        assert max(evaluator.sizes) == batch, (elo, evaluator.sizes)
    assert user.minibatch_size == 4  # the user's option itself is left alone


def _stat(move, n, prior, q=None, proven=None, plies=0):
    return MoveStat(chess.Move.from_uci(move), n, 0, prior, q if proven is None else proven, None, 0.0, None, proven,
                    plies)


def test_the_draw_of_a_move_keeps_what_the_search_has_proven():
    """A proven mate is played however few visits it has; a proven loss is not drawn while another move is left;
    a proven draw (a stalemate) is not drawn while the open moves promise clearly more, but may be when they
    promise less."""
    rng = random.Random(3)
    mate = [_stat("a1a2", 30, 0.6, 0.9), _stat("b1b2", 20, 0.3, 0.9), _stat("c1c8", 1, 0.1, proven=WIN, plies=0)]
    assert {choose(mate, 2.0, rng) for _ in range(50)} == {2}
    # A short search in a won endgame: the stalemate's high prior held most visits before the rest were seen.
    stalemate = [_stat("e6e7", 96, 0.73, proven=DRAW), _stat("e6f6", 13, 0.03, 0.998), _stat("b5d4", 12, 0.03, 0.999),
                 _stat("h6f5", 6, 0.03, 0.97), _stat("g5g6", 0, 0.01)]
    assert 0 not in {choose(stalemate, 1.0, rng) for _ in range(200)}
    assert choose(stalemate, 0.0, rng) == 0  # temperature 0 is the search's own choice, untouched
    behind = [_stat("e6e7", 96, 0.73, proven=DRAW), _stat("e6f6", 13, 0.03, -0.6), _stat("b5d4", 12, 0.03, -0.7)]
    assert 0 in {choose(behind, 1.0, rng) for _ in range(50)}
    losing = [_stat("a1a8", 50, 0.8, proven=LOSS, plies=1), _stat("b1b2", 1, 0.1, -0.9), _stat("c1c2", 0, 0.1)]
    assert 0 not in {choose(losing, 1.0, rng) for _ in range(200)}
    all_lost = [_stat("a1a8", 5, 0.8, proven=LOSS, plies=1), _stat("b1b2", 3, 0.2, proven=LOSS, plies=3)]
    assert {choose(all_lost, 1.0, rng) for _ in range(50)} == {0, 1}  # still a draw, over every move


def test_a_limited_level_does_not_stalemate_a_won_game(raw):
    """A position from a calibration game at 1350, where Arbor was a rook and two knights up and the capture Rxe7
    stalemates: the capture's prior and the short search had given it most of the visits."""
    raw.send("setoption name UCI_LimitStrength value true")
    raw.send("setoption name UCI_Elo value 1350")
    raw.send("position fen 7k/4r3/4R2N/1N4P1/2p5/2P5/6PK/8 w - - 1 48")
    raw.ask_ready(timeout=60)
    for _ in range(8):
        raw.send("ucinewgame")
        raw.send("position fen 7k/4r3/4R2N/1N4P1/2p5/2P5/6PK/8 w - - 1 48")
        raw.send("go wtime 400 btime 400 winc 100 binc 100")
        assert raw.read_until("bestmove", timeout=20)[-1].split()[1] != "e6e7"


def _searched(evaluator, board, limits, params):
    tree = Tree()
    tree.set_position(board.fen(), [board.copy(stack=False)], [])
    search = Search(tree, evaluator, params)
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


def test_a_stalemate_that_took_every_visit_is_not_drawn_when_the_position_is_won():
    """A short search can give all its visits to a stalemating capture (a prior of 70%: the other moves' first-play
    urgency stays below the draw's); the evaluator's own value of the root then tells that the other moves win."""
    stats = [_stat("e6e7", 30, 0.7, proven=DRAW), _stat("h6f5", 0, 0.05), _stat("b5d4", 0, 0.03)]
    rng = random.Random(3)
    picks = {str(stats[choose(stats, 0.45, rng, value=1.0)].move) for _ in range(50)}
    assert "e6e7" not in picks and picks
    assert {str(stats[choose(stats, 0.45, rng, value=0.0)].move) for _ in range(50)} >= {"e6e7"}  # level: a draw is fine
