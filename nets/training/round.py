"""One training round: the next generation of Arbor's net, made in one session and kept in git.

A round N runs, each step resumable (rerun the same command after an interruption):

1. **positions** ``data/round-NNN/positions``: fresh Stockfish self-play seeded by N, so no two rounds share
   data, with branches one random move off the game line; with ``--children N``, also every legal child of N game
   positions a shard (``data/round-NNN/children``, ``children.py``), labelled like the positions;
2. **labels** ``data/round-NNN/labels``: Stockfish depth 6, MultiPV 4 (soft policy targets);
3. **train** ``runs/round-NNN``: from the shipped net in ``nets/default/`` (read back from its ONNX file;
   while none has shipped, from the last round's candidate kept in ``nets/default/base/``; the very first round
   from scratch), on this round's data plus the earlier rounds' data the plan names (``--window``), regenerated
   from their own kept plans where this disk lacks it;
4. **export** ``runs/round-NNN/arbor-rNNN.onnx`` (int8 only if it keeps the float net's accuracy);
5. **gate** against the shipped net (the first round: the heuristic) at 10 s + 0.1 s, in chunks of games
   so an interruption loses at most one chunk. It passes when the SPRT of H0: 0 Elo against H1: +50 accepts
   H1 after at least ``--gate-min-games``, or, undecided after ``--gate-games``, when the 95% interval's
   lower bound is above 0;
6. **ship** at once when it passes: the net into ``nets/default/``, its provenance and a ladder row, and with
   ``--commit`` a git commit of ``nets/default/`` alone, before anything else runs;
7. **replaced, reference**: a shipped generation after the first plays 200 games against the net it replaced (its
   gain over the last default, from round 27 on) and then 200 against the fixed reference net
   ``nets/reference/arbor-r007.onnx`` (the ladder's common yardstick), each one game at a time, each engine on a core
   of its own (``taskset``; the cores swap every chunk), in chunks kept and committed like the gate's: measured the way
   the gate cannot (two games at once on two cores, stopped by an SPRT, it overstates what it passes about threefold,
   docs/training.md "Round 17"). The first round's gate, against the heuristic, is its yardstick.

A round that does not finish in one session resumes on the next machine: its plan and, whenever training stops
for the session's end (``--session-hours``), its checkpoint go to ``nets/rounds/round-NNN/`` (with ``--commit``, a
commit of that folder alone). The next session's rerun regenerates the data from the round's seed (positions and
labels are deterministic; the checkpoint's fingerprint of the positions must match) and trains on from the step it
stopped at. Once trained, the exported candidate goes there too (``candidate.json`` records what its ladder row needs
of the data), and so does each chunk of gate games played (``gate/``): a gate the session's end interrupts resumes on
any machine without making the data again, playing only the missing chunks. A shipped net's matches keep their chunks
the same way (``replaced/``, ``reference/``).

With ``--average-of A B ...`` the round makes no data and trains nothing: its candidate is the average of those
earlier rounds' nets (``average.py``), each round's checkpoint taken from ``nets/rounds/`` or, once the round retired,
from the commit its ladder row names; the gate, the verdict and the ladder row follow as for a trained candidate.

With ``--teacher NET`` a network labels the positions instead of Stockfish (``teacher.py``): MeanGirl-8 labels
thousands of positions a second a core where Stockfish at depth 6 labels hundreds.

A round that fails its gate ships nothing but still records its row (``not shipped``); while no net has
shipped, its candidate is kept in ``nets/default/base/`` as the next round's start. The plan
(``plan.py``) sizes the data to the time budget (``--hours``) from this machine's measured rates, printed before
anything runs.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Optional

from engine.tools.elo import elo_difference, format_elo, score, sprt_status

from . import ladder, steps
from .data import shards
from .plan import (BATCH, BLOCKS, FILTERS, GAME_SECONDS, LABEL_DEPTH, PINNED_GAME_SECONDS, POSITIONS_PER_SHARD,
                   REFERENCE_GAMES, YARDSTICK_GAME_SECONDS, YARDSTICK_GAMES, Plan, make_plan)

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DIR = REPO / "nets" / "default"
LADDER = DEFAULT_DIR / "ladder.json"
ROUNDS_DIR = REPO / "nets" / "rounds"   # committed: each round's plan and latest checkpoint, to resume anywhere

# The recipe: what the measurements in docs/training.md found (soft MultiPV-4 targets and branches beat one-hot best
# moves on game positions alone). Its sizes and this machine's rates are the plan's (``plan.py``).
GAMES_PER_SHARD = 40
SELFPLAY_NODES = 200
SELFPLAY_MULTIPV = 4      # candidate moves each self-play move is drawn from
KEEP = 0.8
RANDOM_PLIES = (0, 4)
RANDOM_CHILDREN = 0.5
LABEL_MULTIPV = 4
POLICY_TEMPERATURE_CP = 50.0
EVAL_EVERY = 2000          # training steps between validation and checkpoint
WEIGHT_DECAY = 1e-4
VAL_SHARE = 0.03           # of the games, held out whole for validation

TC = "10+0.1"
GATE_CHUNK = 20                 # games per resumable piece of a match
GATE_SPRT = (0.0, 50.0)
# The yardstick that is not Arbor: a candidate that passed its gate plays Stockfish 15.1 at ladder.STOCKFISH_ELO
# and ships only if it scores more there than the net it would replace. A gain measured only against Arbor may be a
# gain against Arbor's own blind spots.
YARDSTICK_SEED = 9411           # every net plays the same openings in the same order
YARDSTICK_CHUNKS = math.ceil(YARDSTICK_GAMES / GATE_CHUNK)   # each played by both nets


def shipped_net(default_dir: Path = DEFAULT_DIR) -> Optional[Path]:
    """The shipped generation's float ONNX file: ``float/`` holds it when the shipped file is int8."""
    for folder in (default_dir / "float", default_dir):
        found = sorted(folder.glob("*.onnx"))
        if found:
            return found[0]
    return None


def net_shape(net: Path) -> tuple[int, int]:
    """(blocks, filters) of a net this pipeline exported."""
    from .warmstart import architecture, onnx_weights
    config = architecture(onnx_weights(net))
    return config["blocks"], config["filters"]


def base_net(default_dir: Path = DEFAULT_DIR) -> Optional[Path]:
    """The latest candidate, kept in ``base/`` while no net has shipped (``ship``): until a round passes the
    first gate, each round starts from the one before, so what the rounds learned adds up."""
    found = sorted((default_dir / "base").glob("*.onnx"))
    return found[-1] if found else None


