"""Step 3: train the network on the labelled positions (PyTorch; CPU, or a GPU with ``--device cuda``).

Loss = policy cross-entropy (Stockfish's best move, or with ``--policy-temperature-cp`` a softmax over the
scores of its MultiPV moves; illegal moves masked) + value cross-entropy (the WDL
target). AdamW with a linear warm-up and a cosine decay. A validation split by whole games is scored every
``--eval-every`` steps; each evaluation also writes the checkpoint (model, optimiser, schedule, step, loss
history), ``history.json`` and ``loss.png``. Rerunning the same command resumes from the checkpoint, and the
data order depends only on (seed, epoch), so an interrupted run continues exactly where it stopped.

On a GPU the network's steps are cheap and building batches (bit planes, masks, soft targets) is the work:
``loader_workers`` processes build them ahead of the steps, in the same order as a single process would.
A checkpoint holds CPU tensors, so a run can move between a GPU machine and this one.

``precision``: the steps' arithmetic. ``bfloat16`` runs the convolutions in bfloat16 (``torch.autocast``; the
weights, the optimiser and the losses stay float32), which CPUs with AMX or AVX-512 BF16 do in hardware: on this
machine's 2 cores a 6x48 trains at about 2,900 positions a second at batches of 1024 against 1,300 in float32 at
256. ``auto`` picks it on such a CPU and float32 elsewhere (where bfloat16 is emulated, and slower).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from .dataset import DECIDED_Q, ENDING_PIECES, Dataset, epoch_index, load, split
from .model import SHARED, ArborNet
from .ship import LOCAL_CPU

ILLEGAL = -1e9


PRECISIONS = ("auto", "float32", "bfloat16")


def cpu_has_bfloat16() -> bool:
    """Whether this CPU multiplies bfloat16 in hardware (AMX tiles or AVX-512 BF16)."""
    probes = ("_is_amx_tile_supported", "_is_avx512_bf16_supported")
    return any(getattr(torch.cpu, name, lambda: False)() for name in probes)


def cpu_has_amx() -> bool:
    """Whether this CPU has AMX tiles, which train bfloat16 about twice as fast as AVX-512 BF16 alone."""
    return bool(getattr(torch.cpu, "_is_amx_tile_supported", lambda: False)())


def resolve_precision(precision: str, device: str) -> str:
    """``auto``: bfloat16 on a CPU that has it in hardware, float32 otherwise (and on GPUs, as before)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    if precision == "auto":
        return "bfloat16" if torch.device(device).type == "cpu" and cpu_has_bfloat16() else "float32"
    return precision


