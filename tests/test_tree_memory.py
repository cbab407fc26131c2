"""A compact tree (packed positions, move ids, float32 priors) and the RamLimitMb cap."""

from __future__ import annotations

import random
import re
import time

import chess
import pytest

from engine.uci.bench import run_memory_bench, tree_size
from engine.evaluators.heuristic import HeuristicEvaluator
from engine.board.game import ChessGame
from engine.params import Params
from engine.search.search import Search
from engine.search.timeman import Limits
from engine.search.memory import free_given_up
from engine.tools.memwatch import rss_bytes
from engine.search.report import root_lines
from engine.search.tree import NODE_BYTES, WIN, Tree

FENS = [
    chess.STARTING_FEN,
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",   # castling both ways
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",          # en passant
    "8/2P3k1/8/8/8/8/5p2/K7 w - - 0 60",                                       # promotions
]


def test_packed_positions_and_move_ids_round_trip():
    """unpack(pack(b)) is b, and successor() is python-chess's push, along random games."""
    game = ChessGame()
    rng = random.Random(7)
    checked = 0
    for fen in FENS + [chess.Board.from_chess960_pos(n).fen() for n in (0, 518, 959)]:
        board = chess.Board(fen, chess960="w - -" not in fen and fen != chess.STARTING_FEN and "K" in fen.split()[2]
                            and fen.split()[0].count("r") == 2 and False)
        for _ in range(60):
            moves = list(board.legal_moves)
            if not moves:
                break
            packed = game.pack(board)
            assert isinstance(packed, bytes) and len(packed) < 100
            again = game.unpack(packed)
            assert again == board and again.fen() == board.fen() and again.chess960 == board.chess960
            ids = game.move_ids(moves)
            assert max(ids) < 1 << 16 and len(set(ids)) == len(ids)
            assert [game.move_from_id(i) for i in ids] == moves
            move = rng.choice(moves)
            child = game.successor(packed, ids[moves.index(move)])
            board.push(move)
            assert child.fen() == board.fen() and child == board.copy(stack=False)
            assert not child.move_stack
            checked += 1
    assert checked > 200


def _fields(board: chess.Board) -> tuple:
    return (board.occupied_co[chess.WHITE], board.occupied_co[chess.BLACK], board.occupied, board.pawns,
            board.knights, board.bishops, board.rooks, board.queens, board.kings, board.promoted,
            board.castling_rights, board.turn, board.ep_square, board.halfmove_clock, board.fullmove_number,
            board.chess960)


# Castling rights a FEN gives but the position cannot use (rook or king gone), which push drops.
UNCLEAN_RIGHTS = [
    "r3k2r/8/8/8/8/8/8/4K2R w KQkq - 0 1",     # white's a1 rook is missing
    "r3k3/8/8/8/8/8/8/R3K2R b KQkq - 12 40",   # black's h8 rook is missing
    "r3k2r/8/8/8/8/8/8/R4K1R w KQkq - 0 1",    # white's king is off e1
]


def test_successor_is_push_for_every_legal_move():
    """successor() reads the packed bitboards itself: for every legal move of positions along random games
    (captures, promotions and under-promotions of promoted pieces, castling, en passant, rights a FEN gave but
    the position cannot have, Chess960), it gives exactly the board python-chess's push gives."""
    game = ChessGame()
    rng = random.Random(5)
    starts = [chess.Board(fen) for fen in FENS + UNCLEAN_RIGHTS]
    starts += [chess.Board.from_chess960_pos(n) for n in (0, 518, 959)]
    for board in starts[-3:]:
        board.chess960 = True
    seen = set()
    for start in starts:
        for _ in range(6):
            board = start.copy(stack=False)
            for _ in range(rng.randrange(0, 60)):
                moves = list(board.legal_moves)
                if not moves:
                    break
                packed = game.pack(board)
                for move, move_id in zip(*game.legal_moves_and_ids(board)):
                    expected = board.copy(stack=False)
                    expected.push(move)
                    child = game.successor(packed, move_id)
                    assert _fields(child) == _fields(expected), (board.fen(), move.uci())
                    assert not child.move_stack and not child._stack
                    seen.add("promotion" if move.promotion else "castling" if board.is_castling(move)
                             else "en passant" if board.is_en_passant(move) else "capture" if board.is_capture(move)
                             else "move")
                board.push(rng.choice(moves))
                board = board.copy(stack=False)
    assert seen == {"promotion", "castling", "en passant", "capture", "move"}


