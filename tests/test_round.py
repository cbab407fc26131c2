"""Training rounds (nets/training/round.py): the warm start from a shipped ONNX net, the ladder, the gate's
resumable chunks and its verdict, the plan, and the raw Stockfish pipe that labels a round's data.

Needs torch (the ``[train]`` extra) for the warm start; Stockfish only for the comparison with the real one.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import chess
import chess.engine
import numpy as np
import pytest

from engine.evaluators import lc0_planes
from test_training import random_games

ROOT = Path(__file__).resolve().parent.parent
FAKE_SF = ROOT / "tests" / "fake_engines" / "fake_stockfish.py"


def planes_of(positions) -> np.ndarray:
    return lc0_planes.rows_to_planes([lc0_planes.gather(b, h) for b, h in positions])


def trained_like_net(torch, blocks: int = 2, filters: int = 8):
    """A small net whose batch norms hold statistics unlike a fresh net's, as after training."""
    from nets.training.model import ArborNet
    torch.manual_seed(3)
    net = ArborNet(blocks, filters, se=True)
    for m in net.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-1, 1)
            m.running_var.uniform_(0.3, 3)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-1, 1)
    return net.eval()


# -- warm start -------------------------------------------------------------------------------------------

def test_warm_start_reads_an_exported_net_back_with_the_onnx_outputs(tmp_path):
    torch = pytest.importorskip("torch")
    from nets.training.export import export, onnx_outputs
    from nets.training.model import Exported
    from nets.training.warmstart import load_onnx
    planes = planes_of(random_games(300, seed=5))
    export(trained_like_net(torch), tmp_path / "gen1.onnx", planes[:32])
    back = load_onnx(tmp_path / "gen1.onnx", planes[:200])
    assert back.config["blocks"] == 2 and back.config["filters"] == 8 and back.config["se"]
    unseen = planes[200:]
    policy, wdl = onnx_outputs(tmp_path / "gen1.onnx", unseen)
    with torch.no_grad():
        tp, tw = Exported(back)(torch.from_numpy(unseen))
    np.testing.assert_allclose(tp.numpy(), policy, atol=1e-4)
    np.testing.assert_allclose(tw.numpy(), wdl, atol=1e-5)
    # In training mode the batch norms use the batch's own statistics: still close to the shipped net, so
    # fine-tuning starts from its play (a net re-initialised at any layer would be far off).
    back.train()
    with torch.no_grad():
        tp, tw = Exported(back)(torch.from_numpy(planes[:200]))
    assert np.abs(tw.numpy() - onnx_outputs(tmp_path / "gen1.onnx", planes[:200])[1]).max() < 0.02


def test_warm_start_refuses_a_net_it_cannot_read_back(tmp_path):
    pytest.importorskip("torch")
    from nets.training.warmstart import WarmStartError, load_onnx
    sys.path.insert(0, str(ROOT / "nets"))
    from make_random_net import build   # an lc0-shaped net not made by this pipeline
    import onnx
    onnx.save(build(blocks=1, filters=8), tmp_path / "lc0.onnx")
    with pytest.raises(WarmStartError, match="not a net exported by nets.training"):
        load_onnx(tmp_path / "lc0.onnx", planes_of(random_games(4, seed=1)))


def test_training_with_init_starts_from_the_shipped_net(tmp_path):
    """``train --init``: the run takes the shipped net's architecture (over the arguments) and records where it
    started, which the provenance and the ladder show."""
    torch = pytest.importorskip("torch")
    from nets.training.export import export
    from nets.training.train import train
    from test_training import synthetic_shards
    synthetic_shards(tmp_path, 120, seed=4)
    planes = planes_of(random_games(64, seed=2))
    export(trained_like_net(torch, blocks=1, filters=8), tmp_path / "shipped.onnx", planes)
    common = dict(blocks=3, filters=16, se=False, epochs=0.01, batch_size=16, lr=1e-9, weight_decay=0.0,
                  val_share=0.2, result_weight=0.0, eval_every=1000, seed=1, threads=1)
    checkpoint = train(tmp_path / "pos", tmp_path / "lab", tmp_path / "warm", init=tmp_path / "shipped.onnx",
                       **common)
    saved = torch.load(checkpoint, weights_only=False)
    assert saved["config"]["blocks"] == 1 and saved["config"]["filters"] == 8   # the shipped architecture
    assert saved["data"]["init"] == "shipped.onnx"


# -- the ladder and shipping ------------------------------------------------------------------------------

@pytest.fixture
def default(monkeypatch, tmp_path) -> Path:
    """An empty nets/default/ for ``ship`` and the round's ladder."""
    from nets.training import round as rounds, ship
    folder = tmp_path / "default"
    folder.mkdir()
    monkeypatch.setattr(ship, "DEFAULT_DIR", folder)
    monkeypatch.setattr(rounds, "LADDER", folder / "ladder.json")
    monkeypatch.setattr(rounds, "ROUNDS_DIR", tmp_path / "rounds")
    return folder


def _fake_run(torch, run: Path, init=None) -> None:
    run.mkdir(parents=True)
    torch.save({"config": {"blocks": 4, "filters": 32, "se": True, "value_channels": 32, "value_hidden": 128},
                "data": {"positions": 2000, "duplicates": 0, "train": 1900, "validation": 100,
                         "label_depths": {"6": 2000}, "policy_temperature_cp": 50.0, "init": init, "lr": 1e-3}},
               run / "checkpoint.pt")
    (run / "history.json").write_text('[{"step": 80, "epoch": 1.0, "seconds": 720, "val_policy": 2.1, '
                                      '"val_top1": 0.35, "val_value": 0.4, "val_q_mse": 0.13}]')


def test_a_round_ships_its_net_and_writes_its_ladder_row_and_a_failed_round_only_its_row(default, tmp_path):
    torch = pytest.importorskip("torch")
    from nets.training import ladder, ship
    _fake_run(torch, tmp_path / "r1")
    (tmp_path / "r1" / "arbor-r001.onnx").write_bytes(b"gen 1")
    row1 = ladder.Row(round=1, seed=1, net="arbor-r001.onnx", positions_added=2000, positions_total=2000, init=None,
                      steps=80, train_hours=0.2, gate="120-40-40, Elo +141.9 +/- 45.0 (200 games) vs heuristic",
                      gate_passed=True, heuristic="120-40-40, Elo +141.9 +/- 45.0 (200 games)")
    ship.ship(tmp_path / "r1" / "arbor-r001.onnx", tmp_path / "r1", row=row1)
    assert (default / "arbor-r001.onnx").read_bytes() == b"gen 1"
    text = (default / "README.md").read_text()
    assert "## Ladder" in text and "| 1 | 1 | `arbor-r001.onnx` | 2,000 / 2,000 | scratch | 80 steps, 0.20 h |" in text
    assert "Round 1** (seed 1)" in text

    _fake_run(torch, tmp_path / "r2", init="arbor-r001.onnx")
    (tmp_path / "r2" / "arbor-r002.onnx").write_bytes(b"gen 2")
    row2 = ladder.Row(round=2, seed=2, net="arbor-r002.onnx", positions_added=1500, positions_total=3500, init="arbor-r001.onnx",
                      steps=60, train_hours=0.1, gate="50-60-90, Elo -70.4 +/- 40.0 (200 games) vs shipped",
                      gate_passed=False)
    ship.ship(tmp_path / "r2" / "arbor-r002.onnx", tmp_path / "r2", row=row2)
    assert sorted(p.name for p in default.glob("*.onnx")) == ["arbor-r001.onnx"]   # the shipped net stays
    text = (default / "README.md").read_text()
    assert "Round 1** (seed 1)" in text                                             # and so does its provenance
    assert "| 2 | 2 | `arbor-r002.onnx`, not shipped | 1,500 / 3,500 | `arbor-r001.onnx` |" in text
    assert not (default / "base").exists()              # a net has shipped: the next round starts from it
    assert [r.round for r in ladder.read(default / "ladder.json")] == [1, 2]
    assert ladder.last_shipped(ladder.read(default / "ladder.json")).round == 1


def test_an_int8_net_ships_with_its_float_original_for_the_next_warm_start(default, tmp_path):
    torch = pytest.importorskip("torch")
    from nets.training import ladder, round as rounds, ship
    (default / "old.onnx").write_bytes(b"old")
    _fake_run(torch, tmp_path / "r3")
    (tmp_path / "r3" / "arbor-r003.onnx").write_bytes(b"float")
    (tmp_path / "r3" / "arbor-r003-int8.onnx").write_bytes(b"int8")
    row = ladder.Row(round=3, seed=3, net="arbor-r003-int8.onnx", positions_added=1, positions_total=1, init=None,
                     steps=1, train_hours=0.0, gate="-", gate_passed=True)
    ship.ship(tmp_path / "r3" / "arbor-r003-int8.onnx", tmp_path / "r3", float_net=tmp_path / "r3" / "arbor-r003.onnx",
              row=row)
    assert sorted(p.name for p in default.glob("*.onnx")) == ["arbor-r003-int8.onnx"]
    assert rounds.shipped_net(default) == default / "float" / "arbor-r003.onnx"


# -- the gate ---------------------------------------------------------------------------------------------

def test_the_gate_plays_in_chunks_resumes_and_stops_when_the_sprt_decides(monkeypatch, tmp_path):
    from nets.training import gate, round as rounds
    played = []

    def fake_play(candidate, options, name, *, games, tc, concurrency, openings, pgn, seed=None, engines=None):
        played.append(seed)
        with open(pgn, "w") as f:
            for g in range(games):   # the candidate wins 3 of 4
                white = gate.CANDIDATE if g % 2 == 0 else name
                black = name if g % 2 == 0 else gate.CANDIDATE
                won = g % 4 != 3
                result = ("1-0" if white == gate.CANDIDATE else "0-1") if won else ("0-1" if white == gate.CANDIDATE
                                                                                   else "1-0")
                f.write(f'[White "{white}"]\n[Black "{black}"]\n[Result "{result}"]\n\n1. e4 {result}\n\n')
        return gate.tally(pgn)

    monkeypatch.setattr(gate, "play", fake_play)
    folder = tmp_path / "gate"
    wdl = rounds.match(Path("cand.onnx"), ["Evaluator=heuristic"], folder, games=200, min_games=40, seed=7,
                       concurrency=2, sprt=rounds.GATE_SPRT)
    assert sum(wdl) < 200 and sum(wdl) % rounds.GATE_CHUNK == 0 and sum(wdl) >= 40   # the SPRT stopped it
    assert rounds.passed(wdl, rounds.GATE_SPRT)
    assert played == [7000 + i for i in range(len(played))]   # each chunk its own seed
    # an interrupted gate: the chunks on disk count, only the missing ones are played
    (folder / "chunk-001.pgn").unlink()
    played.clear()
    assert rounds.match(Path("cand.onnx"), ["Evaluator=heuristic"], folder, games=200, min_games=40, seed=7,
                        concurrency=2, sprt=rounds.GATE_SPRT) == wdl
    assert played == [7001]


