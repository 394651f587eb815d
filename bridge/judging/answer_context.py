"""The answer-context judge: whether an answer string sits in the role the question asks about.

On datasets with short answers (nq) every pair an LLM decides in the pool holds one of the question's
answer strings; most of them hold it in another role ("2017" as the year of another event, "NFL" in
any Super Bowl article). What separates the two is where the answer sits: a passage that answers
the question names the question's subject beside the answer, usually in its title. This judge is a
logistic model over

* ``question_in_passage``  the share of the question's content words the passage holds;
* ``question_near_answer`` the share within ``window`` tokens of an answer mention;
* ``question_in_title``    the share in the passage's title (its first line);
* ``llm_logit``            the logit of the LLM's one-pass P(true), asked with the evidence hint (when an
  LLM is given: a stronger model served to bridge makes this feature, and the judge, stronger),

fitted on labelled answer-bearing pairs (a reference file read under the written criterion, e.g.
``bench/data/nq-answer-reference/``), never on the pairs it is audited on. It records the fitted
P(relevant) with every label and says relevant when P reaches the share of relevant pairs it was
fitted on (the balanced decision: equal weight to both kinds of error). Pairs without an answer
match go to ``fallback`` (None: undecided).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from bridge.errors import BridgeError
from bridge.fsio import write_json_atomic
from bridge.judging.answer_swap import content_words
from bridge.judging.base import (
    Case,
    Judge,
    Preparable,
    Preparation,
    Prepared,
    cases_for,
    register_judge,
    usage_of,
)
from bridge.judging.cascade import CalibratedJudge, Score
from bridge.judging.evidence import answer_forms, normalize, occurrences
from bridge.judging.reference_labels import HumanPair, read_reference, split_by_question
from bridge.label_records import LabelRecord, Usage
from bridge.llm.base import request_key
from bridge.pool import PoolEntry

if TYPE_CHECKING:
    from bridge.judging.spec import JudgeSpec
    from bridge.llm.base import LLMBackend

LEXICAL = ("question_in_passage", "question_near_answer", "question_in_title")
LLM_FEATURE = "llm_logit"
STAGE = "answer-context"


@dataclass(frozen=True)
class AnswerContextConfig:
    reference: str | None = None
    """Labelled answer-bearing pairs (``qid<TAB>docid<TAB>label``) to fit on; a label run fits on one part and
    audits on the other (:func:`bridge.judging.reference_labels.split_by_question`)."""
    fit_share: float = 0.5
    """The share of the reference's questions the model is fitted on; the audit scores the rest."""
    seed: int = 0
    window: int = 20
    """Tokens on either side of an answer mention that count as its context."""
    regularization: float = 1.0
    """Inverse L2 strength of the logistic model (scikit-learn's C) over standardized features."""


def answer_spans(tokens: Sequence[str], answers: Sequence[str]) -> list[tuple[int, int]]:
    """Token spans where any form of any answer occurs (as the evidence gate matches them)."""
    forms = [form for answer in answers for form in answer_forms(answer)]
    return [(i, i + len(form)) for form in forms for i in occurrences(tokens, form)]


def lexical_features(case: Case, window: int = AnswerContextConfig.window) -> list[float]:
    """:data:`LEXICAL` for one pair (0 for a question without content words)."""
    question = content_words(case.query)
    if not question:
        return [0.0, 0.0, 0.0]
    tokens = normalize(case.chunk)
    title = normalize(case.chunk.split("\n", 1)[0]) if "\n" in case.chunk else ()
    near: set[str] = set()
    for start, end in answer_spans(tokens, case.evidence or case.answers):
        near.update(tokens[max(0, start - window) : end + window])
    n = len(question)
    return [len(question & set(tokens)) / n, len(question & near) / n, len(question & set(title)) / n]


def logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


