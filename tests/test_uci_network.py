"""Networks through UCI: loading, bad files, the fallback to the heuristic, VerboseMoveStats."""

from __future__ import annotations

from pathlib import Path

import chess
import pytest

REFERENCE = Path(__file__).resolve().parent.parent.parent / "shared" / "lc0-reference" / "meangirl-8.onnx"
needs_reference = pytest.mark.skipif(not REFERENCE.exists(), reason="../shared/lc0-reference is absent")


def search_ok(raw, nodes=50, position="startpos"):
    raw.send(f"position {position}")
    raw.send(f"go nodes {nodes}")
    lines = raw.read_until("bestmove")
    board = chess.Board() if position == "startpos" else chess.Board(position[4:])
    assert chess.Move.from_uci(lines[-1].split()[1]) in board.legal_moves
    return lines


@pytest.mark.parametrize("content", [None, b"", b"this is not an onnx file", bytes(range(256)) * 40])
def test_bad_network_files_fall_back_to_heuristic(raw, tmp_path, content):
    path = tmp_path / "net.onnx"
    if content is not None:
        path.write_bytes(content)
    raw.send(f"setoption name WeightsFile value {path}")
    lines = raw.ask_ready()
    problem = [line for line in lines if line.startswith("info string") and str(path) in line]
    assert problem, lines
    search_ok(raw)


def test_wrong_shapes_are_rejected(raw, tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("/input/planes", TensorProto.FLOAT, ["B", 12, 8, 8])
    y = helper.make_tensor_value_info("/output/policy", TensorProto.FLOAT, ["B", 12, 8, 8])
    graph = helper.make_graph([helper.make_node("Identity", ["/input/planes"], ["/output/policy"])],
                              "wrong", [x], [y])
    path = tmp_path / "wrong.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    raw.send(f"setoption name WeightsFile value {path}")
    lines = raw.ask_ready()
    assert any(str(path) in line for line in lines), lines
    search_ok(raw)


def test_network_evaluator_without_network_says_so_on_every_go(raw, tmp_path):
    raw.send(f"setoption name WeightsFile value {tmp_path / 'missing.onnx'}")
    raw.send("setoption name Evaluator value network")
    for _ in range(2):
        lines = search_ok(raw)
        assert any("Evaluator=network" in line for line in lines)


@needs_reference
def test_real_network_plays_and_reports_verbose_stats(raw):
    raw.send(f"setoption name WeightsFile value {REFERENCE}")
    raw.send("setoption name VerboseMoveStats value true")
    lines = raw.ask_ready()
    assert any("loaded network" in line for line in lines)
    raw.send("ucinewgame")
    lines = search_ok(raw, nodes=1)
    stats = [line for line in lines if line.startswith("info string") and " N: " in line]
    assert len(stats) == 21  # 20 moves and the node line
    assert stats[-1].startswith("info string node")
    assert "(V: " in stats[-1] and "(P: " in stats[0]
    lines = search_ok(raw, nodes=400)
    assert any(line.startswith("info depth") for line in lines)


@needs_reference
def test_real_network_finds_the_seed_mate(raw):
    raw.send(f"setoption name WeightsFile value {REFERENCE}")
    raw.send("position fen r2qkb1r/pp2nppp/3p4/2pNN1B1/2BnP3/3P4/PPP2PPP/R2bK2R w KQkq - 1 10")
    raw.send("go nodes 800")
    lines = raw.read_until("bestmove", timeout=60)
    assert lines[-1].split()[1] == "d5f6"
    assert any("score mate 2" in line for line in lines)


def _cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process and all its threads, read from outside (/proc)."""
    import os
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
@pytest.mark.parametrize("evaluator", ["heuristic", "network"])
def test_threads_1_uses_one_core(raw, tmp_path, evaluator):
    """Threads=1 (the default) is one core: over a 'go infinite', CPU time over wall time stays at most 1.1, the
    network included (it used to run on a second thread beside the tree work: 1.65 cores)."""
    import sys
    import time
    import onnx
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "nets"))
    import make_random_net
    if evaluator == "network":
        net = tmp_path / "net.onnx"
        onnx.save(make_random_net.build(blocks=4, filters=32, se=True, seed=1), str(net))  # MeanGirl-8's size
        raw.send(f"setoption name WeightsFile value {net}")
    raw.send(f"setoption name Evaluator value {evaluator}")
    raw.send("setoption name Threads value 1")
    raw.ask_ready(timeout=60)
    raw.send("position startpos moves e2e4 e7e5")
    pid = raw.proc.pid
    raw.send("go infinite")
    raw.read_until("info", timeout=30)  # searching
    cpu0, wall0 = _cpu_seconds(pid), time.monotonic()
    time.sleep(4.0)
    cpu1, wall1 = _cpu_seconds(pid), time.monotonic()
    raw.send("stop")
    raw.read_until("bestmove", timeout=10)
    cores = (cpu1 - cpu0) / (wall1 - wall0)
    assert cores <= 1.1, f"{evaluator}: {cores:.2f} cores at Threads=1"