def test_a_gate_cut_by_the_session_s_end_resumes_from_its_kept_chunks_on_another_machine(monkeypatch, tmp_path):
    """With ``kept`` each chunk played is copied to nets/rounds/...; no chunk starts that would end past the deadline
    (None), and a rerun on a machine without the run folder plays only the chunks that were never kept."""
    import time
    from nets.training import gate, round as rounds
    played = []

    def fake_play(candidate, options, name, *, games, tc, concurrency, openings, pgn, seed=None, engines=None):
        played.append(seed)
        with open(pgn, "w") as f:
            for g in range(games):   # all draws: the SPRT never decides
                f.write(f'[White "{gate.CANDIDATE}"]\n[Black "{name}"]\n[Result "1/2-1/2"]\n\n1. e4 1/2-1/2\n\n')
        return gate.tally(pgn)

    monkeypatch.setattr(gate, "play", fake_play)
    kept = tmp_path / "rounds" / "round-012" / "gate"
    games = 3 * rounds.GATE_CHUNK
    args = dict(games=games, min_games=games, seed=12, concurrency=2, sprt=rounds.GATE_SPRT, kept=kept)
    assert rounds.match(Path("c.onnx"), ["WeightsFile=x"], tmp_path / "one" / "gate", deadline=time.time() - 1,
                        **args) is None
    assert played == [] and not list(kept.glob("*.pgn"))
    # A minute left: a chunk takes minutes, so it does not start (the session would end in the middle of it).
    assert rounds.match(Path("c.onnx"), ["WeightsFile=x"], tmp_path / "one" / "gate", deadline=time.time() + 60,
                        **args) is None
    # Seven minutes left: enough for a chunk two games at a time, not for a pinned one (one game at a time).
    assert rounds.match(Path("c.onnx"), ["WeightsFile=x"], tmp_path / "one" / "gate", deadline=time.time() + 420,
                        pinned=True, **args) is None
    assert played == [] and not list(kept.glob("*.pgn"))
    real_time = time.time
    monkeypatch.setattr(rounds.time, "time", lambda: real_time() + 3600 * len(played))   # an hour a chunk
    assert rounds.match(Path("c.onnx"), ["WeightsFile=x"], tmp_path / "one" / "gate", deadline=real_time() + 1800,
                        **args) is None
    assert played == [12000] and sorted(p.name for p in kept.glob("*.pgn")) == ["chunk-000.pgn"]
    monkeypatch.setattr(rounds.time, "time", real_time)
    played.clear()
    wdl = rounds.match(Path("c.onnx"), ["WeightsFile=x"], tmp_path / "two" / "gate", **args)   # another machine
    assert wdl == (0, games, 0) and played == [12001, 12002]


def test_the_gate_passes_on_the_interval_when_the_sprt_is_undecided():
    from nets.training import round as rounds
    assert not rounds.passed((60, 80, 60), rounds.GATE_SPRT)       # level
    assert not rounds.passed((20, 60, 120), rounds.GATE_SPRT)      # clearly worse: H0
    assert rounds.passed((150, 30, 20), rounds.GATE_SPRT)


def test_the_plan_fits_the_budget():
    from nets.training import plan as plans
    first = plans.make_plan(1, 2.5, first=True)
    later = plans.make_plan(2, 2.5, first=False)
    for plan in (first, later):
        assert plan.budgeted_seconds() <= 2.5 * 3600
        assert plan.budgeted_seconds() > 2.3 * 3600          # and uses it
    assert first.first and not later.first
    # Only a later generation plays the net it replaced and the reference net, pinned: 200 games each, one at a time,
    # not two at once; they only measure, so the budget leaves them out.
    assert first.seconds()["replaced"] == first.seconds()["reference"] == 0
    assert later.seconds()["replaced"] == later.seconds()["reference"] == plans.REFERENCE_GAMES * \
        plans.PINNED_GAME_SECONDS
    assert "the match against the net it replaces 95 min and the reference match 95 min" in later.summary("x.onnx")
    assert plans.make_plan(1, 2.5, first=True, shards=12).shards == 12
    # A round with time to spare may train longer or at another rate: the plan takes that into its budget.
    longer = plans.make_plan(2, 2.5, first=False, epochs=2, lr=3e-4)
    assert (longer.epochs, longer.lr) == (2, 3e-4) and (later.epochs, later.lr) == (1.0, 1e-3)
    assert longer.shards < later.shards and longer.budgeted_seconds() <= 2.5 * 3600


def test_the_plan_counts_the_net_s_shape_and_the_earlier_rounds_data():
    from nets.training import plan as plans
    small = plans.make_plan(8, 2.5, first=False, shards=471)
    large = plans.make_plan(8, 2.5, first=False, shards=471, shape=(6, 48))
    window = plans.make_plan(8, 2.5, first=False, shards=471, shape=(6, 48), earlier_positions=471 * 5000)
    # Round 8's 6x48 trained an epoch of its 2,355,000 positions in about 40 minutes: the plan said 9 before.
    assert 35 * 60 < large.seconds()["train"] < 45 * 60 and small.seconds()["train"] < 10 * 60
    assert window.seconds()["train"] == 2 * large.seconds()["train"]
    assert plans.train_steps_per_second((6, 64)) < plans.train_steps_per_second((6, 48))
    assert plans.train_steps_per_second((8, 64)) < plans.train_steps_per_second((6, 64))
    # In bfloat16 at batches of 1024 a step's fixed part (data, heads, optimiser) does not grow with the tower: round
    # 19's 6x48 trained 16,977 steps in 5,375 s and round 20's 8x64 11,318 in 5,964, where scaling the 6x48's time by
    # blocks x filters² planned the 8x64's at 216 minutes.
    for shape, steps, seconds in (((6, 48), 16_977, 5_375), ((8, 64), 11_318, 5_964)):
        planned = steps * 1024 / plans.train_positions_per_second(shape, bfloat16=True, amx=True)
        assert 0.9 * seconds < planned < 1.1 * seconds
    # Round 21's machine had AVX-512 BF16 but no AMX tiles: its 6x48 trained 4,510 steps in 2,917 s.
    planned = 4_510 * 1024 / plans.train_positions_per_second((6, 48), bfloat16=True, amx=False)
    assert 0.9 * 2_917 < planned < 1.1 * 2_917
    ratio = (plans.train_positions_per_second((6, 48), True, amx=True)
             / plans.train_positions_per_second((8, 64), True, amx=True))
    assert 1.0 < ratio < (8 * 64 ** 2) / (6 * 48 ** 2)
    # Within its hours, a larger net trained on two rounds leaves room for fewer new shards.
    budgeted = plans.make_plan(8, 2.5, first=False, shape=(6, 48), earlier_positions=471 * 5000)
    assert budgeted.shards < plans.make_plan(8, 2.5, first=False).shards
    assert budgeted.budgeted_seconds() <= 2.5 * 3600


def test_new_rounds_keep_repeated_positions_and_older_plans_still_drop_them(tmp_path):
    """From round 13 on a round trains on every copy of a position its games share (the start position weighs as
    often as it is played); a plan saved before that reloads as it was made, so its checkpoint still resumes."""
    import json
    from nets.training import plan as plans
    plan = plans.make_plan(13, 2.5, first=False, shards=10)
    plan.save(tmp_path / "new" / "plan.json")
    assert plans.Plan.load(tmp_path / "new" / "plan.json").repeats == "keep"
    older = json.loads((tmp_path / "new" / "plan.json").read_text())
    del older["repeats"]
    (tmp_path / "old.json").write_text(json.dumps(older))
    assert plans.Plan.load(tmp_path / "old.json").repeats == "drop"
    # Plans before round 18 counted the heuristic match's games, none for the first generation, where the later
    # plans say ``first``: both reload (round 18's own plan was made before the change).
    for kept, first in ((100, False), (0, True)):
        del older["first"]
        older["heuristic_games"] = kept
        (tmp_path / "old.json").write_text(json.dumps(older))
        assert plans.Plan.load(tmp_path / "old.json").first is first
        older = {k: v for k, v in older.items() if k != "heuristic_games"} | {"first": first}


def test_a_round_may_train_the_policy_head_alone_and_plans_its_cheaper_steps(tmp_path):
    """``--train-only policy`` and ``--tower-lr-scale`` are kept in the plan (every rerun trains the same way); the
    policy head alone plans the faster steps of a frozen tower; a plan saved before the options trained the whole net
    at one rate."""
    import json
    from nets.training import plan as plans
    whole = plans.make_plan(13, 2.5, first=False, shards=100, shape=(6, 48))
    head = plans.make_plan(13, 2.5, first=False, shards=100, shape=(6, 48), train_only="policy")
    assert head.seconds()["train"] < whole.seconds()["train"] and head.seconds()["data"] == whole.seconds()["data"]
    head.save(tmp_path / "plan.json")
    assert plans.Plan.load(tmp_path / "plan.json").train_only == "policy"
    plans.make_plan(14, 2.5, first=False, shards=100, tower_lr_scale=0.1).save(tmp_path / "slow.json")
    assert plans.Plan.load(tmp_path / "slow.json").tower_lr_scale == 0.1
    plans.make_plan(16, 2.5, first=False, shards=100, q_mse_weight=4.0).save(tmp_path / "q.json")
    assert plans.Plan.load(tmp_path / "q.json").q_mse_weight == 4.0
    plans.make_plan(21, 2.5, first=False, shards=100, result_weight=0.25).save(tmp_path / "result.json")
    assert plans.Plan.load(tmp_path / "result.json").result_weight == 0.25
    older = json.loads((tmp_path / "plan.json").read_text())
    del older["train_only"], older["tower_lr_scale"], older["q_mse_weight"], older["result_weight"]
    (tmp_path / "old.json").write_text(json.dumps(older))
    assert plans.Plan.load(tmp_path / "old.json").train_only == "all"
    assert plans.Plan.load(tmp_path / "old.json").tower_lr_scale == 1.0
    assert plans.Plan.load(tmp_path / "old.json").q_mse_weight == 0.0
    assert plans.Plan.load(tmp_path / "old.json").result_weight == 0.0


def test_a_round_that_repeats_the_endings_keeps_it_and_plans_the_longer_training(tmp_path):
    """``--ending-repeats N`` is kept in the plan, costs the training time of the endings' extra copies (none of the
    data's), and a plan saved before the option trains each ending once."""
    import json
    from nets.training import plan as plans
    once = plans.make_plan(26, 2.5, first=False, shards=0, new_data=False, earlier_positions=2_400_000)
    twice = plans.make_plan(26, 2.5, first=False, shards=0, new_data=False, earlier_positions=2_400_000,
                             ending_repeats=2)
    assert twice.seconds()["train"] == pytest.approx(once.seconds()["train"] * (1 + plans.ENDING_SHARE))
    assert twice.seconds()["data"] == once.seconds()["data"]
    twice.save(tmp_path / "plan.json")
    assert plans.Plan.load(tmp_path / "plan.json").ending_repeats == 2
    older = json.loads((tmp_path / "plan.json").read_text())
    del older["ending_repeats"]
    (tmp_path / "old.json").write_text(json.dumps(older))
    assert plans.Plan.load(tmp_path / "old.json").ending_repeats == 1
    with pytest.raises(SystemExit):   # refused before a plan is kept and reused
        plans.make_plan(26, 2.5, first=False, shards=10, ending_repeats=0)


