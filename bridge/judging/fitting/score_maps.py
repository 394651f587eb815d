"""Calibration: from a judge's raw score (P("yes") at the decision token, or a verbalized 0-100
confidence) to a probability that matches how often such pairs are relevant.

A raw P(yes) of a small model is a ranking signal, not a probability (SmolLM2 says "yes" to almost
everything, yet its P(yes) orders pairs better than chance). Fitting isotonic regression (monotone,
step-wise) or Platt scaling (a logistic curve) on pairs whose label is known turns it into one, so
that a cascade can decide "P > 0.9" pairs alone and send the uncertain band to the debate. The
fitted map is a small JSON file beside the labels and every record names it.

Measures of calibration: expected calibration error (ECE, equal-width bins), Brier score, and the
points of a reliability diagram.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from bridge.core.errors import InputError
from bridge.core.fsio import read_utf8, write_json_atomic

Method = Literal["isotonic", "platt"]


@dataclass(frozen=True)
class Calibrator:
    """A monotone map raw score -> P(relevant), fitted on labeled pairs."""

    method: Method
    x: tuple[float, ...] = ()
    """isotonic: the knots' scores (increasing); P between knots is interpolated linearly."""
    y: tuple[float, ...] = ()
    a: float = 1.0
    b: float = 0.0
    """platt: P = sigmoid(a * score + b)."""
    fitted_on: int = 0
    positives: int = 0
    source: str = ""
    """Where the labeled pairs came from (known pairs of the dataset, a dev qrels file)."""
    scorer: str = ""
    """config_id of the judge whose raw scores this calibrates."""
    pairs: tuple[tuple[str, str], ...] = ()
    """The (qid, docid) known pairs it was fitted on (kept apart from the audit's)."""

    def __call__(self, scores: Sequence[float] | np.ndarray) -> np.ndarray:
        s = np.asarray(scores, dtype=float)
        if self.method == "platt":
            return 1.0 / (1.0 + np.exp(-(self.a * s + self.b)))
        if not self.x:
            return np.full_like(s, 0.5)
        return np.interp(s, self.x, self.y)

    @property
    def identity(self) -> str:
        """Content hash: records name the calibration they were decided with."""
        payload = json.dumps(asdict(self), sort_keys=True)
        return "cal-" + hashlib.sha256(payload.encode()).hexdigest()[:12]

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "identity": self.identity}

    @classmethod
    def from_json(cls, data: dict[str, Any], path: Path | None = None) -> Calibrator:
        try:
            fields = {k: v for k, v in data.items() if k != "identity"}
            fields["x"], fields["y"] = tuple(fields.get("x", ())), tuple(fields.get("y", ()))
            fields["pairs"] = tuple((str(q), str(d)) for q, d in fields.get("pairs", ()))
            return cls(**fields)
        except TypeError as exc:
            raise InputError(f"not a calibration file ({exc})", path=path) from None

    def save(self, path: Path) -> None:
        write_json_atomic(path, self.to_json())

    @classmethod
    def load(cls, path: Path) -> Calibrator:
        try:
            return cls.from_json(json.loads(read_utf8(path)), path)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON ({exc.msg})", path=path) from None