def _tally(pgns: list[Path]) -> tuple[int, int, int]:
    from .gate import tally
    return _sum([tally(p) for p in pgns])


def match(candidate: Path, opponent: list[str], folder: Path, *, games: int, min_games: int, seed: int,
          concurrency: int, sprt: Optional[tuple[float, float]], kept: Optional[Path] = None,
          deadline: float = 0.0, do_commit: bool = False, name: str = "shipped",
          pinned: bool = False, engine: Optional[list[str]] = None,
          game_seconds: float = 0.0, only_chunk: Optional[int] = None) -> Optional[tuple[int, int, int]]:
    """Play ``candidate`` against ``opponent`` (UCI options; called ``name`` in the PGN; ``engine``: the opponent's
    command, by default Arbor's; ``game_seconds``: a game's wall time, by default Arbor's) in chunks of ``GATE_CHUNK``
    games, each a PGN in ``folder`` written whole, so a rerun plays only the missing chunks. Stops early once the
    SPRT is decided after ``min_games``. Returns the candidate's W-D-L, or None when ``deadline`` (a
    ``time.time()``) came before the match ended: no chunk starts that would not end by it. ``kept``: a folder (in
    ``nets/rounds/``) that gets a copy of each chunk played, committed with ``do_commit``, and gives its chunks back to
    a rerun on another machine. ``pinned``:
    one game at a time (``concurrency`` is ignored), each engine on a core of its own, the cores swapped every
    chunk so that neither net keeps the faster core. ``only_chunk``: that chunk of the match alone (its W-D-L)."""
    from .gate import ARBOR, pinned_engines, play
    folder.mkdir(parents=True, exist_ok=True)
    if kept is not None and kept.is_dir():
        for pgn in kept.glob("chunk-*.pgn"):
            if not (folder / pgn.name).exists():
                shutil.copyfile(pgn, folder / pgn.name)
    done: list[Path] = []
    for chunk in range(math.ceil(games / GATE_CHUNK)) if only_chunk is None else [only_chunk]:
        pgn = folder / f"chunk-{chunk:03d}.pgn"
        played = not pgn.exists()
        if played:
            chunk_games = min(GATE_CHUNK, games - chunk * GATE_CHUNK)
            # GAME_SECONDS is a game's share of the wall time with two at once
            per_game = game_seconds or (PINNED_GAME_SECONDS if pinned else GAME_SECONDS * 2 / concurrency)
            if deadline and time.time() + chunk_games * per_game > deadline:
                print(f"{folder.name}: the session's time is up after {sum(_tally(done))} games; rerun the same "
                      "command to play the rest", flush=True)
                return None
            tmp = pgn.with_name(pgn.name + ".tmp")
            engines = pinned_engines(swap=chunk % 2 == 1, opponent=engine) if pinned else None
            if engines is None and engine is not None:
                engines = (ARBOR, engine)
            play(candidate, opponent, name, games=chunk_games, tc=TC,
                 concurrency=1 if pinned else concurrency, openings=REPO / "tests" / "data" / "openings.pgn",
                 pgn=tmp, seed=seed * 1000 + chunk, engines=engines)
            tmp.replace(pgn)
        done.append(pgn)
        wdl = _tally(done)
        if played and kept is not None:
            kept.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(pgn, kept / pgn.name)
            if do_commit:
                where = kept.relative_to(ROUNDS_DIR) if kept.is_relative_to(ROUNDS_DIR) else kept
                commit([kept], f"nets/rounds: {where}'s games, chunk {chunk} ({describe(wdl)})")
        elo, margin = elo_difference(*wdl)
        print(f"{folder.name}: {sum(wdl)} games, W-D-L {wdl[0]}-{wdl[1]}-{wdl[2]}, Elo {format_elo(elo, margin)}",
              flush=True)
        if sprt and sum(wdl) >= min_games and sprt_status(*wdl, *sprt).decision is not None:
            break
    return _tally(done)


def passed(wdl: tuple[int, int, int], sprt: tuple[float, float]) -> bool:
    decision = sprt_status(*wdl, *sprt).decision
    if decision is not None:
        return decision == "H1"
    elo, margin = elo_difference(*wdl)
    return elo - margin > 0


def describe(wdl: tuple[int, int, int]) -> str:
    """``W-D-L, Elo +x +/- y (N games)``: the candidate's result with its 95% interval."""
    elo, margin = elo_difference(*wdl)
    return f"{wdl[0]}-{wdl[1]}-{wdl[2]}, Elo {format_elo(elo, margin)} ({sum(wdl)} games)"


def commit(paths: list[Path], message: str) -> None:
    """Commit ``paths`` alone (other work in the tree stays uncommitted); nothing to commit is no error."""
    subprocess.run(["git", "add", "-A", "--", *map(str, paths)], cwd=REPO, check=True)
    staged = subprocess.run(["git", "diff", "--cached", "--quiet", "--", *map(str, paths)], cwd=REPO)
    if staged.returncode:
        subprocess.run(["git", "commit", "-q", "-m", message, "--", *map(str, paths)], cwd=REPO, check=True)


