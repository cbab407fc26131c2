"""Threads >= 2: a network's batches on threads of their own, an evaluator written in Python in worker processes
(engine/search/pipeline.py, workers.py).

Checked here: a worker's answer is what the search thread would have worked out itself; a search with workers or
threads counts every node once and leaves nothing in flight; it still proves mates; through UCI the engine uses at
most Threads cores, its workers really work, stop is prompt, and no worker outlives the engine (quit or killed).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import chess
import pytest

from conftest import RawUci
from engine.evaluators.heuristic import HeuristicEvaluator
from engine.evaluators.rollout import RolloutEvaluator
from engine.params import Params
from engine.search.pipeline import Pipeline, available_cores
from engine.search.search import Search
from engine.search.timeman import Limits
from engine.search.tree import Batch, Tree
from engine.search.workers import evaluate_jobs

needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
pytestmark = pytest.mark.skipif(available_cores() < 2, reason="workers need a second core")

POSITIONS = (
    chess.STARTING_FEN,
    "r2qkb1r/pp2nppp/3p4/2pNN1B1/2BnP3/3P4/PPP2PPP/R2bK2R w KQkq - 1 10",  # mate in 2: d5f6
    "6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1",                                # back-rank mate in 1
    "7k/5Q2/6K1/8/8/8/8/8 w - - 0 1",                                       # Qf7-g7 mates, several moves stalemate
    "8/P6k/8/8/8/8/6K1/8 w - - 0 1",                                        # promotions
)


@pytest.fixture(scope="module")
def pool():
    pipeline = Pipeline(HeuristicEvaluator(), 2)
    pipeline.wait_ready()
    yield pipeline.workers
    pipeline.close()


def _jobs(fens, per_position=16):
    """Leaves as a worker gets them (their positions' parts and moves): each position's and its children's, as the
    tree gathers them."""
    jobs = []
    for fen in fens:
        tree = Tree()
        tree.set_position(fen, [chess.Board(fen)], [])
        tree.configure(1.0, 1.0, 0.0, 0.0, False, 1.0, False, 0)
        batch = Batch(1, False)
        tree.gather(batch, 1)
        jobs.append((tree.leaf_fields(batch, 0), tree.leaf_moves(batch, 0)))
        moves = tree.leaf_moves(batch, 0)
        tree.finish_leaf(batch, 0, 0.0, 0.0, [1.0 / len(moves)] * len(moves))
        batch = Batch(per_position, False)
        tree.gather(batch, per_position)
        jobs += [(tree.leaf_fields(batch, i), tree.leaf_moves(batch, i)) for i in range(batch.size)]
    return jobs


def test_a_worker_answers_what_the_search_thread_would_work_out(pool):
    jobs = _jobs(POSITIONS)
    worker = pool.workers[0]
    answers = []
    for i in range(0, len(jobs), 8):
        tag = pool.send(worker, jobs[i:i + 8])
        got = []
        while not got:
            got = pool.answers(5.0)
        assert [t for t, _ in got] == [tag]
        answers += got[0][1]
    assert answers == evaluate_jobs(HeuristicEvaluator(), jobs) and len(answers) > 20


def _search(fen, nodes, evaluator=None, **options):
    evaluator = evaluator or HeuristicEvaluator()
    params = Params(threads=2, tactical_probe_share=0, **options)
    pipeline = Pipeline(evaluator, 2)
    pipeline.wait_ready()
    tree = Tree()
    tree.set_position(0, [chess.Board(fen)], [])
    search = Search(tree, evaluator, params, pipeline=pipeline)
    try:
        best, _ = search.run(Limits(nodes=nodes))
    finally:
        pipeline.close()
    return best, tree.root_node, search


def _all_nodes(root):
    todo = [root]
    while todo:
        node = todo.pop()
        yield node
        todo.extend(node.children)


def test_a_search_with_workers_counts_every_node_once():
    best, root, search = _search(POSITIONS[0], 3000)
    assert search.playouts == 3000
    assert root.n == 3000  # every visit backed up exactly once, none lost with an answer
    assert all(node.in_flight == 0 for node in _all_nodes(root))
    assert best in chess.Board().legal_moves


def test_a_search_with_workers_proves_mates():
    best, root, search = _search(POSITIONS[1], 3000)
    assert best == chess.Move.from_uci("d5f6")
    assert search.lines()[0].mate == 2


def test_rollouts_use_the_workers():
    """Random playouts in the workers too: the search counts every visit, and proves a mate in two."""
    best, root, search = _search(POSITIONS[0], 2000, evaluator=RolloutEvaluator())
    assert search.playouts == 2000 and root.n == 2000 and best in chess.Board().legal_moves
    best, root, search = _search(POSITIONS[1], 20000, evaluator=RolloutEvaluator())
    assert best == chess.Move.from_uci("d5f6") and root.proven is not None


def _workers(pid: int, expected: int) -> list[int]:
    """The worker processes of ``pid``, once ``expected`` of them run (a process just forked still shows its
    parent's command line until it starts the worker)."""
    deadline = time.monotonic() + 10
    while True:
        found = _children(pid, workers_only=True)
        if len(found) >= expected or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def _children(pid: int, workers_only: bool = False) -> list[int]:
    """The processes ``pid`` started: its workers and multiprocessing's resource tracker."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and (not workers_only or b"spawn_main" in (entry / "cmdline").read_bytes()):
                found.append(int(entry.name))
    return found


def _cpu_seconds(pid: int, stat: str = "stat") -> float:
    fields = Path(f"/proc/{pid}/{stat}").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _threads_cpu_seconds(pid: int) -> dict[int, float]:
    """Each thread's CPU seconds: which threads worked, even when a busy machine shares their cores."""
    seconds = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            seconds[int(task.name)] = _cpu_seconds(pid, f"task/{task.name}/stat")
        except OSError:   # a thread that ended between the listing and the read
            pass
    return seconds


def _start(threads: int = 2, network: str = "") -> RawUci:
    raw = RawUci()
    raw.send("uci")
    raw.read_until("uciok")
    if network:
        raw.send(f"setoption name WeightsFile value {network}")
        raw.send("setoption name Evaluator value network")
    else:
        raw.send("setoption name Evaluator value heuristic")
    raw.send(f"setoption name Threads value {threads}")
    raw.ask_ready(timeout=30)
    return raw


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process. An exited orphan stays a zombie until the system's init reaps it,
    which some containers' init does only every second or two: that process is gone all the same."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def _gone(pids: list[int], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(_running(pid) for pid in pids):
            return True
        time.sleep(0.02)
    return False


@pytest.fixture(scope="module")
def meangirl_sized_net(tmp_path_factory):
    onnx = pytest.importorskip("onnx")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "nets"))
    import make_random_net
    path = tmp_path_factory.mktemp("net") / "net.onnx"
    onnx.save(make_random_net.build(blocks=4, filters=32, se=True, seed=1), str(path))
    return str(path)


