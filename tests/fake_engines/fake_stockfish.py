#!/usr/bin/env python3
"""A deterministic stand-in for Stockfish in the training-pipeline tests: answers ``go`` (any limit) with
``MultiPV`` lines scored by material after each move (side to move's view, mate in one = ``mate 1``), best
first, ties broken by the move's UCI string. Enough for ``nets.training`` positions and labels without
Stockfish.
"""

import sys

import chess

VALUES = {chess.PAWN: 100, chess.KNIGHT: 300, chess.BISHOP: 310, chess.ROOK: 500, chess.QUEEN: 900, chess.KING: 0}


def out(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def material(board: chess.Board, colour: chess.Color) -> int:
    return sum(VALUES[p.piece_type] * (1 if p.color == colour else -1) for p in board.piece_map().values())


def ranked(board: chess.Board) -> list[tuple[str, str]]:
    scored = []
    for move in board.legal_moves:
        board.push(move)
        if board.is_checkmate():
            key, text = 10**6, "mate 1"
        else:
            key = material(board, not board.turn)
            text = f"cp {key}"
        board.pop()
        scored.append((-key, move.uci(), text))
    scored.sort()
    return [(uci, text) for _, uci, text in scored]


def main() -> None:
    board = chess.Board()
    multipv = 1
    for raw in sys.stdin:
        parts = raw.split()
        if not parts:
            continue
        cmd = parts[0]
        if cmd == "uci":
            out("id name FakeStockfish")
            out("option name Threads type spin default 1 min 1 max 1024")
            out("option name Hash type spin default 16 min 1 max 33554432")
            out("option name MultiPV type spin default 1 min 1 max 500")
            out("uciok")
        elif cmd == "isready":
            out("readyok")
        elif cmd == "setoption" and "MultiPV" in parts:
            multipv = int(parts[-1])
        elif cmd == "position":
            if parts[1] == "startpos":
                board, rest = chess.Board(), parts[2:]
            else:
                board, rest = chess.Board(" ".join(parts[2:8])), parts[8:]
            for uci in rest[1:] if rest and rest[0] == "moves" else []:
                board.push_uci(uci)
        elif cmd == "go":
            lines = ranked(board)
            for k, (uci, score) in enumerate(lines[:multipv], 1):
                out(f"info depth 1 seldepth 1 multipv {k} score {score} nodes 1 pv {uci}")
            out(f"bestmove {lines[0][0]}" if lines else "bestmove (none)")
        elif cmd == "quit":
            break


if __name__ == "__main__":
    main()
