"""The heuristic evaluator: contract, symmetry, and the chess it must get right."""

import math

import chess
import pytest

from engine.evaluators.base import Leaf
from engine.evaluators.heuristic import HeuristicEvaluator

EVALUATOR = HeuristicEvaluator()

VARIED = [
    chess.STARTING_FEN,
    "r1bqk2r/pppp1ppp/2n2n2/2b1p3/2B1P3/3P1N2/PPP2PPP/RNBQK2R w KQkq - 0 5",
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "r2qkb1r/pp2nppp/3p4/2pNN1B1/2BnP3/3P4/PPP2PPP/R2bK2R w KQkq - 1 0",
    "8/5pk1/6p1/3P4/1r6/6P1/5PK1/2R5 b - - 0 40",
    "rnbqkbnr/ppp1pppp/8/3pP3/8/8/PPPP1PPP/RNBQKBNR b KQkq - 0 2",
    "8/P7/8/8/8/8/k6p/4K3 w - - 0 1",
    "4k3/8/8/8/8/8/8/4K3 w - - 0 1",
    "6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1",
    "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq e6 0 2",
]


def evaluate(fen_or_board):
    board = chess.Board(fen_or_board) if isinstance(fen_or_board, str) else fen_or_board
    leaf = Leaf(board, list(board.legal_moves))
    EVALUATOR.evaluate([leaf])
    return leaf


def prior_of(leaf, san):
    return leaf.priors[leaf.moves.index(leaf.board.parse_san(san))]


def top_move(leaf):
    return leaf.board.san(max(zip(leaf.priors, leaf.moves), key=lambda pm: pm[0])[1])


def mirrored(move):
    return chess.Move(chess.square_mirror(move.from_square), chess.square_mirror(move.to_square), move.promotion)


@pytest.mark.parametrize("fen", VARIED)
def test_outputs_follow_the_contract(fen):
    leaf = evaluate(fen)
    assert -1.0 <= leaf.value <= 1.0
    assert len(leaf.priors) == len(leaf.moves)
    assert all(p > 0.0 for p in leaf.priors)
    assert math.isclose(sum(leaf.priors), 1.0, abs_tol=1e-9)
    assert leaf.wdl is not None and math.isclose(sum(leaf.wdl), 1.0, abs_tol=1e-9)
    assert all(p >= 0.0 for p in leaf.wdl)
    assert math.isclose(leaf.wdl[0] - leaf.wdl[2], leaf.value, abs_tol=1e-9)


@pytest.mark.parametrize("fen", VARIED)
def test_colour_mirror_gives_the_same_evaluation(fen):
    board = chess.Board(fen)
    leaf = evaluate(board)
    mirror = board.mirror()
    other = Leaf(mirror, [mirrored(m) for m in leaf.moves])
    EVALUATOR.evaluate([other])
    assert other.value == pytest.approx(leaf.value, abs=1e-12)
    assert other.priors == pytest.approx(leaf.priors, abs=1e-12)


def test_board_and_move_stack_are_left_untouched():
    board = chess.Board()
    # Ends in a position with a mate in one, so the evaluator's exact mate test runs.
    for san in ["e4", "e5", "Bc4", "Nc6", "Qh5", "Nf6"]:
        board.push_san(san)
    fen, stack = board.fen(), list(board.move_stack)
    leaf = evaluate(board)
    assert board.fen() == fen and board.move_stack == stack
    assert top_move(leaf) == "Qxf7#"
    # And with an empty move stack.
    board = chess.Board("6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1")
    evaluate(board)
    assert board.fen() == "6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1" and not board.move_stack


def test_batches_fill_every_leaf():
    leaves = [Leaf(b, list(b.legal_moves)) for b in map(chess.Board, VARIED)]
    EVALUATOR.evaluate(leaves)
    assert all(len(leaf.priors) == len(leaf.moves) for leaf in leaves)


def test_material_sets_the_sign_of_the_value():
    assert evaluate("4k3/8/8/8/8/8/8/3QK3 w - - 0 1").value > 0.8      # a queen up, to move
    assert evaluate("4k3/8/8/8/8/8/8/3QK3 b - - 0 1").value < -0.8     # a queen down, to move
    assert evaluate("3qk3/8/8/8/8/8/8/4K3 w - - 0 1").value < -0.8
    assert abs(evaluate(chess.STARTING_FEN).value) < 0.1
    # Calibration: about a pawn is worth about 0.2 to 0.3.
    assert 0.1 < evaluate("4k3/pppp4/8/8/8/8/PPPPP3/4K3 w - - 0 1").value < 0.45