@needs_proc
@pytest.mark.parametrize("evaluator", ["heuristic", "network"])
def test_threads_2_uses_two_cores_at_most_and_its_worker_works(evaluator, request):
    """The heuristic's second core is a worker process; a network's, a second thread of the engine's."""
    raw = _start(network=request.getfixturevalue("meangirl_sized_net") if evaluator == "network" else "")
    try:
        workers = _workers(raw.proc.pid, 1 if evaluator == "heuristic" else 0)
        assert len(workers) == (1 if evaluator == "heuristic" else 0), workers
        raw.send("position startpos moves e2e4 e7e5")
        raw.send("go infinite")
        raw.read_until("info depth", timeout=30)
        pids = [raw.proc.pid] + workers
        cpu0, wall0 = sum(map(_cpu_seconds, pids)), time.monotonic()
        worker0 = _cpu_seconds(workers[0]) if workers else 0.0
        threads0 = _threads_cpu_seconds(raw.proc.pid)
        time.sleep(3.0)
        cpu1, wall1 = sum(map(_cpu_seconds, pids)), time.monotonic()
        worker1 = _cpu_seconds(workers[0]) if workers else 0.0
        threads1 = _threads_cpu_seconds(raw.proc.pid)
        sent = time.monotonic()
        raw.send("stop")
        lines = raw.read_until("bestmove", timeout=5)
        assert time.monotonic() - sent < 0.5, "stop was slow"
        assert chess.Move.from_uci(lines[-1].split()[1]) in chess.Board("rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2").legal_moves
        cores = (cpu1 - cpu0) / (wall1 - wall0)
        assert cores <= 2.1, f"{evaluator}: {cores:.2f} cores at Threads=2"
        if workers:
            assert worker1 - worker0 > 0.3, "the worker did not work"
        else:
            # Counted a thread at a time, not in cores: a machine busy elsewhere may leave the two threads one core.
            worked = [tid for tid, seconds in threads1.items() if seconds - threads0.get(tid, 0.0) > 0.3]
            assert len(worked) >= 2, f"network: threads that worked at Threads=2: {len(worked)} ({cores:.2f} cores)"
    finally:
        raw.close()


