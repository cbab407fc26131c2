"""Complete games through python-chess, at fast time controls, end legally and on time."""

from __future__ import annotations

import time

import chess
import chess.engine
import pytest


def play_game(white, black, limit_for, max_plies=400):
    board = chess.Board()
    engines = {chess.WHITE: white, chess.BLACK: black}
    while not board.is_game_over(claim_draw=True) and len(board.move_stack) < max_plies:
        result = engines[board.turn].play(board, limit_for(board), game="selfplay")
        assert result.move in board.legal_moves, (board.fen(), result.move)
        board.push(result.move)
    return board


@pytest.mark.slow
def test_selfplay_with_clock_never_flags(engine):
    """1 s + 0.01 s per move, each side's clock kept here; a move must never overrun its clock."""
    clocks = {chess.WHITE: 1.0, chess.BLACK: 1.0}
    inc = 0.01
    board = chess.Board()
    # A GUI starts the clocks once the engine has answered isready after ucinewgame (when Arbor loads its net);
    # python-chess sends both with the game's first go, so that go is made before the clocks start.
    engine.play(board, chess.engine.Limit(nodes=1), game="clock")
    while not board.is_game_over(claim_draw=True) and len(board.move_stack) < 160:
        limit = chess.engine.Limit(white_clock=clocks[chess.WHITE], black_clock=clocks[chess.BLACK],
                                   white_inc=inc, black_inc=inc)
        start = time.monotonic()
        result = engine.play(board, limit, game="clock")
        spent = time.monotonic() - start
        clocks[board.turn] -= spent
        assert clocks[board.turn] > 0, f"flagged at ply {len(board.move_stack)}"
        clocks[board.turn] += inc
        assert result.move in board.legal_moves
        board.push(result.move)


def test_selfplay_with_simulations_ends_legally(engine):
    engine.configure({"Simulations": 60})
    board = play_game(engine, engine, lambda b: chess.engine.Limit(), max_plies=120)
    assert board.is_valid()
