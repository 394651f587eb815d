"""DREAM control flow pinned with a scripted LLM (the prompts' content is checked in test_prompts)."""

from __future__ import annotations

import json

import pytest
from conftest import ScriptedLLM, agent_reply, prompt_text, round_of, speaker

from bridge.core.label_records import LabelRecord
from bridge.judging import Case
from bridge.judging.llm.dream import DebateConfig, DebateEngine

CASE = Case("q1", "d1", "who won the first nobel prize in physics", "Rontgen won it in 1901.", ("Wilhelm Rontgen",))


def run(engine: DebateEngine, cases=(CASE,)) -> list[LabelRecord]:
    records: list[LabelRecord] = []
    engine.judge(list(cases), records.append)
    return records


def test_agreement_in_round_one_stops_the_debate():
    llm = ScriptedLLM(lambda r: agent_reply("yes"))
    [record] = run(DebateEngine(llm))
    assert (record.label, record.route) == (1, "consensus-r1")
    assert len(llm.requests) == 2 and len(record.rounds) == 1
    assert record.usage.calls == 2


def test_disagreement_then_agreement_gives_consensus_r2():
    def script(r):
        if round_of(r) == 1:
            return agent_reply("yes" if speaker(r) == "Agent A" else "no")
        return agent_reply("no")

    llm = ScriptedLLM(script)
    [record] = run(DebateEngine(llm))
    assert (record.label, record.route) == (0, "consensus-r2")
    assert [len(r["agents"]) for r in record.rounds] == [2, 2]
    assert len(llm.requests) == 4


def test_persistent_disagreement_escalates_with_full_history():
    llm = ScriptedLLM(lambda r: agent_reply("yes" if speaker(r) == "Agent A" else "no", reason=f"round {round_of(r)}"))
    [record] = run(DebateEngine(llm, DebateConfig(rounds=2)))
    assert (record.label, record.route) == (None, "escalated")
    assert [r["round"] for r in record.rounds] == [1, 2]
    assert [a["reason"] for a in record.rounds[1]["agents"]] == ["round 2", "round 2"]
    # round 2 prompts carry round 1's arguments, the agent's own marked as its own
    round2 = [r for r in llm.requests if round_of(r) == 2]
    a_prompt = prompt_text(next(r for r in round2 if speaker(r) == "Agent A"))
    assert 'Agent A (You) answered "yes". Reason: round 1' in a_prompt
    assert 'Agent B (other assessor) answered "no". Reason: round 1' in a_prompt


def test_more_rounds_are_played_when_configured():
    llm = ScriptedLLM(lambda r: agent_reply("yes" if speaker(r) == "Agent A" else "no"))
    [record] = run(DebateEngine(llm, DebateConfig(rounds=3)))
    assert len(record.rounds) == 3 and record.route == "escalated"


def test_each_round_is_one_batch_over_all_pending_pairs():
    cases = [Case(f"q{i}", f"d{i}", "query", "chunk") for i in range(5)]

    llm = ScriptedLLM(lambda r: agent_reply("yes" if speaker(r) == "Agent A" else "no"))
    records = run(DebateEngine(llm), cases)
    assert llm.batches == [10, 10]
    assert {r.route for r in records} == {"escalated"}


def test_stance_swap_puts_agent_b_first():
    llm = ScriptedLLM(lambda r: agent_reply("no"))
    [record] = run(DebateEngine(llm, DebateConfig(swap_stances=True)))
    assert [a["agent"] for a in record.rounds[0]["agents"]] == ["Agent B", "Agent A"]
    text = prompt_text(llm.requests[0])
    assert text.index("- Agent B") < text.index("- Agent A")
    assert record.label == 0


def test_parse_failure_gets_one_repair_then_escalates():
    llm = ScriptedLLM(lambda r: "this is not json" if speaker(r) == "Agent B" else agent_reply("yes"))
    [record] = run(DebateEngine(llm))
    assert (record.label, record.route) == (None, "parse-failure")
    b = record.rounds[0]["agents"][1]
    assert b["response"] is None and b["repaired"] and "after repair" in b["error"]
    repair = llm.requests[-1]
    assert [m.role for m in repair.messages] == ["system", "user", "assistant", "user"]
    assert len(llm.requests) == 3


def test_repair_that_succeeds_is_used():
    replies = iter(["{broken", agent_reply("yes")])

    def script(r):
        return next(replies) if speaker(r) == "Agent B" else agent_reply("yes")

    [record] = run(DebateEngine(ScriptedLLM(script)))
    assert (record.label, record.route) == (1, "consensus-r1")
    assert record.rounds[0]["agents"][1]["repaired"] is True


def test_invalid_response_value_is_a_parse_failure():
    llm = ScriptedLLM(lambda r: json.dumps({"reference": [], "reason": "x", "response": "maybe"}))
    [record] = run(DebateEngine(llm))
    assert record.route == "parse-failure"


def test_llm_adjudicator_decides_persistent_disagreement():
    def script(r):
        who = speaker(r)
        if who == "Adjudicator":
            return json.dumps({"reason": "B is right", "response": "no"})
        return agent_reply("yes" if who == "Agent A" else "no")

    llm = ScriptedLLM(script)
    [record] = run(DebateEngine(llm, DebateConfig(escalate_to="llm")))
    assert (record.label, record.route) == (0, "adjudicated")
    assert record.details["adjudication"]["reason"] == "B is right"
    assert len(llm.requests) == 5


def test_config_id_changes_with_configuration():
    llm = ScriptedLLM(lambda r: agent_reply("yes"))
    assert DebateEngine(llm).config_id == DebateEngine(llm).config_id
    assert DebateEngine(llm).config_id != DebateEngine(llm, DebateConfig(rounds=3)).config_id


def test_invalid_config_is_rejected():
    with pytest.raises(ValueError):
        DebateConfig(rounds=0)
    with pytest.raises(ValueError):
        DebateConfig(escalate_to="crowd")  # type: ignore[arg-type]


def test_rerun_through_the_response_cache_makes_no_llm_calls(tmp_path):
    from bridge.llm.cache import CachedBackend, ResponseCache

    def script(r):
        return agent_reply("yes" if speaker(r) == "Agent A" or round_of(r) == 2 else "no")

    cases = [Case(f"q{i}", "d", "query", f"chunk {i}") for i in range(3)]
    first = ScriptedLLM(script)
    records = run(DebateEngine(CachedBackend(first, ResponseCache(tmp_path / "c.sqlite"))), cases)
    second = ScriptedLLM(script)
    again = run(DebateEngine(CachedBackend(second, ResponseCache(tmp_path / "c.sqlite"))), cases)
    assert len(first.requests) == 12 and second.requests == []
    assert [(r.label, r.route) for r in again] == [(r.label, r.route) for r in records] == [(1, "consensus-r2")] * 3
    assert all(r.usage.calls == 0 and r.usage.cached_calls == 4 for r in again)


def test_raw_newlines_inside_json_strings_are_accepted():
    reply = '{"reference": ["line one\nline two"], "reason": "multi\nline", "response": "no"}'
    [record] = run(DebateEngine(ScriptedLLM(lambda r: reply)))
    assert (record.label, record.route) == (0, "consensus-r1")
    assert record.rounds[0]["agents"][0]["reference"] == ["line one\nline two"]
