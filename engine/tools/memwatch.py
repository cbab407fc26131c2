"""``arbor memwatch``: an engine's memory and nodes through a long ``go infinite``, as a GUI's user sees them.

It starts any UCI engine (Arbor by default), sets its options, sends ``go infinite`` on a position and every
``--every`` seconds reads the resident memory of the engine and the processes it started (Linux ``/proc``) and
the last ``nodes`` the engine reported. At the end it sends ``stop`` and times the ``bestmove``. It prints:

- the RSS growth per node between the first report and the end (the engine's bytes per node, cache included);
- the peak RSS above the ready engine's, against the ``RamLimitMb`` given;
- nodes a second in the first and last windows of ``--window`` seconds;

and writes the samples to a CSV file and, with ``--svg``, a plot of RSS and nodes against time.
"""

from __future__ import annotations

import argparse
import csv
import os
import queue
import re
import sys
import time
from dataclasses import dataclass
from typing import Optional

from .match import EngineSpec, UciError, UciEngine, parse_option

MIDDLEGAME = "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N1PN2/PP3PPP/R2QKB1R w KQ - 0 9"
NODES = re.compile(r"\bnodes (\d+)")


@dataclass
class Sample:
    seconds: float
    nodes: int
    rss: int  # bytes, the engine and its child processes


def rss_bytes(pid: int) -> int:
    """Resident memory of ``pid`` and its child processes (an engine's workers), in bytes; 0 once it is gone."""
    total = 0
    for p in [pid] + _children(pid):
        try:
            with open(f"/proc/{p}/status") as f:
                total += int(f.read().split("VmRSS:")[1].split()[0]) * 1024
        except (OSError, IndexError, ValueError):
            pass
    return total


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return found


def watch(spec: EngineSpec, fen: str, seconds: float, every: float) -> tuple[int, list[Sample], float, list[str]]:
    """(RSS of the ready engine, samples, milliseconds from stop to bestmove, the engine's info strings)."""
    engine = UciEngine(spec)
    nodes, strings = 0, []

    def take_lines() -> None:  # what the engine said since the last look: its nodes, its info strings
        nonlocal nodes
        while True:
            try:
                _, line = engine.lines.get_nowait()
            except queue.Empty:
                return
            if line is None:
                raise UciError("the engine exited during go infinite")
            match = NODES.search(line)
            if match:
                nodes = int(match.group(1))
            if line.startswith("info string"):
                strings.append(line.strip())

    try:
        engine.start()
        engine.send(f"position fen {fen}")
        engine.isready(120.0)
        take_lines()
        assert engine.proc is not None
        start_rss = rss_bytes(engine.proc.pid)
        engine.send("go infinite")
        began = time.monotonic()
        samples: list[Sample] = []
        while time.monotonic() - began < seconds:
            time.sleep(every)
            take_lines()
            samples.append(Sample(time.monotonic() - began, nodes, rss_bytes(engine.proc.pid)))
        sent = time.monotonic()
        engine.stop_or_kill(grace=30.0)
        stop_ms = (time.monotonic() - sent) * 1000
        return start_rss, samples, stop_ms, strings
    finally:
        engine.kill()


def rate(samples: list[Sample], first: bool, window: float) -> float:
    """Nodes a second over the first (or last) ``window`` seconds of samples that have nodes."""
    counted = [s for s in samples if s.nodes]
    if len(counted) < 2:
        return 0.0
    if first:
        inside = [s for s in counted if s.seconds <= counted[0].seconds + window]
    else:
        inside = [s for s in counted if s.seconds >= counted[-1].seconds - window]
    a, b = inside[0], inside[-1]
    return (b.nodes - a.nodes) / (b.seconds - a.seconds) if b.seconds > a.seconds else 0.0