# Moves to a1-c1 and to f8-h8 from one square: their bitboards differ by multiples of 2**61 - 1, the
# modulus of Python's int hash, so hash(board._transposition_key()) cannot tell them apart.
ALIASED_SIBLINGS = [
    ("2r5/8/8/K3k3/8/8/8/8 b - - 0 1", "c8c1", "c8h8"),   # a rook along its rank or its file
    ("4k3/7B/8/8/8/8/8/4K3 w - - 0 1", "h7b1", "h7g8"),    # a bishop along its two diagonals
    ("4k3/8/8/8/8/8/1Q6/6K1 w - - 0 1", "b2c1", "b2h8"),   # a queen
]


@pytest.mark.parametrize("fen, first, second", ALIASED_SIBLINGS)
def test_position_keys_tell_apart_what_int_hashes_confuse(fen, first, second):
    """Repetition keys of two different positions differ; equal positions (whatever their
    counters) share one."""
    game = ChessGame()
    a, b = chess.Board(fen), chess.Board(fen)
    a.push_uci(first)
    b.push_uci(second)
    assert hash(a._transposition_key()) == hash(b._transposition_key())  # the trap is real
    assert game.key(a) != game.key(b)
    again = chess.Board(a.fen().replace(" 1 1", " 37 60"))
    assert game.key(again) == game.key(a)


def test_position_keys_are_equal_exactly_for_repeated_positions():
    """Along random games, two positions share a key exactly when python-chess calls them the same
    position for repetitions (en passant counted only when it can be played)."""
    game = ChessGame()
    rng = random.Random(11)
    by_key: dict = {}
    for fen in FENS:
        for _ in range(20):
            board = chess.Board(fen)
            for _ in range(80):
                key = game.key(board)
                assert game.packed_key(game.pack(board)) == key   # what a repetition check reads off a node
                by_key.setdefault(key, set()).add(board._transposition_key())
                moves = list(board.legal_moves)
                if not moves:
                    break
                board.push(rng.choice(moves))
    assert len(by_key) > 3000 and all(len(v) == 1 for v in by_key.values())


def test_chess960_flag_survives_packing():
    game = ChessGame()
    board = chess.Board.from_chess960_pos(100)
    assert game.unpack(game.pack(board)).chess960


def _searched_tree(simulations: int, **params) -> tuple[Tree, Search, list[str]]:
    game = ChessGame()
    tree = Tree(game)
    board = chess.Board(FENS[1])
    tree.set_position(board.fen(), [board.copy(stack=False)], [])
    said: list[str] = []
    search = Search(game, tree, HeuristicEvaluator(), Params(**params), on_string=said.append)
    search.run(Limits(nodes=simulations))
    return tree, search, said


def test_nodes_hold_no_boards_and_no_move_objects():
    tree, _, _ = _searched_tree(2000)
    todo, seen = [tree.root], 0
    while todo:
        node = todo.pop()
        seen += 1
        # A node keeps its position once a child has been worked out from it (the root always); a leaf keeps none.
        if node is tree.root or any(c.n and not c.terminal for c in node.children):
            assert isinstance(node.state, bytes)
        elif not node.children:
            assert node.state is None
        assert isinstance(node.move, int) or node is tree.root
        if node.edges is not None:
            assert isinstance(node.edges, bytes)       # value, move ids and priors in one object
            assert len(node.moves) == len(node.priors) == node.edge_count() > 0
            assert list(node.priors) == sorted(node.priors, reverse=True) or node.children and node.children[0].proven
        todo.extend(node.children)
    assert seen == tree_size(tree.root)[0] > 1000


