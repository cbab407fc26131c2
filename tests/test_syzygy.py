"""Syzygy tablebases: exact results in the tree, DTZ at the root, tbhits, and bad folders or files.

The tables in tests/data/syzygy (3 and 4 pieces) come from python-chess's test data; see
tests/data/syzygy/SOURCE.md.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import chess
import chess.engine
import chess.syzygy
import pytest

from engine.search.tablebase import DRAW, LOSS, WIN, Tablebases

TABLES = Path(__file__).resolve().parent / "data" / "syzygy"
KQK = "8/8/8/8/8/6k1/8/KQ6 w - - 0 1"
# The longest KBNvK win found among 20,000 random placements: DTZ 64 plies, the bishop and the
# knight far from the corner where mate must happen.
KBNK_HARD = "8/8/8/1B6/8/2k5/8/N6K w - - 0 1"


def _dtz_after(board: chess.Board, move: chess.Move) -> int:
    with chess.syzygy.open_tablebase(str(TABLES)) as tables:
        child = board.copy()
        child.push(move)
        return 0 if child.is_checkmate() else tables.probe_dtz(child)


def test_results_and_dtz_choice():
    said: list[str] = []
    tb = Tablebases(str(TABLES), said.append)
    assert tb.loaded and tb.max_pieces == 4 and said[0].startswith("Syzygy tablebases: 12 tables")
    assert tb.result(chess.Board(KQK)) == WIN
    assert tb.result(chess.Board("8/8/8/8/8/8/6k1/K6q w - - 0 1")) == LOSS
    assert tb.result(chess.Board("8/8/4k3/8/8/8/8/KB6 w - - 0 1")) == DRAW
    assert tb.result(chess.Board(chess.STARTING_FEN)) is None          # too many pieces
    board = chess.Board(KBNK_HARD)
    allowed = tb.root_moves(board, list(board.legal_moves))
    dtz = {m: _dtz_after(board, m) for m in board.legal_moves}
    fastest = max(d for d in dtz.values() if d < 0)                     # the opponent's DTZ: closest to 0
    assert allowed and {m for m in allowed} == {m for m, d in dtz.items() if d == fastest}
    assert tb.hits > 0


def test_fifty_move_rule_turns_a_slow_win_into_a_draw():
    tb = Tablebases(str(TABLES), lambda text: None)
    board = chess.Board(KBNK_HARD.replace(" 0 1", " 80 41"))            # 64 plies needed, 20 left
    assert len(tb.root_moves(board, list(board.legal_moves))) == board.legal_moves.count()


def test_bad_folders_and_corrupt_files_are_reported_not_raised(tmp_path):
    said: list[str] = []
    Tablebases(f"{tmp_path / 'missing'}:{tmp_path}", said.append)
    assert any("is not a folder" in s for s in said) and any("no Syzygy tables" in s for s in said)
    (tmp_path / "KQvK.rtbw").write_bytes(b"not a table" * 50)
    said.clear()
    tb = Tablebases(str(tmp_path), said.append)
    assert tb.result(chess.Board(KQK)) is None and tb.result(chess.Board(KQK)) is None
    assert len([s for s in said if "could not be read" in s]) == 1


@pytest.mark.parametrize("evaluator", ["heuristic", "network"])
def test_uci_tablebase_move_score_and_tbhits(raw, evaluator, tmp_path):
    """DTZ leaves one move here. A batched (network) search must still value it before answering: it
    checks its limits before the first batch, and an unvisited move would be reported as 0.00."""
    if evaluator == "network":
        import onnx
        import sys
        sys.path.insert(0, str(TABLES.parents[2] / "nets"))
        from make_random_net import build
        onnx.save(build(blocks=1, filters=8), tmp_path / "tiny.onnx")
        raw.send(f"setoption name WeightsFile value {tmp_path / 'tiny.onnx'}")
    else:
        raw.send("setoption name Evaluator value heuristic")
    raw.send(f"setoption name SyzygyPath value {TABLES}")
    lines = raw.ask_ready()
    assert any(line.startswith("info string Syzygy tablebases: 12 tables") for line in lines)
    raw.send(f"position fen {KBNK_HARD}")
    raw.send("go movetime 2000")
    lines = raw.read_until("bestmove", timeout=20)
    board = chess.Board(KBNK_HARD)
    move = chess.Move.from_uci(lines[-1].split()[1])
    dtz = {m: _dtz_after(board, m) for m in board.legal_moves}
    assert dtz[move] == max(d for d in dtz.values() if d < 0), (move, dtz[move])
    last = [line for line in lines if line.startswith("info depth")][-1]
    assert int(re.search(r" tbhits (\d+)", last).group(1)) > 0
    assert int(re.search(r" score cp (-?\d+)", last).group(1)) > 5000   # won, no mate count


def test_uci_bad_syzygy_path_keeps_the_engine_answering(raw):
    raw.send("setoption name SyzygyPath value /no/such/folder")
    lines = raw.ask_ready()
    assert any("SyzygyPath: '/no/such/folder' is not a folder" in line for line in lines)
    raw.send(f"position fen {KQK}")
    raw.send("go nodes 50")
    assert raw.read_until("bestmove", timeout=20)[-1].startswith("bestmove")


def _stockfish() -> str | None:
    return shutil.which("stockfish") or (shutil.which("/usr/games/stockfish"))


@pytest.mark.skipif(_stockfish() is None, reason="needs Debian's stockfish package (apt-get install stockfish)")
def test_kbnk_is_converted_within_the_fifty_move_rule_against_stockfish(engine):
    """Arbor mates with bishop and knight from a hard start, Stockfish defending with the same
    tables; the 50-move rule would end the game first if Arbor made no progress."""
    engine.configure({"SyzygyPath": str(TABLES)})
    defender = chess.engine.SimpleEngine.popen_uci(_stockfish())
    try:
        defender.configure({"SyzygyPath": str(TABLES)})
        board = chess.Board(KBNK_HARD)
        while not board.is_game_over(claim_draw=False) and len(board.move_stack) < 200:
            side = engine if board.turn == chess.WHITE else defender
            limit = chess.engine.Limit(nodes=400) if side is engine else chess.engine.Limit(depth=12)
            board.push(side.play(board, limit).move)
        plies = len(board.move_stack)
    finally:
        defender.quit()
    assert board.is_checkmate() and board.turn == chess.BLACK, (board.fen(), plies)
    # The tables' DTZ is 64 plies. Syzygy DTZ values may be one ply above the true distance, so moves
    # the root filter ranks equal can differ by a ply: allow one.
    assert plies <= 65


def test_a_root_that_enters_the_tables_after_a_search_is_filtered_by_dtz():
    """The search before the capture saw the child as a tablebase result (a terminal node), so the child
    becomes a fresh root, and its moves are cut down to DTZ's choice rather than kept from the old tree."""
    from engine.evaluators.heuristic import HeuristicEvaluator
    from engine.board import convert
    from engine.params import Params
    from engine.search.search import Search
    from engine.search.timeman import Limits
    from engine.search.tree import Tree

    before = chess.Board("8/3n4/8/1B6/8/2k5/8/N6K w - - 0 1")      # Bxd7 leaves KBN v K, black to move
    tree = Tree()
    tb = Tablebases(str(TABLES), lambda text: None)
    search = Search(tree, HeuristicEvaluator(), Params(), tablebases=tb)
    tree.set_position(before.fen(), [before.copy(stack=False)], [])
    search.run(Limits(nodes=3000))
    capture = chess.Move.from_uci("b5d7")
    after = before.copy()
    after.push(capture)
    assert tree.root_node.child(convert.core_move(before, capture)).terminal
    assert tree.set_position(before.fen(), [before.copy(stack=False), after.copy(stack=False)], [capture]) == 0
    search.run(Limits(nodes=300))
    allowed = tb.root_moves(after, list(after.legal_moves))
    assert allowed and len(allowed) < after.legal_moves.count()
    assert {c.move for c in tree.root_node.children} == {convert.core_move(after, m) for m in allowed}
