"""The network: an lc0-shaped residual tower (squeeze-excitation blocks) with lc0's inputs and outputs.

- input ``[B, 112, 8, 8]`` as the engine encodes it (``nets/README.md``); the unscaled rule-50 plane is
  scaled inside the net, so the exported ONNX file takes the engine's planes unchanged;
- policy: a convolutional head whose 73 move planes (56 queen-like moves, 8 knight moves, 9 promotions, per
  from-square) are gathered into lc0's 1858 outputs, as lc0's own convolutional policy head does;
- value: win/draw/loss logits (the exported file applies the softmax).
"""

from __future__ import annotations

import chess
import numpy as np
import torch
from torch import nn

from engine.evaluators.lc0_planes import AUX_BASE, NUM_PLANES
from engine.evaluators.lc0_policy import POLICY_MOVES, POLICY_SIZE

MOVE_PLANES = 73
RULE50_SCALE = 1.0 / 99.0
_QUEEN_DIRECTIONS = [(1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1)]   # (d_rank, d_file)
_KNIGHT_JUMPS = [(2, 1), (1, 2), (-1, 2), (-2, 1), (-2, -1), (-1, -2), (1, -2), (2, -1)]
_PROMOTIONS = "qrb"


def move_plane(uci: str) -> int:
    """The (plane * 64 + from-square) of a policy move written from the side to move's view."""
    move = chess.Move.from_uci(uci)
    frm, to = move.from_square, move.to_square
    dr, df = chess.square_rank(to) - chess.square_rank(frm), chess.square_file(to) - chess.square_file(frm)
    if move.promotion:
        plane = 64 + 3 * _PROMOTIONS.index(chess.piece_symbol(move.promotion)) + (df + 1)
    elif (dr, df) in _KNIGHT_JUMPS:
        plane = 56 + _KNIGHT_JUMPS.index((dr, df))
    else:
        distance = max(abs(dr), abs(df))
        plane = 7 * _QUEEN_DIRECTIONS.index((dr // distance, df // distance)) + distance - 1
    return plane * 64 + frm


# What a run may train (``ArborNet.train_only``): every layer, or the policy head alone on a frozen tower and value.
TRAINABLE = ("all", "policy")
SHARED = ("stem", "tower")   # the layers both heads read
_SHARED_AND_VALUE = SHARED + ("value_conv", "value_fc")


POLICY_GATHER = np.array([move_plane(u) for u in POLICY_MOVES], dtype=np.int64)
assert len(set(POLICY_GATHER.tolist())) == POLICY_SIZE


class SqueezeExcite(nn.Module):
    def __init__(self, channels: int, ratio: int = 4):
        super().__init__()
        self.fc1 = nn.Linear(channels, channels // ratio)
        self.fc2 = nn.Linear(channels // ratio, 2 * channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = x.mean(dim=(2, 3))
        w, b = self.fc2(torch.relu(self.fc1(s))).chunk(2, dim=1)
        return x * torch.sigmoid(w)[:, :, None, None] + b[:, :, None, None]


def conv_bn(cin: int, cout: int, k: int = 3) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, k, padding=k // 2, bias=False), nn.BatchNorm2d(cout))


class Block(nn.Module):
    def __init__(self, channels: int, se: bool):
        super().__init__()
        self.conv1 = conv_bn(channels, channels)
        self.conv2 = conv_bn(channels, channels)
        self.se = SqueezeExcite(channels) if se else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.se(self.conv2(torch.relu(self.conv1(x)))))


class ArborNet(nn.Module):
    """``blocks`` residual blocks of ``filters`` channels. ``forward`` returns (policy logits [B, 1858],
    WDL logits [B, 3])."""

    def __init__(self, blocks: int = 6, filters: int = 64, se: bool = True, value_channels: int = 32,
                 value_hidden: int = 128):
        super().__init__()
        self.config = {"blocks": blocks, "filters": filters, "se": se, "value_channels": value_channels,
                       "value_hidden": value_hidden}
        scale = torch.ones(NUM_PLANES)
        scale[AUX_BASE + 5] = RULE50_SCALE
        self.register_buffer("input_scale", scale[None, :, None, None], persistent=False)
        self.register_buffer("policy_gather", torch.from_numpy(POLICY_GATHER), persistent=False)
        self.stem = nn.Sequential(conv_bn(NUM_PLANES, filters), nn.ReLU())
        self.tower = nn.Sequential(*[Block(filters, se) for _ in range(blocks)])
        self.policy_head = nn.Sequential(conv_bn(filters, filters), nn.ReLU(),
                                         nn.Conv2d(filters, MOVE_PLANES, 3, padding=1))
        self.value_conv = nn.Sequential(conv_bn(filters, value_channels, 1), nn.ReLU())
        self.value_fc = nn.Sequential(nn.Linear(value_channels * 64, value_hidden), nn.ReLU(),
                                      nn.Linear(value_hidden, 3))
        self.frozen: tuple[str, ...] = ()

    def train_only(self, part: str) -> None:
        """Train ``part`` of the net: "all", or "policy": the stem, tower and value head get no gradients and their
        batch norms keep their running statistics, so the net's value stays exactly the one it started with."""
        if part not in TRAINABLE:
            raise ValueError(f"train_only must be one of {', '.join(TRAINABLE)}, not {part!r}")
        self.frozen = () if part == "all" else _SHARED_AND_VALUE
        for name, module in self.named_children():
            module.requires_grad_(name not in self.frozen)
        self.train(self.training)

    def train(self, mode: bool = True) -> "ArborNet":
        super().train(mode)
        for name in getattr(self, "frozen", ()):   # a frozen part always computes as evaluated
            getattr(self, name).eval()
        return self

    def forward(self, planes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.tower(self.stem(planes * self.input_scale))
        policy = self.policy_head(x).flatten(1).index_select(1, self.policy_gather)
        value = self.value_fc(self.value_conv(x).flatten(1))
        return policy, value


class Exported(nn.Module):
    """The contract's outputs: policy logits and WDL probabilities."""

    def __init__(self, net: ArborNet):
        super().__init__()
        self.net = net

    def forward(self, planes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        policy, value = self.net(planes)
        return policy, torch.softmax(value, dim=1)