def test_a_leaf_without_its_position_becomes_a_parent_and_a_root():
    """A leaf keeps no position: when its first child opens, its position is worked out again from its parent's,
    and when a game moves onto it, the tree takes the position the game gives. Both search on as if it had kept it."""
    tree, search, _ = _searched_tree(1500)
    game = tree.game
    parent = next(c for c in tree.root.children if c.children)
    leaf = next(c for c in parent.children if c.n == 1 and not c.children and c.proven is None)
    assert leaf.state is None
    board = chess.Board(FENS[1])
    board.push(game.move_from_id(parent.move))
    expected = game.successor(game.pack(board), leaf.move)
    board.push(game.move_from_id(leaf.move))
    assert game.pack(expected) == game.pack(board)
    states = [chess.Board(FENS[1])]
    for move in (parent.move, leaf.move):
        states.append(states[-1].copy(stack=False))
        states[-1].push(game.move_from_id(move))
    kept = tree.set_position(chess.Board(FENS[1]).fen(), states, [game.move_from_id(parent.move),
                                                                  game.move_from_id(leaf.move)])
    assert kept == 1 and tree.root is leaf and leaf.state == game.pack(board)
    search.run(Limits(nodes=300))
    assert leaf.n == 301 and all(c.state is not None for c in leaf.children if c.children)


def test_a_node_costs_under_a_kilobyte():
    said: list[str] = []
    per_node = run_memory_bench(ChessGame(), HeuristicEvaluator(), Params(), said.append, 5000)
    assert 200 < per_node <= 1024, said
    assert per_node <= NODE_BYTES  # the estimate RamLimitMb uses is not below the real cost
    assert any(line.startswith("Bytes/node") for line in said)


def test_at_the_cap_the_search_frees_given_up_lines_and_goes_on():
    limit_mb = 2
    tree, search, said = _searched_tree(20_000, ram_limit_mb=limit_mb)
    budget = limit_mb * (1 << 20) // NODE_BYTES
    assert tree.root.n == 20_000 > 5 * budget                 # the visits went on past the cap
    assert _visited(tree.root) <= tree.nodes <= budget      # the count RamLimitMb uses is not below the tree
    notes = [s for s in said if s.startswith("RamLimitMb reached")]
    assert len(notes) == 1 and "the search goes on" in notes[0], said
    best = tree.root.ranked_children()[0]
    assert best.children                                     # the main line kept its subtree
    unlimited, _, said = _searched_tree(3000, ram_limit_mb=0)
    assert unlimited.root.n >= 3000 and unlimited.nodes == _visited(unlimited.root) and not said


def _stats(node):
    return node.n, node.w, node.d, node.proven, node.plies, node.edges


def test_a_freed_subtree_keeps_its_statistics_and_a_proof_is_never_freed():
    tree, _, _ = _searched_tree(4000)
    root = tree.root
    children = root.ranked_children()
    before = {id(c): _stats(c) for c in children}
    # A proof deep in one given-up line: a mate the solver found there must survive any freeing.
    proven_line = children[1]
    deep = proven_line
    while deep.children:
        deep = max(deep.children, key=lambda c: c.n)
    deep.proven, deep.plies = WIN, 3   # a solver's proof, not a finished game
    reported = root_lines(root, root.ranked_children(), tree.game, 3, 1.0, root.n, 0, 0, 0)
    freed = free_given_up(root, goal=10 ** 9)
    assert freed > 1000
    assert [id(c) for c in root.ranked_children()] == [id(c) for c in children]
    assert all(_stats(c) == before[id(c)] for c in children)   # visits, value, draws, proofs, moves and priors
    assert children[0].children                                # the most visited line keeps its subtree
    assert proven_line.children and _reaches(proven_line, deep)
    assert any(c.n > 1 and not c.children for c in children[2:])
    again = root_lines(root, root.ranked_children(), tree.game, 3, 1.0, root.n, 0, 0, 0)
    assert [(i.q, i.mate, i.wdl) for i in again] == [(i.q, i.mate, i.wdl) for i in reported]
    assert again[0].pv == reported[0].pv                       # the main line is whole


