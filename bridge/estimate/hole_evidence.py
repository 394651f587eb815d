"""One model of the holes: P(relevant) for every pair no person judged, with the calibration's own uncertainty.

Every score, interval, verdict, value and budget of bridge draws from this model, and nothing else states
its rules. A pair the original qrels or people judged is **fixed**. Every other pair a leaderboard can see (a
pool pair, a labelled pair, a pair in a system's top k outside the pool) is **open** and carries P from the
stage that labelled it, through a :class:`Calibration`:

* a **hole-like calibration** fitted on a random sample of holes with known labels (an answer judge on a
  read reference; :mod:`bridge.judging.fitting.hole_calibration`): its strata and coefficient draws as fitted, and
  each kind's level shift as wide as the fit's own held-out check needs to cover (``kind_sd``);
* the **evidence gate**'s zeros: if a share ``m`` of known relevant passages holds none of its answers, the
  relevant holes that hold one (``R``, the sum of their P and the holes people judged relevant) have
  ``R m / (1 - m)`` companions among the ``G`` gate zeros, so each is relevant with ``R m / ((1 - m) G)``; ``m`` is
  drawn from its Jeffreys posterior;
* a calibration **on known pairs** (a topic adapter's out-of-fold calibration, an LLM judge calibrated on its
  audit's known pairs): known pairs are not like holes, so its logit is shifted by a draw from
  N(0, ``transfer_sd``) (measured on dl19's removed pairs, bench/RESULTS.md);
* no usable calibration (an undecided pair, an unjudged one, a label of a judge nobody measured): the
  **prior**, the mean P of the topic's other open pairs (where no pair was calibrated at all: the topic's share of
  the ranked pairs people judged that they judged relevant) with a wide logit shift; where the topic's qrels judge
  no ranked pair non-relevant (BEIR, MS MARCO, NQ: positives only), nothing measured says how many holes are
  relevant, and the share is drawn anywhere in (0, 1), common to all such pairs (**unmeasured**): the interval may
  reach the bounds, as it should.

People's answers to a **random** share of the open pairs (``details["sampling"] == "random"``) are a sample of
holes: each calibration is updated by them (a logit shift with its posterior over a grid, the calibration's
draws as the prior), so a calibration on known pairs, or on another reading, moves toward what people say; a fit
with a topic spread (the exemplar judge's) has its level, recalibration and every topic's and family's shift drawn
from their joint posterior (:mod:`bridge.estimate.level`).
Their answers themselves are fixed like every other human label. No P is exactly 0 or 1.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from bridge.core.label_records import HUMAN_JUDGE, LabelRecord, grade_fits
from bridge.core.trec import Qrels
from bridge.estimate.calibration import (
    ADAPTER,
    GATE,
    LLM,
    PRIOR,
    RANDOM_SAMPLING,
    UNCALIBRATED,
    UNMEASURED,
    UNPOOLED,
    Calibration,
    Pair,
    PairFacts,
    constant_calibration,
    normal_spread,
    shift_calibration,
    uninformed_calibration,
)
from bridge.estimate.hole_grades import grade_model
from bridge.estimate.holes import HoleModel, StratumShift, gate_bound
from bridge.estimate.level import AGREEMENT, TERMS, level_posterior, recalibrated, topic_conditional, weight_matrix


@dataclass(frozen=True)
class HoleModelConfig:
    draws: int = 400
    """Calibration draws each calibration is brought to (coefficients x shifts)."""
    transfer_sd: float = 0.5
    """Logit shift (sd) of a calibration on known pairs applied to holes, once for all of its pairs and once more
    per stratum (the set of systems that pooled a pair): known pairs are not holes, and how unlike them differs by
    the systems whose holes they are (bench/RESULTS.md, "transfer")."""
    prior_sd: float = 1.0
    """Logit shift (sd) of the prior P of a pair nobody could calibrate."""
    reading_sd: float = 1.0
    """Prior sd of the logit shift people's random answers estimate for a hole-like calibration (their reading
    may differ from the one it was fitted on)."""
    grade_sd: float = 0.5
    """Log-normal sd of each grade's odds in a hole's grade mix (graded qrels): holes are graded like the judged
    pairs the systems retrieve, up to this."""
    gate_max_share: float = 0.5
    """Cap on a gate zero's P (the gate's miss rate says how many relevant holes it drops, not more)."""
    gate_bound_level: float = 0.975
    """The bounds take the gate's miss rate at this credible level (:class:`GateBound`)."""
    seed: int = 0