@needs_proc
@pytest.mark.skipif(available_cores() < 2, reason="no core for a worker")
def test_the_thread_that_started_the_workers_lives_as_long_as_they_serve():
    """The kernel ends a worker when the thread that started it ends (``PR_SET_PDEATHSIG``, workers.py): the
    loader's thread, which starts them, must stay until the evaluator is dropped."""
    from engine.uci.loading import EvaluatorLoader
    loader = EvaluatorLoader(Params(evaluator="heuristic", threads=2), lambda text: None)
    assert loader.wait()
    try:
        workers = [worker.process.pid for worker in loader.pipeline.workers.workers]
        time.sleep(0.5)
        started_by = Path(f"/proc/self/task/{loader._thread.native_id}/children")
        assert started_by.exists(), "the loading thread ended"
        assert set(workers) <= {int(pid) for pid in started_by.read_text().split()}
        assert all(_running(pid) for pid in workers)
    finally:
        loader.drop()
    assert _gone(workers, 5.0)
    assert loader.evaluator is None and loader.pipeline is None


@needs_proc
def test_workers_exit_with_the_engine_on_quit_and_when_killed(request):
    cores = available_cores()
    raw = _start(threads=cores + 3)  # never more workers than cores to run them
    assert len(_workers(raw.proc.pid, cores - 1)) == cores - 1
    raw.send("position startpos")
    raw.send("go nodes 500")
    raw.read_until("bestmove", timeout=30)
    workers = _children(raw.proc.pid)
    raw.send("quit")
    raw.proc.wait(timeout=5)
    assert _gone(workers, 2.0), "a worker outlived 'quit'"

    raw = _start()
    _workers(raw.proc.pid, 1)
    workers = _children(raw.proc.pid)
    raw.send("position startpos")
    raw.send("go infinite")
    raw.read_until("info", timeout=30)
    os.kill(raw.proc.pid, signal.SIGKILL)  # a GUI that kills its engine
    raw.proc.wait(timeout=5)
    assert _gone(workers, 2.0), "a worker outlived its killed engine"

    # Killed while its worker is still starting (importing): the worker cannot read its pipe yet.
    raw = RawUci()
    raw.send("setoption name Evaluator value heuristic")
    raw.send("setoption name Threads value 2")
    raw.send("isready")
    workers = _workers(raw.proc.pid, 1)
    os.kill(raw.proc.pid, signal.SIGKILL)
    raw.proc.wait(timeout=5)
    assert _gone(workers, 2.0), "a starting worker outlived its killed engine"


