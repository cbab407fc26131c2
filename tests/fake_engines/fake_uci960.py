#!/usr/bin/env python3
"""A tiny, deterministic UCI engine that knows Chess960, for testing ``arbor match`` and ``arbor puzzles``.

``fake_uci960.py NAME`` declares ``UCI_Chess960``; ``fake_uci960.py NAME no960`` does not (it then plays
standard chess only, like fake_uci.py). Options:

* ``UCI_Chess960`` (check): positions are read with Chess960 castling rules, and castling is read and
  written king-takes-rook (``e1h1``), as the UCI convention for Chess960 requires.
* ``Strategy`` (combo): ``castle`` plays a castling move when there is one (the a-side one first
  with ``CastleSide=a``, else the h-side one), else as ``greedy``; ``greedy`` and ``first`` as in
  fake_uci.py.
* ``LogFile`` (string): every command received from then on is appended to this file, so a test
  can see what the tool sent.

It is strict, so that a tool that sends the wrong notation is caught: a ``position`` whose moves are
not legal in the current mode is answered with ``info string`` and the next ``go`` with
``bestmove 0000``.
"""

import os
import sys

import chess

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fake_uci import greedy, material  # noqa: E402


def out(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def castling_move(board, side):
    moves = [m for m in board.legal_moves if board.is_castling(m)]
    if not moves:
        return None
    # The a-side castling moves the king towards the a-file (or keeps it on the c-file).
    a_side = [m for m in moves if board.is_queenside_castling(m)]
    h_side = [m for m in moves if board.is_kingside_castling(m)]
    order = (a_side + h_side) if side == "a" else (h_side + a_side)
    return order[0]


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "Fake960"
    declares = not (len(sys.argv) > 2 and sys.argv[2] == "no960")
    opts = {"uci_chess960": "false", "strategy": "castle", "castleside": "h", "logfile": ""}
    board = chess.Board()
    broken = None
    for raw in sys.stdin:
        parts = raw.split()
        if not parts:
            continue
        if opts["logfile"] not in ("", "<empty>"):
            with open(opts["logfile"], "a") as f:
                f.write(raw.strip() + "\n")
        cmd = parts[0]
        chess960 = opts["uci_chess960"].lower() == "true"
        if cmd == "uci":
            out(f"id name {name}")
            out("id author Arbor tests")
            if declares:
                out("option name UCI_Chess960 type check default false")
            out("option name Strategy type combo default castle var castle var greedy var first")
            out("option name CastleSide type combo default h var h var a")
            out("option name LogFile type string default <empty>")
            out("uciok")
        elif cmd == "isready":
            out("readyok")
        elif cmd == "setoption":
            text = raw.strip()
            key = text.split(" name ", 1)[1].split(" value ")[0].strip().lower()
            opts[key] = text.split(" value ", 1)[1].strip() if " value " in text else ""
        elif cmd == "position":
            broken = None
            try:
                if parts[1] == "startpos":
                    board, rest = chess.Board(chess960=chess960), parts[2:]
                else:
                    end = parts.index("moves") if "moves" in parts else len(parts)
                    board, rest = chess.Board(" ".join(parts[2:end]), chess960=chess960), parts[end:]
                for uci in rest[1:]:
                    move = chess.Move.from_uci(uci)
                    if move not in board.legal_moves:   # no lenient parse_uci: the notation must fit the mode
                        raise ValueError(f"illegal move {uci} in {board.fen()}")
                    board.push(move)
            except (ValueError, IndexError) as e:
                broken = str(e)
                out(f"info string {broken}")
        elif cmd == "go":
            if broken or not any(board.legal_moves):
                out("bestmove 0000")
                continue
            move = None
            if opts["strategy"] == "castle":
                move = castling_move(board, opts["castleside"])
            if move is None:
                move = min(board.legal_moves, key=lambda m: m.uci()) if opts["strategy"] == "first" \
                    else greedy(board, 0)
            board.push(move)
            score = -material(board)
            board.pop()
            out(f"info depth 1 score cp {score} nodes 1 time 1 pv {move.uci()}")
            out(f"bestmove {move.uci()}")
        elif cmd == "quit":
            break


if __name__ == "__main__":
    main()
