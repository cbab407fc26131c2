"""NetworkEvaluator with tiny ONNX networks built here, whose outputs are known exactly."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import chess
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from engine.evaluators import lc0_planes, lc0_policy  # noqa: E402
from engine.evaluators.base import EvaluatorError, Leaf  # noqa: E402
from engine.evaluators.network import NetworkEvaluator, fast_exp, raw_policy_model  # noqa: E402
from engine.params import Params  # noqa: E402
from engine.search.search import Search  # noqa: E402
from engine.search.timeman import Limits  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import tree_at, tree_evaluation  # noqa: E402
from test_lc0_planes import _game, _random_games, reference_planes  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------------------------------- net builders
def _model(nodes, inits, outputs, in_shape=("batch", 112, 8, 8), in_name="/input/planes", meta=None):
    graph = helper.make_graph(nodes, "t", [helper.make_tensor_value_info(in_name, TensorProto.FLOAT, list(in_shape))],
                              outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    if meta:
        helper.set_model_props(model, meta)
    return model


def _out(name, n, batch="batch"):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, [batch, n])


def bias_net(path, policy_bias, head="wdl", head_bias=None, batch="batch", meta=None):
    """policy = 0 * sum(planes) + bias; the value head likewise: outputs independent of the position."""
    head_n = 3 if head == "wdl" else 1
    head_bias = np.zeros(head_n, np.float32) if head_bias is None else np.asarray(head_bias, np.float32)
    nodes = [
        helper.make_node("ReduceSum", ["/input/planes", "axes"], ["s0"], keepdims=0),   # [B]
        helper.make_node("Unsqueeze", ["s0", "ax1"], ["s"]),                             # [B, 1]
        helper.make_node("Mul", ["s", "zero"], ["z"]),                                   # zeros [B, 1]
        helper.make_node("Add", ["z", "pbias"], ["/output/policy"]),
        helper.make_node("Add", ["z", "vbias"], ["/output/" + head]),
    ]
    inits = [numpy_helper.from_array(np.array([1, 2, 3], np.int64), "axes"),
             numpy_helper.from_array(np.array([1], np.int64), "ax1"),
             numpy_helper.from_array(np.zeros((1, 1), np.float32), "zero"),
             numpy_helper.from_array(np.asarray(policy_bias, np.float32).reshape(1, 1858), "pbias"),
             numpy_helper.from_array(head_bias.reshape(1, head_n), "vbias")]
    onnx.save(_model(nodes, inits, [_out("/output/policy", 1858, batch), _out("/output/" + head, head_n, batch)],
                     meta=meta), path)
    return str(path)


def echo_net(path, first_plane, meta=None):
    """policy[:, :1792] = planes[:, first_plane:first_plane + 28] flattened (the rest zero); wdl constant."""
    nodes = [
        helper.make_node("Flatten", ["/input/planes"], ["flat"], axis=1),
        helper.make_node("Slice", ["flat", "start", "end", "axis"], ["part"]),
        helper.make_node("Pad", ["part", "pads"], ["/output/policy"]),
        helper.make_node("ReduceSum", ["flat", "axis"], ["tot"], keepdims=1),
        helper.make_node("Mul", ["tot", "zero3"], ["z3"]),
        helper.make_node("Add", ["z3", "wdl"], ["/output/wdl"]),
    ]
    start = first_plane * 64
    inits = [numpy_helper.from_array(np.array([start], np.int64), "start"),
             numpy_helper.from_array(np.array([start + 1792], np.int64), "end"),
             numpy_helper.from_array(np.array([1], np.int64), "axis"),
             numpy_helper.from_array(np.array([0, 0, 0, 66], np.int64), "pads"),
             numpy_helper.from_array(np.zeros((1, 3), np.float32), "zero3"),
             numpy_helper.from_array(np.array([[0.5, 0.3, 0.2]], np.float32), "wdl")]
    onnx.save(_model(nodes, inits, [_out("/output/policy", 1858), _out("/output/wdl", 3)], meta=meta), path)
    return str(path)


def dense_net(path, seed=0, head="wdl"):
    """A position-dependent net: 1x1 conv 112 -> 4, then dense 256 -> 1858 (policy) and 256 -> 3/1."""
    rng = np.random.default_rng(seed)
    head_n = 3 if head == "wdl" else 1
    nodes = [
        helper.make_node("Conv", ["/input/planes", "cw", "cb"], ["c"], kernel_shape=[1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Flatten", ["r"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "pw", "pb"], ["/output/policy"]),
        helper.make_node("Gemm", ["f", "vw", "vb"], ["v"]),
        helper.make_node("Softmax" if head == "wdl" else "Tanh", ["v"], ["/output/" + head], **({"axis": 1} if head == "wdl" else {})),
    ]
    inits = [numpy_helper.from_array((rng.standard_normal((4, 112, 1, 1)) * 0.3).astype(np.float32), "cw"),
             numpy_helper.from_array((rng.standard_normal(4) * 0.1).astype(np.float32), "cb"),
             numpy_helper.from_array((rng.standard_normal((256, 1858)) * 0.2).astype(np.float32), "pw"),
             numpy_helper.from_array(np.zeros(1858, np.float32), "pb"),
             numpy_helper.from_array((rng.standard_normal((256, head_n)) * 0.1).astype(np.float32), "vw"),
             numpy_helper.from_array(np.zeros(head_n, np.float32), "vb")]
    onnx.save(_model(nodes, inits, [_out("/output/policy", 1858), _out("/output/" + head, head_n)]), path)
    return str(path)


def _leaf(fen=None, ucis=()):
    final, history, _ = _game(fen, list(ucis))
    return Leaf(final, list(final.legal_moves), history)


def _softmax_fast(x, t=1.0):
    e = fast_exp((np.asarray(x, np.float32) - np.max(x)) / np.float32(t))
    return e / e.sum()


# ---------------------------------------------------------------------------------------------- decoding
def test_priors_are_softmax_over_legal_moves(tmp_path):
    bias = np.random.default_rng(1).standard_normal(1858).astype(np.float32) * 2
    ev = NetworkEvaluator(bias_net(tmp_path / "b.onnx", bias, head_bias=[0.6, 0.3, 0.1]), Params(policy_temperature=1.0))
    for leaf in (_leaf(), _leaf(None, ["e2e4"]), _leaf("r3k2r/1P4P1/8/8/8/8/1p4p1/R3K2R b KQkq - 0 1")):
        ev.evaluate([leaf])
        idx = [lc0_policy.policy_index(leaf.board, m) for m in leaf.moves]
        assert np.allclose(leaf.priors, _softmax_fast(bias[idx]), atol=1e-6)
        exact = np.exp(bias[idx] - bias[idx].max())
        assert np.allclose(leaf.priors, exact / exact.sum(), atol=3e-3)   # FastExp is within ~0.1%
        assert abs(sum(leaf.priors) - 1) < 1e-5 and len(leaf.priors) == len(leaf.moves)
        assert leaf.wdl == pytest.approx((0.6, 0.3, 0.1), abs=1e-6)
        assert leaf.value == pytest.approx(0.5, abs=1e-6) and leaf.raw_value == pytest.approx(0.5, abs=1e-6)


def test_wdl_logits_are_read_as_their_softmax(tmp_path):
    """A WDL head that ends before its softmax (logits, some negative) gives the softmax's probabilities."""
    logits = np.array([2.0, 0.0, -1.0])
    ev = NetworkEvaluator(bias_net(tmp_path / "l.onnx", np.zeros(1858), head_bias=logits), Params())
    leaf = _leaf()
    ev.evaluate([leaf])
    p = np.exp(logits) / np.exp(logits).sum()
    assert leaf.wdl == pytest.approx(tuple(p), abs=1e-6)
    assert leaf.value == pytest.approx(p[0] - p[2], abs=1e-6) and leaf.raw_value == leaf.value