def _visited(top) -> int:
    """Nodes below ``top`` (itself included) with a visit: what ``Tree.nodes`` counts."""
    count, todo = 0, [top]
    while todo:
        node = todo.pop()
        count += node.n > 0
        todo.extend(node.children)
    return count


def _reaches(top, target) -> bool:
    todo = [top]
    while todo:
        node = todo.pop()
        if node is target:
            return True
        todo.extend(node.children)
    return False


def test_a_freed_line_grows_again_when_the_search_comes_back():
    tree, search, _ = _searched_tree(3000)
    root = tree.root
    free_given_up(root, goal=10 ** 9)
    freed = [c for c in root.children if c.n > 1 and not c.children]
    assert freed
    tree.nodes = _visited(root)
    search.run(Limits(nodes=6000))
    assert tree.nodes == _visited(root)
    assert any(c.children for c in freed)


def test_ram_limit_under_go_infinite_keeps_searching_and_stops_at_once(raw):
    raw.send("setoption name RamLimitMb value 1")
    raw.send("position startpos")
    raw.send("go infinite")
    lines = raw.read_until("info string RamLimitMb reached", timeout=60)
    assert not any(line.startswith("bestmove") for line in lines)
    assert "the search goes on" in lines[-1]
    time.sleep(2.5)
    got = raw.ask_ready(timeout=5)  # still answering, still holding its move
    assert not any(line.startswith("bestmove") for line in got)
    sent = time.monotonic()
    raw.send("stop")
    lines = raw.read_until("bestmove", timeout=5)
    assert time.monotonic() - sent < 1.0
    assert chess.Move.from_uci(lines[-1].split()[1]) in chess.Board().legal_moves
    nodes = [int(m.group(1)) for line in raw.lines if (m := re.search(r" nodes (\d+)", line))]
    assert nodes[-1] > 2 * (1 << 20) // NODE_BYTES  # visits went on well past what the tree can hold


def test_ram_limit_with_a_clock_plays_its_move(raw):
    raw.send("setoption name RamLimitMb value 1")
    raw.send("position startpos")
    raw.send("go wtime 120000 btime 120000")  # a few seconds planned: the cap is reached, the search goes on
    lines = raw.read_until("bestmove", timeout=60)
    assert any(line.startswith("info string RamLimitMb reached") for line in lines)
    assert chess.Move.from_uci(lines[-1].split()[1]) in chess.Board().legal_moves


