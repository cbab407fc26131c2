"""Golden test against real lc0: same network, same positions, lc0's own priors and values.

``../shared/lc0-reference/`` (from the project root) holds lc0's meangirl-8 network, converted by leela2onnx and in
lc0's own .pb.gz format, three Maia nets (``maia/``, .pb.gz only), and what lc0 printed for 60 positions with
PolicyTemperature=1 for each (see its README.md). Arbor must reproduce every prior within 0.05 percentage points and
every value within 2e-3 (MeanGirl) or 1e-3 (Maia), and a .pb.gz loaded directly must compute what lc0's own ONNX
conversion of it computes, within 1e-4.
"""

from __future__ import annotations

import json
from pathlib import Path

import chess
import pytest

from conftest import RawUci
from engine.evaluators.base import Leaf
from engine.evaluators.network import NetworkEvaluator
from engine.params import Params

REF = Path(__file__).resolve().parent.parent.parent / "shared" / "lc0-reference"
NET = REF / "meangirl-8.onnx"
NET_PB = REF / "meangirl-8.pb.gz"
DATA = REF / "meangirl-8.reference.jsonl"
MAIA = REF / "maia"
MAIA_RATINGS = (1100, 1500, 1900)
PRIOR_TOLERANCE_PP = 0.05
SAME_NET_TOLERANCE = 1e-4

#: (network, lc0's reference output, value tolerance), one per net.
CASES = [
    pytest.param((NET, DATA, 2e-3), id="meangirl-8.onnx"),
    pytest.param((NET_PB, DATA, 2e-3), id="meangirl-8.pb.gz"),
    *(pytest.param((MAIA / f"maia-{r}.pb.gz", MAIA / f"maia-{r}.reference.jsonl", 1e-3), id=f"maia-{r}.pb.gz")
      for r in MAIA_RATINGS),
]


def _require(*paths: Path) -> None:
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        pytest.skip(f"lc0 reference data not found: {', '.join(missing)}")


