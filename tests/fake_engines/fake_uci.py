#!/usr/bin/env python3
"""A tiny, deterministic UCI engine for testing ``arbor puzzles`` and ``arbor match``.

Everything is controlled through UCI options (so the tools' ``--option`` plumbing is exercised):

* ``Strategy`` (combo): ``first`` plays the first legal move in UCI order; ``greedy`` plays a
  mate in one if there is one, else the biggest capture, else a move chosen pseudo-randomly
  from the position and ``Seed``; ``book`` plays the moves of ``BookFile`` and falls back on
  ``greedy``.
* ``BookFile`` (string): JSON ``{"<fen without counters>": ["e2e4", "d2d4", ...]}``. The listed
  moves are announced in turn as the principal variation of ``info depth 1, 2, ...`` lines and
  the last one is played, so a tool can see the engine change its mind.
* ``MoveDelay`` (ms): sleep this long before answering ``go`` (without reading ``stop``).
* ``CrashAfter`` / ``IllegalAfter`` (n): on the n-th ``go`` since start, exit without answering /
  answer with an illegal move. 0 disables.
* ``Seed`` (spin).

Scores are the material balance from the side to move, in centipawns.
"""

import json
import random
import sys
import time

import chess

VALUES = {chess.PAWN: 100, chess.KNIGHT: 300, chess.BISHOP: 300, chess.ROOK: 500, chess.QUEEN: 900, chess.KING: 0}


def out(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def material(board):
    total = 0
    for piece in board.piece_map().values():
        total += VALUES[piece.piece_type] * (1 if piece.color == board.turn else -1)
    return total


def greedy(board, seed):
    moves = sorted(board.legal_moves, key=lambda m: m.uci())
    for move in moves:
        board.push(move)
        mate = board.is_checkmate()
        board.pop()
        if mate:
            return move
    captures = [m for m in moves if board.is_capture(m)]
    if captures:
        def gain(m):
            victim = board.piece_at(m.to_square)
            return VALUES[victim.piece_type] if victim else 100  # en passant
        return max(captures, key=gain)
    rng = random.Random(f"{board.fen()}|{seed}")
    return rng.choice(moves)


def main():
    opts = {"strategy": "first", "bookfile": "", "movedelay": 0, "crashafter": 0, "illegalafter": 0, "seed": 0}
    book = None
    board = chess.Board()
    gos = 0
    name = sys.argv[1] if len(sys.argv) > 1 else "FakeEngine"
    for raw in sys.stdin:
        parts = raw.split()
        if not parts:
            continue
        cmd = parts[0]
        if cmd == "uci":
            out(f"id name {name}")
            out("id author Arbor tests")
            out("option name Strategy type combo default first var first var greedy var book")
            out("option name BookFile type string default <empty>")
            out("option name MoveDelay type spin default 0 min 0 max 100000")
            out("option name CrashAfter type spin default 0 min 0 max 100000")
            out("option name IllegalAfter type spin default 0 min 0 max 100000")
            out("option name Seed type spin default 0 min 0 max 1000000")
            out("uciok")
        elif cmd == "isready":
            out("readyok")
        elif cmd == "setoption":
            text = raw.strip()
            key = text.split(" name ", 1)[1].split(" value ")[0].strip().lower()
            value = text.split(" value ", 1)[1].strip() if " value " in text else ""
            if key in ("movedelay", "crashafter", "illegalafter", "seed"):
                value = int(value)
            opts[key] = value
            if key == "bookfile":
                book = None
        elif cmd == "position":
            if parts[1] == "startpos":
                board = chess.Board()
                rest = parts[2:]
            else:
                board = chess.Board(" ".join(parts[2:8]))
                rest = parts[8:]
            if rest and rest[0] == "moves":
                for uci in rest[1:]:
                    board.push_uci(uci)
        elif cmd == "go":
            gos += 1
            if opts["crashafter"] and gos >= opts["crashafter"]:
                sys.exit(3)
            if opts["movedelay"]:
                time.sleep(opts["movedelay"] / 1000.0)
            if opts["illegalafter"] and gos >= opts["illegalafter"]:
                out("info depth 1 score cp 0 pv a1a1")
                out("bestmove a1h8")
                continue
            line = []
            if opts["strategy"] == "book" and opts["bookfile"] not in ("", "<empty>"):
                if book is None:
                    with open(opts["bookfile"]) as f:
                        book = json.load(f)
                line = book.get(" ".join(board.fen().split()[:4]), [])
            if not line:
                if not any(board.legal_moves):
                    out("info depth 0 score mate 0" if board.is_check() else "info depth 0 score cp 0")
                    out("bestmove (none)")
                    continue
                move = greedy(board, opts["seed"]) if opts["strategy"] != "first" else \
                    min(board.legal_moves, key=lambda m: m.uci())
                line = [move.uci()]
            for depth, uci in enumerate(line, 1):
                move = chess.Move.from_uci(uci)
                board.push(move)
                mate = board.is_checkmate()
                score = "mate 1" if mate else f"cp {-material(board)}"
                board.pop()
                out(f"info depth {depth} score {score} nodes {depth * 100} nps 10000 time {depth * 10} pv {uci}")
            out(f"bestmove {line[-1]}")
        elif cmd == "quit":
            break


if __name__ == "__main__":
    main()