def _rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and the processes it started (its workers), in MB."""
    return rss_bytes(pid) / (1 << 20)


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(__import__("os"), "sched_getaffinity"), reason="needs /proc (Linux)")
@pytest.mark.parametrize("threads", [1, 2])
def test_sixty_seconds_of_analysis_stay_under_the_cap(raw, threads):
    """The issue's check: go infinite with RamLimitMb=150 for 60 s; RSS stays under the cap plus
    the start-up size, counted over the engine and its worker processes (Threads=2)."""
    cap = 150
    raw.send(f"setoption name Threads value {threads}")
    raw.send(f"setoption name RamLimitMb value {cap}")
    # The start-up size of a ready engine includes its evaluator's working memory (onnxruntime's
    # buffers with a network), in its workers too: a short search once they have loaded their network,
    # then a new game empties tree and cache again.
    raw.ask_ready()
    if threads > 1:
        time.sleep(3.0)
    raw.send("position startpos")
    raw.send(f"go nodes {64 * threads * threads}")
    raw.read_until("bestmove", timeout=60)
    raw.send("ucinewgame")
    raw.ask_ready()
    start_rss = _rss_mb(raw.proc.pid)
    raw.send("position startpos moves e2e4 e7e5 g1f3")
    raw.send("go infinite")
    peak, reached = start_rss, False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for line in raw.drain(0.5):
            reached = reached or line.startswith("info string RamLimitMb reached")
        peak = max(peak, _rss_mb(raw.proc.pid))
    raw.send("stop")
    lines = raw.read_until("bestmove", timeout=5)
    nodes = [int(m.group(1)) for line in raw.lines if (m := re.search(r" nodes (\d+)", line))]
    assert peak <= cap + start_rss, (peak, start_rss, nodes[-1:])
    # Either the cap was reached and said so, or the machine was too slow to fill it.
    assert reached or nodes[-1] * NODE_BYTES < cap * (1 << 20), nodes[-1:]
    assert lines[-1].startswith("bestmove")


PINS_AND_EN_PASSANT = [
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",                         # en passant along a pinned rank
    "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",  # pins, promotions
    "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8",         # checks, promotion with capture
    "4k3/8/8/2KPp2r/8/8/8/8 w - e6 0 2",                                  # en passant that would expose the king
    "4k3/4r3/8/8/8/8/4B3/4K3 w - - 0 1",                                   # a pinned bishop
]
CASTLING = [
    "r3k2r/8/8/8/8/8/5r2/R3K2R w KQkq - 0 1",       # f1 attacked: no kingside castling
    "r3k2r/8/8/8/8/8/1r6/R3K2R w KQkq - 0 1",       # b1 attacked: queenside castling still legal
    "r3k2r/8/8/8/8/8/8/RN2K1NR w KQkq - 0 1",       # both ways blocked
    "r3k2r/8/8/8/8/8/8/4K2R w KQkq - 0 1",          # a right without its rook
    "r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1",         # black to move
    "r3k2r/8/8/8/8/8/8/R2bK2R w KQkq - 0 1",        # d1 occupied by the enemy
    "r3k2r/8/8/8/8/8/6p1/R3K2R w KQkq - 0 1",       # pawn covers f1 and h1
]


def test_legal_moves_equal_python_chess():
    """The one-pass generator (only risky moves safety-tested) gives python-chess's moves, in its
    order, with their ids."""
    game = ChessGame()
    rng = random.Random(3)
    checked = 0
    for fen in FENS + PINS_AND_EN_PASSANT + CASTLING:
        for _ in range(30):
            board = chess.Board(fen)
            for _ in range(rng.randrange(0, 40)):
                moves = list(board.legal_moves)
                if not moves:
                    break
                board.push(rng.choice(moves))
            moves, ids = game.legal_moves_and_ids(board)
            assert moves == list(board.generate_legal_moves()), board.fen()
            assert ids == game.move_ids(moves)
            checked += 1
    assert checked == 30 * len(FENS + PINS_AND_EN_PASSANT + CASTLING)
    for fen in CASTLING:  # the position itself, before any random move
        board = chess.Board(fen)
        assert game.legal_moves_and_ids(board)[0] == list(board.generate_legal_moves()), fen
    for index in range(0, 960, 37):  # Chess960 castling stays with python-chess
        board = chess.Board.from_chess960_pos(index)
        for _ in range(rng.randrange(10, 40)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
            assert game.legal_moves_and_ids(board)[0] == list(board.generate_legal_moves()), board.fen()


def test_the_generator_s_moves_read_as_python_chess_s():
    """The generator hands out move ids wrapped as a sequence of moves: every way of reading it (length, items,
    slices, iteration, index, membership, equality) gives python-chess's moves."""
    game = ChessGame()
    board = chess.Board("r3k2r/1P6/8/3pP3/8/8/8/R3K2R w KQkq d6 0 1")  # promotions, en passant, castling
    expected = list(board.generate_legal_moves())
    moves, ids = game.legal_moves_and_ids(board)
    assert len(moves) == len(expected) and list(moves) == expected and moves == expected
    assert [moves[i] for i in range(len(moves))] == expected and moves[-1] == expected[-1]
    assert moves[2:5] == expected[2:5]
    assert all(moves.index(m) == i for i, m in enumerate(expected))
    assert chess.Move.from_uci("b7b8n") in moves and chess.Move.from_uci("b7b8") not in moves
    assert chess.Move.from_uci("e5d6") in moves and "e5d6" not in moves
    with pytest.raises(ValueError):
        moves.index(chess.Move.from_uci("a1b2"))
    assert moves != expected[:-1] and game.legal_moves(board) == expected
    assert ids == game.move_ids(expected)


