"""A round's plan: what it makes and trains, and how long each step takes on this machine.

A plan is made once, from the command line and this machine's measured rates, kept in ``nets/rounds/round-NNN/``
and reused by every rerun whatever the command line says, so that a round resumed on another machine makes the same
data and trains the same net. ``round.py`` carries the plan out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from . import ladder

# The recipe's sizes (docs/training.md): what a round trains from scratch or fine-tunes, and Stockfish's depth.
LABEL_DEPTH = 6
BLOCKS, FILTERS = 4, 32
SCRATCH_EPOCHS, SCRATCH_LR = 2.0, 2e-3
FINETUNE_EPOCHS, FINETUNE_LR = 1.0, 1e-3   # docs/training.md, "Round 2": 1e-3 beat 3e-4 on a full round's data
BATCH = 256
# The matches after training: the gate (``gate_games``), Stockfish's verdict on a candidate that passed, and a net
# that shipped against the net it replaced and against the reference (each one game at a time, an engine a core).
REFERENCE_GAMES = 200           # each of a shipped net's two matches
YARDSTICK_GAMES = 200
YARDSTICK_GAME_SECONDS = 37.0   # arbor-r023 against Stockfish 2100: 200 games in about 2 hours
# Steps after the gate that measure a candidate or what shipped: they may run on in the next session, so --hours
# does not size them.
UNBUDGETED = ("stockfish", "replaced", "reference")

# This machine's rates (2 cores; nets/README.md "Training rounds"), for the plan.
POSITIONS_PER_SHARD = 5_000
CHILDREN_PER_PARENT = 28        # children kept per game position (round 14's shards: 1,245,461 of 45,000 positions)
ENDING_SHARE = 0.18             # endings' share of a round's positions (round 24's), which --ending-repeats adds to
DECIDED_SHARE = 0.72            # decided positions' share of self-play's (docs/training.md, round 28)
POSITIONS_SECONDS = 1.5         # a shard's positions, both cores (round 1: 400 shards in 8 min)
LABEL_SECONDS = 6.0             # a shard's labels at LABEL_DEPTH (round 1: 400 shards in 40 min)
LABEL_COST_PER_TWO_PLIES = 4.3  # Stockfish depth 8 against depth 6: 246 against 1,053 positions a second a core
TEACH_SECONDS = 1.6             # a shard's teacher labels, both cores (MeanGirl-8 + the 6x48's draws, round 11)
# Training steps a second, batch 256, by shape (blocks, filters): round 1's 4x32 SE ran 14,914 steps at 17-18 a
# second; round 8's 6x48 SE 3.9. Other shapes scale from the nearest measured one by blocks x filters².
TRAIN_STEPS_PER_SECOND = {(4, 32): 17.0, (6, 48): 3.9}
GAME_SECONDS = 16.0             # wall time per game at 10 s + 0.1 s, two games at once
PINNED_GAME_SECONDS = 28.5      # one game at a time, an engine a core (r017 against r007: 200 games in 95 min)
# bfloat16 at batches of 1024 (every round from 16 on): a step's data, heads and optimiser cost the same for every
# shape, its tower grows with blocks x filters². Fitted to round 19's 6x48 (16,977 steps in 5,375 s) and round 20's
# 8x64 (11,318 in 5,964); synthetic steps of 8x48, 6x64 and 10x64 lie within 10% of the line.
BFLOAT16_BATCH = 1024
BFLOAT16_STEP_SECONDS = (0.163, 1.11e-5)   # (fixed, per unit of blocks x filters²)
POLICY_ONLY_SPEEDUP = 1.42      # the policy head alone on a frozen 6x48: 4.5 steps a second at 1024, bf16, over 3.16
# Those rates are AMX tiles'. With AVX-512 BF16 alone round 21's 6x48 trained 4,510 steps in 2,917 s: 1.55 a second
# where the line gives 3.16.
WITHOUT_AMX_SPEED = 0.49


def shard_seconds(label_depth: int, teacher: bool = False) -> float:
    """Wall time of one shard's positions and labels (Stockfish's at ``label_depth``, or a teacher's) here."""
    if teacher:
        return POSITIONS_SECONDS + TEACH_SECONDS
    return POSITIONS_SECONDS + LABEL_SECONDS * LABEL_COST_PER_TWO_PLIES ** ((label_depth - LABEL_DEPTH) / 2)


