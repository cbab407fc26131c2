"""The standalone executable: build it with PyInstaller from build.spec, then talk to it like a chess GUI.

Slow (one build, ~30 s on 2 cores, plus a minute of UCI), but part of the README test command. The build goes
to a temporary folder (``--distpath``/``--workpath``), so the work tree stays clean.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import chess
import chess.engine
import pytest

from conftest import RawUci
from engine.params import OPTIONS
from test_uci import BAD_INPUT

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "build.spec"
REFERENCE_NET = ROOT.parent / "shared" / "lc0-reference" / "meangirl-8.onnx"
# build.spec bundles nets/*.onnx and the default net, nets/default/*.onnx, all into the bundle's nets/.
BUNDLED_NETS = sorted((p for pattern in ("*.onnx", "default/*.onnx") for p in (ROOT / "nets").glob(pattern)
                       if p.is_file()), key=lambda p: p.name)
EXE_NAME = "arbor.exe" if sys.platform == "win32" else "arbor"
# Training and test packages must never be bundled (the issue: "no torch, no onnx, no test packages"). onnx is
# allowed since issue 32: WeightsFile converts lc0's .pb.gz nets into ONNX models inside the executable too.
FORBIDDEN = {"torch", "pytest", "_pytest", "tkinter", "matplotlib", "IPython", "scipy", "sympy"}


@pytest.fixture(scope="module")
def exe(tmp_path_factory) -> Path:
    pytest.importorskip("PyInstaller", reason="PyInstaller is not installed (pip install .[test])")
    out = tmp_path_factory.mktemp("pyinstaller")
    cmd = [sys.executable, "-m", "PyInstaller", str(SPEC), "--noconfirm", "--log-level", "WARN",
           "--distpath", str(out / "dist"), "--workpath", str(out / "build")]
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=str(ROOT), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"PyInstaller failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    path = out / "dist" / EXE_NAME
    assert path.is_file(), f"no {path}; dist holds {list((out / 'dist').iterdir())}"
    print(f"built {path} ({path.stat().st_size / 1e6:.1f} MB) in {time.monotonic() - start:.0f} s")
    return path


@pytest.fixture(scope="module")
def rundir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("run")


@pytest.fixture
def gui(exe, rundir):
    eng = chess.engine.SimpleEngine.popen_uci([str(exe)], cwd=str(rundir), timeout=60)
    yield eng
    try:
        eng.quit()
    except Exception:
        eng.close()


@pytest.fixture
def raw(exe):
    r = RawUci([str(exe)])  # started in the repo root, which a frozen app never reads from
    r.send("uci")
    r.read_until("uciok", timeout=60)
    yield r
    r.close()


def run_exe(exe: Path, rundir: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), *args], cwd=str(rundir), capture_output=True, text=True, timeout=timeout)


def test_bundle_holds_no_training_or_test_packages(exe):
    from PyInstaller.archive.readers import CArchiveReader
    archive = CArchiveReader(str(exe))
    names = set(archive.toc)
    modules = set(archive.open_embedded_archive("PYZ.pyz").toc)
    tops = {name.replace("\\", "/").split("/")[0].split(".")[0] for name in names | modules}
    assert not tops & FORBIDDEN, sorted(tops & FORBIDDEN)
    assert "onnxruntime" in tops and "engine" in tops
    assert any("onnxruntime_pybind11_state" in name for name in names), "onnxruntime's native module is missing"
    for net in BUNDLED_NETS:
        assert any(name.replace("\\", "/") == f"nets/{net.name}" for name in names), net.name


def test_handshake_and_options(gui):
    assert gui.id["name"].startswith("Arbor ")
    assert "author" in gui.id
    for option in OPTIONS:
        assert option.name in gui.options, option.name
    gui.configure({"CPuct": 2.0, "UCI_ShowWDL": True})
    infos = gui.analyse(chess.Board(), chess.engine.Limit(nodes=200), multipv=2)  # sets MultiPV
    assert len(infos) == 2 and infos[0]["pv"][0] != infos[1]["pv"][0]
    assert "wdl" in infos[0]


def test_every_go_limit_and_stop(gui):
    board = chess.Board()
    r = gui.play(board, chess.engine.Limit(nodes=200), info=chess.engine.INFO_ALL)
    assert r.move in board.legal_moves and r.info["nodes"] >= 200
    start = time.monotonic()
    r = gui.play(board, chess.engine.Limit(time=0.3))
    assert r.move in board.legal_moves and time.monotonic() - start < 2.0
    r = gui.play(board, chess.engine.Limit(white_clock=5, black_clock=5, white_inc=0.1, black_inc=0.1))
    assert r.move in board.legal_moves
    r = gui.play(board, chess.engine.Limit(white_clock=5, black_clock=5, remaining_moves=10))
    assert r.move in board.legal_moves
    r = gui.play(board, chess.engine.Limit(depth=2), info=chess.engine.INFO_ALL)
    assert r.move in board.legal_moves and r.info["depth"] >= 2
    # go infinite, then stop (python-chess sends stop when the analysis is stopped)
    with gui.analysis(board) as analysis:
        for info in analysis:
            if info.get("nodes", 0) >= 100:
                break
        start = time.monotonic()
        analysis.stop()
        best = analysis.wait()
    assert time.monotonic() - start < 1.0
    assert best.move in board.legal_moves


def test_short_complete_game(gui):
    gui.configure({"Simulations": 30})
    board = chess.Board()
    while not board.is_game_over(claim_draw=True) and board.ply() < 40:
        r = gui.play(board, chess.engine.Limit(white_clock=60, black_clock=60, white_inc=1, black_inc=1))
        assert r.move in board.legal_moves, (board.fen(), r.move)
        board.push(r.move)
    assert board.ply() == 40 or board.is_game_over(claim_draw=True)


def test_the_executable_probes_with_the_compiled_core(raw):
    """build.spec bundles the compiled core (the checkout's, which 'pip install -e .' built)."""
    lines = raw.ask_ready()
    assert "info string core compiled (board, tree, tactics)" in lines, lines
    raw.send("position fen r6k/p1Q4p/2p1b1rq/4p3/B3P3/4P3/PPP3P1/4RRK1 b - - 0 1")   # WAC.088: mate by checks
    raw.send("go movetime 1000")
    lines = raw.read_until("bestmove", timeout=30)
    assert lines[-1].split()[1] == "g6g2" and any(" score mate " in line for line in lines), lines


def test_bad_input_keeps_it_alive(raw):
    """The same bad lines as tests/test_uci.py sends to ``python -m engine``, all to one process."""
    for bad in BAD_INPUT:
        raw.send("position startpos moves e2e4")
        raw.send(bad)
        raw.send("stop")  # a malformed go may still start a search
        raw.ask_ready()
        raw.send("go nodes 20")
        best = raw.read_until("bestmove")[-1].split()[1]
        board = chess.Board()
        board.push_uci("e2e4")
        assert chess.Move.from_uci(best) in board.legal_moves, (bad, best)
    assert raw.proc.poll() is None


def test_network_from_a_path_runs_in_the_bundled_onnxruntime(raw):
    if not REFERENCE_NET.is_file():
        pytest.skip(f"no reference network at {REFERENCE_NET}")
    raw.send(f"setoption name WeightsFile value {REFERENCE_NET.resolve()}")
    lines = raw.ask_ready()
    assert any(line.startswith("info string loaded network") for line in lines), lines
    raw.send("position startpos")
    raw.send("go nodes 50")
    lines = raw.read_until("bestmove")
    assert chess.Move.from_uci(lines[-1].split()[1]) in chess.Board().legal_moves
    assert not any("using the heuristic" in line for line in raw.lines), raw.lines
    # The 8-bit tower is built inside the bundle too, from onnx and onnxruntime alone.
    raw.send("setoption name NetworkPrecision value int8")
    lines = raw.ask_ready(timeout=60)
    assert any("loaded network" in line and "tower in int8" in line for line in lines), lines
    raw.send("go nodes 50")
    lines = raw.read_until("bestmove")
    assert chess.Move.from_uci(lines[-1].split()[1]) in chess.Board().legal_moves


def test_threads_2_starts_its_worker_from_the_executable(raw):
    """With the heuristic, Threads=2 starts a worker process: in the executable that is the executable itself."""
    raw.send("setoption name Evaluator value heuristic")
    raw.send("setoption name Threads value 2")
    raw.ask_ready(timeout=60)
    raw.send("position startpos")
    raw.send("go nodes 3000")
    lines = raw.read_until("bestmove", timeout=60)
    assert chess.Move.from_uci(lines[-1].split()[1]) in chess.Board().legal_moves
    assert not any("error" in line or "failed" in line for line in lines), lines
    if Path("/proc").is_dir() and len(os.sched_getaffinity(0)) >= 2:  # no workers on one core
        # A one-file executable runs Python in a child of the process started.
        workers = [pid for pid, cmdline in _descendants(raw.proc.pid) if b"multiprocessing-fork" in cmdline]
        assert workers, "no worker process"


def _descendants(pid: int) -> list[tuple[int, bytes]]:
    """(pid, command line) of every process below ``pid``."""
    parents = {}
    for entry in Path("/proc").iterdir():
        try:
            parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for child, its_parent in parents.items():
            if its_parent == parent:
                todo.append(child)
                try:
                    found.append((child, (Path("/proc") / str(child) / "cmdline").read_bytes()))
                except OSError:
                    pass
    return found


def test_default_network_resolves_inside_the_bundle(raw):
    if not BUNDLED_NETS:
        pytest.skip("nets/ holds no .onnx network yet, so the executable bundles none")
    lines = raw.ask_ready()
    loaded = [line for line in lines if line.startswith("info string loaded network")]
    assert loaded, lines
    path = loaded[0].split("loaded network", 1)[1].strip()
    path = path.rsplit(" (", 1)[0] if path.endswith(")") else path   # less the precision note
    assert Path(path).name == BUNDLED_NETS[0].name
    assert not Path(path).resolve().is_relative_to(ROOT), f"{path} comes from the source tree, not the bundle"


def test_bench_and_tools(exe, rundir):
    proc = run_exe(exe, rundir, "bench", "20")
    assert proc.returncode == 0, proc.stderr
    nodes = [line for line in proc.stdout.splitlines() if line.startswith("Nodes searched")]
    assert nodes and int(nodes[0].split(":")[1]) > 0, proc.stdout
    assert "Nodes/second" in proc.stdout
    # The tools import lazily, and with no --engine they run the executable itself (sys.executable).
    proc = run_exe(exe, rundir, "puzzles", str(ROOT / "tests" / "data" / "puzzles.epd"), "--nodes", "50",
                   "--limit", "3", "--no-progress")
    assert proc.returncode == 0 and "Solved: " in proc.stdout, (proc.stdout, proc.stderr)
    proc = run_exe(exe, rundir, "match", "--games", "2", "--nodes", "20", "--maxmoves", "30", "--no-progress")
    assert proc.returncode == 0 and "Score of Arbor" in proc.stdout, (proc.stdout, proc.stderr)


def test_command_line_conventions_and_net_convert(exe, rundir):
    from engine import __version__
    from test_lc0_weights import net_bytes, random_net
    proc = run_exe(exe, rundir, "--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"arbor {__version__}", (proc.stdout, proc.stderr)
    proc = run_exe(exe, rundir, "nonsense")
    assert proc.returncode == 2 and "usage: arbor" in proc.stderr, (proc.stdout, proc.stderr)
    proc = run_exe(exe, rundir, "calibrate", "--help")
    assert proc.returncode == 0 and proc.stdout.startswith("usage: arbor calibrate"), (proc.stdout, proc.stderr)
    source, target = rundir / "tiny.pb.gz", rundir / "tiny.onnx"
    source.write_bytes(net_bytes(random_net(seed=5)))
    proc = run_exe(exe, rundir, "net", "convert", str(source), str(target))
    assert proc.returncode == 0 and proc.stdout.startswith(f"wrote {target}"), (proc.stdout, proc.stderr)
    assert target.stat().st_size > 1000
