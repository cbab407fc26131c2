"""The pipeline's steps as functions: what ``python -m nets.training STEP`` runs after parsing its arguments, and
what a round (:mod:`nets.training.round`) runs one after another."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from .data import shards
from .parallel import run_tasks


def _run_shards(fn, tasks: list[tuple], workers: int, ray: Optional[str], out: Path, desc: str) -> None:
    total = 0
    for summary in run_tasks(fn, tasks, workers=workers, ray_address=ray, desc=desc):
        total += summary.get("positions", 0)
    print(f"{len(shards(out))} shards in {out} ({total} new positions)")


def make_positions(out: Path, *, shards_count: int, seed: int, games_per_shard: int, nodes: int, multipv: int,
                   keep: float, random_plies: tuple[int, int], random_children: float,
                   stockfish: Optional[str] = None, workers: int = 0, ray: Optional[str] = None) -> None:
    """Stockfish self-play positions, ``shards_count`` shards in ``out`` (shards already there are kept)."""
    from .positions import make_shard
    tasks = [(str(out), i, seed, games_per_shard, nodes, multipv, keep, stockfish, random_plies, random_children)
             for i in range(shards_count)]
    _run_shards(make_shard, tasks, workers, ray, out, "positions")


def make_own_play(out: Path, *, net: Path, shards_count: int, seed: int, games_per_shard: int, keep: float,
                  workers: int = 0, ray: Optional[str] = None) -> None:
    """Positions from ``net``'s own play, ``shards_count`` shards in ``out`` (shards already there are kept)."""
    from .own_play import make_shard
    tasks = [(str(out), i, seed, str(net), games_per_shard, keep) for i in range(shards_count)]
    _run_shards(make_shard, tasks, workers, ray, out, "own play")


def make_children(positions: Path, out: Path, *, parents: int, seed: int, workers: int = 0,
                  ray: Optional[str] = None) -> None:
    """Every legal child of ``parents`` game positions of each positions shard, into ``out`` (shards already there
    are kept)."""
    from .children import make_children as children_shard
    tasks = [(str(p), str(out), parents, seed) for p in shards(positions)]
    _run_shards(children_shard, tasks, workers, ray, out, "children")


def make_labels(positions: Path, out: Path, *, depth: int, multipv: int, stockfish: Optional[str] = None,
                workers: int = 0, ray: Optional[str] = None) -> None:
    """Stockfish labels for every positions shard, into ``out`` (shards already labelled are kept)."""
    from .label import label_shard
    tasks = [(str(p), str(out), depth, multipv, stockfish) for p in shards(positions)]
    _run_shards(label_shard, tasks, workers, ray, out, "labels")


def make_teacher_labels(positions: Path, out: Path, *, net: Path, draws: Optional[Path] = None, workers: int = 0,
                        ray: Optional[str] = None, value: Optional[Path] = None) -> None:
    """A teacher network's labels for every positions shard, into ``out`` (shards already labelled are kept);
    ``value``: a WDL net giving the value target instead of the teacher."""
    from .teacher import TOP_MOVES, TeacherError, teach_shard, value_only
    if value_only(net) and draws is None and value is None:
        raise TeacherError(f"{net} has a value head only: give a net with a WDL head for the draw share (--draws)")
    tasks = [(str(p), str(out), str(net), str(draws or ""), TOP_MOVES, str(value or "")) for p in shards(positions)]
    _run_shards(teach_shard, tasks, workers, ray, out, "teacher")


def export_net(checkpoint: Path, out: Path, positions: list[Path], labels: list[Path], int8: bool) -> None:
    """The checkpoint as ONNX, checked on the training run's own validation positions; with ``int8`` also an 8-bit
    copy, kept only when it keeps the float net's accuracy."""
    from .dataset import load, split
    from .export import export, export_int8, load_net
    net, saved = load_net(checkpoint)
    record = saved["data"]  # the training run's own split: its validation positions were never trained on
    data, _ = load(positions, labels, record["limit_shards"], record.get("repeats", "drop"))
    _, val = split(data, record["val_share"], record["seed"])
    check = val.batch(range(min(256, len(val))))["planes"]
    diff = export(net, out, check)
    print(f"wrote {out}: {net.config}, onnxruntime vs PyTorch max |diff| {diff:.2e}")
    if int8:
        copy = out.with_name(out.stem + "-int8.onnx")
        kept, scores = export_int8(out, copy, val)
        verdict = f"kept {copy}" if kept else "dropped (below the accuracy bar)"
        print(f"int8: same best move {scores['top1']:.1%}, mean |dQ| {scores['dq']:.4f}: {verdict}")
