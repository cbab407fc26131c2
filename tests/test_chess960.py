"""Chess960: the network encoder and policy map, both evaluators, and games through UCI.

Games are played through python-chess's ``chess.engine`` with ``chess.Board(chess960=True)`` boards, which
makes python-chess switch Arbor's ``UCI_Chess960`` on; a raw UCI test checks the notation itself.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import chess
import chess.engine
import numpy as np
import pytest

from engine.evaluators import lc0_planes as P
from engine.evaluators import lc0_policy
from engine.evaluators.base import Leaf
from engine.evaluators.heuristic import HeuristicEvaluator

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_lc0_planes import _game, _random_games, reference_planes  # noqa: E402
from conftest import tree_evaluation  # noqa: E402

# Scharnagl numbers of start positions with the king and rooks in varied places: #0 BBQNNRKR (king between
# adjacent-ish rooks f1/h1), #284 NBRKNRBQ, #455 RNBNKQRB, #711 RKBQNNRB (king next to the a-rook), #959 RKRNNQBB.
POSITIONS = (0, 284, 455, 711, 959)
# Both wings castle at once: h-side with king and rook side by side (f1g1), a-side over three squares (f1b1).
CASTLES = "1r3kr1/pppppppp/8/8/8/8/PPPPPPPP/1R3KR1 w GBgb - 0 1"
# The only mate is a-side castling: king b1 -> c1, rook a1 -> d1 down the open d-file.
MATE_A_SIDE = "2b1b3/2pkp3/8/6N1/1N6/8/8/RK6 w Q - 0 1"
# The only mate is h-side castling: the king stays on g1, the rook jumps over it to f1.
MATE_H_SIDE = "4b1b1/4pkp1/8/8/3N3N/8/8/6KR w K - 0 1"


def board960(fen: str) -> chess.Board:
    return chess.Board(fen, chess960=True)


def kings_and_rooks(n: int) -> chess.Board:
    """Start position ``n`` with only kings and rooks left on the back ranks: castling is legal at once."""
    board = chess.Board.from_chess960_pos(n)
    for sq in chess.SquareSet(chess.BB_RANK_1 | chess.BB_RANK_8):
        if board.piece_type_at(sq) not in (chess.KING, chess.ROOK):
            board.remove_piece_at(sq)
    return board


def to_standard(move: chess.Move, board: chess.Board) -> chess.Move:
    """e1h1 -> e1g1 and e1a1 -> e1c1 for a castling move of a standard-looking position."""
    if board.is_castling(move):
        return chess.Move(move.from_square, move.from_square + (2 if move.to_square > move.from_square else -2))
    return move


# ---------------------------------------------------------------------------------------------- encoder
def test_castling_planes_follow_the_side_of_the_rook():
    # White may castle h-side only (g1), black a-side only (b8): lc0's booleans, not the corners.
    board = board960("1r3kr1/pppppppp/8/8/8/8/PPPPPPPP/1R3KR1 w Gb - 0 1")
    planes = P.encode(board, [])
    assert not planes[104].any() and planes[105].all()          # we (white): a-side no, h-side yes
    assert planes[106].all() and not planes[107].any()          # they (black): a-side yes, h-side no
    board.turn = chess.BLACK
    planes = P.encode(board, [])
    assert planes[104].all() and not planes[105].any() and not planes[106].any() and planes[107].all()
    # Start position #0 (rooks on f1 and h1): all four rights, although no rook stands on a1 or a8.
    assert P.encode(chess.Board.from_chess960_pos(0), [])[104:108].all()


def test_random_960_games_match_reference():
    fens = [chess.Board.from_chess960_pos(n).fen() for n in POSITIONS + (100, 518, 600)] + [CASTLES]
    games = _random_games(150, seed=5, fens=fens, chess960=True)
    with_rights = 0
    for fen, ucis in games:
        final, history, reps = _game(fen, ucis, chess960=True)
        with_rights += final.castling_rights != 0
        got = P.encode(final, history)
        bad = np.nonzero((got != reference_planes(final, history, reps)).any(axis=(1, 2)))[0]
        assert not len(bad), f"{fen} {ucis}: planes {bad.tolist()} differ"
    assert with_rights > 50


def test_repetition_needs_the_same_castling_rights():
    # From #0 the f-rooks step aside and back: the pieces are home again, but the a-side rights are gone,
    # so the position does not repeat the start; four more plies later it does repeat.
    ucis = "e1d3 e8d6 f1e1 f8e8 e1f1 e8f8 d3e1 d6e8".split()
    start = chess.Board.from_chess960_pos(0).fen()
    final, history, reps = _game(start, ucis, chess960=True)
    assert final.board_fen() == history[0].board_fen() and not reps[-1]
    assert P.gather(final, history)[P._REP] == 0
    final, history, reps = _game(start, ucis + "e1d3 e8d6 d3e1 d6e8".split(), chess960=True)
    assert reps[-1] and P.gather(final, history)[P._REP] == 1
    assert (P.encode(final, history) == reference_planes(final, history, reps)).all()


def test_cache_key_tells_castling_rooks_apart():
    # Two a-side rooks, the right on a1 (castling blocked by b1) or on b1 (castling legal): the classical
    # planes are the same, the legal moves are not, so the rows (cache keys) must differ.
    a, b = board960("4k3/8/8/8/8/8/8/RR2K3 w A - 0 1"), board960("4k3/8/8/8/8/8/8/RR2K3 w B - 0 1")
    assert a.legal_moves.count() != b.legal_moves.count()
    assert P.gather(a) != P.gather(b)
    assert (P.rows_to_planes([P.gather(a)]) == P.rows_to_planes([P.gather(b)])).all()


def test_standard_games_encode_the_same_in_chess960_mode():
    fens = (None, "r3k2r/pppq1ppp/2n1bn2/3pp3/3PP3/2N1BN2/PPPQ1PPP/R3K2R w KQkq - 4 9")
    for fen, ucis in _random_games(40, seed=8, fens=fens):
        standard = P.encode(*_game(fen, ucis)[:2])
        chess960 = P.encode(*_game(fen, ucis, chess960=True)[:2])   # push_uci turns e1g1 into e1h1
        assert (standard == chess960).all(), (fen, ucis)


# ---------------------------------------------------------------------------------------------- policy map
@pytest.mark.parametrize("n", range(0, 960, 7))
def test_castling_policy_index_is_king_to_rook(n):
    board = kings_and_rooks(n)
    for turn in (chess.WHITE, chess.BLACK):
        board.turn = turn
        moves = list(board.legal_moves)
        castles = [m for m in moves if board.is_castling(m)]
        assert castles
        for m in castles:
            rel = (m if turn else chess.Move(chess.square_mirror(m.from_square), chess.square_mirror(m.to_square)))
            idx = lc0_policy.policy_index(board, m)
            assert idx == lc0_policy.MOVE_INDEX[rel.uci()]
            assert lc0_policy.index_to_move(idx, turn) == m
        indices = lc0_policy.policy_indices_list(board, moves)
        assert indices == [lc0_policy.policy_index(board, m) for m in moves]
        assert len(set(indices)) == len(indices)


def test_policy_indices_same_for_standard_and_960_notation():
    fen = "r3k2r/pppq1ppp/2n1bn2/3pp3/3PP3/2N1BN2/PPPQ1PPP/R3K2R b KQkq - 4 9"
    std, c960 = chess.Board(fen), board960(fen)
    moves = list(c960.legal_moves)
    assert lc0_policy.policy_indices_list(c960, moves) == \
        lc0_policy.policy_indices_list(std, [to_standard(m, c960) for m in moves])


# ---------------------------------------------------------------------------------------------- heuristic
HEURISTIC = HeuristicEvaluator()


def evaluate(board: chess.Board) -> Leaf:
    leaf = Leaf(board, list(board.legal_moves))
    HEURISTIC.evaluate([leaf])
    return leaf


@pytest.mark.parametrize("fen", [
    "r3k2r/pppq1ppp/2n1bn2/3pp3/3PP3/2N1BN2/PPPQ1PPP/R3K2R w KQkq - 4 9",
    "r3k2r/pppq1ppp/2n1bn2/3pp3/3PP3/2N1BN2/PPPQ1PPP/R3K2R b KQkq - 4 9",
    "r3k2r/1b3ppp/8/8/8/8/PPPPP2P/R3K2R w KQkq - 0 1",     # the h1 rook is attacked: still no "capture"
])
def test_heuristic_scores_960_castling_as_standard_castling(fen):
    """King-takes-rook castling is neither a capture nor a king walk: the same value and priors as e1g1."""
    std, c960 = evaluate(chess.Board(fen)), evaluate(board960(fen))
    assert c960.value == std.value and c960.wdl == std.wdl
    priors = dict(zip(std.moves, std.priors))
    for m, p in zip(c960.moves, c960.priors):
        assert p == pytest.approx(priors[to_standard(m, c960.board)], abs=1e-12), m.uci()


@pytest.mark.parametrize("n", range(0, 960, 11))
def test_heuristic_prefers_castling_to_king_walks(n):
    for turn in (chess.WHITE, chess.BLACK):
        board = kings_and_rooks(n)
        board.turn = turn
        leaf = evaluate(board)
        priors = dict(zip(leaf.moves, leaf.priors))
        castles = [priors[m] for m in leaf.moves if board.is_castling(m)]
        walks = [priors[m] for m in leaf.moves if board.piece_type_at(m.from_square) == chess.KING
                 and not board.is_castling(m)]
        assert castles and (not walks or min(castles) > max(walks))
        assert -0.2 < leaf.value < 0.2      # symmetric material: about level


# ---------------------------------------------------------------------------------------------- network
@pytest.fixture(scope="module")
def nets(tmp_path_factory):
    pytest.importorskip("onnx")
    import test_network as T
    folder = tmp_path_factory.mktemp("nets960")
    bias = np.random.default_rng(4).standard_normal(1858).astype(np.float32)
    return {"module": T, "bias": bias, "bias_net": T.bias_net(folder / "b.onnx", bias),
            "echo": T.echo_net(folder / "e.onnx", 84), "dense": T.dense_net(folder / "d.onnx")}


def test_network_sees_960_castling_planes(nets):
    """An echo net returns planes 84..111 (castling planes included): they match the reference."""
    from engine.evaluators.network import NetworkEvaluator
    from engine.params import Params
    ev = NetworkEvaluator(nets["echo"], Params(nn_cache_size=0))
    fens = [chess.Board.from_chess960_pos(n).fen() for n in POSITIONS] + [CASTLES]
    leaves, expected = [], []
    for fen, ucis in _random_games(20, seed=2, fens=fens, chess960=True):
        final, history, reps = _game(fen, ucis, chess960=True)
        if any(final.legal_moves):
            leaves.append(Leaf(final, list(final.legal_moves), history))
            expected.append(reference_planes(final, history, reps))
    out = ev.run_planes(P.rows_to_planes([P.gather(leaf.board, leaf.history) for leaf in leaves]))[0]
    for row, want in enumerate(expected):
        assert np.array_equal(out[row, :1792], want[84:112].reshape(-1))
    for leaf, want in list(zip(leaves, expected))[::4]:   # the tree writes the same planes itself
        assert np.array_equal(tree_evaluation(ev, leaf.board, leaf.history)[3][0], want)


def test_network_priors_of_960_castling(nets):
    from engine.evaluators.network import NetworkEvaluator
    from engine.params import Params
    ev = NetworkEvaluator(nets["bias_net"], Params(policy_temperature=1.0))
    bias = nets["bias"]
    for fen in (CASTLES, CASTLES.replace(" w ", " b ")):
        leaf = Leaf(board960(fen), list(board960(fen).legal_moves))
        ev.evaluate([leaf])
        turn = leaf.board.turn
        idx = []
        for m in leaf.moves:
            rel = m if turn else chess.Move(chess.square_mirror(m.from_square), chess.square_mirror(m.to_square))
            idx.append(lc0_policy.MOVE_INDEX[rel.uci()])     # castling: king to rook, as lc0 writes it
        assert np.allclose(leaf.priors, nets["module"]._softmax_fast(bias[idx]), atol=1e-6)
        # The tree's decoding (castling as the king taking its rook, its own move ids) gives the same priors.
        priors = tree_evaluation(ev, leaf.board, [])[0]
        assert all(abs(priors[m] - p) < 2e-5 for m, p in zip(leaf.moves, leaf.priors))
    # The cache keeps positions that differ only in the castling rook apart: their keys differ.
    from engine.search.tree import Tree
    keys = []
    for fen in ("4k3/8/8/8/8/8/8/RR2K3 w A - 0 1", "4k3/8/8/8/8/8/8/RR2K3 w B - 0 1"):
        tree = Tree()
        tree.set_position(fen, [board960(fen)], [])
        keys.append(tree.positions.cache_key(tree.root_index, True))
    assert keys[0] != keys[1]


# ---------------------------------------------------------------------------------------------- through UCI
def play_960_game(engine: chess.engine.SimpleEngine, board: chess.Board, plies: int, nodes: int,
                  force_wing: str | None = None) -> list[tuple[bool, str]]:
    """Play up to ``plies`` plies, checking each move; (colour, "a"/"h") of every castling move.

    ``force_wing``: the first time a side may castle on that wing, only that move is searched (searchmoves).
    """
    castled = []
    forced = set()
    for _ in range(plies):
        if board.is_game_over():
            break
        root = None
        if force_wing and board.turn not in forced:
            wing = [m for m in board.legal_moves if board.is_castling(m)
                    and board.is_queenside_castling(m) == (force_wing == "a")]
            if wing:
                root = wing
                forced.add(board.turn)
        result = engine.play(board, chess.engine.Limit(nodes=nodes), root_moves=root)
        assert result.move in board.legal_moves, (board.fen(), result.move)
        if root:
            assert result.move in root
        if board.is_castling(result.move):
            castled.append((board.turn, "a" if board.is_queenside_castling(result.move) else "h"))
        board.push(result.move)
    return castled


def test_games_from_960_positions_castle_on_both_wings(engine):
    """Arbor against itself from several 960 starts; in half the games the first castling is steered to a
    wing with searchmoves. Every move is legal; castling happens on both wings."""
    # The heuristic evaluator: games that do not change with each shipped net (the new net never castled h-side here).
    engine.configure({"Evaluator": "heuristic"})
    castled = []
    for i, n in enumerate(POSITIONS):
        board = chess.Board.from_chess960_pos(n)
        castled += play_960_game(engine, board, plies=40, nodes=40, force_wing=(None, "a", "h")[i % 3])
        assert engine.protocol.config.get("UCI_Chess960") is True   # python-chess switched it on
    wings = {w for _, w in castled}
    assert wings == {"a", "h"}, castled
    assert {c for c, _ in castled} == {chess.WHITE, chess.BLACK}, castled


@pytest.mark.parametrize("fen,wing", [(MATE_A_SIDE, "a"), (MATE_H_SIDE, "h")])
def test_arbor_finds_castling_mates(engine, fen, wing):
    board = board960(fen)
    result = engine.play(board, chess.engine.Limit(nodes=400), info=chess.engine.INFO_SCORE)
    assert board.is_castling(result.move) and board.is_queenside_castling(result.move) == (wing == "a")
    assert result.info["score"].relative == chess.engine.Mate(1)


def test_uci_notation_is_king_takes_rook(raw):
    raw.send("setoption name UCI_Chess960 value true")
    raw.send(f"position fen {board960(MATE_A_SIDE).shredder_fen()}")
    raw.send("go nodes 400")
    assert raw.read_until("bestmove")[-1].split()[1] == "b1a1"
    # The rook jumps over a king that does not move: g1h1, also as a searchmove.
    raw.send(f"position fen {board960(MATE_H_SIDE).fen()}")
    raw.send("go nodes 50 searchmoves g1h1")
    assert raw.read_until("bestmove")[-1].split()[1] == "g1h1"
    # Castling in the move list of a position: king takes rook.
    raw.send(f"position fen {CASTLES} moves f1g1 f8b8")
    raw.send("go nodes 20")
    move = raw.read_until("bestmove")[-1].split()[1]
    after = board960(CASTLES)
    after.push_uci("f1g1")
    after.push_uci("f8b8")
    assert chess.Move.from_uci(move) in after.legal_moves


def test_network_evaluator_plays_960(nets, tmp_path):
    """Arbor with a (tiny) network through UCI: legal 960 games, castling steered to both wings."""
    eng = chess.engine.SimpleEngine.popen_uci([sys.executable, "-m", "engine"],
                                              cwd=str(Path(__file__).resolve().parent.parent), timeout=30)
    try:
        eng.configure({"WeightsFile": nets["dense"], "Evaluator": "network"})
        castled = []
        for wing in ("a", "h"):
            castled += play_960_game(eng, kings_and_rooks(random.Random(wing).randrange(960)), plies=12,
                                     nodes=30, force_wing=wing)
        assert {w for _, w in castled} == {"a", "h"}
    finally:
        eng.quit()
