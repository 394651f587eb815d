"""Calibration measures and fits by hand, the calibrated one-pass judge, and cascade routing."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from conftest import ScriptedLLM, agent_reply, prompt_text, run_label

from bridge.judging.base import Case
from bridge.judging.fitting.metrics import roc_auc
from bridge.judging.fitting.score_maps import (
    Band,
    Calibrator,
    band_for_share,
    brier_score,
    expected_calibration_error,
    fit_calibrator,
    fit_isotonic,
    pair_hash,
    reliability,
)
from bridge.judging.llm.cascade import CalibratedJudge, CascadeConfig, CascadeJudge
from bridge.judging.llm.dream import DebateEngine


def test_isotonic_calibration_does_not_depend_on_the_order_of_tied_scores():
    """Tied scores merge into one point first (their mean label): 0.9 (labels 1, 0, 1, 1) maps to 0.75 and
    0.5 (labels 1, 0) to 0.5 in every order of the input; PAVA over the raw order mapped 0.9 to 1.0 or 0.5."""
    scores = [0.9, 0.9, 0.9, 0.9, 0.5, 0.5, 0.1]
    labels = [1, 0, 1, 1, 1, 0, 0]
    seen = set()
    for order in itertools.permutations(range(len(scores))):
        fit = fit_calibrator([scores[i] for i in order], [labels[i] for i in order], "isotonic")
        seen.add(tuple(np.round(fit([0.1, 0.5, 0.9]), 12)))
    assert seen == {(0.0, 0.5, 0.75)}


def test_brier_ece_and_auroc_by_hand():
    p, y = [0.9, 0.8, 0.3, 0.2], [1, 0, 1, 0]
    # Brier: (0.01 + 0.64 + 0.49 + 0.04) / 4
    assert brier_score(p, y) == pytest.approx(0.295)
    # two bins of width 0.5: [0.2, 0.3] predicts 0.25, observed 0.5; [0.8, 0.9] predicts 0.85, observed 0.5
    assert expected_calibration_error(p, y, bins=2) == pytest.approx(0.5 * 0.25 + 0.5 * 0.35)
    r = reliability(p, y, bins=2)
    assert r.counts == (2, 2) and r.observed == (0.5, 0.5)
    # positives 0.9 and 0.3 against negatives 0.8 and 0.2: 3 of 4 pairs ordered right
    assert roc_auc(p, [bool(v) for v in y]) == pytest.approx(0.75)


def test_isotonic_fit_by_hand():
    # pool adjacent violators: (0.2 -> 1) then (0.3 -> 0) violate and merge into one block of mean 0.5
    x, y = fit_isotonic([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1])
    assert np.interp([0.1, 0.2, 0.25, 0.3, 0.4], x, y) == pytest.approx([0.0, 0.5, 0.5, 0.5, 1.0])
    cal = fit_calibrator([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1], "isotonic", source="test")
    # knots at each block's ends (scikit-learn's convention): 0.175 lies between 0.1 -> 0 and 0.2 -> 0.5
    assert cal([0.1, 0.175, 0.25, 0.4, 0.9]).tolist() == pytest.approx([0.0, 0.375, 0.5, 1.0, 1.0])
    assert Calibrator.from_json(json.loads(json.dumps(cal.to_json()))) == cal
    platt = fit_calibrator([-2.0, -1.0, 1.0, 2.0, 1.5, -1.5], [0, 0, 1, 1, 0, 1], "platt")
    assert 0.0 < platt([0.0])[0] < 1.0 and platt([3.0])[0] > platt([-3.0])[0]


def test_band_for_a_target_share():
    band = band_for_share([0.05, 0.3, 0.45, 0.55, 0.7, 0.95], 1 / 3)
    assert (band.low, band.high) == pytest.approx((0.45, 0.55))
    assert Band(0.2, 0.8).contains(0.5) and not Band(0.2, 0.8).contains(0.95)
    with pytest.raises(ValueError):
        Band(0.8, 0.2)


def probe_for(p_true: float) -> dict[str, float]:
    return {"true": math.log(p_true), "false": math.log(1 - p_true)}


def one_pass(request):
    """P(true) is given by the chunk: 'p=0.95' -> 0.95."""
    chunk = prompt_text(request).split("<chunk>\n")[1].split("\n</chunk>")[0]
    p = float(chunk.split("p=")[1])
    return json.dumps({"is_supported": p >= 0.5}), probe_for(p)


def test_cascade_routing_a_confident_pair_never_reaches_the_debate():
    scorer_llm = ScriptedLLM(one_pass)
    debate_llm = ScriptedLLM(lambda r: agent_reply("yes"))
    cascade = CascadeJudge(CalibratedJudge(scorer_llm), DebateEngine(debate_llm), CascadeConfig(low=0.2, high=0.8))
    cases = [Case("q", "sure", "q", "p=0.95"), Case("q", "unsure", "q", "p=0.5"), Case("q", "no", "q", "p=0.05")]
    records = []
    cascade.judge(cases, records.append)
    by = {r.docid: r for r in records}
    assert (by["sure"].label, by["sure"].route, by["sure"].stage) == (1, "calibrated", "calibrated")
    assert (by["no"].label, by["no"].route) == (0, "calibrated")
    assert by["unsure"].route == "consensus-r1" and by["unsure"].stage == "dream"
    assert {prompt_text(r).split("<chunk>\n")[1].split("\n")[0] for r in debate_llm.requests} == {"p=0.5"}
    assert by["unsure"].details["calibrated"]["p"] == pytest.approx(0.5) and by["unsure"].usage.calls == 3
    assert by["sure"].p_yes == pytest.approx(0.95) and by["sure"].details["score_source"] == "logprob"
    assert len({r.config_id for r in records}) == 1


def test_calibrated_judge_falls_back_to_a_verbalized_confidence_without_logprobs():
    def no_probe(request):
        if "confidence" in request.messages[0].content:
            return json.dumps({"confidence": 85})
        return json.dumps({"is_supported": True})

    llm = ScriptedLLM(no_probe)
    records = []
    CalibratedJudge(llm).judge([Case("q", "d", "q", "text")], records.append)
    assert records[0].p_yes == pytest.approx(0.85) and records[0].details["score_source"] == "verbalized"
    assert records[0].usage.calls == 2 and len(llm.requests) == 2


def test_a_label_run_with_the_cascade_calibrates_on_known_pairs_and_names_the_calibration(tmp_path):
    from test_audit import qa_dataset, stage_pool

    ds = qa_dataset(answers=False, judged_negatives=True)
    stage_pool(ds, tmp_path)

    def score_by_truth(request):  # relevant chunks (GOLD) get a high raw score, others a low one
        p = 0.7 if "GOLD" in request.messages[-1].content.split("<chunk>\n")[1] else 0.4
        return json.dumps({"is_supported": True}), probe_for(p)

    cascade = CascadeJudge(
        CalibratedJudge(ScriptedLLM(score_by_truth)), DebateEngine(ScriptedLLM(lambda r: agent_reply("no")))
    )
    summary = run_label(ds, cascade, tmp_path, audit_pairs=20)
    saved = Calibrator.load(tmp_path / "calibration.json")
    assert saved.fitted_on == 60 and saved([0.7])[0] == 1.0 and saved([0.4])[0] == 0.0
    records = [json.loads(line) for line in (tmp_path / "labels.jsonl").read_text().splitlines()]
    assert {r["details"]["calibration"] for r in records} == {saved.identity}
    assert all(r["route"] == "calibrated" for r in records)  # calibrated P is 0 or 1: nothing is uncertain
    assert summary.audit.lanes["pipeline"].agreement.balanced_accuracy == 1.0
    assert any("cascade: isotonic calibration on 60 known pairs" in line for line in summary.lines())


def test_a_weak_scorer_leaves_most_pairs_uncertain_and_the_band_narrows_to_the_share_cap():
    scorer_llm = ScriptedLLM(one_pass)
    cascade = CascadeJudge(CalibratedJudge(scorer_llm), DebateEngine(ScriptedLLM(lambda r: agent_reply("no"))))
    cases = [
        Case("q", f"d{i}", "q", f"p={p}")
        for i, p in enumerate([0.3, 0.35, 0.4, 0.45, 0.52, 0.6, 0.65, 0.7, 0.75, 0.95])
    ]
    band = cascade.set_band(cases)  # 9 of 10 inside [0.2, 0.8]: more than the 10% cap
    assert (band.low, band.high) == pytest.approx((0.48, 0.52)) and band.share == 0.1
    records = []
    cascade.judge(cases, records.append)
    assert sum(r.stage == "dream" for r in records) == 1  # only p = 0.52 is debated
    uncapped = CascadeJudge(CalibratedJudge(scorer_llm), DebateEngine(ScriptedLLM(lambda r: agent_reply("no"))),
                            CascadeConfig(max_debate_share=None))  # fmt: skip
    assert (uncapped.set_band(cases).low, uncapped.set_band(cases).high) == (0.2, 0.8)


def test_tied_probabilities_still_send_only_the_capped_share_to_the_debate():
    """A weak scorer gives most pairs the same calibrated P (a flat isotonic step): the band must still
    hold ceil(10%) of them, the ones with the smallest pair hash, and the same rule holds for any pair."""
    p = [0.5] * 8 + [0.9, 0.1]
    keys = [0.8, 0.1, 0.6, 0.3, 0.7, 0.2, 0.5, 0.4, 0.05, 0.01]
    band = band_for_share(p, 0.3, keys)  # 3 of 10: the tied 0.5s with the three smallest keys
    inside = [i for i in range(10) if band.contains(p[i], keys[i])]
    assert inside == [1, 3, 5] and band.tie_cut == 0.3
    assert band_for_share(p, 0.3).contains(0.5, 0.99)  # without keys every tie stays inside (old behaviour)

    scorer_llm = ScriptedLLM(one_pass)
    cascade = CascadeJudge(CalibratedJudge(scorer_llm), DebateEngine(ScriptedLLM(lambda r: agent_reply("no"))))
    cases = [Case("q", f"d{i}", "q", "p=0.5") for i in range(20)]
    cascade.set_band(cases)
    records = []
    cascade.judge(cases, records.append)
    debated = sorted(r.docid for r in records if r.stage == "dream")
    assert len(debated) == 2  # ceil(0.1 x 20), not all 20
    assert debated == sorted(sorted((c.docid for c in cases), key=lambda d: pair_hash("q", d))[:2])


def test_a_time_budget_bounds_the_cascades_debates_and_keeps_what_the_one_pass_settled(tmp_path, monkeypatch):
    """A one-pass score costs 1 s (0 from the cache) and a debate call 10 s; about half the passages' scores say
    nothing (raw 0.5, calibrated near 0.5: the debate), the rest are sure. With a 2-minute budget the scoring pass of
    the 80 pool pairs takes 80 s, every pair it settled is kept, and the debates stop at the deadline: the budget's
    ledger ends within 2 minutes plus one debate, where judging every debate would take 30-odd of them."""
    import zlib

    from test_audit import qa_dataset, stage_pool

    from bridge.label import pool_judging as label_judging

    clock = [0.0]
    monkeypatch.setattr(label_judging.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(label_judging.time, "perf_counter", lambda: clock[0])
    ds = qa_dataset(answers=False, judged_negatives=True)
    pool = stage_pool(ds, tmp_path)
    texts = {e.docid: ds.corpus.get(e.docid).text for e in pool}

    def unsure(passage: str) -> bool:
        return zlib.crc32(passage.encode()) % 2 == 1

    asked: set[str] = set()

    def score(request):
        chunk = request.messages[-1].content.split("<chunk>\n")[1].split("\n</chunk>")[0]
        clock[0] += 0.0 if request.messages[-1].content in asked else 1.0
        asked.add(request.messages[-1].content)
        p = 0.5 if unsure(chunk) else 0.9 if "GOLD" in chunk else 0.1
        return json.dumps({"is_supported": True}), probe_for(p)

    def debate(request):
        clock[0] += 10.0
        return agent_reply("no")

    cascade = CascadeJudge(CalibratedJudge(ScriptedLLM(score)), DebateEngine(ScriptedLLM(debate)),
                           CascadeConfig(max_debate_share=None))  # fmt: skip
    summary = run_label(ds, cascade, tmp_path, max_minutes=2.0, batch_pairs=16)
    records = [json.loads(line) for line in (tmp_path / "labels.jsonl").read_text().splitlines()]
    sure = sum(not unsure(texts[e.docid]) for e in pool)
    debated = [r for r in records if r["stage"] == "dream"]
    assert sum(r["route"] == "calibrated" for r in records) == sure and 20 < sure < 60
    assert 0 < len(debated) < 80 - sure and summary.left_by_budget == 80 - sure - len(debated)
    one_debate = max(r["usage"]["calls"] for r in debated) * 10.0
    assert next(iter(json.loads((tmp_path / "budget.json").read_text()).values())) <= 120.0 + one_debate
