"""NetworkPrecision int8: the tower of a network in 8 bits (engine/evaluators/quantize.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import chess
import numpy as np
import onnx
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "nets"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import make_random_net  # noqa: E402

from engine.evaluators import precision, quantize  # noqa: E402
from engine.evaluators.base import EvaluatorError  # noqa: E402
from engine.evaluators.network import NetworkEvaluator  # noqa: E402
from engine.params import Params  # noqa: E402
from test_network import _copy, _mixed_leaves, dense_net  # noqa: E402

BUNDLED = sorted((ROOT / "nets" / "default").glob("*.onnx"))
needs_bundled = pytest.mark.skipif(not BUNDLED, reason="no bundled net in nets/default")


def _random_net(tmp_path, blocks=2, filters=16):
    path = tmp_path / "random.onnx"
    onnx.save(make_random_net.build(blocks=blocks, filters=filters, seed=5), str(path))
    return str(path)


def _evaluate(path, precision, leaves):
    params = Params(nn_cache_size=0)
    params.set("NetworkPrecision", precision)
    evaluator = NetworkEvaluator(path, params)
    leaves = [_copy(leaf) for leaf in leaves]
    evaluator.evaluate(leaves)
    return evaluator, leaves


def test_the_tower_is_the_c_to_c_3x3_convolutions(tmp_path):
    """Two residual blocks and the policy head's first convolution; not the first convolution, which reads the
    input planes, nor the policy head's last (16 -> 80) or the value head's 1x1."""
    model = onnx.load(_random_net(tmp_path))
    names = quantize.tower_convolutions(model)
    convs = [node for node in model.graph.node if node.op_type == "Conv"]
    assert len(names) == 2 * 2 + 1 and len(convs) > len(names)
    assert not any(node.input[0] == "/input/planes" for node in convs if node.name in names)


def test_calibration_positions_are_legal_and_fixed():
    planes, legal = quantize.calibration_positions(games=3, plies=10)
    again, _ = quantize.calibration_positions(games=3, plies=10)
    assert planes.shape == (30, 112, 8, 8) and len(legal) == 30
    assert np.array_equal(planes, again)
    assert all(len(moves) > 0 for moves in legal)
    assert planes[:, 109].max() > 0  # random games move pieces without captures: the rule-50 count runs


@needs_bundled
def test_the_int8_tower_follows_the_float_net():
    model, fidelity = quantize.quantize_tower(str(BUNDLED[0]))
    ops = [node.op_type for node in onnx.load_model_from_string(model).graph.node]
    assert ops.count("QuantizeLinear") >= 4 and "DequantizeLinear" in ops
    assert fidelity.acceptable() and fidelity.top_move > 0.85, fidelity
    leaves = _mixed_leaves(16)
    _, exact = _evaluate(str(BUNDLED[0]), "float", leaves)
    evaluator, near = _evaluate(str(BUNDLED[0]), "int8", leaves)
    assert evaluator.precision_note.startswith("NetworkPrecision int8: tower in int8"), evaluator.precision_note
    for a, b in zip(exact, near):
        assert a.moves == b.moves
        assert abs(a.value - b.value) < 0.2
        assert max(abs(p - q) for p, q in zip(a.priors, b.priors)) < 0.15
    assert any(a.value != b.value for a, b in zip(exact, near))  # it really runs another model


def test_a_net_without_a_tower_says_so_and_runs_in_float(tmp_path):
    path = dense_net(tmp_path / "dense.onnx")
    leaves = _mixed_leaves(6)
    _, exact = _evaluate(path, "float", leaves)
    evaluator, same = _evaluate(path, "int8", leaves)
    assert "int8 not used" in evaluator.precision_note and "no 3x3 tower" in evaluator.precision_note
    assert [a.value for a in exact] == [b.value for b in same]
    with pytest.raises(EvaluatorError):
        quantize.quantize_tower(path)


def test_an_int8_net_that_strays_is_refused(tmp_path, monkeypatch):
    """The check that guards against a CPU whose 8-bit products saturate: past its limits the float net plays."""
    path = _random_net(tmp_path)
    monkeypatch.setattr(quantize, "MAX_VALUE_ERROR", -1.0)
    leaves = _mixed_leaves(6)
    _, exact = _evaluate(path, "float", leaves)
    evaluator, same = _evaluate(path, "int8", leaves)
    assert "strays too far" in evaluator.precision_note and "runs in float" in evaluator.precision_note
    assert [a.value for a in exact] == [b.value for b in same]


@needs_bundled
def test_network_precision_through_uci(raw):
    raw.send(f"setoption name WeightsFile value {BUNDLED[0]}")
    raw.send("setoption name NetworkPrecision value int8")
    lines = raw.ask_ready(timeout=60)
    assert any("loaded network" in line and "tower in int8" in line for line in lines), lines
    raw.send("position startpos moves e2e4")
    raw.send("go nodes 200")
    best = raw.read_until("bestmove", timeout=60)[-1].split()[1]
    board = chess.Board()
    board.push_uci("e2e4")
    assert chess.Move.from_uci(best) in board.legal_moves
    raw.send("setoption name NetworkPrecision value fp16")
    lines = raw.ask_ready()
    assert any("NetworkPrecision must be one of auto, float, int8" in line for line in lines), lines
    raw.send("setoption name NetworkPrecision value float")
    lines = raw.ask_ready(timeout=60)
    assert any("loaded network" in line and "int8" not in line for line in lines), lines


# -- NetworkPrecision auto ---------------------------------------------------------------------------------

CPUINFO_X86 = """processor\t: 0
vendor_id\t: AuthenticAMD
flags\t\t: fpu vme sse2 avx avx2 avx512f avx512_vnni avx512_bitalg
"""
CPUINFO_ARM = """processor\t: 0
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics asimddp
"""
CPUINFO_OLD = """processor\t: 0
flags\t\t: fpu sse2 avx avx2 fma
"""


def test_the_cpu_s_8_bit_dot_products_are_read_from_its_flags(tmp_path, monkeypatch):
    assert "avx512_vnni" in precision.cpu_flags(CPUINFO_X86) and "asimddp" in precision.cpu_flags(CPUINFO_ARM)
    for text, expected in ((CPUINFO_X86, True), (CPUINFO_ARM, True), (CPUINFO_OLD, False)):
        (tmp_path / "cpuinfo").write_text(text)
        monkeypatch.setattr(precision, "CPUINFO", str(tmp_path / "cpuinfo"))
        monkeypatch.setattr(precision.sys, "platform", "linux")
        precision.int8_dot_products.cache_clear()
        precision._first_processor.cache_clear()
        assert precision.int8_dot_products() is expected, text
    monkeypatch.setattr(precision, "CPUINFO", str(tmp_path / "missing"))
    precision.int8_dot_products.cache_clear()
    precision._first_processor.cache_clear()
    assert precision.int8_dot_products() is False   # a CPU that cannot be read keeps the float net
    precision.int8_dot_products.cache_clear()
    precision._first_processor.cache_clear()


def test_a_cpu_is_named_by_its_model_and_widest_vector_arithmetic(tmp_path, monkeypatch):
    """What a match's PGN gives as its Site and the yardstick's folders are named by."""
    xeon = "model name\t: Intel(R) Xeon(R) Platinum 8488C\n"
    for text, expected in ((xeon + CPUINFO_X86, "Intel Xeon Platinum 8488C, AVX-512 VNNI"),
                           ("model name\t: AMD EPYC\n" + CPUINFO_OLD, "AMD EPYC, AVX2"),
                           (CPUINFO_ARM, "aarch64, NEON dot product")):   # Arm's cpuinfo names no model
        (tmp_path / "cpuinfo").write_text(text)
        monkeypatch.setattr(precision, "CPUINFO", str(tmp_path / "cpuinfo"))
        monkeypatch.setattr(precision.platform, "processor", lambda: "")
        monkeypatch.setattr(precision.platform, "machine", lambda: "aarch64")
        precision.cpu_description.cache_clear()
        precision._first_processor.cache_clear()
        assert precision.cpu_description() == expected
    precision.cpu_description.cache_clear()
    precision._first_processor.cache_clear()


@pytest.mark.parametrize("dot_products", [True, False])
def test_auto_runs_int8_only_where_the_cpu_has_8_bit_dot_products(tmp_path, monkeypatch, dot_products):
    path = _random_net(tmp_path)
    monkeypatch.setattr(precision, "int8_dot_products", lambda: dot_products)
    leaves = _mixed_leaves(6)
    _, exact = _evaluate(path, "float", leaves)
    _, int8 = _evaluate(path, "int8", leaves)
    evaluator, auto = _evaluate(path, "auto", leaves)
    if dot_products:
        assert evaluator.precision_note.startswith("NetworkPrecision auto, this CPU has 8-bit dot products: tower "
                                                   "in int8"), evaluator.precision_note
        assert [a.value for a in auto] == [b.value for b in int8]
    else:
        assert evaluator.precision_note == "NetworkPrecision auto: float, this CPU has no 8-bit dot products"
        assert [a.value for a in auto] == [b.value for b in exact]


def test_auto_keeps_the_float_net_when_the_8_bit_one_strays(tmp_path, monkeypatch):
    path = _random_net(tmp_path)
    monkeypatch.setattr(precision, "int8_dot_products", lambda: True)
    monkeypatch.setattr(quantize, "MAX_VALUE_ERROR", -1.0)
    leaves = _mixed_leaves(6)
    _, exact = _evaluate(path, "float", leaves)
    evaluator, auto = _evaluate(path, "auto", leaves)
    assert evaluator.precision_note.startswith("NetworkPrecision auto, this CPU has 8-bit dot products: int8 not "
                                               "used, the 8-bit network strays too far"), evaluator.precision_note
    assert [a.value for a in auto] == [b.value for b in exact]


def test_auto_is_the_default_and_isready_says_what_it_chose(raw, tmp_path):
    assert Params().network_precision == "auto"
    raw.send(f"setoption name WeightsFile value {_random_net(tmp_path)}")
    lines = raw.ask_ready(timeout=60)
    loaded = [line for line in lines if "loaded network" in line]
    expected = ("NetworkPrecision auto, this CPU has 8-bit dot products: tower in int8"
                if precision.int8_dot_products() else "NetworkPrecision auto: float, this CPU has no 8-bit dot products")
    assert loaded and expected in loaded[0], lines


def test_the_8_bit_copy_is_made_once_and_judged_again_at_each_load(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = _random_net(tmp_path)
    leaves = _mixed_leaves(6)
    made = []
    quantize_tower = quantize.quantize_tower
    monkeypatch.setattr(quantize, "quantize_tower", lambda model: made.append(1) or quantize_tower(model))
    first, fresh = _evaluate(path, "int8", leaves)
    second, cached = _evaluate(path, "int8", leaves)
    assert made == [1]                                          # the second load read the copy from the cache
    assert [p.name.startswith("int8-") for p in (tmp_path / "cache" / "arbor").iterdir()] == [True]
    assert first.precision_note == second.precision_note        # with the fidelity measured when it was made
    assert [a.value for a in fresh] == [b.value for b in cached]
    monkeypatch.setattr(quantize, "MAX_VALUE_ERROR", -1.0)      # today's limits refuse what the cache holds
    third, floats = _evaluate(path, "int8", leaves)
    assert "strays too far" in third.precision_note and made == [1]
    _, exact = _evaluate(path, "float", leaves)
    assert [a.value for a in floats] == [b.value for b in exact]