@pytest.fixture(scope="module", autouse=True)
def private_cache(tmp_path_factory):
    """Converted .pb.gz nets go to a cache folder of this module's own, not the user's."""
    cache = str(tmp_path_factory.mktemp("cache"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", cache)
        mp.setenv("LOCALAPPDATA", cache)
        yield


def leaf_for(position: str) -> Leaf:
    """The Leaf for the arguments of a UCI ``position`` command: final board, every earlier board as history."""
    tokens = position.split()
    if tokens[0] == "startpos":
        board, rest = chess.Board(), tokens[1:]
    else:
        end = tokens.index("moves") if "moves" in tokens else len(tokens)
        board, rest = chess.Board(" ".join(tokens[1:end])), tokens[end:]
    history = []
    for uci in rest[1:]:
        history.append(board.copy(stack=False))
        board.push_uci(uci)
    return Leaf(board.copy(stack=False), list(board.legal_moves), history)


def _records(data: Path = DATA):
    return [json.loads(line) for line in data.read_text().splitlines() if line.strip()]


def _evaluate(net: Path, records: list) -> list[Leaf]:
    leaves = [leaf_for(r["position"]) for r in records]
    params = Params(policy_temperature=1.0, nn_cache_size=0, network_precision="float")  # lc0's numbers are float's
    NetworkEvaluator(str(net), params).evaluate(leaves)
    return leaves


@pytest.fixture(scope="module", params=CASES)
def evaluated(request):
    net, data, value_tolerance = request.param
    _require(net, data)
    records = _records(data)
    return list(zip(records, _evaluate(net, records))), value_tolerance


def test_all_positions_present(evaluated):
    assert len(evaluated[0]) == 60


def test_priors_match_lc0(evaluated):
    worst = 0.0
    for record, leaf in evaluated[0]:
        ours = {m.uci(): 100.0 * p for m, p in zip(leaf.moves, leaf.priors)}
        assert set(ours) == set(record["policy"]), record["position"]
        for uci, want in record["policy"].items():
            diff = abs(ours[uci] - want)
            worst = max(worst, diff)
            assert diff <= PRIOR_TOLERANCE_PP, f"{record['position']}: {uci} {ours[uci]:.3f}% vs lc0 {want}%"
    print(f"largest prior difference: {worst:.4f} percentage points")


def test_values_match_lc0(evaluated):
    pairs, tolerance = evaluated
    worst = 0.0
    for record, leaf in pairs:
        assert leaf.board.turn == (record["side"] == "w")
        worst = max(worst, abs(leaf.value - record["value"]))
        assert abs(leaf.value - record["value"]) <= tolerance, \
            f"{record['position']}: {leaf.value} vs {record['value']}"
        assert leaf.raw_value == leaf.value
    print(f"largest value difference: {worst:.5f}")


def test_pb_gz_computes_what_leela2onnx_s_conversion_computes():
    _require(NET, NET_PB, DATA)
    records = _records()
    worst_prior = worst_value = 0.0
    for onnx_leaf, pb_leaf in zip(_evaluate(NET, records), _evaluate(NET_PB, records)):
        worst_prior = max(worst_prior, max(abs(a - b) for a, b in zip(onnx_leaf.priors, pb_leaf.priors)))
        worst_value = max(worst_value, abs(onnx_leaf.value - pb_leaf.value))
    print(f"meangirl-8.pb.gz vs meangirl-8.onnx: priors {worst_prior:.2e}, values {worst_value:.2e}")
    assert worst_prior <= SAME_NET_TOLERANCE and worst_value <= SAME_NET_TOLERANCE


def test_batched_equals_single():
    _require(NET, DATA)
    records = _records()[:12]
    ev = NetworkEvaluator(str(NET), Params(policy_temperature=1.0, nn_cache_size=0, network_precision="float"))
    batch = [leaf_for(r["position"]) for r in records]
    ev.evaluate(batch)
    for record, b in zip(records, batch):
        single = leaf_for(record["position"])
        ev.evaluate([single])
        assert abs(single.value - b.value) < 1e-5
        assert max(abs(x - y) for x, y in zip(single.priors, b.priors)) < 1e-5


def test_maia_at_one_node_plays_its_policy_s_top_move():
    """Maia is meant to be played at one node: ``go nodes 1`` must answer with the move lc0's policy ranks first."""
    net, data = MAIA / "maia-1500.pb.gz", MAIA / "maia-1500.reference.jsonl"
    _require(net, data)
    records = _records(data)
    engine = RawUci()
    try:
        engine.send("uci")
        engine.read_until("uciok")
        engine.send(f"setoption name WeightsFile value {net}")
        engine.send("setoption name NetworkPrecision value float")  # lc0's own numbers are float's
        assert f"info string loaded network {net}" in engine.ask_ready()
        for record in records:
            policy = record["policy"]
            top = max(policy.values())
            engine.send("ucinewgame")
            engine.send(f"position {record['position']}")
            engine.send("go nodes 1")
            move = engine.read_until("bestmove")[-1].split()[1]
            assert policy[move] == top, f"{record['position']}: played {move} ({policy[move]}%), top prior {top}%"
    finally:
        engine.close()


def test_the_tree_s_priors_and_values_match_lc0():
    """The tree's own path (its compiled board's input planes, its compiled decoding of the policy, its 16-bit
    priors) against lc0's numbers, position by position."""
    from conftest import tree_evaluation
    _require(NET, DATA)
    ev = NetworkEvaluator(str(NET), Params(policy_temperature=1.0, nn_cache_size=0, network_precision="float"))
    worst = 0.0
    for record in _records():
        leaf = leaf_for(record["position"])
        priors, value, _, _ = tree_evaluation(ev, leaf.board, leaf.history)
        ours = {m.uci(): 100.0 * p for m, p in priors.items()}
        assert set(ours) == set(record["policy"]), record["position"]
        for uci, want in record["policy"].items():
            worst = max(worst, abs(ours[uci] - want))
            assert abs(ours[uci] - want) <= PRIOR_TOLERANCE_PP, f"{record['position']}: {uci} {ours[uci]:.3f}%"
        assert abs(value - record["value"]) <= 2e-3, record["position"]
    print(f"largest prior difference, the tree's: {worst:.4f} percentage points")