def test_temperature_read_at_call_time(tmp_path):
    bias = np.linspace(-3, 3, 1858).astype(np.float32)
    params = Params(policy_temperature=1.0)
    ev = NetworkEvaluator(bias_net(tmp_path / "b.onnx", bias), params)
    a, b = _leaf(), _leaf()
    ev.evaluate([a])
    params.set("PolicyTemperature", "2.5")
    ev.evaluate([b])
    idx = [lc0_policy.policy_index(b.board, m) for m in b.moves]
    assert np.allclose(b.priors, _softmax_fast(bias[idx], 2.5), atol=1e-6)
    assert not np.allclose(a.priors, b.priors, atol=1e-3)
    priors, _, _, _ = tree_evaluation(ev, chess.Board(), [])   # the tree reads it at its finish too
    assert all(abs(priors[m] - p) < 2e-5 for m, p in zip(b.moves, b.priors))


def test_priors_made_at_another_temperature_are_not_served_from_the_cache(tmp_path):
    """The tree's cache keeps priors: a search at another PolicyTemperature (or ForcingPriorFloor) empties it."""
    params = Params(policy_temperature=1.0, tactical_probe_share=0.0)
    ev = NetworkEvaluator(dense_net(tmp_path / "d.onnx"), params)
    runs = []
    run = ev.run_planes
    ev.run_planes = lambda planes: runs.append(len(planes)) or run(planes)
    tree = tree_at(chess.Board(), [])
    search = Search(tree, ev, params)
    search.run(Limits(nodes=100))
    first = sum(runs)
    tree.clear()
    search.run(Limits(nodes=100))
    assert sum(runs) - first < first / 2          # the same tree again, mostly from the cache
    params.set("PolicyTemperature", "2.5")
    tree.clear()
    before = sum(runs)
    search.run(Limits(nodes=100))
    assert sum(runs) - before >= first * 0.9      # every position evaluated again


