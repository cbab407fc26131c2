"""Quantize an lc0-format ONNX network to int8 with onnxruntime's static QDQ quantization.

    python nets/quantize.py IN.onnx OUT.onnx [--positions 512] [--per-tensor] [--keep-heads] [--seed 1]

Calibration positions come from random legal games played with python-chess (each position with its
history, encoded exactly as Arbor encodes them, so repetition and history planes are realistic). Weights become
int8 (per output channel unless ``--per-tensor``), activations uint8, in the QDQ format (QuantizeLinear /
DequantizeLinear pairs around each convolution), which onnxruntime's CPU provider fuses into integer kernels
when the session is created with full graph optimisation, as Arbor creates it. Static quantization is used
because dynamic quantization is slower for convolutions.

``--keep-heads`` leaves the last layers of the policy and value heads (the nodes after the final
convolutions) in float32, which usually recovers most of the accuracy lost on the value output for little
speed.

The quantized file keeps the network's inputs, outputs and metadata, so it loads through ``WeightsFile`` like
the original. Compare the two with ``nets/bench_network.py``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import chess  # noqa: E402

from engine.evaluators import lc0_planes  # noqa: E402


def calibration_planes(n: int, seed: int = 1, use_history: bool = True) -> np.ndarray:
    """[n, 112, 8, 8] planes of positions from random games (with a bias towards captures and checks, so
    that positions look less like pure noise)."""
    rng = random.Random(seed)
    rows = []
    while len(rows) < n:
        board = chess.Board()
        history: list[chess.Board] = []
        plies = rng.randint(2, 120)
        for _ in range(plies):
            moves = list(board.legal_moves)
            if not moves:
                break
            forcing = [m for m in moves if board.is_capture(m) or m.promotion]
            move = rng.choice(forcing) if forcing and rng.random() < 0.5 else rng.choice(moves)
            history.append(board.copy(stack=False))
            board.push(move)
            if rng.random() < 0.08 and not board.is_game_over():
                rows.append(lc0_planes.gather(board, history, use_history))
        if not board.is_game_over():
            rows.append(lc0_planes.gather(board, history, use_history))
    return lc0_planes.rows_to_planes(_with_rule50_spread(rows[:n], rng))


def selfplay_planes(net: str, n: int, seed: int = 1, use_history: bool = True) -> np.ndarray:
    """[n, 112, 8, 8] planes of positions from games the float network plays against itself, sampling its
    priors (temperature 1, the first plies more randomly): positions like those a search will meet."""
    from engine.evaluators.base import Leaf
    from engine.evaluators.network import NetworkEvaluator
    from engine.params import Params

    ev = NetworkEvaluator(net, Params(nn_cache_size=0, policy_temperature=1.0))
    rng = random.Random(seed)
    rows = []
    games = 16
    boards = [chess.Board() for _ in range(games)]
    histories: list[list[chess.Board]] = [[] for _ in range(games)]
    while len(rows) < n:
        leaves = [Leaf(b, list(b.legal_moves), h) for b, h in zip(boards, histories)]
        ev.evaluate(leaves)
        for g, leaf in enumerate(leaves):
            rows.append(lc0_planes.gather(leaf.board, leaf.history, use_history))
            board = boards[g]
            if len(histories[g]) < 6:
                move = rng.choice(leaf.moves)
            else:
                move = rng.choices(leaf.moves, weights=leaf.priors)[0]
            histories[g].append(board.copy(stack=False))
            board.push(move)
            if board.is_game_over(claim_draw=True) or len(histories[g]) > 200:
                boards[g] = chess.Board()
                histories[g] = []
    return lc0_planes.rows_to_planes(_with_rule50_spread(rows[:n], rng))


def _with_rule50_spread(rows: list, rng: random.Random, share: float = 0.25) -> list:
    """Replace the rule-50 count of a share of the rows by a uniform 0..99 value, so that the activation
    ranges also cover late, quiet positions (otherwise e.g. a count of 97 saturates the first layer)."""
    out = []
    for row in rows:
        if rng.random() < share:
            row = row[:lc0_planes._RULE50] + (rng.randint(0, 99),) + row[lc0_planes._RULE50 + 1:]
        out.append(row)
    return out


class _Reader:
    """onnxruntime CalibrationDataReader over batches of planes."""

    def __init__(self, planes: np.ndarray, batch: int = 16) -> None:
        self._batches = [planes[i:i + batch] for i in range(0, len(planes), batch)]
        self._it = iter(self._batches)

    def get_next(self):
        batch = next(self._it, None)
        return None if batch is None else {"/input/planes": batch}

    def rewind(self) -> None:
        self._it = iter(self._batches)


def _head_tail_nodes(model) -> list[str]:
    """Names of the nodes after the last convolution on each path to an output (dense layers, gathers,
    softmax/tanh): the head tails left in float by --keep-heads."""
    producers = {}
    for node in model.graph.node:
        for out in node.output:
            producers[out] = node
    keep: list[str] = []
    for output in model.graph.output:
        stack = [output.name]
        seen = set()
        while stack:
            name = stack.pop()
            node = producers.get(name)
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            if node.op_type == "Conv":
                continue
            if node.name:
                keep.append(node.name)
            stack.extend(node.input)
    return keep


def quantize(src: str, dst: str, positions: int = 512, per_channel: bool = True, keep_heads: bool = False,
             seed: int = 1, method: str = "minmax", selfplay: bool = True) -> None:
    import onnx
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    model = onnx.load(src)
    meta = {p.key: p.value for p in model.metadata_props}
    use_history = meta.get("arbor.history", "full").strip().lower() != "none"
    if selfplay:
        planes = selfplay_planes(src, positions, seed, use_history)
    else:
        planes = calibration_planes(positions, seed, use_history)
    with tempfile.TemporaryDirectory() as tmp:
        pre = os.path.join(tmp, "pre.onnx")
        try:
            quant_pre_process(src, pre, skip_symbolic_shape=True)
        except Exception as exc:  # pre-processing is an optimisation; quantize the original if it fails
            print(f"note: pre-processing skipped ({exc})", file=sys.stderr)
            pre = src
        exclude = _head_tail_nodes(onnx.load(pre)) if keep_heads else []
        quantize_static(
            pre, dst, _Reader(planes),
            quant_format=QuantFormat.QDQ,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
            per_channel=per_channel,
            calibrate_method={"minmax": CalibrationMethod.MinMax, "entropy": CalibrationMethod.Entropy,
                              "percentile": CalibrationMethod.Percentile}[method],
            nodes_to_exclude=exclude,
            extra_options={
                "ActivationSymmetric": False,
                "WeightSymmetric": True,
                # The input planes hold small integers (0/1 flags, the rule-50 count): with scale 1 and zero
                # point 0 they are exact in uint8. Calibrated ranges would make 1.0 inexact (e.g. 1.18).
                "TensorQuantOverrides": {
                    "/input/planes": [{"rmin": np.array(0.0, dtype=np.float32),
                                       "rmax": np.array(255.0, dtype=np.float32)}],
                },
            },
        )
    if meta:
        out = onnx.load(dst)
        onnx.helper.set_model_props(out, {**{p.key: p.value for p in out.metadata_props}, **meta})
        onnx.save(out, dst)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--positions", type=int, default=512, help="calibration positions")
    ap.add_argument("--per-tensor", action="store_true", help="one weight scale per tensor, not per channel")
    ap.add_argument("--keep-heads", action="store_true", help="leave the heads' final layers in float32")
    ap.add_argument("--calibration", choices=("minmax", "entropy", "percentile"), default="minmax",
                    help="how activation ranges are chosen from the calibration positions")
    ap.add_argument("--random-games", action="store_true",
                    help="calibrate on random legal games instead of the network's own self-play")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    quantize(args.input, args.output, args.positions, not args.per_tensor, args.keep_heads, args.seed,
             args.calibration, not args.random_games)
    print(f"wrote {args.output} (int8 QDQ, {args.positions} calibration positions)")


if __name__ == "__main__":
    main()
