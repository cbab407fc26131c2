"""Elo, LOS and SPRT arithmetic of engine/tools/elo.py against values computed by hand or published
by other tools (fastchess's SPRT test cases)."""

import math

import pytest

from engine.tools import elo


def test_score_and_elo_curve():
    assert elo.score(3, 2, 1) == pytest.approx(4 / 6)
    assert math.isnan(elo.score(0, 0, 0))
    assert elo.elo_from_score(0.5) == 0
    assert elo.elo_from_score(0.75) == pytest.approx(190.848, abs=1e-3)   # 400 log10(3)
    assert elo.elo_from_score(0.25) == pytest.approx(-190.848, abs=1e-3)
    assert elo.elo_from_score(1.0) == math.inf and elo.elo_from_score(0.0) == -math.inf
    assert elo.score_from_elo(400) == pytest.approx(10 / 11)
    for e in (-300.0, -12.5, 0.0, 77.0):
        assert elo.elo_from_score(elo.score_from_elo(e)) == pytest.approx(e)


def test_elo_difference_and_margin():
    # 60 wins, 20 draws, 20 losses: mean 0.7, per-game variance 0.16, stdev of the mean 0.04;
    # the 95 % interval 0.7 -+ 1.95996 * 0.04 = [0.62160, 0.77840] -> [86.22, 218.25] Elo.
    e, margin = elo.elo_difference(60, 20, 20)
    assert e == pytest.approx(147.19, abs=0.01)
    assert margin == pytest.approx((218.25 - 86.22) / 2, abs=0.02)
    # Symmetry, and a draw-only sample has no spread.
    e2, margin2 = elo.elo_difference(20, 20, 60)
    assert e2 == pytest.approx(-e) and margin2 == pytest.approx(margin)
    assert elo.elo_difference(0, 10, 0) == (0.0, 0.0)
    # Degenerate samples.
    assert elo.elo_difference(5, 0, 0) == (math.inf, math.inf)
    assert all(math.isnan(x) for x in elo.elo_difference(0, 0, 0))
    # More games, narrower interval.
    assert elo.elo_difference(600, 200, 200)[1] < margin / 3


def test_los():
    assert elo.los(10, 5, 10) == 0.5
    assert elo.los(0, 7, 0) == 0.5
    assert elo.los(2, 0, 0) == pytest.approx(0.5 * (1 + math.erf(1.0)))   # 0.9214
    assert elo.los(55, 0, 45) == pytest.approx(0.8413, abs=1e-4)           # z = 1 -> Phi(1)
    assert elo.los(45, 0, 55) == pytest.approx(1 - 0.8413, abs=1e-4)


@pytest.mark.parametrize("w,d,l,elo0,elo1,expected", [
    (21404, 40708, 21184, 0.5, 2.5, -1.57),     # fastchess "logistic trinomial 1"
    (57433, 106593, 57030, 0.0, 2.0, -2.59),    # fastchess "logistic trinomial 2"
])
def test_sprt_logistic_known_values(w, d, l, elo0, elo1, expected):
    assert elo.sprt_llr(w, d, l, elo0, elo1) == pytest.approx(expected, abs=0.01)


@pytest.mark.parametrize("w,d,l,elo0,elo1,expected", [
    (68965, 128429, 68526, 0.0, 2.0, -1.26),    # fastchess "bayesian trinomial 1" (cutechess model)
    (21629, 41111, 21484, 0.5, 2.5, -1.13),     # fastchess "bayesian trinomial 2"
])
def test_sprt_bayesian_known_values(w, d, l, elo0, elo1, expected):
    assert elo.sprt_llr(w, d, l, elo0, elo1, model="bayesian") == pytest.approx(expected, abs=0.01)


def test_sprt_bounds_and_status():
    lower, upper = elo.sprt_bounds(0.05, 0.05)
    assert lower == pytest.approx(-2.944, abs=1e-3) and upper == pytest.approx(2.944, abs=1e-3)
    assert elo.sprt_bounds(0.05, 0.1)[0] == pytest.approx(math.log(0.1 / 0.95))
    # A clear edge accepts H1, a clear deficit H0, an even score in a wide test continues.
    assert elo.sprt_status(300, 200, 100, 0, 10).decision == "H1"
    assert elo.sprt_status(100, 200, 300, 0, 10).decision == "H0"
    st = elo.sprt_status(5, 10, 5, -10, 10)
    assert st.decision is None and st.llr == pytest.approx(0.0, abs=1e-9)
    assert "continue" in str(st)
    # No variance yet (all wins), no games, or no draws for the bayesian model: no evidence.
    assert elo.sprt_llr(10, 0, 0, 0, 10) == 0.0
    assert elo.sprt_llr(0, 0, 0, 0, 10) == 0.0
    assert elo.sprt_llr(10, 0, 3, 0, 10, model="bayesian") == 0.0
    with pytest.raises(ValueError):
        elo.sprt_llr(1, 1, 1, 0, 5, model="nonsense")


def test_llr_grows_with_sample_size():
    small = elo.sprt_llr(30, 40, 20, 0, 5)
    assert elo.sprt_llr(300, 400, 200, 0, 5) == pytest.approx(10 * small)


def test_format_elo():
    assert elo.format_elo(12.34, 5.67) == "+12.3 +/- 5.7"
    assert elo.format_elo(-0.0, 0.0) == "+0.0 +/- 0.0"
    assert elo.format_elo(math.inf, math.inf) == "+inf +/- inf"
    assert elo.format_elo(math.nan, math.nan) == "nan +/- nan"