def test_strong_preference_and_illegal_moves(tmp_path):
    bias = np.zeros(1858, np.float32)
    bias[lc0_policy.MOVE_INDEX["g1f3"]] = 30.0
    bias[lc0_policy.MOVE_INDEX["a1a8"]] = 60.0            # illegal in the start position: must get nothing
    ev = NetworkEvaluator(bias_net(tmp_path / "b.onnx", bias), Params())
    leaf = _leaf()
    ev.evaluate([leaf])
    best = leaf.moves[int(np.argmax(leaf.priors))]
    assert best.uci() == "g1f3" and max(leaf.priors) > 0.99
    assert abs(sum(leaf.priors) - 1) < 1e-5


def test_value_head_net(tmp_path):
    ev = NetworkEvaluator(bias_net(tmp_path / "v.onnx", np.zeros(1858), head="value", head_bias=[-0.4]), Params())
    leaf = _leaf()
    ev.evaluate([leaf])
    assert leaf.value == pytest.approx(-0.4, abs=1e-6) and leaf.raw_value == pytest.approx(-0.4, abs=1e-6)
    assert leaf.wdl == pytest.approx((0.3, 0.0, 0.7), abs=1e-6)
    assert not ev.has_wdl and ev.needs_history and ev.name == "network"


def _position_for(index, turn):
    """A legal position where policy ``index`` is a legal move of ``turn``, and that move."""
    move = lc0_policy.index_to_move(index, chess.WHITE)
    frm, to, promo = move.from_square, move.to_square, move.promotion
    dr = abs(chess.square_rank(frm) - chess.square_rank(to))
    df = abs(chess.square_file(frm) - chess.square_file(to))
    board = chess.Board(None)
    if promo:
        piece = chess.PAWN
    elif {dr, df} == {1, 2}:
        piece = chess.KNIGHT
    else:
        piece = chess.QUEEN
    board.set_piece_at(frm, chess.Piece(piece, chess.WHITE))
    if promo and df:
        board.set_piece_at(to, chess.Piece(chess.KNIGHT, chess.BLACK))
    for ks in chess.SQUARES:
        for ks2 in chess.SQUARES:
            if len({ks, ks2, frm, to}) < 4:
                continue
            b = board.copy()
            b.set_piece_at(ks, chess.Piece(chess.KING, chess.WHITE))
            b.set_piece_at(ks2, chess.Piece(chess.KING, chess.BLACK))
            if turn == chess.BLACK:
                b = b.mirror()                       # colours swapped, ranks flipped, black to move
            else:
                b.turn = chess.WHITE
            m = move if turn == chess.WHITE else chess.Move(chess.square_mirror(frm), chess.square_mirror(to), promo)
            if b.is_valid() and m in b.legal_moves:
                return b, m
    raise AssertionError(f"no position for index {index}")