def run_round(number: int, *, hours: float = 2.5, shards: int = 0, window: int = 2, gate_games: int = 200,
              gate_min_games: int = 100, concurrency: int = 2, workers: int = 0, do_commit: bool = False,
              data_root: Path = REPO / "data", runs_root: Path = REPO / "runs",
              stockfish: Optional[str] = None, epochs: Optional[float] = None, lr: Optional[float] = None,
              shape: Optional[tuple[int, int]] = None, trained: Optional[Path] = None,
              label_depth: int = LABEL_DEPTH, teacher: Optional[Path] = None, draws: Optional[Path] = None,
              batch_size: int = 0, precision: str = "auto", session_hours: float = 0.0,
              teacher_value: Optional[Path] = None, train_only: str = "all",
              tower_lr_scale: float = 1.0, children: int = 0, q_mse_weight: float = 0.0,
              result_weight: float = 0.0, new_data: bool = True, positions_of: int = 0,
              ending_repeats: int = 1, average_of: Optional[list[int]] = None,
              decided_keep: float = 1.0) -> Optional[bool]:
    """Run (or resume) round ``number``; returns whether its net shipped, or None when training, the gate or the
    reference match stopped for the session's end (``session_hours`` after the start; rerun to resume, on this machine
    or, with ``do_commit``, on any other). ``shape`` (blocks, filters): grow the net the round starts from to that shape
    first, keeping its function (``grow.py``). ``trained``: a run folder whose training is done (``train`` elsewhere, on
    a GPU machine say, on this round's data): it replaces the round's own training, and its export, gate and ladder row
    go on from there. ``label_depth``: Stockfish's depth for this round's labels (earlier rounds' keep theirs);
    ``teacher``: a net labels this round's positions instead (``draws``: the WDL net for a value-only teacher's draw
    share; by default the net the round starts from; ``teacher_value``: a WDL net whose value replaces the teacher's,
    which then teaches the policy only); ``train_only``: "policy" trains the policy head alone, the starting net's tower
    and value frozen (its value kept exactly); ``tower_lr_scale``: the stem and tower learn at that share of the heads'
    rate; ``children``: game positions a shard whose every legal child is labelled and trained on too; ``q_mse_weight``:
    the weight of Q's squared error in the training loss; ``result_weight``: the game result's share of the value
    target (lc0 trains on results alone; a share of them teaches what Stockfish's shallow search cannot see);
    ``ending_repeats``: each ending (``dataset.ENDING_PIECES``) trained that many times an epoch, nearer the endings'
    share of real games than self-play's; ``decided_keep``: the share of the decided positions (``dataset.DECIDED_Q``)
    trained on, the balanced ones nearer their share of real games;
    ``new_data`` False: the round makes no positions of its own and trains on its window's earlier rounds' data alone
    (a new recipe, a larger net say, tried on data at hand, where
    a fresh round's data costs a session's first 75 minutes); ``positions_of``: the round labels that earlier round's
    positions again (its seed; the shards already on disk are linked, not replayed), with a new labeller, deeper say,
    where self-play would cost the time the labels need; a window holding both rounds trains those positions once,
    on the later round's labels (``window_pairs``); ``average_of``: no data and no training, the candidate the average
    of those earlier rounds' nets (``_averaged_candidate``). A round's plan, once made, is kept in
    ``nets/rounds/round-NNN/`` and reused by every rerun, whatever the command line says."""
    deadline = time.time() + session_hours * 3600 if session_hours else 0.0
    recorded = next((r for r in ladder.read(LADDER) if r.round == number), None)
    if recorded is not None:   # the gate was played and its verdict committed: only the reference match may be left
        return _retired(number, _finish_shipped(recorded, runs_root / f"round-{number:03d}", deadline, do_commit),
                        do_commit)
    shipped = shipped_net()
    init = shipped or base_net()
    name = f"round-{number:03d}"
    saved = ROUNDS_DIR / name
    if (saved / "plan.json").exists():
        plan = Plan.load(saved / "plan.json")
        print(f"round {number}: resuming the plan in {saved / 'plan.json'}", flush=True)
        earlier_plans = _earlier_plans(plan)
    else:
        # Only a round whose plan is kept can be made again on the next machine, so only such rounds join the window.
        regenerable = [n for n in range(max(1, number - window + 1), number)
                       if (ROUNDS_DIR / f"round-{n:03d}" / "plan.json").exists()]
        from .teacher import value_only
        from .train import resolve_precision
        if teacher is not None and draws is None and teacher_value is None and value_only(teacher):
            draws = init
        source = ROUNDS_DIR / f"round-{positions_of:03d}" / "plan.json"
        if positions_of and source.exists():   # a round that itself labelled another's positions names that one
            positions_of = Plan.load(source).seed
        plan = make_plan(number, hours, first=init is None, shards=shards, gate_games=gate_games, epochs=epochs,
                         lr=lr, shape=shape or (net_shape(init) if init else (BLOCKS, FILTERS)),
                         earlier_positions=sum(Plan.load(ROUNDS_DIR / f"round-{n:03d}" / "plan.json").shards
                                               for n in regenerable) * POSITIONS_PER_SHARD,
                         earlier_rounds=regenerable,
                         label_depth=label_depth, teacher=_portable(teacher), draws=_portable(draws),
                         batch_size=batch_size or BATCH, precision=resolve_precision(precision, "cpu"),
                         value=_portable(teacher_value), train_only=train_only, tower_lr_scale=tower_lr_scale,
                         children=children, q_mse_weight=q_mse_weight, result_weight=result_weight,
                         new_data=new_data, positions_round=positions_of, ending_repeats=ending_repeats,
                         average_of=average_of, decided_keep=decided_keep)
        earlier_plans = _earlier_plans(plan)
        plan.save(saved / "plan.json")
        if do_commit:
            commit([saved], f"nets/rounds: round {number}'s plan, kept so that any machine resumes the same round")
    labeller = plan.labeller()
    print(f"round {number}: {plan.summary(init.name if init else 'scratch')}", flush=True)
    run = runs_root / name
    playing = _kept_candidate(saved, run) if trained is None else None
    if playing is not None:
        print(f"round {number}: training is done and its candidate kept in {saved}: no data to make, on to the gate",
              flush=True)
    elif plan.average_of:
        playing = _averaged_candidate(plan, run, saved, do_commit)
    else:
        playing = _trained_candidate(plan, earlier_plans, data_root, run, saved, trained=trained, init=init,
                                     stockfish=stockfish, workers=workers, deadline=deadline, do_commit=do_commit)
        if playing is None:
            return None
    run = playing.parent   # a run trained elsewhere (``trained``) gates and ships from its own folder

    if shipped is None:
        opponent, options, opponent_name = "heuristic", ["Evaluator=heuristic"], "heuristic"
    else:
        opponent, options, opponent_name = f"shipped {shipped.name}", [f"WeightsFile={shipped}"], "shipped"
    wdl = match(playing, options, run / "gate", games=plan.gate_games, min_games=gate_min_games, seed=number,
                concurrency=concurrency, sprt=GATE_SPRT, kept=saved / "gate", deadline=deadline, do_commit=do_commit,
                name=opponent_name)
    if wdl is None:
        return None
    ok = passed(wdl, GATE_SPRT)
    against_stockfish = ""
    if ok and shipped is not None:
        verdict = _stockfish_verdict(playing, run, saved, deadline, do_commit, stockfish)
        if verdict is None:
            return None
        ok, against_stockfish = verdict
    record = _candidate_record(saved)
    added = record["positions_added"]
    total_seen = _positions_before(init) + added
    data_note = labeller if plan.shards else f"no new positions: the data of rounds " \
                                              f"{', '.join(map(str, plan.earlier_rounds))}"
    if plan.average_of:
        members = [r for r in ladder.read(LADDER) if r.round in plan.average_of]
        total_seen = max([r.positions_total for r in members], default=total_seen)
        data_note = ladder.AVERAGE_NOTE + "the nets of rounds " + " and ".join(
            f"{r.round}" + (f" (checkpoint at {r.retired})" if r.retired else "") for r in members)
    row = ladder.Row(round=number, seed=plan.seed, net=playing.name, positions_added=added,
                     positions_total=total_seen, init=init.name if init else None, steps=_steps(run),
                     train_hours=round(_train_seconds(run) / 3600, 2), gate=f"{describe(wdl)} vs {opponent}, {TC}",
                     gate_passed=ok, heuristic=describe(wdl) if shipped is None else "", stockfish=against_stockfish,
                     notes=[data_note, *_relabelled_notes(plan), *_training_notes(run)])
    print(f"gate {'PASSED' if ok else 'failed'}: {row.gate}"
          + (f"; against Stockfish {ladder.STOCKFISH_ELO}: {against_stockfish}" if against_stockfish else ""),
          flush=True)
    from .ship import ship
    float_net = run / record["float"]
    ship(playing, run, float_net=float_net if float_net != playing else None, row=row)
    if do_commit:
        what = (f"ship round {number}'s net {playing.name}" if ok else f"round {number} failed its gate"
                if not against_stockfish else f"round {number}'s net gained against Arbor alone, not shipped")
        commit([DEFAULT_DIR], f"nets/default: {what} ({row.gate}); {added:,} new positions, seed {plan.seed}")
    return _retired(number, _finish_shipped(row, run, deadline, do_commit), do_commit)


