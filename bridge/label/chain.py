"""The judge chain of a label run, built from one frozen, typed :class:`ChainSpec`.

A pool pair is decided by the first stage that can decide it with measured confidence: answer
evidence (answer-free pairs are 0 without a call), topic adapters (a classifier per topic learned
from its own human judgments), then the judge of :class:`~bridge.judging.JudgeSpec` (by default
the cascade: one calibrated LLM pass, the DREAM debate for the uncertain band, people for debate
disagreements). The command line, reusability, LARF, judge-eval and Ray workers all describe a chain
with a :class:`ChainSpec`; judges prepare themselves (calibration, hold-outs) through the
:class:`~bridge.judging.Preparable` protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from bridge.core.layout import Workspace
from bridge.core.trec import Qrels
from bridge.datasets import Dataset
from bridge.encoders.embeddings import PassageEmbeddings
from bridge.judging import (
    Case,
    Judge,
    JudgeContext,
    JudgeSpec,
    Preparable,
    Preparation,
    Prepared,
    build_judge,
    cases_for,
    default_judge,
    judge_names,
    judge_traits,
)
from bridge.judging.free.answer_fits import AnswerJudgeConfig
from bridge.judging.free.evidence import EvidenceConfig, EvidenceStage
from bridge.judging.learned.adapter import TopicAdapterJudge
from bridge.judging.learned.exemplar import ExemplarFit, ExemplarJudge, shipped_fit_path
from bridge.judging.learned.topic_models import AdapterConfig
from bridge.judging.llm.cascade import ScoreRunner
from bridge.judging.llm.single import PrefilteredJudge, SupportJudge
from bridge.judging.quality.audit import AuditConfig
from bridge.llm import LLMConfig, open_llm
from bridge.pool.pooling import PoolEntry

# Queries of the judge registry, asked when needed (a judge registered later, a test's, is among them).


def fallback_judges() -> tuple[str, ...]:
    """Judges of any pair (a label run's judge, or an answer judge's fallback)."""
    return judge_names(answer_bearing=False, selectable=True)


def answer_fallback() -> str:
    """The judge of the pairs an answer judge leaves (no answer match) unless a command names another: the default
    judge."""
    return default_judge()


def judge_reference(spec: JudgeSpec | None) -> str | None:
    """The labelled answer-bearing pairs an answer judge is calibrated on (None: not an answer judge, or none)."""
    return spec.config.context.reference if spec is not None and isinstance(spec.config, AnswerJudgeConfig) else None


def answer_judges() -> tuple[str, ...]:
    """Judges of answer-bearing pairs (with a fallback judge for the others)."""
    return judge_names(answer_bearing=True)


def costly_answer_judges() -> tuple[str, ...]:
    """Answer judges that call the LLM: answer-context for its one-pass P, answer-reader for the reader's signals."""
    return judge_names(answer_bearing=True, calls_llm=True)


def refine_judges() -> tuple[str, ...]:
    """Costly judges that re-judge, in value order, what a free stage gave a P (``--refine``): the answer judges (on
    the answer-bearing pairs, calibrated on ``--reference``) and the exemplar judge's LLM comparison (on the pairs of
    topics with a known relevant passage, calibrated on a shipped fit)."""
    return tuple(sorted(judge_names(refines=True), key=lambda n: not judge_traits(n).answer_bearing))


