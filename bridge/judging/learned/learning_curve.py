"""Learning curves of the topic adapters: how good a topic model gets from n judgments per topic.

``bridge judge-eval --judge adapter`` draws, per topic, n random judged pairs, trains exactly as
``label`` does (cross-validated Platt calibration, label = P >= 0.5) and tests on the topic's other
judged pairs; ``cosine`` is the zero-shot baseline (the encoder's query-passage cosine, thresholded
where it best separates the n training pairs).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from bridge.datasets import Dataset
from bridge.judging.fitting.metrics import Agreement, agreement_of, roc_auc
from bridge.judging.learned.topic_models import AdapterConfig, Encoder, TopicData, fit_topic, make_family


@dataclass(frozen=True)
class CurvePoint:
    """One family trained on ``n`` judgments per topic, tested on each topic's other judgments."""

    family: str
    n: int
    topics: int
    test_pairs: int
    agreement: Agreement
    auc: float | None
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "n": self.n,
            "topics": self.topics,
            "test_pairs": self.test_pairs,
            "auc": self.auc,
            "seconds": self.seconds,
            **self.agreement.to_json(),
        }


def _subsample(labels: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray | None:
    """``n`` random rows holding both classes at least twice (None if 100 draws fail)."""
    for _ in range(100):
        rows = np.sort(rng.choice(len(labels), size=n, replace=False))
        if 2 <= labels[rows].sum() <= n - 2:
            return rows
    return None


def learning_curve(
    dataset: Dataset,
    encoder: Encoder,
    families: Sequence[str],
    sizes: Sequence[int],
    config: AdapterConfig | None = None,
    min_test: int = 10,
    progress: bool = False,
) -> list[CurvePoint]:
    """For each family and size n: per topic, train on n random judged pairs exactly as ``label`` would
    (cross-validated Platt calibration, label = P >= 0.5) and test on the topic's other judged pairs.
    ``cosine`` is the zero-shot baseline: the encoder's query-passage cosine, thresholded where it
    best separates the n training pairs."""
    from tqdm.auto import tqdm

    config = config or AdapterConfig()
    threshold = dataset.relevance_threshold
    topics = []
    for qid in dataset.qids:
        judged = [(d, int(g >= threshold)) for d, g in sorted(dataset.qrels.get(qid, {}).items())]
        judged = [(d, y) for d, y in judged if dataset.corpus.get(d) is not None]
        if judged:
            topic = TopicData(
                qid, dataset.query(qid).text, tuple(d for d, _ in judged), np.array([y for _, y in judged])
            )
            topics.append(topic)
    points = []
    jobs = [(f, n) for f in families for n in sizes]
    for family_name, n in tqdm(jobs, desc="learning curve", disable=not progress):
        rng = np.random.default_rng(config.seed)
        truth: list[int] = []
        labels: list[int | None] = []
        scores: list[float] = []
        used = 0
        start = time.perf_counter()
        for topic in topics:
            if len(topic.docids) < n + min_test:
                continue
            rows = _subsample(topic.labels, n, rng)
            if rows is None:
                continue
            test = np.setdiff1d(np.arange(len(topic.docids)), rows)
            train = TopicData(topic.qid, topic.query, tuple(topic.docids[i] for i in rows), topic.labels[rows])
            test_ids = [topic.docids[i] for i in test]
            if family_name == "cosine":
                query = encoder.queries([topic.query])[0]
                train_cos = encoder.passages(train.docids) @ query
                p = encoder.passages(test_ids) @ query
                cut = _best_cut(train_cos, train.labels)
                predicted = [int(x >= cut) for x in p]
            else:
                family = make_family(replace(config, family=family_name), getattr(encoder, "model_path", ""))  # type: ignore[arg-type]
                folds = max(2, min(config.folds, int(train.labels.sum()), int(len(train.labels) - train.labels.sum())))
                model, live = fit_topic(train, family, encoder, folds, config.seed, key="curve")
                p = model.platt(family.score(live, train, test_ids, encoder))
                predicted = [int(x >= 0.5) for x in p]
            used += 1
            truth += [int(x) for x in topic.labels[test]]
            labels += predicted
            scores += [float(x) for x in p]
        seconds = time.perf_counter() - start
        auc = roc_auc(scores, [bool(t) for t in truth]) if truth else None
        points.append(
            CurvePoint(family_name, n, used, len(truth), agreement_of(truth, labels, seed=config.seed), auc, seconds)
        )
    return points


def _best_cut(scores: np.ndarray, labels: np.ndarray) -> float:
    """The threshold on ``scores`` with the best balanced accuracy on these labeled pairs."""
    best, cut = -1.0, float(np.median(scores))
    for candidate in np.unique(scores):
        predicted = scores >= candidate
        sens = predicted[labels == 1].mean() if labels.sum() else 0.0
        spec = (~predicted[labels == 0]).mean() if (labels == 0).any() else 0.0
        if (sens + spec) / 2 > best:
            best, cut = (sens + spec) / 2, float(candidate)
    return cut
