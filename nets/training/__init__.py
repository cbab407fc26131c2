"""Arbor's network-training pipeline: positions -> labels -> train -> export -> gate.

Run the steps with ``python -m nets.training <step> ...`` from the repository root (``nets/README.md`` gives
the commands and their measured times). The engine never imports this package, nor torch.
"""
