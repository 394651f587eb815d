"""People's answers teach the exemplar judge (:mod:`bridge.judging.teaching`).

The exemplar judge reads each hole's likeness to its topic's known relevant passages. Once people answered holes:

* a hole they marked **relevant** is one more known relevant passage of its topic: every hole of the topic is compared
  with it too (``exemplar_cosine`` is the largest cosine to any of them, as the fit defines it, so the fit applies
  unchanged), and ``exemplar_percentile`` is read again among the topic's holes;
* a hole they marked **not relevant** is a counter-exemplar: :data:`COUNTER` says how much more a hole resembles the
  nearest of them than its nearest known relevant passage (0 where it does not, or where its topic has none). The
  shipped fit never saw negatives, so its coefficient is one of the terms people's answers measure on each
  collection (:data:`bridge.estimate.level.TERMS`, its prior measured between collections).

An answered hole is compared with the other answers only (its own answer left out), so the answers that measure the
terms see the features every other hole gets. The records of the free stage and of its LLM comparison
(``exemplar-llm``, whose comparison is kept) are taught alike; the label run's files are not changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from bridge.core.label_records import HUMAN_JUDGE, LabelRecord
from bridge.encoders.embeddings import PassageEmbeddings
from bridge.encoders.sources import MINILM
from bridge.estimate.hole_evidence import model_record
from bridge.estimate.level import COUNTER
from bridge.judging.learned.exemplar import LLM_STAGE, NAME, STAGE, percentile
from bridge.judging.learned.topic_models import Encoder
from bridge.judging.teaching import Lesson, Taught, register_teacher

TAUGHT_STAGES = (STAGE, LLM_STAGE)


def _model_view(record: LabelRecord) -> LabelRecord | None:
    """The exemplar stage's record of a pair: the record itself, or for people's answer the model's record it
    replaced (:func:`bridge.estimate.hole_evidence.model_record`); None where neither is the exemplar judge's."""
    view = model_record(record) if record.judge == HUMAN_JUDGE else record
    if view is None or view.stage not in TAUGHT_STAGES:
        return None
    features = view.details.get("features")
    return view if isinstance(features, dict) and "exemplar_cosine" in features else None


def taught_features(
    holes: np.ndarray, exemplars: np.ndarray, counters: np.ndarray, own_exemplar: Sequence[int | None],
    own_counter: Sequence[int | None],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """For one topic's ``holes`` (rows, L2-normalized): the largest cosine to ``exemplars`` (the known relevant
    passages, people's relevant answers among them), its percentile among the holes, and :data:`COUNTER` against
    ``counters`` (people's not-relevant answers). ``own_*[i]``: the row that is hole i itself, left out."""

    def largest(against: np.ndarray, own: Sequence[int | None]) -> np.ndarray:
        if not len(against):
            return np.full(len(holes), -np.inf)
        sims = holes @ against.T
        for i, row in enumerate(own):
            if row is not None:
                sims[i, row] = -np.inf
        return sims.max(axis=1)

    cosine = largest(exemplars, own_exemplar)
    counter = largest(counters, own_counter)
    excess = np.where(np.isfinite(counter), np.maximum(counter - cosine, 0.0), 0.0)
    return cosine, percentile(cosine, cosine), excess


@register_teacher(STAGE)
def teach_exemplar(lesson: Lesson) -> Taught:
    """The exemplar stage's records taught by people's answers, over the encoder its records name."""
    if not _teachable(lesson):
        return Taught(list(lesson.records))
    encoder_name = next(
        (r.model.split(":", 1)[1] for r in lesson.records if r.stage == STAGE and r.model.startswith(f"{NAME}:")),
        MINILM,
    )
    return taught_records(lesson, PassageEmbeddings(lesson.dataset, lesson.cache_dir, encoder_name, lesson.progress))


def _teachable(lesson: Lesson) -> bool:
    """Whether people answered in a topic the exemplar judge decided."""
    answers = lesson.answers()
    return any(answers.get(r.qid) and _model_view(r) is not None for r in lesson.records)


def taught_records(lesson: Lesson, encoder: Encoder) -> Taught:
    """The exemplar stage's records with their features re-read against people's answers (module docstring); every
    such record gets :data:`COUNTER` (0 in topics nobody answered), so that the estimate may measure its
    coefficient."""
    answers = lesson.answers()
    views = {i: v for i, r in enumerate(lesson.records) if (v := _model_view(r)) is not None}
    threshold = lesson.dataset.relevance_threshold
    by_topic: dict[str, list[int]] = {}
    for i in views:
        by_topic.setdefault(lesson.records[i].qid, []).append(i)
    updated: dict[int, dict[str, float]] = {}
    gained = counters = 0
    for qid, idx in by_topic.items():
        said = answers.get(qid, {})
        if not said:
            updated.update({i: {**views[i].details["features"], COUNTER: 0.0} for i in idx})
            continue
        docids = list(dict.fromkeys(lesson.records[i].docid for i in idx))  # a pair's records of both stages once
        known = lesson.dataset.qrels.get(qid, {})
        relevant = [d for d, g in known.items() if g >= threshold and lesson.dataset.corpus.get(d) is not None]
        relevant += [d for d, y in said.items() if y == 1 and d not in relevant]
        negative = [d for d, y in said.items() if y == 0]
        gained += sum(1 for y in said.values() if y == 1)
        counters += len(negative)
        vectors = encoder.passages([*docids, *relevant, *negative])
        holes, exemplars, against = np.split(vectors, [len(docids), len(docids) + len(relevant)])
        own_e = [relevant.index(d) if d in relevant else None for d in docids]
        own_c = [negative.index(d) if d in negative else None for d in docids]
        cosine, pct, excess = taught_features(holes, exemplars, against, own_e, own_c)
        row = {d: j for j, d in enumerate(docids)}
        for i in idx:
            j = row[lesson.records[i].docid]
            taught = {"exemplar_cosine": cosine[j], "exemplar_percentile": pct[j], COUNTER: excess[j]}
            updated[i] = {**views[i].details["features"], **{k: round(float(v), 6) for k, v in taught.items()}}
    records = list(lesson.records)
    for i, features in updated.items():
        records[i] = _with_features(records[i], features)
    note = (
        f"people's answers taught the exemplar judge: {gained} relevant answers are known relevant passages of their "
        f"topics and {counters} not-relevant answers its counter-exemplars (features re-read for "
        f"the pairs of {sum(1 for q in by_topic if answers.get(q))} topics)"
    )
    return Taught(records, note)


def _with_features(record: LabelRecord, features: dict[str, float]) -> LabelRecord:
    """``record`` with the exemplar features of the model's record replaced (its own, or the one people's answer
    replaced), marked as taught."""
    if record.judge == HUMAN_JUDGE:
        source = dict(record.details["escalated"])
        source["details"] = {**source["details"], "features": features, "taught": True}
        return replace(record, details={**record.details, "escalated": source})
    return replace(record, details={**record.details, "features": features, "taught": True})
