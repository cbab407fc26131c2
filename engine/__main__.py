"""Command line: ``arbor`` alone speaks UCI (what chess GUIs run); ``arbor COMMAND`` runs one of the commands below.

``bench`` and ``net`` belong to the engine; ``puzzles``, ``match``, ``calibrate`` and ``memwatch`` are tools from
:mod:`engine.tools`, imported only when asked for, and each parses its own arguments (``arbor match --help``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional

from . import __version__

BENCH_MODES = ("game", "memory", "phases")
TOOLS = {  # command, the same as its module's name in engine.tools: one line of help
    "puzzles": "run EPD or Lichess-CSV puzzles through a UCI engine",
    "match": "play a match between two UCI engines",
    "calibrate": "measure or verify the UCI_Elo table against Stockfish; count a PGN's mistakes",
    "memwatch": "watch an engine's memory and nodes through a long go infinite",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="arbor", description="Arbor, a UCI chess engine. Without a command it speaks UCI on stdin/stdout.",
        epilog="'arbor COMMAND --help' describes each command.")
    parser.add_argument("--version", action="version", version=f"arbor {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    bench = commands.add_parser(
        "bench", help="search fixed positions and print nodes/second (as the UCI command 'bench')",
        description="Search the bench positions to N simulations each and print nodes/second; with a mode, "
                    "time something else. The same as the UCI command 'bench [MODE] [N]'.")
    mode = bench.add_mutually_exclusive_group()
    mode.add_argument("--game", dest="mode", action="store_const", const="game",
                      help="play 40 plies against itself, N new simulations a move (default 400) on the reused "
                           "tree, as on the clock")
    mode.add_argument("--memory", dest="mode", action="store_const", const="memory",
                      help="grow one tree to N visits (default 20000) and print bytes per node")
    mode.add_argument("--phases", dest="mode", action="store_const", const="phases",
                      help="the bench searches, timed by phase: microseconds per node where the search spends them")
    bench.add_argument("words", nargs="*", metavar="N", type=_bench_word,
                       help="simulations, a positive number ('game', 'memory' or 'phases' before it name the mode "
                            "too, as in the UCI command)")
    bench.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                       help="a UCI option to set first (repeatable), e.g. --option WeightsFile=net.onnx")

    for command, text in TOOLS.items():  # each tool parses the rest itself
        commands.add_parser(command, help=text, add_help=False)

    net = commands.add_parser("net", help="network files: convert an lc0 weight file to ONNX",
                              description="Network files.")
    net_commands = net.add_subparsers(dest="net_command", metavar="NET_COMMAND", required=True)
    convert = net_commands.add_parser(
        "convert", help="convert an lc0 weight file (.pb.gz or .pb) into an ONNX network for WeightsFile",
        description="Convert an lc0 weight file (.pb.gz or .pb) into the ONNX network Arbor loads, as lc0's "
                    "leela2onnx would.")
    convert.add_argument("source", metavar="IN.pb.gz")
    convert.add_argument("target", metavar="OUT.onnx")
    return parser


def _bench_word(word: str) -> str:
    if word in BENCH_MODES or (word.isdigit() and int(word) > 0):
        return word
    raise argparse.ArgumentTypeError(f"expected a positive number of simulations, got '{word}'")


def main(argv: Optional[list[str]] = None) -> int:
    # In the PyInstaller executable a worker process (Threads >= 2, engine/search/workers.py) starts as the executable
    # itself: this runs the worker and exits. Anywhere else it does nothing.
    import multiprocessing
    multiprocessing.freeze_support()
    from .search.memory import keep_large_blocks_mapped
    keep_large_blocks_mapped()
    args = sys.argv[1:] if argv is None else argv
    if not args:  # what a GUI runs: no argument parsing in the way of the first 'uci'
        from .uci.protocol import main as uci_main
        uci_main()
        return 0
    parser = build_parser()
    parsed, rest = parser.parse_known_args(args)
    if parsed.command in TOOLS:
        import importlib
        tool = importlib.import_module(f".tools.{parsed.command}", __package__)
        return tool.main(rest)
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if parsed.command is None:
        parser.error("a command is needed when arguments are given")
    if parsed.command == "bench":
        return bench(parsed.mode, parsed.words, parsed.option)
    return net_convert(parsed.source, parsed.target)


def bench(mode: Optional[str], words: list[str], options: list[str]) -> int:
    """``arbor bench [--game|--memory|--phases] [N] [--option Name=Value ...]``: the UCI ``bench`` from the command
    line (its own checks answer a bad N)."""
    from .uci.protocol import UciEngine
    engine = UciEngine()
    for option in options:
        name, _, value = option.partition("=")
        engine.handle(f"setoption name {name} value {value}")
    named = [w for w in words if w in BENCH_MODES]
    mode = mode or (named[0] if named else None)
    engine.handle(" ".join(["bench"] + ([mode] if mode else []) + [w for w in words if w not in BENCH_MODES]))
    return 0


def net_convert(source: str, target: str) -> int:
    """``arbor net convert IN OUT``: an lc0 weight file to the ONNX network Arbor loads (as ``leela2onnx`` would)."""
    from .evaluators.base import EvaluatorError
    from .evaluators.lc0_cache import convert_file
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
