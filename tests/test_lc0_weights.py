"""lc0's own weight files (.pb.gz, .pb) as WeightsFile: reading, conversion to ONNX, refusals, the cache, the
`arbor net convert` command and the UCI path.

No network file is copied into the project: the tests write tiny lc0 files themselves, with random weights, through
the small protobuf writer below, and check the converted model against a plain numpy forward pass of the same
weights. The real nets (MeanGirl-8, Maia) are compared with lc0's own output in tests/test_lc0_reference.py.
"""

from __future__ import annotations

import gzip
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np
import pytest

from conftest import ARBOR, ROOT, RawUci
from engine.evaluators import lc0_cache, lc0_onnx, lc0_weights
from engine.evaluators.base import EvaluatorError
from engine.evaluators.lc0_policy import MOVE_INDEX, POLICY_SIZE
from engine.evaluators.lc0_weights import InputFormat, NetworkStructure

REFERENCE_ONNX = ROOT.parent / "shared" / "lc0-reference" / "meangirl-8.onnx"

LINEAR16, FLOAT16, BFLOAT16, FLOAT32 = 1, 2, 3, 4
INPUT_CLASSICAL = int(InputFormat.INPUT_CLASSICAL_112_PLANE)
SE_WITH_HEADFORMAT = int(NetworkStructure.NETWORK_SE_WITH_HEADFORMAT)
POLICY_CLASSICAL, POLICY_CONVOLUTION, POLICY_ATTENTION = 1, 2, 3
VALUE_CLASSICAL, VALUE_WDL, VALUE_PARAM = 1, 2, 3


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Conversions go to a cache folder of the test's own, in this process and in the engines it starts."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "cache"))
    if sys.platform == "darwin":  # the cache is under the home folder there
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return lc0_cache.cache_dir()


