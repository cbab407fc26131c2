"""The training pipeline (nets/training): data format, positions and labels (with a fake Stockfish), Ray,
a train -> export -> engine round trip on a tiny synthetic dataset, resumption, and default-net discovery.

Skips only where torch (the ``[train]`` extra) is absent; Stockfish is never needed.
"""

from __future__ import annotations

import collections
import random
import subprocess
import sys
from pathlib import Path

import chess
import numpy as np
import pytest

from engine.evaluators import lc0_planes
from engine.evaluators.lc0_policy import policy_index
from nets.training import data as fmt
from nets.training.stockfish import UciPipe

ROOT = Path(__file__).resolve().parent.parent
FAKE_SF = ROOT / "tests" / "fake_engines" / "fake_stockfish.py"
TRAINING = [sys.executable, "-m", "nets.training"]


def random_games(n: int, seed: int) -> list[tuple[chess.Board, list[chess.Board]]]:
    """(position, its history) pairs from random legal games."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        board, history = chess.Board(), []
        for _ in range(rng.randint(1, 80)):
            moves = list(board.legal_moves)
            if not moves:
                break
            history.append(board.copy(stack=False))
            board.push(rng.choice(moves))
        if any(board.legal_moves):
            out.append((board, history))
    return out


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*TRAINING, *args], cwd=ROOT, capture_output=True, text=True, timeout=300, check=True)


# -- data format ------------------------------------------------------------------------------------------

def test_rows_round_trip_through_a_shard(tmp_path):
    games = random_games(60, seed=3)
    rows = np.array([lc0_planes.gather(b, h) for b, h in games], dtype=np.uint64)
    fmt.save_shard(tmp_path / fmt.shard_name(0), rows=rows, fullmove=np.array([b.fullmove_number for b, _ in games],
                                                                               dtype=np.uint16))
    assert [p.name for p in fmt.shards(tmp_path)] == ["shard-00000.npz"]
    back = fmt.load_shard(tmp_path / "shard-00000.npz")
    assert back["rows"].dtype == np.uint64 and np.array_equal(back["rows"], rows)
    # The stored row decodes to the network input the engine would build, history included ...
    planes = lc0_planes.rows_to_planes(back["rows"])
    for (board, history), p in zip(games, planes):
        assert np.array_equal(p, lc0_planes.encode(board, history))
    # ... and to the position itself, for the labeller.
    for (board, _), row, fullmove in zip(games, back["rows"], back["fullmove"]):
        rebuilt = fmt.board_from_row(row, int(fullmove))
        assert rebuilt.fen() == board.fen()


def test_legal_mask_marks_exactly_the_legal_moves():
    for board, _ in random_games(30, seed=5):
        mask = np.unpackbits(fmt.legal_mask(board), count=fmt.POLICY_SIZE)
        assert sorted(np.flatnonzero(mask)) == sorted({policy_index(board, m) for m in board.legal_moves})


def test_an_interrupted_shard_is_never_seen(tmp_path):
    (tmp_path / "shard-00001.npz.tmp.npz").write_bytes(b"half a file")
    assert fmt.shards(tmp_path) == []


# -- positions and labels ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """Two shards of fake-Stockfish self-play positions with 3-PV labels."""
    folder = tmp_path_factory.mktemp("pipeline")
    run("positions", "--out", str(folder / "pos"), "--shards", "2", "--games-per-shard", "3", "--seed", "7",
        "--stockfish", str(FAKE_SF))
    run("label", "--positions", str(folder / "pos"), "--out", str(folder / "lab"), "--multipv", "3",
        "--stockfish", str(FAKE_SF))
    return folder


def test_positions_shards_hold_unique_positions_with_history(labelled):
    for path in fmt.shards(labelled / "pos"):
        shard = fmt.load_shard(path)
        rows = shard["rows"]
        assert rows.shape[1] == fmt.ROW_LEN and len(rows) > 20
        assert len({r.tobytes() for r in rows}) == len(rows)
        assert set(np.unique(shard["result"])) <= {-1, 0, 1}
        late = shard["ply"] >= 8
        assert late.any()
        # History slots of later positions hold earlier boards (slot 1 = the position before).
        assert (rows[late][:, 8:16] != 0).any(axis=1).all()


def test_labels_are_legal_moves_with_wdl(labelled):
    for path in fmt.shards(labelled / "lab"):
        pos = fmt.load_shard(labelled / "pos" / path.name)
        lab = fmt.load_shard(path)
        assert lab["moves"].shape == (len(pos["rows"]), 3)
        assert int(lab["depth"]) == 8  # the label command's default, recorded with the labels
        np.testing.assert_allclose(lab["wdl"].sum(axis=1), 1.0, atol=1e-6)
        for i in range(len(pos["rows"])):
            board = fmt.board_from_row(pos["rows"][i], int(pos["fullmove"][i]))
            legal = np.unpackbits(lab["legal"][i], count=fmt.POLICY_SIZE)
            best = [m for m in lab["moves"][i] if m != fmt.NO_MOVE]
            assert best and all(legal[m] for m in best)
            assert list(lab["scores"][i][:len(best)]) == sorted(lab["scores"][i][:len(best)], reverse=True)
            assert len(best) == min(3, board.legal_moves.count())


def test_rerun_skips_finished_shards_and_is_deterministic(labelled, tmp_path):
    before = {p.name: p.stat().st_mtime_ns for p in fmt.shards(labelled / "pos")}
    out = run("positions", "--out", str(labelled / "pos"), "--shards", "2", "--games-per-shard", "3", "--seed", "7",
              "--stockfish", str(FAKE_SF))
    assert "0 new positions" in out.stdout
    assert before == {p.name: p.stat().st_mtime_ns for p in fmt.shards(labelled / "pos")}
    # The same seed from nothing, one process: the same shards.
    run("positions", "--out", str(tmp_path), "--shards", "2", "--games-per-shard", "3", "--seed", "7",
        "--stockfish", str(FAKE_SF), "--workers", "1")
    for path in fmt.shards(tmp_path):
        a, b = fmt.load_shard(path), fmt.load_shard(labelled / "pos" / path.name)
        assert all(np.array_equal(a[k], b[k]) for k in a)


def test_data_sets_from_separate_runs_load_together(labelled, tmp_path):
    """``--positions A B --labels LA LB``: separate runs (their shards numbered from 0 each) train as one."""
    import shutil
    from nets.training.dataset import load
    for n, name in enumerate(("a", "b")):
        for kind in ("pos", "lab"):
            (tmp_path / name / kind).mkdir(parents=True)
            shutil.copy(labelled / kind / fmt.shard_name(n), tmp_path / name / kind / fmt.shard_name(0))
    whole, _ = load(labelled / "pos", labelled / "lab")
    joined, _ = load([tmp_path / "a" / "pos", tmp_path / "b" / "pos"], [tmp_path / "a" / "lab", tmp_path / "b" / "lab"])
    assert np.array_equal(joined.rows, whole.rows) and np.array_equal(joined.game, whole.game)
    with pytest.raises(ValueError):
        load([tmp_path / "a" / "pos", tmp_path / "b" / "pos"], [tmp_path / "a" / "lab"])


def test_real_games_become_shards_of_their_positions_that_label_like_self_play(tmp_path):
    """``games``: a gzipped PGN's games, every Nth position from a ply on, with history and the result for the side
    to move; the labeller reads the shards as a round's."""
    import gzip

    import chess.pgn
    boards = []
    with gzip.open(tmp_path / "games.pgn.gz", "wt") as f:
        for number, (result, seed) in enumerate((("1-0", 3), ("1/2-1/2", 4))):
            rng = random.Random(seed)
            game, board, history = chess.pgn.Game(), chess.Board(), []
            game.headers["Result"] = result
            node, white = game, 1 if result == "1-0" else 0
            while board.ply() < 30 and not board.is_game_over():
                if board.ply() >= 4 and (board.ply() - 4) % 5 == 0:
                    boards.append((board.copy(), list(history), number, white if board.turn else -white))
                history.append(board.copy(stack=False))
                move = rng.choice(list(board.legal_moves))
                node = node.add_variation(move)
                board.push(move)
            print(game, file=f, end="\n\n")
    out = run("games", str(tmp_path / "games.pgn.gz"), "--out", str(tmp_path / "pos"), "--every", "5",
              "--first-ply", "4")
    assert f"2 games, {len(boards)} positions" in out.stdout
    shard = fmt.load_shard(tmp_path / "pos" / fmt.shard_name(0))
    planes = lc0_planes.rows_to_planes(shard["rows"])
    for i, (board, history, number, result) in enumerate(boards):
        assert np.array_equal(planes[i], lc0_planes.encode(board, history))
        assert fmt.board_from_row(shard["rows"][i], int(shard["fullmove"][i])).fen() == board.fen()
        assert (shard["game"][i], shard["ply"][i], shard["result"][i]) == (number, board.ply(), result)
    run("label", "--positions", str(tmp_path / "pos"), "--out", str(tmp_path / "lab"), "--stockfish", str(FAKE_SF))
    assert len(fmt.load_shard(tmp_path / "lab" / fmt.shard_name(0))["wdl"]) == len(boards)
    missing = subprocess.run([*TRAINING, "games", str(tmp_path / "none.pgn")], cwd=ROOT, capture_output=True,
                             text=True)
    assert missing.returncode == 2 and "no such file" in missing.stderr
    again = subprocess.run([*TRAINING, "games", str(tmp_path / "games.pgn.gz"), "--out", str(tmp_path / "pos")],
                           cwd=ROOT, capture_output=True, text=True)
    assert again.returncode == 2 and "already holds shards" in again.stderr


