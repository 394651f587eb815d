"""What every relevance judge shares: the case it judges, the Judge protocol and its optional preparation, the context
a judge is built from, the registry that builds judges from a :class:`JudgeSpec` (each judge registered with the config
class it owns and its traits), and the one way a judge writes a pair's record. Parsing a model's replies is
:mod:`bridge.judging.replies`."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from bridge.core.errors import BridgeError
from bridge.core.label_records import LabelRecord, Usage
from bridge.core.registry import Registry
from bridge.core.trec import Qrels
from bridge.datasets import Dataset
from bridge.datasets.kinds import kind_facts
from bridge.encoders.embeddings import PassageEmbeddings
from bridge.encoders.sources import MINILM
from bridge.judging.settings import NoConfig
from bridge.llm.base import LLMBackend
from bridge.pool.pooling import PoolEntry


@dataclass(frozen=True)
class Case:
    """One (query, chunk) pair to judge, with everything a prompt needs."""

    qid: str
    docid: str
    query: str
    chunk: str
    answers: tuple[str, ...] = ()
    systems: tuple[str, ...] = ()
    min_rank: int | None = None
    evidence: tuple[str, ...] = ()
    """Answers found in the chunk by the evidence stage, shown to the judge as a hint."""
    kind: tuple[tuple[str, float], ...] = ()
    """What the dataset says of the pair's kind (:func:`bridge.datasets.kinds.kind_facts`), for a judge's
    calibration."""


@dataclass(frozen=True)
class AuditPair:
    """A known pair drawn for the audit or a calibration: its truth and its kind."""

    qid: str
    docid: str
    truth: int
    """1 relevant, 0 not relevant."""
    source: str
    """The kind (:data:`KINDS`): qrels-relevant, qrels-non-relevant, answer-swap, answer-free, known-negative,
    easy-negative (truth known); gate (unknown)."""


class Judge(Protocol):
    """A relevance judge: decides cases in batches and hands each record over as soon as it is final."""

    name: str

    @property
    def config_id(self) -> str:
        """Identifies the judge configuration, prompts and model; stored with every record."""
        ...

    def judge(self, cases: Sequence[Case], on_record: Callable[[LabelRecord], None]) -> None: ...


@dataclass(frozen=True)
class Preparation:
    """What a label run knows before it judges, for judges that prepare themselves (:class:`Preparable`)."""

    dataset: Dataset
    known: Collection[tuple[str, str]]
    """The audit's known pairs: never learn from them, never calibrate on them."""
    pool: Collection[tuple[str, str]]
    """Every pool pair of the run."""
    view: Callable[[Case], Case | None]
    """A pair as the LLM judge sees it in the chain (with the evidence hint), None where the evidence gate
    decides it without the LLM."""
    calibration_path: Path
    reaches_llm: bool = True
    """Whether any pool or audit pair reaches the LLM judge (a judge that would call it for nothing need not
    prepare)."""
    reaches_answer_bearing: bool = True
    """Whether any of them reaches it holding an answer match (what a judge of answer-bearing pairs decides)."""
    reaches_fallback: bool = True
    """Whether any of them reaches it without an answer match (a judge of answer-bearing pairs hands those to
    its fallback, which need not prepare otherwise)."""


@dataclass(frozen=True)
class Prepared:
    """What a preparation did: lines for the summary, the LLM work it paid for, and (a scoring pass) the pool
    pairs it scored (before the deadline, under a time budget) and those of them its score settles (no further call:
    judging them reads the response cache)."""

    lines: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    scored: frozenset[tuple[str, str]] | None = None
    settled: frozenset[tuple[str, str]] = frozenset()


@runtime_checkable
class Preparable(Protocol):
    """A judge that settles something before judging (the adapters hold out the audit's pairs, the cascade
    calibrates), and can hand that state to a copy of itself (a Ray worker)."""

    def prepare(self, preparation: Preparation) -> Prepared: ...

    def prepared_state(self) -> dict[str, Any]: ...

    def restore(self, state: dict[str, Any]) -> None: ...


