"""The tree's memory (nodes as columns, blocks of moves and priors shared with the cache) and the RamLimitMb cap."""

from __future__ import annotations

import random
import re
import time

import chess
import pytest

from engine import compiled
from engine.board import convert
from engine.evaluators.base import cache_entries
from engine.evaluators.heuristic import HeuristicEvaluator
from engine.params import Params
from engine.search.nodes import NODE_COLUMN_BYTES, SLOT_BYTES, Nodes
from engine.search.report import root_lines
from engine.search.search import CACHE_ENTRY_BYTES, Search
from engine.search.timeman import Limits
from engine.search.tree import WIN, Tree
from engine.tools.memwatch import rss_bytes
from engine.uci.bench import run_memory_bench
from fakes import UniformNetwork

FENS = [
    chess.STARTING_FEN,
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",   # castling both ways
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",          # en passant
    "8/2P3k1/8/8/8/8/5p2/K7 w - - 0 60",                                       # promotions
]
# What a node costs with its block, the cache's slot and the columns' room to grow: the issue's ceiling is 250 bytes
# a node with the cache, RSS growth measured from outside (docs/performance.md).
NODE_CEILING = 250


def _fields(board: chess.Board) -> tuple:
    return (board.occupied_co[chess.WHITE], board.occupied_co[chess.BLACK], board.occupied, board.pawns,
            board.knights, board.bishops, board.rooks, board.queens, board.kings,
            board.clean_castling_rights(), board.turn, board.ep_square if board.has_legal_en_passant() else None,
            board.halfmove_clock, board.fullmove_number, board.chess960)


def test_a_compiled_board_reads_back_as_python_chess_s():
    """The position a leaf hands Python (convert.chess_board from the compiled board's parts) is python-chess's own
    board, along random games with castling, en passant, promotions and Chess960."""
    rng = random.Random(5)
    core = compiled.CORE
    starts = [chess.Board(fen) for fen in FENS] + [chess.Board.from_chess960_pos(n, ) for n in (0, 518, 959)]
    for board in starts[-3:]:
        board.chess960 = True
    checked = 0
    for start in starts:
        for _ in range(5):
            board = start.copy(stack=False)
            for _ in range(rng.randrange(0, 60)):
                position = convert.core_board(core, board)
                again = convert.chess_board((position.by_color[1], position.by_color[0]) + tuple(
                    position.by_type[t] for t in range(1, 7)), position.castling, position.turn == 1, position.ep,
                    position.halfmove, board.fullmove_number, position.chess960)
                assert _fields(again) == _fields(board), board.fen()
                assert sorted(m.uci() for m in again.legal_moves) == sorted(m.uci() for m in board.legal_moves)
                checked += 1
                moves = list(board.legal_moves)
                if not moves:
                    break
                board.push(rng.choice(moves))
                board = board.copy(stack=False)
    assert checked > 300


# Moves to a1-c1 and to f8-h8 from one square: their bitboards differ by multiples of 2**61 - 1, the
# modulus of Python's int hash, so hash(board._transposition_key()) cannot tell them apart.
ALIASED_SIBLINGS = [
    ("2r5/8/8/K3k3/8/8/8/8 b - - 0 1", "c8c1", "c8h8"),   # a rook along its rank or its file
    ("4k3/7B/8/8/8/8/8/4K3 w - - 0 1", "h7b1", "h7g8"),    # a bishop along its two diagonals
    ("4k3/8/8/8/8/8/1Q6/6K1 w - - 0 1", "b2c1", "b2h8"),   # a queen
]


@pytest.mark.parametrize("fen, first, second", ALIASED_SIBLINGS)
def test_position_keys_tell_apart_what_int_hashes_confuse(fen, first, second):
    """Repetition keys of two different positions differ; equal positions (whatever their counters) share one."""
    core = compiled.CORE
    a, b = chess.Board(fen), chess.Board(fen)
    a.push_uci(first)
    b.push_uci(second)
    assert hash(a._transposition_key()) == hash(b._transposition_key())  # the trap is real
    assert convert.zobrist(core, a) != convert.zobrist(core, b)
    again = chess.Board(a.fen().replace(" 1 1", " 37 60"))
    assert convert.zobrist(core, again) == convert.zobrist(core, a)


