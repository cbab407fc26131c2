"""The ladder of generations: one row per training round, kept in git beside the shipped net.

``nets/default/ladder.json`` holds the rows; ``nets/default/README.md`` shows them as a table (``ship`` writes it). A
row is added when a round's gate has been played, shipped or not, and completed when the shipped generation has played
the net it replaced (from round 27) and then the reference net (rounds before 18: the heuristic). The total of
positions seen by a generation is the previous shipped generation's total plus what its own round added, since each
generation starts from the last.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

# The yardstick every shipped generation meets: arbor-r007, the last net a GPU trained (round 7, +279 over r004),
# played one game at a time with an engine on each core.
REFERENCE = Path(__file__).resolve().parents[1] / "reference" / "arbor-r007.onnx"
# The yardstick that is not Arbor: Stockfish 15.1 limited to this UCI_Elo, one game at a time, an engine a core.
STOCKFISH_ELO = 2100
# How an averaged round's row opens its notes; the ship's provenance reads the members back from what follows.
AVERAGE_NOTE = "no training: the average of "


@dataclass
class Row:
    round: int
    seed: int                       # positions seed; labels are deterministic given the positions
    net: Optional[str]              # the candidate's file name (shipped only when gate_passed)
    positions_added: int            # unique labelled positions this round generated
    positions_total: int            # seen by this generation and the ones it was fine-tuned from
    init: Optional[str]             # the generation it started from (None: from scratch)
    steps: int
    train_hours: float
    gate: str                       # "W-D-L vs OPPONENT at TC: Elo ..." as played
    gate_passed: bool
    heuristic: str = ""             # "W-D-L at TC: Elo ..." of the shipped net against the heuristic
    replaced: str = ""              # "W-D-L, Elo ... vs NET" against the net it replaced, one core each (round 27 on)
    reference: str = ""             # "W-D-L, Elo ..." against REFERENCE, one core each (rounds 16 and 17 by hand)
    stockfish: str = ""             # "W-D-L, Elo ..." against Stockfish 15.1 at the yardstick's UCI_Elo, one core each
    notes: list[str] = field(default_factory=list)   # shown with the training: shape, device, recipe
    retired: str = ""               # the commit whose nets/rounds/round-NNN/ last held the round's checkpoint


def read(path: Path) -> list[Row]:
    if not path.exists():
        return []
    return [Row(**row) for row in json.loads(path.read_text())]


def write(path: Path, rows: list[Row]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps([asdict(r) for r in sorted(rows, key=lambda r: r.round)], indent=1) + "\n")
    tmp.replace(path)


def upsert(path: Path, row: Row) -> list[Row]:
    """Add ``row``, replacing an earlier row of the same round; returns all rows."""
    rows = [r for r in read(path) if r.round != row.round] + [row]
    write(path, rows)
    return read(path)


def wdl(result: str) -> tuple[int, int, int]:
    """The (wins, draws, losses) a row's result ("W-D-L, Elo ...") starts with."""
    wins, draws, losses = result.split(",", 1)[0].split("-")
    return int(wins), int(draws), int(losses)


def last_shipped(rows: list[Row], before: Optional[int] = None) -> Optional[Row]:
    shipped = [r for r in rows if r.gate_passed and r.net and (before is None or r.round < before)]
    return max(shipped, key=lambda r: r.round) if shipped else None


def markdown(rows: list[Row]) -> str:
    """The ladder as a Markdown table, oldest round first."""
    lines = ["| round | seed | net | positions added / total seen | started from | training | gate | "
             "vs heuristic, 10 s + 0.1 s | vs the net it replaced, 10 s + 0.1 s, one core each | "
             f"vs `{REFERENCE.stem}`, 10 s + 0.1 s, one core each | "
             f"vs Stockfish 15.1 `UCI_Elo` {STOCKFISH_ELO}, 10 s + 0.1 s, one core each |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in sorted(rows, key=lambda r: r.round):
        net = f"`{r.net}`" if r.gate_passed else (f"`{r.net}`, not shipped" if r.net else "not shipped")
        if r.stockfish and not r.gate_passed:
            net += " (no gain against Stockfish)"
        start = f"`{r.init}`" if r.init else "scratch"
        kept = f"; checkpoint in history at `{r.retired}`" if r.retired else ""
        lines.append(f"| {r.round} | {r.seed} | {net} | {r.positions_added:,} / {r.positions_total:,} | {start} | "
                     f"{r.steps:,} steps, {r.train_hours:.2f} h{''.join('; ' + n for n in r.notes)}{kept} | {r.gate} | "
                     f"{r.heuristic or '—'} | {r.replaced or '—'} | {r.reference or '—'} | {r.stockfish or '—'} |")
    return "\n".join(lines)
