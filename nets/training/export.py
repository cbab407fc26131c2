"""Step 4: export a checkpoint to an ONNX file in lc0's contract, checked against PyTorch.

The exported file takes ``/input/planes`` [B, 112, 8, 8] and gives ``/output/policy`` [B, 1858] (logits) and
``/output/wdl`` [B, 3] (probabilities), so ``NetworkEvaluator`` runs it unchanged. onnxruntime's outputs are
compared with PyTorch's on validation positions before the file is kept. ``--int8`` also writes a statically
quantized copy (``nets/quantize.py``) and keeps it only when it agrees with the float net on the validation
positions: the best legal move in at least ``INT8_MIN_TOP1`` of them and a mean |dQ| of at most
``INT8_MAX_DQ``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch

from .dataset import Dataset
from .model import ArborNet, Exported

TOLERANCE = 1e-3          # largest |onnxruntime - PyTorch| allowed on policy logits and WDL
INT8_MIN_TOP1 = 0.95
INT8_MAX_DQ = 0.02


def load_net(checkpoint: Path) -> tuple[ArborNet, dict]:
    saved = torch.load(checkpoint, weights_only=False, map_location="cpu")
    net = ArborNet(**saved["config"])
    net.load_state_dict(saved["model"])
    net.eval()
    return net, saved


def onnx_outputs(path: Path, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    policy, wdl = session.run(["/output/policy", "/output/wdl"], {"/input/planes": planes})
    return policy, wdl


def export(net: ArborNet, out: Path, check_planes: np.ndarray, metadata: dict[str, str] | None = None) -> float:
    """Write ``net`` to ``out`` (atomically); returns the largest difference from PyTorch on ``check_planes``."""
    import onnx
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    model = Exported(net).eval()
    example = torch.from_numpy(np.repeat(check_planes[:1], 4, axis=0))
    torch.onnx.export(model, (example,), str(tmp), input_names=["/input/planes"],
                      output_names=["/output/policy", "/output/wdl"],
                      dynamic_shapes=({0: torch.export.Dim("batch")},), dynamo=True, external_data=False,
                      verbose=False)
    proto = onnx.load(str(tmp))
    onnx.helper.set_model_props(proto, {"arbor.history": "full", "arbor.input_format": "classical",
                                        **(metadata or {})})
    onnx.save(proto, str(tmp))
    with torch.no_grad():
        policy_t, wdl_t = (t.numpy() for t in model(torch.from_numpy(check_planes)))
    policy_o, wdl_o = onnx_outputs(tmp, check_planes)
    diff = max(float(np.abs(policy_t - policy_o).max()), float(np.abs(wdl_t - wdl_o).max()))
    if diff > TOLERANCE:
        tmp.unlink()
        raise RuntimeError(f"ONNX output differs from PyTorch by {diff:.2e} (> {TOLERANCE})")
    os.replace(tmp, out)
    return diff


def agreement(float_path: Path, other_path: Path, val: Dataset, n: int = 4096) -> dict[str, float]:
    """How closely ``other_path`` follows ``float_path`` on validation positions: share of positions with the
    same best legal move, and mean |Q difference| (Q = W - L)."""
    index = np.arange(min(n, len(val)))
    batch = val.batch(index)
    p1, w1 = onnx_outputs(float_path, batch["planes"])
    p2, w2 = onnx_outputs(other_path, batch["planes"])
    legal = batch["legal"]
    best1 = np.where(legal, p1, -np.inf).argmax(axis=1)
    best2 = np.where(legal, p2, -np.inf).argmax(axis=1)
    q1, q2 = w1[:, 0] - w1[:, 2], w2[:, 0] - w2[:, 2]
    return {"top1": float((best1 == best2).mean()), "dq": float(np.abs(q1 - q2).mean())}


def export_int8(float_path: Path, out: Path, val: Dataset) -> tuple[bool, dict[str, float]]:
    """Quantize ``float_path`` into ``out``; keep it only when it agrees with the float net."""
    from nets.quantize import quantize
    quantize(str(float_path), str(out), positions=512, keep_heads=True)
    scores = agreement(float_path, out, val)
    ok = scores["top1"] >= INT8_MIN_TOP1 and scores["dq"] <= INT8_MAX_DQ
    if not ok:
        out.unlink()
    return ok, scores