@pytest.mark.slow
def test_back_to_back_go_with_workers_on_a_busy_machine(busy_core):
    """Every go gets exactly one bestmove when the workers' answers of one search arrive in the next."""
    raw = _start()
    try:
        raw.send("position startpos")
        legal = {m.uci() for m in chess.Board().legal_moves}
        for i in range(300):
            raw.send(["go nodes 40", "go infinite", "go movetime 5"][i % 3])
            if i % 3 == 1:
                raw.send("stop")
            lines = raw.read_until("bestmove", timeout=10)
            assert lines[-1].split()[1] in legal, (i, lines[-1])
        assert not [line for line in raw.drain(0.2) if line.startswith("bestmove")], "a bestmove too many"
        raw.ask_ready(timeout=5)
    finally:
        raw.close()


@pytest.fixture(scope="module")
def small_net(tmp_path_factory):
    onnx = pytest.importorskip("onnx")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "nets"))
    import make_random_net
    path = tmp_path_factory.mktemp("net") / "net.onnx"
    onnx.save(make_random_net.build(blocks=1, filters=16, seed=5), str(path))
    return str(path)


def test_a_network_search_on_two_threads_counts_every_node_once(small_net):
    from engine.evaluators.network import NetworkEvaluator
    params = Params(threads=2, tactical_probe_share=0)
    evaluator = NetworkEvaluator(small_net, params)
    threads = set()
    run = evaluator.run_planes
    evaluator.run_planes = lambda planes: threads.add(__import__("threading").get_ident()) or run(planes)
    best, root, search = _search(POSITIONS[0], 1500, evaluator=evaluator)
    assert search.playouts == 1500 and root.n == 1500
    assert all(node.in_flight == 0 for node in _all_nodes(root))
    assert best in chess.Board().legal_moves
    assert len(threads) >= 2   # the root's batch on the search thread, the others on the evaluator threads


def test_an_error_in_a_network_thread_ends_the_search_instead_of_hanging_it(small_net):
    """A thread whose network run fails (onnxruntime out of memory, say) used to die alone, its batch waited for
    forever: no bestmove at 'go nodes'. Now the search stops and raises it, and the engine answers bestmove."""
    import threading
    from engine.evaluators.network import NetworkEvaluator
    evaluator = NetworkEvaluator(small_net, Params(threads=2, tactical_probe_share=0))
    run, calls, counting = evaluator.run_planes, [], threading.Lock()

    def failing(planes):
        with counting:
            calls.append(len(planes))
            fail = len(calls) == 6
        if fail:
            raise RuntimeError("out of memory")
        return run(planes)
    evaluator.run_planes = failing
    raised = []

    def search():
        try:
            _search(POSITIONS[0], 1_000_000, evaluator=evaluator)
        except RuntimeError as e:
            raised.append(e)
    thread = threading.Thread(target=search, daemon=True)
    thread.start()
    thread.join(120)
    assert not thread.is_alive(), "the search hung on the failed thread's batch"
    assert [str(e) for e in raised] == ["out of memory"]


def test_threads_2_keeps_multipv_searchmoves_ponder_and_mate():
    """The tree stays in the engine's process, so every search feature works as at Threads=1."""
    raw = _start()
    try:
        raw.send("setoption name MultiPV value 3")
        raw.send("position startpos")
        raw.send("go nodes 2000")
        lines = raw.read_until("bestmove", timeout=30)
        last = [line for line in lines if line.startswith("info depth")][-3:]
        assert [line.split(" multipv ")[1].split()[0] for line in last] == ["1", "2", "3"], last
        raw.send("setoption name MultiPV value 1")
        raw.send("go nodes 1500 searchmoves a2a3 h2h4")
        assert raw.read_until("bestmove", timeout=30)[-1].split()[1] in ("a2a3", "h2h4")
        raw.send("position fen 6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1")
        raw.send("go mate 1")
        lines = raw.read_until("bestmove", timeout=30)
        assert lines[-1].split()[1] == "d1d8" and any("score mate 1" in line for line in lines)
        raw.send("position startpos moves e2e4")
        raw.send("go ponder wtime 5000 btime 5000")
        time.sleep(0.3)
        assert not [line for line in raw.drain(0.05) if line.startswith("bestmove")]
        raw.send("ponderhit")
        assert chess.Move.from_uci(raw.read_until("bestmove", timeout=10)[-1].split()[1]) in \
            chess.Board("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1").legal_moves
    finally:
        raw.close()


