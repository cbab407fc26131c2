"""An 8-bit copy of a network's residual tower, for onnxruntime's CPU kernels.

An lc0 net spends most of its arithmetic in its tower: the 3x3 convolutions from C to C channels. On a CPU with
8-bit dot products (x86 VNNI, Arm's dot-product instructions) onnxruntime runs those faster quantized, and they
quantize with little loss. The rest stays in float: the first convolution (its 112 input planes need weights of
very different sizes; quantized, it moved arbor-r004's value by 0.085 on average), the heads and the
squeeze-excitation layers (little arithmetic, and the outputs' precision).

The rewrite is onnxruntime's QDQ form, made here with the onnx helper API: QuantizeLinear/DequantizeLinear pairs
around each such convolution, which onnxruntime's optimizer fuses into one integer kernel. Weights are int8 with
a scale per output channel, activations uint8 with ranges measured on positions of random games from a fixed
seed: the same net always gives the same model, and no data ships with the engine.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional, Union

import chess
import numpy as np

from . import lc0_cache, lc0_planes, lc0_policy, precision
from .base import EvaluatorError
from .contract import INPUT_NAME, META_HISTORY, POLICY_NAME, VALUE_NAME, WDL_NAME, wdl_probabilities

CALIBRATION_GAMES = 32
CALIBRATION_PLIES = 40
CALIBRATION_SEED = 20261126
CALIBRATION_BATCH = 64
# Beyond these the 8-bit model is refused: they catch a broken result (a CPU whose 8-bit products saturate), not
# a net that merely quantizes less well. On the calibration positions (random games, harsher than real ones):
# arbor-r004 (4 blocks of 32 filters) KL 0.002, value error 0.015; MeanGirl-8 (4x32) 0.013, 0.062; Maia-1900
# (6x64) 0.004, 0.010. On positions of real games MeanGirl-8's value error is about 0.026.
MAX_POLICY_KL = 0.1
MAX_VALUE_ERROR = 0.15
#: Bump whenever the 8-bit model made here changes: cached copies of an older rewrite are then made again.
QUANTIZER_VERSION = 1
#: ONNX metadata property of a cached 8-bit copy: its fidelity as measured when it was made, on this CPU.
META_FIDELITY = "arbor.int8_fidelity"


def tower_convolutions(model) -> list[str]:
    """Names of the 3x3 convolutions from C to C channels that do not read the network's input (``model``: an
    ``onnx.ModelProto``): the residual tower's, and in nets with a convolutional policy head its first one."""
    weights = {t.name: list(t.dims) for t in model.graph.initializer}
    names = []
    for node in model.graph.node:
        if node.op_type != "Conv" or len(node.input) < 2 or node.input[0] == INPUT_NAME:
            continue
        dims = weights.get(node.input[1])
        if dims is not None and len(dims) == 4 and dims[0] == dims[1] and dims[2:] == [3, 3] and node.name:
            names.append(node.name)
    return names


def calibration_positions(games: int = CALIBRATION_GAMES, plies: int = CALIBRATION_PLIES, seed: int = CALIBRATION_SEED,
                          use_history: bool = True) -> tuple[np.ndarray, list[np.ndarray]]:
    """The network inputs of every position of ``games`` random games of up to ``plies`` plies, with their
    history unless ``use_history`` is false (openings, middlegames and the odd early endgame: all the planes a
    game sets), and each position's legal moves as lc0 policy indices."""
    rng = random.Random(seed)
    rows, legal = [], []
    for _ in range(games):
        board, history = chess.Board(), []
        for _ in range(plies):
            moves = list(board.legal_moves)
            if not moves:
                break
            rows.append(lc0_planes.pack_row(lc0_planes.gather(board, history, use_history)))
            legal.append(lc0_policy.policy_indices(board, moves))
            history.append(board.copy(stack=False))
            board.push(rng.choice(moves))
    return lc0_planes.packed_rows_to_planes(rows, np.float32), legal