# ------------------------------------------------------------------------------------ a protobuf writer
def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def pb_int(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def pb_fixed32(number: int, value: int) -> bytes:
    return _varint(number << 3 | 5) + struct.pack("<I", value)


def pb_float(number: int, value: float) -> bytes:
    return _varint(number << 3 | 5) + struct.pack("<f", value)


def pb_bytes(number: int, data: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def pb_layer(values: np.ndarray, encoding: int = FLOAT32) -> bytes:
    """A Weights.Layer holding ``values``; LINEAR16 quantizes them (decode with :func:`linear16`)."""
    values = np.asarray(values, np.float32).ravel()
    if encoding == LINEAR16:
        low, high = float(values.min()), float(values.max())
        span = (high - low) or 1.0
        q = np.round((values - low) / span * 0xFFFF).astype("<u2")
        return pb_float(1, low) + pb_float(2, high) + pb_bytes(3, q.tobytes())
    if encoding == FLOAT16:
        data = values.astype("<f2").tobytes()
    elif encoding == BFLOAT16:
        data = (values.astype("<f4").view("<u4") >> 16).astype("<u2").tobytes()
    else:
        data = values.astype("<f4").tobytes()
    return pb_bytes(3, data) + pb_int(4, encoding)


def linear16(values: np.ndarray) -> np.ndarray:
    """What a reader must get back from ``pb_layer(values, LINEAR16)``."""
    values = np.asarray(values, np.float32).ravel()
    low, high = np.float32(values.min()), np.float32(values.max())
    span = float(high - low) or 1.0
    q = np.round((values - low) / span * 0xFFFF)
    return (low + (high - low) * q / 0xFFFF).astype(np.float32)


# ------------------------------------------------------------------------------------ tiny random nets
@dataclass
class ConvSpec:
    weight: np.ndarray                     # [out, in, k, k]
    bias: Optional[np.ndarray] = None
    bn: Optional[tuple] = None             # means, variances, gammas, betas


@dataclass
class NetSpec:
    """The weights of a tiny lc0 net, as lc0 stores them (dense layers [out, in])."""
    input: ConvSpec
    tower: list                            # (conv1, conv2, se or None), se = (w1, b1, w2, b2)
    policy_head: str
    policy: list                           # conv head: [ConvSpec, ConvSpec]; classical: [ConvSpec, w, b]
    value_conv: ConvSpec
    value_dense: list                      # w1, b1, w2, b2
    wdl: bool
    activation: str = "relu"


def random_net(seed: int = 0, filters: int = 4, blocks: int = 2, se: bool = True, policy: str = "convolution",
               wdl: bool = True, activation: str = "relu") -> NetSpec:
    rng = np.random.default_rng(seed)

    def conv(out: int, inp: int, k: int, bn: bool = True, bias: bool = False) -> ConvSpec:
        w = rng.normal(0, 1.0 / np.sqrt(inp * k * k), (out, inp, k, k)).astype(np.float32)
        b = rng.normal(0, 0.1, out).astype(np.float32) if bias or not bn else None
        norm = None
        if bn:
            norm = (rng.normal(0, 0.2, out).astype(np.float32), rng.uniform(0.5, 1.5, out).astype(np.float32),
                    rng.uniform(0.5, 1.5, out).astype(np.float32), rng.normal(0, 0.2, out).astype(np.float32))
        return ConvSpec(w, b, norm)

    def dense(out: int, inp: int) -> tuple:
        return (rng.normal(0, 1.0 / np.sqrt(inp), (out, inp)).astype(np.float32),
                rng.normal(0, 0.1, out).astype(np.float32))

    tower = []
    for i in range(blocks):
        unit = (*dense(2, filters), *dense(2 * filters, 2)) if se else None
        # One conv with a bias of its own beside its batch norm: newer files store both.
        tower.append((conv(filters, filters, 3, bias=i == 0), conv(filters, filters, 3), unit))
    if policy == "convolution":
        heads = [conv(filters, filters, 3), conv(lc0_weights.CONV_POLICY_PLANES, filters, 3, bn=False)]
    else:
        heads = [conv(8, filters, 1), *dense(POLICY_SIZE, 8 * 64)]
    return NetSpec(conv(filters, 112, 3), tower, policy, heads, conv(8, filters, 1),
                   [*dense(16, 8 * 64), *dense(3 if wdl else 1, 16)], wdl, activation)


def net_bytes(spec: NetSpec, encoding: int = FLOAT32, input_format: int = INPUT_CLASSICAL,
              network: int = SE_WITH_HEADFORMAT, policy_format: Optional[int] = None,
              value_format: Optional[int] = None, moves_left: bool = False, extra_weights: bytes = b"",
              with_format: bool = True, magic: int = lc0_weights.WEIGHTS_MAGIC, compress: bool = True) -> bytes:
    """The lc0 weight file of ``spec``: a ``Net`` message, gzip'd unless ``compress`` is False."""

    def conv_block(c: ConvSpec) -> bytes:
        out = pb_bytes(1, pb_layer(c.weight, encoding))
        if c.bias is not None:
            out += pb_bytes(2, pb_layer(c.bias, encoding))
        if c.bn is not None:
            for number, values in zip((3, 4, 5, 6), c.bn):
                out += pb_bytes(number, pb_layer(values, encoding))
        return out

    weights = pb_bytes(1, conv_block(spec.input))
    for conv1, conv2, se in spec.tower:
        block = pb_bytes(1, conv_block(conv1)) + pb_bytes(2, conv_block(conv2))
        if se is not None:
            block += pb_bytes(3, b"".join(pb_bytes(n, pb_layer(v, encoding)) for n, v in zip((1, 2, 3, 4), se)))
        weights += pb_bytes(2, block)
    if spec.policy_head == "convolution":
        weights += pb_bytes(11, conv_block(spec.policy[0])) + pb_bytes(3, conv_block(spec.policy[1]))
    else:
        weights += (pb_bytes(3, conv_block(spec.policy[0])) + pb_bytes(4, pb_layer(spec.policy[1], encoding))
                    + pb_bytes(5, pb_layer(spec.policy[2], encoding)))
    weights += pb_bytes(6, conv_block(spec.value_conv))
    for number, values in zip((7, 8, 9, 10), spec.value_dense):
        weights += pb_bytes(number, pb_layer(values, encoding))
    if moves_left:  # a moves-left head, which the converter reads past
        weights += pb_bytes(12, conv_block(ConvSpec(np.ones((8, spec.input.weight.shape[0], 1, 1), np.float32),
                                                    np.zeros(8, np.float32))))
        weights += pb_bytes(13, pb_layer(np.ones((16, 512)))) + pb_bytes(14, pb_layer(np.ones(16)))
        weights += pb_bytes(15, pb_layer(np.ones((1, 16)))) + pb_bytes(16, pb_layer(np.ones(1)))
    weights += extra_weights

    if policy_format is None:
        policy_format = POLICY_CONVOLUTION if spec.policy_head == "convolution" else POLICY_CLASSICAL
    if value_format is None:
        value_format = VALUE_WDL if spec.wdl else VALUE_CLASSICAL
    network_format = (pb_int(1, input_format) + pb_int(2, 2 if spec.wdl else 1) + pb_int(3, network)
                      + pb_int(4, policy_format) + pb_int(5, value_format) + pb_int(6, 1 if moves_left else 0)
                      + pb_int(7, 1 if spec.activation == "mish" else 0))
    message = pb_fixed32(1, magic) + pb_bytes(3, pb_int(1, 0) + pb_int(2, 21) + pb_int(3, 0))
    if with_format:
        message += pb_bytes(4, pb_int(1, LINEAR16) + pb_bytes(2, network_format))
    message += pb_bytes(10, weights)
    return gzip.compress(message, mtime=0) if compress else message


# ------------------------------------------------------------------------------------ numpy reference
def _act(x: np.ndarray, activation: str) -> np.ndarray:
    if activation == "mish":
        return x * np.tanh(np.log1p(np.exp(x)))
    return np.maximum(x, 0.0)


def _conv(x: np.ndarray, c: ConvSpec, decode=lambda v: v) -> np.ndarray:
    """Convolution (same padding) of x [N, C, 8, 8], then lc0's batch norm."""
    w = decode(c.weight).reshape(c.weight.shape).astype(np.float64)
    k = w.shape[2]
    pad = k // 2
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((x.shape[0], w.shape[0], 8, 8))
    for dy in range(k):
        for dx in range(k):
            out += np.einsum("oc,nchw->nohw", w[:, :, dy, dx], xp[:, :, dy:dy + 8, dx:dx + 8])
    if c.bias is not None:
        out += decode(c.bias)[None, :, None, None]
    if c.bn is not None:
        mean, var, gamma, beta = (decode(v)[None, :, None, None] for v in c.bn)
        out = gamma * (out - mean) / np.sqrt(var + 1e-5) + beta
    return out


def reference_forward(spec: NetSpec, planes: np.ndarray, decode=lambda v: v) -> tuple[np.ndarray, np.ndarray]:
    """Policy logits [N, 1858] and value output ([N, 3] WDL probabilities or [N, 1] tanh) of ``spec``."""
    act = lambda x: _act(x, spec.activation)  # noqa: E731
    dense = lambda x, w, b: x @ decode(w).reshape(w.shape).T + decode(b)  # noqa: E731  (lc0 stores [out, in])
    n = planes.shape[0]
    x = act(_conv(planes.astype(np.float64), spec.input, decode))
    for conv1, conv2, se in spec.tower:
        y = _conv(act(_conv(x, conv1, decode)), conv2, decode)
        if se is not None:
            w1, b1, w2, b2 = se
            g = dense(act(dense(y.mean(axis=(2, 3)), w1, b1)), w2, b2)
            channels = y.shape[1]
            y = 1.0 / (1.0 + np.exp(-g[:, :channels, None, None])) * y + g[:, channels:, None, None]
        x = act(y + x)
    if spec.policy_head == "convolution":
        p = _conv(act(_conv(x, spec.policy[0], decode)), spec.policy[1], decode).reshape(n, -1)
        policy = p[:, lc0_onnx.conv_policy_map()]
    else:
        p = act(_conv(x, spec.policy[0], decode)).reshape(n, -1)
        policy = dense(p, spec.policy[1], spec.policy[2])
    v = act(_conv(x, spec.value_conv, decode)).reshape(n, -1)
    w1, b1, w2, b2 = spec.value_dense
    v = dense(act(dense(v, w1, b1)), w2, b2)
    if spec.wdl:
        e = np.exp(v - v.max(axis=1, keepdims=True))
        return policy, e / e.sum(axis=1, keepdims=True)
    return policy, np.tanh(v)


def random_planes(n: int = 6, seed: int = 1) -> np.ndarray:
    return (np.random.default_rng(seed).random((n, 112, 8, 8)) < 0.15).astype(np.float32)


def run_model(model: bytes, planes: np.ndarray) -> dict:
    import onnxruntime as ort
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, {"/input/planes": planes})))


