"""An LLM judge's replies: tolerant parsing of the JSON a model returns, one re-ask for a reply that does not parse, and
what the responses cost."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from bridge.core.label_records import Usage
from bridge.llm.base import LLMBackend, LLMRequest, LLMResponse, Message

T = TypeVar("T")


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