def test_a_round_that_thins_the_decided_positions_keeps_it_and_plans_the_shorter_training(tmp_path):
    """``--decided-keep F`` is kept in the plan and said in its summary, saves the training time of the decided
    positions left out (none of the data's), and a plan saved before the option trains on all of them."""
    import json
    from nets.training import plan as plans
    every = plans.make_plan(28, 2.5, first=False, shards=480, label_depth=8)
    thinned = plans.make_plan(28, 2.5, first=False, shards=480, label_depth=8, decided_keep=0.4)
    assert thinned.seconds()["train"] == pytest.approx(every.seconds()["train"] * (1 - 0.6 * plans.DECIDED_SHARE))
    assert thinned.seconds()["data"] == every.seconds()["data"]
    assert "0.4 of the decided positions" in thinned.summary("arbor-r027.onnx")
    assert "decided" not in every.summary("arbor-r027.onnx")
    thinned.save(tmp_path / "plan.json")
    assert plans.Plan.load(tmp_path / "plan.json").decided_keep == 0.4
    older = json.loads((tmp_path / "plan.json").read_text())
    del older["decided_keep"]
    (tmp_path / "old.json").write_text(json.dumps(older))
    assert plans.Plan.load(tmp_path / "old.json").decided_keep == 1.0
    for bad in (0.0, 1.2):
        with pytest.raises(SystemExit):   # refused before a plan is kept and reused
            plans.make_plan(28, 2.5, first=False, shards=10, decided_keep=bad)


def test_deeper_labels_cost_their_time_in_the_plan():
    from nets.training import plan as plans
    shallow = plans.make_plan(10, 2.5, first=False, shards=100, shape=(6, 48))
    deep = plans.make_plan(10, 2.5, first=False, shards=100, shape=(6, 48), label_depth=8)
    assert deep.label_depth == 8 and shallow.label_depth == plans.LABEL_DEPTH
    # Stockfish labels 4.3x fewer positions a second at depth 8 than at 6; the positions themselves cost the same.
    labels = deep.seconds()["data"] - 100 * plans.POSITIONS_SECONDS
    assert labels == pytest.approx(4.3 * (shallow.seconds()["data"] - 100 * plans.POSITIONS_SECONDS))
    assert deep.seconds()["train"] == shallow.seconds()["train"]
    budgeted = plans.make_plan(10, 2.5, first=False, shape=(6, 48), label_depth=8)
    assert budgeted.shards < plans.make_plan(10, 2.5, first=False, shape=(6, 48)).shards
    assert budgeted.budgeted_seconds() <= 2.5 * 3600


def test_children_cost_their_labels_and_training_in_the_plan():
    """Each game position whose children join the data adds about 28 positions to label and train on."""
    from nets.training import plan as plans
    plain = plans.make_plan(15, 2.5, first=False, shards=100, shape=(6, 48), teacher="t.onnx")
    more = plans.make_plan(15, 2.5, first=False, shards=100, shape=(6, 48), teacher="t.onnx", children=50)
    share = 50 * plans.CHILDREN_PER_PARENT / plans.POSITIONS_PER_SHARD
    assert more.seconds()["train"] == pytest.approx((1 + share) * plain.seconds()["train"])
    labels = plain.seconds()["data"] - 100 * plans.POSITIONS_SECONDS
    assert more.seconds()["data"] - 100 * plans.POSITIONS_SECONDS == pytest.approx((1 + share) * labels)
    budgeted = plans.make_plan(15, 2.5, first=False, shape=(6, 48), teacher="t.onnx", children=50)
    assert budgeted.shards < plans.make_plan(15, 2.5, first=False, shape=(6, 48), teacher="t.onnx").shards
    assert 2.3 * 3600 < budgeted.budgeted_seconds() <= 2.5 * 3600


# -- the raw Stockfish pipe --------------------------------------------------------------------------------

def _stockfish_paths() -> list[str]:
    from nets.training.stockfish import StockfishMissing, find_stockfish
    paths = [str(FAKE_SF)]
    try:
        paths.append(find_stockfish())
    except StockfishMissing:
        pass
    return paths


@pytest.mark.parametrize("which", ["fake", "stockfish"])
def test_uci_pipe_matches_python_chess(which):
    """The pipe that labels the data reports what python-chess's ``analyse`` reports: each MultiPV line's
    first move and score, for positions with and without a move stack (so with ``position ... moves``)."""
    from nets.training.stockfish import UciPipe
    paths = _stockfish_paths()
    if which == "stockfish" and len(paths) < 2:
        pytest.skip("Stockfish is not installed (apt-get install stockfish)")
    path = paths[0] if which == "fake" else paths[1]
    boards = [b for b, _ in random_games(12, seed=8)]
    boards = [chess.Board(b.fen()) if i % 2 else b for i, b in enumerate(boards)]   # with and without moves
    reference = chess.engine.SimpleEngine.popen_uci(path)
    reference.configure({"Threads": 1, "Hash": 16})
    try:
        expected = [[(info["pv"][0], info["score"]) for info in
                     reference.analyse(b, chess.engine.Limit(depth=5), multipv=3)] for b in boards]
    finally:
        reference.quit()
    pipe = UciPipe(path, multipv=3)
    try:
        got = [pipe.analyse(b, "depth 5") for b in boards]
    finally:
        pipe.quit()
    assert got == expected


def test_a_rerun_after_the_ship_only_plays_the_missing_reference_match(default, monkeypatch, tmp_path):
    """An interruption after the ship must not gate the net against itself (it is the shipped net now): the rerun
    plays the reference net alone, pinned, its chunks kept for the next machine, and records it in the ladder."""
    torch = pytest.importorskip("torch")
    from nets.training import ladder, round as rounds
    reference = tmp_path / "reference" / "arbor-r007.onnx"
    reference.parent.mkdir()
    reference.write_bytes(b"the reference")
    monkeypatch.setattr(ladder, "REFERENCE", reference)
    run = tmp_path / "runs" / "round-002"
    _fake_run(torch, run, init="arbor-r001.onnx")
    (run / "arbor-r002.onnx").write_bytes(b"gen 2")
    (default / "arbor-r002.onnx").write_bytes(b"gen 2")
    ladder.write(default / "ladder.json", [ladder.Row(
        round=2, seed=2, net="arbor-r002.onnx", positions_added=10, positions_total=20, init="arbor-r001.onnx",
        steps=80, train_hours=0.2, gate="90-60-50, Elo +70.4 +/- 40.0 (200 games) vs shipped", gate_passed=True)])
    games = []
    monkeypatch.setattr(rounds, "match", lambda candidate, options, folder, **kw: games.append(
        (candidate, options, folder.name, kw)) or (60, 20, 20))
    assert rounds.run_round(2, runs_root=tmp_path / "runs", data_root=tmp_path / "data")
    (candidate, options, folder, kw), = games
    assert (candidate, options, folder) == (run / "arbor-r002.onnx", [f"WeightsFile={reference}"], "reference")
    assert kw["pinned"] and kw["games"] == rounds.REFERENCE_GAMES and kw["sprt"] is None
    assert kw["kept"] == tmp_path / "rounds" / "round-002" / "reference" and kw["name"] == "arbor-r007"
    row = ladder.read(default / "ladder.json")[0]
    assert row.reference.startswith("60-20-20, Elo +") and not row.heuristic
    text = (default / "README.md").read_text()
    assert "vs `arbor-r007`, 10 s + 0.1 s, one core each |" in text and f"| {row.reference} |" in text
    assert f"one core each:** {row.reference}" in text   # the shipped net's provenance says it too
    assert rounds.run_round(2, runs_root=tmp_path / "runs", data_root=tmp_path / "data") and len(games) == 1


def test_the_reference_match_stops_for_the_session_s_end_and_spares_a_replaced_net_s_provenance(
        default, monkeypatch, tmp_path):
    """Cut short (None), the round says so and records nothing; an older generation's match, played once a later one
    has shipped (on a machine that cannot pin the engines apart), only fills in its ladder row: the shipped net and
    its provenance stay. The first generation (gated
    against the heuristic) and the reference itself play nothing."""
    torch = pytest.importorskip("torch")
    from nets.training import ladder, round as rounds
    reference = tmp_path / "arbor-r007.onnx"
    reference.write_bytes(b"the reference")
    monkeypatch.setattr(ladder, "REFERENCE", reference)
    _fake_run(torch, tmp_path / "rounds" / "round-003")   # what git keeps of round 3: checkpoint, history, candidate
    (tmp_path / "rounds" / "round-003" / "arbor-r003.onnx").write_bytes(b"gen 3")
    (default / "arbor-r004.onnx").write_bytes(b"gen 4")
    (default / "README.md").write_text("# gen 4's provenance\n")

    def row(n, gate="vs shipped", net=None, replaced=""):
        return ladder.Row(round=n, seed=n, net=net or f"arbor-r{n:03d}.onnx", positions_added=1, positions_total=1,
                          init="x", steps=1, train_hours=0.1, gate=f"1-0-0, Elo +1 (1 games) {gate}, 10+0.1",
                          gate_passed=True, replaced=replaced)
    # Round 3 has played the net it replaced (round 1's): the reference match alone is left.
    ladder.write(default / "ladder.json", [row(1, "vs heuristic"), row(3, replaced="6-2-2 vs arbor-r001.onnx"),
                                           row(7, net="arbor-r007-int8.onnx")])
    results, kept = [None], []
    monkeypatch.setattr(rounds, "match", lambda *a, **kw: kept.append(kw["kept"]) or results.pop())
    # A run trained elsewhere (``--trained``) has a folder of its own name: its games are kept under the round's.
    assert rounds._finish_shipped(ladder.read(default / "ladder.json")[1], tmp_path / "gpu-run", 0.0, False) is None
    assert kept == [tmp_path / "rounds" / "round-003" / "reference"]
    assert not ladder.read(default / "ladder.json")[1].reference
    # Where the engines cannot be pinned apart, the match is still played one at a time, and the ladder says how.
    from nets.training import gate
    monkeypatch.setattr(gate, "pinned_engines", lambda swap: None)
    results.append((5, 3, 2))
    assert rounds.run_round(3, runs_root=tmp_path / "runs") is True and not results
    assert ladder.read(default / "ladder.json")[1].reference.startswith("5-3-2, Elo +")
    assert ladder.read(default / "ladder.json")[1].reference.endswith(", unpinned")
    assert sorted(p.name for p in default.glob("*.onnx")) == ["arbor-r004.onnx"]
    assert (default / "README.md").read_text().startswith("# gen 4's provenance\n")
    assert rounds.run_round(1, runs_root=tmp_path / "runs") is True
    assert rounds.run_round(7, runs_root=tmp_path / "runs") is True
    reference.unlink()
    ladder.write(default / "ladder.json", [row(5)])
    (tmp_path / "rounds" / "round-005").mkdir()
    with pytest.raises(SystemExit, match="reference net .* is missing"):
        rounds.run_round(5, runs_root=tmp_path / "runs")