def assert_matches_reference(spec: NetSpec, data: bytes, decode=lambda v: v, tol: float = 1e-4) -> dict:
    planes = random_planes()
    out = run_model(lc0_onnx.convert(data), planes)
    policy, value = reference_forward(spec, planes, decode)
    value_name = "/output/wdl" if spec.wdl else "/output/value"
    assert set(out) == {"/output/policy", value_name}
    np.testing.assert_allclose(out["/output/policy"], policy, rtol=tol, atol=tol)
    np.testing.assert_allclose(out[value_name], value, rtol=tol, atol=tol)
    return out


# ------------------------------------------------------------------------------------ conversion
@pytest.mark.parametrize("policy", ["convolution", "classical"])
@pytest.mark.parametrize("wdl", [True, False], ids=["wdl", "tanh"])
@pytest.mark.parametrize("se", [True, False], ids=["se", "plain"])
def test_converted_net_computes_the_lc0_network(policy, wdl, se):
    spec = random_net(seed=100 + 4 * (policy == "classical") + 2 * wdl + se, se=se, policy=policy, wdl=wdl)
    assert_matches_reference(spec, net_bytes(spec))


def test_mish_activation():
    spec = random_net(seed=3, activation="mish")
    assert_matches_reference(spec, net_bytes(spec))