def test_own_play_shards_hold_the_net_s_games_move_by_legal_move(tmp_path):
    """``own-play``: a net plays itself from a few random moves; with every position kept, a game's positions
    follow one another by legal moves, each row's history is the position before it, the result flips with the
    side to move, and a rerun makes the same shard."""
    net = random_net(tmp_path / "wdl.onnx", "wdl")
    args = ("own-play", str(net), "--shards", "2", "--games-per-shard", "6", "--keep", "1", "--seed", "5",
            "--workers", "1")
    run(*args, "--out", str(tmp_path / "a"))
    run(*args, "--out", str(tmp_path / "b"))
    for i in range(2):
        shard = fmt.load_shard(tmp_path / "a" / fmt.shard_name(i))
        again = fmt.load_shard(tmp_path / "b" / fmt.shard_name(i))
        assert all(np.array_equal(shard[k], again[k]) for k in shard)
        assert len({bytes(r) for r in shard["rows"]}) == len(shard["rows"]) > 0
        followed = 0
        for j in range(len(shard["rows"]) - 1):
            if shard["game"][j] != shard["game"][j + 1] or shard["ply"][j] + 1 != shard["ply"][j + 1]:
                continue
            before = fmt.board_from_row(shard["rows"][j], int(shard["fullmove"][j]))
            after = fmt.board_from_row(shard["rows"][j + 1], int(shard["fullmove"][j + 1]))
            children = set()
            for move in before.legal_moves:
                child = before.copy(stack=False)
                child.push(move)
                children.add(child.board_fen() + (" w" if child.turn else " b"))
            assert after.board_fen() + (" w" if after.turn else " b") in children
            # The row's first history slot is the position before it, the colours swapped (ours is the mover's).
            now, then = shard["rows"][j], shard["rows"][j + 1]
            assert list(then[8:16]) == [now[1], now[0], *now[2:8]]
            assert shard["result"][j] == -shard["result"][j + 1]
            followed += 1
        assert followed > 10
    missing = subprocess.run([*TRAINING, "own-play", str(tmp_path / "none.onnx"), "--out", str(tmp_path / "c")],
                             cwd=ROOT, capture_output=True, text=True)
    assert missing.returncode == 2 and "no such net" in missing.stderr


def test_positions_repeated_across_shards_are_kept_as_played_or_dropped(labelled, tmp_path):
    """``repeats="keep"`` trains on every copy of a position that several shards hold (the start position is in
    most games), "drop" on its first; either way no position is on both sides of the train/validation split."""
    import shutil
    from nets.training.dataset import load, split
    for name in ("a", "b"):   # the same shard twice, as two runs
        for kind in ("pos", "lab"):
            (tmp_path / name / kind).mkdir(parents=True)
            shutil.copy(labelled / kind / fmt.shard_name(0), tmp_path / name / kind / fmt.shard_name(0))
    folders = ([tmp_path / "a" / "pos", tmp_path / "b" / "pos"], [tmp_path / "a" / "lab", tmp_path / "b" / "lab"])
    once, _ = load(labelled / "pos", labelled / "lab", limit_shards=1)
    kept, kept_summary = load(*folders, repeats="keep")
    dropped, dropped_summary = load(*folders, repeats="drop")
    assert len(kept) == 2 * len(once) and np.array_equal(dropped.rows, once.rows)
    assert kept_summary["duplicates"] == dropped_summary["duplicates"] == len(once)
    train_set, val_set = split(kept, 0.5, seed=3)
    assert len(val_set) > 0 and len(train_set) > 0
    on_both = {bytes(r) for r in train_set.rows} & {bytes(r) for r in val_set.rows}
    assert not on_both
    with pytest.raises(ValueError):
        load(*folders, repeats="some")


def test_random_opening_plies_are_configurable(tmp_path):
    from nets.training.__main__ import _ply_range
    from nets.training.positions import play_game
    assert _ply_range("0-4") == (0, 4) and _ply_range("3") == (3, 3)
    for bad in ("4-2", "x", "-1-2"):
        with pytest.raises(Exception):
            _ply_range(bad)
    engine = UciPipe(str(FAKE_SF), multipv=2)
    try:
        rows, _ = play_game(engine, random.Random(3), nodes=10, keep=1.0, random_plies=(0, 0))
        start = lc0_planes.gather(chess.Board(), [])
        assert rows[0][0] == start and rows[0][1] == 0   # no random move: the game starts at the start position
        rows, _ = play_game(engine, random.Random(3), nodes=10, keep=1.0, random_plies=(5, 5))
        assert rows[0][1] == 5
    finally:
        engine.quit()


def test_random_children_branch_one_legal_move_off_the_game_line():
    from nets.training.positions import play_game
    engine = UciPipe(str(FAKE_SF), multipv=2)
    try:
        plain, result = play_game(engine, random.Random(5), nodes=10, keep=1.0, random_plies=(0, 0))
        rows, same_result = play_game(engine, random.Random(5), nodes=10, keep=1.0, random_plies=(0, 0),
                                      random_children=1.0)
    finally:
        engine.quit()
    assert not any(r[4] for r in plain)
    assert [r for r in rows if not r[4]] == plain and same_result == result   # the game itself is unchanged
    branches = [i for i, r in enumerate(rows) if r[4]]
    assert len(branches) >= len(plain) // 2
    for i in branches:
        parent = fmt.board_from_row(np.array(rows[i - 1][0], dtype=np.uint64))
        child = fmt.board_from_row(np.array(rows[i][0], dtype=np.uint64))
        assert not rows[i - 1][4] and rows[i][1] == rows[i - 1][1] + 1
        assert child.turn != parent.turn and any(_after(parent, m) == child.board_fen() for m in parent.legal_moves)
        # the branch's history is its parent (seen from the branch's side to move: ours and theirs swap)
        ours, theirs, *pieces = rows[i - 1][0][:8]
        assert rows[i][0][8:16] == (theirs, ours, *pieces)


def test_a_child_s_row_is_the_row_its_game_would_give_it():
    """A child's row, built from its parent's row alone, is what the encoder gives the child with the game's whole
    history: history slots, repetition flags (a knight shuffled back and forth repeats), castling, rule 50."""
    from nets.training.children import child_row
    games = random_games(30, seed=11)
    for line in ("g1f3 g8f6 f3g1 f6g8 g1f3 g8f6", "e2e4 e7e5 e1e2 e8e7 e2e1 e7e8 e1e2"):
        board, history = chess.Board(), []
        for move in line.split():
            history.append(board.copy(stack=False))
            board.push_uci(move)
        games.append((board, history))
    repeating = 0
    for board, history in games:
        parent = np.array(lc0_planes.gather(board, history), dtype=np.uint64)
        for move in board.legal_moves:
            child = board.copy(stack=False)
            child.push(move)
            expected = np.array(lc0_planes.gather(child, history + [board.copy(stack=False)]), dtype=np.uint64)
            assert np.array_equal(child_row(parent, child), expected), (board.fen(), move)
            repeating += int(expected[lc0_planes._REP])
    assert repeating >= 2


def test_children_shards_hold_every_legal_child_of_sampled_game_positions(labelled, tmp_path):
    """``children``: for N game positions a shard, every legal child not over, once, with its parent's game; the same
    seed gives the same shard."""
    run("children", "--positions", str(labelled / "pos"), "--out", str(tmp_path / "a"), "--parents", "5",
        "--seed", "3", "--workers", "1")
    run("children", "--positions", str(labelled / "pos"), "--out", str(tmp_path / "b"), "--parents", "5",
        "--seed", "3", "--workers", "1")
    for path in fmt.shards(labelled / "pos"):
        pos, kids = fmt.load_shard(path), fmt.load_shard(tmp_path / "a" / path.name)
        assert np.array_equal(kids["rows"], fmt.load_shard(tmp_path / "b" / path.name)["rows"])
        assert len({r.tobytes() for r in kids["rows"]}) == len(kids["rows"]) and (kids["branch"] == 2).all()
        parents: dict[str, tuple[int, set[str]]] = {}
        for i in np.flatnonzero(pos["branch"] == 0):
            board = fmt.board_from_row(pos["rows"][i], int(pos["fullmove"][i]))
            parents[board.fen()] = (int(pos["game"][i]), {_after(board, m) for m in board.legal_moves})
        found: dict[str, set[str]] = {}
        for row, game in zip(kids["rows"], kids["game"]):
            parent_slot = np.concatenate([row[9:10], row[8:9], row[10:16]])   # slot 1, from the parent's side
            child = fmt.board_from_row(row)
            owner = [fen for fen, (g, after) in parents.items() if g == game and child.board_fen() in after
                     and np.array_equal(lc0_planes.gather(chess.Board(fen))[:8], parent_slot)]
            assert owner, child.fen()
            found.setdefault(owner[0], set()).add(child.board_fen())
        assert len(found) == 5
        for fen, children in found.items():
            board = chess.Board(fen)
            over = {_after(board, m) for m in board.legal_moves if _ends(board, m)}
            assert children == parents[fen][1] - over


