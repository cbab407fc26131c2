"""Step 6: make a net the bundled default, with its provenance next to it.

Copies the ONNX file into ``nets/default/`` (removing the net it replaces) and rewrites
``nets/default/README.md`` from the training run's own records: the data counts stored in the checkpoint,
the architecture, the training time and the last validation losses (``history.json``), and the gate results
(``gate.txt``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

DEFAULT_DIR = Path(__file__).resolve().parents[1] / "default"
MAX_BYTES = 30 * 1024 * 1024

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


def provenance(net: Path, run: Path, gate: Path | None, notes: str) -> str:
    import torch
    saved = torch.load(run / "checkpoint.pt", weights_only=False, map_location="cpu")
    history = json.loads((run / "history.json").read_text())
    last = history[-1]
    config, data = saved["config"], saved.get("data", {})
    lines = [HEADER, f"## `{net.name}`", ""]
    lines += [f"- **Architecture:** {config['blocks']} residual blocks × {config['filters']} filters"
              f"{', squeeze-excitation' if config['se'] else ''}; convolutional policy head (lc0's 1858 outputs), "
              f"WDL head ({config['value_channels']} channels, {config['value_hidden']} hidden). "
              f"{net.stat().st_size / 1e6:.1f} MB.",
              f"- **Data:** {data.get('positions', '?')} unique positions ({data.get('duplicates', '?')} duplicates "
              f"dropped): {data.get('train', '?')} for training, {data.get('validation', '?')} for validation "
              "(split by whole games).",
              f"- **Labels:** Stockfish WDL; policy target "
              f"{_policy_target(data.get('policy_temperature_cp', 0.0))}; positions per search depth: "
              f"{data.get('label_depths', '?')}.",
              f"- **Training:** {last['step']} steps ({last['epoch']:.2f} epochs), "
              f"{last['seconds'] / 3600:.2f} h on this machine's CPU.",
              f"- **Validation at the end:** policy cross-entropy {last['val_policy']:.4f}, "
              f"best-move agreement with Stockfish {last['val_top1']:.1%}, WDL cross-entropy {last['val_value']:.4f}, "
              f"Q mean squared error {last['val_q_mse']:.4f}."]
    if gate and gate.exists():
        lines += ["- **Gate:**"] + [f"  - {line}" for line in gate.read_text().splitlines() if line.strip()]
    if notes:
        lines += ["", notes.strip()]
    return "\n".join(lines) + "\n"


def ship(net: Path, run: Path, gate: Path | None = None, notes: str = "") -> Path:
    size = net.stat().st_size
    if size > MAX_BYTES:
        raise SystemExit(f"{net} is {size / 1e6:.1f} MB: the bundled net must stay under 30 MB")
    text = provenance(net, run, gate, notes)
    for old in DEFAULT_DIR.glob("*.onnx"):
        if old.name != net.name:
            old.unlink()
    target = DEFAULT_DIR / net.name
    shutil.copyfile(net, target)
    (DEFAULT_DIR / "README.md").write_text(text)
    return target
