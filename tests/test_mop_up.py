"""Endings against a lone king (engine/search/mop_up.py): the progress measure, the steered value and priors, and games
the engine must now win at a few hundred simulations a move, as on a short clock."""

from __future__ import annotations

import shutil

import chess
import chess.engine
import pytest

from engine.uci.loading import discover_network
from engine.search.mop_up import VALUE_AT_START, mating_progress, steer


def steered_value(board: chess.Board, value: float) -> float:
    """The value steer() searches ``board`` with, its evaluator having said ``value``."""
    steered = steer(board, list(board.legal_moves), value)
    return value if steered is None else steered[1]


def steered_priors(board: chess.Board, moves: list) -> list[float] | None:
    """The priors steer() gives ``moves``; None where it leaves the position alone."""
    steered = steer(board, moves, 0.0)
    return None if steered is None else steered[0]


def test_only_a_lone_king_against_mating_material_is_an_ending_to_steer():
    assert mating_progress(chess.Board()) is None
    assert mating_progress(chess.Board("8/8/8/4k3/8/8/8/2N1KN2 w - - 0 1")) is None     # two knights cannot force it
    assert mating_progress(chess.Board("8/8/8/4k3/8/8/4P3/4K3 w - - 0 1")) is None      # a pawn must promote first
    assert mating_progress(chess.Board("8/8/8/4k3/8/8/8/2B1KB2 w - - 0 1"))[0] == chess.WHITE   # both colours
    assert mating_progress(chess.Board("8/8/8/4k3/8/8/8/3BKB2 w - - 0 1")) is None      # bishops of one colour
    assert mating_progress(chess.Board("8/8/7r/3k4/8/6K1/8/8 w - - 0 58"))[0] == chess.BLACK


def test_progress_grows_as_the_king_is_driven_to_the_edge_and_the_other_comes_close():
    centre = mating_progress(chess.Board("8/8/8/4k3/8/8/8/R3K3 w - - 0 1"))[1]
    edge = mating_progress(chess.Board("4k3/8/8/8/8/8/8/R3K3 w - - 0 1"))[1]
    boxed = mating_progress(chess.Board("4k3/R7/4K3/8/8/8/8/8 b - - 0 1"))[1]
    assert centre < edge < boxed <= 1.0
    # Bishop and knight mate in the corners the bishop covers: a1 and h8 for a dark-squared bishop.
    right = mating_progress(chess.Board("7k/8/5K2/8/8/8/8/2B2N2 w - - 0 1"))[1]
    wrong = mating_progress(chess.Board("k7/8/2K5/8/8/8/8/2B2N2 w - - 0 1"))[1]
    assert right > wrong


def test_values_follow_the_progress_for_either_side_and_a_capture_leaves_the_evaluator_s():
    centre, boxed = chess.Board("8/8/8/4k3/8/8/8/R3K3 w - - 0 1"), chess.Board("4k3/R7/4K3/8/8/8/8/8 w - - 0 1")
    assert VALUE_AT_START <= steered_value(centre, 0.99) < steered_value(boxed, 0.99) <= 1.0
    black = centre.copy()
    black.turn = chess.BLACK
    assert steered_value(black, -0.99) == -steered_value(centre, 0.99)
    hanging = chess.Board("8/8/8/3Rk3/8/8/8/4K3 b - - 0 1")   # the lone king takes the rook
    assert steered_value(hanging, 0.0) == 0.0
    assert steered_value(chess.Board(), 0.3) == 0.3


def test_priors_prefer_progress_and_never_leave_the_rook_to_be_taken():
    board = chess.Board("8/8/8/4k3/8/8/8/R3K3 w - - 0 1")
    moves = list(board.legal_moves)
    priors = dict(zip(moves, steered_priors(board, moves)))
    assert sum(priors.values()) == pytest.approx(1.0)
    assert priors[chess.Move.from_uci("a1a4")] > priors[chess.Move.from_uci("e1f1")]   # cuts the king off
    board = chess.Board("8/8/8/4k3/R7/8/8/4K3 w - - 0 1")
    moves = list(board.legal_moves)
    priors = dict(zip(moves, steered_priors(board, moves)))
    assert priors[chess.Move.from_uci("a4d4")] < 0.01 * max(priors.values())   # beside the king, undefended
    assert steered_priors(chess.Board(), list(chess.Board().legal_moves)) is None


STOCKFISH = shutil.which("stockfish") or shutil.which("/usr/games/stockfish")


@pytest.mark.skipif(discover_network() is None, reason="no network shipped")
@pytest.mark.skipif(STOCKFISH is None, reason="stockfish is not installed (apt-get install stockfish)")
@pytest.mark.parametrize("fen", [
    "8/8/8/4k3/8/8/8/R3K3 w - - 0 1",   # K+R: before, drawn by the fifty-move rule at 250 simulations a move
    "8/8/8/8/4k3/8/8/1R2K3 b - - 0 1",  # the lone king to move
])
def test_the_engine_mates_a_lone_king_at_a_few_hundred_simulations_a_move(engine, fen):
    """As on a short clock in a game's last minutes: Stockfish's defence (depth 12), the fifty-move rule running."""
    board = chess.Board(fen)
    attacker = chess.WHITE if board.occupied_co[chess.BLACK] == board.kings & board.occupied_co[chess.BLACK] else chess.BLACK
    with chess.engine.SimpleEngine.popen_uci(STOCKFISH) as stockfish:
        while not board.is_game_over(claim_draw=True):
            limit = chess.engine.Limit(nodes=250) if board.turn == attacker else chess.engine.Limit(depth=12)
            board.push((engine if board.turn == attacker else stockfish).play(board, limit, game=fen).move)
    assert board.is_checkmate(), (board.fen(), len(board.move_stack))