def fit_isotonic(scores: Sequence[float], labels: Sequence[int]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The non-decreasing step function closest (least squares) to the labels, as knots for linear
    interpolation (scikit-learn's ``IsotonicRegression``). Tied scores are merged into one point (their mean
    label, weighted by their count) before pooling, so the fit does not depend on the order of the input:
    a verbalized 0-100 score or a saturated P(true) ties often."""
    from sklearn.isotonic import IsotonicRegression

    model = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip")
    model.fit(np.asarray(scores, dtype=float), np.asarray(labels, dtype=float))
    return tuple(float(x) for x in model.X_thresholds_), tuple(float(y) for y in model.y_thresholds_)


def fit_platt(scores: Sequence[float], labels: Sequence[int]) -> tuple[float, float]:
    from sklearn.linear_model import LogisticRegression

    if len(set(labels)) < 2:
        return 0.0, 0.0
    model = LogisticRegression(C=1e4, max_iter=1000).fit(np.asarray(scores, dtype=float)[:, None], labels)
    return float(model.coef_[0][0]), float(model.intercept_[0])


def fit_calibrator(
    scores: Sequence[float],
    labels: Sequence[int],
    method: Method = "isotonic",
    source: str = "",
    scorer: str = "",
    pairs: Sequence[tuple[str, str]] = (),
) -> Calibrator:
    if len(scores) != len(labels) or not scores:
        raise ValueError("calibration needs as many labels as scores, and at least one of each")
    about = {"fitted_on": len(scores), "positives": int(sum(labels)), "source": source, "scorer": scorer,
             "pairs": tuple(pairs)}  # fmt: skip
    if method == "isotonic":
        x, y = fit_isotonic(scores, labels)
        return Calibrator("isotonic", x, y, **about)
    if method == "platt":
        a, b = fit_platt(scores, labels)
        return Calibrator("platt", a=a, b=b, **about)
    raise ValueError(f"calibration method must be 'isotonic' or 'platt', got {method!r}")


# -- measures ------------------------------------------------------------------------------------


def brier_score(probabilities: Sequence[float], labels: Sequence[int]) -> float | None:
    """Mean squared difference between predicted probability and outcome (0 is perfect)."""
    if not probabilities:
        return None
    p, y = np.asarray(probabilities, dtype=float), np.asarray(labels, dtype=float)
    return float(np.mean((p - y) ** 2))


@dataclass(frozen=True)
class Reliability:
    """Equal-width bins of predicted probability: mean prediction vs observed rate per bin."""

    edges: tuple[float, ...]
    counts: tuple[int, ...]
    mean_predicted: tuple[float | None, ...]
    observed: tuple[float | None, ...]
    ece: float | None
    """Expected calibration error: sum over bins of (count / n) * |observed - mean predicted|."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def reliability(probabilities: Sequence[float], labels: Sequence[int], bins: int = 10) -> Reliability:
    p, y = np.asarray(probabilities, dtype=float), np.asarray(labels, dtype=float)
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.digitize(p, edges[1:-1], right=False), 0, bins - 1)
    counts, predicted, observed = [], [], []
    ece = 0.0
    for b in range(bins):
        mask = which == b
        n = int(mask.sum())
        counts.append(n)
        if n:
            mp, ob = float(p[mask].mean()), float(y[mask].mean())
            predicted.append(mp)
            observed.append(ob)
            ece += n / len(p) * abs(ob - mp)
        else:
            predicted.append(None)
            observed.append(None)
    return Reliability(
        tuple(float(e) for e in edges), tuple(counts), tuple(predicted), tuple(observed), ece if len(p) else None
    )


def expected_calibration_error(probabilities: Sequence[float], labels: Sequence[int], bins: int = 10) -> float | None:
    return reliability(probabilities, labels, bins).ece


EDGE_EPS = 1e-12


def pair_hash(qid: str, docid: str) -> float:
    """A stable number in [0, 1) per pair: breaks ties among pairs of equal P without any randomness."""
    return int(hashlib.sha256(f"{qid}\t{docid}".encode()).hexdigest()[:12], 16) / 16**12


@dataclass(frozen=True)
class Band:
    """The uncertain band of the cascade: a calibrated P inside [low, high] goes to the debate."""

    low: float = 0.2
    high: float = 0.8
    share: float | None = None
    """When set, the band was chosen to send this share of the pairs to the debate."""
    notes: list[str] = field(default_factory=list)
    tie_cut: float | None = None
    """Where many pairs share the edge P (a calibration's flat steps), only those whose
    :func:`pair_hash` is <= ``tie_cut`` are inside, so the band holds the share it was chosen for."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.low <= self.high <= 1.0:
            raise ValueError(f"the band needs 0 <= low <= high <= 1, got [{self.low}, {self.high}]")

    def contains(self, p: float, key: float | None = None) -> bool:
        """Whether P goes to the debate; ``key`` (:func:`pair_hash`) decides for a P on the edge."""
        if p < self.low - EDGE_EPS or p > self.high + EDGE_EPS:
            return False
        on_edge = abs(p - self.low) <= EDGE_EPS or abs(p - self.high) <= EDGE_EPS
        return not on_edge or self.tie_cut is None or key is None or key <= self.tie_cut


def band_for_share(probabilities: Sequence[float], share: float, keys: Sequence[float] | None = None) -> Band:
    """The band around 0.5 holding the ``share`` of ``probabilities`` closest to 0.5; with ``keys`` (one
    :func:`pair_hash` per probability) ties at the edge are cut so that it holds exactly that share."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"the debate share must lie in [0, 1], got {share}")
    p = np.asarray(probabilities, dtype=float)
    if not len(p) or share == 0.0:
        return Band(0.5, 0.5, share, tie_cut=-1.0) if share == 0.0 else Band(0.0, 1.0, share)
    k = int(np.ceil(share * len(p)))
    if k == 0:
        return Band(0.5, 0.5, share, tie_cut=-1.0)
    hashes = list(keys) if keys is not None else [0.0] * len(p)
    order = sorted(range(len(p)), key=lambda i: (abs(p[i] - 0.5), hashes[i]))
    last = order[min(k, len(p)) - 1]
    radius = float(abs(p[last] - 0.5))
    tied_beyond = k < len(p) and abs(abs(p[order[k]] - 0.5) - radius) <= EDGE_EPS
    tie_cut = hashes[last] if keys is not None and tied_beyond else None
    return Band(max(0.0, 0.5 - radius), min(1.0, 0.5 + radius), share, tie_cut=tie_cut)