def test_a_shipped_net_plays_the_net_it_replaced_then_the_reference(default, monkeypatch, tmp_path):
    """After the ship, the new default plays the net it replaced, pinned, 200 games (its gain over the last default,
    measured the way the gate cannot), then the reference; each match resumes where the session's end cut it, and the
    ladder row and the provenance show both. A net that replaced the reference itself plays it once."""
    torch = pytest.importorskip("torch")
    from nets.training import gate, ladder, round as rounds
    reference = tmp_path / "reference" / "arbor-r007.onnx"
    reference.parent.mkdir()
    reference.write_bytes(b"the reference")
    monkeypatch.setattr(ladder, "REFERENCE", reference)
    monkeypatch.setattr(gate, "pinned_engines", lambda swap: (["taskset", "-c", "0"], ["taskset", "-c", "1"]))
    run = tmp_path / "runs" / "round-009"
    _fake_run(torch, run, init="arbor-r008.onnx")
    (run / "arbor-r009.onnx").write_bytes(b"gen 9")
    (default / "arbor-r009.onnx").write_bytes(b"gen 9")
    replaced = rounds.ROUNDS_DIR / "round-008" / "arbor-r008.onnx"   # where a retired round keeps its shipped net

    def row(n, net=None):
        return ladder.Row(round=n, seed=n, net=net or f"arbor-r{n:03d}.onnx", positions_added=1, positions_total=1,
                          init="x", steps=1, train_hours=0.1, gate="1-0-0, Elo +1 (1 games) vs shipped, 10+0.1",
                          gate_passed=True)
    ladder.write(default / "ladder.json", [row(8), row(9)])
    common = dict(runs_root=tmp_path / "runs", data_root=tmp_path / "data")
    with pytest.raises(SystemExit, match="replaced arbor-r008.onnx, which is in none of .*check it out from git"):
        rounds.run_round(9, **common)
    replaced.parent.mkdir(parents=True)
    replaced.write_bytes(b"gen 8")
    games, results = [], [None]
    monkeypatch.setattr(rounds, "match", lambda candidate, options, folder, **kw: games.append(
        (candidate, options, folder.name, kw)) or results.pop(0))
    assert rounds.run_round(9, **common) is None   # the session ended in the first match
    assert not ladder.read(default / "ladder.json")[-1].replaced
    results += [(120, 50, 30), None]
    assert rounds.run_round(9, **common) is None   # ... and next time in the second
    assert ladder.read(default / "ladder.json")[-1].replaced.startswith("120-50-30, Elo +")
    results += [(100, 60, 40)]
    assert rounds.run_round(9, **common) is True
    assert [(options, folder, kw["name"], kw["seed"], kw["kept"].name) for _, options, folder, kw in games] == [
        ([f"WeightsFile={replaced}"], "replaced", "arbor-r008", 809, "replaced")] * 2 + [
        ([f"WeightsFile={reference}"], "reference", "arbor-r007", 709, "reference")] * 2
    assert all(c == run / "arbor-r009.onnx" and kw["pinned"] and kw["games"] == rounds.REFERENCE_GAMES
               and kw["sprt"] is None for c, _, _, kw in games)
    row9 = ladder.read(default / "ladder.json")[-1]
    assert row9.replaced.endswith("(200 games) vs arbor-r008.onnx") and row9.reference.startswith("100-60-40, Elo +")
    text = (default / "README.md").read_text()
    assert "| vs the net it replaced, 10 s + 0.1 s, one core each |" in text
    assert f"| {row9.replaced} | {row9.reference} |" in text
    assert f"one core each:** {row9.replaced}." in text and f"one core each:** {row9.reference}." in text
    assert rounds.run_round(9, **common) is True and len(games) == 4   # nothing left to play

    # The net it replaced was the reference net: one match against it, not two.
    ladder.write(default / "ladder.json", [row(7), row(9)])
    games.clear()
    results += [(50, 30, 20)]
    assert rounds.run_round(9, **common) is True
    assert [folder for _, _, folder, _ in games] == ["reference"]


def _kept_round(torch, rounds, number: int) -> Path:
    """What git keeps of a round trained and exported but not yet gated: plan, checkpoint, history, candidate."""
    saved = rounds.ROUNDS_DIR / f"round-{number:03d}"
    _fake_run(torch, saved, init=f"arbor-r{number - 1:03d}.onnx")
    rounds.make_plan(number, 1.0, first=False, shards=1).save(saved / "plan.json")
    net = f"arbor-r{number:03d}.onnx"
    (saved / net).write_bytes(f"gen {number}".encode())
    (saved / "candidate.json").write_text(f'{{"net": "{net}", "float": "{net}", "positions_added": 10}}')
    return saved


def test_a_candidate_that_gains_only_against_arbor_does_not_ship(default, monkeypatch, tmp_path):
    """A candidate that passed its gate plays Stockfish at the yardstick's UCI_Elo, pinned, chunk by chunk beside the
    shipped net on the same kind of CPU, and ships only if it scores more there; the shipped net's games stay in its
    own round for later candidates on that CPU; a session's end in that match leaves the round to resume."""
    torch = pytest.importorskip("torch")
    from engine.evaluators import precision
    from nets.training import gate, ladder, round as rounds
    reference = tmp_path / "arbor-r007.onnx"
    reference.write_bytes(b"the reference")
    monkeypatch.setattr(ladder, "REFERENCE", reference)
    (default / "arbor-r001.onnx").write_bytes(b"gen 1")
    ladder.write(default / "ladder.json", [ladder.Row(
        round=1, seed=1, net="arbor-r001.onnx", positions_added=10, positions_total=10, init=None, steps=1,
        train_hours=0.1, gate="1-0-0 vs heuristic", gate_passed=True)])
    shipped = ["arbor-r001.onnx"]
    monkeypatch.setattr(rounds, "shipped_net", lambda: default / shipped[0])
    cpu = ["AMD EPYC, AVX2"]
    monkeypatch.setattr(precision, "cpu_description", lambda: cpu[0])
    per_chunk = {"arbor-r001.onnx": (8, 4, 8), "arbor-r002.onnx": (9, 4, 7), "arbor-r003.onnx": (7, 4, 9)}
    stop = []      # (net, chunk) where the session's time runs out
    calls = []

    def fake_match(candidate, options, folder, **kw):
        chunk = kw.get("only_chunk")
        kind = folder.name if chunk is None else folder.parent.name
        calls.append((candidate.name, kind, chunk, options, kw))
        if chunk is None:
            return {"gate": (70, 20, 10), "replaced": (65, 20, 15), "reference": (60, 20, 20)}[kind]
        if (candidate.name, chunk) in stop:
            return None
        w, d, lost = per_chunk[candidate.name]
        games = "".join(f'[Site "{cpu[0]}"]\n[White "{gate.CANDIDATE}"]\n[Black "sf"]\n[Result "{r}"]\n\n1. e4 {r}\n\n'
                        for r in ["1-0"] * w + ["1/2-1/2"] * d + ["0-1"] * lost)
        kw["kept"].mkdir(parents=True, exist_ok=True)
        (kw["kept"] / f"chunk-{chunk:03d}.pgn").write_text(games)
        return w, d, lost

    monkeypatch.setattr(rounds, "match", fake_match)
    (rounds.ROUNDS_DIR / "round-001").mkdir(parents=True)
    (rounds.ROUNDS_DIR / "round-001" / "arbor-r001.onnx").write_bytes(b"gen 1")   # kept there once replaced
    _kept_round(torch, rounds, 2)
    common = dict(runs_root=tmp_path / "runs", data_root=tmp_path / "data", stockfish=str(FAKE_SF))
    stop.append(("arbor-r002.onnx", 3))
    assert rounds.run_round(2, **common) is None   # the session ended in the candidate's fourth chunk
    assert [(name, kind, chunk) for name, kind, chunk, _, _ in calls[1:]] == [
        (net, "stockfish-shipped" if net == "arbor-r001.onnx" else "stockfish", chunk)
        for chunk in range(4) for net in ("arbor-r001.onnx", "arbor-r002.onnx")]
    _, _, _, options, kw = calls[-1]
    assert "UCI_Elo=2100" in options and "UCI_LimitStrength=true" in options and kw["engine"] == [str(FAKE_SF)]
    assert kw["pinned"] and kw["sprt"] is None and kw["seed"] == rounds.YARDSTICK_SEED
    assert kw["kept"] == rounds.ROUNDS_DIR / "round-002" / "stockfish" / "amd-epyc-avx2"
    assert [r.round for r in ladder.read(default / "ladder.json")] == [1]

    stop.clear()
    cpu[0] = "Intel Xeon, AVX-512 VNNI"   # the next session's machine: chunk 3 is played there by both nets
    calls.clear()
    assert rounds.run_round(2, **common) is True   # 55% against the shipped net's 50% on the same games
    assert [(name, chunk, kw["kept"].name) for name, kind, chunk, _, kw in calls if chunk is not None] == [
        (net, chunk, "intel-xeon-avx-512-vnni") for chunk in range(3, 10)
        for net in ("arbor-r001.onnx", "arbor-r002.onnx")]
    rows = ladder.read(default / "ladder.json")
    assert rows[0].stockfish.startswith("80-40-80, Elo +0.0 ")   # its first measurement, on both machines
    assert rows[0].stockfish.endswith(" (200 games), on AMD EPYC, AVX2 and Intel Xeon, AVX-512 VNNI")
    assert rows[1].gate_passed and rows[1].stockfish.startswith("90-40-70, Elo ")
    assert "AVX-512 VNNI; arbor-r001.onnx there 80-40-80, Elo +0.0 " in rows[1].stockfish
    assert sorted(p.name for p in default.glob("*.onnx")) == ["arbor-r002.onnx"]
    assert f"| {rows[1].reference} | {rows[1].stockfish} |" in (default / "README.md").read_text()
    assert len(list((rounds.ROUNDS_DIR / "round-002" / "stockfish").rglob("chunk-*.pgn"))) == 10   # kept, shipped
    assert len(list((rounds.ROUNDS_DIR / "round-001" / "stockfish").rglob("chunk-*.pgn"))) == 11   # 3 unpaired

    shipped[0] = "arbor-r002.onnx"
    calls.clear()
    _kept_round(torch, rounds, 3)
    assert rounds.run_round(3, **common) is False   # 45% against 55%: a gain against Arbor alone
    assert [(name, chunk) for name, _, chunk, _, _ in calls] == [("arbor-r003.onnx", None)] + [
        (net, chunk) for chunk in range(3) for net in ("arbor-r002.onnx", "arbor-r003.onnx")] + [
        ("arbor-r003.onnx", chunk) for chunk in range(3, 10)]   # r002's chunks on this CPU are played once
    row = ladder.read(default / "ladder.json")[2]
    assert not row.gate_passed and row.stockfish.startswith("70-40-90, Elo ")
    assert sorted(p.name for p in default.glob("*.onnx")) == ["arbor-r002.onnx"]
    assert "`arbor-r003.onnx`, not shipped (no gain against Stockfish)" in (default / "README.md").read_text()
    saved = rounds.ROUNDS_DIR / "round-003"
    assert not (saved / "arbor-r003.onnx").exists()   # left to git's history
    assert (saved / "stockfish.pgn.gz").exists() and not (saved / "stockfish").exists()   # packed, not shipped


