"""Calibrate a judge on pairs like the holes: P(relevant) from its score and the pair's place in the pool.

A judge's raw P says how it ranks pairs; what the leaderboard needs is how often pairs *like the holes* are
relevant given what the judge said. Where a random sample of holes with known labels exists (a read
reference like nq's, people's random share of the review queue, the hidden labels of a leave-out test), a
logistic model maps the judge's features to P(relevant) on that sample:

* the judge's own features (its score, or the lexical facts an answer judge reads) are always in;
* **strata** are picked from the data, not by hand: candidate facts about the pair's place in the pool
  (how many systems pooled it, its best rank, whether a given system or retrieval family pooled it) enter one
  at a time while they lower the log loss cross-validated by question (greedy forward selection), so a
  judge whose quality differs on, say, bm25s-pooled pairs gets its own intercept there;
* **kinds** of holes (:mod:`bridge.datasets.kinds`: whether the topic has its own candidate list in the dataset, whether
  the passage is on one) are candidates too, and so are a kind's **own slopes** (``slopes|FACT``: the fact's intercept
  and its product with every feature, ridge-shrunk toward the common fit like any slope; or one product alone), so a
  feature whose sign flips between kinds can say so; the cross-validation takes them only where they lower the held-out
  log loss;
* the sample may be **stratified** (a reference drawn at random within each kind, some kinds oversampled): each pair
  carries a design weight (1 / its inclusion probability), so fits, losses and every overall figure weight each kind
  as it stands in the pool, and resamples draw questions within their kind;
* the calibration's own uncertainty is a set of coefficient draws from refits on bootstrap resamples of the
  sample's questions; every estimate draws from them.

Its quality is measured the same way it is used: the whole procedure (selection included) fitted on other
questions and scored on held-out ones (cross-fitted), overall (weighted as the pool stands), per kind and per
stratum, with intervals from a bootstrap that follows the sampling design, and the held-out share relevant against
the share the calibration predicts, over many random half splits. The weakest kind is named with the figures.

The bootstrap alone does not make that check hold: on nq's read reference the 95% interval one half predicts for
the other half's share relevant covered it in 75-85% of splits (a question's own shift explains little of it; a
shift of the level common to a kind's holes all of it). So each kind gets a **level spread**, ``kind_sd``: on the
first half of the splits, the smallest sd of a logit shift common to the kind's pairs with which the interval covers
at the nominal rate; the other half of the splits check the intervals with it (the coverage reported). The estimate
draws the same shift (:meth:`bridge.estimate.calibration.Calibration.widened`), so the intervals it rests on are the
ones this check supports.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from bridge.datasets.kinds import ALL
from bridge.estimate.calibration import INTERCEPT, NOMINAL_COVERAGE, Calibration, PairFacts, sigmoid
from bridge.judging.fitting.hole_fit import (
    SLOPES,
    HoleCalibrationConfig,
    Sample,
    bootstrap_draws,
    design_matrix,
    fit_counts,
    fit_procedure,
    logits,
    model_names,
    predict,
    row_counts,
    sample_folds,
    select_strata,
)
from bridge.judging.fitting.metrics import DesignSample, design_intervals, weighted_measures, with_interval


@dataclass(frozen=True)
class StratumQuality:
    """A calibration's cross-fitted quality on one stratum of the sample (a kind, a side of a chosen fact, or every
    pair), each pair counting by its design weight."""

    stratum: str
    pairs: int
    relevant: int
    mean_p: float
    auc: float | None
    balanced_accuracy: float | None
    ece: float | None
    coverage: float | None
    """Share of the checking half splits whose held-out share relevant (in this stratum) lies in the 95% interval
    the calibration fitted on the other half predicts, each kind's level spread drawn."""
    interval_width: float | None
    kappa: float | None = None
    intervals: Mapping[str, tuple[float, float] | None] = field(default_factory=dict)
    """95% intervals of ``auc``, ``balanced_accuracy``, ``kappa``, ``ece``, ``mean_p`` and ``share`` (a bootstrap of
    questions within kinds, the whole cross-fitted P held)."""
    share: float | None = None
    """Share relevant (weighted as the pool stands)."""
    pool_share: float | None = None
    """Share of the pool's holes like the sample's that this stratum stands for (its design weight)."""
    kind: bool = False
    """A kind of hole (:mod:`bridge.datasets.kinds`), not a side of a fact."""
    level_sd: float | None = None
    """A kind's level spread (``kind_sd``, chosen on the other half splits); on the stratum of every pair, the
    spread common to all kinds (where there are several)."""
    coverage_unwidened: float | None = None
    """:attr:`coverage` without the level spreads (the bootstrap's draws alone)."""
    checks: int = 0
    """Half splits behind :attr:`coverage`."""

    def to_json(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["intervals"] = {k: list(v) if v else None for k, v in self.intervals.items()}
        return out


def strata_of(sample: Sample, names: Sequence[str]) -> dict[str, np.ndarray]:
    """Masks of the strata to report: every pair, each kind (where there are several), and both sides of each
    binary fact in ``names``."""
    out = {ALL: np.ones(len(sample.truth), dtype=bool)}
    kinds = np.array(sample.kinds)
    if len(sample.kind_names) > 1:
        out.update({kind: kinds == kind for kind in sample.kind_names})
    for name in names:
        if name.startswith(SLOPES) or ("*" in name and name not in sample.columns):  # type: ignore[attr-defined]
            continue
        values = sample.column(name)
        shown = any(np.array_equal(values == 1, mask) for mask in out.values())  # a kind already shows it
        if set(np.unique(values).tolist()) <= {0.0, 1.0} and 0 < values.sum() < len(values) and not shown:
            out[f"{name}"] = values == 1
            out[f"not {name}"] = values == 0
    return out


SIMULATIONS = 400
"""Simulated held-out samples behind each split's interval."""


def _kind_index(sample: Sample, config: HoleCalibrationConfig) -> tuple[list[str], np.ndarray, bool]:
    """The kinds a level spread is drawn for, each pair's kind (index), and whether each kind moves on its own (the
    sample's design gives every kind but the first its own column; else one shift moves them all)."""
    kinds = list(sample.kind_names) if len(sample.kind_names) > 1 else [ALL]
    index = np.array([kinds.index(k) for k in sample.kinds]) if len(kinds) > 1 else np.zeros(len(sample.truth), int)
    return kinds, index, bool(sample.design_columns(config.min_stratum)) or len(kinds) == 1


class _HeldOut:
    """One split's held-out pairs of one stratum under the calibration the other half fitted: simulated logits
    (a coefficient draw each), the uniforms of their Bernoulli labels, and standard-normal level shifts (one per
    kind, then one common to all)."""

    def __init__(self, draws: np.ndarray, x: np.ndarray, share: float, w: np.ndarray, rng: np.random.Generator,
                 shifts: int) -> None:  # fmt: skip
        b = rng.integers(0, len(draws), SIMULATIONS)
        self.z = logits(draws[b], x)
        self.u = rng.random(self.z.shape)
        self.e = rng.standard_normal((SIMULATIONS, shifts))
        self.share, self.w = share, w / w.sum()

    def interval(self, shift: np.ndarray | float = 0.0) -> tuple[float, float]:
        """95% interval of the held-out share relevant with ``shift`` (simulations x pairs) added to the logits."""
        shares = (self.u < sigmoid(self.z + shift)) @ self.w
        low, high = np.percentile(shares, [2.5, 97.5])
        return float(low), float(high)

    def covers(self, shift: np.ndarray | float = 0.0) -> bool:
        low, high = self.interval(shift)
        return low <= self.share <= high


class _LevelShifts:
    """The level shifts a fit's pairs take, as :meth:`bridge.estimate.calibration.Calibration.widened` draws them:
    each kind its own (where the design gives kinds their own columns; else one shift, the largest sd, moves them
    all) and, where there are several kinds, one common to all (``kind_sd[all]``)."""

    def __init__(self, sample: Sample, config: HoleCalibrationConfig) -> None:
        self.kinds, self.index, self.own = _kind_index(sample, config)

    def shift(self, out: _HeldOut, rows: np.ndarray, spreads: Mapping[str, float]) -> np.ndarray:
        sds = np.array([spreads.get(k, 0.0) for k in self.kinds])
        kind = (out.e[:, : len(self.kinds)] * sds)[:, self.index[rows]] if self.own else out.e[:, :1] * sds.max()
        common = spreads.get(ALL, 0.0) if len(self.kinds) > 1 else 0.0
        return kind + out.e[:, -1:] * common


def _held_out(sample: Sample, draws: np.ndarray, names: Sequence[str], rows: np.ndarray, rng: np.random.Generator,
              shifts: int) -> _HeldOut | None:  # fmt: skip
    if not len(rows):
        return None
    w = sample.weights[rows]  # type: ignore[index]
    share = float(sample.truth[rows] @ w / w.sum())
    return _HeldOut(draws, design_matrix(sample, names, rows), share, w, rng, shifts)


def _half_fit(sample: Sample, base: Sequence[str], candidates: Sequence[str], config: HoleCalibrationConfig,
              split: int) -> tuple[np.ndarray, list[str], np.ndarray]:  # fmt: skip
    """Split ``split``'s held-out pairs, and the features and draws the procedure fits on the other half."""
    parts = sample_folds(sample, 2, config.seed + 100 + split)
    names, draws, _ = fit_procedure(sample, base, candidates, replace(config, draws=40), np.where(parts == 0)[0])
    return np.where(parts == 1)[0], names, draws


def level_spreads(
    sample: Sample, base: Sequence[str], candidates: Sequence[str], config: HoleCalibrationConfig
) -> dict[str, float]:
    """The level spreads, on the first half of ``config.splits`` half splits: each kind's, the smallest of
    ``config.level_sds`` with which the 95% interval of the kind's held-out share relevant covers it in at least
    :data:`NOMINAL_COVERAGE` of them (the largest where none does); then, where there are several kinds, the
    smallest common one with which the share of every pair covers too."""
    shifts = _LevelShifts(sample, config)
    kinds, index = shifts.kinds, shifts.index
    rng = np.random.default_rng(config.seed + 3)
    held = [_half_fit(sample, base, candidates, config, split) for split in range(config.splits // 2)]
    spreads: dict[str, float] = {}

    def smallest(key: str, strata: Sequence[np.ndarray]) -> float:
        hits, counted = np.zeros(len(config.level_sds)), 0
        for (held_rows, names, draws), mask in itertools.product(held, strata):
            rows = held_rows[mask[held_rows]]
            out = _held_out(sample, draws, names, rows, rng, len(kinds) + 1)
            if out is not None:
                counted += 1
                hits += [out.covers(shifts.shift(out, rows, {**spreads, key: sd})) for sd in config.level_sds]
        enough = np.flatnonzero(hits >= NOMINAL_COVERAGE * counted) if counted else np.array([0])
        return float(config.level_sds[int(enough[0]) if len(enough) else -1])

    for k, kind in enumerate(kinds):
        spreads[kind] = smallest(kind, [index == k])
    if len(kinds) > 1:
        spreads[ALL] = smallest(ALL, [np.ones(len(index), dtype=bool)])
    return spreads


def cross_fitted_p(
    sample: Sample, base: Sequence[str], candidates: Sequence[str], config: HoleCalibrationConfig
) -> tuple[np.ndarray, list[str]]:
    """Out-of-fold P of every sample pair (the whole procedure, selection included, fitted on the other folds'
    questions) and the candidates some fold chose."""
    folds = sample_folds(sample, config.folds, config.seed + 1)
    oof = np.zeros(len(sample.truth))
    chosen_anywhere: list[str] = []
    inner = replace(config, draws=1)
    for k in range(config.folds):
        train, test = np.where(folds != k)[0], np.where(folds == k)[0]
        if not len(test):
            continue
        counts = row_counts(sample, train)
        chosen, _ = select_strata(sample, base, candidates, counts, inner)
        chosen_anywhere += [c for c in chosen if c not in chosen_anywhere]
        names = model_names(base, chosen)
        oof[test] = predict(fit_counts(sample, names, counts, config.l2), design_matrix(sample, names, test))
    return oof, chosen_anywhere


def cross_fitted_quality(
    sample: Sample,
    base: Sequence[str],
    candidates: Sequence[str],
    config: HoleCalibrationConfig,
    report: Sequence[str] = (),
    spreads: Mapping[str, float] | None = None,
) -> tuple[list[StratumQuality], np.ndarray]:
    """Out-of-fold P of every sample pair, and per stratum (every pair, each kind, each side of the chosen facts and
    of ``report``): AUC, balanced accuracy and kappa of the balanced label (P at or above the pair's kind's share
    relevant), ECE, with 95% intervals, and the coverage of the held-out share relevant over the second half of
    ``config.splits`` random half splits, each kind's level spread (``spreads``, by kind; none: 0) drawn."""
    spreads = dict(spreads or {})
    oof, chosen_anywhere = cross_fitted_p(sample, base, candidates, config)
    masks = strata_of(sample, [*chosen_anywhere, *[r for r in report if r not in chosen_anywhere]])
    w = sample.weights
    shifts = _LevelShifts(sample, config)
    covered: dict[str, list[tuple[bool, bool]]] = {name: [] for name in masks}
    widths: dict[str, list[float]] = {name: [] for name in masks}
    rng = np.random.default_rng(config.seed + 2)
    for split in range(config.splits // 2, config.splits):
        held, names, draws = _half_fit(sample, base, candidates, config, split)
        for name, mask in masks.items():
            rows = held[mask[held]]
            out = _held_out(sample, draws, names, rows, rng, len(shifts.kinds) + 1)
            if out is None:
                continue
            low, high = out.interval(shifts.shift(out, rows, spreads))
            covered[name].append((low <= out.share <= high, out.covers()))
            widths[name].append(high - low)
    labels = sample.balanced_labels(oof)
    kind_strata = set(sample.kind_names) if len(sample.kind_names) > 1 else set()
    out = []
    for name, mask in masks.items():
        y, p, wm = sample.truth[mask], oof[mask], w[mask]  # type: ignore[index]
        measures = weighted_measures(p, y, wm, 0.5, labels[mask])
        groups = [g for g, m in zip(sample.groups, mask, strict=True) if m]
        strata = [k for k, m in zip(sample.kinds, mask, strict=True) if m]  # type: ignore[arg-type]
        intervals = design_intervals(
            DesignSample(p, y, wm, groups, strata, labels[mask]), 0.5, config.intervals, config.seed
        )
        out.append(
            StratumQuality(
                name,
                int(mask.sum()),
                int(y.sum()),
                measures["mean_p"] if measures["mean_p"] is not None else math.nan,
                measures["auc"],
                measures["balanced_accuracy"],
                measures["ece"],
                float(np.mean([c for c, _ in covered[name]])) if covered[name] else None,
                float(np.mean(widths[name])) if widths[name] else None,
                measures["kappa"],
                {k: intervals[k] for k in ("auc", "balanced_accuracy", "kappa", "ece", "mean_p", "share")},
                measures["share"],
                float(wm.sum() / w.sum()),  # type: ignore[union-attr]
                name in kind_strata,
                spreads.get(name),
                float(np.mean([c for _, c in covered[name]])) if covered[name] else None,
                len(covered[name]),
            )
        )
    return out, oof


def weakest_kind(quality: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The kind whose cross-fitted AUC is lowest (then bAcc): the figure a headline must not hide. None where the
    sample holds one kind."""
    kinds = [q for q in quality if q.get("kind")]
    scored = [q for q in kinds if q.get("auc") is not None]
    if not scored:
        return None
    return min(scored, key=lambda q: (q["auc"], q.get("balanced_accuracy") or 0.0))


@dataclass(frozen=True)
class FittedCalibration:
    calibration: Calibration
    quality: list[StratumQuality] = field(default_factory=list)
    selection: list[tuple[str, float]] = field(default_factory=list)
    """Forward selection path on the whole sample: (candidate added, cross-validated log loss after it)."""


def fit_hole_calibration(
    name: str,
    sample: Sample,
    base: Sequence[str],
    candidates: Sequence[str],
    population: str,
    config: HoleCalibrationConfig = HoleCalibrationConfig(),
    report: Sequence[str] = (),
) -> FittedCalibration:
    """Fit on every sample pair (strata chosen by cross-validation, bootstrap draws) and measure the procedure
    cross-fitted; ``report``: binary facts whose strata the quality table shows even when not chosen. A stratified
    sample's kind indicators join ``base`` (:attr:`Sample.design_columns`)."""
    signals = signal_aucs(sample, base, report, config)
    base = [*sample.design_columns(config.min_stratum), *base]
    idx = np.arange(len(sample.truth))
    names, draws, path = fit_procedure(sample, base, candidates, config, idx)
    spreads = level_spreads(sample, base, candidates, config)
    quality, oof = cross_fitted_quality(sample, base, candidates, config, report, spreads)
    w = sample.weights
    strata = [q.to_json() for q in quality]
    weakest = weakest_kind(strata)
    calibration = Calibration(
        name,
        (INTERCEPT, *names),
        draws,
        population,
        hole_like=True,
        kind_sd=spreads,
        quality={
            "strata": strata,
            "kinds": [q.stratum for q in quality if q.kind],
            "weakest_kind": None if weakest is None else weakest["stratum"],
            "selection": [list(s) for s in path],
            "signals": signals,
            "cross_fitted": {
                "truth": [int(t) for t in sample.truth],
                "labels": [int(x) for x in sample.balanced_labels(oof)],
                "p": [round(float(p), 6) for p in oof],
                "kinds": list(sample.kinds),  # type: ignore[arg-type]
                "weights": [round(float(x), 6) for x in w],  # type: ignore[union-attr]
            },
        },
    )
    return FittedCalibration(calibration, quality, path)


def signal_aucs(
    sample: Sample, base: Sequence[str], report: Sequence[str] = (), config: HoleCalibrationConfig | None = None
) -> dict[str, dict[str, Any]]:
    """Each feature alone as a score: its AUC (weighted as the pool stands, with a 95% interval from the design's
    bootstrap) on every pair, each kind, and each side of the ``report`` strata (how much a signal separates the
    classes before any fit, and whether its sign differs between kinds)."""
    config = config or HoleCalibrationConfig()
    out: dict[str, dict[str, Any]] = {}
    masks = strata_of(sample, [r for r in report if r in sample.columns])  # type: ignore[attr-defined]
    resamples = max(config.intervals // 4, 0)
    for name in base:
        if name == INTERCEPT:
            continue
        values = sample.column(name)
        per: dict[str, Any] = {}
        for stratum, mask in masks.items():
            y, v, w = sample.truth[mask], values[mask], sample.weights[mask]  # type: ignore[index]
            auc = weighted_measures(v, y, w, 0.5)["auc"]
            if auc is None:
                per[stratum] = None
                continue
            groups = [g for g, m in zip(sample.groups, mask, strict=True) if m]
            strata = [k for k, m in zip(sample.kinds, mask, strict=True) if m]  # type: ignore[arg-type]
            per[stratum] = [
                auc,
                design_intervals(DesignSample(v, y, w, groups, strata), 0.5, resamples, config.seed)["auc"],
            ]
        out[name] = per
    return out


def known_pair_calibration(
    name: str,
    facts: Sequence[PairFacts],
    truth: Sequence[int],
    groups: Sequence[str],
    base: Sequence[str],
    population: str,
    config: HoleCalibrationConfig = HoleCalibrationConfig(),
) -> Calibration | None:
    """A stage calibrated on known pairs (``facts`` and their truth, resampled by ``groups``: questions, topics):
    P(relevant) from ``base`` features of its own output (its label, the logit of its P). Known pairs are not holes:
    the hole model adds the transfer uncertainty. None with fewer than 10 pairs or only one class."""
    if len(truth) < 10 or len(set(truth)) < 2:
        return None
    rows = [{n: f.value(n) for n in base} for f in facts]
    sample = Sample(rows, np.array([float(t) for t in truth]), list(groups))
    names, draws = bootstrap_draws(sample, base, (), config)
    return Calibration(name, (INTERCEPT, *names), draws, population, hole_like=False)


def audit_calibration(records: Sequence[tuple[Any, int]], name: str = "llm") -> Calibration | None:
    """An LLM judge calibrated on the audit's known pairs it decided (its records and their truth): from its label
    and, where every record has one, the logit of its P."""
    decided = [(r, t) for r, t in records if r.label is not None]
    base = ("label", "logit_p") if decided and all(r.p_yes is not None for r, _ in decided) else ("label",)
    population = f"{len(decided)} known pairs of the audit (gold positives and judged or rule negatives, not holes)"
    return known_pair_calibration(
        name, [PairFacts.of(r) for r, _ in decided], [t for _, t in decided], [r.qid for r, _ in decided], base,
        population,
    )  # fmt: skip


def calibration_lines(calibration: Calibration) -> list[str]:
    """The calibration's strata and cross-fitted quality, a line each."""
    quality = calibration.quality or {}
    chosen = [name for name, _ in (quality.get("selection") or [])[1:]]
    out = [
        f"  on {calibration.population}",
        "  strata chosen by cross-validated log loss: " + (", ".join(chosen) if chosen else "none (one calibration)"),
    ]
    weakest = next((q for q in quality.get("strata") or [] if q["stratum"] == quality.get("weakest_kind")), None)
    if weakest is not None:
        auc = (weakest.get("intervals") or {}).get("auc")
        span = f" [{auc[0]:.3f}, {auc[1]:.3f}]" if auc else ""
        out.append(
            f"  weakest kind of hole: {weakest['stratum']} (cross-fitted AUC {weakest['auc']:.3f}{span}, "
            f"{weakest['pairs']} reference pairs, {100 * (weakest.get('pool_share') or 0):.0f}% of the pool)"
        )
    for q in quality.get("strata") or []:
        ece = "n/a" if q.get("ece") is None else f"{q['ece']:.3f}"
        cover = "n/a" if q.get("coverage") is None else f"{q['coverage']:.2f}"
        out.append(
            f"  cross-fitted, {q['stratum']}: {q['pairs']} pairs, {q['relevant']} relevant, mean P {q['mean_p']:.3f}, "
            f"AUC {with_interval(q, 'auc')}, bAcc {with_interval(q, 'balanced_accuracy')}, "
            f"kappa {with_interval(q, 'kappa')}, ECE {ece}, "
            f"held-out share covered {cover}"
        )
    for name, per in (quality.get("signals") or {}).items():
        shown_aucs = [
            f"{stratum} {v[0]:.3f}" + (f" [{v[1][0]:.3f}, {v[1][1]:.3f}]" if v[1] else "")
            for stratum, v in per.items()
            if v is not None
        ]
        out.append(f"  {name} alone, AUC: " + ("; ".join(shown_aucs) or "n/a"))
    return out