class WrapsJudge:
    """A judge in front of another (``inner``: the evidence stage, the prefilter): it prepares as its inner
    judge does."""

    inner: Judge

    def prepare(self, preparation: Preparation) -> Prepared:
        return self.inner.prepare(preparation) if isinstance(self.inner, Preparable) else Prepared()

    def prepared_state(self) -> dict[str, Any]:
        return self.inner.prepared_state() if isinstance(self.inner, Preparable) else {}

    def restore(self, state: dict[str, Any]) -> None:
        if isinstance(self.inner, Preparable):
            self.inner.restore(state)


@dataclass(frozen=True)
class JudgeContext:
    """What the label stage (judge-eval, LARF) hands every judge factory: a judge takes from it what it needs, so a
    judge that needs the dataset or the corpus encodings is registered and built like one that needs nothing."""

    dataset: Dataset | None = None
    """The dataset judged (its relevance threshold, topics, corpus and judgments)."""
    qrels: Qrels | None = None
    """Judgments a judge may answer from when its config names no file (a label run: the dataset's original qrels)."""
    llm: LLMBackend | None = None
    """The opened LLM (None where no judge of the run calls one)."""
    cache_dir: Path = Path("cache")
    """Encodings, topic models and fits a judge keeps."""
    progress: bool = False
    max_minutes: float | None = None
    """The run's budget for its costly judge (None: none)."""

    @property
    def threshold(self) -> int:
        """The lowest relevant grade (1 without a dataset)."""
        return self.dataset.relevance_threshold if self.dataset is not None else 1

    def needs(self, judge: str, what: str) -> Any:
        """``what`` (a field) or a clear error naming the judge that needs it."""
        value = getattr(self, what)
        if value is None:
            raise BridgeError(f"the {judge} judge needs {_NEEDED.get(what, what)}, and none was given")
        return value

    def encodings(self, judge: str, model: str = MINILM) -> PassageEmbeddings:
        """The dataset's passage and query encodings by ``model`` (cached under ``cache_dir``, shared with the
        dense retriever and the topic adapters)."""
        return PassageEmbeddings(self.needs(judge, "dataset"), self.cache_dir, model, self.progress)


_NEEDED = {
    "dataset": "a dataset (its topics, corpus and judgments)",
    "llm": "an LLM (--backend and --model; a zero budget opens none)",
    "qrels": "judgments to answer from (--judge-qrels FILE)",
}
"""What a judge's missing context field is, in the words of the error."""


JudgeFactory = Callable[["JudgeSpec", JudgeContext], Judge]
"""``factory(spec, context)``: a judge from its :class:`JudgeSpec` (``spec.settings`` is an instance of the config
class the judge registered) and what the run hands it (:class:`JudgeContext`)."""


@dataclass(frozen=True)
class JudgeTraits:
    """What the rest of bridge asks of a judge, declared once where it registers."""

    calls_llm: bool = False
    """Asks an LLM (a backend must be open), for every pair or for an answer judge's signals."""
    answer_bearing: bool = False
    """Judges answer-bearing pairs, calibrated on a read reference (a fallback judge takes the others)."""
    selectable: bool = True
    """Offered as a label run's judge (the cascade's one-pass stage is not: it runs inside the cascade)."""
    measured: bool = False
    """``bridge judge-eval`` measures it against human labels (a judge that answers from the qrels, or by chance,
    would measure nothing)."""
    default: bool = False
    """A label run's judge when none is named (of the answer-bearing pairs, for an answer judge)."""
    plain: bool = False
    """The plain one-call judge: an answer judge's fallback and LARF's feedback judge unless another is named."""
    feedback: bool = False
    """Gives LARF's relevance feedback (one label per pair, no preparation)."""
    leaves_open: bool = False
    """Decides nothing: every pair it is handed keeps the estimate's prior P (a zero budget's judge)."""
    refines: bool = False
    """Re-judges in value order what a free stage gave a P (``--refine``)."""
    refines_exemplar: bool = False
    """Re-judges, on its own (no evidence stage in front), the pairs the exemplar stage gave a P."""
    scores: bool = False
    """The one-pass scorer whose P LARA reads (judge-eval runs it when LARA is asked)."""
    debates: bool = False
    """Settles a pair by a debate (judge-eval's reference for the single-call judges)."""
    sample_default: int = 0
    """Its place among ``bridge judge-eval``'s default methods on a sample of the dataset's judged pairs (0: not
    one of them)."""
    reference_default: int = 0
    """Its place among ``bridge judge-eval``'s default methods on a read reference of answer-bearing pairs (0: not
    one of them)."""
    budget_note: str = ""
    """What the budget line adds of the judge's cost per pair."""