def test_a_reused_tree_over_the_cap_is_trimmed_not_frozen(raw):
    """RamLimitMb lowered below the tree a previous search built: the next search frees the lines the last one
    gave up on, keeps the rest, and searches on, instead of stopping at once on every go. (Heuristic evaluator: a
    network's cache would fill a 1 MB cap by itself.)"""
    raw.send("setoption name Evaluator value heuristic")
    raw.send("position startpos")
    raw.send("go nodes 3000")
    raw.read_until("bestmove", timeout=60)
    raw.send("setoption name RamLimitMb value 1")  # about 1,000 nodes: the whole tree is reused
    raw.send("position startpos")
    raw.send("go nodes 500")
    lines = raw.read_until("bestmove", timeout=60)
    assert any("reused 3000 visits" in line for line in lines), lines
    assert not any("starting a new tree" in line or "stops growing" in line for line in lines), lines
    nodes = [int(m.group(1)) for line in lines if (m := re.search(r" nodes (\d+)", line))]
    assert nodes[-1] >= 3500


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/statm"), reason="needs /proc (Linux)")
def test_a_worker_counts_what_its_process_has_grown():
    """A worker counts against RamLimitMb no less than its process has grown since it started (engine/search/workers.py),
    so memory its count misses (a churned cache's tables, inference buffers) is still counted."""
    from engine.search.workers import Growth
    growth = Growth()
    held = bytearray(64 << 20)
    held[::4096] = b"x" * len(held[::4096])  # touched, so resident
    assert growth.bytes() >= 60 << 20
    del held


def test_network_cache_keeps_to_half_the_ram_limit(tmp_path):
    from engine.evaluators.network import CACHE_ENTRY_BYTES, NetworkEvaluator
    from test_network import dense_net
    path = dense_net(tmp_path / "d.onnx")
    assert NetworkEvaluator(path, Params(nn_cache_size=200_000, ram_limit_mb=0))._cache_size() == 200_000
    small = NetworkEvaluator(path, Params(nn_cache_size=200_000, ram_limit_mb=100))
    assert small._cache_size() == 100 * (1 << 20) // 2 // CACHE_ENTRY_BYTES
    assert NetworkEvaluator(path, Params(nn_cache_size=1000, ram_limit_mb=100))._cache_size() == 1000


def test_with_workers_the_caches_share_the_limits(tmp_path):
    """With Threads=2 the search's cache and its worker's keep to NNCacheSize and half of RamLimitMb together: the
    search's cache takes a worker's share (it took all of it, and a worker's share more, before)."""
    from engine.evaluators.network import NetworkEvaluator
    from engine.search.pipeline import Pipeline, available_cores
    from test_network import dense_net
    if available_cores() < 2:
        pytest.skip("needs 2 cores")
    params = Params(nn_cache_size=200_000, ram_limit_mb=100, threads=2)
    evaluator = NetworkEvaluator(dense_net(tmp_path / "d.onnx"), params)
    alone = evaluator._cache_size()
    pipeline = Pipeline(evaluator, 2, ChessGame())
    try:
        assert pipeline.workers is not None
        assert evaluator._cache_size() == alone // 2
        pipeline.configure_workers(params, "", None)  # the worker's copy is told the same share
        assert pipeline.workers._sent["cache_processes"] == 2
    finally:
        pipeline.close()
    assert Pipeline(evaluator, 1, ChessGame()).workers is None and evaluator._cache_size() == alone


