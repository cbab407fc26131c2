"""One net from two: the policy of one ONNX net and the value of another, both in lc0's contract (nets/README.md).

    python nets/hybrid_net.py POLICY.onnx VALUE.onnx OUT.onnx

A diagnostic for training rounds: when a candidate loses its gate, playing its policy with the shipped net's value,
and the other way round, at a fixed number of nodes (the hybrid runs both towers, so a clock would charge it
twice) says which half lost. Both towers read the same input; the output names are the contract's, so the engine
loads the result like any net. The value net's head is kept as it is (``/output/wdl`` or ``/output/value``).
"""

from __future__ import annotations

import argparse
import sys

import onnx
import onnx.compose
import onnx.version_converter
from onnx import helper

INPUT, POLICY, WDL, VALUE = "/input/planes", "/output/policy", "/output/wdl", "/output/value"
PREFIX = "value_net_"


def hybrid(policy_net: onnx.ModelProto, value_net: onnx.ModelProto) -> onnx.ModelProto:
    """A model computing ``policy_net``'s policy and ``value_net``'s value from one input."""
    # One graph has one opset: the older net is converted up (ReduceMean's axes, for one, became an input at 18).
    opset = max(_opset(policy_net), _opset(value_net))
    policy_net = _at_opset(policy_net, opset)       # a copy either way: renamed below, the caller's stays whole
    value_net = _at_opset(value_net, opset)
    value_net = onnx.compose.add_prefix(value_net, PREFIX)
    value_outputs = [o for o in value_net.graph.output if o.name in (PREFIX + WDL, PREFIX + VALUE)]
    if not value_outputs or POLICY not in {o.name for o in policy_net.graph.output}:
        raise ValueError(f"the policy net needs {POLICY} and the value net {WDL} or {VALUE}")
    value_name = value_outputs[0].name.removeprefix(PREFIX)
    for node in policy_net.graph.node:     # the policy net's own value head is left unread
        node.output[:] = [f"unused{name}" if name in (WDL, VALUE) else name for name in node.output]
    for node in value_net.graph.node:
        node.input[:] = [INPUT if name == PREFIX + INPUT else name for name in node.input]
    renamed = onnx.ValueInfoProto()
    renamed.CopyFrom(value_outputs[0])
    renamed.name = value_name
    graph = helper.make_graph(
        list(policy_net.graph.node) + list(value_net.graph.node)
        + [helper.make_node("Identity", [value_outputs[0].name], [value_name])],
        "hybrid", list(policy_net.graph.input),
        [o for o in policy_net.graph.output if o.name == POLICY] + [renamed],
        list(policy_net.graph.initializer) + list(value_net.graph.initializer))
    model = helper.make_model(graph, opset_imports=policy_net.opset_import)
    model.ir_version = max(policy_net.ir_version, value_net.ir_version)
    onnx.checker.check_model(model)
    return model


def _opset(model: onnx.ModelProto) -> int:
    return next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


def _at_opset(model: onnx.ModelProto, opset: int) -> onnx.ModelProto:
    if _opset(model) == opset:
        return onnx.ModelProto.FromString(model.SerializeToString())
    return onnx.version_converter.convert_version(model, opset)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("policy", help="the net whose policy the hybrid plays")
    parser.add_argument("value", help="the net whose value the hybrid plays")
    parser.add_argument("out")
    args = parser.parse_args(argv)
    try:
        model = hybrid(onnx.load(args.policy), onnx.load(args.value))
    except (ValueError, OSError, onnx.checker.ValidationError) as error:
        print(f"hybrid_net: {error}", file=sys.stderr)
        return 1
    onnx.save(model, args.out)
    print(f"wrote {args.out}: policy of {args.policy}, value of {args.value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
