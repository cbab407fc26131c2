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


def test_the_tree_finds_exactly_the_mates_in_one():
    """A new node's mate in one goes first and proves its position lost for the side that moved into it: exactly
    where python-chess says one of the moves mates (discovered mates too)."""
    import itertools
    import random

    from engine.search.tree import LOSS, Batch, Tree

    rng, positions, mating = random.Random(3), 0, 0
    for board in itertools.chain(_random_attacks(rng, 600), _random_game_positions(rng, 10)):
        if board.is_game_over():
            continue
        expected = {m for m in board.legal_moves if _mates(board, m)}
        tree = Tree()
        tree.set_position(board.fen(), [board.copy(stack=False)], [])
        batch = Batch(1, False)
        assert tree.gather(batch, 1) == 1
        moves = list(board.legal_moves)
        tree.finish_leaf(batch, 0, 0.0, 0.0, [1.0 / len(moves)] * len(moves))
        root = tree.root_node
        assert (root.proven == LOSS) == bool(expected), board.fen()
        if expected:
            assert tree.chess_move(root.moves[0]) in expected, board.fen()
        positions += 1
        mating += bool(expected)
    assert mating > 50, (positions, mating)


def _mates(board, move) -> bool:
    board.push(move)
    try:
        return board.is_checkmate()
    finally:
        board.pop()