def make_data(plan: Plan, data: Path, *, stockfish: Optional[str] = None, workers: int = 0) -> None:
    """Round ``plan.round``'s positions (and children) and their labels in ``data``. Shards already there are kept,
    so a rerun carries on; the data is deterministic in the plan, so a machine without it makes the same again."""
    sources = {"stockfish": stockfish, "workers": workers}
    if plan.positions_round:
        _link_positions(data.parent / f"round-{plan.positions_round:03d}" / "positions", data / "positions",
                        plan.shards)
    steps.make_positions(data / "positions", shards_count=plan.shards, seed=plan.seed,
                         games_per_shard=GAMES_PER_SHARD, nodes=SELFPLAY_NODES, multipv=SELFPLAY_MULTIPV, keep=KEEP,
                         random_plies=RANDOM_PLIES, random_children=RANDOM_CHILDREN, **sources)
    if plan.children:
        steps.make_children(data / "positions", data / "children", parents=plan.children, seed=plan.seed,
                            workers=workers)
    for kind in ("positions", "children") if plan.children else ("positions",):
        if plan.teacher:
            steps.make_teacher_labels(data / kind, data / LABELS[kind][0], net=REPO / plan.teacher,
                                      draws=REPO / plan.draws if plan.draws else None, workers=workers,
                                      value=REPO / plan.value if plan.value else None)
        else:
            steps.make_labels(data / kind, data / LABELS[kind][1], depth=plan.label_depth, multipv=LABEL_MULTIPV,
                              **sources)


def relabelled(plans: list[Plan]) -> dict[int, dict[str, int]]:
    """The shards of each round in ``plans`` (in window order) that a later round there labelled again
    (``--positions-of``: the same seed, the same positions): round number -> {shard name: the latest such round}."""
    from .data import shard_name
    again: dict[int, dict[str, int]] = {}
    for i, earlier in enumerate(plans):
        covered = {shard_name(k): later.round for later in plans[i + 1:] if later.seed == earlier.seed
                   for k in range(min(later.shards, earlier.shards))}
        if covered:
            again[earlier.round] = covered
    return again


def window_pairs(window: list[tuple[Plan, Path]], views: Path) -> list[tuple[Path, Path]]:
    """The (positions, labels) folder pairs a round trains on, its window's rounds and its own, every position once:
    a shard that a later round labelled again is trained on with the later round's labels (and children) alone, the
    deeper teacher being why a round labels positions again; the earlier round's other shards are read through
    folders of links in ``views``, one for each of its labels folders."""
    again = relabelled([plan for plan, _ in window])
    pairs = []
    for plan, folder in window:
        dropped = again.get(plan.round, {})
        for positions, labels in data_pairs(folder):
            if dropped:
                kept = [path for path in shards(labels) if path.name not in dropped]
                if not kept:
                    continue
                view = views / f"round-{plan.round:03d}-{labels.name}"
                shutil.rmtree(view, ignore_errors=True)
                view.mkdir(parents=True)
                for path in kept:
                    _link(path, view / path.name)
                labels = view
            pairs.append((positions, labels))
        if dropped:
            print(f"round {plan.round}: {len(dropped)} of its shards were labelled again by a later round in the "
                  f"window and are trained on with those labels alone; its other shards' labels: {views}",
                  flush=True)
    return pairs


def _link_positions(source: Path, into: Path, shards_count: int) -> None:
    """Hard-link (else copy) the first ``shards_count`` shards of another round's positions that this disk holds, so
    that ``make_positions`` replays only the missing ones: the same seed makes the same shards."""
    from .data import shard_name
    into.mkdir(parents=True, exist_ok=True)
    for i in range(shards_count):
        there, here = source / shard_name(i), into / shard_name(i)
        if there.exists() and not here.exists():
            _link(there, here)


def _link(there: Path, here: Path) -> None:
    """A hard link (a copy where the disk allows none): the same shard under another round's folder, no space spent."""
    try:
        os.link(there, here)
    except OSError:
        shutil.copyfile(there, here)


