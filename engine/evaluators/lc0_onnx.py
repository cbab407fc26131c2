"""The ONNX network of an lc0 net read by :mod:`engine.evaluators.lc0_weights`: the graph that lc0's ``leela2onnx``
would build, in the contract of ``nets/README.md``, so that :class:`~engine.evaluators.network.NetworkEvaluator`
runs lc0's nets without lc0.

The graph follows leela2onnx's layout and names (``/inputconv``, ``/block<i>/conv1``, ...), so its outputs match a
leela2onnx conversion to float rounding. The ``onnx`` package is imported only when a net is converted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import numpy as np

from .contract import INPUT_NAME, META_INPUT_FORMAT, POLICY_NAME, VALUE_NAME, WDL_NAME
from .lc0_policy import MOVE_INDEX, POLICY_SIZE
from .lc0_weights import CONV_POLICY_PLANES, INPUT_PLANES, Conv, Dense, Lc0Network, parse

if TYPE_CHECKING:  # onnx is imported lazily: only a conversion needs it
    import onnx

#: Bump whenever the ONNX graph built here changes: cached conversions of an older converter are then redone.
CONVERTER_VERSION = 1
#: ONNX versions of the graph written, those of leela2onnx's output.
ONNX_OPSET = 17
ONNX_IR_VERSION = 8


# ------------------------------------------------------------------------------------------------ policy map
# The convolution policy head's 80 planes (lc0's training code lays them out so): plane p, square s (a1 = 0 ...
# h8 = 63, from the side to move's view) is the move from s that the plane names.
#: Queen-like moves, planes 0-55: 7 distances for each direction (file step, rank step) in this order.
QUEEN_DIRECTIONS = ((0, 1), (1, 1), (1, 0), (1, -1), (0, -1), (-1, -1), (-1, 0), (-1, 1))  # N NE E SE S SW W NW
QUEEN_DISTANCES = 7
#: Knight jumps, planes 56-63.
KNIGHT_JUMPS = ((1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2))
#: Promotions from the 7th rank, planes 64-72: capturing towards the a-file, straight, towards the h-file, each as
#: rook, bishop, queen. A knight promotion is the plain pawn move, on its queen-move plane. Planes 73-79 are padding.
PROMOTION_FILE_STEPS = (-1, 0, 1)
PROMOTION_PIECES = "rbq"


def conv_policy_map() -> np.ndarray:
    """For each of lc0's 1858 policy entries, its index into the flattened [80, 8, 8] convolution head output."""
    names: list[Optional[str]] = []

    def plane(step_file: int, step_rank: int, promotion: str = "") -> None:
        for square in range(64):
            rank, file = divmod(square, 8)
            to_rank, to_file = rank + step_rank, file + step_file
            on_board = 0 <= to_rank < 8 and 0 <= to_file < 8 and (not promotion or rank == 6)
            names.append(_square(file, rank) + _square(to_file, to_rank) + promotion if on_board else None)

    for df, dr in QUEEN_DIRECTIONS:
        for distance in range(1, QUEEN_DISTANCES + 1):
            plane(df * distance, dr * distance)
    for df, dr in KNIGHT_JUMPS:
        plane(df, dr)
    for df in PROMOTION_FILE_STEPS:
        for piece in PROMOTION_PIECES:
            plane(df, 1, piece)
    mapping = np.full(POLICY_SIZE, -1, np.int64)
    for flat, move in enumerate(names):
        index = MOVE_INDEX.get(move) if move else None
        if index is not None:
            assert mapping[index] < 0, move
            mapping[index] = flat
    assert len(names) <= CONV_POLICY_PLANES * 64 and (mapping >= 0).all()
    return mapping


def _square(file: int, rank: int) -> str:
    return "abcdefgh"[file] + str(rank + 1)


