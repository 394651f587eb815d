"""Topic adapters: a judge per topic, learned from that topic's own human judgments.

Datasets with holes worth filling usually carry hundreds of human judgments per topic, and they
say what relevance means for that topic better than any prompt (Gienapp, Potthast, Scells and
Yang, ECIR 2026: per-topic classifiers rank systems at Spearman rho > 0.94 against full human
qrels, beat prompted LLM judges, and never learned from a ranker, so they are not circular).

For every topic with at least ``min_judgments`` judgments (and ``min_per_class`` of each class) a
small classifier is fitted on the topic's judged pairs and labels the topic's *unjudged* pool
pairs; every other topic, and every topic whose cross-validated quality is at chance, goes to the
fallback judge (the LLM pipeline). Two families:

* ``frozen-lr``: logistic regression (scikit-learn, balanced classes) on frozen sentence-transformers
  embeddings of the passage and its cosine with the query; seconds for a whole collection;
* ``finetune-ce``: a cross-encoder fine-tuned per topic from the shipped all-MiniLM-L6-v2 with
  sentence-transformers' own training code; minutes.

The adapter audits itself for free: stratified k-fold cross-validation inside each topic gives
out-of-fold predictions for every judged pair, scored like the known-pair audit. Out-of-fold
scores also calibrate the classifier (the slope of a Platt curve, classes weighted equally), so
``p_yes`` is a probability and the label is ``p_yes >= 0.5``. Topic models are cached by a hash of everything
they learned from, so a warm re-run trains nothing.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np

from bridge.datasets import Dataset
from bridge.fsio import write_json_atomic
from bridge.judging.base import Case, Judge
from bridge.judging.metrics import Agreement, agreement_of, roc_auc
from bridge.labels import LabelRecord

ADAPTER_VERSION = "topic-adapter-3"
FAMILIES = ("frozen-lr", "finetune-ce")
Pair = tuple[str, str]


@dataclass(frozen=True)
class AdapterConfig:
    family: Literal["frozen-lr", "finetune-ce"] = "frozen-lr"
    min_judgments: int = 32
    """A topic qualifies with at least this many judged pairs..."""
    min_per_class: int = 4
    """...of which at least this many are relevant and this many are not."""
    folds: int = 5
    """Cross-validation folds inside a topic (the adapter's own audit and its calibration)."""
    c: float = 10.0
    """frozen-lr: inverse L2 regularization strength (10: the plateau of bAcc over C = 1..100 on dl19 at
    32 judgments per topic; 1 loses about 0.01 bAcc, 0.1 about 0.03)."""
    epochs: int = 3
    """finetune-ce: passes over the topic's judgments."""
    seed: int = 0
    encoder: str = "all-MiniLM-L6-v2"
    chance_low: float = 0.5
    """A topic is handed to the fallback judge when the lower end of its cross-validated
    balanced-accuracy interval (Jeffreys) is at or below this: 0.5, no evidence that it beats chance."""

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"adapter family must be one of {', '.join(FAMILIES)}, got {self.family!r}")
        if self.folds < 2 or self.min_per_class < 2:
            raise ValueError("the adapter needs at least 2 folds and 2 judgments of each class")


@dataclass(frozen=True)
class TopicData:
    """One topic's judged pairs: what a family learns from."""

    qid: str
    query: str
    docids: tuple[str, ...]
    labels: np.ndarray
    """1 relevant / 0 not, per docid."""


class Encoder(Protocol):
    """Sentence embeddings of passages and queries (L2-normalized)."""

    identity: str

    def passages(self, docids: Sequence[str]) -> np.ndarray: ...
    def queries(self, texts: Sequence[str]) -> np.ndarray: ...
    def texts(self, docids: Sequence[str]) -> list[str]: ...


class TopicFamily(Protocol):
    """Fits on a topic's judged pairs; scores passages (higher = more relevant, 0 = undecided)."""

    name: str

    def fit(self, topic: TopicData, rows: np.ndarray, encoder: Encoder) -> Any: ...
    def ensemble(self, models: Sequence[Any]) -> Any:
        """One model that scores as the mean of ``models`` (the cross-validation's fold models)."""
        ...

    def score(self, model: Any, topic: TopicData, docids: Sequence[str], encoder: Encoder) -> np.ndarray: ...
    def params(self, model: Any) -> dict[str, Any] | None:
        """The fitted model as JSON (to score new passages from the cache), or None if it is too big."""
        ...

    def load(self, params: dict[str, Any]) -> Any: ...