def _trained_candidate(plan: Plan, earlier_plans: list[Plan], data_root: Path, run: Path, saved: Path, *,
                       trained: Optional[Path], init: Optional[Path], stockfish: Optional[str], workers: int,
                       deadline: float, do_commit: bool) -> Optional[Path]:
    """Make the round's data, train (or take ``trained``), export and keep the candidate in ``saved``; the net the
    gate plays (int8 when it kept its accuracy), or None when training stopped for the session's end."""
    number = plan.round
    data = data_root / f"round-{number:03d}"
    if plan.shards:
        make_data(plan, data, stockfish=stockfish, workers=workers)
    earlier = [data_root / f"round-{p.round:03d}" for p in earlier_plans]
    for earlier_plan, folder in zip(earlier_plans, earlier):
        if shards_of(folder) < earlier_plan.shards:
            print(f"round {number} trains on round {earlier_plan.round}'s data too: making what this disk lacks of "
                  f"it from that round's plan", flush=True)
        make_data(earlier_plan, folder, stockfish=stockfish, workers=workers)
    window = list(zip(earlier_plans, earlier)) + ([(plan, data)] if plan.shards else [])
    pairs = window_pairs(window, data / "window")
    positions, labels = [p for p, _ in pairs], [lab for _, lab in pairs]
    if trained is not None:
        run = trained
        if not (run / "checkpoint.pt").exists():
            raise SystemExit(f"{run} holds no checkpoint.pt: train there first")
        print(f"training: {run}'s, done elsewhere", flush=True)
        # Kept as the round's own training would be: the ladder row and the provenance read it after this disk is gone.
        keep_checkpoint(run, saved, number, do_commit)
    else:
        started = time.time()
        from .parallel import default_workers
        from .train import finished, train
        if not (run / "checkpoint.pt").exists() and (saved / "checkpoint.pt").exists():
            _restore(saved, run, ["checkpoint.pt", "history.json"])
            print(f"training resumes from {saved / 'checkpoint.pt'}", flush=True)
        blocks, filters = plan.shape
        train(positions, labels, run, blocks=blocks, filters=filters, se=True, epochs=plan.epochs,
              batch_size=plan.batch_size, lr=plan.lr, weight_decay=WEIGHT_DECAY, val_share=VAL_SHARE,
              result_weight=plan.result_weight, policy_temperature_cp=POLICY_TEMPERATURE_CP, eval_every=EVAL_EVERY,
              seed=1, threads=default_workers(), init=init, grow=bool(init and plan.shape != net_shape(init)),
              precision=plan.precision, deadline=deadline, repeats=plan.repeats, train_only=plan.train_only,
              tower_lr_scale=plan.tower_lr_scale, q_mse_weight=plan.q_mse_weight,
              ending_repeats=plan.ending_repeats, decided_keep=plan.decided_keep)
        print(f"training took {time.time() - started:.0f} s this time", flush=True)
        keep_checkpoint(run, saved, number, do_commit)
        if not finished(run / "checkpoint.pt"):
            return None
    candidate = run / f"arbor-r{number:03d}.onnx"
    checkpoint = run / "checkpoint.pt"
    if not candidate.exists() or candidate.stat().st_mtime < checkpoint.stat().st_mtime:
        steps.export_net(checkpoint, candidate, positions, labels, int8=True)
    int8 = candidate.with_name(candidate.stem + "-int8.onnx")
    playing = int8 if int8.exists() else candidate
    keep_candidate(saved, playing, candidate, _positions_added(data), do_commit)
    return playing


def _averaged_candidate(plan: Plan, run: Path, saved: Path, do_commit: bool) -> Path:
    """The uniform average of the nets of rounds ``plan.average_of`` (``average.py``), exported and kept in ``saved``
    with its checkpoint, as a trained candidate is. Float only: without the rounds' data there are no validation
    positions to check an 8-bit copy on (``NetworkPrecision`` quantizes at load where the CPU gains by it)."""
    from .average import average, export_average
    members = [round_checkpoint(n, run / "members") for n in plan.average_of]
    average(members, run / "checkpoint.pt")
    candidate = run / f"arbor-r{plan.round:03d}.onnx"
    diff = export_average(run / "checkpoint.pt", candidate)
    print(f"round {plan.round}: {candidate.name}, the average of the nets of rounds "
          f"{' and '.join(map(str, plan.average_of))}; onnxruntime vs PyTorch max |diff| {diff:.2e}", flush=True)
    saved.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(run / "checkpoint.pt", saved / "checkpoint.pt")   # the ladder row's notes read it on any machine
    keep_candidate(saved, candidate, candidate, 0, do_commit)
    return candidate


def round_checkpoint(number: int, into: Path) -> Path:
    """Round ``number``'s trained checkpoint: the one in ``nets/rounds/`` while the round is unfinished, else a copy in
    ``into`` from the commit its ladder row names (``retire``)."""
    kept = ROUNDS_DIR / f"round-{number:03d}" / "checkpoint.pt"
    if kept.exists():
        return kept
    row = next((r for r in ladder.read(LADDER) if r.round == number), None)
    if row is None or not row.retired:
        raise SystemExit(f"round {number}'s checkpoint is not in {kept.parent}, and no ladder row names the commit "
                         "that holds it")
    out = into / f"round-{number:03d}.pt"
    if not out.exists():
        shown = subprocess.run(["git", "show", f"{row.retired}:{kept.relative_to(REPO).as_posix()}"], cwd=REPO,
                               capture_output=True)
        if shown.returncode:
            raise SystemExit(f"round {number}'s checkpoint is not at commit {row.retired} in this clone (a shallow "
                             f"clone lacks it: git fetch --unshallow): {shown.stderr.decode().strip()}")
        into.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_bytes(shown.stdout)
        os.replace(tmp, out)
    return out


def keep_candidate(saved: Path, playing: Path, float_net: Path, positions_added: int, do_commit: bool) -> None:
    """Keep the exported candidate (and its float original) in ``saved`` with what its ladder row needs of the data,
    so that a gate the session's end cuts short resumes on any machine without making the data again."""
    import json
    saved.mkdir(parents=True, exist_ok=True)
    for net in {playing, float_net}:
        shutil.copyfile(net, saved / net.name)
    (saved / "candidate.json").write_text(json.dumps({"net": playing.name, "float": float_net.name,
                                                      "positions_added": positions_added}) + "\n")
    if do_commit:
        commit([saved], f"nets/rounds: {saved.name}'s candidate {playing.name}, kept so that its gate resumes on "
                        "any machine without the data")


def _candidate_record(saved: Path) -> dict:
    """What ``keep_candidate`` recorded in ``saved`` ({} when the round has no candidate yet)."""
    import json
    path = saved / "candidate.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _kept_candidate(saved: Path, run: Path) -> Optional[Path]:
    """The candidate kept in ``saved``, brought into ``run`` with its checkpoint and history (which the ladder row and
    the provenance read); None when the round has not exported one yet."""
    record = _candidate_record(saved)
    if not record:
        return None
    _restore(saved, run, ["checkpoint.pt", "history.json", record["net"], record["float"]])
    return run / record["net"]


