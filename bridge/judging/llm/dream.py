"""DREAM: two LLM agents with opposing opening stances debate a relevance judgment.

Agent A opens with "yes" (the chunk fully supports at least one answer), Agent B with "no".
In every round both agents see the query, the numbered answers, the chunk and the debate so
far (their own turns marked as theirs), and answer ``{"reference", "reason", "response"}``.
Agreement ends the debate with that label (route ``consensus-r<round>``); disagreement after
the last round escalates the pair with its full history, to a human (label null, route
``escalated``) or to an LLM adjudicator (route ``adjudicated``). A reply that stays
unparseable after one repair attempt escalates the pair as ``parse-failure``.

Batching: each round is one batch over all pending pairs, so an HTTP or vLLM backend runs
them concurrently; in the cache-friendly prompt order the static instructions come first and
the agent-specific text last, so consecutive prompts share the longest possible prefix.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from bridge.core.label_records import LabelRecord
from bridge.judging.base import Case, Decider, JudgeContext, JudgeSpec, judge_record, register_judge
from bridge.judging.replies import ParseError, ask_with_repair, parse_json_object, usage_of, yes_no
from bridge.judging.settings import option
from bridge.llm.base import TOO_LONG, LLMBackend, LLMRequest, LLMResponse, Message, answer_probability, schema_text
from bridge.llm.fit import fit_passage
from bridge.prompts import template_digest, template_module

AGENT_A = "Agent A"
AGENT_B = "Agent B"
OPENING_STANCE = {AGENT_A: "yes", AGENT_B: "no"}
TEMPLATE = "dream.j2"

AGENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reference": {"type": "array", "items": {"type": "string", "maxLength": 300}, "maxItems": 3},
        "reason": {"type": "string", "maxLength": 600},
        "response": {"type": "string", "enum": ["yes", "no"]},
    },
    "required": ["reference", "reason", "response"],
}
ADJUDICATOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reason": {"type": "string", "maxLength": 600},
        "response": {"type": "string", "enum": ["yes", "no"]},
    },
    "required": ["reason", "response"],
}


@dataclass(frozen=True)
class DebateConfig:
    """The DREAM debate's settings (dream, and the cascade's uncertain band)."""

    rounds: int = option(2, "--rounds", "DREAM: maximum debate rounds R (default: 2)")
    """Maximum number of rounds R; the paper's default is 2."""
    temperature: float = option(0.0, "--temperature", "sampling temperature (default: 0, greedy)")
    swap_stances: bool = option(False, "--swap-stances", "DREAM: Agent B (opening 'no') speaks first")
    """Agent B speaks first (its turn and opening stance are listed first)."""
    escalate_to: Literal["human", "llm"] = option(
        "human",
        "--escalate-to",
        "DREAM: persistent disagreement goes to the human review queue (default) or an LLM adjudicator",
        choices=("human", "llm"),
    )
    prompt_order: Literal["cache", "paper"] = option(
        "cache",
        "--prompt-order",
        "DREAM: static text first for prefix caching (default) or the paper's order (identity first)",
        choices=("cache", "paper"),
    )
    """``cache``: static text first, agent identity last; ``paper``: identity opens the system prompt."""
    max_tokens: int = option(512, "--max-tokens", "DREAM: tokens per agent turn (default: 512)")
    """Room for the longest reply the schema allows (3 quotes of 300 and a reason of 600 characters)."""
    probe_yes: bool = True
    """Record P(yes) at the decision token where the backend exposes log-probabilities."""

    def __post_init__(self) -> None:
        if self.rounds < 1:
            raise ValueError("rounds must be at least 1")
        if self.escalate_to not in ("human", "llm"):
            raise ValueError(f"escalate_to must be 'human' or 'llm', got {self.escalate_to!r}")
        if self.prompt_order not in ("cache", "paper"):
            raise ValueError(f"prompt_order must be 'cache' or 'paper', got {self.prompt_order!r}")


@dataclass(frozen=True)
class AgentTurn:
    agent: str
    response: str | None
    """``yes`` / ``no``; None when the reply could not be parsed, even after repair."""
    reason: str = ""
    reference: tuple[str, ...] = ()
    p_yes: float | None = None
    raw: str = ""
    error: str | None = None
    repaired: bool = False


@dataclass(frozen=True)
class DebateRound:
    number: int
    turns: tuple[AgentTurn, ...]

    def turn(self, agent: str) -> AgentTurn:
        return next(t for t in self.turns if t.agent == agent)

    @property
    def parsed(self) -> bool:
        return all(t.response is not None for t in self.turns)

    @property
    def agreed(self) -> bool:
        return self.parsed and len({t.response for t in self.turns}) == 1