@dataclass(frozen=True)
class ChainSpec:
    """Everything a label run's judge chain is built from (picklable: a Ray worker rebuilds the same chain)."""

    judge: JudgeSpec = field(default_factory=JudgeSpec)
    """The judge of the pairs no earlier stage decides (its band and calibration settings included)."""
    adapters: Literal["auto", "always", "off"] = "auto"
    """Topic adapters in front of the judge: where a topic has enough human judgments (auto), even where none
    has (always), or never (off)."""
    adapter: AdapterConfig = field(default_factory=AdapterConfig)
    exemplar: Literal["auto", "on", "off"] = "auto"
    """The exemplar judge between the adapters and the judge: each hole of a topic with a known relevant passage gets
    a calibrated P from its likeness to it (:mod:`bridge.judging.learned.exemplar`). auto = on for datasets without
    answers (on nq the answer judges decide the answer-bearing holes); on = wherever a topic has one."""
    exemplar_fit: Path | None = None
    """The exemplar calibration (None: the shipped fit, ``bridge/data/exemplar-fit.json``)."""
    evidence: Literal["auto", "gate", "hint", "off"] = "auto"
    """Answer evidence: auto = gate where the dataset has answers, else off."""
    prefilter: tuple[str, ...] = ()
    """1-3 models (same backend) whose one-shot votes discard a pair only when all say no."""
    audit: AuditConfig = field(default_factory=AuditConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)
    cache_dir: Path = Path("cache")
    """Topic models, encodings and the LLM response cache."""
    progress: bool = True
    max_minutes: float | None = None
    """The run's budget for its costly judge, handed to every judge's context (a Ray worker's too)."""

    @property
    def calls_llm(self) -> bool:
        """Whether a judge of this chain asks the LLM (the judge, an answer judge's fallback, the prefilter)."""
        return self.judge.calls_llm() or bool(self.prefilter)

    def within_budget(self, max_minutes: float | None) -> ChainSpec:
        """The chain a budget runs: a zero budget leaves a judge that asks an LLM out altogether (not loaded, fitted
        or audited), the open judge in its place, so the free stages decide what they can and every other pair keeps
        the estimate's prior P."""
        if max_minutes == 0 and judge_traits(self.judge.name).calls_llm:
            return replace(self, judge=JudgeSpec(judge_names(leaves_open=True)[0]))
        return self


def evidence_mode(choice: str, has_answers: bool) -> str:
    """``auto`` -> gate where the dataset has answers, else off."""
    if choice == "auto":
        return "gate" if has_answers else "off"
    return choice