def _restore(saved: Path, run: Path, names: list[str]) -> None:
    """Copy into ``run`` what it lacks of ``names`` from ``saved``: a new machine's run folder from what git keeps."""
    run.mkdir(parents=True, exist_ok=True)
    for name in names:
        if not (run / name).exists() and (saved / name).exists():
            shutil.copyfile(saved / name, run / name)


def _earlier_plans(plan: Plan) -> list[Plan]:
    """The kept plans of the earlier rounds ``plan`` trains on; a round that cannot say which rounds its
    ``earlier_positions`` come from, or whose earlier plans do not add up to them, is refused rather than trained on
    other data than it planned."""
    if plan.earlier_positions and not plan.earlier_rounds:
        raise SystemExit(f"round {plan.round}'s plan trains on {plan.earlier_positions:,} earlier positions but does "
                         f"not name their rounds: add \"earlier_rounds\" to {ROUNDS_DIR / f'round-{plan.round:03d}'}"
                         "/plan.json")
    plans = []
    for n in plan.earlier_rounds:
        kept = ROUNDS_DIR / f"round-{n:03d}" / "plan.json"
        if not kept.exists():
            raise SystemExit(f"round {plan.round} trains on round {n}'s data, whose plan ({kept}) is not in this "
                             "checkout to regenerate it from")
        plans.append(Plan.load(kept))
    planned = sum(p.shards for p in plans) * POSITIONS_PER_SHARD
    if planned != plan.earlier_positions:
        raise SystemExit(f"round {plan.round}'s plan trains on {plan.earlier_positions:,} earlier positions, but "
                         f"rounds {plan.earlier_rounds} planned {planned:,}")
    return plans


def _finish_shipped(row: ladder.Row, run: Path, deadline: float, do_commit: bool) -> Optional[bool]:
    """A shipped generation after the first plays, pinned, the net it replaced (its gain over the last default,
    measured the way the gate cannot) and then the reference net (``ladder.REFERENCE``, the ladder's common
    yardstick). Returns whether the round shipped, or None when ``deadline`` cut a match short (a rerun, here or on
    another machine with ``do_commit``, plays only the chunks still missing)."""
    first = "vs heuristic" in row.gate
    reference = ladder.REFERENCE
    if not row.gate_passed or first or row.reference or Path(row.net).stem.removesuffix("-int8") == reference.stem:
        return row.gate_passed
    if not reference.is_file():   # Arbor would fall back to its heuristic and the ladder would record that
        raise SystemExit(f"the reference net {reference} is missing: check it out from git before rerunning")
    # On a machine without the run: its checkpoint and history from nets/rounds/, the net from where it shipped (or,
    # once a later generation replaced it there, from the candidate its round kept). ``run`` may be a folder trained
    # elsewhere (``--trained``): what is kept goes by the round's name all the same.
    from . import ship as shipping
    from .gate import pinned_engines
    saved = ROUNDS_DIR / f"round-{row.round:03d}"
    current = (shipping.DEFAULT_DIR / row.net).exists()
    for folder in (saved, shipping.DEFAULT_DIR, shipping.DEFAULT_DIR / "float"):
        _restore(folder, run, ["checkpoint.pt", "history.json", row.net, row.net.replace("-int8", "")])
    playing = run / row.net
    if not playing.exists():
        raise SystemExit(f"round {row.round}'s net {row.net} is neither in {run}, {saved} nor "
                         f"{shipping.DEFAULT_DIR}: it cannot play {reference.stem}")
    pinned = pinned_engines(swap=False) is not None
    if not pinned:
        print(f"round {row.round}: this machine cannot give each engine a core of its own (fewer than two cores, or "
              "no taskset): its matches are played one game at a time, unpinned, and the ladder says so", flush=True)
    how = "" if pinned else ", unpinned"

    def play(opponent: Path, kind: str, seed: int) -> Optional[tuple[int, int, int]]:
        return match(playing, [f"WeightsFile={opponent}"], run / kind, games=REFERENCE_GAMES,
                     min_games=REFERENCE_GAMES, seed=seed, concurrency=1, sprt=None, pinned=True,
                     kept=saved / kind, deadline=deadline, do_commit=do_commit, name=opponent.stem)

    def record(opponent: str, result: str) -> None:
        if current:   # the provenance beside the shipped net gets the figure too
            float_net = run / row.net.replace("-int8", "") if row.net.endswith("-int8.onnx") else None
            shipping.ship(playing, run, float_net=float_net, row=row)
        else:
            shipping.record(row)
        if do_commit:
            commit([DEFAULT_DIR], f"nets/default: round {row.round}'s net against {opponent}, one core each: {result}")

    replaced = None if row.replaced else _replaced_net(row)
    if replaced is not None:
        wdl = play(replaced, "replaced", row.round + 800)
        if wdl is None:
            return None
        row.replaced = f"{describe(wdl)} vs {replaced.name}{how}"
        record(f"{replaced.stem}, the net it replaced", row.replaced)
    wdl = play(reference, "reference", row.round + 700)
    if wdl is None:
        return None
    row.reference = describe(wdl) + how
    record(reference.stem, row.reference)
    return row.gate_passed


def _replaced_net(row: ladder.Row) -> Optional[Path]:
    """The file of the net that shipped before ``row``'s (kept in its round's folder once replaced), or None when there
    was none or it was the reference net, which the reference match plays anyway."""
    before = ladder.last_shipped(ladder.read(LADDER), before=row.round)
    if before is None or Path(before.net).stem.removesuffix("-int8") == ladder.REFERENCE.stem:
        return None
    from . import ship as shipping
    places = [ROUNDS_DIR / f"round-{before.round:03d}", shipping.DEFAULT_DIR, shipping.DEFAULT_DIR / "float"]
    found = next((folder / before.net for folder in places if (folder / before.net).is_file()), None)
    if found is None:
        raise SystemExit(f"round {row.round}'s net replaced {before.net}, which is in none of "
                         f"{', '.join(map(str, places))}: check it out from git before rerunning")
    return found