@dataclass(frozen=True)
class Fidelity:
    """How closely the 8-bit model follows the float one over the calibration positions."""

    top_move: float    # share of positions whose most likely move is the same
    policy_kl: float   # mean Kullback-Leibler divergence of the policy over the legal moves, float to 8-bit
    value_error: float  # mean absolute difference of the expected result (W - L, from -1 to 1)

    def acceptable(self) -> bool:
        return self.policy_kl <= MAX_POLICY_KL and self.value_error <= MAX_VALUE_ERROR

    def __str__(self) -> str:
        return (f"same top move in {self.top_move:.0%} of positions, policy KL {self.policy_kl:.3f}, "
                f"value error {self.value_error:.3f}")


def tower_in_int8(model: Union[str, bytes]) -> tuple[bytes, Fidelity]:
    """:func:`quantize_tower`, kept on disk: making the copy and checking it takes a second or two, at every start of
    every engine, so the copy is cached beside converted lc0 nets, keyed by the float model, the rewrite's version,
    onnxruntime's version and this CPU (the check is of this CPU's arithmetic). A cached copy's fidelity is judged
    again by today's limits; a copy that cannot be read or written is simply made again."""
    if not isinstance(model, bytes):
        with open(model, "rb") as f:
            model = f.read()
    path = _cache_path(model)
    cached = _read_cached(path) if path else None
    if cached is not None:
        quantized, fidelity = cached
        if not fidelity.acceptable():
            raise EvaluatorError(f"the 8-bit network strays too far from the float one ({fidelity})")
        return quantized, fidelity
    quantized, fidelity = quantize_tower(model)
    if path:
        import onnx
        proto = onnx.load_model_from_string(quantized)
        onnx.helper.set_model_props(proto, {**{p.key: p.value for p in proto.metadata_props},
                                            META_FIDELITY: json.dumps(asdict(fidelity))})
        try:
            lc0_cache.write_atomically(path, proto.SerializeToString())
        except OSError:
            pass  # a read-only home: make the copy at every start rather than fail
    return quantized, fidelity


def _cache_path(model: bytes) -> Optional[Path]:
    try:
        import onnxruntime
    except ImportError:
        return None
    key = hashlib.sha256(model + f"|{QUANTIZER_VERSION}|{onnxruntime.__version__}|{precision.cpu_signature()}"
                         .encode()).hexdigest()
    return lc0_cache.cache_dir() / f"int8-{key}.onnx"


def _read_cached(path: Path) -> Optional[tuple[bytes, Fidelity]]:
    if not path.is_file():
        return None
    try:
        import onnx
        data = path.read_bytes()
        props = {p.key: p.value for p in onnx.load_model_from_string(data).metadata_props}
        return data, Fidelity(**json.loads(props[META_FIDELITY]))
    except Exception:  # a damaged or foreign file: make the copy again
        return None


def quantize_tower(model: Union[str, bytes]) -> tuple[bytes, Fidelity]:
    """``model`` (a path or the bytes of an ONNX model) with its tower in 8 bits, as bytes, and how closely it
    follows the float model. Raises :class:`EvaluatorError` when the model has no such tower, onnxruntime cannot
    run the result, or the result strays too far (a CPU whose 8-bit arithmetic saturates, a net that does not
    quantize): a model that computes something else is refused, not played."""
    import onnx

    if not isinstance(model, bytes):
        with open(model, "rb") as f:
            model = f.read()
    proto = onnx.load_model_from_string(model)
    convs = set(tower_convolutions(proto))
    if not convs:
        raise EvaluatorError("no 3x3 tower convolutions to quantize")
    meta = {prop.key: prop.value for prop in proto.metadata_props}
    planes, legal = calibration_positions(use_history=meta.get(META_HISTORY, "full").strip().lower() != "none")
    try:
        _rewrite(proto, convs, planes)
        quantized = proto.SerializeToString()
        fidelity = compare(model, quantized, planes, legal)
    except Exception as exc:  # onnxruntime raises its own exception types
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise EvaluatorError(f"cannot quantize the network ({text})") from None
    if not fidelity.acceptable():
        raise EvaluatorError(f"the 8-bit network strays too far from the float one ({fidelity})")
    return quantized, fidelity


