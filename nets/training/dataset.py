"""Labelled positions in memory, as training batches of the network's own input planes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from engine.evaluators.lc0_planes import rows_to_planes

from .data import NO_MOVE, POLICY_SIZE, load_shard, shards

# Positions with at most this many pieces, kings included, are endings: the games against Stockfish are decided there,
# and self-play keeps half as many of them as those games reach (docs/training.md, "What the net knows of endings").
ENDING_PIECES = 10
# A position whose label says one side wins or loses with an expected score beyond 0.95 (|W - L| >= 0.9) is decided.
# They are 72% of a round's Stockfish self-play and 44% of the positions of Arbor's games against Stockfish, where
# the balanced ones (|W - L| < 0.3) are 19% and 46% (docs/training.md, "Round 28").
DECIDED_Q = 0.9


@dataclass
class Dataset:
    rows: np.ndarray        # uint64 [N, 82]
    moves: np.ndarray       # uint16 [N, K]: policy indices of Stockfish's K best moves, best first (NO_MOVE pads)
    scores: np.ndarray      # int32 [N, K]: their centipawn scores for the side to move
    wdl: np.ndarray         # float32 [N, 3]
    result: np.ndarray      # int8 [N]: game result for the side to move
    legal: np.ndarray       # uint8 [N, 233]: packed legal-move mask
    game: np.ndarray        # int64 [N]: the game a position comes from (shard * 2**20 + game in shard)
    probs: Optional[np.ndarray] = None   # float32 [N, K]: a teacher's probabilities of ``moves`` (teacher.py); -1
                                         # where Stockfish labelled the position (its target comes from ``scores``)

    def __post_init__(self):
        if self.probs is None:   # Stockfish's labels alone
            self.probs = np.full(self.moves.shape, -1.0, dtype=np.float32)

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def best(self) -> np.ndarray:
        """int64 [N]: the policy index of Stockfish's best move."""
        return self.moves[:, 0].astype(np.int64)

    @property
    def pieces(self) -> np.ndarray:
        """int [N]: the pieces on the board, kings included (the encoder row's first two bitboards: ours, theirs)."""
        occupied = self.rows[:, 0] | self.rows[:, 1]
        return np.unpackbits(occupied.view(np.uint8).reshape(-1, 8), axis=1).sum(axis=1)

    def subset(self, index: np.ndarray) -> "Dataset":
        return Dataset(self.rows[index], self.moves[index], self.scores[index], self.wdl[index], self.result[index],
                       self.legal[index], self.game[index], self.probs[index])

    def batch(self, index: np.ndarray, result_weight: float = 0.0,
              policy_temperature_cp: float = 0.0) -> dict[str, np.ndarray]:
        """Planes [B, 112, 8, 8], best-move index, WDL target (blended with the game result by
        ``result_weight``) and the legal mask [B, 1858] of the positions at ``index``. With
        ``policy_temperature_cp`` > 0 also a soft policy target [B, 1858]: softmax(score / temperature) over
        the labelled moves (one-hot where a position has one); where a teacher labelled the position, its
        probabilities of the labelled moves, renormalised."""
        wdl = self.wdl[index]
        if result_weight:
            outcome = np.eye(3, dtype=np.float32)[1 - self.result[index].astype(np.int64)]   # +1 -> W, -1 -> L
            wdl = (1.0 - result_weight) * wdl + result_weight * outcome
        legal = np.unpackbits(self.legal[index], axis=1, count=POLICY_SIZE).astype(bool)
        out = {"planes": rows_to_planes(self.rows[index]), "best": self.moves[index, 0].astype(np.int64), "wdl": wdl,
               "legal": legal}
        if policy_temperature_cp > 0:
            moves, scores = self.moves[index], self.scores[index].astype(np.float64)
            labelled = moves != NO_MOVE
            weights = np.where(labelled, np.exp(np.minimum(0.0, scores - scores[:, :1]) / policy_temperature_cp), 0.0)
            probs = self.probs[index].astype(np.float64)
            taught = probs[:, 0] >= 0
            weights[taught] = np.where(labelled[taught], probs[taught], 0.0)
            weights /= weights.sum(axis=1, keepdims=True)
            target = np.zeros((len(moves), POLICY_SIZE), dtype=np.float32)
            row = np.broadcast_to(np.arange(len(moves))[:, None], moves.shape)
            target[row[labelled], moves[labelled]] = weights[labelled]
            out["policy"] = target
        return out


def _pad(array: np.ndarray, width: int, fill: int) -> np.ndarray:
    if array.shape[1] == width:
        return array
    return np.concatenate([array, np.full((len(array), width - array.shape[1]), fill, dtype=array.dtype)], axis=1)


REPEATS = ("drop", "keep")


