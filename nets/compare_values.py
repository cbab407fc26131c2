"""How nets' values differ where the search uses them: on every child of stored positions.

    python nets/compare_values.py SHARD REFERENCE NET [NET ...] [--positions 400]

SHARD is a positions shard (``data/round-NNN/positions/shard-*.npz``). Each of the first ``--positions`` positions
is expanded into its children, one per legal move (each encoded with its parent as its only history), and every net
values them (Q = win - loss from ``/output/wdl``, or ``/output/value``). Against REFERENCE, for each NET: the root
mean square of Q; the same after each position's children are centred on their mean (the sibling differences a
search compares, without the level they share); and how often the move whose child Q is lowest (the mover's best by
value at one ply) is the same. A diagnostic for value distillation (docs/training.md, round 14): round 11's copy of
MeanGirl-8's value was close in level and not in ranking.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.evaluators import lc0_planes  # noqa: E402
from engine.evaluators.contract import wdl_probabilities  # noqa: E402
from nets.training import data as fmt  # noqa: E402
from nets.training.teacher import INPUT_NAME, WDL_NAME, net_session  # noqa: E402


def children(shard: Path, positions: int) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """The planes of every child of the shard's first ``positions`` positions with two or more legal moves, and
    each position's [start, end) among them."""
    stored = fmt.load_shard(shard)
    rows, spans = [], []
    for row, fullmove in zip(stored["rows"][:positions], stored["fullmove"][:positions]):
        board = fmt.board_from_row(row, int(fullmove))
        moves = list(board.legal_moves)
        if len(moves) < 2:
            continue
        start = len(rows)
        for move in moves:
            child = board.copy(stack=False)
            child.push(move)
            rows.append(lc0_planes.gather(child, [board]))
        spans.append((start, len(rows)))
    return lc0_planes.rows_to_planes(rows), spans


def q_values(net: Path, planes: np.ndarray) -> np.ndarray:
    """[N] win - loss of ``net`` on ``planes``, from its WDL head or its tanh value head."""
    session, names = net_session(net, (WDL_NAME,))
    out = session.run(list(names), {INPUT_NAME: planes})[0]
    if names != (WDL_NAME,):
        return out.reshape(-1)
    wdl = wdl_probabilities(out)
    return wdl[:, 0] - wdl[:, 2]


def compare(q: np.ndarray, reference: np.ndarray, spans: list[tuple[int, int]]) -> tuple[float, float, float]:
    """(RMS of Q - reference, RMS of the sibling differences' error, share of the same one-ply best move)."""
    centred = np.concatenate([(q[a:b] - q[a:b].mean()) - (reference[a:b] - reference[a:b].mean()) for a, b in spans])
    same = np.mean([np.argmin(q[a:b]) == np.argmin(reference[a:b]) for a, b in spans])
    return float(np.sqrt(np.mean((q - reference) ** 2))), float(np.sqrt(np.mean(centred ** 2))), float(same)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shard", type=Path)
    parser.add_argument("reference", type=Path)
    parser.add_argument("nets", type=Path, nargs="+")
    parser.add_argument("--positions", type=int, default=400)
    args = parser.parse_args(argv)
    planes, spans = children(args.shard, args.positions)
    reference = q_values(args.reference, planes)
    print(f"{len(spans)} positions, {len(planes)} children; against {args.reference.name}:")
    for net in args.nets:
        rms, siblings, same = compare(q_values(net, planes), reference, spans)
        print(f"{net.name}: RMS of Q {rms:.3f}, RMS of sibling differences {siblings:.3f}, "
              f"same one-ply best move {same:.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