def test_hanging_piece_shows_in_the_value():
    # Black to move can take the white knight on e5 for free; defended by the d4 pawn it is safe.
    free = evaluate("r1bqkb1r/pppp1ppp/2n5/4N3/8/8/PPP2PPP/RNBQKB1R b KQkq - 0 1").value
    safe = evaluate("r1bqkb1r/pppp1ppp/2n5/4N3/3P4/8/PPP3PP/RNBQKB1R b KQkq - 0 1").value
    assert free > safe + 0.3
    # The side to move with two pieces attacked by pawns can save only one.
    one = evaluate("3rk3/8/p7/1p6/2N5/5B2/8/4K3 w - - 0 1").value
    two = evaluate("3rk3/8/8/1p6/2N3p1/5B2/8/4K3 w - - 0 1").value
    assert one > two + 0.3


def test_free_captures_get_the_top_prior():
    assert top_move(evaluate("4k3/8/8/3q4/8/4N3/8/4K3 w - - 0 1")) == "Nxd5"
    assert top_move(evaluate("r3k3/8/8/8/4n3/8/8/4RK2 w - - 0 1")) == "Rxe4+"
    assert top_move(evaluate("rnbqkbnr/ppp2ppp/8/3pp3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 0 3")) in (
        "Nxe5", "exd5")
    # A defended pawn is no bargain for the queen.
    leaf = evaluate("4k3/8/2p5/3p4/8/8/8/3QK3 w - - 0 1")
    assert prior_of(leaf, "Qxd5") < 1.0 / len(leaf.moves)


@pytest.mark.parametrize("fen, mate", [
    ("6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1", "Rd8#"),
    ("3r2k1/8/8/8/8/8/5PPP/6K1 b - - 0 1", "Rd1#"),
    ("6rk/6pp/8/6N1/8/8/8/6K1 w - - 0 1", "Nf7#"),
    ("r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4", "Qxf7#"),
    ("rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR b KQkq - 0 3", "Qh4#"),
])
def test_mate_in_one_gets_the_top_prior(fen, mate):
    board = chess.Board(fen)
    if mate == "Qh4#":  # the fool's mate position after 2.g4, before the queen moves
        board = chess.Board("rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq - 0 2")
    leaf = evaluate(board)
    assert top_move(leaf) == mate
    assert prior_of(leaf, mate) > 0.9
    assert leaf.value > 0.9


def test_attacked_queen_moves_away():
    # 3.g3 attacks the black queen on h4 with a pawn.
    leaf = evaluate("rnb1kbnr/pppp1ppp/8/4p3/4P2q/2N3P1/PPPP1P1P/R1BQKBNR b KQkq - 0 3")
    board = leaf.board
    queen_moves = [(p, m) for p, m in zip(leaf.priors, leaf.moves) if m.from_square == chess.H4]
    safe = sum(p for p, m in queen_moves if not board.is_attacked_by(chess.WHITE, m.to_square))
    assert safe > 0.6
    assert prior_of(leaf, "Qxg3") < 0.02


def test_pieces_are_not_put_en_prise():
    # After 1.e4 e5 2.Nf3: Qg5 and Bb4 put a piece on a square the opponent takes for free.
    leaf = evaluate("rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2")
    average = 1.0 / len(leaf.moves)
    assert prior_of(leaf, "Qg5") < 0.2 * average
    assert prior_of(leaf, "Nc6") > average


def test_opening_prefers_centre_and_development():
    leaf = evaluate(chess.STARTING_FEN)
    ranked = sorted(zip(leaf.priors, map(leaf.board.san, leaf.moves)), reverse=True)
    assert {san for _, san in ranked[:4]} == {"e4", "d4", "Nf3", "Nc3"}
    leaf = evaluate("r1bqk2r/pppp1ppp/2n2n2/2b1p3/2B1P3/3P1N2/PPP2PPP/RNBQK2R w KQkq - 0 5")
    assert top_move(leaf) == "O-O"
    assert prior_of(leaf, "Kf1") < prior_of(leaf, "O-O") / 3


def test_passed_pawns_advance_in_the_endgame():
    leaf = evaluate("8/8/4k3/8/2P5/8/5K2/8 w - - 0 1")
    assert top_move(leaf) == "c5"
    # A pawn on the seventh rank promotes: the queen promotion dominates.
    leaf = evaluate("8/P7/8/8/8/8/k6p/4K3 w - - 0 1")
    assert top_move(leaf) == "a8=Q+"
    # Far advanced passed pawns are worth much more than back ones.
    assert evaluate("8/1P6/8/8/8/8/8/k3K3 w - - 0 1").value > evaluate("8/8/8/8/8/8/1P6/k3K3 w - - 0 1").value + 0.2


# ---------------------------------------------------------------------------- the evaluation cache

def cached_leaf(evaluator, fen):
    board = chess.Board(fen)
    leaf = Leaf(board, list(board.legal_moves))
    evaluator.evaluate([leaf])
    return leaf