def test_a_match_against_another_engine_pins_it_like_arbor(monkeypatch, tmp_path):
    """Stockfish as the opponent: its command in Arbor's place, on the other core, swapped every chunk; where
    nothing can be pinned it still plays, one game at a time."""
    from nets.training import gate, round as rounds
    monkeypatch.setattr(gate.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(gate.shutil, "which", lambda name: f"/usr/bin/{name}")
    calls = []

    def fake_play(candidate, options, name, *, games, tc, concurrency, openings, pgn, seed=None, engines=None):
        calls.append(engines)
        draw = f'[White "{gate.CANDIDATE}"]\n[Black "{name}"]\n[Result "1/2-1/2"]\n\n1. e4 1/2-1/2\n\n'
        pgn.write_text(draw * games)
        return gate.tally(pgn)

    monkeypatch.setattr(gate, "play", fake_play)
    sf = ["/usr/games/stockfish"]
    assert rounds.match(Path("c.onnx"), ["UCI_Elo=2100"], tmp_path / "m", games=2 * rounds.GATE_CHUNK, min_games=0,
                        seed=1, concurrency=2, sprt=None, pinned=True, engine=sf) == (0, 2 * rounds.GATE_CHUNK, 0)
    assert calls == [(["taskset", "-c", "0", *gate.ARBOR], ["taskset", "-c", "1", *sf]),
                     (["taskset", "-c", "1", *gate.ARBOR], ["taskset", "-c", "0", *sf])]
    monkeypatch.setattr(gate.os, "sched_getaffinity", lambda pid: {3})
    calls.clear()
    assert sum(rounds.match(Path("c.onnx"), [], tmp_path / "n", games=1, min_games=0, seed=1, concurrency=2,
                            sprt=None, pinned=True, engine=sf)) == 1
    assert calls == [(gate.ARBOR, sf)]


def test_a_pinned_match_puts_each_engine_on_a_core_of_its_own_and_swaps_them_every_chunk(monkeypatch, tmp_path):
    from nets.training import gate, round as rounds
    monkeypatch.setattr(gate.os, "sched_getaffinity", lambda pid: {5, 2, 9})
    monkeypatch.setattr(gate.shutil, "which", lambda name: f"/usr/bin/{name}")
    calls = []

    def fake_play(candidate, options, name, *, games, tc, concurrency, openings, pgn, seed=None, engines=None):
        calls.append((concurrency, engines))
        pgn.write_text("".join(f'[White "{gate.CANDIDATE}"]\n[Black "{name}"]\n[Result "1-0"]\n\n1. e4 1-0\n\n'
                               for _ in range(games)))
        return gate.tally(pgn)

    monkeypatch.setattr(gate, "play", fake_play)
    assert rounds.match(Path("c.onnx"), ["WeightsFile=r.onnx"], tmp_path / "m", games=3 * rounds.GATE_CHUNK,
                        min_games=0, seed=1, concurrency=2, sprt=None, pinned=True) == (3 * rounds.GATE_CHUNK, 0, 0)
    arbor = [sys.executable, "-m", "engine"]
    on = {core: ["taskset", "-c", core, *arbor] for core in ("2", "5")}
    assert calls == [(1, (on["2"], on["5"])), (1, (on["5"], on["2"])), (1, (on["2"], on["5"]))]
    monkeypatch.setattr(gate.os, "sched_getaffinity", lambda pid: {3})
    assert gate.pinned_engines(swap=False) is None   # one core: nothing to pin apart


def test_a_pinned_match_really_plays_under_taskset(tmp_path):
    """The engines' commands reach ``arbor match`` whole: two real games, each engine on its own core."""
    from nets.training import gate
    engines = gate.pinned_engines(swap=True)
    if engines is None:
        pytest.skip("needs two cores and taskset")
    net = ROOT / "nets" / "reference" / "arbor-r007.onnx"
    pgn = tmp_path / "pinned.pgn"
    wdl = gate.play(net, ["Evaluator=heuristic"], "heuristic", games=2, tc="1+0.02", concurrency=1,
                    openings=ROOT / "tests" / "data" / "openings.pgn", pgn=pgn, seed=3, engines=engines)
    assert sum(wdl) == 2


def test_while_nothing_has_shipped_a_failed_candidate_is_the_next_rounds_start(default, tmp_path):
    """A first round that does not beat the heuristic ships nothing, but its net is kept (not bundled, not
    discovered) so that the next round builds on it; that round is still gated against the heuristic."""
    torch = pytest.importorskip("torch")
    from nets.training import ladder, round as rounds, ship
    _fake_run(torch, tmp_path / "r1")
    (tmp_path / "r1" / "arbor-r001.onnx").write_bytes(b"gen 1")
    row = ladder.Row(round=1, seed=1, net="arbor-r001.onnx", positions_added=2000, positions_total=2000, init=None,
                     steps=80, train_hours=0.2, gate="30-20-50, Elo -70.4 +/- 60.0 (100 games) vs heuristic",
                     gate_passed=False)
    ship.ship(tmp_path / "r1" / "arbor-r001.onnx", tmp_path / "r1", row=row)
    assert not list(default.glob("*.onnx"))
    assert rounds.shipped_net(default) is None and rounds.base_net(default) == default / "base" / "arbor-r001.onnx"
    assert "| 1 | 1 | `arbor-r001.onnx`, not shipped | 2,000 / 2,000 | scratch |" in (default / "README.md").read_text()
    # the next candidate that fails replaces the base; one that passes ships and the base goes
    (tmp_path / "r1" / "arbor-r002.onnx").write_bytes(b"gen 2")
    ship.ship(tmp_path / "r1" / "arbor-r002.onnx", tmp_path / "r1", row=ladder.Row(
        round=2, seed=2, net="arbor-r002.onnx", positions_added=1, positions_total=2001, init="arbor-r001.onnx",
        steps=1, train_hours=0.0, gate="-", gate_passed=False))
    assert rounds.base_net(default) == default / "base" / "arbor-r002.onnx"
    assert not (default / "base" / "arbor-r001.onnx").exists()
    (tmp_path / "r1" / "arbor-r003.onnx").write_bytes(b"gen 3")
    ship.ship(tmp_path / "r1" / "arbor-r003.onnx", tmp_path / "r1", row=ladder.Row(
        round=3, seed=3, net="arbor-r003.onnx", positions_added=1, positions_total=2002, init="arbor-r002.onnx",
        steps=1, train_hours=0.0, gate="-", gate_passed=True))
    assert rounds.shipped_net(default) == default / "arbor-r003.onnx" and rounds.base_net(default) is None


def test_a_round_runs_every_step_from_data_to_ship(default, monkeypatch, tmp_path):
    """The whole round on a tiny scale: self-play positions and labels (the fake Stockfish), training from scratch,
    export, a gate (stubbed: games are what the gate tests above play) and the ship."""
    pytest.importorskip("torch")
    from nets.training import ladder, round as rounds
    monkeypatch.setattr(rounds, "GAMES_PER_SHARD", 2)
    monkeypatch.setattr(rounds, "BLOCKS", 1)
    monkeypatch.setattr(rounds, "FILTERS", 8)
    monkeypatch.setattr(rounds, "BATCH", 32)
    monkeypatch.setattr(rounds, "shipped_net", lambda: None)
    monkeypatch.setattr(rounds, "base_net", lambda: None)
    gates = []
    monkeypatch.setattr(rounds, "match", lambda candidate, options, folder, **kw: gates.append(
        (candidate, options)) or (70, 20, 10))
    shipped = rounds.run_round(1, shards=2, workers=1, data_root=tmp_path / "data", runs_root=tmp_path / "runs",
                               stockfish=str(FAKE_SF))
    assert shipped
    data = tmp_path / "data" / "round-001"
    assert rounds.shards_of(data) == 2
    assert [options for _, options in gates] == [["Evaluator=heuristic"]]   # a first round meets the heuristic
    assert gates[0][0].parent == tmp_path / "runs" / "round-001"
    assert (default / gates[0][0].name).exists()
    row, = ladder.read(default / "ladder.json")
    assert row.round == 1 and row.gate_passed and row.positions_added > 0 and row.steps > 0



def _resumable_round_in_seconds(monkeypatch, rounds) -> dict:
    """Shrink rounds to seconds (tiny games and net, no shipped net, a gate that passes); the run_round arguments
    that go with it (the fake Stockfish, two epochs)."""
    for name, value in (("GAMES_PER_SHARD", 2), ("BLOCKS", 1), ("FILTERS", 8), ("BATCH", 16), ("EVAL_EVERY", 1000)):
        monkeypatch.setattr(rounds, name, value)
    monkeypatch.setattr(rounds, "shipped_net", lambda: None)
    monkeypatch.setattr(rounds, "base_net", lambda: None)
    monkeypatch.setattr(rounds, "match", lambda candidate, options, folder, **kw: (70, 20, 10))
    return dict(workers=1, stockfish=str(FAKE_SF), precision="float32", epochs=2.0)


def test_a_round_stopped_at_the_session_end_resumes_on_a_machine_without_its_data(default, monkeypatch, tmp_path,
                                                                                 capsys):
    """``--session-hours``: training stops with its checkpoint and plan kept in nets/rounds/; on a new machine (no
    data/, no runs/) the rerun regenerates the same positions and labels from the seed, keeps the saved plan whatever
    the command line says, and trains on from the step it stopped at to the same net an unbroken round makes."""
    torch = pytest.importorskip("torch")
    import shutil
    from nets.training import round as rounds
    common = _resumable_round_in_seconds(monkeypatch, rounds)
    assert rounds.run_round(1, shards=2, data_root=tmp_path / "m1" / "data", runs_root=tmp_path / "m1" / "runs",
                            session_hours=1e-9, **common) is None
    saved = tmp_path / "rounds" / "round-001"
    progress = __import__("json").loads((saved / "progress.json").read_text())
    assert 1 <= progress["step"] < progress["of"] and (saved / "checkpoint.pt").exists()
    assert "rerun the same command to resume" in capsys.readouterr().out
    assert not (default / "ladder.json").exists()   # nothing gated, nothing shipped
    # A new machine: only what git keeps (nets/rounds/) is left. --shards 5 is ignored: the plan is kept.
    shutil.rmtree(tmp_path / "m1")
    assert rounds.run_round(1, shards=5, data_root=tmp_path / "m2" / "data", runs_root=tmp_path / "m2" / "runs",
                            **common)
    out = capsys.readouterr().out
    assert "resuming the plan" in out and f"resuming at step {progress['step']} of {progress['of']}" in out
    assert rounds.shards_of(tmp_path / "m2" / "data" / "round-001") == 2
    resumed = torch.load(tmp_path / "m2" / "runs" / "round-001" / "checkpoint.pt", weights_only=False)
    assert resumed["state"]["step"] == progress["of"]
    # The same round unbroken, on a third machine: the same weights.
    shutil.rmtree(saved)
    default.joinpath("ladder.json").unlink()
    assert rounds.run_round(1, shards=2, data_root=tmp_path / "m3" / "data", runs_root=tmp_path / "m3" / "runs",
                            **common)
    whole = torch.load(tmp_path / "m3" / "runs" / "round-001" / "checkpoint.pt", weights_only=False)
    for key, value in whole["model"].items():
        assert torch.allclose(value.float(), resumed["model"][key].float(), atol=1e-5), key


def test_a_round_over_a_window_makes_the_earlier_rounds_data_again_on_a_machine_without_it(default, monkeypatch,
                                                                                            tmp_path, capsys):
    """``--window 2``: the plan names the earlier round whose data it trains on, and a rerun on a machine without
    that data makes it again from that round's kept plan, so the round trains on all it planned (and resumes its
    checkpoint: the data is the same) rather than on its own data alone. A plan that cannot say where its earlier
    positions come from is refused."""
    torch = pytest.importorskip("torch")
    import json
    import shutil
    from nets.training import data as fmt, round as rounds
    common = _resumable_round_in_seconds(monkeypatch, rounds)
    m1, m2 = tmp_path / "m1", tmp_path / "m2"
    assert rounds.run_round(1, shards=2, data_root=m1 / "data", runs_root=m1 / "runs", session_hours=1e-9,
                            **common) is None
    assert rounds.run_round(2, shards=1, window=2, data_root=m1 / "data", runs_root=m1 / "runs",
                            session_hours=1e-9, **common) is None
    plan = json.loads((tmp_path / "rounds" / "round-002" / "plan.json").read_text())
    assert plan["earlier_rounds"] == [1] and plan["earlier_positions"] == 2 * rounds.POSITIONS_PER_SHARD
    shutil.rmtree(m1)
    capsys.readouterr()
    assert rounds.run_round(2, window=1, data_root=m2 / "data", runs_root=m2 / "runs", **common)
    out = capsys.readouterr().out
    assert "trains on round 1's data too" in out and "resuming at step" in out
    assert rounds.shards_of(m2 / "data" / "round-001") == 2 and rounds.shards_of(m2 / "data" / "round-002") == 1
    labelled = sum(len(fmt.load_shard(p)["wdl"]) for n in (1, 2)
                   for p in fmt.shards(m2 / "data" / f"round-{n:03d}" / "labels"))
    trained = torch.load(m2 / "runs" / "round-002" / "checkpoint.pt", weights_only=False)
    assert trained["data"]["positions"] == labelled
    # Plans that cannot be kept to: earlier positions from no named round, or from a round whose plan is not here.
    rounds.Plan(3, 1, 1.0, 1e-3, 10, False, earlier_positions=5_000).save(
        tmp_path / "rounds" / "round-003" / "plan.json")
    with pytest.raises(SystemExit, match="does not name their rounds"):
        rounds.run_round(3, data_root=m2 / "data", runs_root=m2 / "runs", **common)
    rounds.Plan(4, 1, 1.0, 1e-3, 10, False, earlier_positions=5_000, earlier_rounds=[9]).save(
        tmp_path / "rounds" / "round-004" / "plan.json")
    with pytest.raises(SystemExit, match="round 9's data, whose plan"):
        rounds.run_round(4, data_root=m2 / "data", runs_root=m2 / "runs", **common)


def test_a_round_without_new_data_trains_on_its_window_s_earlier_rounds_alone(default, monkeypatch, tmp_path,
                                                                              capsys):
    """``--no-new-data``: the round makes no positions of its own (no Stockfish, no data folder), trains on every
    position of the earlier rounds its window names, and its ladder row says so; with no earlier round in the window
    there is nothing to train on, and the plan is refused before anything is made."""
    torch = pytest.importorskip("torch")
    import json
    from nets.training import data as fmt, ladder, round as rounds
    common = _resumable_round_in_seconds(monkeypatch, rounds)
    m = tmp_path / "m"
    with pytest.raises(SystemExit, match="widen --window"):
        rounds.run_round(1, shards=2, new_data=False, data_root=m / "data", runs_root=m / "runs", **common)
    assert not (tmp_path / "rounds" / "round-001").exists()
    assert rounds.run_round(1, shards=2, data_root=m / "data", runs_root=m / "runs", session_hours=1e-9,
                            **common) is None
    capsys.readouterr()
    assert rounds.run_round(2, shards=3, window=2, new_data=False, data_root=m / "data", runs_root=m / "runs",
                            **common)
    out = capsys.readouterr().out
    plan = json.loads((tmp_path / "rounds" / "round-002" / "plan.json").read_text())
    assert plan["shards"] == 0 and plan["earlier_rounds"] == [1] and "no positions of its own" in out
    assert not (m / "data" / "round-002").exists()
    labelled = sum(len(fmt.load_shard(p)["wdl"]) for p in fmt.shards(m / "data" / "round-001" / "labels"))
    trained = torch.load(m / "runs" / "round-002" / "checkpoint.pt", weights_only=False)
    assert trained["data"]["positions"] == labelled > 0
    row = next(r for r in ladder.read(default / "ladder.json") if r.round == 2)
    assert row.positions_added == 0 and "no new positions: the data of rounds 1" in row.notes


def test_a_round_blends_the_game_result_into_the_value_target(default, monkeypatch, tmp_path, capsys):
    """``--result-weight``: the plan keeps the weight, training blends the game result into the value target at that
    share (the checkpoint records it), and the ladder row says so."""
    torch = pytest.importorskip("torch")
    import json
    from nets.training import ladder, round as rounds
    common = _resumable_round_in_seconds(monkeypatch, rounds)
    m = tmp_path / "m"
    assert rounds.run_round(1, shards=2, result_weight=0.25, data_root=m / "data", runs_root=m / "runs", **common)
    assert "the game result at 0.25 of the value target" in capsys.readouterr().out
    assert json.loads((tmp_path / "rounds" / "round-001" / "plan.json").read_text())["result_weight"] == 0.25
    trained = torch.load(m / "runs" / "round-001" / "checkpoint.pt", weights_only=False)
    assert trained["data"]["result_weight"] == 0.25
    row, = ladder.read(default / "ladder.json")
    assert "game result at 0.25 of the value" in row.notes


def test_a_round_labels_an_earlier_round_s_positions_again_at_another_depth(default, monkeypatch, tmp_path, capsys):
    """``--positions-of``: the round's positions are the earlier round's, shard for shard (linked where that round's
    data is on disk, made again from its seed where not), labelled again by this round's labeller; its ladder row
    says whose positions they are, and a window holding both rounds trains each position once, a relabelled shard
    on the later labels alone."""
    pytest.importorskip("torch")
    import shutil
    from nets.training import data as fmt, ladder, round as rounds
    common = _resumable_round_in_seconds(monkeypatch, rounds)
    m = tmp_path / "m"
    assert rounds.run_round(1, shards=3, data_root=m / "data", runs_root=m / "runs", session_hours=1e-9,
                            **common) is None
    assert rounds.run_round(2, shards=2, window=2, positions_of=1, label_depth=8, data_root=m / "data",
                            runs_root=m / "runs", **common)
    out = capsys.readouterr().out
    assert "labels at depth 8 of round 1's positions" in out
    first, second = m / "data" / "round-001", m / "data" / "round-002"
    sizes = [len(fmt.load_shard(first / "labels" / fmt.shard_name(i))["wdl"]) for i in range(3)]
    # Round 1's shards 0 and 1 once, at depth 8 (round 2's labels); its shard 2 at depth 6, its only labels.
    assert f"{{'6': {sizes[2]}, '8': {sizes[0] + sizes[1]}}}" in out
    assert "round 1: 2 of its shards were labelled again by a later round" in out
    for name in ("shard-00000.npz", "shard-00001.npz"):
        assert (first / "positions" / name).samefile(second / "positions" / name)
        assert int(fmt.load_shard(first / "labels" / name)["depth"]) == 6
        assert int(fmt.load_shard(second / "labels" / name)["depth"]) == 8
    row = next(r for r in ladder.read(default / "ladder.json") if r.round == 2)
    assert "labels at depth 8 of round 1's positions" in row.notes and row.seed == 1
    assert "round 1's 2 shards labelled again by round 2: round 2's labels alone" in row.notes
    # On a machine without round 1's data, round 1's seed makes the same positions again.
    rows = fmt.load_shard(second / "positions" / "shard-00001.npz")["rows"]
    shutil.rmtree(m / "data")
    rounds.make_data(rounds.Plan.load(tmp_path / "rounds" / "round-002" / "plan.json"), second, workers=1,
                     stockfish=str(FAKE_SF))
    assert np.array_equal(fmt.load_shard(second / "positions" / "shard-00001.npz")["rows"], rows)
    assert not first.exists()


def test_a_window_trains_each_relabelled_shard_once_on_its_latest_labels_and_children(tmp_path):
    """Three rounds on one seed (round 1's positions labelled again by round 2, then in part by round 3) and one on
    its own: each shard is read once, from the latest round that labelled it, children going with their parents'
    shard; a later round with more shards than the earlier one relabels only the shards the earlier one has."""
    from nets.training import data as fmt, round as rounds

    def plan(number, shards, of=0):
        return rounds.Plan(round=number, shards=shards, epochs=1, lr=1e-3, gate_games=2, first=False,
                           positions_round=of)

    def folder(number, shards, children=()):
        root = tmp_path / f"round-{number:03d}"
        for kind, count in (("positions", shards), ("labels", shards)):
            (root / kind).mkdir(parents=True)
            for i in range(count):
                (root / kind / fmt.shard_name(i)).write_text(f"{number} {kind} {i}")
        for kind in ("children", "children-labels"):
            (root / kind).mkdir()
            for i in children:
                (root / kind / fmt.shard_name(i)).write_text(f"{number} {kind} {i}")
        return root

    def read(window, views):
        found = {}
        for positions, labels in rounds.window_pairs(window, tmp_path / views):
            for path in fmt.shards(labels):
                found.setdefault(f"{positions.parent.name}/{positions.name}/{path.name[6:11]}", []).append(
                    path.read_text())
        return found

    r1 = folder(1, 3, children=(0, 2))
    window = [(plan(1, 3), r1), (plan(2, 5, of=1), folder(2, 5, children=(0,))), (plan(3, 1, of=1), folder(3, 1)),
              (plan(4, 2), folder(4, 2))]
    assert rounds.relabelled([p for p, _ in window]) == {
        1: {"shard-00000.npz": 3, "shard-00001.npz": 2, "shard-00002.npz": 2}, 2: {"shard-00000.npz": 3}}
    assert read(window, "views") == {   # round 1 and its children: every shard labelled again
        **{f"round-002/positions/{i:05d}": [f"2 labels {i}"] for i in range(1, 5)},
        "round-003/positions/00000": ["3 labels 0"],
        **{f"round-004/positions/{i:05d}": [f"4 labels {i}"] for i in range(2)}}
    # Round 1's shard 0 relabelled (positions and children) by a round of one shard; its shards 1, 2 stay its own.
    assert read([(plan(1, 3), r1), (plan(5, 1, of=1), folder(5, 1, children=(0,)))], "views2") == {
        "round-001/positions/00001": ["1 labels 1"], "round-001/positions/00002": ["1 labels 2"],
        "round-001/children/00002": ["1 children-labels 2"],
        "round-005/positions/00000": ["5 labels 0"], "round-005/children/00000": ["5 children-labels 0"]}


def test_a_gate_cut_short_resumes_on_a_machine_without_the_data(default, monkeypatch, tmp_path, capsys):
    """Once trained, the exported candidate is kept in nets/rounds/ with the count its ladder row needs: a gate the
    session's end cut short goes on, on a machine with none of the round's data, from that candidate without making
    the data again; and after the ship, a rerun on a third machine plays a later generation's missing reference
    match with the shipped net."""
    pytest.importorskip("torch")
    import shutil
    from nets.training import ladder, round as rounds
    common = _resumable_round_in_seconds(monkeypatch, rounds)
    m1, m2, m3 = tmp_path / "m1", tmp_path / "m2", tmp_path / "m3"
    monkeypatch.setattr(rounds, "match", lambda candidate, options, folder, **kw: None)   # out of time in the gate
    assert rounds.run_round(1, shards=2, data_root=m1 / "data", runs_root=m1 / "runs", **common) is None
    saved = tmp_path / "rounds" / "round-001"
    net = rounds._candidate_record(saved)["net"]   # arbor-r001-int8.onnx where int8 kept the float net's accuracy
    exported = (m1 / "runs" / "round-001" / net).read_bytes()
    labelled = rounds._positions_added(m1 / "data" / "round-001")
    assert labelled > 0 and (saved / net).read_bytes() == exported and (saved / "arbor-r001.onnx").exists()
    shutil.rmtree(m1)
    capsys.readouterr()

    def no_data(*args, **kwargs):
        raise AssertionError("the data was made again")

    monkeypatch.setattr(rounds, "make_data", no_data)
    played = []
    monkeypatch.setattr(rounds, "match", lambda candidate, options, folder, **kw: played.append(
        (candidate, candidate.read_bytes(), options)) or (70, 20, 10))
    assert rounds.run_round(1, data_root=m2 / "data", runs_root=m2 / "runs", **common)
    assert "no data to make, on to the gate" in capsys.readouterr().out and not (m2 / "data").exists()
    assert played == [(m2 / "runs" / "round-001" / net, exported, ["Evaluator=heuristic"])]
    row, = ladder.read(default / "ladder.json")
    assert row.gate_passed and row.positions_added == labelled == row.positions_total and row.steps > 0
    assert (default / net).read_bytes() == exported
    # As if gated against a shipped net, its reference match is missing: rerun on a machine without its run folder.
    # (A round gated against a shipped net keeps its checkpoint in nets/rounds/ until that match is played; this one,
    # the first to ship, was done and gave it to git's history: put it back.)
    assert not (saved / "checkpoint.pt").exists()
    shutil.copyfile(m2 / "runs" / "round-001" / "checkpoint.pt", saved / "checkpoint.pt")
    reference = tmp_path / "arbor-r007.onnx"
    reference.write_bytes(b"the reference")
    monkeypatch.setattr(ladder, "REFERENCE", reference)
    row.gate = row.gate.replace("vs heuristic", "vs shipped arbor-r000.onnx")
    ladder.write(default / "ladder.json", [row])
    played.clear()
    assert rounds.run_round(1, data_root=m3 / "data", runs_root=m3 / "runs", **common)
    assert played == [(m3 / "runs" / "round-001" / net, exported, [f"WeightsFile={reference}"])]
    assert ladder.read(default / "ladder.json")[0].reference.startswith("70-20-10")


def _small_round_with_a_teacher(monkeypatch, tmp_path) -> Path:
    """A round shrunk to seconds (tiny games and net, no shipped net, a gate that passes) and a random teacher net."""
    import subprocess
    import sys
    from nets.training import round as rounds
    for name, value in (("GAMES_PER_SHARD", 2), ("BLOCKS", 1), ("FILTERS", 8), ("BATCH", 16)):
        monkeypatch.setattr(rounds, name, value)
    monkeypatch.setattr(rounds, "shipped_net", lambda: None)
    monkeypatch.setattr(rounds, "base_net", lambda: None)
    monkeypatch.setattr(rounds, "match", lambda candidate, options, folder, **kw: (70, 20, 10))
    teacher = tmp_path / "teacher.onnx"
    subprocess.run([sys.executable, str(ROOT / "nets" / "make_random_net.py"), str(teacher), "--blocks", "1",
                    "--filters", "8"], check=True, capture_output=True, timeout=120)
    return teacher


@pytest.mark.parametrize("value_too", [False, True])
def test_a_round_with_a_teacher_labels_its_positions_with_the_net_and_says_so(default, monkeypatch, tmp_path,
                                                                             value_too):
    """``--teacher NET``: the round's labels come from the net (``teacher/``, not Stockfish's ``labels/``), the plan
    keeps the teacher's path relative to the repository, and the ladder row and provenance name the teacher."""
    pytest.importorskip("torch")
    import json
    import subprocess
    import sys
    from nets.training import data as fmt, ladder, round as rounds
    teacher = _small_round_with_a_teacher(monkeypatch, tmp_path)
    value_net = None
    if value_too:   # --teacher-value: the teacher's policy, this net's value
        value_net = tmp_path / "value.onnx"
        subprocess.run([sys.executable, str(ROOT / "nets" / "make_random_net.py"), str(value_net), "--blocks", "1",
                        "--filters", "8", "--seed", "5"], check=True, capture_output=True, timeout=120)
    assert rounds.run_round(1, shards=2, workers=1, data_root=tmp_path / "data", runs_root=tmp_path / "runs",
                            stockfish=str(FAKE_SF), teacher=teacher, precision="float32", teacher_value=value_net)
    data = tmp_path / "data" / "round-001"
    assert len(fmt.shards(data / "teacher")) == 2 and not (data / "labels").exists()
    plan = json.loads((tmp_path / "rounds" / "round-001" / "plan.json").read_text())
    assert not Path(plan["teacher"]).is_absolute() and (ROOT / plan["teacher"]).resolve() == teacher.resolve()
    row, = ladder.read(default / "ladder.json")
    if value_too:
        assert row.notes[0] == "labels by teacher.onnx, value by value.onnx"
        assert str(fmt.load_shard(fmt.shards(data / "teacher")[0])["teacher"]) == "teacher.onnx policy + value from value.onnx"
        assert "value.onnx's WDL for the value" in (default / "README.md").read_text()
    else:
        assert row.notes[0] == "labels by teacher.onnx"
        assert "teacher network teacher.onnx (policy" in (default / "README.md").read_text()


def test_a_round_with_children_labels_and_trains_on_every_child_of_its_sampled_positions(default, monkeypatch,
                                                                                         tmp_path):
    """``--children N``: the round writes ``children/`` beside its positions, labels them as it labels the positions
    (here by a teacher, into ``children-teacher/``), trains on both and counts both in its ladder row; the plan keeps
    N, so a rerun on another machine makes the same children."""
    torch = pytest.importorskip("torch")
    import json
    from nets.training import data as fmt, ladder, round as rounds
    teacher = _small_round_with_a_teacher(monkeypatch, tmp_path)
    assert rounds.run_round(1, shards=2, workers=1, data_root=tmp_path / "data", runs_root=tmp_path / "runs",
                            stockfish=str(FAKE_SF), teacher=teacher, precision="float32", children=3)
    data = tmp_path / "data" / "round-001"
    assert len(fmt.shards(data / "children")) == 2 and len(fmt.shards(data / "children-teacher")) == 2
    assert json.loads((tmp_path / "rounds" / "round-001" / "plan.json").read_text())["children"] == 3
    counts = {kind: sum(len(fmt.load_shard(p)["wdl"]) for p in fmt.shards(data / kind))
              for kind in ("teacher", "children-teacher")}
    assert counts["children-teacher"] > 2 * 3 * 5
    saved = torch.load(tmp_path / "runs" / "round-001" / "checkpoint.pt", weights_only=False)
    assert saved["data"]["positions"] == sum(counts.values())
    row, = ladder.read(default / "ladder.json")
    assert row.positions_added == sum(counts.values())


def test_a_round_takes_a_run_trained_elsewhere(default, monkeypatch, tmp_path):
    """``--trained RUN`` (training done on a GPU machine, say): the round makes its data, trains nothing, and exports,
    gates and ships that run's net, with a ladder row that says how it was trained."""
    pytest.importorskip("torch")
    from nets.training import ladder, round as rounds, train as training
    monkeypatch.setattr(rounds, "GAMES_PER_SHARD", 2)
    monkeypatch.setattr(rounds, "shipped_net", lambda: None)
    monkeypatch.setattr(rounds, "base_net", lambda: None)
    data = tmp_path / "data" / "round-001"
    rounds.steps.make_positions(data / "positions", shards_count=2, seed=1, games_per_shard=2, nodes=50, multipv=2,
                                keep=0.8, random_plies=(0, 4), random_children=0.5, stockfish=str(FAKE_SF), workers=1)
    rounds.steps.make_labels(data / "positions", data / "labels", depth=2, multipv=2, stockfish=str(FAKE_SF),
                             workers=1)
    elsewhere = tmp_path / "gpu-run"
    training.train([data / "positions"], [data / "labels"], elsewhere, blocks=1, filters=8, se=True, epochs=1,
                   batch_size=32, lr=1e-3, weight_decay=1e-4, val_share=0.1, result_weight=0.0, eval_every=1000,
                   seed=1, threads=1, precision="bfloat16")
    monkeypatch.setattr(training, "train", lambda *a, **kw: pytest.fail("the round trained"))
    gates = []
    monkeypatch.setattr(rounds, "match", lambda candidate, options, folder, **kw: gates.append(candidate)
                        or (70, 20, 10))
    assert rounds.run_round(1, shards=2, workers=1, data_root=tmp_path / "data", runs_root=tmp_path / "runs",
                            stockfish=str(FAKE_SF), trained=elsewhere)
    gated, = gates   # the float net, or its int8 copy where that keeps the accuracy
    assert gated.parent == elsewhere and gated.name.startswith("arbor-r001") and (default / gated.name).exists()
    row, = ladder.read(default / "ladder.json")
    assert row.gate_passed and row.notes == ["labels at depth 6", "1x8", "1 epochs", "batches of 32", "bfloat16",
                                             "on this machine's CPU"]
    assert "1x8; 1 epochs; batches of 32; bfloat16; on this machine's CPU" in (default / "README.md").read_text()
    # Its history is the round's to keep; its checkpoint too while a match is left to play (the reference match and
    # the provenance of a later session, on a machine without this run, read it from nets/rounds/). This round, the
    # first to ship, is done: the checkpoint went to git's history.
    kept = tmp_path / "rounds" / "round-001"
    assert not (kept / "checkpoint.pt").exists()
    assert (kept / "history.json").read_text() == (elsewhere / "history.json").read_text()

# -- growing a net ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("blocks, filters", [(2, 8), (3, 8), (2, 12), (4, 16)])
def test_a_grown_net_computes_the_same_function(blocks, filters):
    torch = pytest.importorskip("torch")
    from nets.training.grow import grow
    old = trained_like_net(torch, blocks=2, filters=8)
    planes = torch.from_numpy(planes_of(random_games(24, seed=9)))
    new = grow(old, blocks, filters).eval()
    assert new.config["blocks"] == blocks and new.config["filters"] == filters
    with torch.no_grad():
        for a, b in zip(old(planes), new(planes)):
            assert torch.allclose(a, b, atol=1e-5), float((a - b).abs().max())
        if (blocks, filters) != (2, 8):   # the new weights are there and trainable, not a copy of the old net
            assert sum(p.numel() for p in new.parameters()) > sum(p.numel() for p in old.parameters())
    with pytest.raises(ValueError):
        grow(old, 1, 8)


def test_training_grows_the_shipped_net_and_the_engine_plays_it(tmp_path):
    """``train --init NET --grow``: the run starts from the shipped net grown to the asked shape; exported, the
    grown net evaluates every leaf as the shipped one does in the engine."""
    torch = pytest.importorskip("torch")
    from engine.evaluators.network import NetworkEvaluator
    from engine.params import Params
    from nets.training.export import export
    from nets.training.grow import grow
    from nets.training.train import train
    from nets.training.warmstart import load_onnx
    from test_network import _copy, _mixed_leaves
    from test_training import synthetic_shards
    synthetic_shards(tmp_path, 120, seed=4)
    planes = planes_of(random_games(64, seed=2))
    export(trained_like_net(torch, blocks=1, filters=8), tmp_path / "shipped.onnx", planes)
    export(grow(load_onnx(tmp_path / "shipped.onnx", planes), 3, 16).eval(), tmp_path / "grown.onnx", planes)
    leaves = {}
    for name in ("shipped", "grown"):
        leaves[name] = [_copy(leaf) for leaf in _mixed_leaves(12)]
        params = Params(nn_cache_size=0, network_precision="float")
        NetworkEvaluator(str(tmp_path / f"{name}.onnx"), params).evaluate(leaves[name])
    for a, b in zip(leaves["shipped"], leaves["grown"]):
        assert a.moves == b.moves and abs(a.value - b.value) < 1e-4
        assert max(abs(p - q) for p, q in zip(a.priors, b.priors)) < 1e-4
    common = dict(se=True, epochs=0.01, batch_size=16, lr=1e-9, weight_decay=0.0, val_share=0.2, result_weight=0.0,
                  eval_every=1000, seed=1, threads=1)
    checkpoint = train(tmp_path / "pos", tmp_path / "lab", tmp_path / "grown", init=tmp_path / "shipped.onnx",
                       grow=True, blocks=2, filters=12, **common)
    saved = torch.load(checkpoint, weights_only=False)
    assert saved["config"]["blocks"] == 2 and saved["config"]["filters"] == 12
    assert saved["data"]["grown_from"] == "1x8" and saved["data"]["init"] == "shipped.onnx"


def test_a_finished_round_leaves_its_checkpoint_and_failed_candidate_to_git_s_history(default, tmp_path):
    """Once a round is done (its gate failed, or its shipped net met the reference), its checkpoint and a candidate
    that did not ship leave the tree; the ladder names the commit that still holds them; its games are packed into one
    gzipped PGN a match. An unfinished round keeps everything."""
    import gzip
    import subprocess

    from nets.training import ladder, round as rounds
    repo = tmp_path
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    saved = tmp_path / "rounds" / "round-003"
    (saved / "gate").mkdir(parents=True)
    for name, content in (("checkpoint.pt", b"weights"), ("progress.json", b"{}"), ("arbor-r003.onnx", b"net"),
                          ("plan.json", b"{}"), ("history.json", b"[]")):
        (saved / name).write_bytes(content)
    for i in range(2):
        (saved / "gate" / f"chunk-00{i}.pgn").write_text(f'[Event "chunk {i}"]\n\n1. e4 e5 1-0\n')
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "round 3"], cwd=repo, check=True)
    head = subprocess.run(["git", "log", "-1", "--format=%h"], cwd=repo, capture_output=True, text=True).stdout.strip()
    row = ladder.Row(round=3, seed=3, net="arbor-r003.onnx", positions_added=10, positions_total=20,
                     init="arbor-r002.onnx", steps=80, train_hours=0.2,
                     gate="50-60-90, Elo -70.4 +/- 40.0 (200 games) vs shipped", gate_passed=True)
    ladder.write(default / "ladder.json", [row])
    old_repo = rounds.REPO
    rounds.REPO = repo
    try:
        assert not rounds.retire(3)   # shipped, its reference match not played yet: unfinished
        assert (saved / "checkpoint.pt").exists()
        row.gate_passed = False
        ladder.write(default / "ladder.json", [row])
        assert rounds.retire(3)
    finally:
        rounds.REPO = old_repo
    assert sorted(p.name for p in saved.iterdir()) == ["gate.pgn.gz", "history.json", "plan.json"]
    with gzip.open(saved / "gate.pgn.gz", "rt") as packed:
        assert packed.read().count("[Event") == 2
    assert ladder.read(default / "ladder.json")[0].retired == head
    assert f"checkpoint in history at `{head}`" in (default / "README.md").read_text()