@dataclass(frozen=True)
class RegisteredJudge:
    name: str
    factory: JudgeFactory
    traits: JudgeTraits
    config: type = NoConfig
    """The frozen dataclass of the judge's settings, defined in its module; its fields' options
    (:mod:`bridge.judging.settings`) become command-line flags."""


@dataclass(frozen=True)
class JudgeSpec:
    """What a judge is built from, and all that travels to a Ray worker or from a pool file: a registered judge,
    its own config and, for a judge of answer-bearing pairs, the judge of the others."""

    name: str = field(default_factory=lambda: default_judge())
    """A registered judge (:data:`JUDGES`; by default the one registered as ``default``)."""
    config: Any = None
    """An instance of the config class ``name`` registered (None: that class's defaults)."""
    fallback: JudgeSpec | None = None
    """A judge of answer-bearing pairs: the judge of the pairs without an answer match (None: they stay
    undecided)."""

    @property
    def settings(self) -> Any:
        """The judge's config (its class's defaults where none was given)."""
        return self.config if self.config is not None else JUDGES[self.name].config()

    def calls_llm(self) -> bool:
        """Whether building this judge needs an LLM: it asks one, or its fallback does."""
        return judge_traits(self.name).calls_llm or (self.fallback is not None and self.fallback.calls_llm())


JUDGE_MODULES = (
    "bridge.judging.free.reference",
    "bridge.judging.llm.single",
    "bridge.judging.llm.dream",
    "bridge.judging.llm.cascade",
    "bridge.judging.llm.answer_judges",
    "bridge.judging.free.answer_lexical",
    "bridge.judging.learned.exemplar",
)
"""The modules whose import registers bridge's own judges; another package's judges register through the
``bridge.judges`` entry point group (:data:`ENTRY_POINTS`), a test's by importing its module."""
ENTRY_POINTS = "bridge.judges"

JUDGES: Registry[RegisteredJudge] = Registry("judge", JUDGE_MODULES, ENTRY_POINTS)
"""The judge registry, in registration order; its modules register their judges."""


@dataclass(frozen=True)
class StageText:
    """What the report says of a judge's stage: a phrase for the holes its calibration filled and, where its fit was
    measured elsewhere, a sentence on what the fit rests on, from the calibration's saved form."""

    phrase: str
    fit_sentence: Callable[[Mapping[str, Any]], str] | None = None


STAGE_TEXTS: Registry[StageText] = Registry("stage", ("bridge.judging.learned.exemplar",), ENTRY_POINTS)
"""A judge's stages' report text, registered by the judge's module (:func:`describe_stage`; bridge's own: the
exemplar stages)."""


def describe_stage(name: str, phrase: str, fit_sentence: Callable[[Mapping[str, Any]], str] | None = None) -> None:
    """Register what the report says of stage ``name`` (the name its records and calibration carry)."""
    STAGE_TEXTS.add(name, StageText(phrase, fit_sentence))


def register_judge(name: str, config: type = NoConfig, **traits: Any) -> Callable[[JudgeFactory], JudgeFactory]:
    """Register ``factory`` under ``name`` with the config class it is built from and its :class:`JudgeTraits`."""

    def wrap(factory: JudgeFactory) -> JudgeFactory:
        JUDGES.add(name, RegisteredJudge(name, factory, JudgeTraits(**traits), config))
        return factory

    return wrap