def _features(topic: TopicData, docids: Sequence[str], encoder: Encoder) -> np.ndarray:
    """frozen-lr features: the passage embedding and its cosine with the query (scaled to weigh in)."""
    passages = encoder.passages(docids)
    query = encoder.queries([topic.query])[0]
    return np.hstack([passages, 5.0 * (passages @ query)[:, None]])


class FrozenLogisticRegression:
    name = "frozen-lr"

    def __init__(self, c: float = 10.0, seed: int = 0) -> None:
        self.c = c
        self.seed = seed

    def fit(self, topic: TopicData, rows: np.ndarray, encoder: Encoder) -> Any:
        from sklearn.linear_model import LogisticRegression

        x = _features(topic, [topic.docids[i] for i in rows], encoder)
        model = LogisticRegression(C=self.c, class_weight="balanced", max_iter=2000, random_state=self.seed)
        return model.fit(x, topic.labels[rows])

    def score(self, model: Any, topic: TopicData, docids: Sequence[str], encoder: Encoder) -> np.ndarray:
        if not docids:
            return np.zeros(0)
        return np.asarray(model.decision_function(_features(topic, docids, encoder)), dtype=float)

    def ensemble(self, models: Sequence[Any]) -> Any:
        """The mean of the fold models: for linear models, one linear model with the mean weights."""
        coef = np.mean([np.ravel(m.coef_) for m in models], axis=0)
        return _LinearModel(coef, float(np.mean([np.ravel(m.intercept_)[0] for m in models])))

    def params(self, model: Any) -> dict[str, Any] | None:
        return {"coef": np.ravel(model.coef_).tolist(), "intercept": float(np.ravel(model.intercept_)[0])}

    def load(self, params: dict[str, Any]) -> Any:
        return _LinearModel(np.asarray(params["coef"]), float(params["intercept"]))


@dataclass(frozen=True)
class _LinearModel:
    coef_: np.ndarray
    intercept_: float

    def decision_function(self, x: np.ndarray) -> np.ndarray:
        return x @ self.coef_ + self.intercept_


class FineTunedCrossEncoder:
    """A cross-encoder (one logit) fine-tuned from the encoder's checkpoint on the topic's pairs,
    with the loss weighted so both classes count equally."""

    name = "finetune-ce"

    def __init__(self, model_path: str, epochs: int = 3, seed: int = 0, batch_size: int = 16) -> None:
        self.model_path = model_path
        self.epochs = epochs
        self.seed = seed
        self.batch_size = batch_size

    def fit(self, topic: TopicData, rows: np.ndarray, encoder: Encoder) -> Any:
        import torch
        from sentence_transformers import CrossEncoder, InputExample
        from torch.utils.data import DataLoader

        torch.manual_seed(self.seed)
        model = CrossEncoder(self.model_path, num_labels=1, max_length=256, device="cpu")
        texts = encoder.texts([topic.docids[i] for i in rows])
        labels = topic.labels[rows]
        examples = [InputExample(texts=[topic.query, t], label=float(y)) for t, y in zip(texts, labels, strict=True)]
        generator = torch.Generator().manual_seed(self.seed)
        loader = DataLoader(examples, shuffle=True, batch_size=self.batch_size, generator=generator)
        positives = max(int(labels.sum()), 1)
        weight = torch.tensor((len(labels) - positives) / positives)
        model.old_fit(
            loader,
            epochs=self.epochs,
            loss_fct=torch.nn.BCEWithLogitsLoss(pos_weight=weight),
            warmup_steps=max(1, len(loader) * self.epochs // 10),
            optimizer_params={"lr": 5e-5},
            show_progress_bar=False,
        )
        return model

    def ensemble(self, models: Sequence[Any]) -> Any:
        return tuple(models)

    def score(self, model: Any, topic: TopicData, docids: Sequence[str], encoder: Encoder) -> np.ndarray:
        if not docids:
            return np.zeros(0)
        if isinstance(model, tuple):  # the fold ensemble: the mean of its members' scores
            return np.mean([self.score(m, topic, docids, encoder) for m in model], axis=0)
        import torch

        pairs = [[topic.query, t] for t in encoder.texts(docids)]
        scores = model.predict(pairs, batch_size=32, activation_fn=torch.nn.Identity(), show_progress_bar=False)
        return np.asarray(scores, dtype=float)

    def params(self, model: Any) -> dict[str, Any] | None:
        return None

    def load(self, params: dict[str, Any]) -> Any:
        raise NotImplementedError("fine-tuned cross-encoders are not stored; their scores are")


def make_family(config: AdapterConfig, encoder_path: str) -> TopicFamily:
    if config.family == "frozen-lr":
        return FrozenLogisticRegression(config.c, config.seed)
    return FineTunedCrossEncoder(encoder_path, config.epochs, config.seed)


@dataclass(frozen=True)
class Platt:
    """P(relevant) = sigmoid(a * score + b), fitted with both classes weighted equally.

    The adapters fit only the slope (``b`` = 0): the classifier's own class-balanced decision boundary
    (score 0) stays the P = 0.5 line, and the out-of-fold scores only say how confident a score is. The
    map is applied to the scores it was fitted on: those of the fold models (new passages are scored by
    their mean), never to a model trained on all pairs, whose scores run larger."""

    a: float = 1.0
    b: float = 0.0

    @classmethod
    def fit(cls, scores: np.ndarray, labels: np.ndarray) -> Platt:
        from sklearn.linear_model import LogisticRegression

        if len(set(labels.tolist())) < 2:
            return cls()
        model = LogisticRegression(C=1e4, class_weight="balanced", fit_intercept=False, max_iter=1000)
        return cls(float(model.fit(scores[:, None], labels).coef_[0][0]), 0.0)

    def __call__(self, scores: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-(self.a * np.asarray(scores, dtype=float) + self.b)))