def test_children_load_with_their_parents_games_so_the_split_keeps_a_game_whole(labelled, tmp_path):
    """Loaded beside their positions, children carry their parent's game number (validation holds a game's
    children with the game); two positions folders side by side still keep their games apart."""
    import shutil
    from nets.training.dataset import load, split
    run("children", "--positions", str(labelled / "pos"), "--out", str(tmp_path / "kids"), "--parents", "6",
        "--workers", "1")
    net = random_net(tmp_path / "wdl.onnx", "wdl")
    run("teach", str(net), "--positions", str(tmp_path / "kids"), "--out", str(tmp_path / "kids-lab"), "--workers", "1")
    data, _ = load([labelled / "pos", tmp_path / "kids"], [labelled / "lab", tmp_path / "kids-lab"], repeats="keep")
    children = data.probs[:, 0] >= 0
    def seen_by_the_child(parent: np.ndarray) -> bytes:   # the parent's 7 newest slots, ours and theirs swapped
        slots = parent[:56].reshape(7, 8).copy()
        slots[:, [0, 1]] = slots[:, [1, 0]]
        return slots.tobytes()

    games_by_parent = {seen_by_the_child(r): g for r, g in zip(data.rows[~children], data.game[~children])}
    for row, game in zip(data.rows[children], data.game[children]):
        assert game == games_by_parent[row[8:64].tobytes()]
    train, val = split(data, 0.3, seed=1)
    assert not set(train.game) & set(val.game) and (val.probs[:, 0] >= 0).any()
    (tmp_path / "copy").mkdir()
    shutil.copytree(labelled / "pos", tmp_path / "copy" / "pos")
    shutil.copytree(labelled / "lab", tmp_path / "copy" / "lab")
    both, _ = load([labelled / "pos", tmp_path / "copy" / "pos"], [labelled / "lab", tmp_path / "copy" / "lab"],
                   repeats="keep")
    assert len(set(both.game)) == 2 * len(set(data.game[~children]))


def _ends(board: chess.Board, move: chess.Move) -> bool:
    child = board.copy(stack=False)
    child.push(move)
    return child.is_checkmate() or child.is_stalemate() or child.is_insufficient_material()


def _after(board: chess.Board, move: chess.Move) -> str:
    b = board.copy(stack=False)
    b.push(move)
    return b.board_fen()


def test_soft_policy_target_weighs_the_multipv_moves_by_score():
    from nets.training.dataset import Dataset
    board = chess.Board()
    row = np.array([lc0_planes.gather(board, [])], dtype=np.uint64)
    e4, d4, nf3 = (policy_index(board, chess.Move.from_uci(u)) for u in ("e2e4", "d2d4", "g1f3"))
    moves = np.array([[e4, d4, nf3], [e4, fmt.NO_MOVE, fmt.NO_MOVE]], dtype=np.uint16)
    data = Dataset(np.repeat(row, 2, axis=0), moves, np.array([[30, 30, -70], [30, 0, 0]], dtype=np.int32),
                   np.full((2, 3), 1 / 3, dtype=np.float32), np.zeros(2, dtype=np.int8),
                   np.stack([fmt.legal_mask(board)] * 2), np.arange(2))
    batch = data.batch(np.arange(2), policy_temperature_cp=100.0)
    target = batch["policy"]
    np.testing.assert_allclose(target.sum(axis=1), 1.0, rtol=1e-6)
    assert target[0, e4] == target[0, d4] and np.isclose(target[0, nf3] / target[0, e4], np.exp(-1.0))
    assert target[1, e4] == 1.0                              # a position with one labelled move: one-hot
    assert list(batch["best"]) == [e4, e4] and "policy" not in data.batch(np.arange(2))


def test_the_value_target_blends_the_game_result_by_its_weight():
    """``result_weight`` w: the WDL target is (1 - w) the teacher's WDL plus w the game's result for the side to move
    (a win, a draw, a loss as one-hot W, D, L); 0 leaves the teacher's WDL as it is."""
    from nets.training.dataset import Dataset
    board = chess.Board()
    row = np.array([lc0_planes.gather(board, [])], dtype=np.uint64)
    teacher = np.array([[0.5, 0.3, 0.2]] * 3, dtype=np.float32)
    data = Dataset(np.repeat(row, 3, axis=0), np.zeros((3, 1), dtype=np.uint16), np.zeros((3, 1), dtype=np.int32),
                   teacher, np.array([1, 0, -1], dtype=np.int8), np.stack([fmt.legal_mask(board)] * 3), np.arange(3))
    np.testing.assert_array_equal(data.batch(np.arange(3))["wdl"], teacher)
    blended = data.batch(np.arange(3), result_weight=0.25)["wdl"]
    np.testing.assert_allclose(blended, 0.75 * teacher + 0.25 * np.eye(3), rtol=1e-6)
    np.testing.assert_allclose(data.batch(np.arange(3), result_weight=1.0)["wdl"], np.eye(3))


@pytest.mark.slow
def test_ray_runs_the_same_shards(labelled, tmp_path):
    pytest.importorskip("ray")
    run("positions", "--out", str(tmp_path), "--shards", "2", "--games-per-shard", "3", "--seed", "7",
        "--stockfish", str(FAKE_SF), "--ray", "local")
    names = [p.name for p in fmt.shards(tmp_path)]
    assert names == ["shard-00000.npz", "shard-00001.npz"]
    for name in names:
        a, b = fmt.load_shard(tmp_path / name), fmt.load_shard(labelled / "pos" / name)
        assert all(np.array_equal(a[k], b[k]) for k in a)


# -- training, export, engine -----------------------------------------------------------------------------

def test_policy_map_is_one_to_one_onto_move_planes():
    pytest.importorskip("torch")
    from nets.training.model import MOVE_PLANES, POLICY_GATHER
    assert len(set(POLICY_GATHER.tolist())) == fmt.POLICY_SIZE
    assert POLICY_GATHER.min() >= 0 and POLICY_GATHER.max() < MOVE_PLANES * 64


def test_export_matches_pytorch(tmp_path):
    torch = pytest.importorskip("torch")
    from nets.training.export import export, onnx_outputs
    from nets.training.model import ArborNet, Exported
    torch.manual_seed(0)
    net = ArborNet(blocks=1, filters=8).eval()
    planes = lc0_planes.rows_to_planes([lc0_planes.gather(b, h) for b, h in random_games(20, seed=9)])
    export(net, tmp_path / "n.onnx", planes)
    policy, wdl = onnx_outputs(tmp_path / "n.onnx", planes)
    with torch.no_grad():
        tp, tw = Exported(net)(torch.from_numpy(planes))
    np.testing.assert_allclose(policy, tp.numpy(), atol=1e-4)
    np.testing.assert_allclose(wdl, tw.numpy(), atol=1e-5)
    assert policy.shape == (20, 1858) and wdl.shape == (20, 3)


def synthetic_shards(folder: Path, games: int, seed: int) -> list[tuple[chess.Board, list[chess.Board], int]]:
    """A positions shard and a labels shard of random-game positions, labelled by the fake Stockfish's
    ranking (computed here); returns (board, history, best policy index) for each position."""
    sys.path.insert(0, str(FAKE_SF.parent))
    from fake_stockfish import ranked
    items = []
    for board, history in random_games(games, seed):
        best = policy_index(board, chess.Move.from_uci(ranked(board)[0][0]))
        items.append((board, history, best))
    n = len(items)
    fmt.save_shard(folder / "pos" / fmt.shard_name(0),
                   rows=np.array([lc0_planes.gather(b, h) for b, h, _ in items], dtype=np.uint64),
                   fullmove=np.array([b.fullmove_number for b, _, _ in items], dtype=np.uint16),
                   game=np.arange(n, dtype=np.uint32), ply=np.array([b.ply() for b, _, _ in items], dtype=np.uint16),
                   result=np.zeros(n, dtype=np.int8))
    fmt.save_shard(folder / "lab" / fmt.shard_name(0),
                   moves=np.array([[best] for _, _, best in items], dtype=np.uint16),
                   scores=np.zeros((n, 1), dtype=np.int32),
                   wdl=np.tile(np.array([0.2, 0.5, 0.3], dtype=np.float32), (n, 1)),
                   legal=np.stack([fmt.legal_mask(b) for b, _, _ in items]))
    return items