def test_position_keys_are_equal_exactly_for_repeated_positions():
    """Along random games, two positions share a Zobrist key exactly when python-chess calls them the same
    position for repetitions (en passant counted only when it can be played)."""
    core = compiled.CORE
    rng = random.Random(11)
    by_key: dict = {}
    for fen in FENS:
        for _ in range(20):
            board = chess.Board(fen)
            for _ in range(80):
                by_key.setdefault(convert.zobrist(core, board), set()).add(board._transposition_key())
                moves = list(board.legal_moves)
                if not moves:
                    break
                board.push(rng.choice(moves))
    assert len(by_key) > 3000 and all(len(v) == 1 for v in by_key.values())


def _searched_tree(simulations: int, evaluator=None, **params) -> tuple[Tree, Search, list[str]]:
    tree = Tree()
    board = chess.Board(FENS[1])
    tree.set_position(board.fen(), [board.copy(stack=False)], [])
    said: list[str] = []
    search = Search(tree, evaluator or HeuristicEvaluator(), Params(**params), on_string=said.append)
    search.run(Limits(nodes=simulations))
    return tree, search, said


def _walk(top):
    todo = [top]
    while todo:
        node = todo.pop()
        yield node
        todo.extend(node.children)


def test_nodes_keep_their_moves_best_prior_first_and_no_positions():
    tree, _, _ = _searched_tree(2000)
    seen = 0
    for node in _walk(tree.root_node):
        seen += 1
        if node.moves is not None:
            assert len(node.moves) == len(node.priors) == node.edge_count() > 0
            mate_first = node.children and node.children[0].proven == WIN
            assert list(node.priors) == sorted(node.priors, reverse=True) or mate_first
    assert seen == tree.nodes.live > 1000


def test_a_node_costs_its_row_and_its_block():
    said: list[str] = []
    per_node = run_memory_bench(UniformNetwork(), Params(), said.append, 5000)
    assert NODE_COLUMN_BYTES < per_node < NODE_CEILING - 50, said
    assert any(line.startswith("Bytes/node") for line in said)


def test_at_the_cap_the_search_frees_given_up_lines_and_goes_on():
    limit_mb = 2
    tree, search, said = _searched_tree(30_000, ram_limit_mb=limit_mb)
    assert tree.root_node.n == 30_000
    assert tree.bytes_held() <= limit_mb * (1 << 20)          # what RamLimitMb counts stays under it
    notes = [s for s in said if s.startswith("RamLimitMb reached")]
    assert len(notes) == 1 and "the search goes on" in notes[0], said
    best = tree.root_node.ranked_children()[0]
    assert best.children                                      # the main line kept its subtree
    unlimited, _, said = _searched_tree(3000, ram_limit_mb=0)
    assert unlimited.root_node.n >= 3000 and not said


def test_ram_limit_0_is_the_most_the_tree_can_hold():
    """Blocks of moves have 32-bit offsets (8 GiB of them): a long analysis with no limit ran past that and wrote
    outside the arena. RamLimitMb 0 now means the tree's most, which is also the option's top."""
    from engine.params import OPTIONS, TREE_MAX_MB
    from engine.search.memory import MemoryBudget
    assert MemoryBudget(Tree(), 0, lambda: 0).limit_mb == TREE_MAX_MB
    assert MemoryBudget(Tree(), 512, lambda: 0).limit_mb == 512
    assert TREE_MAX_MB * (1 << 20) <= 6 << 30   # blocks held stay a quarter below 2^31 four-byte units
    nodes = Nodes()
    nodes.top = (1 << 31) - 5          # (nothing allocated: the next block would need offsets past 32 bits)
    with pytest.raises(MemoryError):
        nodes.new_block(10, 0.0, 0.0)
    tree = Tree()
    tree.nodes.top = (TREE_MAX_MB << 20) // 4   # blocks freed since leave holes: their span counts too
    assert MemoryBudget(tree, 0, lambda: 0).over()
    option = next(o for o in OPTIONS if o.name == "RamLimitMb")
    assert option.max == TREE_MAX_MB and "0 means as much as the tree can hold" in option.help


def _stats(node):
    return node.n, node.w, node.d, node.proven, node.plies, node.moves, node.priors, node.v