def stratified_folds(labels: np.ndarray, folds: int, seed: int) -> list[np.ndarray]:
    """Row indices of each fold; every fold gets its share of both classes."""
    rng = np.random.default_rng(seed)
    out: list[list[int]] = [[] for _ in range(folds)]
    for value in (0, 1):
        rows = np.flatnonzero(labels == value)
        rng.shuffle(rows)
        for i, row in enumerate(rows):
            out[i % folds].append(int(row))
    return [np.array(sorted(f), dtype=int) for f in out]


@dataclass
class TopicModel:
    """A fitted topic classifier: its identity, its cross-validated quality and its calibration."""

    qid: str
    key: str
    family: str
    n_train: int
    n_relevant: int
    oof_p: list[float]
    """Out-of-fold calibrated P(relevant) of every training pair, in ``docids`` order."""
    docids: list[str]
    truth: list[int]
    platt: Platt
    params: dict[str, Any] | None
    scores: dict[str, float] = field(default_factory=dict)
    """Raw scores of passages scored so far (what a warm re-run reuses)."""
    seconds: float = 0.0

    def cv(self, seed: int = 0) -> Agreement:
        return agreement_of(self.truth, [int(p >= 0.5) for p in self.oof_p], seed=seed)

    def cv_auc(self) -> float | None:
        return roc_auc(self.oof_p, [bool(t) for t in self.truth])

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["platt"] = [self.platt.a, self.platt.b]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TopicModel:
        return cls(**{**data, "platt": Platt(*data["platt"])})


def cross_fit(topic: TopicData, family: TopicFamily, encoder: Encoder, folds: int, seed: int) -> tuple[np.ndarray, Any]:
    """Out-of-fold scores of every judged pair, and the fold models' ensemble that scores new passages on the
    same scale (the one the Platt map is fitted on)."""
    oof = np.zeros(len(topic.docids))
    models = []
    for test in stratified_folds(topic.labels, folds, seed):
        train = np.setdiff1d(np.arange(len(topic.docids)), test)
        model = family.fit(topic, train, encoder)
        oof[test] = family.score(model, topic, [topic.docids[i] for i in test], encoder)
        models.append(model)
    return oof, family.ensemble(models)