def test_train_export_and_play_round_trip(tmp_path):
    """A tiny net memorises synthetic labels; exported, the engine's evaluator (its own encoder, with each
    position's history) prefers the labelled moves."""
    pytest.importorskip("torch")
    from engine.evaluators.base import Leaf
    from engine.evaluators.network import NetworkEvaluator
    from engine.params import Params
    items = synthetic_shards(tmp_path, 160, seed=11)
    data = ["--positions", str(tmp_path / "pos"), "--labels", str(tmp_path / "lab")]
    run("train", *data, "--val-share", "0.05", "--out", str(tmp_path / "run"), "--blocks", "1", "--filters", "32",
        "--epochs", "60",
        "--batch-size", "32", "--lr", "3e-3", "--eval-every", "100", "--threads", "1")
    assert (tmp_path / "run" / "loss.png").stat().st_size > 1000 and (tmp_path / "run" / "history.json").exists()
    run("export", str(tmp_path / "run" / "checkpoint.pt"), str(tmp_path / "net.onnx"), *data)
    evaluator = NetworkEvaluator(str(tmp_path / "net.onnx"), Params(nn_cache_size=0))
    leaves = [Leaf(board, list(board.legal_moves), history) for board, history, _ in items]
    evaluator.evaluate(leaves)
    agree = sum(policy_index(leaf.board, leaf.moves[int(np.argmax(leaf.priors))]) == best
                for leaf, (_, _, best) in zip(leaves, items))
    assert agree / len(items) > 0.7
    assert all(leaf.wdl is not None and abs(leaf.wdl[0] - 0.2) < 0.15 for leaf in leaves)


def test_training_resumes_where_it_stopped(labelled, tmp_path):
    torch = pytest.importorskip("torch")
    common = ["--positions", str(labelled / "pos"), "--labels", str(labelled / "lab"), "--blocks", "1",
              "--filters", "8", "--epochs", "3", "--batch-size", "16", "--eval-every", "1000", "--threads", "1"]
    run("train", *common, "--out", str(tmp_path / "whole"))
    run("train", *common, "--out", str(tmp_path / "parts"), "--stop-at", "7")
    partial = torch.load(tmp_path / "parts" / "checkpoint.pt", weights_only=False)
    assert partial["state"]["step"] == 7
    run("train", *common, "--out", str(tmp_path / "parts"))
    whole = torch.load(tmp_path / "whole" / "checkpoint.pt", weights_only=False)
    resumed = torch.load(tmp_path / "parts" / "checkpoint.pt", weights_only=False)
    assert resumed["state"]["step"] == whole["state"]["step"] > 7
    for key, value in whole["model"].items():
        assert torch.allclose(value.float(), resumed["model"][key].float(), atol=1e-5), key



def test_loader_processes_train_the_same_steps_as_one_process(labelled, tmp_path):
    """A GPU run builds its batches in other processes; the steps, and a resumption, must not change."""
    torch = pytest.importorskip("torch")
    common = ["--positions", str(labelled / "pos"), "--labels", str(labelled / "lab"), "--blocks", "1",
              "--filters", "8", "--epochs", "3", "--batch-size", "16", "--eval-every", "1000", "--threads", "1",
              "--policy-temperature-cp", "50"]
    run("train", *common, "--out", str(tmp_path / "one"))
    run("train", *common, "--out", str(tmp_path / "loaders"), "--loader-workers", "2", "--stop-at", "5")
    run("train", *common, "--out", str(tmp_path / "loaders"), "--loader-workers", "2")
    one = torch.load(tmp_path / "one" / "checkpoint.pt", weights_only=False)
    loaders = torch.load(tmp_path / "loaders" / "checkpoint.pt", weights_only=False)
    assert loaders["state"]["step"] == one["state"]["step"] > 5
    for key, value in one["model"].items():
        assert torch.allclose(value.float(), loaders["model"][key].float(), atol=1e-5), key

# -- the default net --------------------------------------------------------------------------------------

def test_ship_replaces_the_default_net_and_writes_its_provenance(monkeypatch, tmp_path):
    torch = pytest.importorskip("torch")
    from nets.training import ship
    default = tmp_path / "default"
    default.mkdir()
    (default / "old.onnx").write_bytes(b"old")
    monkeypatch.setattr(ship, "DEFAULT_DIR", default)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    torch.save({"config": {"blocks": 4, "filters": 32, "se": True, "value_channels": 32, "value_hidden": 128},
                "data": {"positions": 1000, "duplicates": 3, "train": 970, "validation": 30,
                         "label_depths": {"6": 1003}, "policy_temperature_cp": 50.0}}, run_dir / "checkpoint.pt")
    (run_dir / "history.json").write_text('[{"step": 8, "epoch": 2.0, "seconds": 60, "val_policy": 2.2, '
                                          '"val_top1": 0.33, "val_value": 0.4, "val_q_mse": 0.13}]')
    (tmp_path / "gate.txt").write_text("new.onnx vs heuristic, 200 games at 10+0.1: W-D-L 1-2-3, Elo -1 +/- 2\n")
    (tmp_path / "new.onnx").write_bytes(b"new net")
    target = ship.ship(tmp_path / "new.onnx", run_dir, tmp_path / "gate.txt", "More notes.")
    assert target == default / "new.onnx" and target.read_bytes() == b"new net"
    assert not (default / "old.onnx").exists()
    text = (default / "README.md").read_text()
    for expected in ("4 residual blocks × 32 filters", "1000 unique positions", "softmax(score / 50 cp)",
                     "{'6': 1003}", "33.0%", "W-D-L 1-2-3", "More notes."):
        assert expected in text, expected


def test_autodiscover_looks_in_the_bundle_then_the_package_then_the_source_tree(monkeypatch, tmp_path):
    from engine.uci import loading
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    assert loading.nets_dirs() == [tmp_path / "nets", ROOT / "engine" / "nets", ROOT / "nets", ROOT / "nets" / "default"]


@pytest.mark.slow
def test_pip_install_carries_the_default_net_and_the_engine_loads_it(tmp_path):
    """``pip install .`` of a checkout whose nets/default/ holds a net: the installed engine, run away from
    any source tree, finds it with no option set and says so at isready."""
    pytest.importorskip("torch")
    import shutil
    from nets.training.export import export
    from nets.training.model import ArborNet
    src = tmp_path / "src"
    shutil.copytree(ROOT / "engine", src / "engine", ignore=shutil.ignore_patterns("__pycache__", "nets"))
    (src / "nets" / "default").mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    planes = lc0_planes.rows_to_planes([lc0_planes.gather(chess.Board())])
    export(ArborNet(blocks=1, filters=8).eval(), src / "nets" / "default" / "arbor-tiny.onnx", planes)
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "-q",
                    "--target", str(tmp_path / "site"), str(src)], check=True, timeout=300, capture_output=True)
    installed = tmp_path / "site" / "engine" / "nets" / "arbor-tiny.onnx"
    assert installed.is_file()
    assert not (tmp_path / "site" / "nets").exists()          # the training tools are not installed
    env = {"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-m", "engine"], input="uci\nisready\nposition startpos\ngo nodes 20\n",
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    lines = proc.stdout.splitlines()
    assert any(line.startswith(f"info string loaded network {installed}") for line in lines), lines
    assert any(line.startswith("bestmove ") for line in lines), lines


def test_a_checkout_plays_with_the_shipped_net_and_the_options_still_override_it():
    """From a checkout with no option set, the engine loads the net in nets/default/ (the heuristic while none
    is shipped); ``Evaluator=heuristic`` and ``WeightsFile`` still choose otherwise."""
    shipped = sorted((ROOT / "nets" / "default").glob("*.onnx")) + sorted((ROOT / "nets").glob("*.onnx"))
    script = "uci\nisready\nposition startpos\ngo nodes 10\n"

    def lines_of(prefix: str) -> list[str]:
        proc = subprocess.run([sys.executable, "-m", "engine"], input=prefix + script, capture_output=True,
                              text=True, timeout=120, cwd=ROOT)
        assert any(line.startswith("bestmove ") for line in proc.stdout.splitlines()), proc.stdout
        return [line for line in proc.stdout.splitlines() if line.startswith("info string")]

    default = lines_of("")
    if shipped:
        first = sorted(shipped, key=lambda p: p.parent != ROOT / 'nets')[0]
        assert any(line.startswith(f"info string loaded network {first}") for line in default), default
    else:
        assert "info string no network found: using the heuristic evaluator" in default, default
    assert not any("loaded network" in line for line in lines_of("setoption name Evaluator value heuristic\n"))
    other = ROOT.parent / "shared" / "lc0-reference" / "meangirl-8.onnx"
    if other.is_file():
        chosen = lines_of(f"setoption name WeightsFile value {other}\n")
        assert any(line.startswith(f"info string loaded network {other}") for line in chosen), chosen

# -- a teacher network's labels and the training's arithmetic ----------------------------------------------

def random_net(path: Path, value: str) -> Path:
    subprocess.run([sys.executable, str(ROOT / "nets" / "make_random_net.py"), str(path), "--blocks", "1",
                    "--filters", "8", "--value", value, "--seed", "3"], check=True, capture_output=True, timeout=120)
    return path


