"""How closely nets fit labelled positions that none of them trained on: the training's own losses, before any game.

    python nets/compare_fit.py POSITIONS LABELS NET [NET ...] [--by-pieces] [--by-value] [--results]

POSITIONS and LABELS are a positions folder and its labels folder (``data/round-NNN/positions``, ``.../labels``);
every labelled position counts. A NET is an exported ONNX file (read back by ``warmstart.load_onnx``, its batch
norms unfolded with statistics measured on these positions, so it computes the exported function; a net not exported
by ``nets.training`` is refused) or a training checkpoint (``checkpoint.pt``). Each line gives the policy
cross-entropy against the soft target at 50 cp, the WDL cross-entropy, how often the net's best move is the labels'
best, and Q's squared error, as ``train`` reports them. ``--by-pieces`` gives the same again for each band of
material (the pieces on the board, kings included): where in the game a candidate gains or loses against its start.
``--by-value`` does so for bands of the label's |W - L|, from balanced to decided (``dataset.DECIDED_Q``): real games
hold far more balanced positions than self-play, and a net fits them worst (docs/training.md, "Round 28").
``--results`` reads the labels and the net against the games' results (positions from real games, ``nets.training
games``): the draw share each predicts beside the games', and how well Q (win - loss) foretells the result (the
correlation), so that a fit to the labels can be told from a fit to what happened at the board.
Round 22 found every fine-tune at 2e-3 ending worse on held-out depth-8 labels than the net it started from
(docs/training.md): a candidate that fits unseen positions worse than its start is not worth a gate's hour.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nets.training.dataset import DECIDED_Q, load  # noqa: E402
from nets.training.export import load_net  # noqa: E402
from nets.training.round import POLICY_TEMPERATURE_CP  # noqa: E402
from nets.training.train import validate  # noqa: E402
from nets.training.warmstart import WarmStartError, load_onnx  # noqa: E402

CALIBRATION_POSITIONS = 4096   # positions whose statistics unfold an ONNX net's batch norms
# The smallest endings, the rest of Syzygy's seven pieces, the other endings, the middlegame, the opening.
PIECE_BANDS = ((2, 5), (6, 7), (8, 10), (11, 16), (17, 32))
# The label's |W - L|: balanced, leaning, winning, decided.
VALUE_BANDS = ((0.0, 0.3), (0.3, 0.6), (0.6, DECIDED_Q), (DECIDED_Q, 1.0))


def bands(data) -> list[tuple[str, np.ndarray]]:
    """(name, index) of the positions in each band of ``PIECE_BANDS`` that holds any."""
    count = data.pieces
    named = [(f"{lo}-{hi} pieces", np.flatnonzero((count >= lo) & (count <= hi))) for lo, hi in PIECE_BANDS]
    return [(name, index) for name, index in named if len(index)]


def value_bands(data) -> list[tuple[str, np.ndarray]]:
    """(name, index) of the positions in each band of ``VALUE_BANDS`` that holds any (the last band closed)."""
    q = np.abs(data.wdl[:, 0] - data.wdl[:, 2])
    named = [(f"|W-L| {lo:g}-{hi:g}", np.flatnonzero((q >= lo) & ((q < hi) | (hi == 1.0)))) for lo, hi in VALUE_BANDS]
    return [(name, index) for name, index in named if len(index)]


@torch.no_grad()
def against_results(net, data, batch_size: int = 1024) -> str:
    """The draw share of the labels, the net and the games, and Q's correlation with the games' results."""
    net.eval()
    wdl = []
    for start in range(0, len(data), batch_size):
        planes = data.batch(np.arange(start, min(len(data), start + batch_size)))["planes"]
        wdl.append(torch.softmax(net(torch.as_tensor(planes))[1].float(), dim=1).numpy())
    net_wdl = np.concatenate(wdl)
    result = data.result.astype(np.float64)

    def correlation(q: np.ndarray) -> float:
        return float(np.corrcoef(q, result)[0, 1]) if q.std() and result.std() else float("nan")

    draws = (data.wdl[:, 1].mean(dtype=np.float64), net_wdl[:, 1].mean(dtype=np.float64), np.mean(result == 0))
    return (f"draws: label {draws[0]:.2f}, net {draws[1]:.2f}, games {draws[2]:.2f}"
            f"; Q's correlation with the result: label {correlation(data.wdl[:, 0] - data.wdl[:, 2]):.2f}, "
            f"net {correlation(net_wdl[:, 0] - net_wdl[:, 2]):.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("positions", type=Path)
    parser.add_argument("labels", type=Path)
    parser.add_argument("nets", type=Path, nargs="+")
    parser.add_argument("--by-pieces", action="store_true",
                        help="the fit in each band of material too (the pieces on the board)")
    parser.add_argument("--by-value", action="store_true",
                        help="the fit in each band of the label's |win - loss| too, balanced to decided")
    parser.add_argument("--results", action="store_true",
                        help="the labels and each net against the games' results: draws, and Q's correlation")
    args = parser.parse_args(argv)
    data, summary = load(args.positions, args.labels, repeats="keep")
    print(f"{len(data):,} positions, labels {summary['label_depths']}", flush=True)
    parts = [(f" {name}", data.subset(index)) for name, index in bands(data)] if args.by_pieces else []
    parts += [(f" {name}", data.subset(index)) for name, index in value_bands(data)] if args.by_value else []
    for name, part in parts:
        print(f"{name.strip()}: {len(part):,} positions ({len(part) / len(data):.1%})", flush=True)
    calibration = data.batch(np.arange(min(CALIBRATION_POSITIONS, len(data))))["planes"]
    for path in args.nets:
        try:
            net = load_net(path)[0] if path.suffix == ".pt" else load_onnx(path, calibration)
        except WarmStartError as e:   # lc0's own nets and others not exported by nets.training
            print(f"{path}: cannot read it back: {e}", file=sys.stderr)
            return 2
        for name, part in [("", data), *parts]:
            s = validate(net, part, 1024, 0.0, POLICY_TEMPERATURE_CP, limit=len(part))
            print(f"{path}{name}: policy CE {s['policy']:.4f}, WDL CE {s['value']:.4f}, best move {s['top1']:.2%}, "
                  f"Q MSE {s['q_mse']:.4f}", flush=True)
            if args.results:
                print(f"{path}{name}: {against_results(net, part)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
