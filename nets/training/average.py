"""A uniform average of nets fine-tuned from one net (a "model soup"), as a checkpoint and an ONNX net.

Rounds 24 and 25 fine-tuned ``arbor-r023`` on the same positions with depth-6 and depth-8 labels; each alone gained
little in its gate (+5 and +17). Nets fine-tuned from one start lie in one basin, and their average often fits unseen
positions better than either (Wortsman et al., 2022, "Model soups"): the average of rounds 24 and 25 did on the
positions of ``arbor-r023``'s games against Stockfish (docs/training.md, "Averaging rounds 24 and 25"). Every floating
tensor of the state is averaged, the batch norms' running statistics with the weights; counters are the first's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import chess
import numpy as np
import torch

from engine.evaluators.lc0_planes import encode

from .export import export, load_net

# Positions the exported net is checked on against PyTorch (a few plies of the Ruy Lopez, history included).
CHECK_MOVES = ("e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6", "b5a4", "g8f6")


class AverageError(ValueError):
    """The checkpoints cannot be averaged: different shapes."""


def average(checkpoints: Sequence[Path], out: Path) -> dict:
    """Write the average of ``checkpoints`` to ``out``, a checkpoint ``export`` and ``compare_fit`` read; returns it."""
    if len(checkpoints) < 2:
        raise AverageError("averaging needs at least two checkpoints")
    saved = [torch.load(path, weights_only=False, map_location="cpu") for path in checkpoints]
    config = saved[0]["config"]
    for path, other in zip(checkpoints[1:], saved[1:]):
        if other["config"] != config:
            raise AverageError(f"{path} is a {other['config']}, {checkpoints[0]} a {config}: only nets of one shape "
                               "average")
    first = saved[0]["model"]
    state = {key: sum(s["model"][key] for s in saved) / len(saved) if value.is_floating_point() else value
             for key, value in first.items()}
    data = dict(saved[0].get("data", {}), averaged=[str(path) for path in checkpoints])
    result = {"config": config, "model": state, "data": data}
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save(result, out)
    return result


def export_average(checkpoint: Path, onnx: Path) -> float:
    """Export an averaged checkpoint (no training data at hand: checked on ``CHECK_MOVES``' positions); returns the
    largest difference between onnxruntime and PyTorch there."""
    net, _ = load_net(checkpoint)
    board, history, planes = chess.Board(), [], []
    for move in CHECK_MOVES:
        planes.append(encode(board, history))
        history.append(board.copy(stack=False))
        board.push_uci(move)
    return export(net, onnx, np.stack(planes).astype(np.float32))
