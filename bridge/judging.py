"""What every relevance judge shares: the case it judges, the Judge protocol, its registry,
and tolerant parsing of the JSON a model returns."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from bridge.labels import LabelRecord, Usage
from bridge.llm.base import LLMResponse


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


class Judge(Protocol):
    """A relevance judge: decides cases in batches and hands each record over as soon as it is final."""

    name: str

    @property
    def config_id(self) -> str:
        """Identifies the judge configuration, prompts and model; stored with every record."""
        ...

    def judge(self, cases: Sequence[Case], on_record: Callable[[LabelRecord], None]) -> None: ...


JudgeFactory = Callable[..., Judge]
JUDGES: dict[str, JudgeFactory] = {}


def register_judge(name: str) -> Callable[[JudgeFactory], JudgeFactory]:
    def wrap(factory: JudgeFactory) -> JudgeFactory:
        JUDGES[name] = factory
        return factory

    return wrap


class ParseError(ValueError):
    pass


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)


def parse_json_object(text: str) -> dict[str, Any]:
    """The JSON object in a reply; tolerates code fences and text around the object."""
    stripped = _FENCE.sub("", text.strip())
    try:
        value = json.loads(stripped)
    except json.JSONDecodeError:
        start, end = stripped.find("{"), stripped.rfind("}")
        if start < 0 or end <= start:
            raise ParseError("no JSON object in the reply") from None
        try:
            value = json.loads(stripped[start : end + 1])
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
        )
    return total