def fit_topic(
    topic: TopicData, family: TopicFamily, encoder: Encoder, folds: int, seed: int, key: str
) -> tuple[TopicModel, Any]:
    """Cross-validate: out-of-fold scores give the Platt calibration and the topic's audit; the fold models'
    ensemble labels new passages."""
    start = time.perf_counter()
    oof, final = cross_fit(topic, family, encoder, folds, seed)
    platt = Platt.fit(oof, topic.labels)
    fitted = TopicModel(
        qid=topic.qid,
        key=key,
        family=family.name,
        n_train=len(topic.docids),
        n_relevant=int(topic.labels.sum()),
        oof_p=[float(p) for p in platt(oof)],
        docids=list(topic.docids),
        truth=[int(x) for x in topic.labels],
        platt=platt,
        params=family.params(final),
        seconds=time.perf_counter() - start,
    )
    return fitted, final


class SentenceEncoder:
    """sentence-transformers embeddings of a dataset's passages, cached on disk per (corpus, model).

    Only the passages asked for are encoded; when the dense retriever has already encoded the whole
    corpus with the same model (``retrieve``), its embeddings are read instead.
    """

    def __init__(self, dataset: Dataset, cache_dir: Path, model: str = "all-MiniLM-L6-v2") -> None:
        from retrievers.base import RetrievalContext
        from retrievers.dense import dense_from_params

        context = RetrievalContext(cache_dir, dataset_slug=dataset.slug, dataset_fingerprint=dataset.fingerprint)
        self._dense = dense_from_params({"model": model}, context)
        self.identity = self._dense.model_ref.identity()
        self.model_path = self._dense.model_ref.source
        self.dataset = dataset
        self.folder = context.workdir("adapter-embeddings", self._dense.encoding_fingerprint())
        self._rows: dict[str, int] = {}
        self._vectors = np.zeros((0, 0), dtype=np.float32)
        self._query_vectors: dict[str, np.ndarray] = {}
        self._load()

    def _load(self) -> None:
        for folder in (self._dense.embeddings_dir, self.folder):
            vectors, ids = folder / "embeddings.npy", folder / "docids.json"
            if vectors.exists() and ids.exists():
                docids = json.loads(ids.read_text())
                self._vectors = np.load(vectors)
                self._rows = {d: i for i, d in enumerate(docids)}
                return

    def _save(self) -> None:
        from bridge.fsio import atomic_write

        docids = sorted(self._rows, key=self._rows.__getitem__)
        with atomic_write(self.folder / "embeddings.npy", "wb", encoding=None) as handle:
            np.save(handle, self._vectors)
        write_json_atomic(self.folder / "docids.json", docids)

    def texts(self, docids: Sequence[str]) -> list[str]:
        out = []
        for docid in docids:
            doc = self.dataset.corpus.get(docid)
            if doc is None:
                raise KeyError(f"document {docid!r} is not in the {self.dataset.name} corpus")
            out.append(doc.contents())
        return out

    def passages(self, docids: Sequence[str]) -> np.ndarray:
        missing = list(dict.fromkeys(d for d in docids if d not in self._rows))
        if missing:
            fresh = self._dense.encode(self.texts(missing), self._dense.passage_prefix, progress=None)
            start = len(self._rows)
            self._vectors = fresh if not len(self._vectors) else np.vstack([self._vectors, fresh])
            self._rows.update({d: start + i for i, d in enumerate(missing)})
            self._save()
        return self._vectors[[self._rows[d] for d in docids]]

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._query_vectors]
        if missing:
            self._query_vectors.update(zip(missing, self._dense.encode_queries(missing), strict=True))
        return np.array([self._query_vectors[t] for t in texts])


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
            self._encoder = SentenceEncoder(self.dataset, self.cache_dir, self.config.encoder)
        return self._encoder

    @property
    def holdout(self) -> frozenset[Pair]:
        return self._holdout

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
        return LabelRecord(
            qid=case.qid,
            docid=case.docid,
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
            systems=list(case.systems),
            min_rank=case.min_rank,
            stage=self.stage,
        )

    # -- the adapter's own audit -----------------------------------------------------------------
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


# -- measuring adapters: cross-validation over a collection, and learning curves ----------------------


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
    config: AdapterConfig = AdapterConfig(),
    min_test: int = 10,
    progress: bool = False,
) -> list[CurvePoint]:
    """For each family and size n: per topic, train on n random judged pairs exactly as ``label`` would
    (cross-validated Platt calibration, label = P >= 0.5) and test on the topic's other judged pairs.
    ``cosine`` is the zero-shot baseline: the encoder's query-passage cosine, thresholded where it
    best separates the n training pairs."""
    from tqdm.auto import tqdm

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
