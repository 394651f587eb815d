"""Single-call judges: the LLMJudge baseline, the UMBRELA-style graded judge, and the prefilter.

They share DREAM's record schema (labels.jsonl) with their own route names, so the judge
comparison (``bridge judge-eval``) and the pipeline treat every judge alike.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from typing import Any, ClassVar

from bridge.core.label_records import LabelRecord, Usage
from bridge.judging.base import (
    Case,
    Decider,
    Judge,
    JudgeContext,
    JudgeSpec,
    Prepared,
    WrapsJudge,
    judge_record,
    register_judge,
)
from bridge.judging.replies import ParseError, Reply, ask_with_repair, parse_json_object, usage_of
from bridge.judging.single_call import SingleCallConfig, failure_route
from bridge.llm.base import (
    TOO_LONG,
    LLMBackend,
    LLMRequest,
    LLMResponse,
    Message,
    answer_probability,
    request_key,
    schema_text,
)
from bridge.llm.fit import Fitted, fit_passage
from bridge.prompts import template_digest, template_module

SUPPORT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"is_supported": {"type": "boolean"}},
    "required": ["is_supported"],
}
GRADE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {k: {"type": "integer", "enum": [0, 1, 2, 3]} for k in ("M", "T", "O")},
    "required": ["M", "T", "O"],
}


def _config_id(prefix: str, config: SingleCallConfig, llm: LLMBackend, template: str) -> str:
    payload = json.dumps(
        {"judge": prefix, "config": asdict(config), "model": llm.model_id, "prompts": template_digest(template)},
        sort_keys=True,
    )
    return f"{prefix}-" + hashlib.sha256(payload.encode()).hexdigest()[:12]


class _SingleCallJudge:
    """One request per pair, one batch for all pairs, one repair re-ask for unparseable replies."""

    name: ClassVar[str] = "single"
    template: ClassVar[str] = ""
    schema: ClassVar[dict[str, Any]] = {}
    probe: ClassVar[str | None] = None

    def __init__(self, llm: LLMBackend, config: SingleCallConfig | None = None) -> None:
        self.llm = llm
        self.config = config or SingleCallConfig()
        self._prompts = template_module(self.template)
        self._fitted: dict[tuple[str, str, str], Fitted] = {}

    @property
    def config_id(self) -> str:
        return _config_id(self.name, self.config, self.llm, self.template)

    def messages(self, case: Case) -> tuple[Message, ...]:
        p = self._prompts
        return (
            Message("system", str(p.system(bool(case.answers)))),
            Message("user", str(p.user(case.query, list(case.answers), case.chunk, list(case.evidence)))),
        )

    def full_request(self, case: Case) -> LLMRequest:
        """The request for the whole passage (see :meth:`request` for the one sent)."""
        return LLMRequest(
            self.messages(case),
            max_tokens=self.config.max_tokens,
            temperature=self.config.temperature,
            json_schema=schema_text(self.schema),
            probe_field=self.probe,
        )

    def fitted(self, case: Case) -> Fitted:
        """The request sent for ``case``: its passage cut to fit the model's context where needed (remembered, as
        counting tokens is not free and :meth:`record` asks again)."""
        key = (case.qid, case.docid, case.chunk)
        if key not in self._fitted:
            self._fitted[key] = fit_passage(
                self.llm, case.chunk, lambda text: self.full_request(replace(case, chunk=text))
            )
        return self._fitted[key]

    def request(self, case: Case) -> LLMRequest:
        return self.fitted(case).request or self.full_request(case)

    def parse(self, response: LLMResponse) -> dict[str, Any]:
        raise NotImplementedError

    def ask(self, cases: Sequence[Case]) -> list[Reply[dict[str, Any]]]:
        """One batch over all cases (one repair re-ask for unparseable replies)."""
        repair = template_module("dream.j2").repair
        fitted = [self.fitted(c) for c in cases]
        sent = [i for i, f in enumerate(fitted) if f.request is not None]
        asked = ask_with_repair(
            self.llm,
            [fitted[i].request for i in sent],  # type: ignore[misc]
            lambda _, r: self.parse(checked(r)),
            lambda error: str(repair(error)),
        )
        replies: list[Reply[dict[str, Any]]] = [Reply(None, [], TOO_LONG) for _ in cases]
        for i, reply in zip(sent, asked, strict=True):
            replies[i] = reply
        return replies

    def record(self, case: Case, label: int | None, route: str, details: dict[str, Any], reply: Reply) -> LabelRecord:
        """The pair's record; ``details["prompt"]`` names the request sent (its cache key, shortened), so the
        audit can show that two lanes asked a pair the same way."""
        details = {
            **details,
            **self.fitted(case).details(),
            "prompt": request_key(self.llm.model_id, self.request(case))[:16],
        }
        by = Decider(self.name, self.config_id, self.llm.model_id)
        return judge_record(case, label, route, by, details, details.get("p_yes"), usage_of(reply.responses))

    def judge(self, cases: Sequence[Case], on_record: Callable[[LabelRecord], None]) -> None:
        for case, reply in zip(cases, self.ask(cases), strict=True):
            if reply.value is None:
                on_record(self.record(case, None, failure_route(reply), {"error": reply.error}, reply))
            else:
                on_record(self.record(case, self.label(reply.value), self.name, reply.value, reply))

    def label(self, verdict: dict[str, Any]) -> int:
        raise NotImplementedError


def checked(response: LLMResponse) -> LLMResponse:
    """``response``, unless the model never saw the prompt (too long for its context): a :class:`ParseError`, so
    the pair takes a failure route and is never labelled."""
    if response.finish_reason == TOO_LONG:
        raise ParseError(f"{TOO_LONG}: the prompt ({response.prompt_tokens or '?'} tokens) does not fit the context")
    return response


class SupportJudge(_SingleCallJudge):
    """ "Does the document contain enough information to answer the query (with any of the answers)?"

    Used as the single-agent LLMJudge baseline (its answer is the label) and as a prefilter vote.
    """

    name: ClassVar[str] = "llmjudge"
    template: ClassVar[str] = "oneshot.j2"
    schema: ClassVar[dict[str, Any]] = SUPPORT_SCHEMA
    probe: ClassVar[str | None] = "is_supported"

    def parse(self, response: LLMResponse) -> dict[str, Any]:
        data = parse_json_object(response.text)
        value = data.get("is_supported")
        if not isinstance(value, bool):
            raise ParseError(f'field "is_supported" must be true or false, got {value!r}')
        return {"is_supported": value, "p_yes": answer_probability(response, "true", "false")}

    def label(self, verdict: dict[str, Any]) -> int:
        return int(verdict["is_supported"])


class GradedJudge(_SingleCallJudge):
    """UMBRELA-style 0-3 grade (intent match M, trustworthiness T, overall O); label = O >= threshold."""

    name: ClassVar[str] = "umbrela"
    template: ClassVar[str] = "umbrela.j2"
    schema: ClassVar[dict[str, Any]] = GRADE_SCHEMA

    def parse(self, response: LLMResponse) -> dict[str, Any]:
        data = parse_json_object(response.text)
        grades = {}
        for key in ("M", "T", "O"):
            value = data.get(key)
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 3:
                raise ParseError(f'field "{key}" must be an integer 0-3, got {value!r}')
            grades[key] = value
        return {**grades, "grade": grades["O"]}

    def label(self, verdict: dict[str, Any]) -> int:
        return int(verdict["grade"] >= self.config.grade_threshold)


class PrefilteredJudge(WrapsJudge):
    """Up to 3 one-shot votes first; a pair is discarded (label 0, route ``prefiltered``) only
    when every vote says "not supported". Survivors, and pairs whose votes failed to parse, go
    to the inner judge (DREAM)."""

    def __init__(self, voters: Sequence[SupportJudge], inner: Judge) -> None:
        if not 1 <= len(voters) <= 3:
            raise ValueError("the prefilter takes 1 to 3 judge configurations")
        self.voters = list(voters)
        self.inner = inner
        self.name = inner.name

    def score_pass(self, *args: Any, **kwargs: Any) -> Prepared:
        """The inner judge's scoring pass (the cascade's), where it has one."""
        return self.inner.score_pass(*args, **kwargs) if hasattr(self.inner, "score_pass") else Prepared()

    def scores(self, cases: Sequence[Case]) -> list[Any]:
        return self.inner.scores(cases)  # type: ignore[attr-defined]

    @property
    def calibration_pairs(self) -> int:
        return getattr(self.inner, "calibration_pairs", 0)

    @property
    def config_id(self) -> str:
        parts = [self.inner.config_id, *(v.config_id for v in self.voters)]
        return f"{self.inner.config_id}+pf-" + hashlib.sha256("|".join(parts).encode()).hexdigest()[:8]

    def judge(self, cases: Sequence[Case], on_record: Callable[[LabelRecord], None]) -> None:
        ballots = [v.ask(cases) for v in self.voters]
        config_id = self.config_id
        votes: dict[tuple[str, str], list[dict[str, Any]]] = {}
        spent: dict[tuple[str, str], Usage] = {}
        survivors: list[Case] = []
        for i, case in enumerate(cases):
            key = (case.qid, case.docid)
            replies = [b[i] for b in ballots]
            votes[key] = [
                {"judge": v.config_id, "model": v.llm.model_id, **(r.value or {"is_supported": None, "error": r.error})}
                for v, r in zip(self.voters, replies, strict=True)
            ]
            spent[key] = usage_of([resp for r in replies for resp in r.responses])
            if all(r.value is not None and r.value["is_supported"] is False for r in replies):
                by = Decider(self.name, config_id, self.voters[0].llm.model_id, "prefilter")
                on_record(judge_record(case, 0, "prefiltered", by, {"prefilter": votes[key]}, usage=spent[key]))
            else:
                survivors.append(case)

        def forward(record: LabelRecord) -> None:
            key = (record.qid, record.docid)
            details = {**record.details, "prefilter": votes[key]}
            on_record(replace(record, config_id=config_id, details=details, usage=record.usage + spent[key]))

        if survivors:
            self.inner.judge(survivors, forward)


@register_judge(
    "llmjudge", SingleCallConfig, calls_llm=True, measured=True, plain=True, feedback=True, sample_default=1
)
def make_llmjudge(spec: JudgeSpec, context: JudgeContext) -> SupportJudge:
    return SupportJudge(context.needs("llmjudge", "llm"), spec.settings)


@register_judge("umbrela", SingleCallConfig, calls_llm=True, measured=True, feedback=True)
def make_umbrela(spec: JudgeSpec, context: JudgeContext) -> GradedJudge:
    return GradedJudge(context.needs("umbrela", "llm"), spec.settings)
