"""Command line: ``arbor`` speaks UCI; ``arbor bench``, ``arbor puzzles``, ``arbor match``, ``arbor calibrate``,
``arbor net`` are tools."""

from __future__ import annotations

import sys
from typing import Optional

USAGE = """usage: arbor [command]

  (no command)   speak UCI on stdin/stdout (what chess GUIs run)
  bench [N] [--option Name=Value ...]
                 search the bench positions to N simulations and print nodes/second
  bench --game [N] [--option Name=Value ...]
                 play 40 plies against itself, N new simulations a move (default 400) on the
                 reused tree, as on the clock, and print nodes/second
  bench --memory [N] [--option Name=Value ...]
                 grow one tree to N visits (default 20000) and print bytes per node
  bench --phases [N] [--option Name=Value ...]
                 the bench searches, timed by phase: microseconds per node where the search spends them
  puzzles ...    run EPD or Lichess-CSV puzzles through a UCI engine (arbor puzzles --help)
  match ...      play a match between two UCI engines (arbor match --help)
  calibrate measure|verify [...]
                 measure the UCI_Elo table against Stockfish 15.1 (arbor calibrate --help)
  calibrate mistakes GAMES.pgn
                 each player's moves that lost 200 cp or more by Stockfish at depth 12
  net convert IN.pb.gz OUT.onnx
                 convert an lc0 weight file (.pb.gz or .pb) into an ONNX network for WeightsFile
"""

NET_USAGE = "usage: arbor net convert IN.pb.gz OUT.onnx"


def main(argv: Optional[list[str]] = None) -> int:
    # In the PyInstaller executable a worker process (Threads >= 2, engine/workers.py) starts as the executable
    # itself: this runs the worker and exits. Anywhere else it does nothing.
    import multiprocessing
    multiprocessing.freeze_support()
    args = sys.argv[1:] if argv is None else argv
    if not args:
        from .uci import main as uci_main
        uci_main()
        return 0
    command, rest = args[0], args[1:]
    if command == "bench":
        return bench(rest)
    if command == "puzzles":
        from .tools.puzzles import main as puzzles_main
        return puzzles_main(rest)
    if command == "match":
        from .tools.match import main as match_main
        return match_main(rest)
    if command == "calibrate":
        from .tools.calibrate import main as calibrate_main
        return calibrate_main(rest)
    if command == "net":
        return net(rest)
    if command in ("-h", "--help", "help"):
        print(USAGE)
        return 0
    print(f"arbor: unknown command '{command}'\n{USAGE}", file=sys.stderr)
    return 2


def bench(args: list[str]) -> int:
    """``arbor bench [--game|--memory] [N] [--option Name=Value ...]``: the UCI ``bench`` from the command line."""
    from .uci import UciEngine
    engine = UciEngine()
    words = []
    i = 0
    while i < len(args):
        if args[i] == "--option" and i + 1 < len(args):
            name, _, value = args[i + 1].partition("=")
            engine.handle(f"setoption name {name} value {value}")
            i += 2
        else:
            words.append(args[i].removeprefix("--"))
            i += 1
    words.sort(key=lambda w: w not in ("memory", "game", "phases"))  # 'bench game N' whatever the order given
    engine.handle(" ".join(["bench"] + words))
    return 0


def net(args: list[str]) -> int:
    """``arbor net convert IN OUT``: an lc0 weight file to the ONNX network Arbor loads (as ``leela2onnx`` would)."""
    if args[:1] in (["-h"], ["--help"]):
        print(NET_USAGE)
        return 0
    if len(args) != 3 or args[0] != "convert":
        print(f"arbor net: expected 'convert IN OUT'\n{NET_USAGE}", file=sys.stderr)
        return 2
    from .evaluators.base import EvaluatorError
    from .evaluators.lc0_cache import convert_file
    source, target = args[1], args[2]
    try:
        network = convert_file(source, target)
    except EvaluatorError as exc:
        print(f"arbor net convert: {source}: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"arbor net convert: cannot write {target}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except ImportError as exc:
        print(f"arbor net convert: converting needs the onnx package ({exc})", file=sys.stderr)
        return 1
    print(f"wrote {target}: {network.describe()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
