"""Measure onnxruntime's raw evaluations per second for an lc0-format ONNX network.

    python nets/bench_network.py NET.onnx [--batches 1,8,16,32,64,256] [--threads 1] [--seconds 1.0]
                                          [--repeats 7] [--encode]

For each batch size the network runs on real encoded positions (random legal games) in ``--repeats`` timed
rounds of about ``--seconds / repeats`` each, after a warm-up; the median round gives evaluations/s. This is the
physical limit of a search's nodes per second with that network on this machine. The session is made exactly
as Arbor's evaluator makes it (full graph optimisation, ``--threads`` intra-op threads, one inter-op thread).

``--encode`` also times Arbor's Python-side work per leaf (plane encoding before the run, policy/value
decoding after it) at each batch size.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import chess  # noqa: E402

from engine.evaluators import lc0_planes  # noqa: E402
from engine.evaluators.base import Leaf  # noqa: E402


def random_leaves(n: int, seed: int = 1) -> list[Leaf]:
    """``n`` positions from random legal games, each with its history."""
    rng = random.Random(seed)
    leaves: list[Leaf] = []
    while len(leaves) < n:
        board = chess.Board()
        history: list[chess.Board] = []
        for _ in range(rng.randint(4, 90)):
            moves = list(board.legal_moves)
            if not moves:
                break
            history.append(board.copy(stack=False))
            board.push(rng.choice(moves))
        if board.is_game_over():
            continue
        leaves.append(Leaf(board.copy(stack=False), list(board.legal_moves), history))
    return leaves


def make_session(path: str, threads: int):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    if threads > 1:
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(path, sess_options=opts, providers=["CPUExecutionProvider"])


def bench_batch(sess, planes: np.ndarray, seconds: float, repeats: int) -> float:
    """Median evaluations/s of ``sess.run`` on ``planes``."""
    feed = {"/input/planes": planes}
    names = [o.name for o in sess.get_outputs()]
    t0 = time.perf_counter()
    sess.run(names, feed)
    one = max(time.perf_counter() - t0, 1e-6)
    for _ in range(2):
        sess.run(names, feed)
    per_round = max(1, int(seconds / repeats / one))
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(per_round):
            sess.run(names, feed)
        dt = time.perf_counter() - t0
        rates.append(per_round * len(planes) / dt)
    return statistics.median(rates)


def bench_python(path: str, leaves: list[Leaf], batch: int) -> tuple[float, float]:
    """(encode µs/leaf, decode µs/leaf) of Arbor's evaluator at this batch size, cache off."""
    from engine.evaluators.network import NetworkEvaluator
    from engine.params import Params

    ev = NetworkEvaluator(path, Params(nn_cache_size=0))
    chunks = [leaves[i:i + batch] for i in range(0, len(leaves) - batch + 1, batch)] or [leaves[:batch]]
    n = sum(len(c) for c in chunks)
    batches = [ev.run(ev.prepare(c)) for c in chunks]
    enc, dec = [], []
    for _ in range(5):
        t0 = time.perf_counter()
        for c in chunks:
            ev.prepare(c)
        enc.append((time.perf_counter() - t0) / n * 1e6)
        t0 = time.perf_counter()
        for b in batches:
            ev.finish(b)
        dec.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(enc), statistics.median(dec)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("net")
    ap.add_argument("--batches", default="1,8,16,32,64,256")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=1.0, help="timed seconds per batch size")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--encode", action="store_true", help="also time Arbor's encode/decode per leaf")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.batches.split(",") if s.strip()]
    sess = make_session(args.net, args.threads)
    leaves = random_leaves(max(sizes + [256]))
    rows = [lc0_planes.gather(l.board, l.history) for l in leaves]
    planes_all = lc0_planes.rows_to_planes(rows)
    print(f"{os.path.basename(args.net)}: onnxruntime {__import__('onnxruntime').__version__}, "
          f"threads={args.threads}, median of {args.repeats} rounds")
    print(f"{'batch':>6} {'evals/s':>10} {'ms/batch':>9}" + ("  encode µs/leaf  decode µs/leaf" if args.encode else ""))
    for b in sizes:
        planes = np.ascontiguousarray(planes_all[:b])
        rate = bench_batch(sess, planes, args.seconds, args.repeats)
        line = f"{b:>6} {rate:>10.0f} {1000.0 * b / rate:>9.2f}"
        if args.encode:
            e, d = bench_python(args.net, leaves, b)
            line += f"  {e:>14.1f}  {d:>14.1f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