@dataclass(frozen=True)
class AnswerContextModel:
    """A fitted logistic model: standardized features -> P(relevant), and the balanced decision threshold."""

    features: tuple[str, ...]
    coef: tuple[float, ...]
    intercept: float
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    threshold: float
    """P at or above which the label is 1: the share of relevant pairs fitted on."""
    fitted_on: int = 0
    positives: int = 0
    source: str = ""
    scorer: str = ""
    """The LLM scorer's config id (empty without an LLM feature)."""
    pairs: tuple[tuple[str, str], ...] = ()
    impute: tuple[float, ...] = ()
    """Feature values used where a pair's LLM score failed (the fitting pairs' means)."""

    def probability(self, x: np.ndarray) -> np.ndarray:
        z = (np.atleast_2d(x) - np.array(self.mean)) / np.array(self.scale)
        return 1.0 / (1.0 + np.exp(-(z @ np.array(self.coef) + self.intercept)))

    @property
    def identity(self) -> str:
        payload = json.dumps([self.features, self.coef, self.intercept, self.mean, self.scale, self.threshold])
        return "answer-context-" + hashlib.sha256(payload.encode()).hexdigest()[:12]

    def to_json(self) -> dict[str, Any]:
        return {"identity": self.identity, **asdict(self)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AnswerContextModel:
        fields = {k: v for k, v in data.items() if k != "identity"}
        tuples = ("features", "coef", "mean", "scale", "impute")
        fields.update({k: tuple(fields.get(k, ())) for k in tuples})
        fields["pairs"] = tuple(tuple(p) for p in fields.get("pairs", ()))
        known = {f.name for f in dataclass_fields(cls)}
        unknown, missing = sorted(set(fields) - known), sorted(known - set(fields))
        problems = []
        if unknown:
            problems.append(f"unknown field(s) {unknown}")
        if missing:
            problems.append(f"missing field(s) {missing}")
        if problems:
            raise BridgeError(
                f"calibration: the answer-context model has {'; '.join(problems)} "
                "(written by another bridge version? re-run `bridge label --restart`)"
            )
        return cls(**fields)

    def save(self, path: Path) -> None:
        write_json_atomic(path, self.to_json())


def fit_model(
    x: np.ndarray,
    truth: Sequence[int],
    features: Sequence[str],
    regularization: float,
    source: str,
    scorer: str = "",
    pairs: Sequence[tuple[str, str]] = (),
) -> AnswerContextModel:
    """Logistic regression (L2, standardized features) on labelled pairs; both classes must be present."""
    from sklearn.linear_model import LogisticRegression

    y = np.asarray(truth, dtype=int)
    if len(set(y.tolist())) < 2:
        raise BridgeError(f"the answer-context judge needs relevant and non-relevant pairs to fit on ({source})")
    mean = x.mean(axis=0)
    scale = np.where(x.std(axis=0) > 0, x.std(axis=0), 1.0)
    model = LogisticRegression(C=regularization).fit((x - mean) / scale, y)
    return AnswerContextModel(
        tuple(features),
        tuple(float(c) for c in model.coef_[0]),
        float(model.intercept_[0]),
        tuple(float(m) for m in mean),
        tuple(float(s) for s in scale),
        float(y.mean()),
        len(y),
        int(y.sum()),
        source,
        scorer,
        tuple(pairs),
        tuple(float(m) for m in mean),
    )


class AnswerContextJudge:
    """Answer-bearing pairs: the fitted answer-context model (with the LLM's P when ``scorer`` is given);
    other pairs: ``fallback``."""

    name = "answer-context"
    stage = STAGE

    def __init__(
        self,
        scorer: CalibratedJudge | None,
        fallback: Judge | None = None,
        config: AnswerContextConfig | None = None,
        model: AnswerContextModel | None = None,
    ) -> None:
        self.scorer = scorer
        self.fallback = fallback
        self.config = config or AnswerContextConfig()
        self.model = model
        self.llm = scorer.llm if scorer is not None else None

    @property
    def features(self) -> tuple[str, ...]:
        return (*LEXICAL, LLM_FEATURE) if self.scorer is not None else LEXICAL

    @property
    def config_id(self) -> str:
        payload = json.dumps(
            {
                "scorer": self.scorer.scorer_id if self.scorer else None,
                "fallback": self.fallback.config_id if self.fallback else None,
                "window": self.config.window,
                "model": self.model.identity if self.model else "unfitted",
            },
            sort_keys=True,
        )
        return "answer-context-" + hashlib.sha256(payload.encode()).hexdigest()[:12]

    # -- features and fitting -------------------------------------------------------------------------------
    def feature_rows(self, cases: Sequence[Case]) -> tuple[np.ndarray, list[Score | None]]:
        """Feature rows of ``cases`` (NaN where the LLM score failed) and their LLM scores (None without an LLM)."""
        rows = [lexical_features(c, self.config.window) for c in cases]
        scores: list[Score | None] = [None] * len(cases)
        if self.scorer is not None and cases:
            scores = list(self.scorer.scores(cases))
            for row, score in zip(rows, scores, strict=True):
                row.append(math.nan if score is None or score.raw is None else logit(score.raw))
        return np.array(rows, dtype=float).reshape(len(cases), len(self.features)), scores

    def fit(
        self, cases: Sequence[Case], truth: Sequence[int], source: str, pairs: Sequence[tuple[str, str]] = ()
    ) -> tuple[AnswerContextModel, Usage]:
        """Fit on labelled pairs, asked as pool pairs are (the evidence hint included); returns the model and the
        LLM work its features took."""
        x, scores = self.feature_rows(cases)
        usable = ~np.isnan(x).any(axis=1)
        if not usable.any():
            raise BridgeError(f"no pair of {source} got a usable LLM score: nothing to fit the answer-context judge on")
        kept = [p for p, keep in zip(pairs or [(c.qid, c.docid) for c in cases], usable, strict=True) if keep]
        scorer = self.scorer.scorer_id if self.scorer else ""
        y = np.asarray(truth)[usable]
        self.model = fit_model(x[usable], y, self.features, self.config.regularization, source, scorer, kept)
        return self.model, usage_of([r for s in scores if s is not None for r in s.responses])

    def probabilities(self, cases: Sequence[Case]) -> tuple[np.ndarray, list[Score | None]]:
        if self.model is None:
            raise BridgeError(
                "the answer-context judge is not fitted: give it labelled answer-bearing pairs (--reference)"
            )
        x, scores = self.feature_rows(cases)
        impute = np.array(self.model.impute)
        missing = np.isnan(x)
        x[missing] = np.broadcast_to(impute, x.shape)[missing]
        return self.model.probability(x), scores

    # -- the Preparable protocol --------------------------------------------------------------------------------
    def reference_parts(self) -> tuple[list[HumanPair], list[HumanPair]]:
        """The reference's fitting part and its audit part (disjoint by question)."""
        if not self.config.reference:
            raise BridgeError(
                "the answer-context judge needs labelled answer-bearing pairs to fit on: pass --reference FILE "
                "(e.g. bench/data/nq-answer-reference/labels-first.tsv)"
            )
        pairs = read_reference(Path(self.config.reference))
        return split_by_question(pairs, self.config.fit_share, self.config.seed)

    def prepare(self, preparation: Preparation) -> Prepared:
        """Fit on the reference's fitting part (none of its questions in the audit part), each pair asked as a pool
        pair with the same evidence; the fallback prepares where a pair without evidence reaches the judge."""
        lines: list[str] = []
        usage = Usage()
        if preparation.reaches_llm and preparation.reaches_answer_bearing:
            fitting, _ = self.reference_parts()
            known = set(preparation.known)
            fitting = [p for p in fitting if (p.qid, p.docid) not in known]
            cases = cases_for(preparation.dataset.whole(), [PoolEntry(p.qid, p.docid, (), 0) for p in fitting])
            seen = [(p, preparation.view(c)) for p, c in zip(fitting, cases, strict=True)]
            seen = [(p, v) for p, v in seen if v is not None and v.evidence]
            source = (
                f"{len(seen)} answer-bearing pairs of {self.config.reference} "
                f"(labelled by reading; {self.config.fit_share:.0%} of its questions, none audited)"
            )
            truth, names = [int(p.relevant) for p, _ in seen], [(p.qid, p.docid) for p, _ in seen]
            model, usage = self.fit([v for _, v in seen], truth, source, names)
            model.save(preparation.calibration_path)
            lines.append(
                f"answer-context: logistic model on {source}: {model.positives} relevant, decision P >= "
                f"{model.threshold:.3f} -> {preparation.calibration_path} ({model.identity})"
            )
        if isinstance(self.fallback, Preparable) and preparation.reaches_fallback:
            fallback_path = preparation.calibration_path.with_name("calibration-fallback.json")
            done = self.fallback.prepare(replace(preparation, calibration_path=fallback_path))
            lines += done.lines
            usage = usage + done.usage
        return Prepared(lines, usage)

    def prepared_state(self) -> dict[str, Any]:
        """The fitted model (and the fallback's state), for calibration.json."""
        state: dict[str, Any] = {"model": self.model.to_json() if self.model else None}
        if isinstance(self.fallback, Preparable):
            state["fallback"] = self.fallback.prepared_state()
        return state

    def restore(self, state: dict[str, Any]) -> None:
        """Take back a fitted model saved by :meth:`prepared_state` (calibration.json)."""
        if state.get("model") is not None:
            model = AnswerContextModel.from_json(state["model"])
            if tuple(model.features) != tuple(self.features):
                raise BridgeError(
                    f"calibration: the saved answer-context model uses features {list(model.features)}, this judge "
                    f"{list(self.features)} (another --answer-judge or model?); re-run `bridge label --restart`"
                )
            self.model = model
        if isinstance(self.fallback, Preparable) and state.get("fallback") is not None:
            self.fallback.restore(state["fallback"])

    # -- judging -------------------------------------------------------------------------------------------
    def judge(self, cases: Sequence[Case], on_record: Callable[[LabelRecord], None]) -> None:
        mine = [c for c in cases if c.evidence]
        rest = [c for c in cases if not c.evidence]
        if mine:
            config_id = self.config_id
            probabilities, scores = self.probabilities(mine)  # raises unless fitted
            model = cast(AnswerContextModel, self.model)
            for case, p, score in zip(mine, probabilities, scores, strict=True):
                details: dict[str, Any] = {"model": model.identity, "p": float(p)}
                responses = []
                if score is not None and self.scorer is not None:
                    prompt = request_key(self.scorer.llm.model_id, self.scorer.request(case))[:16]
                    details.update({"raw_score": score.raw, "score_source": score.source, "prompt": prompt})
                    responses = score.responses
                record = LabelRecord(
                    qid=case.qid,
                    docid=case.docid,
                    label=int(p >= self.model.threshold),
                    route=STAGE,
                    judge=self.name,
                    config_id=config_id,
                    model=self.llm.model_id if self.llm is not None else "",
                    details=details,
                    systems=list(case.systems),
                    min_rank=case.min_rank,
                    stage=self.stage,
                    p_yes=float(p),
                    usage=usage_of(responses),
                )
                on_record(record)
        if rest:
            if self.fallback is None:
                for case in rest:
                    on_record(self._undecided(case))
            else:
                self.fallback.judge(rest, on_record)

    def _undecided(self, case: Case) -> LabelRecord:
        return LabelRecord(
            qid=case.qid,
            docid=case.docid,
            label=None,
            route="no-answer-match",
            judge=self.name,
            config_id=self.config_id,
            model="",
            details={"reason": "the answer-context judge decides only pairs that hold an answer string"},
            systems=list(case.systems),
            min_rank=case.min_rank,
            stage=self.stage,
        )


def _fallback(spec: JudgeSpec, llm: LLMBackend | None) -> Judge | None:
    """The judge of pairs without an answer match (none without an LLM: they stay undecided)."""
    from bridge.judging.base import build_judge

    name = spec.answer_context_fallback
    return None if name is None or llm is None else build_judge(replace(spec, name=name), llm)


@register_judge("answer-context")
def make_answer_context(spec: JudgeSpec, llm: LLMBackend | None, **_: Any) -> AnswerContextJudge:
    if llm is None:
        raise BridgeError("the answer-context judge scores with an LLM: give it one (or use answer-lexical)")
    return AnswerContextJudge(CalibratedJudge(llm, spec.single), _fallback(spec, llm), spec.answer_context)


@register_judge("answer-lexical")
def make_answer_lexical(spec: JudgeSpec, llm: LLMBackend | None, **_: Any) -> AnswerContextJudge:
    return AnswerContextJudge(None, _fallback(spec, llm), spec.answer_context)
