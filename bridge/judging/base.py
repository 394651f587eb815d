"""What every relevance judge shares: the case it judges, the Judge protocol and its optional
preparation, the registry that builds judges from a :class:`JudgeSpec` (each judge registered with the config
class it owns), and tolerant parsing of the JSON a model returns."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from bridge.core.errors import BridgeError
from bridge.core.label_records import LabelRecord, Usage
from bridge.core.registry import Registry
from bridge.core.trec import Qrels
from bridge.datasets import Dataset
from bridge.datasets.kinds import kind_facts
from bridge.judging.settings import NoConfig
from bridge.llm.base import LLMBackend, LLMRequest, LLMResponse, Message
from bridge.pool.pooling import PoolEntry

T = TypeVar("T")


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


JudgeFactory = Callable[..., Judge]
"""``factory(spec, llm, qrels=None, threshold=1)``: a judge from its :class:`JudgeSpec` (``spec.settings`` is an
instance of the config class the judge registered), an LLM (None for judges that call none) and, for the qrels judge,
the qrels to answer from and the dataset's relevance threshold."""


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

    name: str = "cascade"
    """A registered judge (:data:`JUDGES`)."""
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


REGISTERS_A_JUDGE = re.compile(r"^\s*@?register_judge\(", re.MULTILINE)
"""A line that registers a judge (``@register_judge(...)`` or ``register_judge(...)(factory)``)."""


def judge_modules() -> tuple[str, ...]:
    """The modules of this package that register a judge, found by reading their text rather than importing them,
    so that a new judge's module needs no list and naming a judge imports only the judges."""
    root = Path(__file__).parent
    found = [p for p in sorted(root.rglob("*.py")) if REGISTERS_A_JUDGE.search(p.read_text(encoding="utf-8"))]
    return tuple(".".join(("bridge", "judging", *p.relative_to(root).with_suffix("").parts)) for p in found)


JUDGES: Registry[RegisteredJudge] = Registry("judge", judge_modules())
"""The judge registry, in registration order; its modules register their judges."""


def register_judge(name: str, config: type = NoConfig, **traits: bool) -> Callable[[JudgeFactory], JudgeFactory]:
    """Register ``factory`` under ``name`` with the config class it is built from and its :class:`JudgeTraits`."""

    def wrap(factory: JudgeFactory) -> JudgeFactory:
        JUDGES.add(name, RegisteredJudge(name, factory, JudgeTraits(**traits), config))
        return factory

    return wrap


def judge_names(**traits: bool) -> tuple[str, ...]:
    """The registered judges whose traits have the given values (all of them without any), those that call an LLM
    first, then by name: ``judge_names(answer_bearing=True, calls_llm=True)`` are the costly answer judges."""
    chosen = [j for j in JUDGES.values() if all(getattr(j.traits, k) == v for k, v in traits.items())]
    return tuple(j.name for j in sorted(chosen, key=lambda j: (not j.traits.calls_llm, j.name)))


def judge_traits(name: str) -> JudgeTraits:
    """A registered judge's traits (a clear error for an unknown name)."""
    return JUDGES[name].traits


def build_judge(spec: JudgeSpec, llm: LLMBackend | None, qrels: Qrels | None = None, threshold: int = 1) -> Judge:
    """The judge ``spec`` names, from the registry."""
    entry = JUDGES[spec.name]
    if spec.config is not None and not isinstance(spec.config, entry.config):
        raise BridgeError(f"judge {spec.name} takes a {entry.config.__name__}, got a {type(spec.config).__name__}")
    return entry.factory(spec, llm, qrels=qrels, threshold=threshold)


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


class ParseError(ValueError):
    pass


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)


def parse_json_object(text: str) -> dict[str, Any]:
    """The JSON object in a reply; tolerates code fences and text around the object."""
    stripped = _FENCE.sub("", text.strip())
    try:
        value = json.loads(stripped, strict=False)  # strict=False: raw newlines inside strings are fine
    except json.JSONDecodeError:
        start, end = stripped.find("{"), stripped.rfind("}")
        if start < 0 or end <= start:
            raise ParseError("no JSON object in the reply") from None
        try:
            value = json.loads(stripped[start : end + 1], strict=False)
        except json.JSONDecodeError as exc:
            raise ParseError(f"invalid JSON: {exc.msg}") from None
    if not isinstance(value, dict):
        raise ParseError("the reply is JSON but not an object")
    return value


def yes_no(value: Any, field: str) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str) and value.strip().lower() in ("yes", "no"):
        return value.strip().lower()
    raise ParseError(f'field "{field}" must be "yes" or "no", got {value!r}')


def usage_of(responses: Sequence[LLMResponse]) -> Usage:
    total = Usage()
    for r in responses:
        total = total + Usage(
            calls=0 if r.cached else 1,
            cached_calls=1 if r.cached else 0,
            prompt_tokens=r.prompt_tokens,
            completion_tokens=r.completion_tokens,
            latency_s=0.0 if r.cached else r.latency_s,
            compute_s=r.compute_s,
        )
    return total


@dataclass
class Reply(Generic[T]):
    """A parsed reply (``value``; None if unusable even after repair) and every response paid for."""

    value: T | None
    responses: list[LLMResponse]
    error: str | None = None
    repaired: bool = False


def ask_with_repair(
    llm: LLMBackend,
    requests: Sequence[LLMRequest],
    parse: Callable[[int, LLMResponse], T],
    repair_text: Callable[[str], str],
) -> list[Reply[T]]:
    """Send one batch; re-ask once, as one more batch, for the replies ``parse`` rejects.

    The repair request is the original conversation plus the bad reply and ``repair_text(error)``.
    """
    responses = llm.generate(list(requests))
    replies: list[Reply[T]] = []
    failed: list[int] = []
    for i, response in enumerate(responses):
        try:
            replies.append(Reply(parse(i, response), [response]))
        except ParseError as exc:
            replies.append(Reply(None, [response], str(exc)))
            failed.append(i)
    if not failed:
        return replies
    repairs = [
        replace(
            requests[i],
            messages=(
                *requests[i].messages,
                Message("assistant", responses[i].text),
                Message("user", repair_text(replies[i].error or "")),
            ),
            max_tokens=requests[i].max_tokens * 2,
        )
        for i in failed
    ]
    for i, response in zip(failed, llm.generate(repairs), strict=True):
        reply = replies[i]
        reply.responses.append(response)
        reply.repaired = True
        try:
            reply.value, reply.error = parse(i, response), None
        except ParseError as exc:
            reply.error = f"{reply.error}; after repair: {exc}"
    return replies