@dataclass
class _Debate:
    case: Case
    rounds: list[DebateRound] = field(default_factory=list)
    responses: list[LLMResponse] = field(default_factory=list)
    cut: dict[str, Any] = field(default_factory=dict)
    """``{"passage_cut": ...}`` when the passage was cut to fit the model's context."""


def parse_turn(agent: str, response: LLMResponse) -> AgentTurn:
    """A reply parsed into a turn, with P(yes) from the response's probe when present."""
    turn = parse_agent_reply(agent, response.text)
    return replace(turn, p_yes=answer_probability(response, "yes", "no"))


def parse_agent_reply(agent: str, text: str) -> AgentTurn:
    data = parse_json_object(text)
    response = yes_no(data.get("response"), "response")
    reason = data.get("reason", "")
    if not isinstance(reason, str):
        raise ParseError('field "reason" must be a string')
    reference = data.get("reference", [])
    if isinstance(reference, str):
        reference = [reference]
    if not isinstance(reference, list) or not all(isinstance(r, str) for r in reference):
        raise ParseError('field "reference" must be a list of quoted sentences')
    return AgentTurn(agent, response, reason.strip(), tuple(r.strip() for r in reference if r.strip()), raw=text)


class DebateEngine:
    """Runs DREAM debates for many pairs, one LLM batch per round."""

    name = "dream"

    def __init__(self, llm: LLMBackend, config: DebateConfig | None = None) -> None:
        self.llm = llm
        self.config = config or DebateConfig()
        self._prompts = template_module(TEMPLATE)
        self._order = (AGENT_B, AGENT_A) if self.config.swap_stances else (AGENT_A, AGENT_B)

    @property
    def config_id(self) -> str:
        payload = json.dumps(
            {
                "judge": self.name,
                "config": asdict(self.config),
                "model": self.llm.model_id,
                "prompts": template_digest(TEMPLATE),
            },
            sort_keys=True,
        )
        return "dream-" + hashlib.sha256(payload.encode()).hexdigest()[:12]

    # -- prompts ---------------------------------------------------------------------------
    def agent_messages(self, case: Case, agent: str, history: Sequence[DebateRound]) -> tuple[Message, ...]:
        p = self._prompts
        other = AGENT_B if agent == AGENT_A else AGENT_A
        has_answers = bool(case.answers)
        opening = {a: str(p.opening(OPENING_STANCE[a], has_answers)) for a in self._order}
        role = str(p.role(agent, other))
        task = str(p.task(has_answers))
        guidelines = str(p.guidelines(has_answers))
        output = str(p.output_format())
        inputs = str(p.inputs(case.query, list(case.answers), case.chunk, list(case.evidence)))
        hist = str(p.history(opening, list(history), agent, list(self._order)))
        closing = str(p.closing(agent, other, len(history) + 1))
        if self.config.prompt_order == "paper":
            system = "\n\n".join([role, task, guidelines, output])
            user = "\n\n".join([inputs, hist, closing])
        else:
            system = "\n\n".join([task, guidelines, output])
            user = "\n\n".join([inputs, role, hist, closing])
        return (Message("system", system), Message("user", user))

    def agent_request(self, case: Case, agent: str, history: Sequence[DebateRound]) -> LLMRequest:
        """The request for one agent's turn (prompt, decoding parameters, schema)."""
        return self._request(self.agent_messages(case, agent, history), AGENT_SCHEMA)

    def _request(self, messages: tuple[Message, ...], schema: dict[str, Any]) -> LLMRequest:
        return LLMRequest(
            messages=messages,
            max_tokens=self.config.max_tokens,
            temperature=self.config.temperature,
            json_schema=schema_text(schema),
            probe_field="response" if self.config.probe_yes else None,
        )

    def repair_text(self, error: str) -> str:
        return str(self._prompts.repair(error))

    def _ask(self, requests: list[LLMRequest], agents: list[str], spent: list[list[LLMResponse]]) -> list[AgentTurn]:
        """One batch of turns (with one repair re-ask); ``spent[i]`` collects request i's responses."""
        replies = ask_with_repair(self.llm, requests, lambda i, r: parse_turn(agents[i], r), self.repair_text)
        turns = []
        for i, reply in enumerate(replies):
            spent[i].extend(reply.responses)
            if reply.value is None:
                turns.append(
                    AgentTurn(agents[i], None, raw=reply.responses[-1].text, error=reply.error, repaired=reply.repaired)
                )
            else:
                turns.append(replace(reply.value, repaired=reply.repaired))
        return turns

    def _play_round(self, debates: Sequence[_Debate]) -> None:
        jobs = [(d, agent) for d in debates for agent in self._order]
        requests = [self.agent_request(d.case, agent, d.rounds) for d, agent in jobs]
        turns = self._ask(requests, [agent for _, agent in jobs], [d.responses for d, _ in jobs])
        width = len(self._order)
        for k, d in enumerate(debates):
            d.rounds.append(DebateRound(len(d.rounds) + 1, tuple(turns[k * width : (k + 1) * width])))

    # -- the debate ------------------------------------------------------------------------
    def fit(self, cases: Sequence[Case], on_record: Callable[[LabelRecord], None]) -> list[_Debate]:
        """The debates to hold, each pair's passage cut to fit the model's context with its opening turn (later
        rounds add the history: one that no longer fits ends the pair as ``too-long``); a pair whose prompt cannot
        fit at all is recorded ``too-long`` at once, open."""
        debates = []
        for case in cases:
            fitted = fit_passage(
                self.llm, case.chunk, lambda text, case=case: self.agent_request(replace(case, chunk=text), AGENT_A, ())
            )
            debate = _Debate(replace(case, chunk=fitted.passage), cut=fitted.details())
            if fitted.request is None:
                on_record(self._record(debate, None, TOO_LONG))
            else:
                debates.append(debate)
        return debates

    def judge(self, cases: Sequence[Case], on_record: Callable[[LabelRecord], None]) -> None:
        pending = self.fit(cases, on_record)
        for _ in range(self.config.rounds):
            if not pending:
                return
            self._play_round(pending)
            still: list[_Debate] = []
            for d in pending:
                last = d.rounds[-1]
                if not last.parsed:
                    on_record(self._record(d, None, self._failure(d)))
                elif last.agreed:
                    label = 1 if last.turns[0].response == "yes" else 0
                    on_record(self._record(d, label, f"consensus-r{last.number}"))
                else:
                    still.append(d)
            pending = still
        if not pending:
            return
        if self.config.escalate_to == "human":
            for d in pending:
                on_record(self._record(d, None, "escalated"))
        else:
            self._adjudicate(pending, on_record)

    def adjudicator_messages(self, case: Case, rounds: Sequence[DebateRound]) -> tuple[Message, ...]:
        p = self._prompts
        has_answers = bool(case.answers)
        opening = {a: str(p.opening(OPENING_STANCE[a], has_answers)) for a in self._order}
        user = "\n\n".join(
            [
                str(p.inputs(case.query, list(case.answers), case.chunk, list(case.evidence))),
                str(p.history(opening, [rounds[-1]], "", list(self._order))),
                str(p.adjudicator_closing()),
            ]
        )
        return (Message("system", str(p.adjudicator_system(has_answers))), Message("user", user))

    def _adjudicate(self, debates: Sequence[_Debate], on_record: Callable[[LabelRecord], None]) -> None:
        requests = [self._request(self.adjudicator_messages(d.case, d.rounds), ADJUDICATOR_SCHEMA) for d in debates]
        verdicts = self._ask(requests, ["Adjudicator"] * len(debates), [d.responses for d in debates])
        for d, verdict in zip(debates, verdicts, strict=True):
            adjudication = _turn_json(verdict)
            if verdict.response is None:
                on_record(self._record(d, None, self._failure(d), {"adjudication": adjudication}))
            else:
                label = 1 if verdict.response == "yes" else 0
                on_record(self._record(d, label, "adjudicated", {"adjudication": adjudication}))

    @staticmethod
    def _failure(d: _Debate) -> str:
        """``too-long`` when a prompt of the debate did not fit the model's context, else ``parse-failure``."""
        return TOO_LONG if any(r.finish_reason == TOO_LONG for r in d.responses) else "parse-failure"

    def _record(self, d: _Debate, label: int | None, route: str, details: dict[str, Any] | None = None) -> LabelRecord:
        first = d.rounds[0].turn(AGENT_A) if d.rounds else None
        return judge_record(
            d.case,
            label,
            route,
            Decider(self.name, self.config_id, self.llm.model_id),
            details={**d.cut, **(details or {})},
            p_yes=first.p_yes if first else None,
            usage=usage_of(d.responses),
            rounds=[{"round": r.number, "agents": [_turn_json(t) for t in r.turns]} for r in d.rounds],
        )


def _turn_json(turn: AgentTurn) -> dict[str, Any]:
    data = asdict(turn)
    data["reference"] = list(turn.reference)
    return data


@register_judge(
    "dream", DebateConfig, calls_llm=True, measured=True, feedback=True, debates=True, sample_default=4,
    reference_default=5,
)  # fmt: skip
def make_dream(spec: JudgeSpec, context: JudgeContext) -> DebateEngine:
    return DebateEngine(context.needs("dream", "llm"), spec.settings)