def test_moves_left_head_is_read_and_ignored():
    spec = random_net(seed=4)
    assert_matches_reference(spec, net_bytes(spec, moves_left=True))
    assert lc0_weights.parse(net_bytes(spec, moves_left=True)).describe().endswith("moves-left head not used")


@pytest.mark.parametrize("compress", [True, False], ids=["pb.gz", "pb"])
def test_linear16_weights(compress):
    spec = random_net(seed=5)
    assert_matches_reference(spec, net_bytes(spec, encoding=LINEAR16, compress=compress), decode=linear16)


@pytest.mark.parametrize("encoding", [FLOAT16, BFLOAT16], ids=["float16", "bfloat16"])
def test_16_bit_float_weights(encoding):
    spec = random_net(seed=6)
    dtype = "<f2" if encoding == FLOAT16 else None

    def decode(values):
        values = np.asarray(values, np.float32)
        if dtype:
            return values.astype(dtype).astype(np.float32)
        return ((values.view("<u4") >> 16) << 16).view(np.float32)  # bfloat16: the top 16 bits

    assert_matches_reference(spec, net_bytes(spec, encoding=encoding), decode=decode, tol=2e-4)


def test_files_without_a_network_format_are_classical():
    """The oldest files carry no format: lc0 reads them as classical input, policy and value."""
    spec = random_net(seed=7, se=False, policy="classical", wdl=False)
    assert_matches_reference(spec, net_bytes(spec, with_format=False))


def test_metadata_and_description():
    import onnx
    spec = random_net(seed=8)
    model = onnx.load_from_string(lc0_onnx.convert(net_bytes(spec)))
    props = {p.key: p.value for p in model.metadata_props}
    assert props["arbor.input_format"] == "classical"
    assert lc0_weights.parse(net_bytes(spec)).describe() == "2x4 SE, convolution policy, WDL value"


