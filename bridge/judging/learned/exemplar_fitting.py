"""Fitting the exemplar judge's calibration on labelled holes: the sparse-judgment benchmark of a deeply judged
collection (:mod:`bridge.evaluation.reusability.sparse_cuts`) cuts each topic to K relevant passages and keeps every
other pool pair's hidden label; a logistic fit of the exemplar features on them, with the logit shifts that carry it to
another collection (common, per topic, per retrieval family)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from bridge.estimate.calibration import INTERCEPT, Calibration, PairFacts
from bridge.estimate.level import weight_matrix
from bridge.judging.fitting.hole_calibration import fit_hole_calibration
from bridge.judging.fitting.hole_fit import HoleCalibrationConfig, Sample, fit_procedure
from bridge.judging.learned.exemplar import ALL_FEATURES, FEATURES, LLM_NAME, NAME, ExemplarFit
from bridge.judging.llm.comparer import FEATURE as LLM_FEATURE


def _sample(rows: Sequence[Mapping[str, Any]], features: Sequence[str]) -> Sample:
    """Labelled holes (``relevant`` 0/1, ``qid``, the features) as a calibration sample grouped by topic."""
    return Sample([{f: float(r[f]) for f in features} for r in rows], np.array([float(r["relevant"]) for r in rows]),
                  [str(r["qid"]) for r in rows])  # fmt: skip


def _logits(calibration: Calibration, rows: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """The calibration's mean logit of each row (its draws' mean coefficients)."""
    names = ALL_FEATURES
    x = calibration.rows([PairFacts(extra={k: float(v) for k, v in r.items() if k in names}) for r in rows])
    return x @ calibration.draws.mean(axis=0)


def _shift_likelihood(z: np.ndarray, y: np.ndarray, grid: np.ndarray, weight: np.ndarray | float = 1.0) -> np.ndarray:
    """Log-likelihood of labels ``y`` at logits ``z`` moved by each shift of ``grid`` (times each row's ``weight``)."""
    shifted = z[None, :] + np.asarray(weight)[None] * grid[:, None]
    return np.where(y[None, :] == 1, -np.logaddexp(0.0, -shifted), -np.logaddexp(0.0, shifted)).sum(axis=1)


def common_shift(calibration: Calibration, rows: Sequence[Mapping[str, Any]]) -> float:
    """The logit shift that best fits ``rows``' labels (maximum likelihood): how far the calibration's level is off
    on another collection's holes (0 where it is right)."""
    grid = np.linspace(-4.0, 4.0, 801)
    y = np.array([int(r["relevant"]) for r in rows])
    return float(grid[np.argmax(_shift_likelihood(_logits(calibration, rows), y, grid))])


def _by_cut(rows: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """The rows of each cut: each cut of a collection counts once in a spread (their holes repeat across cuts and
    would otherwise count several times)."""
    by_cut: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        by_cut.setdefault(str(r.get("cut", "")), []).append(r)
    return list(by_cut.values())


def topic_spread(calibration: Calibration, rows: Sequence[Mapping[str, Any]]) -> float:
    """The sd of each topic's own logit shift (a random intercept, by maximum marginal likelihood over a grid): how far
    a topic's share of relevant holes strays from what its features say; the mean over cuts (:func:`_by_cut`)."""
    grid = np.linspace(-6.0, 6.0, 241)
    sds = np.linspace(0.0, 3.0, 61)
    chosen = []
    for cut_rows in _by_cut(rows):
        z = _logits(calibration, cut_rows)
        by_topic: dict[str, list[int]] = {}
        for i, r in enumerate(cut_rows):
            by_topic.setdefault(str(r["qid"]), []).append(i)
        y = np.array([int(r["relevant"]) for r in cut_rows])
        loglik = np.array([_shift_likelihood(z[idx], y[idx], grid) for idx in by_topic.values()])  # topics x grid
        total = []
        for sd in sds:
            prior = -0.5 * (grid / sd) ** 2 - np.log(sd) if sd > 0 else np.where(grid == 0, 0.0, -np.inf)
            joint = loglik + prior[None, :]
            top = joint.max(axis=1, keepdims=True)
            total.append(float((top[:, 0] + np.log(np.exp(joint - top).sum(axis=1))).sum()))
        chosen.append(float(sds[int(np.argmax(total))]))
    return float(np.mean(chosen))


def family_spread(calibration: Calibration, rows: Sequence[Mapping[str, Any]]) -> float:
    """The sd of each retrieval family's own logit shift, a hole's logit moving with the mean of the shifts of the
    families that pooled it (``families``: their names joined by ``+``): each family's shift by maximum likelihood
    given the others' (backfitting over a grid), their root mean square; the mean over cuts, as for the topics. With
    thousands of holes per family the shifts' own noise is small beside their spread."""
    grid = np.linspace(-4.0, 4.0, 321)
    spreads = []
    for cut_rows in _by_cut(rows):
        z = _logits(calibration, cut_rows)
        y = np.array([int(r["relevant"]) for r in cut_rows])
        found = [str(r["families"]).split("+") if r["families"] else [] for r in cut_rows]
        named, weights = weight_matrix([{f: 1.0 / len(fs) for f in fs} for fs in found])
        order = np.argsort(named)  # the families in name order: the order they are fitted in
        names, weights = [named[i] for i in order], weights[:, order]
        shift = np.zeros(len(names))
        for _ in range(10):
            for j in range(len(names)):
                rows_j = np.flatnonzero(weights[:, j])
                rest = z[rows_j] + weights[rows_j] @ shift - weights[rows_j, j] * shift[j]
                shift[j] = grid[int(np.argmax(_shift_likelihood(rest, y[rows_j], grid, weights[rows_j, j])))]
        shift -= shift.mean()  # the common part is the level's, not the families'
        spreads.append(float(np.sqrt(np.mean(shift**2))) if len(names) else 0.0)
    return float(np.mean(spreads))


def fit_exemplar(
    rows: Sequence[Mapping[str, Any]],
    features: Sequence[str],
    encoder: str,
    transfer_sd: float,
    provenance: Mapping[str, Any],
    config: HoleCalibrationConfig | None = None,
    measure: bool = True,
) -> ExemplarFit:
    """The exemplar calibration on labelled holes (:func:`bridge.evaluation.reusability.sparse_cuts.hole_sample` rows of
    one collection's cuts): a logistic fit of ``features`` with bootstrap draws over topics and its cross-fitted quality
    (:func:`~bridge.judging.fitting.hole_calibration.fit_hole_calibration`), the topics' spread around it
    (:func:`topic_spread`) and ``transfer_sd``, the logit shift it carries to another collection (measured between
    collections with :func:`common_shift`)."""
    unknown = [f for f in features if f not in ALL_FEATURES]
    if unknown:
        raise ValueError(f"unknown exemplar features {unknown}; known: {[*FEATURES, LLM_FEATURE]}")
    population = (
        f"{len(rows):,} pool holes with hidden labels over {len({r['qid'] for r in rows})} topics of "
        f"{provenance.get('collection', 'a deeply judged collection')} cut to {provenance.get('cuts', 'K')} relevant "
        "passages per topic (the sparse-judgment benchmark)"
    )
    config = config or HoleCalibrationConfig()
    sample = _sample(rows, features)
    name = LLM_NAME if LLM_FEATURE in features else NAME  # the records name their calibration: one name per judge
    if measure:
        fitted = fit_hole_calibration(name, sample, features, (), population, config).calibration
        quality = {k: v for k, v in fitted.quality.items() if k != "cross_fitted"}  # per-pair arrays stay out
    else:  # the coefficients alone (a fit only compared with another collection's): no cross-fitted quality
        names, draws, _ = fit_procedure(sample, features, (), config, np.arange(len(rows)))
        fitted, quality = Calibration(name, (INTERCEPT, *names), draws, population, hole_like=True), {}
    calibration = replace(fitted, quality=quality, transfer_sd=float(transfer_sd))
    calibration = replace(calibration, topic_sd=round(topic_spread(calibration, rows), 3))
    if all("families" in r for r in rows):
        calibration = replace(calibration, family_sd=round(family_spread(calibration, rows), 3))
    return ExemplarFit(calibration, encoder, dict(provenance))