def test_a_round_may_average_earlier_rounds_nets_instead_of_training(default, monkeypatch, tmp_path, capsys):
    """``--average-of``: no data and no training; the candidate is the average of the earlier rounds' nets, one
    checkpoint still in nets/rounds/, the other from the commit a retired round's ladder row names; its gate and
    ladder row follow as for a trained candidate."""
    import subprocess

    torch = pytest.importorskip("torch")
    from nets.training import ladder, round as rounds
    from nets.training.average import export_average
    from nets.training.export import load_net
    repo = tmp_path
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    monkeypatch.setattr(rounds, "REPO", repo)
    members = []
    for number, seed in ((24, 1), (25, 2)):
        torch.manual_seed(seed)
        net = trained_like_net(torch, blocks=1, filters=8)
        saved = rounds.ROUNDS_DIR / f"round-{number:03d}"
        saved.mkdir(parents=True)
        torch.save({"config": net.config, "model": net.state_dict(), "data": {"epochs": 1.0, "precision": "bfloat16"}},
                   saved / "checkpoint.pt")
        members.append(torch.load(saved / "checkpoint.pt", weights_only=False)["model"])
    export_average(rounds.ROUNDS_DIR / "round-024" / "checkpoint.pt", default / "arbor-r023.onnx")  # a 1x8 shipped
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "rounds"], cwd=repo, check=True)
    head = subprocess.run(["git", "log", "-1", "--format=%h"], cwd=repo, capture_output=True, text=True).stdout.strip()
    (rounds.ROUNDS_DIR / "round-024" / "checkpoint.pt").unlink()   # round 24 retired: its checkpoint in history
    rows = [ladder.Row(round=n, seed=n, net=f"arbor-r{n:03d}.onnx", positions_added=100, positions_total=total,
                       init="arbor-r023.onnx", steps=80, train_hours=0.2, gate="1-0-1 vs shipped", gate_passed=False,
                       retired=head if n == 24 else "") for n, total in ((23, 900), (24, 1000), (25, 1000))]
    rows[0].gate_passed = True
    ladder.write(default / "ladder.json", rows)
    monkeypatch.setattr(rounds, "shipped_net", lambda: default / "arbor-r023.onnx")
    gates = []
    monkeypatch.setattr(rounds, "match", lambda candidate, options, folder, **kw: gates.append(
        (candidate, options, kw["games"], kw["kept"])) or (30, 40, 30))
    common = dict(runs_root=tmp_path / "runs", data_root=tmp_path / "data", gate_games=400)
    with pytest.raises(SystemExit, match="at least two earlier rounds"):
        rounds.run_round(27, average_of=[24], **common)
    assert rounds.run_round(27, average_of=[25, 24], **common) is False
    out = capsys.readouterr().out
    assert "no positions and no training: the average of the nets of rounds 24 and 25 (a 1x8 like arbor-r023.onnx)" in out
    assert not (tmp_path / "data").exists()
    (candidate, options, games, kept), = gates
    assert candidate == tmp_path / "runs" / "round-027" / "arbor-r027.onnx" and games == 400
    assert options == [f"WeightsFile={default / 'arbor-r023.onnx'}"]
    assert kept == rounds.ROUNDS_DIR / "round-027" / "gate"
    soup, _ = load_net(tmp_path / "runs" / "round-027" / "checkpoint.pt")
    for key, value in soup.state_dict().items():
        expected = (members[0][key] + members[1][key]) / 2 if value.is_floating_point() else members[0][key]
        assert torch.equal(value, expected), key
    row = ladder.read(default / "ladder.json")[-1]
    assert row.round == 27 and not row.gate_passed and row.init == "arbor-r023.onnx" and row.steps == 0
    assert row.positions_added == 0 and row.positions_total == 1000
    assert row.notes == [f"no training: the average of the nets of rounds 24 (checkpoint at {head}) and 25", "1x8"]
    assert rounds.Plan.load(rounds.ROUNDS_DIR / "round-027" / "plan.json").average_of == [24, 25]
    rows[1].retired = ""
    ladder.write(default / "ladder.json", rows)
    with pytest.raises(SystemExit, match="no ladder row names the commit"):
        rounds.round_checkpoint(24, tmp_path / "elsewhere")