def test_conv_policy_map():
    mapping = lc0_onnx.conv_policy_map()
    assert mapping.shape == (POLICY_SIZE,) and len(set(mapping.tolist())) == POLICY_SIZE
    assert mapping.max() < 73 * 64  # the 7 padding planes are never read

    def plane_of(uci: str) -> int:
        flat = mapping[MOVE_INDEX[uci]]
        assert flat % 64 == ["a", "b", "c", "d", "e", "f", "g", "h"].index(uci[0]) + 8 * (int(uci[1]) - 1)
        return int(flat // 64)

    # Queen moves: direction (N, NE, E, SE, S, SW, W, NW) * 7 + distance - 1.
    assert plane_of("e2e3") == 0 and plane_of("e2e4") == 1 and plane_of("a1h8") == 7 + 6
    assert plane_of("h1a1") == 6 * 7 + 6 and plane_of("d4c5") == 7 * 7
    # Knight jumps from plane 56: (1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2).
    assert plane_of("g1h3") == 56 and plane_of("g1e2") == 62 and plane_of("d4c2") == 60 and plane_of("g1f3") == 63
    # Promotions from plane 64: to the left, straight, to the right; each rook, bishop, queen.
    assert plane_of("a7b8q") == 64 + 2 * 3 + 2 and plane_of("e7e8r") == 67 and plane_of("h7g8b") == 65
    assert plane_of("e7e8") == 0  # the knight promotion is the plain move


@pytest.mark.skipif(not REFERENCE_ONNX.is_file(), reason=f"no leela2onnx reference net at {REFERENCE_ONNX}")
def test_conv_policy_map_is_leela2onnx_s():
    import onnx
    from onnx import numpy_helper
    model = onnx.load(str(REFERENCE_ONNX))
    table = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}["/const/mapping_table"]
    assert (table == lc0_onnx.conv_policy_map()).all()


# ------------------------------------------------------------------------------------ refusals
UNSUPPORTED_INPUTS = [f for f in InputFormat if f != InputFormat.INPUT_CLASSICAL_112_PLANE]


@pytest.mark.parametrize("fmt", UNSUPPORTED_INPUTS, ids=[f.name for f in UNSUPPORTED_INPUTS])
def test_unsupported_input_formats_are_refused(fmt):
    with pytest.raises(EvaluatorError, match=f"input format {fmt.name} is not supported"):
        lc0_onnx.convert(net_bytes(random_net(), input_format=int(fmt)))


def test_unknown_input_format_number_is_refused():
    with pytest.raises(EvaluatorError, match="input format InputFormat 77 .*not supported"):
        lc0_onnx.convert(net_bytes(random_net(), input_format=77))


@pytest.mark.parametrize("network", [NetworkStructure.NETWORK_UNKNOWN, NetworkStructure.NETWORK_ONNX,
                                     NetworkStructure.NETWORK_ATTENTIONBODY_WITH_HEADFORMAT,
                                     NetworkStructure.NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT,
                                     NetworkStructure.NETWORK_AB_LEGACY_WITH_MULTIHEADFORMAT],
                         ids=lambda n: n.name)
def test_unsupported_network_structures_are_refused(network):
    with pytest.raises(EvaluatorError, match=f"network structure {network.name} is not supported"):
        lc0_onnx.convert(net_bytes(random_net(), network=int(network)))


@pytest.mark.parametrize("kwargs, message", [
    (dict(extra_weights=pb_bytes(27, b"")), "attention .*bodies are not supported"),
    (dict(extra_weights=pb_bytes(45, b"")), "multi-head"),
    (dict(policy_format=POLICY_ATTENTION), "policy head POLICY_ATTENTION is not supported"),
    (dict(value_format=VALUE_PARAM), "value head VALUE_PARAM is not supported"),
    (dict(magic=0x1234), "not an lc0 weight file"),
])
def test_other_unsupported_nets_are_refused(kwargs, message):
    with pytest.raises(EvaluatorError, match=message):
        lc0_onnx.convert(net_bytes(random_net(), **kwargs))