def svg(samples: list[Sample], start_rss: int, title: str, limit_mb: Optional[float] = None) -> str:
    """A plot of RSS above start-up (MB, left axis) and nodes (right axis) against minutes."""
    w, h, left, right, top, bottom = 760, 360, 64, 80, 34, 44
    pw, ph = w - left - right, h - top - bottom
    t_max = max(s.seconds for s in samples) or 1.0
    mb = [(s.rss - start_rss) / (1 << 20) for s in samples]
    mb_max = max(max(mb), limit_mb or 0.0) * 1.1 or 1.0
    n_max = max(s.nodes for s in samples) * 1.1 or 1.0

    def x(t: float) -> float:
        return left + pw * t / t_max

    def line(values: list[float], top_value: float, colour: str) -> str:
        points = " ".join(f"{x(s.seconds):.1f},{top + ph * (1 - v / top_value):.1f}" for s, v in zip(samples, values))
        return f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{points}"/>'

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" '
             f'font-size="12"><rect width="{w}" height="{h}" fill="white"/>',
             f'<text x="{left}" y="20" font-size="14">{title}</text>',
             f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>']
    for i in range(5):
        frac = i / 4
        y = top + ph * (1 - frac)
        parts.append(f'<text x="{left - 6}" y="{y + 4:.0f}" text-anchor="end" fill="#c33">{mb_max * frac:.0f}</text>')
        parts.append(f'<text x="{left + pw + 6}" y="{y + 4:.0f}" fill="#36c">{n_max * frac / 1000:.0f}k</text>')
        parts.append(f'<text x="{x(t_max * frac):.0f}" y="{top + ph + 16}" text-anchor="middle">'
                     f'{t_max * frac / 60:.1f}</text>')
    if limit_mb:
        y = top + ph * (1 - limit_mb / mb_max)
        parts.append(f'<line x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#c33" '
                     'stroke-dasharray="4 4"/>')
        parts.append(f'<text x="{left + 4}" y="{y - 4:.0f}" fill="#c33">RamLimitMb</text>')
    parts.append(line(mb, mb_max, "#c33"))
    parts.append(line([float(s.nodes) for s in samples], n_max, "#36c"))
    parts.append(f'<text x="{left + pw / 2}" y="{h - 8}" text-anchor="middle">minutes</text>')
    parts.append(f'<text x="14" y="{top + ph / 2}" transform="rotate(-90 14 {top + ph / 2})" text-anchor="middle" '
                 'fill="#c33">RSS above start-up, MB</text>')
    parts.append(f'<text x="{w - 14}" y="{top + ph / 2}" transform="rotate(90 {w - 14} {top + ph / 2})" '
                 'text-anchor="middle" fill="#36c">nodes</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="arbor memwatch",
        description="Watch an engine's memory (RSS, its child processes included) and nodes during go infinite.")
    parser.add_argument("--engine", help="engine command line (default: Arbor itself)")
    parser.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                        help="a UCI option to set (repeatable), e.g. --option RamLimitMb=256")
    parser.add_argument("--fen", default=MIDDLEGAME, help="position to analyse (default: a middlegame)")
    parser.add_argument("--seconds", type=float, default=30.0, help="length of the go infinite (default 30)")
    parser.add_argument("--every", type=float, default=1.0, help="seconds between samples (default 1)")
    parser.add_argument("--window", type=float, default=300.0,
                        help="seconds of the first and last windows whose nodes a second are compared (default 300)")
    parser.add_argument("--csv", help="write the samples here")
    parser.add_argument("--svg", help="write a plot of RSS and nodes here")
    return parser


def main(argv: Optional[list[str]] = None) -> int:
    """Entry point of ``arbor memwatch``; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.every <= 0 or args.window <= 0:
        parser.error("--seconds, --every and --window must be positive")
    if not os.path.isdir("/proc"):
        parser.error("memwatch reads /proc: Linux only")
    try:
        options = [parse_option(o) for o in args.option]
    except ValueError as e:
        parser.error(str(e))
    try:
        spec = EngineSpec.from_command(args.engine, options=options)
    except ValueError as e:
        parser.error(str(e))
    try:
        start_rss, samples, stop_ms, strings = watch(spec, args.fen, args.seconds, args.every)
    except (OSError, UciError) as e:
        print(f"arbor memwatch: {e}", file=sys.stderr)
        return 1
    counted = [s for s in samples if s.nodes]
    if not counted:
        print("arbor memwatch: the engine reported no nodes", file=sys.stderr)
        return 1
    first, last = counted[0], samples[-1]
    limit = next((float(v) for k, v in options if k.lower() == "ramlimitmb"), None)
    peak = max(s.rss for s in samples)
    per_node = (last.rss - first.rss) / max(1, last.nodes - first.nodes)
    for text in strings:
        print(text)
    print(f"start-up RSS {start_rss / (1 << 20):.1f} MB; peak {(peak - start_rss) / (1 << 20):.1f} MB above it"
          + (f" (RamLimitMb {limit:g})" if limit else ""))
    print(f"nodes {last.nodes} in {last.seconds:.0f} s; RSS growth {per_node:.0f} bytes a node "
          f"(from {first.nodes} nodes at {first.seconds:.0f} s)")
    print(f"nodes a second: first {args.window:g} s {rate(samples, True, args.window):.0f}, "
          f"last {args.window:g} s {rate(samples, False, args.window):.0f}")
    print(f"stop answered in {stop_ms:.0f} ms")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            out = csv.writer(f)
            out.writerow(["seconds", "nodes", "rss_bytes"])
            out.writerows([(f"{s.seconds:.2f}", s.nodes, s.rss) for s in samples])
    if args.svg:
        title = f"go infinite, {' '.join(f'{k}={v}' for k, v in options) or 'default options'}"
        with open(args.svg, "w") as f:
            f.write(svg(samples, start_rss, title, limit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