def test_a_teacher_labels_each_position_with_its_own_policy_and_value(labelled, tmp_path):
    """The teacher's labels are what the net says of each position as the engine encodes it (history included):
    checked against the net run on planes built from the board by the engine's own encoder, a separate path."""
    import onnxruntime as ort
    from nets.training.teacher import teach_shard
    net = random_net(tmp_path / "wdl.onnx", "wdl")
    shard = fmt.shards(labelled / "pos")[0]
    teach_shard(str(shard), str(tmp_path / "teacher"), str(net), top=4)
    lab, pos = fmt.load_shard(tmp_path / "teacher" / shard.name), fmt.load_shard(shard)
    assert str(lab["teacher"]) == "wdl.onnx" and lab["moves"].shape == (len(pos["rows"]), 4)
    session = ort.InferenceSession(str(net))
    planes = lc0_planes.rows_to_planes(pos["rows"])
    logits, wdl = session.run(["/output/policy", "/output/wdl"], {"/input/planes": planes})
    np.testing.assert_allclose(lab["wdl"], wdl, atol=1e-6)
    for i in range(len(pos["rows"])):
        board = fmt.board_from_row(pos["rows"][i], int(pos["fullmove"][i]))
        indices = [policy_index(board, m) for m in board.legal_moves]
        p = np.exp(logits[i, indices] - logits[i, indices].max())
        p /= p.sum()
        order = np.argsort(-p, kind="stable")[:4]
        stored = [m for m in lab["moves"][i] if m != fmt.NO_MOVE]
        assert stored == [indices[k] for k in order]
        np.testing.assert_allclose(lab["probs"][i][:len(stored)], p[order], rtol=1e-5, atol=1e-7)
        assert np.array_equal(lab["legal"][i], fmt.legal_mask(board))


