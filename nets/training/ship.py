"""Step 6: make a net the bundled default, with its provenance next to it.

Copies the ONNX file into ``nets/default/`` (removing the net it replaces) and rewrites
``nets/default/README.md`` from the training run's own records: the data counts stored in the checkpoint,
the architecture, the training time and the last validation losses (``history.json``), and the gate results
(``gate.txt``, or a round's ladder row). A training round (``round.py``) also records its ladder row
(``ladder.json``, shown as a table at the end of the README), whether or not its net passed the gate; when
the shipped file is int8, its float original goes to ``nets/default/float/``, where the next round reads it.
While no net has shipped, a failed round's candidate goes to ``nets/default/base/``, the next round's start.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from . import ladder

DEFAULT_DIR = Path(__file__).resolve().parents[1] / "default"
MAX_BYTES = 30 * 1024 * 1024
LOCAL_CPU = "this machine's CPU"   # a run's device when it trained here (and before checkpoints recorded one)
LADDER_HEADING = "## Ladder"
LADDER_TEXT = f"""One row per training round (`python -m nets.training round N`, see `nets/README.md`): each generation
starts from the one shipped before it and is gated against it (two games at once, stopped by an SPRT). A candidate
that passes plays Stockfish 15.1 at `UCI_Elo` {ladder.STOCKFISH_ELO} and ships only if it scores more there than the
shipped net did: a gain against Arbor alone does not ship. Each shipped generation then plays the net it replaced
(from round 27 on) and the fixed reference net `nets/reference/{ladder.REFERENCE.name}`. These matches and
Stockfish's are played one game at a time with an engine on each core (`taskset`). Elo figures are the candidate's,
with 95% intervals.
"""

HEADER = """# The bundled network

The `.onnx` file in this folder is the network Arbor plays with when no option is set
(`WeightsFile=<autodiscover>`, `Evaluator=auto`). `pip install .` installs it as package data
(`engine/nets/`) and `build.spec` bundles it into the executable. `WeightsFile` still overrides it, and
`Evaluator=heuristic` still selects the heuristic evaluator.

