"""The answer-context judge: whether an answer string sits in the role the question asks about.

On datasets with short answers (nq) every pair an LLM decides in the pool holds one of the question's
answer strings; most of them hold it in another role ("2017" as the year of another event, "NFL" in
any Super Bowl article). What separates the two is where the answer sits: a passage that answers
the question names the question's subject beside the answer, usually in its title. This judge is a
logistic model over

* ``question_in_passage``  the share of the question's content words the passage holds;
* ``question_near_answer`` the share within ``window`` tokens of an answer mention;
* ``question_in_title``    the share in the passage's title (its first line);
* ``llm_logit``            the logit of the LLM's one-pass P(true), asked with the evidence hint (``answer-context``:
  a stronger model served to bridge makes this feature, and the judge, stronger);
* ``reader_pmi``, ``reader_logp`` how likely a reader is to give an answer with the passage, against without it
  (``answer-reader``: :mod:`bridge.judging.llm.reader`),

fitted on labelled answer-bearing pairs: a reference file read under the written criterion (e.g.
``bench/data/nq-answer-reference/``, a random sample of nq's answer-bearing holes), which makes the fit a
calibration **on pairs like the holes** (:mod:`bridge.judging.fitting.hole_calibration`): the features above, plus
the strata the cross-validation picks from the pair's place in the pool (read from ``pairs.tsv`` beside the
reference), with bootstrap draws for the calibration's own uncertainty and its cross-fitted quality per
stratum. Every record carries the calibrated P (the mean over the draws), its features and the calibration's
name, so the hole model (:mod:`bridge.estimate.holes`) draws from the same calibration; the label is 1 when P reaches
the share of relevant pairs in the reference (the balanced decision). The fitted calibration is kept beside the
labels under a digest of everything it was fitted from (the reference, its pool facts, the features, the LLM's model
and prompt), so a later run reuses it; a fit of the same digest shipped in the reference's ``fits/`` folder is reused
the same way (a costly judge's features of the reference are a fixed cost computed once). Pairs without an answer
match go to ``fallback`` (None: undecided).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import numpy as np

from bridge.core.errors import BridgeError
from bridge.core.fsio import write_json_atomic
from bridge.core.label_records import LabelRecord, Usage
from bridge.core.layout import FALLBACK_CALIBRATION_FILE
from bridge.datasets.kinds import FACTS as KIND_FACTS
from bridge.datasets.kinds import kind_of
from bridge.encoders.precision import cpu_label
from bridge.estimate.calibration import Calibration, PairFacts, pool_candidates
from bridge.judging.base import Case, Decider, Judge, Preparable, Preparation, Prepared, cases_for, judge_record
from bridge.judging.fitting.hole_calibration import calibration_lines, fit_hole_calibration
from bridge.judging.fitting.hole_fit import Sample, kind_candidates, kind_shares, model_names
from bridge.judging.free.answer_features import LEXICAL, AnswerReader, Score, Scorer, lexical_features, logit
from bridge.judging.free.answer_fits import (
    AnswerContextConfig,
    FitSource,
    refit_plan,
    why_refit,
)
from bridge.judging.reference_labels import (
    HumanPair,
    Inclusion,
    read_reference,
    read_reference_design,
    read_reference_facts,
)
from bridge.judging.replies import Reply, usage_of
from bridge.judging.single_call import failure_route
from bridge.llm.base import LLMResponse, request_key
from bridge.pool.pooling import PoolEntry

log = logging.getLogger(__name__)


LLM_FEATURE = "llm_logit"
STAGE = "answer-context"


class AnswerContextJudge:
    """Answer-bearing pairs: the calibration fitted on the reference (with the LLM's P when ``scorer`` is given, the
    reader's signals when ``reader`` is); other pairs: ``fallback``."""

    name = "answer-context"
    stage = STAGE

    def __init__(
        self,
        scorer: Scorer | None,
        fallback: Judge | None = None,
        config: AnswerContextConfig | None = None,
        calibration: Calibration | None = None,
        name: str | None = None,
        reader: AnswerReader | None = None,
    ) -> None:
        self.scorer = scorer
        self.reader = reader
        self.fallback = fallback
        self.config = config or AnswerContextConfig()
        self.calibration = calibration
        self.name = name or (
            "answer-context" if scorer is not None else "answer-reader" if reader is not None else "answer-lexical"
        )
        self.llm = scorer.llm if scorer is not None else reader.llm if reader is not None else None
        self.impute: dict[str, float] = {}
        """Feature values used where a pair's LLM score failed (the reference pairs' mean)."""
        self.thresholds: dict[str, float] = {}
        """P at or above which a pair of each kind of hole is labelled 1: the kind's share relevant in the reference
        (the balanced decision for a calibrated P); a kind the reference lacks takes the overall share."""
        self.threshold = 0.5
        """The overall share relevant (weighted as the pool stands)."""

    @property
    def features(self) -> tuple[str, ...]:
        return (
            *LEXICAL,
            *((LLM_FEATURE,) if self.scorer is not None else ()),
            *(self.reader.names if self.reader is not None else ()),
        )

    @property
    def model_ids(self) -> dict[str, str | None]:
        """What the LLM features come from (part of the configuration and of a kept fit's digest)."""
        return {
            "scorer": self.scorer.scorer_id if self.scorer else None,
            **({"reader": self.reader.reader_id} if self.reader else {}),
        }

    @property
    def config_id(self) -> str:
        payload = json.dumps(
            {
                **self.model_ids,
                "fallback": self.fallback.config_id if self.fallback else None,
                "window": self.config.window,
                "calibration": self.calibration.name if self.calibration else "unfitted",
            },
            sort_keys=True,
        )
        return f"{self.name}-" + hashlib.sha256(payload.encode()).hexdigest()[:12]

    # -- features ---------------------------------------------------------------------------------------------
    def feature_rows(self, cases: Sequence[Case]) -> tuple[np.ndarray, list[Score | None], list[list[LLMResponse]]]:
        """Feature rows of ``cases`` (NaN where an LLM's signal failed), their LLM scores (None without a scorer)
        and the reader's responses of each case."""
        rows = [lexical_features(c, self.config.window) for c in cases]
        scores: list[Score | None] = [None] * len(cases)
        read: list[list[LLMResponse]] = [[] for _ in cases]
        if self.scorer is not None and cases:
            scores = list(self.scorer.scores(cases))
            for row, score in zip(rows, scores, strict=True):
                row.append(math.nan if score is None or score.raw is None else logit(score.raw))
        if self.reader is not None and cases:
            signals, read = self.reader.features(cases)
            for row, signal in zip(rows, signals, strict=True):
                row.extend(float(v) for v in signal)
        return np.array(rows, dtype=float).reshape(len(cases), len(self.features)), scores, read

    def _facts(self, case: Case, x: np.ndarray) -> PairFacts:
        extra = {**dict(case.kind), **dict(zip(self.features, x, strict=True))}
        return PairFacts(systems=tuple(case.systems), min_rank=case.min_rank, extra=extra)

    def probabilities(
        self, cases: Sequence[Case]
    ) -> tuple[np.ndarray, np.ndarray, list[Score | None], list[list[LLMResponse]], np.ndarray]:
        """Calibrated P of each pair (mean over the calibration's draws), its feature rows, LLM scores, the
        reader's responses, and which features were missing because a model signal failed (such a pair's P stands
        on imputed values and is never used as a label: see :meth:`judge`)."""
        if self.calibration is None:
            raise BridgeError(
                "the answer-context judge is not fitted: give it labelled answer-bearing pairs (--reference)"
            )
        x, scores, read = self.feature_rows(cases)
        missing = np.isnan(x)
        for j, name in enumerate(self.features):
            x[np.isnan(x[:, j]), j] = self.impute.get(name, 0.0)
        facts = [self._facts(c, row) for c, row in zip(cases, x, strict=True)]
        return self.calibration.mean(self.calibration.rows(facts)), x, scores, read, missing

    # -- the Preparable protocol --------------------------------------------------------------------------------
    def reference_pairs(self) -> tuple[list[HumanPair], dict[tuple[str, str], PoolEntry]]:
        """The reference's labelled pairs and, from ``pairs.tsv`` beside it, the pool facts each was drawn with (its
        sampling design, ``design.tsv``, is read by :meth:`design`)."""
        if not self.config.reference:
            raise BridgeError(
                "the answer-context judge needs labelled answer-bearing pairs to fit on: pass --reference FILE "
                "(e.g. bench/data/nq-answer-reference/labels-first.tsv)"
            )
        path = Path(self.config.reference)
        return read_reference(path), read_reference_facts(path)

    def design(self) -> dict[tuple[str, str], Inclusion]:
        """The reference's sampling design (empty: a simple random sample)."""
        return read_reference_design(Path(self.config.reference)) if self.config.reference else {}

    def _digest(
        self,
        pairs: Sequence[HumanPair],
        facts: Mapping[tuple[str, str], PoolEntry],
        design: Mapping[tuple[str, str], Inclusion] | None = None,
    ) -> str:
        return FitSource(pairs, facts, design or {}, self.features, self.model_ids, self.config).digest()

    def fit_inputs(
        self,
        pairs: Sequence[HumanPair],
        facts: Mapping[tuple[str, str], PoolEntry],
        design: Mapping[tuple[str, str], Inclusion] | None = None,
    ) -> dict[str, Any]:
        """What a kept fit was made from (:meth:`~bridge.judging.free.answer_fits.FitSource.inputs`)."""
        model = self.llm.model_id if self.llm is not None else None
        return FitSource(pairs, facts, design or {}, self.features, self.model_ids, self.config).inputs(model)

    def _read_reference(self, cases: Sequence[Case]) -> tuple[np.ndarray, list[Score | None], list[list[LLMResponse]]]:
        """:meth:`feature_rows` of the reference in tenths, each logged with the time so far and the time left (a
        refit reads for many minutes; silent under -q, as every log line)."""
        if self.llm is None or len(cases) < 20:
            return self.feature_rows(cases)
        step, started = math.ceil(len(cases) / 10), time.perf_counter()
        x, scores, read = [], [], []
        for start in range(0, len(cases), step):
            part = self.feature_rows(cases[start : start + step])
            x.append(part[0])
            scores += part[1]
            read += part[2]
            done, spent = min(start + step, len(cases)), time.perf_counter() - started
            log.info("%s: read %d of %d reference pairs in %.1f min; about %.1f min left", self.name, done, len(cases),
                     spent / 60, spent / done * (len(cases) - done) / 60)  # fmt: skip
        return np.vstack(x), scores, read

    def prepare(self, preparation: Preparation) -> Prepared:
        """Fit the calibration on every reference pair that holds an answer (each asked as a pool pair, with the
        same evidence), unless a fit from the same inputs is kept beside the labels or shipped in the reference's
        ``fits/`` folder; the fallback prepares where a pair without evidence reaches the judge."""
        lines: list[str] = []
        usage = Usage()
        if preparation.reaches_llm and preparation.reaches_answer_bearing:
            pairs, facts = self.reference_pairs()
            known = set(preparation.known)
            pairs = [p for p in pairs if (p.qid, p.docid) not in known]
            cases = cases_for(
                preparation.dataset.whole(),
                [facts.get((p.qid, p.docid), PoolEntry(p.qid, p.docid, (), 0)) for p in pairs],
            )
            seen = [(p, preparation.view(c)) for p, c in zip(pairs, cases, strict=True)]
            seen = [(p, v) for p, v in seen if v is not None and v.evidence]
            design = self.design()
            fit_name = f"{self.name}-fit-{self._digest(pairs, facts, design)}.json"
            kept = preparation.calibration_path.with_name(fit_name)
            shipped = Path(cast(str, self.config.reference)).parent / "fits" / fit_name
            found = next((path for path in (kept, shipped) if path.exists()), None)
            if found is not None:  # a fixed cost paid once: the fit (features, calibration) is reused without a call
                self.restore(json.loads(found.read_text(encoding="utf-8")))
                lines.append(f"{self.name}: calibration on the reference reused from {found}")
            else:
                why = why_refit(self.name, shipped.parent, self.fit_inputs(pairs, facts, design))
                lines.append(f"{self.name}: fitting on the reference ({len(seen)} pairs; {why})")
                if self.llm is not None:
                    reads, scores = self.reader is not None, self.scorer is not None
                    plan = refit_plan(self.name, [v for _, v in seen], shipped.parent, reads, scores)
                    log.info("%s: %s; %s", self.name, why, plan)
                started = time.perf_counter()
                x, scores, read = self._read_reference([v for _, v in seen])
                called = [r for s in scores if s is not None for r in s.responses] + [r for rs in read for r in rs]
                usage = usage_of(called)
                self.calibration = self._fit(seen, x, facts, design=design)
                state = {k: v for k, v in self.prepared_state().items() if k != "fallback"}
                cost = {"pairs": len(seen), "calls": usage.calls, "seconds": round(time.perf_counter() - started, 1),
                        "cpu": cpu_label()}  # fmt: skip
                write_json_atomic(kept, {**state, "inputs": self.fit_inputs(pairs, facts, design), "cost": cost})
                lines.append(f"{self.name}: calibration fitted on the reference -> {kept}")
            lines += calibration_lines(self.calibration)
            write_json_atomic(preparation.calibration_path, self.prepared_state())
        if isinstance(self.fallback, Preparable) and preparation.reaches_fallback:
            fallback_path = preparation.calibration_path.with_name(FALLBACK_CALIBRATION_FILE)
            done = self.fallback.prepare(replace(preparation, calibration_path=fallback_path))
            lines += done.lines
            usage = usage + done.usage
        return Prepared(lines, usage)

    def fit(
        self,
        cases: Sequence[Case],
        truth: Sequence[int],
        source: str,
        design: Mapping[tuple[str, str], Inclusion] | None = None,
    ) -> Calibration:
        """Calibrate on labelled pairs given directly (judge-eval's cross-fitting), asked as pool pairs are;
        ``design``: their kinds and inclusion probabilities where they are a stratified sample."""
        x, _, _ = self.feature_rows(cases)
        pairs = [HumanPair(c.qid, c.docid, bool(t)) for c, t in zip(cases, truth, strict=True)]
        facts = {(c.qid, c.docid): PoolEntry(c.qid, c.docid, tuple(c.systems), c.min_rank or 0) for c in cases}
        self.calibration = self._fit(list(zip(pairs, cases, strict=True)), x, facts, source, design)
        return self.calibration

    def _fit(
        self,
        seen: Sequence[tuple[HumanPair, Case]],
        x: np.ndarray,
        facts: Mapping[tuple[str, str], PoolEntry],
        source: str | None = None,
        design: Mapping[tuple[str, str], Inclusion] | None = None,
    ) -> Calibration:
        """The calibration on labelled answer-bearing pairs: the judge's features, the strata and kinds the
        cross-validation picks, each pair weighted by its design weight (1 / its inclusion probability)."""
        if len({int(p.relevant) for p, _ in seen}) < 2:
            raise BridgeError(f"the {self.name} judge needs relevant and non-relevant reference pairs to fit on")
        design = design or {}
        kinds = [kind_of(dict(v.kind)) for _, v in seen]
        weights = np.ones(len(seen))
        if design:
            for i, ((p, _), kind) in enumerate(zip(seen, kinds, strict=True)):
                inclusion = design.get((p.qid, p.docid))
                if inclusion is None:
                    raise BridgeError(f"reference pair ({p.qid}, {p.docid}) is missing from its sampling design")
                if inclusion.kind != kind:
                    raise BridgeError(
                        f"reference pair ({p.qid}, {p.docid}) was drawn as kind {inclusion.kind!r}, but the dataset "
                        f"makes it {kind!r}: the design and the data folder disagree"
                    )
                weights[i] = 1.0 / inclusion.probability
        w = weights / weights.mean()
        self.impute = {n: float(np.average(x[~np.isnan(x[:, j]), j], weights=w[~np.isnan(x[:, j])]))
                       if np.any(~np.isnan(x[:, j])) else 0.0 for j, n in enumerate(self.features)}  # fmt: skip
        truth = [float(p.relevant) for p, _ in seen]
        self.threshold = float(np.average(truth, weights=w))
        self.thresholds = kind_shares(kinds, truth, w)
        for j, name in enumerate(self.features):
            x[np.isnan(x[:, j]), j] = self.impute[name]
        systems = sorted({s for e in facts.values() for s in e.systems})
        present = [f for f in KIND_FACTS if any(f in dict(v.kind) for _, v in seen)]
        candidates = (*(pool_candidates(systems) if systems else ()), *kind_candidates(present, self.features))
        pair_facts = [self._facts(v, row) for (_, v), row in zip(seen, x, strict=True)]
        names = model_names(self.features, candidates)
        rows = [{n: f.value(n) for n in names} for f in pair_facts]
        sample = Sample(rows, np.array([float(p.relevant) for p, _ in seen]), [p.qid for p, _ in seen], weights, kinds)
        drawn = (
            "a sample of the pool's answer-bearing holes drawn at random within each kind, weighted as the pool stands"
            if design
            else "a random sample of the pool's answer-bearing holes"
        )
        population = (
            source
            or f"{len(seen)} answer-bearing pairs of {self.config.reference} ({drawn}, labelled by reading: the "
            "maintainers' reading, not a crowd's)"
        ) + (f"; pooled by {', '.join(systems)}" if systems else "")
        report = tuple(r for r in self.config.report_strata if r in candidates)
        fitted = fit_hole_calibration(
            f"{self.name}-{self._digest([p for p, _ in seen], facts, design)[:8]}",
            sample,
            self.features,
            candidates,
            population,
            self.config.calibration,
            report,
        )
        return fitted.calibration

    def prepared_state(self) -> dict[str, Any]:
        """The fitted calibration (and the fallback's state), for calibration.json and a Ray worker."""
        state: dict[str, Any] = {
            "calibration": self.calibration.to_json() if self.calibration else None,
            "impute": self.impute,
            "threshold": self.threshold,
            "thresholds": self.thresholds,
        }
        if isinstance(self.fallback, Preparable):
            state["fallback"] = self.fallback.prepared_state()
        return state

    def restore(self, state: dict[str, Any]) -> None:
        """Take back a fitted calibration saved by :meth:`prepared_state`."""
        if state.get("calibration") is not None:
            calibration = Calibration.from_json(state["calibration"])
            missing = [f for f in self.features if f not in calibration.features]
            if missing:
                raise BridgeError(
                    f"calibration: the saved {calibration.name} lacks features {missing} of this judge (another "
                    "--answer-judge or model?); re-run `bridge label`"
                )
            self.calibration = calibration
            self.impute = dict(state.get("impute") or {})
            self.threshold = float(state.get("threshold", 0.5))
            self.thresholds = {str(k): float(v) for k, v in (state.get("thresholds") or {}).items()}
        if isinstance(self.fallback, Preparable) and state.get("fallback") is not None:
            self.fallback.restore(state["fallback"])

    def calibrations(self) -> list[Calibration]:
        """What the hole model draws this judge's P from (:data:`bridge.core.layout.HOLE_CALIBRATIONS_FILE`)."""
        return [self.calibration] if self.calibration is not None else []

    # -- judging -------------------------------------------------------------------------------------------
    def judge(self, cases: Sequence[Case], on_record: Callable[[LabelRecord], None]) -> None:
        mine = [c for c in cases if c.evidence]
        rest = [c for c in cases if not c.evidence]
        if mine:
            probabilities, x, scores, read, missing = self.probabilities(mine)  # raises unless fitted
            calibration = cast(Calibration, self.calibration)
            for case, p, row, score, reads, gaps in zip(mine, probabilities, x, scores, read, missing, strict=True):
                details: dict[str, Any] = {
                    "calibration": calibration.name,
                    "features": {
                        **dict(case.kind),
                        **{n: round(float(v), 6) for n, v in zip(self.features, row, strict=True)},
                    },
                    "kind": kind_of(dict(case.kind)),
                    "p": float(p),
                }
                responses = list(reads)
                if self.reader is not None:
                    details.update(self.reader.cuts.get((case.qid, case.docid), {}))
                if score is not None and self.scorer is not None:
                    prompt = request_key(self.scorer.llm.model_id, self.scorer.request(case))[:16]
                    details.update({"raw_score": score.raw, "score_source": score.source, "prompt": prompt})
                    details.update(self.scorer.fitted(case).details())
                    responses += score.responses
                if gaps.any():
                    lost = [n for n, gap in zip(self.features, gaps, strict=True) if gap]
                    on_record(self._failed(case, details, lost, responses, score))
                    continue
                label = int(p >= self.thresholds.get(details["kind"], self.threshold))
                on_record(self._record(case, label, STAGE, details, responses, float(p)))
        if rest:
            if self.fallback is None:
                for case in rest:
                    on_record(self._undecided(case))
            else:
                self.fallback.judge(rest, on_record)

    def _failed(
        self, case: Case, details: dict[str, Any], lost: list[str], responses: list[LLMResponse], score: Score | None
    ) -> LabelRecord:
        """The record of a pair whose model signal failed (``lost``: the features it lacks): a reply that did not
        parse, a reader call without log-probabilities, a prompt too long for the context. It stays open (label and
        P null, no calibration named) on a failure route, so the estimate gives it the prior; imputing the feature
        would have made a normal label of a failure."""
        error = score.reply.get("error") if score is not None else None
        route = failure_route(Reply(None, responses, error))
        read = {n: v for n, v in details["features"].items() if n not in lost}
        kept = {k: v for k, v in details.items() if k not in ("calibration", "p", "features")}  # not drawn from it
        failed = {**kept, "features": read, "failed_features": lost, "error": error}
        return self._record(case, None, route, failed, responses)

    def _undecided(self, case: Case) -> LabelRecord:
        reason = {"reason": "the answer-context judge decides only pairs that hold an answer string"}
        return self._record(case, None, "no-answer-match", reason, model="")

    def _record(
        self,
        case: Case,
        label: int | None,
        route: str,
        details: dict[str, Any],
        responses: Sequence[LLMResponse] = (),
        p_yes: float | None = None,
        model: str | None = None,
    ) -> LabelRecord:
        """The judge's record of a pair (``model``: default the LLM's id, if it has one)."""
        if model is None:
            model = self.llm.model_id if self.llm is not None else ""
        by = Decider(self.name, self.config_id, model, self.stage)
        return judge_record(case, label, route, by, details, p_yes, usage_of(responses))