def _stockfish_verdict(candidate: Path, run: Path, saved: Path, deadline: float, do_commit: bool,
                       stockfish: Optional[str]) -> Optional[tuple[bool, str]]:
    """Does ``candidate``, which passed its gate, score more against Stockfish at ``ladder.STOCKFISH_ELO`` than the
    shipped net, the two measured side by side? Returns (that, the candidate's result there), or None when
    ``deadline`` cut the match short.

    The yardstick's games go in chunks of ``GATE_CHUNK``, and each chunk is played by both nets, with the same
    openings and cores, on the same kind of CPU (``cpu_description``): a net's nodes a second turn on the CPU's
    vector arithmetic far more than Stockfish's, so a result from another machine is no baseline. Each net's games stay
    in its own round's ``stockfish/<CPU>/``, so a shipped net plays a chunk once on each kind of CPU and every later
    candidate there pairs with it. A session's end leaves at most one chunk unpaired, and the next machine, of
    whatever kind, plays the pairs still missing."""
    from engine.evaluators.precision import cpu_description
    from engine.tools.calibrate import stockfish_options

    from . import ship as shipping
    from .stockfish import find_stockfish
    engine = [find_stockfish(stockfish)]
    options = [f"{name}={value}" for name, value in stockfish_options(ladder.STOCKFISH_ELO)]
    name = f"stockfish-{ladder.STOCKFISH_ELO}"
    here = cpu_description()
    folder = _machine_folder(here)

    def play(net: Path, kept: Path, chunk: int, kind: str) -> Optional[tuple[int, int, int]]:
        return match(net, options, run / kind / folder, games=YARDSTICK_GAMES, min_games=YARDSTICK_GAMES,
                     seed=YARDSTICK_SEED, concurrency=1, sprt=None, pinned=True, kept=kept / folder,
                     deadline=deadline, do_commit=do_commit, name=name, engine=engine,
                     game_seconds=YARDSTICK_GAME_SECONDS, only_chunk=chunk)

    mine = saved / "stockfish"
    before = ladder.last_shipped(ladder.read(LADDER))
    if before is None or not (shipping.DEFAULT_DIR / before.net).exists():   # nothing to pair with: its games alone
        chunks = [play(candidate, mine, chunk, "stockfish") for chunk in range(YARDSTICK_CHUNKS)]
        if None in chunks:
            return None
        return True, f"{describe(_sum(chunks))}, on {here}"
    shipped = shipping.DEFAULT_DIR / before.net
    theirs = ROUNDS_DIR / f"round-{before.round:03d}" / "stockfish"
    pairs: list[Path] = []   # for each chunk, the CPU folder where both nets played it
    for chunk in range(YARDSTICK_CHUNKS):
        pgn = f"chunk-{chunk:03d}.pgn"
        where = next((cpu for cpu in sorted(p.parent for p in mine.glob(f"*/{pgn}"))
                      if (theirs / cpu.name / pgn).exists()), None)
        if where is None:
            for net, kept, kind in ((shipped, theirs, "stockfish-shipped"), (candidate, mine, "stockfish")):
                if not (kept / folder / pgn).exists() and play(net, kept, chunk, kind) is None:
                    return None
            where = mine / folder
        pairs.append(where / pgn)
    ours = _tally(pairs)
    baseline = _tally([theirs / pgn.parent.name / pgn.name for pgn in pairs])
    machines = " and ".join(sorted({_site(pgn) for pgn in pairs}))
    result = f"{describe(ours)}, on {machines}; {before.net} there {describe(baseline)}"
    better = score(*ours) > score(*baseline)
    print(f"against Stockfish {ladder.STOCKFISH_ELO}: {result}"
          + ("" if better else ": no gain where Arbor is not the opponent, not shipped"), flush=True)
    if not before.stockfish:   # the shipped net's first measurement goes in its own row
        before.stockfish = f"{describe(baseline)}, on {machines}"
        shipping.record(before)
        if do_commit:
            commit([DEFAULT_DIR], f"nets/default: {before.net} against Stockfish {ladder.STOCKFISH_ELO}, one core "
                                  f"each: {before.stockfish}")
    return better, result


def _sum(results: list) -> tuple[int, int, int]:
    return tuple(sum(r[i] for r in results) for i in range(3))  # type: ignore[return-value]


def _machine_folder(cpu: str) -> str:
    """A folder name for a kind of CPU ("AMD EPYC, AVX2" -> "amd-epyc-avx2")."""
    return "-".join(re.findall(r"[a-z0-9.]+", cpu.lower())) or "unknown-cpu"


def _site(pgn: Path) -> str:
    """The CPU a chunk's games name as their Site (``arbor match`` writes it), or its folder's name."""
    found = re.search(r'^\[Site "([^"?]+)"\]', pgn.read_text(), re.MULTILINE)
    return found.group(1) if found else pgn.parent.name


def _retired(number: int, shipped: Optional[bool], do_commit: bool) -> Optional[bool]:
    """``shipped``, once the round is retired (``retire``) when it has finished."""
    if shipped is not None:
        retire(number, do_commit)
    return shipped


def finished(row: ladder.Row) -> bool:
    """Has the round of ``row`` nothing left to play: its gate failed, or its shipped net has met the reference (or,
    the first rounds, the heuristic)?"""
    return not row.gate_passed or "vs heuristic" in row.gate or bool(row.reference) or \
        Path(row.net or "").stem.removesuffix("-int8") == ladder.REFERENCE.stem


def retire(number: int, do_commit: bool = False) -> bool:
    """Leave in the tree only what a finished round's readers need: its plan, its training history, a shipped net's
    file (once a newer net replaces it in nets/default/, the newer round's first match and a later reader take it from
    here), and its games packed into one gzipped PGN a match. Its checkpoint and a candidate that did not ship stay in
    git's history, at the commit the ladder then names. Returns whether anything left the tree."""
    import gzip
    row = next((r for r in ladder.read(LADDER) if r.round == number), None)
    saved = ROUNDS_DIR / f"round-{number:03d}"
    if row is None or not finished(row) or not saved.is_dir():
        return False
    gone = [saved / name for name in ("checkpoint.pt", "progress.json")]
    if not row.gate_passed and row.net:
        gone += [saved / row.net, saved / row.net.replace("-int8", "")]
    gone = [path for path in dict.fromkeys(gone) if path.exists()]
    # A shipped net's games against Stockfish stay as they are: later candidates pair with them chunk by chunk.
    kinds = ("gate", "stockfish-shipped", "replaced", "reference") + (("stockfish",) if not row.gate_passed else ())
    games = {kind: sorted((saved / kind).rglob("chunk-*.pgn")) for kind in kinds}
    if not gone and not any(games.values()):
        return False
    last = subprocess.run(["git", "log", "-1", "--format=%h", "--", str(saved)], cwd=REPO, capture_output=True,
                          text=True).stdout.strip()
    for path in gone:
        path.unlink()
    for kind, chunks in games.items():
        if chunks:
            with gzip.open(saved / f"{kind}.pgn.gz", "wt") as packed:
                for chunk in chunks:
                    packed.write(chunk.read_text().rstrip() + "\n\n")
            for chunk in chunks:
                chunk.unlink()
            for folder in sorted({saved / kind, *(chunk.parent for chunk in chunks)}, key=lambda f: len(f.parts),
                                 reverse=True):   # the deepest first
                if not any(folder.iterdir()):
                    folder.rmdir()
    if gone and last:
        row.retired = last
        from .ship import record
        record(row)
    if do_commit:
        commit([saved, DEFAULT_DIR], f"nets/rounds: round {number} finished: its checkpoint"
               + (" and candidate" if not row.gate_passed else "") + f" left the tree (in history at {last}), "
               "its games packed")
    return True