def train_steps_per_second(shape: tuple[int, int]) -> float:
    """This machine's training rate for a net of ``shape`` (blocks, filters), float32 at batches of ``BATCH``."""
    if shape in TRAIN_STEPS_PER_SECOND:
        return TRAIN_STEPS_PER_SECOND[shape]
    cost = shape[0] * shape[1] ** 2
    known = min(TRAIN_STEPS_PER_SECOND, key=lambda k: abs(k[0] * k[1] ** 2 - cost))
    return TRAIN_STEPS_PER_SECOND[known] * known[0] * known[1] ** 2 / cost


def train_positions_per_second(shape: tuple[int, int], bfloat16: bool, train_only: str = "all",
                               amx: Optional[bool] = None) -> float:
    """Positions a second this machine trains a net of ``shape`` on: in bfloat16 at batches of 1024 (the fixed part
    of a step and the tower's, at about half the rate without AMX tiles; ``amx`` None asks this CPU), else in
    float32 at batches of ``BATCH``."""
    if bfloat16:
        if amx is None:
            from .train import cpu_has_amx
            amx = cpu_has_amx()
        fixed, per_cost = BFLOAT16_STEP_SECONDS
        rate = BFLOAT16_BATCH / (fixed + per_cost * shape[0] * shape[1] ** 2) * (1.0 if amx else WITHOUT_AMX_SPEED)
    else:
        rate = train_steps_per_second(shape) * BATCH
    return rate * (POLICY_ONLY_SPEEDUP if train_only == "policy" else 1.0)