@dataclass(frozen=True)
class JudgeChain:
    """The judges of a label run, cheapest first: answer evidence, then topic adapters, then ``judge``.
    ``pipeline`` decides pool pairs; ``llm`` is ``judge`` as the audit's LLM-only lane and the gate audit
    run it: where the pipeline has an evidence stage, ``llm`` sits behind the same evidence stage in
    ``hint`` mode, so every pair reaches the LLM exactly as a pool pair with the same evidence does (same
    prompt, same hint); only the gate and the adapters are bypassed."""

    pipeline: Judge
    llm: Judge
    judge: Judge
    evidence: EvidenceStage | None = None
    adapter: TopicAdapterJudge | None = None
    exemplar: ExemplarJudge | None = None

    @classmethod
    def of(
        cls,
        judge: Judge,
        evidence: EvidenceConfig | None = None,
        adapter: TopicAdapterJudge | None = None,
        exemplar: ExemplarJudge | None = None,
    ) -> JudgeChain:
        """``exemplar`` (whose next judge is ``judge``) goes in front of the judge, ``adapter`` (whose fallback is
        the exemplar stage, else ``judge``) in front of that, the evidence stage in front of all."""
        inner: Judge = adapter if adapter is not None else exemplar if exemplar is not None else judge
        free = adapter is None and exemplar is None
        if evidence is None or evidence.mode == "off":
            return cls(inner, judge, judge, None, adapter, exemplar)
        stage = EvidenceStage(inner, evidence)
        if evidence.mode == "hint" and free:
            return cls(stage, stage, judge, stage, adapter, exemplar)
        return cls(stage, EvidenceStage(judge, EvidenceConfig("hint")), judge, stage, adapter, exemplar)

    def state(self) -> dict[str, Any]:
        """What the preparation settled, to rebuild an identical chain elsewhere (a Ray worker)."""
        return self.pipeline.prepared_state() if isinstance(self.pipeline, Preparable) else {}

    def restore(self, state: dict[str, Any]) -> None:
        """Take over another chain's prepared state (no call, no training)."""
        if isinstance(self.pipeline, Preparable):
            self.pipeline.restore(state)

    def llm_case(self, case: Case) -> Case | None:
        """The pair as the LLM judge sees it in this chain (with the evidence hint), or None when the evidence
        gate decides it without the LLM (adapters aside)."""
        matched = self.evidence.matches(case) if self.evidence is not None else None
        if self.evidence is not None and matched is not None and not matched and self.evidence.config.mode == "gate":
            return None
        return replace(case, evidence=matched) if matched else case

    def llm_view(self, case: Case) -> Case | None:
        """The pair as the pipeline hands it to the LLM judge, or None when an earlier stage decides it."""
        if self.adapter is not None and self.adapter.route(case.qid).judge == "adapter":
            return None
        if self.exemplar is not None and self.exemplar.decides(case.qid, case.docid):
            return None
        return self.llm_case(case)

    def prepare(
        self, dataset: Dataset, known: Sequence[tuple[str, str]], pool: Sequence[Case], calibration_path: Path
    ) -> Prepared:
        """What a run settles before it knows which pairs it will judge: each stage prepares itself (the
        adapters hold out the audit's pairs; a cascade that will see any pair calibrates on other known pairs,
        asked as the LLM sees a pool pair)."""
        if not isinstance(self.pipeline, Preparable):
            return Prepared()
        audit_cases = cases_for(dataset.whole(), [PoolEntry(q, d, (), 0) for q, d in known])
        views = [v for v in (self.llm_view(c) for c in [*pool, *audit_cases]) if v is not None]
        pool_pairs = [(c.qid, c.docid) for c in pool]
        preparation = Preparation(
            dataset,
            list(known),
            pool_pairs,
            self.llm_case,
            calibration_path,
            reaches_llm=bool(views),
            reaches_answer_bearing=any(v.evidence for v in views),
            reaches_fallback=any(not v.evidence for v in views),
        )
        return self.pipeline.prepare(preparation)

    def score_pass(
        self,
        to_judge: Sequence[Case],
        scores: ScoreRunner | None = None,
        batch_pairs: int = 64,
        deadline: float | None = None,
        progress: bool = False,
    ) -> Prepared:
        """The judge's scoring pass (the cascade's one-pass scores and band) over the pairs of ``to_judge`` that
        reach it; nothing for judges without one."""
        if not hasattr(self.judge, "score_pass"):
            return Prepared()
        to_llm = [v for v in (self.llm_view(c) for c in to_judge) if v is not None]
        return self.judge.score_pass(to_llm, scores, batch_pairs, deadline, progress)  # type: ignore[attr-defined]


def build_chain(
    spec: ChainSpec,
    dataset: Dataset,
    default_qrels: Qrels | None = None,
    llm: Any = None,
) -> tuple[JudgeChain, str, Any]:
    """The chain ``spec`` describes for ``dataset``, a line saying what was chosen and why, and the LLM (None
    where no judge calls one). ``default_qrels``: what the qrels judge answers from without a file (the
    dataset's own qrels); ``llm``: an LLM already opened by an earlier chain, to reuse."""
    name, needs_llm = spec.judge.name, spec.calls_llm
    cache = Workspace(cache_dir=spec.cache_dir).llm_cache
    if needs_llm and llm is None:
        llm = open_llm(spec.llm, cache, progress=spec.progress)
    context = JudgeContext(
        dataset, default_qrels, llm if needs_llm else None, spec.cache_dir, spec.progress, spec.max_minutes
    )
    judge = build_judge(spec.judge, context)
    if spec.prefilter:
        voters = [SupportJudge(open_llm(replace(spec.llm, model=m), cache)) for m in spec.prefilter]
        judge = PrefilteredJudge(voters, judge)
    stages: dict[str, Judge] = {}
    said: list[str] = []
    inner = judge
    for stage_name, build in FRONT_STAGES:
        choice = build(spec, dataset, inner, name)
        if choice.stage is not None:
            stages[stage_name] = inner = choice.stage
        said.append(choice.said)
    mode = evidence_mode(spec.evidence, dataset.has_answers)
    chain = JudgeChain.of(judge, EvidenceConfig(mode), stages.get("adapter"), stages.get("exemplar"))  # type: ignore[arg-type]
    why = "; ".join(s for s in reversed(said) if s)
    return chain, f"{why}; evidence {mode}", llm


