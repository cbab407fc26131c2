"""Golden test against real lc0: same network, same positions, lc0's own priors and values.

``../shared/lc0-reference/`` (from the project root) holds lc0's meangirl-8 network converted by leela2onnx and
what lc0 printed for 60 positions with PolicyTemperature=1 (see its README.md). Arbor must reproduce every prior
within 0.05 percentage points and every value within 2e-3.
"""

from __future__ import annotations

import json
from pathlib import Path

import chess
import pytest

from engine.evaluators.base import Leaf
from engine.evaluators.network import NetworkEvaluator
from engine.params import Params

REF = Path(__file__).resolve().parent.parent.parent / "shared" / "lc0-reference"
NET = REF / "meangirl-8.onnx"
DATA = REF / "meangirl-8.reference.jsonl"

pytestmark = pytest.mark.skipif(not (NET.is_file() and DATA.is_file()),
                                reason=f"lc0 reference data not found at {REF}")


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


def _records():
    return [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def evaluated():
    records = _records()
    leaves = [leaf_for(r["position"]) for r in records]
    NetworkEvaluator(str(NET), Params(policy_temperature=1.0, nn_cache_size=0)).evaluate(leaves)
    return list(zip(records, leaves))


def test_all_positions_present(evaluated):
    assert len(evaluated) == 60


def test_priors_match_lc0(evaluated):
    worst = 0.0
    for record, leaf in evaluated:
        ours = {m.uci(): 100.0 * p for m, p in zip(leaf.moves, leaf.priors)}
        assert set(ours) == set(record["policy"]), record["position"]
        for uci, want in record["policy"].items():
            diff = abs(ours[uci] - want)
            worst = max(worst, diff)
            assert diff <= 0.05, f"{record['position']}: {uci} {ours[uci]:.3f}% vs lc0 {want}%"
    print(f"largest prior difference: {worst:.4f} percentage points")


def test_values_match_lc0(evaluated):
    for record, leaf in evaluated:
        assert leaf.board.turn == (record["side"] == "w")
        assert abs(leaf.value - record["value"]) <= 2e-3, f"{record['position']}: {leaf.value} vs {record['value']}"
        assert leaf.raw_value == leaf.value


def test_batched_equals_single():
    records = _records()[:12]
    ev = NetworkEvaluator(str(NET), Params(policy_temperature=1.0, nn_cache_size=0))
    batch = [leaf_for(r["position"]) for r in records]
    ev.evaluate(batch)
    for record, b in zip(records, batch):
        single = leaf_for(record["position"])
        ev.evaluate([single])
        assert abs(single.value - b.value) < 1e-5
        assert max(abs(x - y) for x, y in zip(single.priors, b.priors)) < 1e-5