def _human_grade(record: LabelRecord, threshold: int) -> int:
    """People's label as a grade: the grade they gave where it agrees with the label, else the threshold grade
    for relevant and 0."""
    grade = record.details.get("grade")
    if isinstance(grade, int) and not isinstance(grade, bool) and grade_fits(grade, record.label or 0, threshold):
        return grade
    return threshold if record.label else 0


def model_record(human: LabelRecord) -> LabelRecord | None:
    """The model's record a people's label replaced (kept in its ``details["escalated"]``), if it had one."""
    source = human.details.get("escalated")
    if not isinstance(source, dict) or not source.get("judge"):
        return None
    return LabelRecord(
        qid=human.qid,
        docid=human.docid,
        label=source.get("label"),
        route=str(source.get("route") or ""),
        judge=str(source["judge"]),
        config_id=str(source.get("config_id") or ""),
        model=str(source.get("model") or ""),
        details=dict(source.get("details") or {}),
        p_yes=human.p_yes,
        systems=list(human.systems),
        min_rank=human.min_rank,
        stage=str(source.get("stage") or ""),
    )


def stage_calibration(record: LabelRecord, calibrations: Mapping[str, Calibration]) -> str:
    """The calibration a model's record is drawn from (the one rule that maps records to calibrations)."""
    named = record.details.get("calibration")
    if isinstance(named, str) and named in calibrations:
        return named
    if record.stage == "evidence" and record.label == 0:
        return GATE
    if record.stage == "adapter" and record.p_yes is not None:
        return ADAPTER
    if record.label is not None and LLM in calibrations:
        return LLM
    return PRIOR


@dataclass(frozen=True)
class HoleEvidence:
    """What a hole model is built from: the judgments so far and the pairs a leaderboard can see."""

    original: Qrels
    records: Iterable[LabelRecord]
    """The counted records, later ones winning over earlier ones for a pair and people's always winning (pass the
    free stages' records before a costly judge's); read once."""
    pool: Iterable[Pair]
    topics: Sequence[str]
    threshold: int
    calibrations: Mapping[str, Calibration] | None = None
    """The label run's (:data:`bridge.core.layout.HOLE_CALIBRATIONS_FILE`)."""
    gate_recall: tuple[int, int] | None = None
    """(known relevant passages holding an answer, checked) of the evidence gate."""
    seen: Iterable[Pair] = ()
    """Pairs the leaderboard scores that may lie outside the pool (each system's top k); those nobody labelled are
    open with the prior, and the model notes how many."""
    people_answers: Sequence[tuple[LabelRecord, int]] = ()
    """More answers of people on random holes (the model's record of each, and the answer), kept elsewhere, to
    calibrate with."""
    graded_like: Iterable[Pair] | None = None
    """The pairs whose judged grades a hole's grade is drawn like (default ``seen``)."""
    families: Mapping[str, str] | None = None
    """System -> retrieval family; a pair's stratum is then the set of families that pooled it (else of systems)."""


@dataclass(frozen=True)
class Answer:
    """People's answer on a random hole: the facts of the model's record it replaced, the label, the topic."""

    facts: PairFacts
    label: int
    qid: str