def _relabelled_notes(plan: Plan) -> list[str]:
    """For the ladder: which rounds' positions the window holds twice, and whose labels were trained on."""
    notes = []
    for n, covered in relabelled(_earlier_plans(plan) + ([plan] if plan.shards else [])).items():
        for later in sorted(set(covered.values())):
            count = sum(1 for by in covered.values() if by == later)
            notes.append(f"round {n}'s {count} shards labelled again by round {later}: round {later}'s labels alone")
    return notes


def _training_notes(run: Path) -> list[str]:
    """How the run trained, for the ladder: its shape (and what it grew from), epochs, and the device."""
    import torch
    saved = torch.load(run / "checkpoint.pt", weights_only=False, map_location="cpu")
    config, data = saved["config"], saved.get("data", {})
    shape = f"{config['blocks']}x{config['filters']}"
    if data.get("averaged"):   # its recipe is its members' (their rows say it), not its own
        return [shape]
    if data.get("grown_from"):
        shape += f" grown from {data['grown_from']}"
    epochs = f"{data['epochs']:g} epochs" if data.get("epochs") else ""
    batches = f"batches of {data['batch_size']}" if data.get("batch_size", BATCH) != BATCH else ""
    arithmetic = data["precision"] if data.get("precision", "float32") != "float32" else ""
    head = "the policy head alone (tower and value frozen)" if data.get("train_only", "all") == "policy" else ""
    scale = data.get("tower_lr_scale", 1.0)
    tower = f"tower at {scale:g} of the heads' rate" if scale != 1.0 else ""
    q_mse = f"Q's squared error at weight {data['q_mse_weight']:g}" if data.get("q_mse_weight") else ""
    result = f"game result at {data['result_weight']:g} of the value" if data.get("result_weight") else ""
    endings = f"each ending {data['ending_repeats']} times" if data.get("ending_repeats", 1) > 1 else ""
    decided = f"{data['decided_keep']:g} of the decided positions" if data.get("decided_keep", 1.0) < 1.0 else ""
    device = f"on {data['device']}" if data.get("device") else ""
    return [part for part in (shape, epochs, batches, arithmetic, head, tower, q_mse, result, endings, decided, device)
            if part]


def _portable(net: Optional[Path]) -> str:
    """``net`` as the plan keeps it: relative to the repository (a checkout elsewhere on the next machine, with
    ``../shared/`` beside it, finds the same files); "" for none."""
    return os.path.relpath(Path(net).resolve(), REPO) if net else ""


# A round's data folder holds positions and, with --children, children; each labelled by a teacher or by Stockfish.
LABELS = {"positions": ("teacher", "labels"), "children": ("children-teacher", "children-labels")}


def labels_folder(folder: Path, kind: str = "positions") -> Path:
    """A round's labels of ``kind`` ("positions" or "children"): a teacher's when it has them, else Stockfish's."""
    taught, searched = LABELS[kind]
    return folder / taught if shards(folder / taught) else folder / searched


def data_pairs(folder: Path) -> list[tuple[Path, Path]]:
    """A round's (positions folder, labels folder) pairs to train on: its positions, and its children where labelled."""
    pairs = [(folder / "positions", labels_folder(folder))]
    if shards(labels_folder(folder, "children")):
        pairs.append((folder / "children", labels_folder(folder, "children")))
    return pairs


def shards_of(folder: Path) -> int:
    return min(len(shards(folder / "positions")), len(shards(labels_folder(folder))))


def keep_checkpoint(run: Path, saved: Path, number: int, do_commit: bool) -> None:
    """Copy an unfinished run's checkpoint and history into ``saved`` (``nets/rounds/round-NNN/``), committed with
    ``do_commit``, so that the next session resumes there on any machine."""
    import json
    import torch
    state = torch.load(run / "checkpoint.pt", weights_only=False, map_location="cpu")["state"]
    state.setdefault("total", state["step"])
    saved.mkdir(parents=True, exist_ok=True)
    for kept in ("checkpoint.pt", "history.json"):
        tmp = saved / (kept + ".tmp")
        shutil.copyfile(run / kept, tmp)
        os.replace(tmp, saved / kept)
    (saved / "progress.json").write_text(json.dumps({"step": state["step"], "of": state["total"],
                                                     "seconds": round(state["seconds"], 1)}) + "\n")
    done = state["step"] >= state["total"]
    print(f"round {number}: training {'done' if done else 'stopped'} at step {state['step']} of {state['total']}; "
          f"checkpoint kept in {saved}" + ("" if done else "; rerun the same command to resume"), flush=True)
    if do_commit:
        commit([saved], f"nets/rounds: round {number}'s checkpoint at step {state['step']} of {state['total']}"
                        + (", training done" if done else ", to resume on the next machine"))


def _history(run: Path) -> list[dict]:
    import json
    path = run / "history.json"
    return json.loads(path.read_text()) if path.exists() else []


def _steps(run: Path) -> int:
    history = _history(run)
    return history[-1]["step"] if history else 0


def _train_seconds(run: Path) -> float:
    history = _history(run)
    return history[-1]["seconds"] if history else 0.0


def _positions_added(data: Path) -> int:
    """The labelled positions in a round's data folder (its positions and children)."""
    import numpy as np
    added = 0
    for path in (p for _, labels in data_pairs(data) for p in shards(labels)):
        with np.load(path) as f:
            added += len(f["wdl"])
    return added


def _positions_before(init: Optional[Path]) -> int:
    """The positions the generation ``init`` had seen, from its ladder row (0 from scratch)."""
    previous = next((r for r in ladder.read(LADDER) if init is not None and r.net == init.name), None)
    return previous.positions_total if previous else 0
