"""arbor memwatch: an engine's memory and nodes through go infinite, watched from outside as a GUI would."""

from __future__ import annotations

import csv
import os
import subprocess
import sys

import pytest

from engine.tools.memwatch import Sample, rate, svg

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc (Linux)")


def test_memwatch_reports_bytes_per_node_and_writes_its_samples(tmp_path):
    out_csv, out_svg = tmp_path / "s.csv", tmp_path / "p.svg"
    done = subprocess.run([sys.executable, "-m", "engine", "memwatch", "--seconds", "4", "--every", "0.5",
                           "--window", "2", "--option", "Evaluator=heuristic", "--option", "RamLimitMb=64",
                           "--csv", str(out_csv), "--svg", str(out_svg)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "bytes a node" in text and "RamLimitMb 64" in text and "stop answered in" in text
    rows = list(csv.DictReader(out_csv.open()))
    assert len(rows) >= 6 and int(rows[-1]["nodes"]) > int(rows[0]["nodes"]) >= 0
    assert all(int(r["rss_bytes"]) > 10 << 20 for r in rows)   # a Python engine is more than 10 MB
    assert out_svg.read_text().startswith("<svg") and "polyline" in out_svg.read_text()


def test_memwatch_refuses_nonsense():
    done = subprocess.run([sys.executable, "-m", "engine", "memwatch", "--seconds", "0"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "positive" in done.stderr


def test_rates_of_the_first_and_last_windows():
    samples = [Sample(t, 0 if t < 1 else 100 * t if t <= 10 else 1000 + 10 * (t - 10), 0) for t in range(1, 21)]
    assert rate(samples, True, 5) == pytest.approx(100)
    assert rate(samples, False, 5) == pytest.approx(10)
    picture = svg(samples, 0, "t", limit_mb=1.0)
    assert picture.count("<polyline") == 2 and "RamLimitMb" in picture
