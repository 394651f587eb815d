"""Topic adapters: a judge per topic, learned from that topic's own human judgments.

Datasets with holes worth filling usually carry hundreds of human judgments per topic, and they
say what relevance means for that topic better than any prompt (Gienapp, Potthast, Scells and
Yang, ECIR 2026: per-topic classifiers rank systems at Spearman rho > 0.94 against full human
qrels, beat prompted LLM judges, and never learned from a ranker, so they are not circular).

For every topic with at least ``min_judgments`` judgments (and ``min_per_class`` of each class) a
topic model (:mod:`bridge.judging.learned.topic_models`) is fitted on the topic's judged pairs and labels
the topic's *unjudged* pool pairs; every other topic, and every topic whose cross-validated quality
is at chance, goes to the fallback judge (the LLM pipeline). Each record stores P(relevant), the
model's identity and its cross-validated quality. Topic models are cached by a hash of everything
they learned from, so a warm re-run trains nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from bridge.core.fsio import write_json_atomic
from bridge.core.label_records import LabelRecord
from bridge.datasets import Dataset
from bridge.encoders.embeddings import PassageEmbeddings
from bridge.estimate.calibration import ADAPTER, Calibration, PairFacts, prior_logit
from bridge.judging.base import Case, Judge, Preparable, Preparation, Prepared
from bridge.judging.learned.hole_calibration import known_pair_calibration
from bridge.judging.learned.topic_models import (
    ADAPTER_VERSION,
    AdapterConfig,
    Encoder,
    Pair,
    TopicData,
    TopicModel,
    cross_fit,
    fit_topic,
    make_family,
)
from bridge.judging.metrics import Agreement, agreement_of


@dataclass(frozen=True)
class TopicRoute:
    """Which judge a topic got, and why."""

    qid: str
    judge: str
    """``adapter`` or ``fallback``."""
    reason: str
    judged: int
    relevant: int
    cv: Agreement | None = None


class TopicAdapterJudge:
    """Labels a topic's unjudged pairs with its adapter; everything else goes to ``fallback``."""

    name = "adapter"
    stage = "adapter"

    def __init__(
        self,
        dataset: Dataset,
        fallback: Judge | None,
        config: AdapterConfig | None = None,
        cache_dir: Path = Path("cache"),
        encoder: Encoder | None = None,
        progress: bool = False,
    ) -> None:
        self.dataset = dataset
        self.fallback = fallback
        self.config = config or AdapterConfig()
        self.cache_dir = cache_dir
        self.progress = progress
        self._encoder = encoder
        self._holdout: frozenset[Pair] = frozenset()
        self._models: dict[str, TopicModel] = {}
        self._live: dict[str, Any] = {}
        self._routes: dict[str, TopicRoute] = {}

    # -- configuration -----------------------------------------------------------------------------
    @property
    def encoder(self) -> Encoder:
        if self._encoder is None:
            self._encoder = PassageEmbeddings(self.dataset, self.cache_dir, self.config.encoder, self.progress)
        return self._encoder

    @property
    def holdout(self) -> frozenset[Pair]:
        return self._holdout

    def prepare(self, preparation: Preparation) -> Prepared:
        """Hold out the audit's known pairs (never learn from them), then prepare the fallback judge."""
        self.hold_out(preparation.known)
        return self.fallback.prepare(preparation) if isinstance(self.fallback, Preparable) else Prepared()

    def prepared_state(self) -> dict[str, Any]:
        fallback = self.fallback.prepared_state() if isinstance(self.fallback, Preparable) else None
        return {"holdout": sorted(self._holdout), "fallback": fallback}

    def restore(self, state: dict[str, Any]) -> None:
        self.hold_out(tuple(pair) for pair in state.get("holdout", ()))
        if isinstance(self.fallback, Preparable) and state.get("fallback") is not None:
            self.fallback.restore(state["fallback"])

    def hold_out(self, pairs: Iterable[Pair]) -> None:
        """Judged pairs never to learn from (the label run's audit pairs, so the audit stays honest)."""
        self._holdout = frozenset(pairs)
        self._models.clear()
        self._live.clear()
        self._routes.clear()

    def training_pairs(self, qid: str) -> list[tuple[str, int]]:
        threshold = self.dataset.relevance_threshold
        return [
            (docid, int(grade >= threshold))
            for docid, grade in sorted(self.dataset.qrels.get(qid, {}).items())
            if (qid, docid) not in self._holdout and self.dataset.corpus.get(docid) is not None
        ]

    def qualifies(self, qid: str) -> tuple[bool, str]:
        pairs = self.training_pairs(qid)
        relevant = sum(y for _, y in pairs)
        c = self.config
        if len(pairs) < c.min_judgments:
            return False, f"{len(pairs)} judgments < {c.min_judgments}"
        if min(relevant, len(pairs) - relevant) < c.min_per_class:
            return False, f"{relevant} relevant / {len(pairs) - relevant} not: fewer than {c.min_per_class} of a class"
        return True, f"{len(pairs)} judgments ({relevant} relevant)"

    @property
    def config_id(self) -> str:
        payload = json.dumps(
            {"version": ADAPTER_VERSION, "config": asdict(self.config), "training": self._training_digest()},
            sort_keys=True,
        )
        fallback = self.fallback.config_id if self.fallback is not None else "none"
        return "adapter-" + hashlib.sha256(payload.encode()).hexdigest()[:12] + "+" + fallback

    def _training_digest(self) -> str:
        h = hashlib.sha256()
        for qid in self.dataset.qids:
            for docid, label in self.training_pairs(qid):
                h.update(f"{qid}\t{docid}\t{label}\n".encode())
        return h.hexdigest()[:16]

    def _topic(self, qid: str) -> TopicData:
        pairs = self.training_pairs(qid)
        return TopicData(
            qid, self.dataset.query(qid).text, tuple(d for d, _ in pairs), np.array([y for _, y in pairs], dtype=int)
        )

    def _key(self, topic: TopicData) -> str:
        c = self.config
        h = hashlib.sha256()
        params = {k: v for k, v in asdict(c).items() if k not in ("min_judgments", "min_per_class", "chance_low")}
        h.update(json.dumps([ADAPTER_VERSION, params, self.encoder.identity, topic.query], sort_keys=True).encode())
        for docid, label in zip(topic.docids, topic.labels, strict=True):
            h.update(f"{docid}\t{label}\n".encode())
        return h.hexdigest()[:20]

    # -- models ------------------------------------------------------------------------------------
    def _cache_file(self, key: str) -> Path:
        return self.cache_dir / "adapters" / f"{key}.json"

    def model(self, qid: str) -> TopicModel:
        """The topic's fitted model: from memory, from the cache, or trained now."""
        if qid in self._models:
            return self._models[qid]
        topic = self._topic(qid)
        key = self._key(topic)
        path = self._cache_file(key)
        if path.exists():
            model = TopicModel.from_json(json.loads(path.read_text(encoding="utf-8")))
        else:
            family = make_family(self.config, getattr(self.encoder, "model_path", ""))
            model, live = fit_topic(topic, family, self.encoder, self.config.folds, self.config.seed, key)
            self._live[qid] = live
            write_json_atomic(path, model.to_json())
        self._models[qid] = model
        return model

    def route(self, qid: str) -> TopicRoute:
        """Which judge labels the topic's pairs (memoized: the cross-validation behind it is settled)."""
        if qid not in self._routes:
            self._routes[qid] = self._route(qid)
        return self._routes[qid]

    def _route(self, qid: str) -> TopicRoute:
        ok, reason = self.qualifies(qid)
        pairs = self.training_pairs(qid)
        relevant = sum(y for _, y in pairs)
        if not ok:
            return TopicRoute(qid, "fallback", reason, len(pairs), relevant)
        cv = self.model(qid).cv(self.config.seed)
        low = cv.interval("balanced_accuracy")
        if low is None or low[0] <= self.config.chance_low:
            span = "undefined" if low is None else f"{low[0]:.2f}-{low[1]:.2f}"
            return TopicRoute(qid, "fallback", f"cross-validated bAcc at chance ({span})", len(pairs), relevant, cv)
        return TopicRoute(qid, "adapter", reason, len(pairs), relevant, cv)

    def probabilities(self, qid: str, docids: Sequence[str]) -> np.ndarray:
        """Calibrated P(relevant) of passages for a topic (trains or loads its model)."""
        model = self.model(qid)
        missing = [d for d in dict.fromkeys(docids) if d not in model.scores]
        if missing:
            topic = self._topic(qid)
            family = make_family(self.config, getattr(self.encoder, "model_path", ""))
            live = self._live.get(qid)
            if live is None:
                live = family.load(model.params) if model.params is not None else None
            if live is None:  # fine-tuned models are not stored: refit them (deterministic for the seed)
                live = cross_fit(topic, family, self.encoder, self.config.folds, self.config.seed)[1]
            self._live[qid] = live
            model.scores.update(zip(missing, family.score(live, topic, missing, self.encoder).tolist(), strict=True))
            write_json_atomic(self._cache_file(model.key), model.to_json())
        return model.platt(np.array([model.scores[d] for d in docids]))

    # -- judging -----------------------------------------------------------------------------------
    def judge(self, cases: Sequence[Case], on_record: Callable[[LabelRecord], None]) -> None:
        config_id = self.config_id
        by_topic: dict[str, list[Case]] = {}
        for case in cases:
            by_topic.setdefault(case.qid, []).append(case)
        fallback: list[Case] = []
        reasons: dict[Pair, str] = {}
        for qid, group in by_topic.items():
            route = self.route(qid)
            if route.judge != "adapter":
                reasons.update(((c.qid, c.docid), route.reason) for c in group)
                fallback += group
                continue
            trained_on = set(self._topic(qid).docids)
            mine = [c for c in group if c.docid not in trained_on]
            for c in group:
                if c.docid in trained_on:  # never label a pair the adapter learned from
                    reasons[(c.qid, c.docid)] = "a training pair of the topic's adapter"
                    fallback.append(c)
            model = self.model(qid)
            for case, p in zip(mine, self.probabilities(qid, [c.docid for c in mine]), strict=True):
                on_record(self._record(case, float(p), model, route, config_id))

        def stamp(record: LabelRecord) -> None:
            details = {**record.details, "adapter_fallback": reasons.get((record.qid, record.docid), "")}
            on_record(replace(record, config_id=config_id, details=details))

        if fallback:
            if self.fallback is None:
                raise ValueError(f"{len(fallback)} pairs need the fallback judge, and this adapter has none")
            self.fallback.judge(fallback, stamp)

    def _record(self, case: Case, p: float, model: TopicModel, route: TopicRoute, config_id: str) -> LabelRecord:
        cv = route.cv
        return LabelRecord.of_pair(
            case,
            label=int(p >= 0.5),
            route="adapter",
            judge=self.name,
            config_id=config_id,
            model=f"{self.config.family}:{self.config.encoder}",
            details={
                "adapter": {
                    "model_key": model.key,
                    "family": model.family,
                    "seed": self.config.seed,
                    "trained_on": model.n_train,
                    "relevant_in_training": model.n_relevant,
                    "cv_balanced_accuracy": cv.balanced_accuracy if cv else None,
                    "cv_kappa": cv.kappa if cv else None,
                }
            },
            p_yes=p,
            stage=self.stage,
        )

    # -- the adapter's own audit -----------------------------------------------------------------
    def calibration(self, qids: Iterable[str]) -> Calibration | None:
        """The adapters' P calibrated on every out-of-fold prediction of the topics they decide (pooled over topics,
        resampled by topic), from its logit and the logit of its topic's share of relevant judgments: each topic's
        Platt curve is class-balanced (P = 0.5 at the balanced boundary), so a P on a topic with few relevant
        judgments overstates relevance. What the hole model draws an adapter's P from (:mod:`bridge.estimate.holes`)."""
        facts, truth, groups = [], [], []
        for route in self.routes(qids):
            if route.judge != "adapter":
                continue
            model = self.model(route.qid)
            prior = {"logit_prior": prior_logit(model.n_relevant, model.n_train)}
            facts += [PairFacts(p=p, extra=prior) for p in model.oof_p]
            truth += list(model.truth)
            groups += [route.qid] * len(model.truth)
        population = f"out-of-fold predictions of {len(truth)} judged pairs over {len(set(groups))} adapter topics"
        return known_pair_calibration(ADAPTER, facts, truth, groups, ("logit_p", "logit_prior"), population)

    def routes(self, qids: Iterable[str]) -> list[TopicRoute]:
        return [self.route(q) for q in qids]

    def cv_agreement(self, routes: Sequence[TopicRoute], judge: str | None = None) -> Agreement | None:
        """Out-of-fold predictions pooled over every topic that had an adapter, including topics then handed to
        the fallback as at chance (leaving those out would flatter the figure); ``judge`` keeps only the topics
        that went to that judge (``adapter``: kept; ``fallback``: dropped)."""
        truth: list[int] = []
        labels: list[int | None] = []
        for r in routes:
            if r.cv is not None and judge in (None, r.judge):
                model = self.model(r.qid)
                truth += model.truth
                labels += [int(p >= 0.5) for p in model.oof_p]
        return agreement_of(truth, labels, seed=self.config.seed) if truth else None


