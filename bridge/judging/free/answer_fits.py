"""The answer judges' fits: what a fit is made from (:class:`AnswerContextConfig`), the version of the fitting procedure
a kept fit must match, and what a run says when no shipped fit is reused (which of its inputs differ, what the refit
will cost).

A fit on the reference is a fixed cost paid once: it is kept beside the labels, or shipped in the reference's
``fits/`` folder, under a digest of everything it was fitted from (:mod:`bridge.judging.free.answer_context`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bridge.judging.base import Case, Judge, JudgeContext, JudgeSpec
from bridge.judging.fitting.hole_fit import HoleCalibrationConfig
from bridge.judging.free.answer_features import WINDOW
from bridge.judging.reference_labels import HumanPair, Inclusion
from bridge.judging.settings import option
from bridge.judging.single_call import SingleCallConfig
from bridge.pool.pooling import PoolEntry

CALIBRATION_VERSION = 5
"""Bumped when the fitting procedure changes, so a kept fit is not reused across it."""


def why_refit(name: str, shipped_folder: Path, inputs: Mapping[str, Any]) -> str:
    """Why no shipped fit of the judge ``name`` is reused: the inputs in which the nearest one differs."""
    differences = []
    for path in sorted(shipped_folder.glob(f"{name}-fit-*.json")):
        kept = json.loads(path.read_text(encoding="utf-8")).get("inputs")
        if not kept:
            differences.append(f"{path.name} predates this version of the fit")
            continue
        changed = [f"{k} {kept.get(k)!r} there, {v!r} here" for k, v in inputs.items() if kept.get(k) != v]
        differences.append(f"{path.name}: " + ("; ".join(changed) or "inputs the digest covers differ"))
    if not differences:
        return f"no fit of {name} is shipped in {shipped_folder}"
    return "no shipped fit matches (" + " | ".join(differences) + ")"


def refit_plan(name: str, cases: Sequence[Case], shipped_folder: Path, reads: bool, scores: bool) -> str:
    """What a refit on the reference will cost, said before it starts: the model calls (``reads``: a reader's per pair
    and per question; ``scores``: a one-pass score's per pair), and the time a shipped fit of the judge ``name`` took
    (the fit files record it)."""
    questions = len({c.qid for c in cases})
    calls = (len(cases) + questions if reads else 0) + (len(cases) if scores else 0)
    plan = f"reading {len(cases)} reference pairs: about {calls} model calls (a fixed cost, kept for later runs)"
    for path in sorted(shipped_folder.glob(f"{name}-fit-*.json")):
        cost = json.loads(path.read_text(encoding="utf-8")).get("cost")
        if isinstance(cost, dict) and cost.get("pairs"):
            minutes = cost["seconds"] / cost["pairs"] * len(cases) / 60
            plan += f"; about {minutes:.0f} min at the pace of the shipped fit ({cost['seconds']:.0f} s for "
            plan += f"{cost['pairs']} pairs on {cost.get('cpu', 'another CPU')})"
            break
    return plan


@dataclass(frozen=True)
class AnswerContextConfig:
    reference: str | None = option(
        None,
        "--reference",
        "labelled answer-bearing pairs (qid<TAB>docid<TAB>label, read under a written criterion; a random "
        "sample of the pool's answer-bearing holes, with their pool facts in pairs.tsv beside it), e.g. "
        "bench/data/nq-answer-reference/labels-first.tsv: the answer judge is calibrated on them (strata chosen by "
        "cross-validation, bootstrap draws) and its quality measured cross-fitted by question",
        metavar="FILE",
    )
    """Labelled answer-bearing pairs (``qid<TAB>docid<TAB>label``) to fit on; a label run fits on one part and
    calibrates on all of them: they are a random sample of the holes
    (:mod:`bridge.judging.fitting.hole_calibration`)."""
    seed: int = 0
    window: int = WINDOW
    """Tokens on either side of an answer mention that count as its context."""
    calibration: HoleCalibrationConfig = field(default_factory=HoleCalibrationConfig)
    """How the calibration on the reference is fitted, its strata chosen and its quality measured."""
    report_strata: tuple[str, ...] = ("pooled_by:bm25s",)
    """Strata whose quality is shown even when the cross-validation does not choose them."""


@dataclass(frozen=True)
class FitSource:
    """Everything an answer judge's fit on the reference is made from: the reference's pairs, their pool facts and
    sampling design, the features and the models behind them, the settings (and the procedure's version)."""

    pairs: Sequence[HumanPair]
    facts: Mapping[tuple[str, str], PoolEntry]
    design: Mapping[tuple[str, str], Inclusion]
    features: Sequence[str]
    model_ids: Mapping[str, str | None]
    config: AnswerContextConfig

    def _reference(self) -> tuple[list, list, list]:
        """The reference's labels, pool facts and design as plain lists (sorted where their order is not the file's)."""
        return (
            [[p.qid, p.docid, int(p.relevant)] for p in self.pairs],
            sorted([q, d, list(e.systems), e.min_rank] for (q, d), e in self.facts.items()),
            sorted([q, d, i.kind, i.probability] for (q, d), i in self.design.items()),
        )

    def digest(self) -> str:
        """The digest a fit is kept under."""
        labels, facts, design = self._reference()
        payload = {"pairs": labels, "facts": facts, "design": design, "features": self.features, **self.model_ids}
        payload |= {"window": self.config.window, "calibration": asdict(self.config.calibration)}
        payload |= {"report": self.config.report_strata, "version": CALIBRATION_VERSION}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]

    def inputs(self, model: str | None) -> dict[str, Any]:
        """What a kept fit was made from, in words a user can compare (saved in the fit file beside its digest; the
        reference's parts by a short digest each); ``model`` the LLM's id."""

        def short(value: Any) -> str:
            return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:8]

        labels, facts, design = self._reference()
        return {
            "model": model,
            **self.model_ids,
            "features": list(self.features),
            "reference pairs": len(self.pairs),
            "labels": short(labels),
            "pool facts": short(facts),
            "design": short(design),
            "calibration settings": short([asdict(self.config.calibration), self.config.report_strata]),
            "window": self.config.window,
            "version": CALIBRATION_VERSION,
        }


@dataclass(frozen=True)
class AnswerJudgeConfig:
    """The answer judges' config: the reference they are calibrated on and the answer window; answer-context's
    one-pass score."""

    context: AnswerContextConfig = field(default_factory=AnswerContextConfig)
    single: SingleCallConfig = field(default_factory=SingleCallConfig)


def fallback_judge(spec: JudgeSpec, context: JudgeContext) -> Judge | None:
    """The judge of pairs without an answer match (none without an LLM: they stay undecided)."""
    from bridge.judging.base import build_judge

    return None if spec.fallback is None or context.llm is None else build_judge(spec.fallback, context)