@pytest.mark.parametrize("turn", [chess.WHITE, chess.BLACK])
def test_every_index_decodes_to_its_move(tmp_path, turn):
    """Each of the 1858 outputs, made the only large logit, selects exactly its move: in the evaluator's decoding
    of python-chess leaves, and in the tree's, of its own move ids (castling as the king taking its rook)."""
    ev = NetworkEvaluator(bias_net(tmp_path / "b.onnx", np.zeros(1858)), Params(nn_cache_size=0))
    rng = random.Random(5)
    wanted = {}

    def run_planes(planes):
        policy = np.zeros((len(planes), 1858), np.float32)
        policy[:, wanted["index"]] = 25.0
        return policy, np.ones(len(planes)), np.zeros(len(planes))
    ev.run_planes = run_planes
    for index in range(1858):
        board, move = _position_for(index, turn)
        wanted["index"] = index
        moves = list(board.legal_moves)
        rng.shuffle(moves)
        leaf = Leaf(board, moves, ())
        ev.evaluate([leaf])
        best = leaf.moves[int(np.argmax(leaf.priors))]
        assert best == move and max(leaf.priors) > 0.99, (index, move.uci())
        if index % 7 == 0:   # (a tree a position costs more: every seventh)
            priors, _, _, _ = tree_evaluation(ev, board, [])
            assert max(priors, key=priors.get) == move and priors[move] > 0.99, (index, move.uci())


def test_castling_and_underpromotion_priors(tmp_path):
    bias = np.zeros(1858, np.float32)
    bias[lc0_policy.MOVE_INDEX["e1h1"]] = 20.0      # castling short, from the mover's side
    ev = NetworkEvaluator(bias_net(tmp_path / "b.onnx", bias), Params())
    for fen, want in (("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", "e1g1"), ("r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1", "e8g8")):
        leaf = _leaf(fen)
        ev.evaluate([leaf])
        assert leaf.moves[int(np.argmax(leaf.priors))].uci() == want
        priors, _, _, _ = tree_evaluation(ev, chess.Board(fen), [])
        assert max(priors, key=priors.get).uci() == want
    bias[:] = 0
    bias[lc0_policy.MOVE_INDEX["b7a8r"]] = 20.0
    ev = NetworkEvaluator(bias_net(tmp_path / "c.onnx", bias), Params())
    leaf = _leaf("r3k3/1P6/8/8/8/8/1p6/R3K3 b - - 0 1")     # black: b2a1r is b7a8r mirrored
    ev.evaluate([leaf])
    assert leaf.moves[int(np.argmax(leaf.priors))].uci() == "b2a1r"


