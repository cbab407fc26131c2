"""How nets' policies differ on stored positions: their breadth and how often their best moves agree.

    python nets/compare_policies.py SHARD NET [NET ...] [--positions 3000] [--temperature 1.359]

SHARD is a positions shard (``data/round-NNN/positions/shard-*.npz``); the priors are the softmax over the legal moves
of the policy logits divided by ``--temperature`` (default: the engine's ``PolicyTemperature``). A diagnostic for a
failed round (docs/training.md, round 13): did the candidate learn its teacher's choices, or only its breadth?
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.evaluators import lc0_planes  # noqa: E402
from engine.params import Params  # noqa: E402
from nets.training import data as fmt  # noqa: E402
from nets.training.teacher import legal_priors  # noqa: E402


def priors(net: Path, planes: np.ndarray, legal: np.ndarray, temperature: float) -> np.ndarray:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    logits = ort.InferenceSession(str(net), options).run(["/output/policy"], {"/input/planes": planes})[0]
    return legal_priors(logits, legal, temperature)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shard", type=Path)
    parser.add_argument("nets", type=Path, nargs="+")
    parser.add_argument("--positions", type=int, default=3000)
    parser.add_argument("--temperature", type=float, default=Params().policy_temperature)
    args = parser.parse_args(argv)
    shard = fmt.load_shard(args.shard)
    rows, fullmove = shard["rows"][:args.positions], shard["fullmove"][:args.positions]
    legal = np.stack([fmt.legal_mask(fmt.board_from_row(row, int(move))) for row, move in zip(rows, fullmove)])
    legal = np.unpackbits(legal, axis=1, count=fmt.POLICY_SIZE).astype(bool)
    planes = lc0_planes.rows_to_planes(rows)
    best = []
    for net in args.nets:
        p = priors(net, planes, legal, args.temperature)
        entropy = -(p * np.log(np.where(p > 0, p, 1.0))).sum(axis=1).mean()
        best.append(p.argmax(axis=1))
        print(f"{net.name}: entropy {entropy:.3f} nats, mean top prior {p.max(axis=1).mean():.3f}")
    for i, first in enumerate(args.nets):
        for j in range(i + 1, len(args.nets)):
            print(f"same best move, {first.name} and {args.nets[j].name}: {(best[i] == best[j]).mean():.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