def test_a_freed_subtree_keeps_its_statistics_and_a_proof_is_never_freed():
    tree, _, _ = _searched_tree(4000)
    root = tree.root_node
    children = root.ranked_children()
    before = {c.index: _stats(c) for c in children}
    # A proof deep in one given-up line: a mate the solver found there must survive any freeing.
    proven_line = children[1]
    deep = proven_line
    while deep.children:
        deep = max(deep.children, key=lambda c: c.n)
    deep.proven, deep.plies = WIN, 3   # a solver's proof, not a finished game
    reported = root_lines(tree, root.ranked_children(), 3, 1.0, root.n, 0, 0, 0)
    live = tree.nodes.live
    freed = tree.free_given_up(10 ** 9, 2, lambda: False)
    assert freed > 1000 and tree.nodes.live < live - 1000
    assert [c.index for c in root.ranked_children()] == [c.index for c in children]
    assert all(_stats(c) == before[c.index] for c in children)   # visits, value, draws, proofs, moves and priors
    assert children[0].children                                   # the most visited line keeps its subtree
    assert proven_line.children and deep in list(_walk(proven_line))
    assert any(c.n > 1 and not c.children for c in children[2:])
    again = root_lines(tree, root.ranked_children(), 3, 1.0, root.n, 0, 0, 0)
    assert [(i.q, i.mate, i.wdl) for i in again] == [(i.q, i.mate, i.wdl) for i in reported]
    assert again[0].pv == reported[0].pv                          # the main line is whole


def test_a_freed_line_grows_again_when_the_search_comes_back():
    tree, search, _ = _searched_tree(3000)
    root = tree.root_node
    tree.free_given_up(10 ** 9, 2, lambda: False)
    freed = [c for c in root.children if c.n > 1 and not c.children]
    assert freed
    search.run(Limits(nodes=6000))
    assert tree.nodes.live == sum(1 for _ in _walk(root))
    assert any(c.children for c in freed)


def test_ram_limit_under_go_infinite_keeps_searching_and_stops_at_once(raw):
    raw.send("setoption name RamLimitMb value 1")
    raw.send("position startpos")
    raw.send("go infinite")
    lines = raw.read_until("info string RamLimitMb reached", timeout=60)
    assert not any(line.startswith("bestmove") for line in lines)
    assert "the search goes on" in lines[-1]
    # Visits go on well past what the tree can hold: waited for in the periodic info lines, however slow the machine.
    past_the_cap = 2 * (1 << 20) // NODE_CEILING
    deadline = time.monotonic() + 120
    while True:
        line = raw.read_line(deadline - time.monotonic())
        assert not line.startswith("bestmove")
        if (m := re.search(r" nodes (\d+)", line)) and int(m.group(1)) > past_the_cap:
            break
    got = raw.ask_ready(timeout=5)  # still answering, still holding its move
    assert not any(line.startswith("bestmove") for line in got)
    sent = time.monotonic()
    raw.send("stop")
    lines = raw.read_until("bestmove", timeout=5)
    assert time.monotonic() - sent < 1.0
    assert chess.Move.from_uci(lines[-1].split()[1]) in chess.Board().legal_moves


def test_ram_limit_with_a_clock_plays_its_move(raw):
    raw.send("setoption name RamLimitMb value 1")
    # Its whole planned time: at the start position smart pruning may end the search before even 1 MB is reached.
    raw.send("setoption name SmartPruningFactor value 0")
    raw.send("position startpos")
    # The tree filled to the cap first, however few nodes a second a busy machine gives: a clock's few seconds did not
    # reach 1 MB while two other processes shared the two cores.
    raw.send("go infinite")
    raw.read_until("info string RamLimitMb reached", timeout=60)
    raw.send("stop")
    raw.read_until("bestmove", timeout=5)
    raw.send("position startpos")
    raw.send("go wtime 120000 btime 120000")  # the tree kept is at the cap: the search meets it and goes on
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
    """go infinite with RamLimitMb=150 for 60 s; RSS stays under the cap plus the start-up size."""
    cap = 150
    raw.send(f"setoption name Threads value {threads}")
    raw.send(f"setoption name RamLimitMb value {cap}")
    # The start-up size of a ready engine includes its evaluator's working memory (onnxruntime's buffers): a short
    # search once the network has loaded, then a new game empties tree and cache again.
    raw.ask_ready()
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
    assert reached or nodes[-1] * NODE_CEILING < cap * (1 << 20), nodes[-1:]
    assert lines[-1].startswith("bestmove")