def test_without_worker_processes_the_search_goes_on_on_one_core(monkeypatch):
    """Processes that cannot start (a process limit, a script without a main guard) leave a one-core search."""
    import engine.search.pipeline

    def refuse(*args, **kwargs):
        raise OSError("Resource temporarily unavailable")
    monkeypatch.setattr(engine.search.pipeline, "WorkerPool", refuse)
    pipeline = Pipeline(HeuristicEvaluator(), 2)
    assert pipeline.workers is None and "cannot start worker processes" in pipeline.problem
    tree = Tree()
    board = chess.Board()
    tree.set_position(0, [board], [])
    search = Search(tree, HeuristicEvaluator(), Params(threads=2, tactical_probe_share=0), pipeline=pipeline)
    best, _ = search.run(Limits(nodes=300))
    assert search.playouts == 300 and best in board.legal_moves


@needs_proc
def test_a_worker_that_stops_answering_costs_no_bestmove():
    """A frozen worker (SIGSTOP): the search's end waits for its last chunks only briefly, then answers."""
    raw = _start()
    try:
        worker = _workers(raw.proc.pid, 1)[0]
        raw.send("position startpos")
        raw.send("go nodes 300")
        raw.read_until("bestmove", timeout=30)  # the worker is up and answering
        os.kill(worker, signal.SIGSTOP)
        try:
            raw.send("go nodes 3000")
            lines = raw.read_until("bestmove", timeout=15)
            assert chess.Move.from_uci(lines[-1].split()[1]) in chess.Board().legal_moves
        finally:
            os.kill(worker, signal.SIGCONT)
        raw.ask_ready(timeout=10)
    finally:
        raw.close()


def test_a_chunk_sent_to_a_dead_worker_comes_back_as_lost():
    """A worker that died: what it held and what is sent to it after come back as (tag, None), so the search
    releases those leaves instead of waiting for them."""
    pipeline = Pipeline(HeuristicEvaluator(), 2)
    pipeline.wait_ready()
    try:
        pool = pipeline.workers
        worker = pool.workers[0]
        worker.process.kill()
        worker.process.join(5)
        job = _jobs([chess.STARTING_FEN], 0)[0]
        tags = {pool.send(worker, [job]) for _ in range(2)}
        lost: dict[int, object] = {}
        deadline = time.monotonic() + 5
        while set(lost) != tags and time.monotonic() < deadline:
            lost.update(pool.answers(0.1))
        assert set(lost) == tags and all(answer is None for answer in lost.values())
        assert pool.free_worker() is None
    finally:
        pipeline.close()


def test_input_is_answered_at_once_while_the_search_only_meets_settled_positions():
    """With CPuct 0 the search follows its best line alone; here it ends in a repetition (a draw the tree has proven),
    so every visit only walks the tree and settles a known result: tens of thousands a second, no leaf to send to a
    worker. Such a loop once polled the workers' pipes on each turn, and each poll let go of the GIL for a moment and
    took it straight back, so the input thread, woken each time, never got it: isready and stop waited up to 10 s."""
    raw = _start()
    try:
        for name, value in (("CPuct", "0"), ("CPuctFactor", "0"), ("FpuValue", "10")):
            raw.send(f"setoption name {name} value {value}")
        raw.send("position fen 6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1 moves d1d7")
        raw.ask_ready(timeout=30)
        raw.send("go infinite")
        time.sleep(3.0)  # the line to the repetition is found within a second
        waits = []
        for _ in range(10):
            began = time.monotonic()
            raw.ask_ready(timeout=10)
            waits.append(time.monotonic() - began)
            time.sleep(0.05)
        began = time.monotonic()
        raw.send("stop")
        raw.read_until("bestmove", timeout=10)
        waits.append(time.monotonic() - began)
        assert max(waits) < 0.5, [round(w, 3) for w in waits]
    finally:
        raw.close()