# ------------------------------------------------------------------------------------------------ ONNX graph
class _Graph:
    """Nodes and initializers of the graph being built, with leela2onnx's naming (each node's output = its name)."""

    def __init__(self, activation: str) -> None:
        import onnx
        from onnx import helper, numpy_helper

        self.onnx, self.helper, self.numpy_helper = onnx, helper, numpy_helper
        self.activation = activation
        self.nodes: list = []
        self.initializers: list = []

    def const(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(self.numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(self, op: str, name: str, inputs: list[str], outputs: Optional[list[str]] = None, **attrs) -> str:
        outputs = outputs or [name]
        self.nodes.append(self.helper.make_node(op, inputs, outputs, name=name, **attrs))
        return outputs[0]

    def activate(self, x: str, name: str) -> str:
        if self.activation == "mish":  # x * tanh(softplus(x)); opset 17 has no Mish operator
            t = self.node("Tanh", name + "/mish/tanh", [self.node("Softplus", name + "/mish/softplus", [x])])
            return self.node("Mul", name + "/mish", [t, x])
        return self.node("Relu", name + "/relu", [x])

    def conv(self, x: str, conv: Conv, name: str, se: Optional[tuple[Dense, Dense]] = None,
             mixin: Optional[str] = None, activate: bool = True) -> str:
        pad = (conv.weight.shape[2] - 1) // 2
        kernel, bias = self.const(name + "/w/kernel", conv.weight), self.const(name + "/w/bias", conv.bias)
        y = self.node("Conv", name, [x, kernel, bias], kernel_shape=list(conv.weight.shape[2:]), pads=[pad] * 4)
        if se is not None:
            y = self.squeeze_excite(y, se, name + "/se")
        if mixin is not None:
            y = self.node("Add", name + "/mixin", [y, mixin])
        return self.activate(y, name) if activate else y

    def squeeze_excite(self, x: str, se: tuple[Dense, Dense], name: str) -> str:
        """lc0's SE: pool, FC, activation, FC to 2C; out = sigmoid(first C) * x + (second C)."""
        fc1, fc2 = se
        channels = fc2.bias.size // 2
        y = self.node("ReduceMean", name + "/reduce_mean", [x], axes=[2, 3], keepdims=0)
        y = self.dense(y, fc1, name, "1")
        y = self.activate(y, name)
        y = self.dense(y, fc2, name, "2")
        y = self.node("Reshape", name + "/reshape",
                      [y, self.const(name + "/shape", np.array([-1, 2 * channels, 1, 1], np.int64))])
        scale, shift = name + "/split/out1", name + "/split/out2"
        self.node("Split", name + "/split", [y], [scale, shift], axis=1)
        y = self.node("Mul", name + "/mul", [self.node("Sigmoid", name + "/sigmoid", [scale]), x])
        return self.node("Add", name + "/add3", [y, shift])

    def dense(self, x: str, layer: Dense, name: str, suffix: str = "") -> str:
        y = self.node("MatMul", f"{name}/matmul{suffix}", [x, self.const(f"{name}/matmul{suffix}/w", layer.weight)])
        return self.node("Add", f"{name}/add{suffix}", [y, self.const(f"{name}/add{suffix}/w", layer.bias)])

    def flatten(self, x: str, name: str, size: int) -> str:
        return self.node("Reshape", name, [x, self.const(name + "/shape", np.array([-1, size], np.int64))])


def build_onnx(net: Lc0Network) -> "onnx.ModelProto":
    """The ONNX model of ``net``, in the contract of ``nets/README.md`` (what leela2onnx writes)."""
    g = _Graph(net.activation)
    helper, TensorProto = g.helper, g.onnx.TensorProto
    x = g.conv(INPUT_NAME, net.input, "/inputconv")
    for i, block in enumerate(net.tower):
        y = g.conv(x, block.conv1, f"/block{i}/conv1")
        x = g.conv(y, block.conv2, f"/block{i}/conv2", se=block.se, mixin=x)

    if net.policy_head == "convolution":
        p = g.conv(x, net.policy_conv, "/policy/conv1")
        p = g.conv(p, net.policy_out, "/policy/conv2", activate=False)
        p = g.flatten(p, "/policy/flatten", CONV_POLICY_PLANES * 64)
        g.node("Gather", POLICY_NAME, [p, g.const("/const/mapping_table", conv_policy_map().astype(np.int32))],
               axis=1)
    else:
        p = g.conv(x, net.policy_conv, "/policy/conv")
        p = g.flatten(p, "/policy/reshape", net.policy_conv.bias.size * 64)
        p = g.node("MatMul", "/policy/dense/matmul", [p, g.const("/policy/dense/matmul/w", net.policy_out.weight)])
        g.node("Add", POLICY_NAME, [p, g.const("/policy/dense/add/w", net.policy_out.bias)])

    v = g.conv(x, net.value_conv, "/value/conv")
    v = g.flatten(v, "/value/reshape", net.value_conv.bias.size * 64)
    v = g.activate(g.dense(v, net.value_fc1, "/value/dense1", ""), "/value/dense1")
    v = g.dense(v, net.value_fc2, "/value/dense2", "")
    if net.wdl:
        g.node("Softmax", WDL_NAME, [v], axis=1)
        value_output = helper.make_tensor_value_info(WDL_NAME, TensorProto.FLOAT, ["batch", 3])
    else:
        g.node("Tanh", VALUE_NAME, [v])
        value_output = helper.make_tensor_value_info(VALUE_NAME, TensorProto.FLOAT, ["batch", 1])

    graph = helper.make_graph(
        g.nodes, "lc0",
        [helper.make_tensor_value_info(INPUT_NAME, TensorProto.FLOAT, ["batch", INPUT_PLANES, 8, 8])],
        [helper.make_tensor_value_info(POLICY_NAME, TensorProto.FLOAT, ["batch", POLICY_SIZE]), value_output],
        g.initializers)
    model = helper.make_model(graph, producer_name="arbor", producer_version=f"lc0-weights/{CONVERTER_VERSION}",
                              opset_imports=[helper.make_opsetid("", ONNX_OPSET)])
    model.ir_version = ONNX_IR_VERSION
    helper.set_model_props(model, {META_INPUT_FORMAT: "classical", "arbor.source": f"lc0 weights, {net.describe()}"})
    return model


def convert(raw: bytes) -> bytes:
    """The serialized ONNX model of an lc0 weight file's bytes. Raises EvaluatorError."""
    return build_onnx(parse(raw)).SerializeToString()