def registered_judges() -> list[RegisteredJudge]:
    """The registered judges in the order of :data:`JUDGE_MODULES` (then a plug-in's or a test's, as they registered),
    whichever module happened to be imported first: the order of the flags and of judge-eval's methods."""
    position = {module: i for i, module in enumerate(JUDGE_MODULES)}
    return sorted(JUDGES.values(), key=lambda j: position.get(j.factory.__module__, len(position)))


def judge_names(**traits: Any) -> tuple[str, ...]:
    """The registered judges whose traits have the given values (all of them without any), those that call an LLM
    first, then by name: ``judge_names(answer_bearing=True, calls_llm=True)`` are the costly answer judges."""
    chosen = [j for j in JUDGES.values() if all(getattr(j.traits, k) == v for k, v in traits.items())]
    return tuple(j.name for j in sorted(chosen, key=lambda j: (not j.traits.calls_llm, j.name)))


def default_first(**traits: Any) -> tuple[str, ...]:
    """:func:`judge_names` with the default judge first (the one whose figures stand for the others')."""
    return tuple(sorted(judge_names(**traits), key=lambda name: not JUDGES[name].traits.default))


def judge_traits(name: str) -> JudgeTraits:
    """A registered judge's traits (a clear error for an unknown name)."""
    return JUDGES[name].traits


def leaves_open(name: str) -> bool:
    """Whether the judge ``name`` (as a label run's files name it) decides nothing; False for a name no longer
    registered."""
    return name in JUDGES and JUDGES[name].traits.leaves_open


def default_judge(answer_bearing: bool = False) -> str:
    """The judge registered as a label run's default (of answer-bearing pairs, with ``answer_bearing``)."""
    return judge_names(default=True, answer_bearing=answer_bearing)[0]


def plain_judge() -> str:
    """The judge registered as the plain one-call judge."""
    return judge_names(plain=True)[0]


def build_judge(spec: JudgeSpec, context: JudgeContext) -> Judge:
    """The judge ``spec`` names, from the registry, built with what ``context`` holds."""
    entry = JUDGES[spec.name]
    if spec.config is not None and not isinstance(spec.config, entry.config):
        raise BridgeError(f"judge {spec.name} takes a {entry.config.__name__}, got a {type(spec.config).__name__}")
    return entry.factory(spec, context)


@dataclass(frozen=True)
class Decider:
    """Who decided a pair, as its record names it: the judge, its configuration, the model and the stage (the judge's
    name where it is its own stage)."""

    judge: str
    config_id: str
    model: str = ""
    stage: str = ""


def judge_record(
    case: Case,
    label: int | None,
    route: str,
    by: Decider,
    details: dict[str, Any] | None = None,
    p_yes: float | None = None,
    usage: Usage | None = None,
    rounds: list[dict[str, Any]] | None = None,
) -> LabelRecord:
    """The one way a judge writes its record of a pair: the pair's own facts (ids, the systems that ranked it, its best
    rank) from its case, the decision and who made it from the judge."""
    return LabelRecord(
        qid=case.qid,
        docid=case.docid,
        label=label,
        route=route,
        judge=by.judge,
        config_id=by.config_id,
        model=by.model,
        rounds=rounds if rounds is not None else [],
        details=details if details is not None else {},
        p_yes=p_yes,
        usage=usage if usage is not None else Usage(),
        systems=list(case.systems),
        min_rank=case.min_rank,
        stage=by.stage or by.judge,
    )


def cases_for(dataset: Dataset, entries: Sequence[PoolEntry]) -> list[Case]:
    """The cases of pool entries (query text, answers, document contents), in order."""
    queries = {q.qid: q for q in dataset.queries}
    cases = []
    for e in entries:
        doc = dataset.corpus.get(e.docid)
        if doc is None:
            raise BridgeError(
                f"pool pair ({e.qid}, {e.docid}): document {e.docid!r} is not in the {dataset.name} corpus"
            )
        q = queries[e.qid]
        kind = tuple(kind_facts(dataset, e.qid, e.docid).items())
        cases.append(Case(e.qid, e.docid, q.text, doc.contents(), q.answers, e.systems, e.min_rank, kind=kind))
    return cases
