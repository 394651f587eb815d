"""Topic models: the per-topic classifiers behind the topic adapters, how they are fitted and audited.

Two families, fitted on one topic's judged pairs (:class:`TopicData`):

* ``frozen-lr``: logistic regression (scikit-learn, balanced classes) on frozen sentence-transformers
  embeddings of the passage and its cosine with the query; seconds for a whole collection;
* ``finetune-ce``: a cross-encoder fine-tuned per topic from the shipped all-MiniLM-L6-v2 with
  sentence-transformers' own training code; minutes.

Every topic is cross-validated inside itself (:func:`cross_fit`): the out-of-fold scores are the
adapter's audit at no extra judgment and fit its calibration (:class:`Platt`), and the fold models'
ensemble scores new passages on the same scale. A fitted topic is a :class:`TopicModel`, stored as
JSON under ``cache/adapters/`` by a hash of everything it learned from.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

from bridge.judging.fitting.metrics import Agreement, agreement_of, roc_auc

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