@dataclass
class Plan:
    """A round's sizes. ``earlier_positions``: the earlier rounds' data it trains on besides its own (``--window``),
    ``earlier_rounds`` the rounds it comes from (each regenerated from its own plan on a machine without it);
    ``shape``: the net it trains; ``teacher``: the net that labels the positions ("" for Stockfish) and ``draws``
    the net giving a value-only teacher's draw share; ``precision``: the training's arithmetic (resolved);
    ``train_only``: "policy" trains the policy head alone on the starting net's frozen tower and value;
    ``tower_lr_scale``: the stem and tower's share of the heads' learning rate; ``children``: game positions a shard
    whose every legal child is labelled and trained on too (0: none); ``q_mse_weight``: the weight of Q's squared
    error in the training loss (``train.losses``); ``result_weight``: the game result's share of the value target
    (the rest the teacher's WDL); ``ending_repeats``: each ending trained that many times an epoch;
    ``decided_keep``: the share of the decided positions (``dataset.DECIDED_Q``) an epoch trains on;
    ``positions_round``: a round whose positions this one labels again (0: its own, seeded by its number);
    ``average_of``: earlier rounds whose nets this one averages instead of making data and training; ``first``: a
    round from scratch, whose net, gated against the heuristic, plays no reference match (the later rounds' shipped
    nets do)."""
    round: int
    shards: int
    epochs: float
    lr: float
    gate_games: int
    first: bool
    shape: tuple[int, int] = (BLOCKS, FILTERS)
    earlier_positions: int = 0
    label_depth: int = LABEL_DEPTH
    teacher: str = ""
    draws: str = ""
    value: str = ""            # a WDL net giving the value target in place of the teacher's ("": the teacher's)
    repeats: str = "drop"      # a position in several shards: "keep" every copy (rounds from 13 on), "drop" one
    batch_size: int = BATCH
    precision: str = "float32"
    train_only: str = "all"
    tower_lr_scale: float = 1.0
    children: int = 0
    q_mse_weight: float = 0.0
    result_weight: float = 0.0
    earlier_rounds: list[int] = field(default_factory=list)
    positions_round: int = 0
    ending_repeats: int = 1
    average_of: list[int] = field(default_factory=list)
    decided_keep: float = 1.0

    @property
    def seed(self) -> int:
        """What seeds the positions: a shard depends only on (seed, shard number), so a round that takes another's
        seed makes that round's positions again, shard for shard."""
        return self.positions_round or self.round

    def seconds(self) -> dict[str, float]:
        children = self.shards * self.children * CHILDREN_PER_PARENT
        positions = self.shards * POSITIONS_PER_SHARD + children + self.earlier_positions
        positions *= 1 + (self.ending_repeats - 1) * ENDING_SHARE - (1 - self.decided_keep) * DECIDED_SHARE
        rate = train_positions_per_second(self.shape, self.precision == "bfloat16", self.train_only)
        label_seconds = shard_seconds(self.label_depth, bool(self.teacher)) - POSITIONS_SECONDS
        return {"data": self.shards * shard_seconds(self.label_depth, bool(self.teacher))
                + children / POSITIONS_PER_SHARD * label_seconds,
                "train": self.epochs * positions / rate,
                "export": 120.0,
                "gate": self.gate_games * GAME_SECONDS,
                # at most twice: the shipped net plays the same games beside it where it has not on this CPU
                "stockfish": 0.0 if self.first else 2 * YARDSTICK_GAMES * YARDSTICK_GAME_SECONDS,
                "replaced": 0.0 if self.first else REFERENCE_GAMES * PINNED_GAME_SECONDS,
                "reference": 0.0 if self.first else REFERENCE_GAMES * PINNED_GAME_SECONDS}

    def labeller(self) -> str:
        """Who labels the round's positions, and whose positions they are."""
        labeller = f"labels at depth {self.label_depth}"
        if self.teacher:
            labeller = f"labels by {Path(self.teacher).name}"
            labeller += f", value by {Path(self.value).name}" if self.value else ""
        if self.positions_round:
            labeller += f" of round {self.positions_round}'s positions"
        return labeller

    def summary(self, start: str) -> str:
        """One line, printed before anything runs: the data, the training from the net ``start`` and the time each
        step is planned to take."""
        seconds = self.seconds()
        if self.average_of:
            rounds = " and ".join(map(str, self.average_of))
            return (f"no positions and no training: the average of the nets of rounds {rounds} (a {self.shape[0]}x"
                    f"{self.shape[1]} like {start}); planned export {seconds['export'] / 60:.0f} min, "
                    f"gate {seconds['gate'] / 60:.0f} min, then {self._after_gate(seconds)}")
        own = (f"{self.shards} shards (~{self.shards * POSITIONS_PER_SHARD:,} positions, seed {self.seed}, "
               f"{self.labeller()})" if self.shards else "no positions of its own")
        return (f"{own}, {self.epochs:g} epochs of a {self.shape[0]}x{self.shape[1]} at lr {self.lr:g} "
                f"(batches of {self.batch_size}, {self.precision}"
                + (", the policy head alone" if self.train_only == "policy" else "")
                + (f", the tower at {self.tower_lr_scale:g} of the rate" if self.tower_lr_scale != 1.0 else "")
                + (f", the children of {self.children} positions a shard" if self.children else "")
                + (f", Q's squared error at weight {self.q_mse_weight:g}" if self.q_mse_weight else "")
                + (f", the game result at {self.result_weight:g} of the value target" if self.result_weight else "")
                + (f", each ending {self.ending_repeats} times" if self.ending_repeats > 1 else "")
                + (f", {self.decided_keep:g} of the decided positions" if self.decided_keep < 1.0 else "")
                + f") from {start}, with {self.earlier_positions:,} earlier positions"
                + (f" (rounds {', '.join(map(str, self.earlier_rounds))})" if self.earlier_rounds else "")
                + "; planned " + ", ".join(f"{k} {v / 60:.0f} min" for k, v in seconds.items() if k not in UNBUDGETED)
                + f" = {self.budgeted_seconds() / 3600:.2f} h"
                + (f", then {self._after_gate(seconds)}" if seconds["reference"] else ""))

    @staticmethod
    def _after_gate(seconds: dict[str, float]) -> str:
        return (f"Stockfish {ladder.STOCKFISH_ELO} {seconds['stockfish'] / 60:.0f} min, the match against the net it "
                f"replaces {seconds['replaced'] / 60:.0f} min and the reference match "
                f"{seconds['reference'] / 60:.0f} min")

    def budgeted_seconds(self) -> float:
        """What ``--hours`` sizes: making the net and gating it. Stockfish's verdict on a candidate that passed, and
        the matches after a ship, may run on in the next session without holding up the round's data."""
        return sum(seconds for step, seconds in self.seconds().items() if step not in UNBUDGETED)

    def save(self, path: Path) -> None:
        import json
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**self.__dict__, "shape": list(self.shape)}, indent=1) + "\n")

    @classmethod
    def load(cls, path: Path) -> "Plan":
        import json
        fields = json.loads(path.read_text())
        if "heuristic_games" in fields:   # plans made before round 18 named the first round by its missing match
            fields["first"] = not fields.pop("heuristic_games")
        return cls(**{**fields, "shape": tuple(fields["shape"]),
                      "earlier_rounds": list(fields.get("earlier_rounds", [])),
                      "average_of": list(fields.get("average_of", []))})