def test_a_value_only_teacher_needs_a_net_for_the_draw_share(labelled, tmp_path):
    """MeanGirl-8 has a tanh value head: its labels keep W - L = v and take D from a WDL net, never 'no draws'."""
    import onnxruntime as ort
    from nets.training.teacher import TeacherError, teach_shard, wdl_with_draws
    value_net, wdl_net = random_net(tmp_path / "v.onnx", "value"), random_net(tmp_path / "w.onnx", "wdl")
    refused = subprocess.run([*TRAINING, "teach", str(value_net), "--positions", str(labelled / "pos"), "--out",
                              str(tmp_path / "no")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "value head only" in refused.stderr and not (tmp_path / "no").exists()
    shard = fmt.shards(labelled / "pos")[0]
    with pytest.raises(TeacherError):
        teach_shard(str(shard), str(tmp_path / "no"), str(value_net))
    run("teach", str(value_net), "--draws", str(wdl_net), "--positions", str(labelled / "pos"), "--out",
        str(tmp_path / "t"), "--workers", "1")
    lab = fmt.load_shard(tmp_path / "t" / shard.name)
    assert str(lab["teacher"]) == "v.onnx + draws from w.onnx"
    planes = lc0_planes.rows_to_planes(fmt.load_shard(shard)["rows"])
    v = ort.InferenceSession(str(value_net)).run(["/output/value"], {"/input/planes": planes})[0][:, 0]
    d = ort.InferenceSession(str(wdl_net)).run(["/output/wdl"], {"/input/planes": planes})[0][:, 1]
    w, draw, loss = lab["wdl"].T
    np.testing.assert_allclose(w - loss, v, atol=1e-5)
    np.testing.assert_allclose(draw, np.minimum(d, 1 - np.abs(v)), atol=1e-5)
    assert (lab["wdl"] >= 0).all() and np.allclose(lab["wdl"].sum(axis=1), 1, atol=1e-5)
    np.testing.assert_allclose(wdl_with_draws(np.array([0.9, -0.2]), np.array([0.5, 0.3])),
                               [[0.9, 0.1, 0.0], [0.25, 0.3, 0.45]], atol=1e-6)


def test_teacher_and_stockfish_labels_train_together(labelled, tmp_path):
    """A teacher's shard and Stockfish's load as one data set: the teacher's positions take its probabilities
    (renormalised over the moves it kept) as the soft policy target, Stockfish's the softmax of its scores."""
    import shutil
    from nets.training.dataset import load
    net = random_net(tmp_path / "wdl.onnx", "wdl")
    run("teach", str(net), "--positions", str(labelled / "pos"), "--out", str(tmp_path / "all"), "--workers", "1")
    for kind, source in (("pos", labelled / "pos"), ("teacher", tmp_path / "all"), ("lab", labelled / "lab")):
        (tmp_path / kind).mkdir()
    shutil.copy(labelled / "pos" / fmt.shard_name(0), tmp_path / "pos" / fmt.shard_name(0))
    shutil.copy(tmp_path / "all" / fmt.shard_name(0), tmp_path / "teacher" / fmt.shard_name(0))
    shutil.copy(labelled / "lab" / fmt.shard_name(1), tmp_path / "lab" / fmt.shard_name(0))
    (tmp_path / "pos1").mkdir()
    shutil.copy(labelled / "pos" / fmt.shard_name(1), tmp_path / "pos1" / fmt.shard_name(0))
    data, summary = load([tmp_path / "pos", tmp_path / "pos1"], [tmp_path / "teacher", tmp_path / "lab"])
    assert set(summary["label_depths"]) == {"teacher wdl.onnx", "8"}
    taught = np.flatnonzero(data.probs[:, 0] >= 0)
    assert 0 < len(taught) < len(data)
    batch = data.batch(np.arange(len(data)), policy_temperature_cp=50.0)
    np.testing.assert_allclose(batch["policy"].sum(axis=1), 1.0, atol=1e-5)
    i = taught[0]
    kept = data.moves[i] != fmt.NO_MOVE
    np.testing.assert_allclose(batch["policy"][i, data.moves[i][kept]], data.probs[i][kept] / data.probs[i][kept].sum(),
                               rtol=1e-5)
    j = np.flatnonzero(data.probs[:, 0] < 0)[0]
    scores = data.scores[j][data.moves[j] != fmt.NO_MOVE].astype(float)
    expected = np.exp((scores - scores[0]) / 50.0)
    np.testing.assert_allclose(batch["policy"][j, data.moves[j][data.moves[j] != fmt.NO_MOVE]],
                               expected / expected.sum(), rtol=1e-5)


def test_bfloat16_training_and_the_choice_of_arithmetic(labelled, tmp_path):
    torch = pytest.importorskip("torch")
    from nets.training.train import cpu_has_bfloat16, resolve_precision
    assert resolve_precision("auto", "cpu") == ("bfloat16" if cpu_has_bfloat16() else "float32")
    assert resolve_precision("auto", "cuda") == "float32" and resolve_precision("bfloat16", "cuda") == "bfloat16"
    with pytest.raises(ValueError):
        resolve_precision("float16", "cpu")
    common = ["--positions", str(labelled / "pos"), "--labels", str(labelled / "lab"), "--blocks", "1",
              "--filters", "8", "--epochs", "4", "--batch-size", "16", "--eval-every", "1000", "--threads", "1",
              "--policy-temperature-cp", "50"]
    for precision in ("float32", "bfloat16"):
        run("train", *common, "--precision", precision, "--out", str(tmp_path / precision))
    history = {p: __import__("json").loads((tmp_path / p / "history.json").read_text())[-1]
               for p in ("float32", "bfloat16")}
    saved = torch.load(tmp_path / "bfloat16" / "checkpoint.pt", weights_only=False)
    assert saved["data"]["precision"] == "bfloat16"
    assert saved["model"]["stem.0.0.weight"].dtype == torch.float32   # the weights stay float32
    # Same data, same steps: bfloat16's losses follow float32's closely.
    assert abs(history["bfloat16"]["val_policy"] - history["float32"]["val_policy"]) < 0.05
    assert abs(history["bfloat16"]["val_value"] - history["float32"]["val_value"]) < 0.05


def test_a_resumed_run_refuses_other_positions_than_it_trained_on(labelled, tmp_path):
    import shutil
    pytest.importorskip("torch")
    common = ["--labels", str(labelled / "lab"), "--blocks", "1", "--filters", "8", "--epochs", "2",
              "--batch-size", "16", "--eval-every", "1000", "--threads", "1", "--out", str(tmp_path / "run")]
    run("train", "--positions", str(labelled / "pos"), *common, "--stop-at", "3")
    other = tmp_path / "pos"
    shutil.copytree(labelled / "pos", other)
    shard = fmt.load_shard(other / fmt.shard_name(1))
    shard["rows"][0, 0] ^= np.uint64(1 << 40)   # one square of one position differs
    fmt.save_shard(other / fmt.shard_name(1), **shard)
    refused = subprocess.run([*TRAINING, "train", "--positions", str(other), *common], cwd=ROOT, capture_output=True,
                             text=True, timeout=300)
    assert refused.returncode != 0 and "other positions" in refused.stderr


def test_a_hybrid_net_plays_one_net_s_policy_with_the_other_s_value(tmp_path):
    """nets/hybrid_net.py, the diagnostic that splits a failed candidate into its halves: the hybrid's outputs are
    the two nets' own, and the engine loads it like any net."""
    import onnxruntime as ort
    from engine.evaluators.base import Leaf
    from engine.evaluators.network import NetworkEvaluator
    from engine.params import Params
    policy_net, value_net = random_net(tmp_path / "p.onnx", "wdl"), random_net(tmp_path / "v.onnx", "value")
    out = subprocess.run([sys.executable, str(ROOT / "nets" / "hybrid_net.py"), str(policy_net), str(value_net),
                          str(tmp_path / "h.onnx")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    planes = lc0_planes.rows_to_planes([lc0_planes.gather(b, h) for b, h in random_games(8, seed=4)])
    run_net = lambda net, names: ort.InferenceSession(str(net)).run(names, {"/input/planes": planes})
    policy, value = run_net(tmp_path / "h.onnx", ["/output/policy", "/output/value"])
    np.testing.assert_array_equal(policy, run_net(policy_net, ["/output/policy"])[0])
    np.testing.assert_array_equal(value, run_net(value_net, ["/output/value"])[0])
    board = chess.Board()
    leaf = Leaf(board, list(board.legal_moves), [])
    NetworkEvaluator(str(tmp_path / "h.onnx"), Params(nn_cache_size=0)).evaluate([leaf])
    assert abs(sum(leaf.priors) - 1) < 1e-5 and -1 <= leaf.value <= 1
    # Nets of different opsets (lc0's exports at 17, Arbor's at 20, whose ReduceMean takes its axes as an input).
    shipped = sorted((ROOT / "nets" / "default").glob("*.onnx"))[0]   # whichever net ships, at Arbor's opset
    out = subprocess.run([sys.executable, str(ROOT / "nets" / "hybrid_net.py"), str(policy_net), str(shipped),
                          str(tmp_path / "mixed.onnx")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    policy, wdl = run_net(tmp_path / "mixed.onnx", ["/output/policy", "/output/wdl"])
    np.testing.assert_array_equal(policy, run_net(policy_net, ["/output/policy"])[0])
    np.testing.assert_allclose(wdl, run_net(shipped, ["/output/wdl"])[0], atol=1e-6)
    refused = subprocess.run([sys.executable, str(ROOT / "nets" / "hybrid_net.py"), str(value_net), str(tmp_path / "x"),
                              str(tmp_path / "bad.onnx")], capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0 and not (tmp_path / "bad.onnx").exists()


def test_a_teacher_can_teach_the_policy_alone_with_another_net_s_value(labelled, tmp_path):
    """``teach NET --value WDL_NET``: the teacher's policy, the other net's win/draw/loss (round 11's lesson: keep
    MeanGirl-8's policy, not its value); a value net without a WDL head is refused."""
    import onnxruntime as ort
    from nets.training.ship import _labels
    teacher, value_net = random_net(tmp_path / "v.onnx", "value"), random_net(tmp_path / "w.onnx", "wdl")
    run("teach", str(teacher), "--value", str(value_net), "--positions", str(labelled / "pos"), "--out",
        str(tmp_path / "t"), "--workers", "1")
    run("teach", str(teacher), "--draws", str(value_net), "--positions", str(labelled / "pos"), "--out",
        str(tmp_path / "d"), "--workers", "1")
    shard = fmt.shards(labelled / "pos")[0]
    lab, both = fmt.load_shard(tmp_path / "t" / shard.name), fmt.load_shard(tmp_path / "d" / shard.name)
    assert str(lab["teacher"]) == "v.onnx policy + value from w.onnx"
    planes = lc0_planes.rows_to_planes(fmt.load_shard(shard)["rows"])
    wdl = ort.InferenceSession(str(value_net)).run(["/output/wdl"], {"/input/planes": planes})[0]
    np.testing.assert_allclose(lab["wdl"], wdl, atol=1e-6)
    assert np.array_equal(lab["moves"], both["moves"]) and np.allclose(lab["probs"], both["probs"])
    assert "v.onnx for the policy" in _labels({"label_depths": {"teacher " + str(lab["teacher"]): 5}})
    refused = subprocess.run([*TRAINING, "teach", str(value_net), "--value", str(teacher), "--positions",
                              str(labelled / "pos"), "--out", str(tmp_path / "no"), "--workers", "1"], cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0 and "WDL head" in refused.stderr + refused.stdout


def test_training_the_policy_head_alone_keeps_the_starting_net_s_value_exactly(labelled, tmp_path):
    """``--train-only policy``: the policy learns, and the exported net's value is the starting net's own, position
    for position (its tower and value head get no gradient and its batch norms keep their statistics)."""
    pytest.importorskip("torch")
    from nets.training.export import onnx_outputs
    data = ["--positions", str(labelled / "pos"), "--labels", str(labelled / "lab")]
    common = [*data, "--blocks", "1", "--filters", "8", "--batch-size", "16", "--eval-every", "1000", "--threads", "1",
              "--precision", "float32"]
    run("train", *common, "--epochs", "1", "--out", str(tmp_path / "start"))
    run("export", str(tmp_path / "start" / "checkpoint.pt"), str(tmp_path / "start.onnx"), *data)
    run("train", *common, "--epochs", "4", "--lr", "1e-2", "--init", str(tmp_path / "start.onnx"), "--train-only",
        "policy", "--out", str(tmp_path / "head"))
    run("export", str(tmp_path / "head" / "checkpoint.pt"), str(tmp_path / "head.onnx"), *data)
    planes = lc0_planes.rows_to_planes(fmt.load_shard(fmt.shards(labelled / "pos")[0])["rows"])
    policy_before, wdl_before = onnx_outputs(tmp_path / "start.onnx", planes)
    policy_after, wdl_after = onnx_outputs(tmp_path / "head.onnx", planes)
    np.testing.assert_allclose(wdl_after, wdl_before, atol=1e-5)
    assert np.abs(policy_after - policy_before).max() > 0.1
    refused = subprocess.run([*TRAINING, "train", *common, "--epochs", "4", "--init", str(tmp_path / "start.onnx"),
                              "--out", str(tmp_path / "head")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert refused.returncode != 0 and "not all" in refused.stderr


def test_compare_values_ranks_each_position_s_children_by_each_net_s_value(labelled, tmp_path):
    """nets/compare_values.py, round 14's diagnostic: a net matches itself exactly, and against another net the
    one-ply best moves are recomputed here child by child from python-chess's legal moves."""
    import onnxruntime as ort
    a, b = random_net(tmp_path / "a.onnx", "wdl"), random_net(tmp_path / "b.onnx", "value")
    shard = fmt.shards(labelled / "pos")[0]
    out = subprocess.run([sys.executable, str(ROOT / "nets" / "compare_values.py"), str(shard), str(a), str(a),
                          str(b), "--positions", "20"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[1] == "a.onnx: RMS of Q 0.000, RMS of sibling differences 0.000, same one-ply best move 100.0%"
    stored = fmt.load_shard(shard)
    sessions = {a: ort.InferenceSession(str(a)), b: ort.InferenceSession(str(b))}
    same = []
    for row, move in list(zip(stored["rows"], stored["fullmove"]))[:20]:
        board = fmt.board_from_row(row, int(move))
        if board.legal_moves.count() < 2:
            continue
        best = []
        for net, output in ((a, "/output/wdl"), (b, "/output/value")):
            q = []
            for m in board.legal_moves:
                child = board.copy(stack=False)
                child.push(m)
                planes = lc0_planes.encode(child, [board])[None]
                y = sessions[net].run([output], {"/input/planes": planes})[0][0]
                q.append(y[0] - y[2] if output == "/output/wdl" else y[0])
            best.append(int(np.argmin(q)))
        same.append(best[0] == best[1])
    assert lines[2].endswith(f"same one-ply best move {np.mean(same):.1%}")


def test_compare_policies_reports_each_net_s_breadth_and_their_agreement(labelled, tmp_path):
    """nets/compare_policies.py, round 13's diagnostic: a net agrees with itself everywhere, and its entropy is that
    of its priors over the legal moves, recomputed here move by move from python-chess's legal moves."""
    import onnxruntime as ort
    a, b = random_net(tmp_path / "a.onnx", "wdl"), random_net(tmp_path / "b.onnx", "value")
    shard = fmt.shards(labelled / "pos")[0]
    out = subprocess.run([sys.executable, str(ROOT / "nets" / "compare_policies.py"), str(shard), str(a), str(a),
                          str(b), "--temperature", "1.5"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "same best move, a.onnx and a.onnx: 100.0%" in lines and len(lines) == 6
    stored = fmt.load_shard(shard)
    logits = ort.InferenceSession(str(a)).run(["/output/policy"],
                                              {"/input/planes": lc0_planes.rows_to_planes(stored["rows"])})[0]
    entropies = []
    for row, move, z in zip(stored["rows"], stored["fullmove"], logits):
        board = fmt.board_from_row(row, int(move))
        x = np.array([z[policy_index(board, m)] for m in board.legal_moves]) / 1.5
        p = np.exp(x - x.max()) / np.exp(x - x.max()).sum()
        entropies.append(-(p * np.log(p)).sum())
    assert lines[0].startswith("a.onnx: entropy ")
    assert abs(float(lines[0].split()[2]) - np.mean(entropies)) < 1e-3


def test_compare_fit_reads_a_checkpoint_and_its_export_alike_and_ranks_a_trained_net_first(labelled, tmp_path):
    """nets/compare_fit.py, round 22's check before a gate: a checkpoint and its exported ONNX (read back with its
    batch norms unfolded) fit the same labels to within float error, over every labelled position, and a net trained
    on those labels fits their value and best moves better than one stopped after a step; a net it cannot read back
    is refused by name."""
    pytest.importorskip("torch")
    data = ["--positions", str(labelled / "pos"), "--labels", str(labelled / "lab")]
    run("train", *data, "--out", str(tmp_path / "run"), "--blocks", "1", "--filters", "8", "--epochs", "20",
        "--batch-size", "16", "--lr", "3e-3", "--eval-every", "1000", "--threads", "1", "--precision", "float32")
    run("train", *data, "--out", str(tmp_path / "early"), "--blocks", "1", "--filters", "8", "--epochs", "20",
        "--batch-size", "16", "--lr", "3e-3", "--eval-every", "1000", "--threads", "1", "--precision", "float32",
        "--stop-at", "1")
    run("export", str(tmp_path / "run" / "checkpoint.pt"), str(tmp_path / "net.onnx"), *data)

    def compare_fit(*nets: Path) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(ROOT / "nets" / "compare_fit.py"), str(labelled / "pos"),
                               str(labelled / "lab"), *map(str, nets)], capture_output=True, text=True, timeout=300)

    out = compare_fit(tmp_path / "run" / "checkpoint.pt", tmp_path / "net.onnx", tmp_path / "early" / "checkpoint.pt")
    assert out.returncode == 0, out.stderr
    head, *lines = out.stdout.splitlines()
    labelled_positions = sum(len(fmt.load_shard(p)["wdl"]) for p in fmt.shards(labelled / "lab"))
    assert head.startswith(f"{labelled_positions:,} positions")
    fits = [[float(part.split()[-1].rstrip("%")) for part in line.split(": ", 1)[1].split(", ")] for line in lines]
    checkpoint, exported, early = fits
    assert all(abs(a - b) < 2e-3 * max(1.0, abs(a)) for a, b in zip(checkpoint, exported))
    assert checkpoint[1] < early[1] and checkpoint[2] > early[2]   # WDL CE, best move (the fake labels' soft policy
    # target is too broad for a tiny net's policy CE to fall)
    foreign = compare_fit(random_net(tmp_path / "lc0-style.onnx", "wdl"))
    assert foreign.returncode == 2 and "lc0-style.onnx: cannot read it back: not a net exported by" in foreign.stderr

    # --by-pieces, --by-value: the bands split the positions, and each fit over all of them is the bands' fits
    # weighed by size.
    for option, band_name in (("--by-pieces", "pieces"), ("--by-value", "|W-L|")):
        out = compare_fit(tmp_path / "run" / "checkpoint.pt", option)
        assert out.returncode == 0, out.stderr
        head, *lines = out.stdout.splitlines()
        bands = [line for line in lines if " positions (" in line]
        assert len(bands) > 1 and all(band_name in line for line in bands)
        sizes = [int(line.split(": ")[1].split()[0].replace(",", "")) for line in bands]
        assert sum(sizes) == labelled_positions
        fits = [[float(part.split()[-1].rstrip("%")) for part in line.split(": ", 1)[1].split(", ")]
                for line in lines if line.startswith(str(tmp_path))]
        assert len(fits) == 1 + len(bands)
        for column in range(4):
            weighed = sum(size * fit[column] for size, fit in zip(sizes, fits[1:])) / sum(sizes)
            assert abs(weighed - fits[0][column]) < 1e-3 * max(1.0, abs(fits[0][column]))

    # --results: the labels' draws and Q's correlation with the games' results as counted from the shards; the net's
    # the same whether read from the checkpoint or its export.
    out = compare_fit(tmp_path / "run" / "checkpoint.pt", tmp_path / "net.onnx", "--results")
    assert out.returncode == 0, out.stderr
    readings = [line.split(": ", 1)[1] for line in out.stdout.splitlines() if "draws: " in line]
    assert len(readings) == 2 and readings[0] == readings[1]
    numbers = [float(word.rstrip(",;")) for word in readings[0].split() if word[0].isdigit() or word[0] == "-"]
    wdl = np.concatenate([fmt.load_shard(p)["wdl"] for p in fmt.shards(labelled / "lab")])
    result = np.concatenate([fmt.load_shard(labelled / "pos" / p.name)["result"] for p in fmt.shards(labelled / "lab")])
    assert numbers[0] == round(float(wdl[:, 1].mean(dtype=np.float64)), 2)
    assert numbers[2] == round(float(np.mean(result == 0)), 2)
    assert numbers[3] == round(float(np.corrcoef(wdl[:, 0] - wdl[:, 2], result)[0, 1]), 2)
    assert 0 <= numbers[1] <= 1 and -1 <= numbers[4] <= 1


def test_a_dataset_counts_the_pieces_python_chess_sees(labelled):
    """``Dataset.pieces`` (the bands of ``compare_fit.py --by-pieces``, the endings of ``--ending-repeats``) counts
    each position's pieces as python-chess does on the same board."""
    from nets.training.dataset import load
    data, _ = load(labelled / "pos", labelled / "lab")
    boards = [fmt.board_from_row(row) for row in data.rows]
    assert list(data.pieces) == [len(board.piece_map()) for board in boards]


def test_an_epoch_index_repeats_the_endings_alone(labelled):
    """``epoch_index``: each position of at most ``ENDING_PIECES`` pieces ``ending_repeats`` times, every other once."""
    from nets.training.dataset import ENDING_PIECES, epoch_index, load
    data, _ = load(labelled / "pos", labelled / "lab")
    data.rows[: len(data) // 2, :2] &= np.uint64(0x8100_0000_0000_0081)   # make half of them endings: the corners
    ending = data.pieces <= ENDING_PIECES
    assert 0 < ending.sum() < len(data)
    assert list(epoch_index(data)) == list(range(len(data)))
    counts = collections.Counter(epoch_index(data, 3).tolist())
    assert [counts[i] for i in range(len(data))] == [3 if e else 1 for e in ending]
    with pytest.raises(ValueError):
        epoch_index(data, 0)


def test_an_epoch_index_thins_the_decided_positions_alone(labelled):
    """``epoch_index(decided_keep=F)``: of the positions whose label gives one side an expected score beyond 0.95, a
    share F drawn once by the seed; every balanced position stays, and kept endings keep their repeats."""
    from nets.training.dataset import DECIDED_Q, ENDING_PIECES, epoch_index, load
    data, _ = load(labelled / "pos", labelled / "lab")
    data.wdl[::2] = (0.97, 0.02, 0.01)
    data.wdl[1::2] = (0.05, 0.9, 0.05)
    decided = np.abs(data.wdl[:, 0] - data.wdl[:, 2]) >= DECIDED_Q
    index = epoch_index(data, decided_keep=0.25, seed=4)
    assert list(index) == sorted(set(index.tolist()))   # each position once at most, in order
    kept = np.zeros(len(data), dtype=bool)
    kept[index] = True
    assert kept[~decided].all() and 0 < kept[decided].sum() < 0.5 * decided.sum()
    assert np.array_equal(index, epoch_index(data, decided_keep=0.25, seed=4))
    assert not np.array_equal(index, epoch_index(data, decided_keep=0.25, seed=5))
    counts = collections.Counter(epoch_index(data, 3, 0.25, 4).tolist())
    ending = data.pieces <= ENDING_PIECES
    assert [counts[i] for i in range(len(data))] == [(3 if e else 1) * k for e, k in zip(ending, kept)]
    for bad in (0.0, 1.5):
        with pytest.raises(ValueError):
            epoch_index(data, decided_keep=bad)


def test_decided_keep_trains_fewer_steps_on_the_same_validation_and_a_resume_keeps_it(labelled, tmp_path):
    """``train --decided-keep F``: an epoch holds the balanced positions and F of the decided ones (fewer steps),
    validation keeps the data's own positions, the checkpoint records F, and a resumed run refuses another F."""
    torch = pytest.importorskip("torch")
    from nets.training.dataset import DECIDED_Q, epoch_index, load, split
    data, _ = load(labelled / "pos", labelled / "lab")
    assert (np.abs(data.wdl[:, 0] - data.wdl[:, 2]) >= DECIDED_Q).sum() > 20, "the fixture needs decided positions"
    common = ["--positions", str(labelled / "pos"), "--labels", str(labelled / "lab"), "--blocks", "1", "--filters",
              "8", "--batch-size", "4", "--eval-every", "1000", "--threads", "1", "--precision", "float32",
              "--epochs", "1", "--seed", "2"]
    saved = {}
    for share in ("1", "0.3"):
        run("train", *common, "--decided-keep", share, "--out", str(tmp_path / share))
        saved[share] = torch.load(tmp_path / share / "checkpoint.pt", weights_only=False)
    every, thinned = saved["1"]["data"], saved["0.3"]["data"]
    assert (every["decided_keep"], thinned["decided_keep"]) == (1.0, 0.3)
    assert (every["train"], every["validation"]) == (thinned["train"], thinned["validation"])
    train_set, _ = split(data, 0.03, 2)
    assert thinned["epoch_positions"] == len(epoch_index(train_set, decided_keep=0.3, seed=2)) < every["train"]
    assert saved["0.3"]["state"]["total"] == thinned["epoch_positions"] // 4 < saved["1"]["state"]["total"]
    refused = subprocess.run([*TRAINING, "train", *common, "--decided-keep", "0.5", "--out", str(tmp_path / "0.3")],
                             cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert refused.returncode != 0 and "0.3 of the decided" in refused.stderr
    for bad in ("0", "1.5", "half"):
        refused = subprocess.run([*TRAINING, "train", *common, "--decided-keep", bad, "--out", str(tmp_path / "x")],
                                 cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert refused.returncode == 2 and "--decided-keep" in refused.stderr


def test_a_lower_tower_rate_moves_the_shared_layers_less_than_the_heads(labelled, tmp_path):
    """``--tower-lr-scale F``: the stem and tower learn at F times the heads' rate (Adam's steps are about the rate
    each, so they move about F times as far); a resumed run refuses another F."""
    torch = pytest.importorskip("torch")
    data = ["--positions", str(labelled / "pos"), "--labels", str(labelled / "lab")]
    common = [*data, "--blocks", "1", "--filters", "8", "--batch-size", "16", "--eval-every", "1000", "--threads", "1",
              "--precision", "float32"]
    run("train", *common, "--epochs", "1", "--out", str(tmp_path / "start"))
    run("export", str(tmp_path / "start" / "checkpoint.pt"), str(tmp_path / "start.onnx"), *data)
    moved = {}
    for scale in ("1", "0.05"):
        out = tmp_path / f"scale-{scale}"
        run("train", *common, "--epochs", "2", "--init", str(tmp_path / "start.onnx"), "--tower-lr-scale", scale,
            "--lr", "3e-3", "--stop-at", "1", "--out", str(out))
        first = torch.load(out / "checkpoint.pt", weights_only=False)["model"]
        run("train", *common, "--epochs", "2", "--init", str(tmp_path / "start.onnx"), "--tower-lr-scale", scale,
            "--lr", "3e-3", "--out", str(out))
        last = torch.load(out / "checkpoint.pt", weights_only=False)["model"]
        distance = lambda prefix: sum(float((last[k] - first[k]).abs().sum()) for k in last
                                      if k.startswith(prefix) and k.endswith("weight"))
        moved[scale] = {"tower": distance("tower."), "policy": distance("policy_head.")}
    assert moved["0.05"]["tower"] < 0.2 * moved["1"]["tower"]
    assert moved["0.05"]["policy"] > 0.5 * moved["1"]["policy"]
    refused = subprocess.run([*TRAINING, "train", *common, "--epochs", "2", "--init", str(tmp_path / "start.onnx"),
                              "--tower-lr-scale", "0.5", "--out", str(tmp_path / "scale-1")], cwd=ROOT,
                             capture_output=True, text=True, timeout=300)
    assert refused.returncode != 0 and "tower at 1" in refused.stderr


def test_ending_repeats_train_more_steps_on_the_same_validation_and_a_resume_keeps_them(labelled, tmp_path):
    """``train --ending-repeats N``: the training side holds each ending N times (more steps an epoch), validation
    keeps the data's own positions, the checkpoint records N, and a resumed run refuses another N."""
    torch = pytest.importorskip("torch")
    from nets.training.dataset import ENDING_PIECES, load
    data, _ = load(labelled / "pos", labelled / "lab")
    assert (data.pieces <= ENDING_PIECES).any(), "the fixture needs endings"
    common = ["--positions", str(labelled / "pos"), "--labels", str(labelled / "lab"), "--blocks", "1", "--filters",
              "8", "--batch-size", "4", "--eval-every", "1000", "--threads", "1", "--precision", "float32",
              "--epochs", "1"]
    saved = {}
    for times in (1, 4):
        run("train", *common, "--ending-repeats", str(times), "--out", str(tmp_path / f"x{times}"))
        saved[times] = torch.load(tmp_path / f"x{times}" / "checkpoint.pt", weights_only=False)
    once, more = saved[1]["data"], saved[4]["data"]
    assert (once["ending_repeats"], more["ending_repeats"]) == (1, 4)
    assert (once["train"], once["validation"]) == (more["train"], more["validation"])   # the same split
    assert once["ending_copies"] == 0 and more["ending_copies"] > 0
    steps = lambda d: d["train"] // 4   # --batch-size 4, one epoch
    assert saved[1]["state"]["total"] == steps(once)
    assert saved[4]["state"]["total"] == (more["train"] + more["ending_copies"]) // 4 > steps(once)
    refused = subprocess.run([*TRAINING, "train", *common, "--ending-repeats", "2", "--out", str(tmp_path / "x4")],
                             cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert refused.returncode != 0 and "4 times" in refused.stderr
    for bad in ("0", "two"):
        refused = subprocess.run([*TRAINING, "train", *common, "--ending-repeats", bad, "--out", str(tmp_path / "x")],
                                 cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert refused.returncode == 2 and "--ending-repeats" in refused.stderr


def test_a_q_error_weight_adds_q_s_squared_error_to_the_loss_and_fits_q_closer(labelled, tmp_path):
    """``--q-mse-weight W``: the loss is the two cross-entropies plus W times Q's squared error, and the same steps
    from the same start bring the net's Q closer to the target's than the cross-entropies alone; a resumed run
    refuses another W."""
    torch = pytest.importorskip("torch")
    from nets.training.dataset import load
    from nets.training.model import ArborNet
    from nets.training.train import losses
    data, _ = load(labelled / "pos", labelled / "lab")
    batch = data.batch(np.arange(min(len(data), 64)), policy_temperature_cp=50)
    fitted = {}
    for weight in (0.0, 20.0):
        torch.manual_seed(0)
        net = ArborNet(1, 8, True)
        parts = losses(net, batch, q_mse_weight=weight)
        assert torch.isclose(parts["loss"], parts["policy"] + parts["value"] + weight * parts["q_mse"])
        opt = torch.optim.Adam(net.parameters(), lr=3e-3)
        for _ in range(40):
            opt.zero_grad()
            losses(net, batch, q_mse_weight=weight)["loss"].backward()
            opt.step()
        net.eval()
        with torch.no_grad():
            fitted[weight] = float(losses(net, batch)["q_mse"])
    assert fitted[20.0] < 0.7 * fitted[0.0]
    common = ["--positions", str(labelled / "pos"), "--labels", str(labelled / "lab"), "--blocks", "1", "--filters",
              "8", "--batch-size", "16", "--eval-every", "1000", "--threads", "1", "--precision", "float32",
              "--epochs", "2", "--out", str(tmp_path / "q")]
    run("train", *common, "--q-mse-weight", "4", "--stop-at", "1")
    assert torch.load(tmp_path / "q" / "checkpoint.pt", weights_only=False)["data"]["q_mse_weight"] == 4.0
    refused = subprocess.run([*TRAINING, "train", *common], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert refused.returncode != 0 and "weighed Q's squared error 4" in refused.stderr


def test_an_average_of_checkpoints_is_their_mean_and_exports_as_it_computes(tmp_path):
    """``average``: every floating tensor (weights and batch norms' statistics) the mean of the checkpoints', the
    ONNX net computing what the averaged PyTorch net computes; nets of other shapes are refused."""
    torch = pytest.importorskip("torch")
    from nets.training.export import load_net, onnx_outputs
    from nets.training.model import ArborNet, Exported
    paths = []
    for seed, filters in ((1, 8), (2, 8), (3, 16)):
        torch.manual_seed(seed)
        net = ArborNet(blocks=1, filters=filters, se=True)
        for module in net.modules():   # statistics of their own, as trained nets have
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.uniform_(-1, 1)
                module.running_var.uniform_(0.5, 2)
        paths.append(tmp_path / f"net{seed}.pt")
        torch.save({"config": net.config, "model": net.state_dict(), "data": {"lr": 3e-4}}, paths[-1])
    out = run("average", str(paths[0]), str(paths[1]), "--out", str(tmp_path / "soup.pt"), "--onnx",
              str(tmp_path / "soup.onnx"))
    assert "the average of 2 checkpoints" in out.stdout
    soup = torch.load(tmp_path / "soup.pt", weights_only=False)
    a, b = (torch.load(p, weights_only=False)["model"] for p in paths[:2])
    for key, value in soup["model"].items():
        expected = (a[key] + b[key]) / 2 if value.is_floating_point() else a[key]
        assert torch.equal(value, expected), key
    assert soup["data"]["averaged"] == [str(p) for p in paths[:2]] and soup["data"]["lr"] == 3e-4
    net, _ = load_net(tmp_path / "soup.pt")
    planes = lc0_planes.rows_to_planes(np.array([lc0_planes.gather(b, h) for b, h in random_games(8, seed=9)],
                                                dtype=np.uint64))
    with torch.no_grad():
        policy, wdl = (t.numpy() for t in Exported(net).eval()(torch.from_numpy(planes)))
    onnx_policy, onnx_wdl = onnx_outputs(tmp_path / "soup.onnx", planes)
    assert np.abs(onnx_policy - policy).max() < 1e-3 and np.abs(onnx_wdl - wdl).max() < 1e-3
    refused = subprocess.run([*TRAINING, "average", str(paths[0]), str(paths[2]), "--out", str(tmp_path / "x.pt")],
                             cwd=ROOT, capture_output=True, text=True)
    assert refused.returncode == 2 and "only nets of one shape average" in refused.stderr
