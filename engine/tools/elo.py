"""Match statistics: Elo difference with its error margin, likelihood of superiority, SPRT.

Pure functions over win/draw/loss counts, used by ``arbor match`` and usable from scripts.

* :func:`elo_difference` -- the logistic Elo difference and its 95 % error margin, computed as
  cutechess-cli does: the per-game score variance from the observed W/D/L frequencies, a normal
  interval on the mean score, and half the width of that interval mapped through the Elo curve.
* :func:`los` -- likelihood of superiority, ``0.5 * (1 + erf((W - L) / sqrt(2 (W + L))))``.
* :func:`sprt_llr` -- the log-likelihood ratio of the generalised SPRT (GSPRT) for
  H0: elo = elo0 against H1: elo = elo1, on the trinomial game results.  ``model="logistic"``
  is fishtest's trinomial approximation in logistic Elo (the default); ``model="bayesian"`` is
  the BayesElo model of cutechess-cli 1.x (elo0/elo1 in BayesElo units, the draw Elo estimated
  from the sample).
* :func:`sprt_bounds` / :func:`sprt_status` -- Wald's stopping bounds ``log(beta / (1 - alpha))``
  and ``log((1 - beta) / alpha)`` (+-2.944 for alpha = beta = 0.05) and the decision.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Optional

__all__ = [
    "score", "elo_from_score", "score_from_elo", "elo_difference", "los",
    "sprt_llr", "sprt_bounds", "sprt_status", "SprtResult", "format_elo",
]


def score(wins: float, draws: float, losses: float) -> float:
    """Mean score per game (win 1, draw 1/2, loss 0); nan with no games."""
    n = wins + draws + losses
    return (wins + 0.5 * draws) / n if n else math.nan


def elo_from_score(p: float) -> float:
    """Logistic Elo difference for an expected score p: ``-400 log10(1/p - 1)`` (+-inf at 1 and 0)."""
    if math.isnan(p):
        return math.nan
    if p <= 0.0:
        return -math.inf
    if p >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / p - 1.0)


def score_from_elo(elo: float) -> float:
    """Expected score for a logistic Elo difference: ``1 / (1 + 10^(-elo/400))``."""
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def _score_variance(wins: float, draws: float, losses: float) -> float:
    """Per-game variance of the score, from the observed frequencies."""
    n = wins + draws + losses
    mu = score(wins, draws, losses)
    w, d, l = wins / n, draws / n, losses / n
    return w * (1.0 - mu) ** 2 + d * (0.5 - mu) ** 2 + l * (0.0 - mu) ** 2


def elo_difference(wins: int, draws: int, losses: int, confidence: float = 0.95) -> tuple[float, float]:
    """Elo difference and the half-width of its ``confidence`` interval, as cutechess-cli reports.

    Returns ``(nan, nan)`` with no games, and an infinite difference/margin when every game
    was won or every game lost.
    """
    n = wins + draws + losses
    if n == 0:
        return math.nan, math.nan
    mu = score(wins, draws, losses)
    elo = elo_from_score(mu)
    stdev = math.sqrt(_score_variance(wins, draws, losses) / n)
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    lo, hi = mu - z * stdev, mu + z * stdev
    if lo <= 0.0 or hi >= 1.0:
        return elo, math.inf
    return elo, (elo_from_score(hi) - elo_from_score(lo)) / 2.0


def los(wins: int, draws: int, losses: int) -> float:
    """Likelihood of superiority (0..1): the probability that the first player is the stronger.

    Draws carry no information here; with no decisive game the answer is 0.5.
    """
    if wins + losses == 0:
        return 0.5
    return 0.5 * (1.0 + math.erf((wins - losses) / math.sqrt(2.0 * (wins + losses))))


def _bayes_probs(bayes_elo: float, draw_elo: float) -> tuple[float, float, float]:
    p_win = 1.0 / (1.0 + 10.0 ** ((draw_elo - bayes_elo) / 400.0))
    p_loss = 1.0 / (1.0 + 10.0 ** ((draw_elo + bayes_elo) / 400.0))
    return p_win, 1.0 - p_win - p_loss, p_loss


def sprt_llr(wins: int, draws: int, losses: int, elo0: float, elo1: float,
             model: str = "logistic") -> float:
    """Log-likelihood ratio of H1 (elo = elo1) against H0 (elo = elo0) for the game results.

    ``logistic`` (default): fishtest's GSPRT on the trinomial in logistic Elo,
    ``N (s1 - s0) (2 s - s0 - s1) / (2 var)`` with s the mean score and var its per-game variance.
    ``bayesian``: cutechess-cli's model; elo0/elo1 are BayesElo, the draw Elo is estimated
    from the sample. Returns 0 while the sample cannot estimate the model: no games, or every
    game with the same result (so an all-wins match never stops early, as in cutechess-cli);
    for ``bayesian`` until there is a win, a draw and a loss.
    """
    n = wins + draws + losses
    if model == "logistic":
        if n == 0:
            return 0.0
        var = _score_variance(wins, draws, losses)
        if var <= 0.0:
            return 0.0  # every game had the same result: no variance to test against yet
        s = score(wins, draws, losses)
        s0, s1 = score_from_elo(elo0), score_from_elo(elo1)
        return n * (s1 - s0) * (2.0 * s - s0 - s1) / (2.0 * var)
    if model == "bayesian":
        if wins == 0 or draws == 0 or losses == 0:
            return 0.0
        w, l = wins / n, losses / n
        draw_elo = 200.0 * math.log10((1.0 - l) / l * (1.0 - w) / w)
        p0 = _bayes_probs(elo0, draw_elo)
        p1 = _bayes_probs(elo1, draw_elo)
        return (wins * math.log(p1[0] / p0[0]) + draws * math.log(p1[1] / p0[1])
                + losses * math.log(p1[2] / p0[2]))
    raise ValueError(f"unknown SPRT model '{model}' (logistic or bayesian)")


def sprt_bounds(alpha: float = 0.05, beta: float = 0.05) -> tuple[float, float]:
    """Wald's (lower, upper) LLR bounds: accept H0 at or below lower, H1 at or above upper."""
    return math.log(beta / (1.0 - alpha)), math.log((1.0 - beta) / alpha)


@dataclass(frozen=True)
class SprtResult:
    llr: float
    lower: float
    upper: float
    decision: Optional[str]  # "H0", "H1" or None while undecided

    def __str__(self) -> str:
        state = {"H0": "H0 accepted", "H1": "H1 accepted", None: "continue"}[self.decision]
        return f"LLR {self.llr:.2f} ({self.lower:.2f}, {self.upper:.2f}) {state}"


def sprt_status(wins: int, draws: int, losses: int, elo0: float, elo1: float,
                alpha: float = 0.05, beta: float = 0.05, model: str = "logistic") -> SprtResult:
    """The SPRT's LLR, bounds and decision for the results so far."""
    llr = sprt_llr(wins, draws, losses, elo0, elo1, model)
    lower, upper = sprt_bounds(alpha, beta)
    decision = "H1" if llr >= upper else "H0" if llr <= lower else None
    return SprtResult(llr, lower, upper, decision)


def format_elo(elo: float, margin: float) -> str:
    """``+12.3 +/- 45.6`` with inf/nan spelled out."""
    def f(x: float, sign: bool) -> str:
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return ("+inf" if x > 0 else "-inf") if sign else "inf"
        x = round(x, 1) + 0.0  # no "-0.0"
        return f"{x:+.1f}" if sign else f"{x:.1f}"
    return f"{f(elo, True)} +/- {f(margin, False)}"