def make_plan(number: int, hours: float, first: bool, shards: int = 0, gate_games: int = 200,
              epochs: Optional[float] = None, lr: Optional[float] = None, shape: tuple[int, int] = (BLOCKS, FILTERS),
              earlier_positions: int = 0, label_depth: int = LABEL_DEPTH, teacher: str = "", draws: str = "",
              batch_size: int = 0, precision: str = "float32", value: str = "", train_only: str = "all",
              tower_lr_scale: float = 1.0, children: int = 0, q_mse_weight: float = 0.0,
              result_weight: float = 0.0, earlier_rounds: Optional[list[int]] = None,
              new_data: bool = True, positions_round: int = 0, ending_repeats: int = 1,
              average_of: Optional[list[int]] = None, decided_keep: float = 1.0) -> Plan:
    """The largest data set whose round (``Plan.budgeted_seconds``) fits ``hours`` at this machine's rates (or
    ``shards`` if given), training a net of ``shape`` on it and on ``earlier_positions`` of earlier rounds; ``epochs``
    and ``lr`` replace the recipe's (from scratch or fine-tuning) when given; ``label_depth``: Stockfish's depth for
    this round's labels; ``teacher``: a net labels them instead; ``train_only``: "policy" trains the policy head alone;
    ``children``: game positions a shard whose children join the data; ``earlier_rounds``: the rounds
    ``earlier_positions`` come from; ``new_data`` False: no positions of its own (0 shards), the earlier rounds' data
    alone; ``positions_round``: label that round's positions (its seed) instead of new ones; ``average_of``: no data and
    no training, the average of those earlier rounds' nets; ``decided_keep``: the share of decided positions trained."""
    if ending_repeats < 1:   # refused before the plan is kept: a kept plan is reused whatever the command says
        raise SystemExit(f"round {number}: each ending is trained at least once, not {ending_repeats} times")
    if not 0.0 < decided_keep <= 1.0:
        raise SystemExit(f"round {number}: the share of decided positions kept is in (0, 1], not {decided_keep:g}")
    default_epochs, default_lr = (SCRATCH_EPOCHS, SCRATCH_LR) if first else (FINETUNE_EPOCHS, FINETUNE_LR)
    epochs = default_epochs if epochs is None else epochs
    lr = default_lr if lr is None else lr
    extra = dict(teacher=teacher, draws=draws, value=value, batch_size=batch_size or BATCH, precision=precision,
                 repeats="keep", train_only=train_only, tower_lr_scale=tower_lr_scale, children=children,
                 q_mse_weight=q_mse_weight, result_weight=result_weight,
                 earlier_rounds=list(earlier_rounds or []), positions_round=positions_round,
                 ending_repeats=ending_repeats, decided_keep=decided_keep)
    if average_of:
        if len(set(average_of)) < 2 or number in average_of:
            raise SystemExit(f"round {number}: an average takes the nets of at least two earlier rounds, not "
                             f"{average_of}")
        return Plan(number, 0, 0.0, lr, gate_games, first, shape, 0, label_depth, batch_size=batch_size or BATCH,
                    precision=precision, repeats="keep", average_of=sorted(set(average_of)))
    if not new_data:
        if not earlier_positions:
            raise SystemExit(f"round {number} makes no data of its own and its window holds no earlier round's data "
                             "to train on: widen --window")
        shards = 0
    elif not shards:
        fixed = Plan(number, 0, epochs, lr, gate_games, first, shape, earlier_positions, label_depth,
                     **extra).budgeted_seconds()
        one = Plan(number, 1, epochs, lr, gate_games, first, shape, earlier_positions, label_depth,
                   **extra).budgeted_seconds()
        per_shard = one - fixed   # Plan.seconds is linear in the shards
        shards = max(10, int((hours * 3600 - fixed) / per_shard))
    return Plan(number, shards, epochs, lr, gate_games, first, shape, earlier_positions, label_depth, **extra)