def test_an_averaged_net_ships_with_a_provenance_of_its_own(default, tmp_path):
    """An average has no data, no training and no validation history of its own: its provenance says what it is the
    average of (the round's ladder note, or the checkpoints' names without a round) instead of failing to read them."""
    torch = pytest.importorskip("torch")
    from nets.training import ladder, ship
    from nets.training.average import average, export_average
    run = tmp_path / "runs" / "round-027"
    members = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        net = trained_like_net(torch, blocks=1, filters=8)
        members.append(tmp_path / f"round-{23 + seed:03d}.pt")
        torch.save({"config": net.config, "model": net.state_dict(), "data": {"init": "arbor-r023.onnx"}},
                   members[-1])
    average(members, run / "checkpoint.pt")
    export_average(run / "checkpoint.pt", run / "arbor-r027.onnx")
    row = ladder.Row(round=27, seed=27, net="arbor-r027.onnx", positions_added=0, positions_total=1000,
                     init="arbor-r023.onnx", steps=0, train_hours=0.0, gate="95-81-64 vs shipped", gate_passed=True,
                     notes=["no training: the average of the nets of rounds 24 (checkpoint at ac9bf77) and 25", "1x8"])
    ship.ship(run / "arbor-r027.onnx", run, row=row)
    text = (default / "README.md").read_text()
    assert (default / "arbor-r027.onnx").exists() and "## `arbor-r027.onnx`" in text
    assert ("**Made by averaging, not training:** each weight, the batch norms' statistics too, is the mean of that "
            "weight in the nets of rounds 24 (checkpoint at ac9bf77) and 25;") in text
    assert "Validation at the end" not in text and "| 27 | 27 | `arbor-r027.onnx` |" in text
    ship.ship(run / "arbor-r027.onnx", run)   # by hand, no round: the checkpoints by name
    assert "the mean of that weight in 2 nets (round-024.pt, round-025.pt);" in (default / "README.md").read_text()