It is made by the pipeline in `nets/training/` (commands in `nets/README.md`); its provenance follows.
"""


def _policy_target(temperature_cp: float) -> str:
    if temperature_cp > 0:
        return f"softmax(score / {temperature_cp:g} cp) over Stockfish's MultiPV moves"
    return "Stockfish's best move"


def _labels(data: dict) -> str:
    """Who labelled the positions: Stockfish (and how its policy target was built), teacher nets, or both."""
    sources = data.get("label_depths", {})
    teachers = [name.removeprefix("teacher ") for name in sources if name.startswith("teacher ")]
    depths = {depth: n for depth, n in sources.items() if not depth.startswith("teacher ")}
    parts = []
    if depths or not teachers:
        parts.append(f"Stockfish WDL; policy target {_policy_target(data.get('policy_temperature_cp', 0.0))}; "
                     f"positions per search depth: {depths or '?'}")
    for teacher in teachers:
        count = sources["teacher " + teacher]
        policy_net, _, value_net = teacher.partition(" policy + value from ")
        if value_net:
            parts.append(f"teacher network {policy_net} for the policy (its probabilities of its likeliest moves), "
                         f"{value_net}'s WDL for the value: {count} positions")
        else:
            parts.append(f"teacher network {teacher} (policy: its probabilities of its likeliest moves; value: its "
                         f"WDL): {count} positions")
    if data.get("result_weight"):
        parts.append(f"value target blended with the game result at {data['result_weight']:g}")
    if data.get("ending_repeats", 1) > 1:
        parts.append(f"each ending (at most {data.get('ending_pieces', '?')} pieces, kings included) trained "
                     f"{data['ending_repeats']} times an epoch ({data.get('ending_copies', '?')} more a pass)")
    if data.get("decided_keep", 1.0) < 1.0:
        parts.append(f"{data['decided_keep']:g} of the decided positions (the label's |W - L| at least "
                     f"{data.get('decided_q', '?')}) trained, {data.get('epoch_positions', '?')} positions a pass")
    return "; ".join(parts)


def _training(data: dict, run: Path) -> list[str]:
    """How a trained net was made: its data, labels, start, training and last validation (``history.json``)."""
    last = json.loads((run / "history.json").read_text())[-1]
    return [(f"- **Data:** {data.get('positions', '?')} positions ({data.get('duplicates', '?')} of them repeats, "
             "kept as played)" if data.get("repeats") == "keep" else
             f"- **Data:** {data.get('positions', '?')} unique positions ({data.get('duplicates', '?')} duplicates "
             "dropped)")
            + f": {data.get('train', '?')} for training, {data.get('validation', '?')} for validation "
            "(split by whole games).",
            f"- **Labels:** {_labels(data)}.",
            "- **Started from:** " + (f"`{data['init']}`" + (f", grown from {data['grown_from']} keeping its function"
                                                               if data.get("grown_from") else "")
                                      + f" (fine-tuned at peak learning rate {data.get('lr')})"
                                      if data.get("init") else "random weights"),
            f"- **Training:** {last['step']} steps ({last['epoch']:.2f} epochs), "
            f"{last['seconds'] / 3600:.2f} h on {data.get('device', LOCAL_CPU)}"
            + (f", batches of {data['batch_size']}" if data.get("batch_size") else "")
            + (f", {data['precision']} arithmetic." if data.get("precision") else "."),
            f"- **Validation at the end:** policy cross-entropy {last['val_policy']:.4f}, "
            f"best-move agreement with the labels {last['val_top1']:.1%}, WDL cross-entropy {last['val_value']:.4f}, "
            f"Q mean squared error {last['val_q_mse']:.4f}."]


def _averaging(data: dict, row: ladder.Row | None) -> list[str]:
    """How an averaged net was made (``average.py``): of which nets; it has no data or training of its own."""
    members = data["averaged"]
    named = next((note.removeprefix(ladder.AVERAGE_NOTE) for note in (row.notes if row else [])
                  if note.startswith(ladder.AVERAGE_NOTE)),
                 f"{len(members)} nets ({', '.join(Path(path).name for path in members)})")
    return [f"- **Made by averaging, not training:** each weight, the batch norms' statistics too, is the mean of that "
            f"weight in {named}; the ladder below says how each was trained. With no data of its own it has no "
            "validation figures; its export was checked against PyTorch."]


def provenance(net: Path, run: Path, gate: Path | None, notes: str, row: ladder.Row | None = None) -> str:
    import torch
    saved = torch.load(run / "checkpoint.pt", weights_only=False, map_location="cpu")
    config, data = saved["config"], saved.get("data", {})
    lines = [HEADER, f"## `{net.name}`", ""]
    lines += [f"- **Architecture:** {config['blocks']} residual blocks × {config['filters']} filters"
              f"{', squeeze-excitation' if config['se'] else ''}; convolutional policy head (lc0's 1858 outputs), "
              f"WDL head ({config['value_channels']} channels, {config['value_hidden']} hidden). "
              f"{net.stat().st_size / 1e6:.1f} MB."]
    lines += _averaging(data, row) if data.get("averaged") else _training(data, run)
    if row is not None:
        lines += [f"- **Round {row.round}** (seed {row.seed}): gate {row.gate}."]
        if row.heuristic:
            lines += [f"- **Against the heuristic at 10 s + 0.1 s:** {row.heuristic}."]
        if row.replaced:
            lines += [f"- **Against the net it replaced at 10 s + 0.1 s, one game at a time, one core each:** "
                      f"{row.replaced}."]
        if row.reference:
            lines += [f"- **Against the reference net `{ladder.REFERENCE.stem}` at 10 s + 0.1 s, one game at a time, "
                      f"one core each:** {row.reference}."]
        if row.stockfish:
            lines += [f"- **Against Stockfish 15.1 at `UCI_Elo` {ladder.STOCKFISH_ELO}, 10 s + 0.1 s, one game at a "
                      f"time, one core each:** {row.stockfish}."]
    if gate and gate.exists():
        lines += ["- **Gate:**"] + [f"  - {line}" for line in gate.read_text().splitlines() if line.strip()]
    if notes:
        lines += ["", notes.strip()]
    return "\n".join(lines) + "\n"


def _with_ladder(text: str, rows: list[ladder.Row]) -> str:
    head = text.split(LADDER_HEADING)[0].rstrip()
    if not rows:
        return head + "\n"
    return f"{head}\n\n{LADDER_HEADING}\n\n{LADDER_TEXT}\n{ladder.markdown(rows)}\n"


def record(row: ladder.Row) -> list[ladder.Row]:
    """Add or replace ``row`` in the ladder and rewrite the README's ladder table, leaving the shipped net and its
    provenance as they are; returns all rows."""
    readme = DEFAULT_DIR / "README.md"
    rows = ladder.upsert(DEFAULT_DIR / "ladder.json", row)
    readme.write_text(_with_ladder(readme.read_text() if readme.exists() else HEADER, rows))
    return rows


def ship(net: Path, run: Path, gate: Path | None = None, notes: str = "", *, float_net: Path | None = None,
         row: ladder.Row | None = None) -> Path:
    """Make ``net`` the default (when ``row`` is None or passed its gate) and record ``row`` in the ladder.
    Returns the default net's path."""
    target = DEFAULT_DIR / net.name
    if row is not None and not row.gate_passed:   # a failed round: its row only; the shipped net stays
        if not list(DEFAULT_DIR.glob("*.onnx")):
            # Nothing shipped yet: keep the candidate (not bundled, not discovered) so the next round starts from
            # it instead of from scratch, and the data this round learned from is not lost with the machine.
            base = DEFAULT_DIR / "base"
            base.mkdir(exist_ok=True)
            for old in base.glob("*.onnx"):
                old.unlink()
            shutil.copyfile(float_net or net, base / (float_net or net).name)
        record(row)
        return target
    rows = ladder.upsert(DEFAULT_DIR / "ladder.json", row) if row is not None else ladder.read(
        DEFAULT_DIR / "ladder.json")
    size = net.stat().st_size
    if size > MAX_BYTES:
        raise SystemExit(f"{net} is {size / 1e6:.1f} MB: the bundled net must stay under 30 MB")
    text = provenance(net, run, gate, notes, row)
    for old in [*DEFAULT_DIR.glob("*.onnx"), *(DEFAULT_DIR / "float").glob("*.onnx"),
                *(DEFAULT_DIR / "base").glob("*.onnx")]:
        if old.name != net.name and (float_net is None or old.name != float_net.name):
            old.unlink()
    if net.resolve() != target.resolve():
        shutil.copyfile(net, target)
    if float_net is not None:
        (DEFAULT_DIR / "float").mkdir(exist_ok=True)
        shutil.copyfile(float_net, DEFAULT_DIR / "float" / float_net.name)
    (DEFAULT_DIR / "README.md").write_text(_with_ladder(text, rows))
    return target