def _rewrite(proto, convs: set[str], planes: np.ndarray) -> None:
    """Put the convolutions named ``convs`` in the QDQ form onnxruntime fuses into one 8-bit kernel each: the
    input through QuantizeLinear/DequantizeLinear (uint8, its range over ``planes``), int8 weights with a scale per
    output channel, an int32 bias at the input's scale times the weights', and the output quantized where it ends:
    after the ReLU when one alone reads it (the kernel applies it), so the next convolution reads it as it is."""
    from onnx import numpy_helper

    graph = proto.graph
    nodes = list(graph.node)
    readers: dict[str, list[int]] = {}
    for i, node in enumerate(nodes):
        for name in node.input:
            readers.setdefault(name, []).append(i)
    tower = [i for i, node in enumerate(nodes) if node.name in convs]
    ends = {}
    for i in tower:
        following = readers.get(nodes[i].output[0], [])
        ends[i] = following[0] if len(following) == 1 and nodes[following[0]].op_type == "Relu" else i
    ranges = _ranges(proto, {nodes[i].input[0] for i in tower} | {nodes[ends[i]].output[0] for i in tower}, planes)
    inits = {t.name: t for t in graph.initializer}
    before: dict[int, list] = {}
    after: dict[int, list] = {}
    dequantized: set[str] = set()
    for i in tower:
        conv, tag = nodes[i], nodes[i].name
        added = before.setdefault(i, [])
        x = conv.input[0]
        x_scale, x_zero = _uint8_scale(*ranges[x])
        if x not in dequantized:
            added += _qdq(graph, x, f"{tag}/x", x_scale, x_zero)
            conv.input[0] = f"{tag}/x"
        weights = numpy_helper.to_array(inits[conv.input[1]]).astype(np.float32)
        w_scale = np.maximum(np.abs(weights).reshape(len(weights), -1).max(axis=1), 1e-12) / 127.0
        w_int8 = np.clip(np.round(weights / w_scale[:, None, None, None]), -127, 127).astype(np.int8)
        added.append(_dequantize(graph, f"{tag}/w", w_int8, w_scale))
        conv.input[1] = f"{tag}/w"
        if len(conv.input) > 2 and conv.input[2]:
            bias = numpy_helper.to_array(inits[conv.input[2]]).astype(np.float64)
            b_scale = (x_scale * w_scale).astype(np.float32)
            b_int32 = np.clip(np.round(bias / b_scale), -2**31, 2**31 - 1).astype(np.int32)  # never wraps around
            added.append(_dequantize(graph, f"{tag}/b", b_int32, b_scale))
            conv.input[2] = f"{tag}/b"
        end = nodes[ends[i]]
        y = end.output[0]
        end.output[0] = f"{tag}/y"
        after[ends[i]] = _qdq(graph, f"{tag}/y", y, *_uint8_scale(*ranges[y]))
        dequantized.add(y)
    graph.ClearField("node")
    for i, node in enumerate(nodes):  # each new node right beside its convolution: still in topological order
        graph.node.extend(before.get(i, []) + [node] + after.get(i, []))
    used = {name for node in graph.node for name in node.input}
    kept = [t for t in graph.initializer if t.name in used]
    graph.ClearField("initializer")
    graph.initializer.extend(kept)