@dataclass
class _OpenPairs:
    """The open pairs of a hole model as they are gathered: each with its stage's calibration name and facts."""

    pairs: list[Pair] = field(default_factory=list)
    stage: list[str] = field(default_factory=list)
    facts: list[PairFacts] = field(default_factory=list)
    labels: dict[Pair, int] = field(default_factory=dict)
    people_relevant: int = 0
    """Holes people judged relevant (with the open pairs, the relevant holes the gate's miss rate scales)."""
    graded_below: list[int] = field(default_factory=list)
    """The grades people gave holes below the threshold, where their answer carried one (a yes/no answer says
    "not relevant", not whether the hole is a "related" 1 or a 0)."""

    def groups(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for i, name in enumerate(self.stage):
            out.setdefault(name, []).append(i)
        return out


def build_hole_model(evidence: HoleEvidence, config: HoleModelConfig = HoleModelConfig()) -> HoleModel:
    """The model of a label run's holes (:class:`HoleEvidence` says what each input is)."""
    seen = list(evidence.seen)
    rng = np.random.default_rng(config.seed)
    keep = set(evidence.topics)
    original, threshold = evidence.original, evidence.threshold
    calibrations = dict(evidence.calibrations or {})
    fixed: Qrels = {q: dict(docs) for q, docs in original.items() if q in keep}
    latest = _latest_records(evidence.records, keep, original)
    pooled: dict[Pair, None] = {}
    for pair in [*evidence.pool, *latest]:
        if pair[0] in keep and pair[1] not in original.get(pair[0], {}):
            pooled.setdefault(pair)
    unpooled = [p for p in dict.fromkeys(seen) if p[0] in keep and p not in pooled and p[1] not in fixed.get(p[0], {})]
    people: dict[str, list[Answer]] = {}
    for before, answer in evidence.people_answers:
        people.setdefault(stage_calibration(before, calibrations), []).append(
            Answer(PairFacts.of(before), answer, before.qid)
        )
    opened = _open_pairs(list(pooled), latest, fixed, people, calibrations, threshold)
    opened.pairs += unpooled
    opened.stage += [UNPOOLED] * len(unpooled)
    opened.facts += [PairFacts() for _ in unpooled]

    groups = opened.groups()
    pair_facts = {name: [opened.facts[i] for i in idx] for name, idx in groups.items()}
    applied, measured = _applied_calibrations(calibrations, people, config, rng, evidence.families or {}, pair_facts)
    p_mean = np.full(len(opened.pairs), math.nan)
    for name, idx in groups.items():
        if name in applied and name not in UNCALIBRATED:
            p_mean[idx] = applied[name].mean(applied[name].rows([opened.facts[i] for i in idx]))
    like = seen if evidence.graded_like is None else list(evidence.graded_like)
    calibrated = not np.isnan(p_mean).all()  # else the prior falls back on each topic's prevalence
    prevalence = {} if calibrated else topic_prevalence([*like, *opened.pairs], fixed, threshold)
    _apply_prior(opened, groups, p_mean, applied, people, prevalence, config, rng)
    groups = opened.groups()
    bound = None
    if GATE in groups:
        zeros = len(groups[GATE])
        applied[GATE] = _gate_calibration(evidence.gate_recall, p_mean, opened.stage, zeros, opened.people_relevant,
                                          config, rng)  # fmt: skip
        others = len(opened.pairs) - zeros + opened.people_relevant
        bound = gate_bound(evidence.gate_recall, zeros, others, config.gate_bound_level)
    notes: list[str] = []
    if unpooled:
        notes.append(
            f"{len(unpooled)} pairs in the systems' top k are outside the pool (a pool shallower than a measure's "
            "cutoff, or runs newer than the pool): open in the bounds, the prior's P in the estimate"
        )
    facts = opened.facts
    index_groups = {
        name: (np.array(idx, dtype=int), applied[name].rows([facts[i] for i in idx])) for name, idx in groups.items()
    }
    used = {name: applied[name] for name in index_groups}
    strata: dict[str, list[StratumShift]] = {}
    for name, idx in groups.items():
        c = used[name]
        if name in UNCALIBRATED:
            continue
        if not c.hole_like and config.transfer_sd > 0:
            membership = _membership([facts[i] for i in idx], evidence.families or {})
            strata.setdefault(name, []).append(StratumShift(membership, config.transfer_sd))
        if c.topic_sd > 0:  # a level calibration: each topic's and each family's shift (measured where answered)
            topics, families = measured.get(name, ({}, {}))
            keys = [opened.pairs[i][0] for i in idx]
            strata.setdefault(name, []).append(_stratum_shift([{q: 1.0} for q in keys], c.topic_sd, topics))
            if c.family_sd > 0:
                weights = [family_weights(facts[i], evidence.families or {}) for i in idx]
                strata[name].append(_stratum_shift(weights, c.family_sd, families))
    people_random = sum(len(v) for v in people.values())
    # holes are graded like the pairs people judged, their answers on holes included (where the qrels hold positives
    # only, people's graded answers are what measures how a hole that is not relevant is graded)
    grading = grade_model(original, fixed, opened.pairs, threshold, like, config.grade_sd, opened.graded_below)
    return HoleModel(
        threshold, fixed, opened.pairs, opened.stage, index_groups, used, opened.labels, notes, people_random, grading,
        strata, bound,
    )  # fmt: skip


def _latest_records(records: Iterable[LabelRecord], keep: set[str], original: Qrels) -> dict[Pair, LabelRecord]:
    """The record that counts for each unjudged pair of the kept topics: the latest, people's always winning."""
    latest: dict[Pair, LabelRecord] = {}
    for r in records:
        pair = (r.qid, r.docid)
        if r.qid not in keep or r.docid in original.get(r.qid, {}):
            continue
        if r.judge == HUMAN_JUDGE or latest.get(pair, r).judge != HUMAN_JUDGE:
            latest[pair] = r
    return latest


def _open_pairs(
    order: Sequence[Pair],
    latest: Mapping[Pair, LabelRecord],
    fixed: Qrels,
    people: dict[str, list[Answer]],
    calibrations: Mapping[str, Calibration],
    threshold: int,
) -> _OpenPairs:
    """Pool pairs in order: people's labels become fixed grades (their random answers also calibrate, into
    ``people``), every other pair is open with its stage's calibration name."""
    opened = _OpenPairs()
    for pair in order:
        r = latest.get(pair)
        if r is not None and r.judge == HUMAN_JUDGE and r.label is not None:
            grade = _human_grade(r, threshold)
            fixed.setdefault(pair[0], {})[pair[1]] = grade
            if grade < threshold and isinstance(r.details.get("grade"), int):
                opened.graded_below.append(grade)
            opened.people_relevant += int(r.label == 1)
            before = model_record(r)
            if r.details.get("sampling") == RANDOM_SAMPLING:  # a hole no model labelled: the unmeasured share's
                stage = UNMEASURED if before is None else stage_calibration(before, calibrations)
                facts = PairFacts() if before is None else PairFacts.of(before)
                people.setdefault(stage, []).append(Answer(facts, r.label, r.qid))
            continue
        opened.pairs.append(pair)
        opened.stage.append(PRIOR if r is None else stage_calibration(r, calibrations))
        opened.facts.append(PairFacts.of(r) if r is not None else PairFacts())
        if r is not None and r.label is not None:
            opened.labels[pair] = int(r.label)
    return opened


def _applied_calibrations(
    calibrations: Mapping[str, Calibration],
    people: Mapping[str, list[Answer]],
    config: HoleModelConfig,
    rng: np.random.Generator,
    families: Mapping[str, str],
    pair_facts: Mapping[str, Sequence[PairFacts]],
) -> tuple[dict[str, Calibration], dict[str, tuple[dict[Hashable, np.ndarray], dict[Hashable, np.ndarray]]]]:
    """Each calibration as applied to holes: updated by people's random answers, else shifted where it was fitted
    elsewhere (on known pairs; a shipped fit on another collection's holes, by its own ``transfer_sd``). A calibration
    with a ``topic_sd`` has its level drawn with each topic's and family's shift (:mod:`bridge.estimate.level`; the
    recalibration from ``pair_facts``' recorded features): also returned, per calibration, the shift of each topic
    and of each family people answered in, by draw."""
    applied: dict[str, Calibration] = {}
    measured: dict[str, tuple[dict[Hashable, np.ndarray], dict[Hashable, np.ndarray]]] = {}
    for name, c in calibrations.items():
        answers = people.get(name) or []
        transfer = c.transfer_sd if c.transfer_sd is not None else 0.0 if c.hole_like else config.transfer_sd
        if c.topic_sd > 0:
            common_sd = transfer if c.transfer_sd is not None or not answers else config.reading_sd
            if c.transfer_sd:  # a fit carried to this collection: the answers recalibrate it too
                mine = [*(a.facts for a in answers), *pair_facts.get(name, ())]
                c = recalibrated(topic_conditional(c), recorded_terms(mine))
            else:
                c = topic_conditional(c)
            x, y = c.rows([a.facts for a in answers]), np.array([a.label for a in answers], dtype=int)
            strata = [(c.topic_sd, [{a.qid: 1.0} for a in answers]),
                      (c.family_sd, [family_weights(a.facts, families) for a in answers])]  # fmt: skip
            level = level_posterior(c, x, y, strata, common_sd, rng, config.draws)
            applied[name], measured[name] = level.calibration, (level.shifts[0], level.shifts[1])
            continue
        c = c.widened(rng, config.draws)  # a hole-like fit: each kind's level as uncertain as its own check found
        if answers:  # the common shift's posterior given people's random answers (its prior: the transfer's)
            x = c.rows([a.facts for a in answers])
            sd = transfer if c.transfer_sd is not None else config.reading_sd if c.hole_like else config.transfer_sd
            c = c.updated(x, np.array([a.label for a in answers]), sd, rng)
        elif transfer > 0:
            c = c.shifted(normal_spread(transfer, config.draws, rng), rng, config.draws)
        applied[name] = c
    if ADAPTER not in applied:
        applied[ADAPTER] = _with_people(
            shift_calibration(ADAPTER, config.transfer_sd, config.draws, config.seed,
                              "each topic adapter's out-of-fold calibration on its topic's judged pairs (known pairs)"),
            people.get(ADAPTER), config.transfer_sd, rng,
        )  # fmt: skip
    return applied, measured


def topic_prevalence(ranked: Iterable[Pair], fixed: Qrels, threshold: int) -> dict[str, float]:
    """Per topic, the share of the ranked pairs people judged that they judged relevant, smoothed ((relevant + 1/2) /
    (judged + 1)): what a hole of the topic is taken to be worth where no stage calibrated any pair. Only topics whose
    ranked pairs include a judged non-relevant one: an unjudged pair is not a judged non-relevant one, and where the
    qrels hold positives only (BEIR, MS MARCO, NQ) nothing says how many holes are relevant (:data:`UNMEASURED`). It
    knows nothing of how holes differ from judged pairs; the prior's wide shift says so."""
    pairs: dict[str, set[str]] = {}
    for qid, docid in ranked:
        pairs.setdefault(qid, set()).add(docid)
    out = {}
    for qid, docs in pairs.items():
        grades = [g for d, g in fixed.get(qid, {}).items() if d in docs]
        relevant = sum(1 for g in grades if g >= threshold)
        if relevant < len(grades):
            out[qid] = (relevant + 0.5) / (len(grades) + 1)
    return out


def _apply_prior(
    opened: _OpenPairs,
    groups: Mapping[str, list[int]],
    p_mean: np.ndarray,
    applied: dict[str, Calibration],
    people: Mapping[str, list[Answer]],
    prevalence: Mapping[str, float],
    config: HoleModelConfig,
    rng: np.random.Generator,
) -> None:
    """Pairs nobody could calibrate (and those outside the pool) get the mean P of their topic's calibrated open
    pairs (else of all; where no pair was calibrated, the topic's :func:`topic_prevalence`) and the prior's wide
    calibration; where even that is missing (positives-only qrels), they move to :data:`UNMEASURED`."""
    topic_mean: dict[str, list[float]] = {}
    for (qid, _), p in zip(opened.pairs, p_mean, strict=True):
        if not math.isnan(p):  # a calibrated model's P (not the gate's zeros, known to be unlike other holes)
            topic_mean.setdefault(qid, []).append(p)
    known = [p for values in topic_mean.values() for p in values]
    overall = float(np.mean(known)) if known else None
    for name in (PRIOR, UNPOOLED):
        for i in groups.get(name, ()):
            qid = opened.pairs[i][0]
            values = topic_mean.get(qid)
            p = float(np.mean(values)) if values else overall if overall is not None else prevalence.get(qid)
            if p is None:
                opened.stage[i] = UNMEASURED
                continue
            opened.facts[i] = PairFacts(p=p)
            p_mean[i] = p
        what = (
            "the mean P of the topic's other labelled open pairs (else of all; with none, the topic's share of its "
            "judged ranked pairs judged relevant): nobody measured these"
        )
        applied[name] = _with_people(
            shift_calibration(name, config.prior_sd, config.draws, config.seed + 1, what),
            people.get(name), config.prior_sd, rng,
        )  # fmt: skip
    if UNMEASURED in opened.stage:  # people's random answers on holes no model labelled measure their share
        applied[UNMEASURED] = _with_people(
            uninformed_calibration(config.draws, config.seed + 2), people.get(UNMEASURED), config.prior_sd, rng
        )


def _stratum_shift(
    weights: Sequence[Mapping[Hashable, float]], sd: float, measured: Mapping[Hashable, np.ndarray]
) -> StratumShift:
    """Each stratum's own shift, a pair's logit moving with its strata's by their weights; drawn where nobody
    measured it."""
    order, membership = weight_matrix(weights)
    column = {k: j for j, k in enumerate(order)}
    return StratumShift(membership, sd, {column[k]: v for k, v in measured.items() if k in column})


def family_weights(facts: PairFacts, families: Mapping[str, str]) -> dict[Hashable, float]:
    """The retrieval families that pooled a pair (where ``families`` names them, else its systems), each weighing
    1 / their number: a hole's logit moves with the mean of its families' shifts."""
    found = family_key(facts, families)
    return {f: 1.0 / len(found) for f in found}


def family_key(facts: PairFacts, families: Mapping[str, str]) -> tuple[str, ...]:
    """A pair's stratum of retrievers: the set of retrieval families (where ``families`` names them, else of
    systems) that pooled it."""
    return tuple(sorted({families.get(s, s) for s in facts.systems}))


def _membership(facts: Sequence[PairFacts], families: Mapping[str, str]) -> np.ndarray:
    """(pairs, strata) one-hot: a pair's stratum is the set of retrieval families (where ``families`` names them,
    else of systems) that pooled it: pairs the same retrievers found share their shift; a row of zeros where no
    system did."""
    keys = [family_key(f, families) for f in facts]
    column = {k: j for j, k in enumerate(sorted({k for k in keys if k}))}
    out = np.zeros((len(facts), len(column)))
    for i, k in enumerate(keys):
        if k:
            out[i, column[k]] = 1.0
    return out


def recorded_terms(facts: Sequence[PairFacts]) -> set[str]:
    """The recalibration terms (:data:`bridge.estimate.level.TERMS`) that every one of ``facts`` has: how many systems
    pooled a pair always, a recorded feature where every pair records it."""
    return {AGREEMENT, *(f for f in TERMS if f != AGREEMENT and all(f in x.extra for x in facts))}


def _with_people(
    c: Calibration, answers: list[Answer] | None, prior_sd: float, rng: np.random.Generator
) -> Calibration:
    if not answers:
        return c
    return c.updated(c.rows([a.facts for a in answers]), np.array([a.label for a in answers]), prior_sd, rng)


def _gate_calibration(
    recall: tuple[int, int] | None,
    p_mean: np.ndarray,
    stage: Sequence[str],
    gate_pairs: int,
    people_relevant: int,
    config: HoleModelConfig,
    rng: np.random.Generator,
) -> Calibration:
    """A gate zero's P: the relevant holes the gate drops (its miss rate on known relevant passages, Jeffreys
    posterior) spread over its zeros (module docstring). Without a measured miss rate: the prior."""
    found, checked = recall if recall is not None else (0, 0)
    expected = people_relevant + float(np.nansum([p for p, s in zip(p_mean, stage, strict=True) if s != GATE]))
    if checked <= 0:
        m = rng.beta(0.5, 0.5, config.draws)
        population = "no measured miss rate: the gate's zeros carry a Jeffreys prior miss rate"
    else:
        m = rng.beta(checked - found + 0.5, found + 0.5, config.draws)
        population = (
            f"the gate's miss rate on {checked} known relevant passages ({checked - found} hold no answer), "
            f"spread over its {gate_pairs} zeros with {expected:.1f} expected relevant answer-bearing holes"
        )
    p = np.clip(expected * m / ((1 - m) * max(gate_pairs, 1)), 1e-7, config.gate_max_share)
    return constant_calibration(GATE, p, population)