def routing_summary(routes: Sequence[TopicRoute]) -> dict[str, Any]:
    """Which topics used which judge and why (judge-audit.json's ``adapter`` entry)."""
    adapter = [r for r in routes if r.judge == "adapter"]
    fallback = [r for r in routes if r.judge != "adapter"]
    return {
        "topics_adapter": len(adapter),
        "topics_fallback": len(fallback),
        "topics_dropped_at_chance": sum(1 for r in fallback if r.cv is not None),
        "topics": {
            r.qid: {
                "judge": r.judge,
                "reason": r.reason,
                "judged": r.judged,
                "relevant": r.relevant,
                "cv_balanced_accuracy": r.cv.balanced_accuracy if r.cv else None,
                "cv_interval": list(r.cv.interval("balanced_accuracy") or []) if r.cv else None,
                "cv_kappa": r.cv.kappa if r.cv else None,
            }
            for r in routes
        },
    }


def summary_lines(routes: Sequence[TopicRoute]) -> list[str]:
    adapter = [r for r in routes if r.judge == "adapter"]
    fallback = [r for r in routes if r.judge != "adapter"]
    reasons: dict[str, int] = {}
    for r in fallback:
        kind = "at chance" if "chance" in r.reason else "too few judgments" if "<" in r.reason else "one class thin"
        reasons[kind] = reasons.get(kind, 0) + 1
    why = ", ".join(f"{n} {k}" for k, n in sorted(reasons.items()))
    lines = [f"topic adapters: {len(adapter)} topics labeled by their own adapter, {len(fallback)} by the fallback"]
    if fallback:
        lines[0] += f" ({why})"
    return lines