def _qdq(graph, source: str, target: str, scale: float, zero: int) -> list:
    """QuantizeLinear then DequantizeLinear from tensor ``source`` to tensor ``target`` (uint8)."""
    from onnx import helper, numpy_helper

    graph.initializer.extend([numpy_helper.from_array(np.array(scale, np.float32), f"{target}/scale"),
                              numpy_helper.from_array(np.array(zero, np.uint8), f"{target}/zero")])
    return [helper.make_node("QuantizeLinear", [source, f"{target}/scale", f"{target}/zero"], [f"{target}/q"]),
            helper.make_node("DequantizeLinear", [f"{target}/q", f"{target}/scale", f"{target}/zero"], [target])]


def _dequantize(graph, target: str, values: np.ndarray, scales: np.ndarray):
    """A DequantizeLinear making tensor ``target`` from the integer ``values``, one scale per output channel."""
    from onnx import helper, numpy_helper

    graph.initializer.extend([numpy_helper.from_array(values, f"{target}/int"),
                              numpy_helper.from_array(scales.astype(np.float32), f"{target}/scale"),
                              numpy_helper.from_array(np.zeros(len(values), values.dtype), f"{target}/zero")])
    return helper.make_node("DequantizeLinear", [f"{target}/int", f"{target}/scale", f"{target}/zero"], [target],
                            axis=0)


def _ranges(proto, names: set[str], planes: np.ndarray) -> dict[str, tuple[float, float]]:
    """Each tensor in ``names``: its smallest and largest value over ``planes``, widened to hold 0."""
    import onnx
    import onnxruntime as ort

    probe = onnx.ModelProto()
    probe.CopyFrom(proto)
    known = {output.name for output in probe.graph.output}
    for name in sorted(names - known):
        probe.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 3
    session = ort.InferenceSession(probe.SerializeToString(), sess_options=opts, providers=["CPUExecutionProvider"])
    wanted = sorted(names)
    low = {name: 0.0 for name in wanted}
    high = {name: 0.0 for name in wanted}
    for i in range(0, len(planes), CALIBRATION_BATCH):
        for name, value in zip(wanted, session.run(wanted, {INPUT_NAME: planes[i:i + CALIBRATION_BATCH]})):
            low[name], high[name] = min(low[name], float(value.min())), max(high[name], float(value.max()))
    return {name: (low[name], high[name]) for name in wanted}


def _uint8_scale(low: float, high: float) -> tuple[float, int]:
    """Scale and zero point of unsigned 8-bit values covering [low, high] (which holds 0)."""
    scale = (high - low) / 255.0 if high > low else 1.0
    return scale, int(round(-low / scale))


def compare(reference: bytes, model: bytes, planes: np.ndarray, legal: list[np.ndarray]) -> Fidelity:
    """How closely ``model`` follows ``reference`` (ONNX models as bytes, lc0's outputs) on ``planes``."""
    import onnxruntime as ort

    def outputs(data: bytes) -> tuple[np.ndarray, np.ndarray]:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.log_severity_level = 3
        session = ort.InferenceSession(data, sess_options=opts, providers=["CPUExecutionProvider"])
        names = {o.name for o in session.get_outputs()}
        value = WDL_NAME if WDL_NAME in names else VALUE_NAME
        policy, values = session.run([POLICY_NAME, value], {INPUT_NAME: planes})
        if value == WDL_NAME:
            values = wdl_probabilities(values)
            return policy, values[:, 0] - values[:, 2]
        return policy, values[:, 0]

    (p_ref, v_ref), (p_new, v_new) = outputs(reference), outputs(model)
    same, kl = 0, 0.0
    for i, moves in enumerate(legal):
        a, b = _softmax(p_ref[i, moves]), _softmax(p_new[i, moves])
        same += int(a.argmax() == b.argmax())
        kl += float(np.sum(a * (np.log(a + 1e-9) - np.log(b + 1e-9))))
    n = len(legal)
    return Fidelity(same / n, kl / n, float(np.mean(np.abs(v_ref - v_new))))


def _softmax(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max())
    return e / e.sum()
