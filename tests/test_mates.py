"""Short mates are found, reported as 'score mate N' and played, with every evaluator."""

from __future__ import annotations

import chess
import chess.engine
import pytest

SEED_MATE_IN_TWO = "r2qkb1r/pp2nppp/3p4/2pNN1B1/2BnP3/3P4/PPP2PPP/R2bK2R w KQkq - 1 0"

MATES_IN_ONE = [
    ("6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1", "d1d8"),          # back rank, White
    ("3r2k1/5ppp/8/8/8/8/5PPP/6K1 b - - 0 1", "d8d1"),          # back rank, Black
    ("r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5Q2/PPPP1PPP/RNB1K1NR w KQkq - 4 4", "f3f7"),  # scholar's mate
    ("rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR b KQkq - 0 3", None),  # fool's mate is already on
    ("rnbqkbnr/ppppp2p/5p2/6p1/4P3/2N5/PPPP1PPP/R1BQKBNR w KQkq - 0 3", "d1h5"),   # fool's mate, White
    ("k7/8/1K6/8/8/8/8/7R w - - 0 1", "h1h8"),
]


@pytest.mark.parametrize("evaluator", ["rollout", "heuristic"])
def test_seed_mate_in_two_at_800_simulations(engine, evaluator):
    engine.configure({"Evaluator": evaluator, "Simulations": 800})
    result = engine.play(chess.Board(SEED_MATE_IN_TWO), chess.engine.Limit(time=60),
                         info=chess.engine.INFO_ALL)
    assert result.move == chess.Move.from_uci("d5f6")
    assert result.info["score"].relative == chess.engine.Mate(2)


@pytest.mark.parametrize("fen,mate", [m for m in MATES_IN_ONE if m[1]])
@pytest.mark.parametrize("evaluator", ["rollout", "heuristic"])
def test_mate_in_one_both_colours(engine, evaluator, fen, mate):
    engine.configure({"Evaluator": evaluator})
    board = chess.Board(fen)
    result = engine.play(board, chess.engine.Limit(nodes=200), info=chess.engine.INFO_ALL)
    board.push(result.move)
    assert board.is_checkmate(), (fen, result.move)
    assert result.info["score"].relative == chess.engine.Mate(1)


def test_mated_side_plays_on(engine):
    # Black to move can only delay: Kb8 Rh8#.
    board = chess.Board("k7/8/1K6/8/8/8/8/7R b - - 0 1")
    result = engine.play(board, chess.engine.Limit(nodes=300), info=chess.engine.INFO_ALL)
    assert result.move == chess.Move.from_uci("a8b8")
    assert result.info["score"].relative == chess.engine.Mate(-1)


def _direct_mates(board: chess.Board) -> list[chess.Move]:
    """By definition: non-king moves after which the moved piece gives check and it is mate."""
    mates = []
    for move in board.legal_moves:
        if board.piece_type_at(move.from_square) == chess.KING:
            continue
        board.push(move)
        if board.is_checkmate() and move.to_square in board.checkers():
            mates.append(move)
        board.pop()
    return mates


def _random_attacks(rng, count: int):
    """Legal positions with a strong side against a bare king and pawns, where mates in one are common."""
    while count:
        board = chess.Board(None)
        squares = rng.sample(chess.SQUARES, 12)
        for square, symbol in zip(squares, "KkQRRBNPPppp"):
            board.set_piece_at(square, chess.Piece.from_symbol(symbol))
        board.turn = rng.random() < 0.7
        if board.is_valid():
            count -= 1
            yield board


def _random_game_positions(rng, games: int):
    """Positions of random games, with en passant, castling and promotions along the way."""
    for _ in range(games):
        board = chess.Board()
        while not board.is_game_over() and board.ply() < 100:
            yield board
            board.push(rng.choice(list(board.legal_moves)))


def test_winning_moves_finds_exactly_the_direct_mates_in_one():
    """The search's mate-in-one finder (which skips checks that leave the king a flight square) is exact."""
    import itertools
    import random

    from engine.board.game import ChessGame

    game, rng, positions, mating = ChessGame(), random.Random(3), 0, 0
    for board in itertools.chain(_random_attacks(rng, 2000), _random_game_positions(rng, 20)):
        expected = _direct_mates(board)
        assert game.winning_moves(board, list(board.legal_moves)) == expected, board.fen()
        positions += 1
        mating += bool(expected)
    assert mating > 100, (positions, mating)