def test_truncated_files_are_refused_at_every_length():
    raw = net_bytes(random_net(seed=9, filters=2, blocks=1), compress=False)
    for length in range(0, len(raw), max(1, len(raw) // 400)):
        with pytest.raises(EvaluatorError):
            lc0_onnx.convert(raw[:length])
    data = net_bytes(random_net(seed=9, filters=2, blocks=1))
    for length in (0, 1, 2, 10, len(data) // 2, len(data) - 1):
        with pytest.raises(EvaluatorError, match="not an lc0 weight file|gzip|truncated"):
            lc0_onnx.convert(data[:length])


@pytest.mark.parametrize("content", [
    b"2\n1 2 3\n",                                # lc0's old text format
    bytes(range(256)) * 8,                        # not protobuf
    b"\x0d\xc0\x01\x00\x00",                      # only the magic: no weights
])
def test_corrupt_files_are_refused(content):
    with pytest.raises(EvaluatorError):
        lc0_onnx.convert(content)
    with pytest.raises(EvaluatorError):
        lc0_onnx.convert(gzip.compress(content))


def test_corrupt_gzip_is_refused():
    data = bytearray(net_bytes(random_net(seed=10)))
    data[len(data) // 2] ^= 0xFF
    with pytest.raises(EvaluatorError, match="gzip"):
        lc0_onnx.convert(bytes(data))


def test_a_layer_of_the_wrong_size_is_refused():
    spec = random_net(seed=11)
    spec.value_dense[0] = spec.value_dense[0][:, :-1]  # one input short
    with pytest.raises(EvaluatorError, match="value dense layer 1"):
        lc0_onnx.convert(net_bytes(spec))


def test_non_finite_weights_are_refused():
    spec = random_net(seed=12)
    spec.value_dense[1][0] = np.nan
    with pytest.raises(EvaluatorError, match="not finite"):
        lc0_onnx.convert(net_bytes(spec))


# ------------------------------------------------------------------------------------ loading and the cache
def _evaluator(path: Path):
    from engine.evaluators.network import NetworkEvaluator
    from engine.params import Params
    return NetworkEvaluator(str(path), Params(policy_temperature=1.0, nn_cache_size=0, network_precision="float"))


def _evaluate(ev, fen: str = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"):
    import chess
    from engine.evaluators.base import Leaf
    board = chess.Board(fen)
    leaf = Leaf(board, list(board.legal_moves), [])
    ev.evaluate([leaf])
    return leaf.value, leaf.priors


def test_network_evaluator_loads_and_caches_by_content(tmp_path, private_cache, monkeypatch):
    data = net_bytes(random_net(seed=13))
    path = tmp_path / "tiny.pb.gz"
    path.write_bytes(data)
    first = _evaluate(_evaluator(path))
    cached = lc0_cache.cache_path(data)
    assert cached.parent == private_cache and cached.is_file()
    assert not [p for p in private_cache.iterdir() if p != cached]  # no temporary file left behind

    def no_conversion(raw):
        raise AssertionError("converted again instead of loading the cache")

    monkeypatch.setattr(lc0_cache, "convert", no_conversion)
    copy = tmp_path / "renamed.pb.gz"  # the key is the content, not the name
    copy.write_bytes(data)
    assert _evaluate(_evaluator(copy)) == first


def test_a_damaged_cache_file_is_converted_again(tmp_path):
    data = net_bytes(random_net(seed=14))
    path = tmp_path / "tiny.pb.gz"
    path.write_bytes(data)
    first = _evaluate(_evaluator(path))
    lc0_cache.cache_path(data).write_bytes(b"garbage")
    assert _evaluate(_evaluator(path)) == first
    assert lc0_cache.cache_path(data).stat().st_size > 1000


def test_an_unwritable_cache_still_loads(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setattr(lc0_cache, "cache_dir", lambda: blocker / "arbor")  # mkdir fails there
    path = tmp_path / "tiny.pb.gz"
    path.write_bytes(net_bytes(random_net(seed=15)))
    _evaluate(_evaluator(path))


@pytest.mark.parametrize("name, compress", [("weights.bin", True), ("weights.dat", False), ("weights.pb", False)])
def test_format_is_detected_by_content_or_extension(tmp_path, name, compress):
    spec = random_net(seed=16)
    path = tmp_path / name
    path.write_bytes(net_bytes(spec, compress=compress))
    value, priors = _evaluate(_evaluator(path))
    assert -1.0 <= value <= 1.0 and abs(sum(priors) - 1.0) < 1e-5


def test_evaluator_error_names_the_file_and_the_format(tmp_path):
    path = tmp_path / "hectoplies.pb.gz"
    path.write_bytes(net_bytes(random_net(), input_format=4))
    with pytest.raises(EvaluatorError) as info:
        _evaluator(path)
    assert str(path) in str(info.value)
    assert "input format INPUT_112_WITH_CANONICALIZATION_HECTOPLIES is not supported" in str(info.value)


# ------------------------------------------------------------------------------------ arbor net convert
def test_arbor_net_convert(tmp_path):
    spec = random_net(seed=17, policy="classical", wdl=False)
    source, target = tmp_path / "tiny.pb.gz", tmp_path / "out" / "tiny.onnx"
    source.write_bytes(net_bytes(spec))
    target.parent.mkdir()
    done = subprocess.run(ARBOR + ["net", "convert", str(source), str(target)], cwd=str(ROOT),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "2x4 SE, classical policy, classical value" in done.stdout
    ev = _evaluator(target)
    assert ev.metadata["arbor.input_format"] == "classical"
    assert _evaluate(ev) == _evaluate(_evaluator(source))


def test_arbor_net_convert_refuses_with_a_message(tmp_path):
    source, target = tmp_path / "armageddon.pb.gz", tmp_path / "out.onnx"
    source.write_bytes(net_bytes(random_net(), input_format=132))
    done = subprocess.run(ARBOR + ["net", "convert", str(source), str(target)], cwd=str(ROOT),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "INPUT_112_WITH_CANONICALIZATION_HECTOPLIES_ARMAGEDDON is not supported" in done.stderr
    assert not target.exists()
    usage = subprocess.run(ARBOR + ["net", "convert", str(source)], cwd=str(ROOT), capture_output=True, text=True,
                           timeout=120)
    assert usage.returncode == 2 and "usage: arbor net convert" in usage.stderr


# ------------------------------------------------------------------------------------ UCI
@pytest.fixture
def engine_with_cache(private_cache):
    raw = RawUci()
    raw.send("uci")
    raw.read_until("uciok")
    yield raw
    raw.close()


def _go(raw) -> str:
    raw.send("position startpos moves e2e4")
    raw.send("go nodes 20")
    move = raw.read_until("bestmove")[-1].split()[1]
    import chess
    board = chess.Board()
    board.push_uci("e2e4")
    assert chess.Move.from_uci(move) in board.legal_moves
    return move


def test_uci_loads_a_pb_gz(engine_with_cache, tmp_path, private_cache):
    path = tmp_path / "tiny.pb.gz"
    data = net_bytes(random_net(seed=18))
    path.write_bytes(data)
    engine_with_cache.send(f"setoption name WeightsFile value {path}")
    lines = engine_with_cache.ask_ready()
    assert any(line.startswith(f"info string loaded network {path}") for line in lines), lines
    _go(engine_with_cache)
    assert lc0_cache.cache_path(data).is_file()  # the engine process used the same cache folder


def test_uci_refused_pb_gz_falls_back_to_the_heuristic(engine_with_cache, tmp_path):
    path = tmp_path / "hectoplies.pb.gz"
    path.write_bytes(net_bytes(random_net(), input_format=4))
    engine_with_cache.send(f"setoption name WeightsFile value {path}")
    lines = engine_with_cache.ask_ready()
    refused = [line for line in lines if line.startswith("info string") and str(path) in line]
    assert refused and "INPUT_112_WITH_CANONICALIZATION_HECTOPLIES is not supported" in refused[0], lines
    assert "heuristic" in refused[0]
    _go(engine_with_cache)


def test_uci_truncated_pb_gz_falls_back_to_the_heuristic(engine_with_cache, tmp_path):
    path = tmp_path / "truncated.pb.gz"
    data = net_bytes(random_net(seed=19))
    path.write_bytes(data[:len(data) // 2])
    engine_with_cache.send(f"setoption name WeightsFile value {path}")
    lines = engine_with_cache.ask_ready()
    assert any(line.startswith("info string") and str(path) in line and "gzip" in line for line in lines), lines
    _go(engine_with_cache)


def test_engine_process_does_not_convert_a_cached_net(tmp_path, private_cache):
    """The second start loads the cached ONNX file: no conversion."""
    path = tmp_path / "tiny.pb.gz"
    path.write_bytes(net_bytes(random_net(seed=20)))
    probe = ("from engine.evaluators import lc0_onnx; from engine.evaluators.network import NetworkEvaluator;"
             "from engine.params import Params; made = []; build = lc0_onnx.build_onnx;"
             "lc0_onnx.build_onnx = lambda net: made.append(1) or build(net);"
             f"NetworkEvaluator({str(path)!r}, Params()); print(len(made))")
    runs = [subprocess.run([sys.executable, "-c", probe], cwd=str(ROOT), capture_output=True, text=True, timeout=120)
            for _ in range(2)]
    assert [r.stdout.strip() for r in runs] == ["1", "0"], [r.stderr for r in runs]
