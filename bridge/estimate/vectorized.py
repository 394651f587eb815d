"""Vectorized trec_eval measures over many variants of one set of judgments.

The estimate of :mod:`bridge.estimate.leaderboard` re-scores every system under hundreds of label assignments.
Here every judged (topic, document) pair sits in one array of grades, a run's top-k is a matrix of indices into it
(:mod:`bridge.estimate.arrays`), and a measure is a few array operations per assignment, those of its object in
:mod:`bridge.estimate.measures`; the unperturbed scores equal ir_measures' (tested).
"""

from __future__ import annotations

import numpy as np

from bridge.estimate.arrays import FlatQrels, RunMatrix, divide, gains_at
from bridge.estimate.measures import Drawn, Entries
from bridge.estimate.measures import measure as measure_named


def per_topic(
    measure: str, matrix: RunMatrix, flat: FlatQrels, grades: np.ndarray, k: int, norm: np.ndarray | None = None
) -> np.ndarray:
    """Per-topic values of an estimated measure (nDCG@k, Hit@k, P@k, Recall@k, RR@k) under ``grades``. ``grades``
    may carry leading axes (draws x pairs): the values then carry them too (draws x topics). ``norm``: the
    measure's normaliser (:func:`normaliser`) when scoring many systems under the same grades."""
    return topic_values(measure, matrix.rows, flat.slots, grades, k, flat.threshold, norm)


def normaliser(measure: str, slots: np.ndarray, grades: np.ndarray, k: int, threshold: int) -> np.ndarray | None:
    """What a measure divides by, per topic, whatever the system: nDCG's ideal DCG@k, Recall's relevant count."""
    return measure_named(measure).normaliser(slots, grades, k, threshold)


def topic_values(
    measure: str,
    rows: np.ndarray,
    slots: np.ndarray,
    grades: np.ndarray,
    k: int,
    threshold: int,
    norm: np.ndarray | None = None,
) -> np.ndarray:
    """The measure per topic: ``rows`` (topics x k) and ``slots`` (topics x judged) index ``grades`` (its last
    axis; -1: unjudged / no slot); leading axes of ``grades`` are kept."""
    m = measure_named(measure)
    if norm is None:
        norm = m.normaliser(slots, grades, k, threshold)
    return m.values(gains_at(rows, grades), k, threshold, norm)


def gain_values(measure: str, gains: np.ndarray, k: int, threshold: int, norm: np.ndarray | None = None) -> np.ndarray:
    """The measure from the gains of a top k (last axis); ``norm``: its :func:`normaliser` (nDCG, Recall),
    broadcast against the gains' other axes."""
    return measure_named(measure).values(gains, k, threshold, norm)


def relevance_effects(
    measure: str,
    rows: np.ndarray,
    flat: FlatQrels,
    grades: np.ndarray,
    pair_rows: np.ndarray,
    k: int,
    threshold: int,
    chunk: int = 4096,
) -> np.ndarray:
    """(pairs x systems): for each judged pair (``pair_rows`` index ``flat.grades``), the mean over the draws in
    ``grades`` (draws x pairs) of a system's value of ``measure`` at the pair's topic with the pair at the threshold
    grade minus with it at 0, every other grade as drawn. ``rows`` (systems x topics x k): the systems' top k
    (:class:`RunMatrix` rows).

    What :func:`topic_values` gives for the two forced grade vectors, computed from each topic's values as drawn
    and the pair's place in each top k instead of re-scoring the topic once per pair: a pair changes its own gain
    where a system ranks it (the few (system, pair) entries scored in full), and for every system its topic's
    normaliser (nDCG, Recall). ``chunk``: pairs at once (memory: draws x systems x chunk)."""
    m = measure_named(measure)
    forced = (float(threshold), 0.0)  # the pair relevant, and not
    gains = gains_at(rows, grades)  # draws x systems x topics x k
    hits = gains >= threshold
    count = hits.sum(axis=-1)  # draws x systems x topics
    context = m.effect_context(Drawn(gains, hits, count, flat, grades, k, threshold))
    out = np.zeros((len(pair_rows), rows.shape[0]))
    for start in range(0, len(pair_rows), chunk):
        part = pair_rows[start : start + chunk]
        topic = flat.topic_of[part]
        drawn = grades[:, part]  # draws x pairs
        normalised = m.forced_normalisers(context, topic, drawn, forced)
        if normalised is not None:  # a system that does not rank the pair: only the normaliser moves
            same, norms = normalised  # same: draws x systems x pairs
            out[start : start + chunk] = (divide(same, norms[0][:, None]) - divide(same, norms[1][:, None])).mean(0).T
        at = rows[:, topic, :] == part[None, :, None]  # systems x pairs x k
        system, pair = np.nonzero(at.any(axis=-1))  # the entries where a system ranks the pair
        rank, t, g = np.argmax(at[system, pair], axis=-1), topic[pair], drawn[:, pair]  # g: draws x entries
        own = g >= threshold  # the pair's own hit, as drawn
        others = count[:, system, t] - own  # hits of the other documents in the top k
        entries = Entries(system, t, rank, g, own, others, k, threshold)
        scored = [
            m.forced_value(context, entries, value, None if normalised is None else normalised[1][f][:, pair])
            for f, value in enumerate(forced)
        ]
        out[start + pair, system] = (scored[0] - scored[1]).mean(axis=0)
    return out