def load(positions: Path | Sequence[Path], labels: Path | Sequence[Path],
         limit_shards: int = 0, repeats: str = "drop") -> tuple[Dataset, dict]:
    """All labelled shards but positions whose best move is missing. ``repeats``: what becomes of a position
    (identical encoder rows) found in several shards: "drop" keeps its first copy, "keep" keeps them all, as lc0
    keeps every game's positions, so that positions most games pass through (the start position, the main
    openings) weigh as often as they are played; a net that saw the start position once in three million
    positions valued it at -1. ``positions`` and ``labels`` are folders, or equally long lists of folders read
    pairwise (data sets made by separate runs; a children folder's positions count as their parents' games).
    Returns the dataset and a summary: ``duplicates`` (repeated copies, dropped or kept) and ``label_depths``
    (positions per Stockfish depth, before dropping; "?" for shards that do not record it; a teacher's labels count
    under "teacher <file name>")."""
    if repeats not in REPEATS:
        raise ValueError(f"repeats must be one of {REPEATS}, not {repeats!r}")
    position_folders = [positions] if isinstance(positions, (str, Path)) else list(positions)
    label_folders = [labels] if isinstance(labels, (str, Path)) else list(labels)
    if len(position_folders) != len(label_folders):
        raise ValueError(f"{len(position_folders)} positions folders but {len(label_folders)} labels folders")
    parts = []
    depths: dict[str, int] = {}
    label_files = [(Path(pos_dir), lab) for pos_dir, lab_dir in zip(position_folders, label_folders)
                   for lab in shards(lab_dir)]
    if limit_shards:
        label_files = label_files[:limit_shards]
    origins: dict[tuple[Path, str], int] = {}
    for pos_dir, lab_path in label_files:
        pos = load_shard(pos_dir / lab_path.name)
        lab = load_shard(lab_path)
        # Children (children.py) name the positions folder of their parent games: one game, one number.
        origin = (pos_dir / str(pos["source"])) if "source" in pos else pos_dir
        number = origins.setdefault((origin.resolve(), lab_path.name), len(origins))
        game = (number << 20) + pos["game"].astype(np.int64)
        if "teacher" in lab:
            depth = f"teacher {lab['teacher']}"
        else:
            depth = str(int(lab["depth"])) if "depth" in lab else "?"
        depths[depth] = depths.get(depth, 0) + len(game)
        probs = lab["probs"] if "probs" in lab else np.full(lab["moves"].shape, -1.0, dtype=np.float32)
        parts.append((pos["rows"], lab["moves"], lab["scores"], lab["wdl"], pos["result"], lab["legal"], game,
                      probs))
    if not parts:
        raise FileNotFoundError(f"no labelled shards in {labels}")
    width = max(part[1].shape[1] for part in parts)   # shards labelled with different MultiPV: pad to the widest
    parts = [(rows, _pad(moves, width, NO_MOVE), _pad(scores, width, 0), *rest, _pad(probs, width, 0))
             for rows, moves, scores, *rest, probs in parts]
    data = Dataset(*(np.concatenate(cols) for cols in zip(*parts)))
    keep = data.best != NO_MOVE
    _, first = np.unique(_row_keys(data.rows), return_index=True)
    unique = np.zeros(len(data), dtype=bool)
    unique[first] = True
    duplicates = int((~unique & keep).sum())
    if repeats == "drop":
        keep &= unique
    return data.subset(np.flatnonzero(keep)), {"duplicates": duplicates, "label_depths": depths}


def epoch_index(data: Dataset, ending_repeats: int = 1, decided_keep: float = 1.0, seed: int = 0) -> np.ndarray:
    """The positions of ``data`` that one epoch trains on: each ending (at most ``ENDING_PIECES`` pieces)
    ``ending_repeats`` times, the others once, weighing the endings nearer their share of real games; of the decided
    positions (``DECIDED_Q``) a ``decided_keep`` share drawn once by ``seed``, weighing the balanced ones nearer
    theirs. An index, not a copy: the data set is gigabytes."""
    if ending_repeats < 1:
        raise ValueError(f"an ending is trained at least once, not {ending_repeats} times")
    if not 0.0 < decided_keep <= 1.0:
        raise ValueError(f"the share of decided positions kept is in (0, 1], not {decided_keep}")
    times = np.where(data.pieces <= ENDING_PIECES, ending_repeats, 1) if ending_repeats > 1 else np.ones(len(data), int)
    if decided_keep < 1.0:
        decided = np.abs(data.wdl[:, 0] - data.wdl[:, 2]) >= DECIDED_Q
        times = np.where(decided & (np.random.default_rng(seed).random(len(data)) >= decided_keep), 0, times)
    return np.repeat(np.arange(len(data)), times)


def _row_keys(rows: np.ndarray) -> np.ndarray:
    """One comparable value per encoder row (its bytes), for np.unique."""
    return np.ascontiguousarray(rows).view(f"V{rows.shape[1] * rows.itemsize}").ravel()


def _row_hashes(rows: np.ndarray) -> np.ndarray:
    """uint64 [N]: a random linear hash of each encoder row (two distinct rows collide with odds of about 2**-64),
    50 times cheaper to look up among millions than the rows' bytes."""
    mix = np.random.default_rng(0).integers(1, 2**63, size=rows.shape[1], dtype=np.uint64) | np.uint64(1)
    return rows.astype(np.uint64, copy=False) @ mix


def split(data: Dataset, val_share: float, seed: int) -> tuple[Dataset, Dataset]:
    """A deterministic train/validation split by whole games, so that no game has positions on both sides, and no
    position either: validation drops its copies of positions that the training side holds (``repeats="keep"``)."""
    games = np.unique(data.game)
    val_games = np.random.default_rng(seed).choice(games, size=max(1, int(len(games) * val_share)), replace=False)
    is_val = np.isin(data.game, val_games)
    hashes = _row_hashes(data.rows)
    trained = np.sort(hashes[~is_val])
    val_index = np.flatnonzero(is_val)
    found = np.minimum(np.searchsorted(trained, hashes[val_index]), max(0, len(trained) - 1))
    seen = trained[found] == hashes[val_index] if len(trained) else np.zeros(len(val_index), dtype=bool)
    return data.subset(np.flatnonzero(~is_val)), data.subset(val_index[~seen])