def test_a_cached_evaluation_is_the_evaluation_itself():
    from engine.params import Params
    cached = HeuristicEvaluator(Params())
    for fen in VARIED + ["6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1"]:
        fresh = evaluate(fen)
        first, again = cached_leaf(cached, fen), cached_leaf(cached, fen)
        for leaf in (first, again):
            assert leaf.priors == fresh.priors and leaf.value == fresh.value
            assert leaf.wdl == fresh.wdl and leaf.mates == fresh.mates
    assert len(cached._cache) == len(set(VARIED))  # the repeated FEN was a hit
    assert cached.memory_bytes() == len(cached._cache) * 1000


def test_the_cache_key_ignores_the_clocks_but_not_the_position():
    from engine.evaluators.heuristic import position_key
    fen = "r3k2r/pppq1ppp/2n2n2/3pp3/3PP3/2N2N2/PPPQ1PPP/R3K2R w KQkq - 0 8"
    assert position_key(chess.Board(fen)) == position_key(chess.Board(fen.replace("0 8", "7 31")))
    for other in (fen.replace("KQkq", "Kkq"), fen.replace(" w ", " b "),
                  "rnbqkbnr/ppp1pppp/8/3pP3/8/8/PPPP1PPP/RNBQKBNR b KQkq - 0 2"):
        assert position_key(chess.Board(other)) != position_key(chess.Board(fen))
    ep = "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3"
    assert position_key(chess.Board(ep)) != position_key(chess.Board(ep.replace(" f6 ", " - ")))


def test_the_cache_keeps_to_nncachesize_and_to_half_the_ram_limit():
    from engine.params import Params
    params = Params(nn_cache_size=3)
    evaluator = HeuristicEvaluator(params)
    for fen in VARIED:
        cached_leaf(evaluator, fen)
    assert len(evaluator._cache) == 3
    params.nn_cache_size, params.ram_limit_mb = 200_000, 1   # half a MB: 524 entries
    for fen in VARIED:
        cached_leaf(evaluator, fen)
    assert len(evaluator._cache) == len(set(VARIED))
    params.nn_cache_size = 2                                  # lowered between searches: trimmed when asked
    assert evaluator.memory_bytes() == 2 * 1000 and len(evaluator._cache) == 2
    params.nn_cache_size = 0
    cached_leaf(evaluator, VARIED[1])
    assert evaluator.memory_bytes() == 0
    evaluator.clear()


def test_a_search_with_the_cache_searches_the_same_tree():
    """Same visits for every root move, same node count: the cache changes the speed only."""
    from engine.params import Params
    from engine.search.search import Search
    from engine.search.timeman import Limits
    from engine.search.tree import Tree
    fen = "r1bq1rk1/pp2ppbp/2np1np1/8/3NP3/2N1BP2/PPPQ2PP/R3KB1R w KQ - 3 9"
    visits, worked_out = [], []
    for evaluator in (HeuristicEvaluator(), HeuristicEvaluator(Params())):
        calls = []
        work = evaluator.evaluate_leaf
        evaluator.evaluate_leaf = lambda leaf: calls.append(1) or work(leaf)
        tree = Tree()
        tree.set_position(fen, [chess.Board(fen)], [])
        search = Search(tree, evaluator, Params())
        search.run(Limits(nodes=2500))
        search.close()
        visits.append((search.playouts, sorted((c.move, c.n) for c in tree.root_node.children)))
        worked_out.append(len(calls))
    assert visits[0] == visits[1]
    assert worked_out[1] < 0.97 * worked_out[0]  # transpositions were answered from the cache


def test_a_worker_copy_starts_with_an_empty_cache():
    import pickle
    from engine.params import Params
    evaluator = HeuristicEvaluator(Params(nn_cache_size=77))
    cached_leaf(evaluator, VARIED[0])
    copy = pickle.loads(pickle.dumps(evaluator))
    assert len(copy._cache) == 0 and copy.params.nn_cache_size == 77


def test_a_root_cut_down_to_some_moves_is_not_mistaken_for_its_position():
    """searchmoves: the same position with fewer moves has other priors, and must not get or leave the full set's."""
    from engine.params import Params
    evaluator = HeuristicEvaluator(Params())
    board = chess.Board()
    full = cached_leaf(evaluator, board.fen())
    some = [chess.Move.from_uci("a2a3"), chess.Move.from_uci("h2h4")]
    leaf = Leaf(board, some)
    evaluator.evaluate([leaf])
    assert len(leaf.priors) == 2 and sum(leaf.priors) == pytest.approx(1.0)
    assert cached_leaf(evaluator, board.fen()).priors == full.priors


def test_a_move_without_search_is_legal_and_takes_a_mate_in_one():
    from engine.evaluators.heuristic import move_without_search
    assert move_without_search(chess.Board("6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1")) == chess.Move.from_uci("d1d8")
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    assert move_without_search(board) in board.legal_moves
    assert move_without_search(chess.Board("rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3")) is None
    # a queen left hanging is not the choice
    board = chess.Board("4k3/8/8/3p4/8/8/8/3QK3 w - - 0 1")
    assert move_without_search(board) != chess.Move.from_uci("d1d4")