# ---------------------------------------------------------------------------------------------- encoding via a net
@pytest.mark.parametrize("first_plane", [0, 28, 56, 84])
def test_every_plane_reaches_the_network(tmp_path, first_plane):
    """An echo net copies 28 input planes to the policy output: compare with the reference encoder."""
    ev = NetworkEvaluator(echo_net(tmp_path / "e.onnx", first_plane), Params(nn_cache_size=0))
    fens = (None, "r3k2r/pppq1ppp/2n1bn2/3pp3/3PP3/2N1BN2/PPPQ1PPP/R3K2R b KQkq - 4 9",
            "rnbqkbnr/ppp1pppp/8/3pP3/8/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 3", "4k3/8/8/8/8/8/8/4K2R w K - 97 120")
    games = _random_games(24, seed=3, fens=fens) + [(None, "g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1".split())]
    leaves, expected = [], []
    for fen, ucis in games:
        final, history, reps = _game(fen, ucis)
        if not any(final.legal_moves):
            continue
        leaves.append(Leaf(final, list(final.legal_moves), history))
        expected.append(reference_planes(final, history, reps))
    rows = [lc0_planes.gather(leaf.board, leaf.history) for leaf in leaves]
    out = ev.run_planes(lc0_planes.rows_to_planes(rows))[0]
    for row, want in enumerate(expected):
        assert np.array_equal(out[row, :1792], want[first_plane:first_plane + 28].reshape(-1))
        assert not out[row, 1792:].any()
    for leaf, want in list(zip(leaves, expected))[::5]:   # the tree writes the same planes itself
        planes = tree_evaluation(ev, leaf.board, leaf.history)[3]
        assert np.array_equal(planes[0], want)


def test_no_history_metadata(tmp_path):
    ev = NetworkEvaluator(echo_net(tmp_path / "e.onnx", 0, meta={"arbor.history": "none"}), Params())
    assert ev.needs_history is False
    final, history, reps = _game(None, "e2e4 e7e5 g1f3 g8f6".split())
    rows = [lc0_planes.gather(final, (), False)]
    planes = ev.run_planes(lc0_planes.rows_to_planes(rows))[0][0, :1792].reshape(28, 8, 8)
    assert np.array_equal(planes[:13], reference_planes(final, history, reps)[:13])
    assert not planes[13:].any()
    written = tree_evaluation(ev, final, history)[3][0]   # the tree leaves the history out too
    assert np.array_equal(written[:13], reference_planes(final, history, reps)[:13]) and not written[13:104].any()


# ---------------------------------------------------------------------------------------------- batching / cache
def _mixed_leaves(n, seed=9):
    out = []
    for fen, ucis in _random_games(n, seed=seed, fens=(None, "r3k2r/pppq1ppp/2n1bn2/3pp3/3PP3/2N1BN2/PPPQ1PPP/R3K2R w KQkq - 4 9")):
        final, history, _ = _game(fen, ucis)
        if any(final.legal_moves):
            out.append(Leaf(final, list(final.legal_moves), history))
    return out


def _copy(leaf):
    return Leaf(leaf.board, leaf.moves, leaf.history)


def test_the_tree_decodes_as_the_evaluator_does(tmp_path):
    """The tree's compiled input planes and decoding against the evaluator's python-chess path, position by position
    with their histories: the same priors (to the 16 bits a block keeps them in), value and draw probability."""
    ev = NetworkEvaluator(dense_net(tmp_path / "d.onnx"), Params())
    leaves = _mixed_leaves(40)
    batched = [_copy(l) for l in leaves]
    ev.evaluate(batched)
    for leaf in batched:
        priors, value, draw, _ = tree_evaluation(ev, leaf.board, leaf.history)
        assert set(priors) == set(leaf.moves)
        assert all(abs(priors[m] - p) < 2e-5 for m, p in zip(leaf.moves, leaf.priors)), leaf.board.fen()
        assert value == pytest.approx(leaf.value, abs=1e-6) and draw == pytest.approx(leaf.wdl[1], abs=1e-6)


