"""``arbor`` on the command line, as a user types it: the conventions of every Unix tool (``--version``, ``--help``,
``COMMAND --help``, a refused command or option exiting non-zero with the usage), and each command reaching the code
that runs it."""

from __future__ import annotations

import subprocess

import pytest

from conftest import ARBOR, ROOT
from engine import __version__


def arbor(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(ARBOR + list(args), cwd=str(ROOT), capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def test_version():
    done = arbor("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"arbor {__version__}"


def test_help_lists_every_command():
    done = arbor("--help")
    assert done.returncode == 0 and done.stdout.startswith("usage: arbor")
    for command in ("bench", "puzzles", "match", "calibrate", "net"):
        assert f"    {command}" in done.stdout, command


@pytest.mark.parametrize("command", [["bench"], ["puzzles"], ["match"], ["calibrate"], ["net"], ["net", "convert"]])
def test_each_command_has_its_own_help(command):
    done = arbor(*command, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: arbor " + " ".join(command)), done.stdout


@pytest.mark.parametrize("args", [["nonsense"], ["--bogus"], ["bench", "--bogus"], ["bench", "0"],
                                  ["bench", "many"], ["match", "--bogus"], ["puzzles", "--bogus"],
                                  ["calibrate", "nonsense"], ["net"], ["net", "unpack", "a", "b"]])
def test_a_refused_command_or_option_exits_non_zero_with_the_usage(args):
    done = arbor(*args)
    assert done.returncode == 2, (args, done.stdout, done.stderr)
    assert "usage: arbor" in done.stderr and "error:" in done.stderr, done.stderr
    assert done.stdout == ""


def test_bench_from_the_command_line_sets_options_and_mode():
    done = arbor("bench", "--memory", "200", "--option", "Evaluator=heuristic")
    assert done.returncode == 0, done.stderr
    assert "Bytes/node" in done.stdout and "heuristic" in done.stdout.lower(), done.stdout
    same = arbor("bench", "memory", "200", "--option", "Evaluator=heuristic")
    node_lines = [[line for line in out.splitlines() if line.startswith("Tree nodes")] for out in (done.stdout,
                                                                                                 same.stdout)]
    assert node_lines[0] and node_lines[0] == node_lines[1]