def _tensors(batch: dict[str, np.ndarray | torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
    out = {}
    for key, value in batch.items():
        tensor = torch.from_numpy(value) if isinstance(value, np.ndarray) else value
        out[key] = tensor.to(device, non_blocking=True)
    out["planes"] = out["planes"].float()   # a GPU batch travels as float16 (exact: small integers)
    return out


def losses(net: ArborNet, batch: dict[str, np.ndarray | torch.Tensor],
           device: torch.device = torch.device("cpu"), precision: str = "float32",
           q_mse_weight: float = 0.0) -> dict[str, torch.Tensor]:
    """The batch's losses: the policy's and the WDL's cross-entropies, and ``q_mse_weight`` times the squared error
    of Q (win - loss) against the target's, which the search reads and a cross-entropy against a soft WDL barely
    pushes when it is a tenth off; "loss" is their sum, the rest are reported."""
    batch = _tensors(batch, device)
    legal, best, target = batch["legal"], batch["best"], batch["wdl"]
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bfloat16"):
        policy, value = net(batch["planes"])
    policy, value = policy.float(), value.float()   # the losses' softmaxes in float32 either way
    policy = policy.masked_fill(~legal, ILLEGAL)
    if "policy" in batch:  # soft target from the labelled moves' scores
        policy_loss = -(batch["policy"] * F.log_softmax(policy, dim=1)).sum(dim=1).mean()
    else:
        policy_loss = F.cross_entropy(policy, best)
    value_loss = -(target * F.log_softmax(value, dim=1)).sum(dim=1).mean()
    q_pred = torch.softmax(value, dim=1)
    q_error = ((q_pred[:, 0] - q_pred[:, 2]) - (target[:, 0] - target[:, 2])).square().mean()
    top1 = (policy.argmax(dim=1) == best).float().mean()
    return {"loss": policy_loss + value_loss + q_mse_weight * q_error, "policy": policy_loss, "value": value_loss,
            "q_mse": q_error, "top1": top1}


@torch.no_grad()
def validate(net: ArborNet, val: Dataset, batch_size: int, result_weight: float, policy_temperature_cp: float,
             limit: int = 10000, device: torch.device = torch.device("cpu"), precision: str = "float32"
             ) -> dict[str, float]:
    net.eval()
    n = min(len(val), limit)
    sums: dict[str, float] = {}
    for start in range(0, n, batch_size):
        index = np.arange(start, min(n, start + batch_size))
        batch = val.batch(index, result_weight, policy_temperature_cp)
        for key, value in losses(net, batch, device, precision).items():
            sums[key] = sums.get(key, 0.0) + float(value) * len(index)
    net.train()
    return {key: value / n for key, value in sums.items()}


def _on_cpu(state):
    """A state dict (nested) with every tensor on the CPU, so that a checkpoint loads anywhere."""
    if isinstance(state, torch.Tensor):
        return state.detach().cpu()
    if isinstance(state, dict):
        return {key: _on_cpu(value) for key, value in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(_on_cpu(value) for value in state)
    return state


def plot(history: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    steps = [h["step"] for h in history]
    for ax, key, title in zip(axes, ("policy", "value", "top1"),
                              ("policy cross-entropy", "value (WDL) cross-entropy", "policy top-1 agreement")):
        ax.plot(steps, [h["train_" + key] for h in history], label="train")
        ax.plot(steps, [h["val_" + key] for h in history], label="validation")
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.legend()
        ax.grid(alpha=0.3)
    fig.tight_layout()
    tmp = path.with_name(path.name + ".tmp.png")
    fig.savefig(tmp, dpi=90)
    plt.close(fig)
    os.replace(tmp, path)


class _Batches(torch.utils.data.Dataset):
    """Training batch ``step`` of a run, built by a loader process: the same indices as the single-process
    loop (one permutation per (seed, epoch))."""

    def __init__(self, data: Dataset, index: np.ndarray, batch_size: int, steps_per_epoch: int, seed: int,
                 result_weight: float, policy_temperature_cp: float, half_planes: bool):
        self.half_planes = half_planes   # 2 bytes a plane square instead of 4 between processes
        self.data, self.index = data, index   # an epoch trains on data[index] (``dataset.epoch_index``)
        self.batch_size, self.steps_per_epoch, self.seed = batch_size, steps_per_epoch, seed
        self.result_weight, self.policy_temperature_cp = result_weight, policy_temperature_cp
        self.order, self.epoch = np.arange(0), -1

    def __getitem__(self, step: int) -> dict[str, torch.Tensor]:
        epoch, offset = divmod(step, self.steps_per_epoch)
        if self.epoch != epoch:
            self.order, self.epoch = self.index[_permutation(len(self.index), self.seed, epoch)], epoch
        index = np.sort(self.order[offset * self.batch_size:(offset + 1) * self.batch_size])
        batch = self.data.batch(index, self.result_weight, self.policy_temperature_cp)
        if self.half_planes:
            batch["planes"] = batch["planes"].astype(np.float16)
        return {key: torch.from_numpy(value) for key, value in batch.items()}


def _permutation(n: int, seed: int, epoch: int) -> np.ndarray:
    return np.random.default_rng([seed, epoch]).permutation(n)


def rows_digest(data: Dataset) -> str:
    """A fingerprint of the positions a run trains on: a run resumed on regenerated data must see the same ones."""
    return hashlib.blake2b(np.ascontiguousarray(data.rows).tobytes(), digest_size=16).hexdigest()


def finished(checkpoint: Path) -> bool:
    """Whether the run of ``checkpoint`` trained all its steps (False: it stopped early and resumes)."""
    state = torch.load(checkpoint, weights_only=False, map_location="cpu")["state"]
    return state["step"] >= state.get("total", state["step"])


def _param_groups(net: ArborNet, tower_lr_scale: float) -> list[dict]:
    """The optimiser's parameter groups: the trainable parameters in one group, or with ``tower_lr_scale`` below 1 the
    heads' and the shared stem and tower's apart, each with the share of the schedule's rate it learns at."""
    trainable = [(name, p) for name, p in net.named_parameters() if p.requires_grad]
    if tower_lr_scale == 1.0:
        return [{"params": [p for _, p in trainable], "scale": 1.0}]
    is_shared = lambda name: name.split(".", 1)[0] in SHARED
    shared = [p for name, p in trainable if is_shared(name)]
    heads = [p for name, p in trainable if not is_shared(name)]
    return [{"params": heads, "scale": 1.0}] + ([{"params": shared, "scale": tower_lr_scale}] if shared else [])


def lr_at(step: int, total: int, peak: float, warmup: int) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return peak * (0.02 + 0.98 * 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress))))


def train(positions: Path | Sequence[Path], labels: Path | Sequence[Path], out: Path, *, blocks: int,
          filters: int, se: bool, epochs: float, batch_size: int, lr: float, weight_decay: float,
          val_share: float, result_weight: float, policy_temperature_cp: float = 0.0, eval_every: int,
          seed: int, threads: int, limit_shards: int = 0, stop_at: int = 0, init: Path | None = None,
          grow: bool = False, device: str = "cpu", loader_workers: int = 0, precision: str = "auto",
          deadline: float = 0.0, repeats: str = "keep", train_only: str = "all",
          tower_lr_scale: float = 1.0, q_mse_weight: float = 0.0, ending_repeats: int = 1,
          decided_keep: float = 1.0) -> Path:
    """Train (or resume) into ``out``; returns the checkpoint path. ``stop_at``: stop after that step, as an
    interruption would (the checkpoint is written there), to try resumption. ``init``: start from this
    exported ONNX net (a shipped generation) instead of random weights; its architecture replaces
    ``blocks``, ``filters`` and ``se``, unless ``grow``: then the net is grown to ``blocks`` x ``filters``
    computing the same function (``grow.py``). ``device``: where the steps run ("cpu", "cuda");
    ``loader_workers``: processes that build batches ahead of the steps (0: the training process does);
    ``precision``: see the module's docstring; ``deadline``: a ``time.time()`` at which to stop, with a checkpoint,
    as ``stop_at`` does (a round's session ends; the next one resumes); ``repeats``: what becomes of a position
    found in several shards (``dataset.load``); ``train_only``: "policy" trains the policy head alone, on the frozen
    tower and value of ``init`` (``ArborNet.train_only``); ``tower_lr_scale``: the stem and tower learn at this share
    of the heads' rate (a fine-tuning that should move the heads more than the features they share);
    ``q_mse_weight``: the weight of Q's squared error in the loss (``losses``); ``ending_repeats``: each ending of the
    training side (``dataset.ENDING_PIECES``) that many times an epoch (validation keeps the data's own mix);
    ``decided_keep``: the share of the training side's decided positions (``dataset.DECIDED_Q``) it trains on."""
    if not 0.0 < tower_lr_scale <= 1.0:
        raise ValueError(f"tower_lr_scale must be in (0, 1], not {tower_lr_scale}")
    if q_mse_weight < 0.0:
        raise ValueError(f"q_mse_weight must be 0 or more, not {q_mse_weight}")
    if ending_repeats < 1:
        raise ValueError(f"ending_repeats must be 1 or more, not {ending_repeats}")
    if train_only != "all" and init is None:
        raise ValueError("train_only needs a net to start from (init): a frozen random tower learns nothing")
    out.mkdir(parents=True, exist_ok=True)
    where = torch.device(device)
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    precision = resolve_precision(precision, device)
    data, summary = load(positions, labels, limit_shards, repeats)
    train_set, val_set = split(data, val_share, seed)
    index = epoch_index(train_set, ending_repeats, decided_keep, seed)
    extra = len(epoch_index(train_set, ending_repeats)) - len(train_set)   # the endings' copies, all positions kept
    fate = "dropped" if repeats == "drop" else "kept"
    print(f"{len(data)} positions ({summary['duplicates']} repeated copies {fate}, labels by Stockfish depth or "
          f"teacher: {summary['label_depths']}): {len(train_set)} train"
          + (f" (and {extra} more times an ending an epoch)" if extra else "")
          + (f" ({len(index)} an epoch: {decided_keep:g} of the decided ones)" if decided_keep < 1.0 else "")
          + f", {len(val_set)} validation")
    # Enough to rebuild the same split later (export checks the net on these validation positions).
    data_record = {"positions": len(data), "train": len(train_set), "validation": len(val_set), **summary,
                   "val_share": val_share, "seed": seed, "limit_shards": limit_shards, "repeats": repeats,
                   "policy_temperature_cp": policy_temperature_cp, "init": init.name if init else None,
                   "lr": lr, "epochs": epochs, "batch_size": batch_size, "precision": precision,
                   "result_weight": result_weight, "rows_digest": rows_digest(data), "train_only": train_only,
                   "tower_lr_scale": tower_lr_scale, "q_mse_weight": q_mse_weight, "ending_repeats": ending_repeats,
                   "ending_pieces": ENDING_PIECES, "ending_copies": extra, "decided_keep": decided_keep,
                   "decided_q": DECIDED_Q, "epoch_positions": len(index),
                   "device": torch.cuda.get_device_name(where) if where.type == "cuda" else LOCAL_CPU}
    steps_per_epoch = max(1, len(index) // batch_size)  # a set smaller than a batch still trains
    total = max(1, int(epochs * steps_per_epoch))
    if init:
        from .warmstart import load_onnx
        calibration = train_set.batch(np.arange(min(len(train_set), 4096)))["planes"]
        net = load_onnx(init, calibration)
        if grow:
            from .grow import grow as grow_net
            before = f"{net.config['blocks']}x{net.config['filters']}"
            net = grow_net(net, blocks, filters)
            data_record["grown_from"] = before
            print(f"grown from {before} to {blocks}x{filters}, computing the same function")
        net.train()
    else:
        net = ArborNet(blocks, filters, se)
    net.train_only(train_only)
    net.to(where)
    opt = torch.optim.AdamW(_param_groups(net, tower_lr_scale), lr=lr, weight_decay=weight_decay)
    checkpoint = out / "checkpoint.pt"
    state = {"step": 0, "history": [], "seconds": 0.0, "total": total}
    if checkpoint.exists():
        saved = torch.load(checkpoint, weights_only=False, map_location=where)
        if saved["config"] != net.config:
            raise SystemExit(f"{checkpoint} holds a {saved['config']} net, not {net.config}: use another --out")
        if saved.get("data", {}).get("tower_lr_scale", 1.0) != tower_lr_scale:
            raise SystemExit(f"{checkpoint} trained its tower at {saved['data'].get('tower_lr_scale', 1.0):g} of the "
                             f"rate, not {tower_lr_scale:g}: use another --out")
        if saved.get("data", {}).get("q_mse_weight", 0.0) != q_mse_weight:
            raise SystemExit(f"{checkpoint} weighed Q's squared error {saved['data'].get('q_mse_weight', 0.0):g}, not "
                             f"{q_mse_weight:g}: use another --out")
        if saved.get("data", {}).get("ending_repeats", 1) != ending_repeats:
            raise SystemExit(f"{checkpoint} trained each ending {saved['data'].get('ending_repeats', 1)} times an "
                             f"epoch, not {ending_repeats}: use another --out")
        if saved.get("data", {}).get("decided_keep", 1.0) != decided_keep:
            raise SystemExit(f"{checkpoint} trained on {saved['data'].get('decided_keep', 1.0):g} of the decided "
                             f"positions, not {decided_keep:g}: use another --out")
        if saved.get("data", {}).get("train_only", "all") != train_only:
            raise SystemExit(f"{checkpoint} trained {saved['data'].get('train_only', 'all')} of the net, not "
                             f"{train_only}: use another --out")
        before = saved.get("data", {}).get("rows_digest")
        if before and before != data_record["rows_digest"]:
            raise SystemExit(f"{checkpoint} was trained on other positions than these ({len(data)}): regenerate the "
                             "same data (same seeds and shard counts) or use another --out")
        net.load_state_dict(saved["model"])
        opt.load_state_dict(saved["optimizer"])
        state = {**saved["state"], "total": total}
        print(f"resuming at step {state['step']} of {total}")
    warmup = max(1, total // 50)
    running: dict[str, float] = {}
    bar = tqdm(total=total, initial=state["step"], desc="train", unit="step", smoothing=0.02)
    started = time.time() - state["seconds"]
    last = min(total, stop_at) if stop_at else total
    batches = _Batches(train_set, index, batch_size, steps_per_epoch, seed, result_weight, policy_temperature_cp,
                       half_planes=loader_workers > 0)
    if loader_workers:
        batches = iter(torch.utils.data.DataLoader(
            batches, batch_size=None, sampler=range(state["step"], last), num_workers=loader_workers,
            pin_memory=where.type == "cuda", prefetch_factor=4, persistent_workers=False))
    net.train()
    while state["step"] < last:
        step = state["step"]
        for group in opt.param_groups:
            group["lr"] = lr_at(step, total, lr, warmup) * group.get("scale", 1.0)
        batch = next(batches) if loader_workers else batches[step]
        result = losses(net, batch, where, precision, q_mse_weight)
        opt.zero_grad(set_to_none=True)
        result["loss"].backward()
        opt.step()
        for key, tensor in result.items():
            value = float(tensor.detach())
            running[key] = running[key] * 0.98 + value * 0.02 if key in running else value
        state["step"] = step + 1
        bar.update()
        if state["step"] % 50 == 0:
            bar.set_postfix(policy=f"{running['policy']:.3f}", value=f"{running['value']:.3f}",
                            top1=f"{running['top1']:.3f}")
        out_of_time = bool(deadline) and time.time() >= deadline
        if state["step"] % eval_every == 0 or state["step"] in (total, stop_at) or out_of_time:
            val = validate(net, val_set, 512, result_weight, policy_temperature_cp, device=where, precision=precision)
            state["seconds"] = time.time() - started
            state["history"].append({"step": state["step"], "epoch": state["step"] / steps_per_epoch,
                                     "lr": opt.param_groups[0]["lr"], "seconds": round(state["seconds"], 1),
                                     **{"train_" + k: v for k, v in running.items() if k != "loss"},
                                     **{"val_" + k: v for k, v in val.items() if k != "loss"}})
            tmp = checkpoint.with_name("checkpoint.tmp.pt")
            torch.save({"config": net.config, "model": _on_cpu(net.state_dict()),
                        "optimizer": _on_cpu(opt.state_dict()), "state": state, "data": data_record}, tmp)
            os.replace(tmp, checkpoint)
            (out / "history.json").write_text(json.dumps(state["history"], indent=1))
            plot(state["history"], out / "loss.png")
            bar.write(f"step {state['step']}: val policy {val['policy']:.4f} value {val['value']:.4f} "
                      f"top1 {val['top1']:.3f} q_mse {val['q_mse']:.4f}")
            if out_of_time and state["step"] < last:
                bar.write(f"out of time at step {state['step']} of {total}: checkpoint written, rerun to resume")
                break
    bar.close()
    return checkpoint
