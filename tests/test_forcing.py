"""ForcingPriorFloor (engine/evaluators/forcing.py): a least prior for captures, promotions and direct checks.

Checked here: which moves count as forcing; the raised priors still sum to 1 and raising them again changes
nothing; both evaluators raise them (and empty their caches when the floor changes), never under
UCI_LimitStrength; and through UCI, short combinations whose first move the shipped net rates at 1 to 2% are
found at a fixed number of visits, while sacrifices that lose are still not played.
"""

from __future__ import annotations

import chess
import chess.engine
import pytest

from conftest import ARBOR, ROOT
from engine.evaluators import forcing
from engine.evaluators.base import Leaf
from engine.evaluators.heuristic import HeuristicEvaluator
from engine.board.moves import move_ids
from engine.params import Params
from engine.uci.loading import discover_network


def _forcing_sans(fen: str) -> set[str]:
    board = chess.Board(fen)
    moves = list(board.legal_moves)
    flags = forcing.forcing_moves(board, move_ids(moves)) or [False] * len(moves)
    return {board.san(m) for m, f in zip(moves, flags) if f}


def test_captures_promotions_and_direct_checks_are_forcing():
    # Bishop and queen take on f7 (and check); nothing else captures or checks.
    assert _forcing_sans("r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5Q2/PPPP1PPP/RNB1K1NR w KQkq - 2 3") == {"Bxf7+", "Qxf7#"}
    # Every promotion, captures or not.
    assert _forcing_sans("8/P6k/8/8/8/8/6K1/8 w - - 0 1") == {"a8=Q", "a8=R", "a8=B", "a8=N"}
    # En passant is a capture; Bb5+ and Qh5+ check directly.
    assert _forcing_sans("rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3") == {"exf6", "Bb5+", "Qh5+"}
    # A pawn's and a knight's check; castling is not forcing.
    assert _forcing_sans("4k3/8/3P4/8/6N1/8/8/4K3 w - - 0 1") == {"d7+", "Nf6+"}
    assert _forcing_sans("4k3/8/8/8/8/8/PP1P4/R3K1N1 w Q - 0 1") == set()
    # A discovered check needs the move played: left out.
    assert "Bd3+" not in _forcing_sans("4k3/8/8/8/4B3/8/8/4R2K w - - 0 1")


def test_raised_priors_sum_to_one_and_raising_again_changes_nothing():
    priors = [0.6, 0.25, 0.1, 0.04, 0.01]
    flags = [False, False, False, True, True]
    raised = forcing.raise_forcing(priors, flags, 0.1)
    assert raised[3] == raised[4] == pytest.approx(0.1)
    assert sum(raised) == pytest.approx(1.0)
    assert raised[0] / raised[1] == pytest.approx(0.6 / 0.25)  # quiet moves keep their proportions
    assert forcing.raise_forcing(raised, flags, 0.1) == pytest.approx(raised)
    assert forcing.raise_forcing(priors, flags, 0.0) == pytest.approx(priors)
    # So many forcing moves that raising them would leave quiet moves almost nothing: left as they were.
    assert forcing.raise_forcing([0.1] * 10, [True] * 9 + [False], 0.11) == pytest.approx([0.1] * 10)


def test_the_floor_is_off_under_uci_limitstrength():
    assert forcing.prior_floor(Params(forcing_prior_floor=0.2)) == 0.2
    assert forcing.prior_floor(Params(forcing_prior_floor=0.2, limit_strength=True)) == 0.0
    assert forcing.prior_floor(None) == 0.0


def _priors(evaluator, fen: str) -> dict[str, float]:
    board = chess.Board(fen)
    leaf = Leaf(board, list(board.legal_moves))
    evaluator.evaluate([leaf])
    return {board.san(m): p for m, p in zip(leaf.moves, leaf.priors)}


QUEEN_SAC = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5Q2/PPPP1PPP/RNB1KBNR w KQkq - 2 3"  # Qxf7+?? Kxf7 loses the queen


@pytest.mark.parametrize("kind", ["heuristic", "network"])
def test_evaluators_raise_forcing_priors_and_empty_their_caches_when_the_floor_changes(kind):
    params = Params()
    if kind == "network":
        path = discover_network()
        if path is None:
            pytest.skip("no network shipped")
        from engine.evaluators.network import NetworkEvaluator
        evaluator = NetworkEvaluator(path, params)
    else:
        evaluator = HeuristicEvaluator(params)
    plain = _priors(evaluator, QUEEN_SAC)
    assert plain["Qxf7+"] < 0.05
    params.forcing_prior_floor = 0.2
    raised = _priors(evaluator, QUEEN_SAC)  # the same position again: the cache must not answer with old priors
    assert raised["Qxf7+"] == pytest.approx(0.2, abs=1e-3)
    assert sum(raised.values()) == pytest.approx(1.0, abs=1e-6)
    params.limit_strength = True
    assert _priors(evaluator, QUEEN_SAC) == pytest.approx(plain, abs=1e-6)


# Win At Chess positions whose first move the shipped net when they were chosen (arbor-r007) rated at 0.7 to 1.7%:
# the default search missed each of them at 400 and at 800 visits; with a floor of 0.1 it found each at both.
COMBINATIONS = [
    ("r1b1kb1r/3q1ppp/pBp1pn2/8/Np3P2/5B2/PPP3PP/R2Q1RK1 w kq - 0 1", "Bxc6"),       # WAC.011
    ("r1b2rk1/pp2bppp/2n1pn2/q5B1/2BP4/2N2N2/PP2QPPP/2R2RK1 b - - 0 1", "Nxd4"),     # WAC.047
    ("2kr3r/pppq1ppp/3p1n2/bQ2p3/1n1PP3/1PN1BN1P/1PP2PP1/2KR3R b - - 0 1", "Na2+"),  # WAC.070
    ("6R1/4qp1p/ppr1n1pk/8/1P2P1QP/6N1/P4PP1/6K1 w - - 0 1", "Qh5+"),                # WAC.246
]
# Forcing moves that lose material: a high floor gives them visits, and the search must still turn them down.
UNSOUND = [
    (QUEEN_SAC, "Qxf7+"),
    ("r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4", "Bxf7+"),
]


@pytest.fixture(scope="module")
def arbor():
    eng = chess.engine.SimpleEngine.popen_uci(ARBOR, cwd=str(ROOT), timeout=60)
    yield eng
    eng.quit()


def _play(arbor, fen: str, floor: float, visits: int) -> str:
    arbor.configure({"ForcingPriorFloor": floor})
    board = chess.Board(fen)
    result = arbor.play(board, chess.engine.Limit(nodes=visits), game=object())
    return board.san(result.move)


@pytest.mark.skipif(discover_network() is None, reason="no network shipped")
@pytest.mark.parametrize("fen,key", COMBINATIONS)
def test_a_low_prior_combination_is_found_at_fixed_visits(arbor, fen, key):
    assert _play(arbor, fen, 0.1, 600) == key


@pytest.mark.parametrize("fen,losing", UNSOUND)
def test_an_unsound_sacrifice_is_not_played_with_a_high_floor(arbor, fen, losing):
    assert _play(arbor, fen, 0.3, 600) != losing