def test_the_network_cache_holds_the_nodes_own_edges(tmp_path):
    """A network's cache entry is the very object its node holds (one copy of the moves and priors, not two), and
    it outlives the node: a new tree on the same position is served from it, with the same priors and value."""
    from engine.evaluators.network import NetworkEvaluator
    from test_network import dense_net
    game = ChessGame()
    evaluator = NetworkEvaluator(dense_net(tmp_path / "d.onnx"), Params())
    tree = Tree(game)
    board = chess.Board(FENS[1])
    tree.set_position(board.fen(), [board.copy(stack=False)], [])
    search = Search(game, tree, evaluator, Params(tactical_probe_share=0.0))  # the tree's nodes alone
    search.run(Limits(nodes=300))
    entries = evaluator._cache
    held, todo = [], [tree.root]
    while todo:
        node = todo.pop()
        if node.edges is not None:
            held.append(node.edges)
        todo.extend(node.children)
    assert len(held) > 250
    shared = {id(e) for e in entries.values()}
    assert sum(id(e) in shared for e in held) >= len(held) - 2   # the root's own entry may predate its edges
    before = len(entries)
    tree.clear()   # the nodes go; the entries stay, and serve the same search again
    hits = []
    probe = evaluator.probe
    evaluator.probe = lambda leaf: hits.append(probe(leaf)) or hits[-1]
    search.run(Limits(nodes=100))
    served = sum(hits)
    assert served >= 30 and len(entries) <= before + len(hits) - served


def test_the_evaluation_cache_keeps_the_most_recently_used():
    """The network cache's table against a least-recently-used dict: what it returns is what was put last under the
    key, it holds at most its size, and it keeps about what the dict keeps (hits count as new), through growth,
    trims (holes that look-ups must pass) and a clear."""
    from collections import OrderedDict
    from engine.evaluators.eval_cache import EvaluationCache
    rng = random.Random(5)
    cache, lru, last, size = EvaluationCache(), OrderedDict(), {}, 3000
    used: OrderedDict = OrderedDict()   # keys the cache answered or was given, the latest last
    hits = lru_hits = 0
    universe = [rng.getrandbits(60) | 1 for _ in range(12_000)]
    for step in range(120_000):
        key = rng.choice(universe)
        if step == 60_000:
            cache.clear()
            lru.clear()
            assert len(cache) == 0 and cache.get(key) is None
        if rng.random() < 0.5:
            entry = cache.get(key)
            if key in lru:
                lru.move_to_end(key)
                lru_hits += 1
            if entry is not None:
                assert entry == last[key]
                hits += 1
                used[key] = entry
                used.move_to_end(key)
        else:
            last[key] = lru[key] = used[key] = step.to_bytes(4, "little")
            lru.move_to_end(key)
            used.move_to_end(key)
            cache.put(key, last[key])
            cache.trim(size)
            while len(lru) > size:
                lru.popitem(last=False)
        assert len(cache) <= size
    assert hits >= 0.9 * lru_hits
    held = dict(cache.items())
    assert len(held) == len(cache) >= size * 15 // 16
    assert all(cache.get(key) == entry for key, entry in held.items())
    recent = list(used)[-size * 3 // 4:]   # the entries used last are all there (ages are generations of puts)
    assert all(cache.get(key) == used[key] for key in recent)


def test_the_evaluation_cache_table_costs_less_than_a_dict():
    """A full cache of 200,000 entries takes less than 40 bytes an entry besides the entries themselves, where a
    dict with int keys took about 100."""
    from engine.evaluators.eval_cache import EvaluationCache
    rng = random.Random(6)
    cache, entry = EvaluationCache(), b"edges"
    for _ in range(400_000):
        cache.put(rng.getrandbits(60) | 1, entry)
        cache.trim(200_000)
    assert 187_000 <= len(cache) <= 200_000
    assert cache.table_bytes() / len(cache) < 50