def gather_net(path, seed=0, axis=1, constant_node=False):
    """dense_net with lc0's policy layout: a raw policy of 80 x 64 logits, mapped to the 1858 moves by a
    Gather of constant indices (an initializer, or a Constant node as torch's exporter writes it)."""
    rng = np.random.default_rng(seed)
    columns = rng.permutation(80 * 64)[:1858].astype(np.int32)
    nodes = [
        helper.make_node("Conv", ["/input/planes", "cw", "cb"], ["c"], kernel_shape=[1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Flatten", ["r"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "pw", "pb"], ["raw"]),
        helper.make_node("Gather", ["raw", "map"], ["/output/policy"], axis=axis),
        helper.make_node("Gemm", ["f", "vw", "vb"], ["v"]),
        helper.make_node("Softmax", ["v"], ["/output/wdl"], axis=1),
    ]
    inits = [numpy_helper.from_array((rng.standard_normal((4, 112, 1, 1)) * 0.3).astype(np.float32), "cw"),
             numpy_helper.from_array((rng.standard_normal(4) * 0.1).astype(np.float32), "cb"),
             numpy_helper.from_array((rng.standard_normal((256, 80 * 64)) * 0.2).astype(np.float32), "pw"),
             numpy_helper.from_array(np.zeros(80 * 64, np.float32), "pb"),
             numpy_helper.from_array((rng.standard_normal((256, 3)) * 0.1).astype(np.float32), "vw"),
             numpy_helper.from_array(np.zeros(3, np.float32), "vb")]
    if constant_node:
        nodes.insert(0, helper.make_node("Constant", [], ["map"], value=numpy_helper.from_array(columns, "map")))
    else:
        inits.append(numpy_helper.from_array(columns, "map"))
    onnx.save(_model(nodes, inits, [_out("/output/policy", 1858), _out("/output/wdl", 3)]), path)
    return str(path)


@pytest.mark.parametrize("constant_node", [False, True])
def test_the_policy_gather_is_skipped_with_the_same_priors(tmp_path, monkeypatch, constant_node):
    """A net whose policy is a constant Gather of a raw policy (every lc0 and Arbor net) is run without the
    Gather; the legal moves' logits are read from the raw policy, and priors and values are exactly those of
    the net as written."""
    path = gather_net(tmp_path / "g.onnx", constant_node=constant_node)
    leaves = _mixed_leaves(30)
    fast = NetworkEvaluator(path, Params(nn_cache_size=0))
    assert fast._policy_map is not None
    monkeypatch.setattr("engine.evaluators.network.SKIP_GATHER_MAX_BYTES", 0)
    plain = NetworkEvaluator(path, Params(nn_cache_size=0))
    assert plain._policy_map is None
    a, b = [_copy(l) for l in leaves], [_copy(l) for l in leaves]
    fast.evaluate(a)
    plain.evaluate(b)
    for x, y in zip(a, b):
        assert x.priors == y.priors and x.value == y.value and x.wdl == y.wdl


def test_only_lc0_s_policy_map_is_taken_out_of_the_graph(tmp_path):
    """raw_policy_model rewrites only a constant Gather along the move axis; any other graph is run as written."""
    found = raw_policy_model(gather_net(tmp_path / "g.onnx", seed=3))
    assert found is not None and found[1] == "raw"
    expected = np.random.default_rng(3).permutation(80 * 64)[:1858]
    assert found[2].dtype == np.int64 and (found[2] == expected).all()
    assert raw_policy_model(gather_net(tmp_path / "a.onnx", axis=0)) is None
    assert raw_policy_model(dense_net(tmp_path / "d.onnx")) is None
    assert NetworkEvaluator(dense_net(tmp_path / "d.onnx"), Params())._policy_map is None


def test_a_position_twice_in_one_batch_is_evaluated_once(tmp_path):
    """Transpositions (a net without history sees only the position): a batch evaluates each position once, and
    every leaf gets its evaluation."""
    ev = NetworkEvaluator(echo_net(tmp_path / "e.onnx", 0, meta={"arbor.history": "none"}), Params(minibatch_size=64))
    rows = []
    run = ev.run_planes
    ev.run_planes = lambda planes: rows.append(len(planes)) or run(planes)
    tree = tree_at(chess.Board("r1bqkb1r/pppp1ppp/2n2n2/4p3/4P3/2N2N2/PPPP1PPP/R1BQKB1R w KQkq - 4 4"), [])
    search = Search(tree, ev, Params(minibatch_size=64, tactical_probe_share=0.0, nn_cache_size=0))
    search.run(Limits(nodes=2000))
    assert tree.root_node.n == 2000 and sum(rows) < 2000


def test_cache_key_depends_on_history(tmp_path):
    """Two games reaching one position by other moves: a net with history sees two positions, one without sees
    one."""
    for meta, apart in ((None, True), ({"arbor.history": "none"}, False)):
        ev = NetworkEvaluator(echo_net(tmp_path / "e.onnx", 0, meta=meta), Params())
        keys = []
        for ucis in ("g1f3 g8f6 f3g1 f6g8".split(), "b1c3 b8c6 c3b1 c6b8".split()):
            final, history, _ = _game(None, ucis)
            tree = tree_at(final, history)
            keys.append(tree.positions.cache_key(tree.root_index, ev.needs_history))
        assert (keys[0] != keys[1]) == apart


def test_cache_keys_keep_apart_positions_that_int_hashes_confuse(tmp_path):
    """A rook that can go to c1 or h8: the two positions' rows hash alike as tuples of ints (Python
    reduces ints modulo 2**61 - 1); the tree's keys hash the positions' Zobrist keys, which tell them apart."""
    fen = "2r5/8/8/K3k3/8/8/8/8 b - - 0 1"
    c1, h8 = _leaf(fen, ["c8c1"]), _leaf(fen, ["c8h8"])
    assert hash(lc0_planes.gather(c1.board, c1.history)) == hash(lc0_planes.gather(h8.board, h8.history))
    keys = []
    for leaf in (c1, h8):
        tree = tree_at(leaf.board, leaf.history)
        keys.append(tree.positions.cache_key(tree.root_index, True))
    assert keys[0] != keys[1]


def test_minibatch_and_threads_options(tmp_path):
    params = Params(minibatch_size=16, threads=1)
    ev = NetworkEvaluator(dense_net(tmp_path / "d.onnx"), params)
    assert ev.batch_size == 16
    params.set("MinibatchSize", "64")
    assert ev.batch_size == 64
    # Threads counts the search's cores: a batch runs on one onnxruntime thread, and more cores run more batches at
    # once (engine/search/pipeline.py).
    for threads in ("1", "2", "3"):
        params.set("Threads", threads)
        leaf = _leaf()
        ev.evaluate([leaf])
        assert ev._session.get_session_options().intra_op_num_threads == 1 and abs(sum(leaf.priors) - 1) < 1e-5


def test_fixed_batch_dimension(tmp_path):
    bias = np.random.default_rng(2).standard_normal(1858).astype(np.float32)
    ev = NetworkEvaluator(bias_net(tmp_path / "f.onnx", bias, batch=4), Params(nn_cache_size=0))
    leaves = _mixed_leaves(10)
    ev.evaluate(leaves)
    for leaf in leaves:
        idx = lc0_policy.policy_indices(leaf.board, leaf.moves)
        assert np.allclose(leaf.priors, _softmax_fast(bias[idx], Params().policy_temperature), atol=1e-6)


# ---------------------------------------------------------------------------------------------- bad files
def _bad(tmp_path, name, build):
    path = tmp_path / name
    build(path)
    with pytest.raises(EvaluatorError) as err:
        NetworkEvaluator(str(path), Params())
    assert str(path) in str(err.value)
    return str(err.value)


def test_missing_file(tmp_path):
    path = tmp_path / "nope.onnx"
    with pytest.raises(EvaluatorError, match="not found") as err:
        NetworkEvaluator(str(path), Params())
    assert str(path) in str(err.value)
    with pytest.raises(EvaluatorError, match="not a file"):
        NetworkEvaluator(str(tmp_path), Params())


def test_not_onnx(tmp_path):
    msg = _bad(tmp_path, "text.onnx", lambda p: p.write_text("this is not a network\n"))
    assert "ONNX" in msg
    _bad(tmp_path, "empty.onnx", lambda p: p.write_bytes(b""))


def test_wrong_shapes(tmp_path):
    def wrong_input(p):
        nodes = [helper.make_node("ReduceSum", ["/input/planes", "axes"], ["s"], keepdims=0),
                 helper.make_node("Identity", ["s"], ["x"])]
        m = _model(nodes, [numpy_helper.from_array(np.array([2, 3], np.int64), "axes")],
                   [_out("x", 12)], in_shape=("batch", 12, 8, 8))
        onnx.save(m, p)

    assert "input /input/planes" in _bad(tmp_path, "in.onnx", wrong_input)

    def wrong_name(p):
        m = _model([helper.make_node("Identity", ["planes"], ["/output/policy"])], [],
                   [helper.make_tensor_value_info("/output/policy", TensorProto.FLOAT, ["batch", 112, 8, 8])],
                   in_name="planes")
        onnx.save(m, p)

    assert "no input /input/planes" in _bad(tmp_path, "name.onnx", wrong_name)
    assert "/output/policy" in _bad(tmp_path, "pol.onnx", lambda p: _policy_size_net(p, 1000))
    assert "/output/wdl" in _bad(tmp_path, "wdl.onnx", lambda p: _policy_size_net(p, 1858, value_n=2))
    assert "no output /output/wdl or /output/value" in _bad(tmp_path, "nov.onnx",
                                                             lambda p: _policy_size_net(p, 1858, value_n=0))


def _policy_size_net(path, policy_n, value_n=3):
    nodes = [helper.make_node("Flatten", ["/input/planes"], ["f"], axis=1),
             helper.make_node("Slice", ["f", "s", "e", "a"], ["/output/policy"])]
    inits = [numpy_helper.from_array(np.array([0], np.int64), "s"),
             numpy_helper.from_array(np.array([policy_n], np.int64), "e"),
             numpy_helper.from_array(np.array([1], np.int64), "a")]
    outs = [_out("/output/policy", policy_n)]
    if value_n:
        nodes.append(helper.make_node("Slice", ["f", "s", "ve", "a"], ["/output/wdl"]))
        inits.append(numpy_helper.from_array(np.array([value_n], np.int64), "ve"))
        outs.append(_out("/output/wdl", value_n))
    onnx.save(_model(nodes, inits, outs), path)


# ---------------------------------------------------------------------------------------------- int8 networks
def test_quantized_network_loads_and_runs(tmp_path):
    pytest.importorskip("onnxruntime.quantization")
    sys.path.insert(0, str(ROOT / "nets"))
    import make_random_net
    import quantize

    src = tmp_path / "r.onnx"
    onnx.save(make_random_net.build(blocks=1, filters=16, seed=3), str(src))
    dst = tmp_path / "r.q.onnx"
    quantize.quantize(str(src), str(dst), positions=32, seed=2)
    ops = {n.op_type for n in onnx.load(str(dst)).graph.node}
    assert "QuantizeLinear" in ops and "DequantizeLinear" in ops
    leaves = _mixed_leaves(12)
    fl = [_copy(l) for l in leaves]
    q = [_copy(l) for l in leaves]
    NetworkEvaluator(str(src), Params()).evaluate(fl)
    NetworkEvaluator(str(dst), Params()).evaluate(q)
    for a, b in zip(fl, q):
        assert abs(sum(b.priors) - 1) < 1e-4 and len(b.priors) == len(b.moves)
        assert -1.0 <= b.value <= 1.0
        assert abs(a.value - b.value) < 0.5