@dataclass(frozen=True)
class StageChoice:
    """A stage in front of the chain's judge as built for a dataset: the stage (None where the spec or the data leave
    it out), and what the chain's first line says of it."""

    stage: Judge | None
    said: str = ""


def _exemplar_choice(spec: ChainSpec, dataset: Dataset, inner: Judge, name: str) -> StageChoice:
    exemplar = exemplar_stage(spec, dataset, inner)
    if exemplar is None:
        return StageChoice(None)
    return StageChoice(
        exemplar,
        f"exemplar judge: {len(exemplar.topics())} of {len(dataset.qids)} topics have a known relevant passage "
        f"(calibration {exemplar.calibration.name}), the others go to {name}",
    )


def _adapter_choice(spec: ChainSpec, dataset: Dataset, inner: Judge, name: str) -> StageChoice:
    if spec.adapters == "off":
        return StageChoice(None, f"judge {name}")
    candidate = TopicAdapterJudge(dataset, inner, spec.adapter, spec.cache_dir, progress=spec.progress)
    qualified = [q for q in dataset.qids if candidate.qualifies(q)[0]]
    minimum = spec.adapter.min_judgments
    if qualified or spec.adapters == "always":
        return StageChoice(
            candidate,
            f"judge adapter ({spec.adapter.family}): {len(qualified)} of {len(dataset.qids)} topics have "
            f">= {minimum} human judgments of both classes to learn from; the others go to {name}",
        )
    return StageChoice(
        None,
        f"judge {name}: no topic has >= {minimum} human judgments of both classes, so topic adapters cannot be trained",
    )


FRONT_STAGES: tuple[tuple[str, Callable[[ChainSpec, Dataset, Judge, str], StageChoice]], ...] = (
    ("exemplar", _exemplar_choice),
    ("adapter", _adapter_choice),
)
"""The label chain's stages in front of its judge, from the judge outwards: each is built over the stage behind it
(the judge where none is) and hands it the pairs it cannot decide; the evidence stage stands in front of them all
(:meth:`JudgeChain.of`). A pair is decided by the first stage that can."""


def exemplar_wanted(spec: ChainSpec, dataset: Dataset) -> bool:
    """``--exemplar on``, or ``auto`` on a dataset without answers (nq's answer judges decide its holes)."""
    return spec.exemplar == "on" or (spec.exemplar == "auto" and not dataset.has_answers)


def exemplar_stage(spec: ChainSpec, dataset: Dataset, judge: Judge) -> ExemplarJudge | None:
    """The exemplar judge in front of ``judge`` where ``spec`` asks for it and some topic has a known relevant
    passage (None otherwise)."""
    if not exemplar_wanted(spec, dataset):
        return None
    fit = ExemplarFit.read(spec.exemplar_fit or shipped_fit_path())
    encoder = PassageEmbeddings(dataset, spec.cache_dir, fit.encoder, spec.progress)
    stage = ExemplarJudge(dataset, judge, fit, encoder)
    return stage if stage.topics() else None


def build_refine_chain(spec: ChainSpec, refine: JudgeSpec, dataset: Dataset, llm: Any = None) -> JudgeChain:
    """The chain of a costly judge ``refine`` that re-judges what ``spec``'s free stages decided (``--refine``): for an
    answer judge, ``spec``'s chain with that judge and no topic adapters; for the exemplar judge's LLM comparison,
    that judge over the exemplar stage's encoder. Both share ``llm`` (the main chain's; opened here where it has
    none)."""
    if judge_traits(refine.name).refines_exemplar:
        if llm is None:
            llm = open_llm(spec.llm, Workspace(cache_dir=spec.cache_dir).llm_cache, progress=spec.progress)
        context = JudgeContext(dataset, None, llm, spec.cache_dir, spec.progress, spec.max_minutes)
        return JudgeChain.of(build_judge(refine, context))
    refine_spec = replace(spec, judge=refine, adapters="off", exemplar="off")
    return build_chain(refine_spec, dataset, llm=llm)[0]
