"""The network contract (``nets/README.md``): the names every lc0-format ONNX network file uses, and how its value
head is read. The evaluator that runs such files, the converter that writes them from lc0's weights and the int8
rewrite of their graphs all follow it; none of them owns it."""

from __future__ import annotations

import numpy as np

INPUT_NAME = "/input/planes"
POLICY_NAME = "/output/policy"
WDL_NAME = "/output/wdl"
VALUE_NAME = "/output/value"
MLH_NAME = "/output/mlh"

#: ONNX metadata property selecting the input history: "full" (default, lc0's 8 positions) or "none"
#: (only the current position; history planes and repetition flags stay zero).
META_HISTORY = "arbor.history"
#: ONNX metadata property naming the input format; only "classical" (lc0's INPUT_CLASSICAL_112_PLANE, format 1)
#: is supported. Absent means classical, as for every file leela2onnx writes.
META_INPUT_FORMAT = "arbor.input_format"


def wdl_probabilities(wdl: np.ndarray) -> np.ndarray:
    """A [B, 3] ``/output/wdl`` as probabilities: as it is when it already is one, else its softmax (logits)."""
    wdl = wdl[:, :3]
    # Tested in Python: for the few rows of a search's batch, numpy's reductions would cost more than the rows.
    if not all(min(r) >= 0.0 and max(r) <= 1.0 and abs(sum(r) - 1.0) <= 1e-3 for r in wdl.tolist()):
        e = np.exp(wdl - wdl.max(axis=1, keepdims=True))
        wdl = e / e.sum(axis=1, keepdims=True)
    return wdl
