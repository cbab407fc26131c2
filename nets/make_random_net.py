"""Write an lc0-format ONNX ResNet with random weights, for benchmarks and tests (no torch needed).

    python nets/make_random_net.py out.onnx [--blocks 6] [--filters 64] [--se] [--value wdl|value] [--mlh]
                                            [--no-history] [--seed 0]

The graph follows the shape of lc0's classical networks as ``leela2onnx`` writes them:

- input ``/input/planes`` float32 [batch, 112, 8, 8];
- an input convolution 3x3 (112 -> F) and ``--blocks`` residual blocks (two 3x3 convolutions, optional
  squeeze-and-excitation), ReLU activations, batch norm folded into the convolution biases;
- convolution policy head: 3x3 F -> F, 3x3 F -> 80, flattened to 5120 and gathered to ``/output/policy``
  [batch, 1858] (the same gather lc0's converter uses; which 1858 of the 5120 does not matter here);
- value head: 1x1 F -> 32, dense 2048 -> 128, dense 128 -> 3 with softmax (``/output/wdl``), or -> 1 with tanh
  (``/output/value``); optional moves-left head ``/output/mlh``.

The weights are random (He-scaled, so activations stay in range): the network plays legal but meaningless
chess. Its speed is that of a trained network of the same size.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

try:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError:  # pragma: no cover
    sys.exit("make_random_net.py needs the 'onnx' package (pip install onnx)")


class _Builder:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.inits: list = []
        self.n = 0

    def name(self, base: str) -> str:
        self.n += 1
        return f"/{base}_{self.n}"

    def const(self, array: np.ndarray, base: str = "w") -> str:
        name = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(self, op: str, inputs: list[str], base: str, **attrs) -> str:
        out = self.name(base)
        self.nodes.append(helper.make_node(op, inputs, [out], name=out + "_op", **attrs))
        return out

    def conv(self, x: str, cin: int, cout: int, k: int, relu: bool = True) -> str:
        w = (self.rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k))).astype(np.float32)
        b = (self.rng.standard_normal(cout) * 0.01).astype(np.float32)
        y = self.node("Conv", [x, self.const(w), self.const(b, "b")], "conv", kernel_shape=[k, k],
                      pads=[k // 2] * 4)
        return self.node("Relu", [y], "relu") if relu else y

    def dense(self, x: str, nin: int, nout: int, act: str | None = "Relu") -> str:
        w = (self.rng.standard_normal((nin, nout)) * np.sqrt(2.0 / nin)).astype(np.float32)
        b = (self.rng.standard_normal(nout) * 0.01).astype(np.float32)
        y = self.node("Gemm", [x, self.const(w), self.const(b, "b")], "dense")
        return self.node(act, [y], act.lower()) if act else y

    def se(self, x: str, channels: int, ratio: int = 4) -> str:
        pooled = self.node("GlobalAveragePool", [x], "pool")
        flat = self.node("Flatten", [pooled], "flat", axis=1)
        h = self.dense(flat, channels, max(1, channels // ratio))
        gb = self.dense(h, max(1, channels // ratio), 2 * channels, act=None)
        shaped = self.node("Reshape", [gb, self.const(np.array([-1, 2 * channels, 1, 1], np.int64), "shape")],
                           "se_shape")
        gamma, beta = self.name("gamma"), self.name("beta")
        self.nodes.append(helper.make_node("Split", [shaped, self.const(np.array([channels, channels], np.int64),
                                                                        "split")],
                                           [gamma, beta], axis=1, name=gamma + "_op"))
        gate = self.node("Sigmoid", [gamma], "sigmoid")
        scaled = self.node("Mul", [x, gate], "mul")
        return self.node("Add", [scaled, beta], "add")


def build(blocks: int = 6, filters: int = 64, se: bool = False, value: str = "wdl", mlh: bool = False,
          no_history: bool = False, seed: int = 0, batch: int | str = "batch") -> onnx.ModelProto:
    """The random network as an ONNX model (see the module docstring)."""
    g = _Builder(seed)
    x = "/input/planes"
    f = filters
    flow = g.conv(x, 112, f, 3)
    for _ in range(blocks):
        y = g.conv(flow, f, f, 3)
        y = g.conv(y, f, f, 3, relu=False)
        if se:
            y = g.se(y, f)
        flow = g.node("Relu", [g.node("Add", [y, flow], "res")], "relu")
    # Policy head.
    p = g.conv(flow, f, f, 3)
    p = g.conv(p, f, 80, 3, relu=False)
    p = g.node("Reshape", [p, g.const(np.array([-1, 80 * 64], np.int64), "shape")], "pflat")
    gather_idx = np.sort(g.rng.choice(80 * 64, 1858, replace=False)).astype(np.int64)
    g.nodes.append(helper.make_node("Gather", [p, g.const(gather_idx, "pidx")], ["/output/policy"], axis=1,
                                    name="/output/policy_op"))
    # Value head.
    v = g.conv(flow, f, 32, 1)
    v = g.node("Reshape", [v, g.const(np.array([-1, 32 * 64], np.int64), "shape")], "vflat")
    v = g.dense(v, 32 * 64, 128)
    outputs = [helper.make_tensor_value_info("/output/policy", TensorProto.FLOAT, [batch, 1858])]
    if value == "wdl":
        v = g.dense(v, 128, 3, act=None)
        g.nodes.append(helper.make_node("Softmax", [v], ["/output/wdl"], axis=1, name="/output/wdl_op"))
        outputs.append(helper.make_tensor_value_info("/output/wdl", TensorProto.FLOAT, [batch, 3]))
    else:
        v = g.dense(v, 128, 1, act=None)
        g.nodes.append(helper.make_node("Tanh", [v], ["/output/value"], name="/output/value_op"))
        outputs.append(helper.make_tensor_value_info("/output/value", TensorProto.FLOAT, [batch, 1]))
    if mlh:
        m = g.conv(flow, f, 8, 1)
        m = g.node("Reshape", [m, g.const(np.array([-1, 8 * 64], np.int64), "shape")], "mflat")
        m = g.dense(m, 8 * 64, 128)
        m = g.dense(m, 128, 1, act=None)
        g.nodes.append(helper.make_node("Relu", [m], ["/output/mlh"], name="/output/mlh_op"))
        outputs.append(helper.make_tensor_value_info("/output/mlh", TensorProto.FLOAT, [batch, 1]))
    graph = helper.make_graph(
        g.nodes, f"arbor_random_{blocks}x{filters}",
        [helper.make_tensor_value_info("/input/planes", TensorProto.FLOAT, [batch, 112, 8, 8])],
        outputs, initializer=g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="arbor")
    model.ir_version = 8
    if no_history:
        helper.set_model_props(model, {"arbor.history": "none"})
    onnx.checker.check_model(model)
    return model


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("output")
    ap.add_argument("--blocks", type=int, default=6)
    ap.add_argument("--filters", type=int, default=64)
    ap.add_argument("--se", action="store_true", help="squeeze-and-excitation in every block")
    ap.add_argument("--value", choices=("wdl", "value"), default="wdl")
    ap.add_argument("--mlh", action="store_true", help="add a moves-left head")
    ap.add_argument("--no-history", action="store_true", help="declare metadata arbor.history=none")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    model = build(args.blocks, args.filters, args.se, args.value, args.mlh, args.no_history, args.seed)
    onnx.save(model, args.output)
    print(f"wrote {args.output}: {args.blocks} blocks x {args.filters} filters, {args.value} head")


if __name__ == "__main__":
    main()