def test_a_reused_tree_over_the_cap_is_trimmed_not_frozen(raw):
    """RamLimitMb lowered below the tree a previous search built: the next search frees the lines the last one
    gave up on, keeps the rest, and searches on, instead of stopping at once on every go. (Heuristic evaluator: a
    network's cache would fill a 1 MB cap by itself.)"""
    raw.send("setoption name Evaluator value heuristic")
    raw.send("position startpos")
    raw.send("go nodes 12000")
    raw.read_until("bestmove", timeout=60)
    raw.send("setoption name RamLimitMb value 1")  # the whole tree is reused, and it is over the cap
    raw.send("position startpos")
    raw.send("go nodes 500")
    lines = raw.read_until("bestmove", timeout=60)
    assert any("reused 12000 visits" in line for line in lines), lines
    assert not any("starting a new tree" in line or "stops growing" in line for line in lines), lines
    nodes = [int(m.group(1)) for line in lines if (m := re.search(r" nodes (\d+)", line))]
    assert nodes[-1] >= 12500


@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/statm"), reason="needs /proc (Linux)")
def test_a_worker_counts_what_its_process_has_grown():
    """A worker counts against RamLimitMb no less than its process has grown since it started
    (engine/search/workers.py), so memory its count misses (a churned cache, buffers) is still counted."""
    from engine.search.workers import Growth
    growth = Growth()
    held = bytearray(64 << 20)
    held[::4096] = b"x" * len(held[::4096])  # touched, so resident
    assert growth.bytes() >= 60 << 20
    del held


def test_the_cache_keeps_to_half_the_ram_limit():
    assert cache_entries(Params(nn_cache_size=200_000, ram_limit_mb=0), CACHE_ENTRY_BYTES) == 200_000
    assert cache_entries(Params(nn_cache_size=200_000, ram_limit_mb=20), CACHE_ENTRY_BYTES) == \
        20 * (1 << 20) // 2 // CACHE_ENTRY_BYTES
    assert cache_entries(Params(nn_cache_size=1000, ram_limit_mb=100), CACHE_ENTRY_BYTES) == 1000


def test_the_cache_holds_the_nodes_own_blocks():
    """A cached evaluation is the very block its node holds (one copy of the moves and priors, not two), and it
    outlives the node: a new tree on the same position is served from it, without the network."""
    evaluator = UniformNetwork()
    tree, search, _ = _searched_tree(300, evaluator, tactical_probe_share=0.0)
    nodes = tree.nodes
    held = [node for node in _walk(tree.root_node) if node.moves is not None]
    assert len(held) > 250
    assert nodes.cache_count >= len(held) - 2     # the root's own block is its own: it may have been cut down
    arena = nodes.arena_live
    tree.clear()   # the nodes go; their blocks stay with the cache, and serve the same search again
    assert nodes.arena_live == arena and nodes.live == 1
    batches = evaluator.batches
    search.run(Limits(nodes=100))
    assert evaluator.batches - batches <= 2       # the root's, and what the cache did not hold


def test_the_cache_keeps_the_most_recently_used():
    """The cache's buckets against a least-recently-used dict of the same size: what it returns is what was put
    last under the key, it holds at most its slots, and it keeps about what the dict keeps (hits count as new)."""
    from collections import OrderedDict
    rng = random.Random(5)
    nodes, size = Nodes(), 4000
    nodes.cache_resize(size)
    lru: OrderedDict = OrderedDict()
    made: dict = {}
    hits = lru_hits = 0
    universe = [rng.getrandbits(63) | 1 for _ in range(12_000)]
    for step in range(60_000):
        key = rng.choice(universe)
        if rng.random() < 0.5:
            b = nodes.cache_get(key)
            if key in lru:
                lru.move_to_end(key)
                lru_hits += 1
            if b >= 0:
                assert nodes.block_contents(b)[0] == made[key]
                hits += 1
        else:
            b = nodes.new_block(1, float(step), 0.0)
            made[key] = float(step)
            nodes.cache_put(key, b)
            lru[key] = step
            lru.move_to_end(key)
            while len(lru) > size:
                lru.popitem(last=False)
        assert nodes.cache_count <= size
    assert hits >= 0.85 * lru_hits
    nodes.cache_clear()
    assert nodes.cache_count == 0 and nodes.arena_live == 0   # every block went with its last holder


def test_the_cache_costs_its_slots():
    nodes = Nodes()
    nodes.cache_resize(200_000)
    assert nodes.bytes_held()["cache"] == 200_000 * SLOT_BYTES
