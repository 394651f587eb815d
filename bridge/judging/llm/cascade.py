"""Score every pair once, calibrate, decide the confident pairs, debate only the uncertain band.

DIRAS shows a small model can give calibrated relevance in one pass; DREAM spends 2-4 calls on
every pair. The cascade combines them: the ``calibrated`` judge asks the one-shot question once
per pair and reads P("true") at the decision token (log-probabilities; a verbalized 0-100
confidence where the backend gives none), a :class:`Calibrator` fitted on known pairs turns that
raw score into a probability, pairs outside the band [low, high] take the label P >= 0.5, and only
pairs inside the band (or whose one-pass reply failed) go to the DREAM debate, whose persistent
disagreements go to people.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from typing import Any

from bridge.core.deadline import room_before
from bridge.core.errors import BridgeError
from bridge.core.label_records import LabelRecord, Usage
from bridge.judging.base import Case, Judge, JudgeContext, JudgeSpec, Preparation, Prepared, cases_for, register_judge
from bridge.judging.fitting.score_maps import Band, Calibrator, band_for_share, fit_calibrator, pair_hash
from bridge.judging.free.known_pairs import KINDS, draw_audit_pairs
from bridge.judging.llm.dream import DebateConfig, DebateEngine
from bridge.judging.llm.single import SupportJudge, checked
from bridge.judging.replies import Reply, ask_with_repair, parse_json_object, usage_of
from bridge.judging.settings import option
from bridge.judging.single_call import SingleCallConfig, failure_route
from bridge.llm.base import TOO_LONG, LLMBackend, LLMRequest, LLMResponse, Message, schema_text
from bridge.pool.pooling import PoolEntry
from bridge.prompts import template_module

CONFIDENCE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"confidence": {"type": "integer", "minimum": 0, "maximum": 100}},
    "required": ["confidence"],
}


@dataclass(frozen=True)
class Score:
    """One pair's raw one-pass score (None if unusable) and where it came from."""

    raw: float | None
    source: str
    """``logprob`` (P(true) at the decision token), ``verbalized`` (0-100 confidence / 100), ``failed``."""
    reply: dict[str, Any]
    responses: list[LLMResponse]


ONE_PASS = "calibrated"
"""The calibrated one-pass judge's name, its route and stage in the cascade's records, and the key under which a
debated pair's record keeps the one pass's details."""


class CalibratedJudge(SupportJudge):
    """One call per pair; the label is ``calibrated P >= 0.5`` and ``p_yes`` the calibrated P."""

    name = ONE_PASS

    def __init__(self, llm: LLMBackend, config: SingleCallConfig | None = None, calibrator: Calibrator | None = None):
        super().__init__(llm, config)
        self.calibrator = calibrator

    @property
    def scorer_id(self) -> str:
        """Identifies the raw score (prompt, model, decoding), not the calibration applied to it."""
        return super().config_id

    @property
    def config_id(self) -> str:
        cal = self.calibrator.identity if self.calibrator else "uncalibrated"
        return f"{self.scorer_id}+{cal}"

    def _confidence_request(self, case: Case) -> LLMRequest:
        """The verbalized-confidence question, its passage cut as the one-pass question's was."""
        return self._confidence_for(replace(case, chunk=self.fitted(case).passage))

    def _confidence_for(self, case: Case) -> LLMRequest:
        p = template_module("oneshot.j2")
        return LLMRequest(
            (
                Message("system", str(p.confidence_system(bool(case.answers)))),
                Message("user", str(p.user(case.query, list(case.answers), case.chunk, list(case.evidence)))),
            ),
            max_tokens=16,
            temperature=self.config.temperature,
            json_schema=schema_text(CONFIDENCE_SCHEMA),
        )

    def scores(self, cases: Sequence[Case]) -> list[Score]:
        """Raw scores: P(true) where the backend exposes log-probabilities, else a verbalized confidence."""
        replies = self.ask(cases)
        out: list[Score | None] = []
        verbalize: list[int] = []
        for i, reply in enumerate(replies):
            if reply.value is not None and reply.value.get("p_yes") is not None:
                out.append(Score(float(reply.value["p_yes"]), "logprob", reply.value, reply.responses))
            elif failure_route(reply) == TOO_LONG:  # no question about this passage fits the model's context
                out.append(Score(None, "failed", {"error": reply.error}, reply.responses))
            else:
                out.append(None)
                verbalize.append(i)
        if verbalize:
            repair = template_module("dream.j2").repair
            asked = ask_with_repair(
                self.llm,
                [self._confidence_request(cases[i]) for i in verbalize],
                lambda _, r: _confidence(checked(r)),
                lambda error: str(repair(error)),
            )
            for i, reply in zip(verbalize, asked, strict=True):
                spent = [*replies[i].responses, *reply.responses]
                if reply.value is None:
                    out[i] = Score(None, "failed", {"error": reply.error}, spent)
                else:
                    out[i] = Score(reply.value / 100.0, "verbalized", replies[i].value or {}, spent)
        return [s for s in out if s is not None]

    def calibrate(
        self, cases: Sequence[Case], truth: Sequence[int], source: str, method: str = "isotonic"
    ) -> Calibrator:
        """Fit the calibration of this judge's raw scores on known pairs (one cached call each)."""
        return self.calibrate_scores(self.scores(cases), truth, source, method)

    def calibrate_scores(
        self,
        scores: Sequence[Score],
        truth: Sequence[int],
        source: str,
        method: str = "isotonic",
        pairs: Sequence[tuple[str, str]] = (),
    ) -> Calibrator:
        """Fit the calibration on known pairs' raw scores (as :meth:`scores` gave them); ``pairs`` names them."""
        usable = [(s.raw, t) for s, t in zip(scores, truth, strict=True) if s.raw is not None]
        if not usable:
            raise ValueError("no known pair got a usable score: nothing to calibrate on")
        raw, labels = [s for s, _ in usable], [t for _, t in usable]
        self.calibrator = fit_calibrator(raw, labels, method, source, self.scorer_id, pairs)  # type: ignore[arg-type]
        return self.calibrator

    def probability(self, raw: float) -> float:
        return float(self.calibrator([raw])[0]) if self.calibrator else raw

    def record_for(self, case: Case, score: Score) -> LabelRecord:
        if score.raw is None:
            route = failure_route(Reply(None, score.responses, score.reply.get("error")))
            return self._scored_record(case, None, route, score, None)
        p = self.probability(score.raw)
        return self._scored_record(case, int(p >= 0.5), self.name, score, p)

    def _scored_record(self, case: Case, label: int | None, route: str, score: Score, p: float | None) -> LabelRecord:
        details = {
            **score.reply,
            "raw_score": score.raw,
            "score_source": score.source,
            "calibration": self.calibrator.identity if self.calibrator else None,
        }
        details.pop("p_yes", None)
        record = self.record(case, label, route, details, Reply(None, score.responses))
        return replace(record, p_yes=p)

    def judge(self, cases: Sequence[Case], on_record: Callable[[LabelRecord], None]) -> None:
        for case, score in zip(cases, self.scores(cases), strict=True):
            on_record(self.record_for(case, score))


def _confidence(response: LLMResponse) -> int:
    from bridge.judging.replies import ParseError

    value = parse_json_object(response.text).get("confidence")
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 100:
        raise ParseError(f'field "confidence" must be an integer 0-100, got {value!r}')
    return value


ScoreRunner = Callable[[Sequence[Case], float | None], list[Score]]
"""Scores cases in order until a deadline (a ``time.monotonic()`` value): the scores of a prefix of them."""


def score_in_order(
    scores: Callable[[Sequence[Case]], list[Score]],
    cases: Sequence[Case],
    deadline: float | None = None,
    batch_pairs: int = 64,
    progress: bool = False,
) -> list[Score]:
    """One-pass scores in batches, in order; under a ``deadline`` each batch takes only the pairs the time left
    allows at the rate measured so far (:func:`~bridge.core.deadline.room_before`), and none starts after it."""
    from tqdm.auto import tqdm

    out: list[Score] = []
    bar = tqdm(total=len(cases), desc="one-pass scores", unit="pair", disable=not progress or not cases)
    started = time.monotonic()
    while len(out) < len(cases):
        size = max(batch_pairs, 1)
        if deadline is not None:
            size = min(size, room_before(deadline, started, len(out), time.monotonic()))
            if size <= 0:
                break
        batch = cases[len(out) : len(out) + size]
        out += scores(batch)
        bar.update(len(batch))
    bar.close()
    return out


@dataclass(frozen=True)
class CascadeConfig:
    """The cascade's band and calibration."""

    low: float = option(
        0.2,
        "--band",
        "cascade: a calibrated P(relevant) in [LOW, HIGH] goes to the DREAM debate (default: 0.2,0.8)",
        metavar="LOW,HIGH",
        split=("low", "high"),
        type=float,
    )
    high: float = 0.8
    """A calibrated P in [low, high] goes to the debate; outside it the one-pass label stands."""
    debate_share: float | None = option(
        None,
        "--debate-share",
        "cascade: instead of --band, send this share of the pairs (those closest to P = 0.5) to the debate",
        metavar="S",
        type=float,
    )
    """Instead of [low, high]: the share of pairs (closest to P = 0.5) to send to the debate."""
    max_debate_share: float | None = option(
        0.1,
        "--max-debate-share",
        "cascade: when more than this share of the pairs falls inside --band, debate only the share closest "
        "to P = 0.5 (default: 0.1; 1 = no cap)",
        metavar="S",
        type=float,
    )
    """With [low, high]: when more than this share of the pairs falls inside, the band narrows to the
    share closest to P = 0.5 (a weak scorer leaves most pairs uncertain; this bounds the cost at about
    1 + share x 2.6 calls per pair, half of DREAM's at 0.1)."""
    method: str = option("isotonic", "--calibration", "cascade calibration", choices=("isotonic", "platt"))
    """Calibration: isotonic or platt."""
    calibration_pairs: int = option(
        60,
        "--calibration-pairs",
        "cascade: known pairs (half relevant, not audited) the calibration is fitted on (default: 60)",
    )
    """Known pairs (half relevant, disjoint from the audit) that the calibration is fitted on."""
    calibration_seed: int = 7


class CascadeJudge:
    """Calibrated one-pass score -> label outside the band -> DREAM debate inside it -> people."""

    name = "cascade"

    def __init__(self, scorer: CalibratedJudge, debate: Judge, config: CascadeConfig | None = None) -> None:
        self.scorer = scorer
        self.debate = debate
        self.config = config or CascadeConfig()
        self.band = Band(self.config.low, self.config.high)
        self.llm = scorer.llm

    @property
    def config_id(self) -> str:
        """The scorer (prompt, model, calibration), the debate and the band *rule*. The band itself is set on the
        pairs a run judges (a budget changes them), so it is recorded in every record, not here: a run that
        goes on with a larger budget keeps the earlier labels."""
        payload = json.dumps(
            {"scorer": self.scorer.config_id, "debate": self.debate.config_id, "config": asdict(self.config)},
            sort_keys=True,
        )
        return "cascade-" + hashlib.sha256(payload.encode()).hexdigest()[:12]

    def calibrate(self, cases: Sequence[Case], truth: Sequence[int], source: str) -> Calibrator:
        """Fit the scorer's calibration on known pairs (one cached call each)."""
        return self.scorer.calibrate(cases, truth, source, self.config.method)

    def calibrate_scores(
        self, scores: Sequence[Score], truth: Sequence[int], source: str, pairs: Sequence[tuple[str, str]] = ()
    ) -> Calibrator:
        """Fit the scorer's calibration on known pairs' one-pass scores."""
        return self.scorer.calibrate_scores(scores, truth, source, self.config.method, pairs)

    def set_band(self, cases: Sequence[Case], scores: Sequence[Score] | None = None) -> Band:
        """The band for ``cases`` (``scores``: their one-pass scores, computed here when not given): the one
        that sends ``debate_share`` of them to the debate, or [low, high] narrowed to ``max_debate_share``
        when more than that share falls inside it."""
        c = self.config
        if c.debate_share is None and c.max_debate_share is None:
            return self.band
        scores = self.scorer.scores(cases) if scores is None else scores
        scored = [(case, s) for case, s in zip(cases, scores, strict=True) if s.raw is not None]
        probabilities = [self.scorer.probability(s.raw) for _, s in scored]
        keys = [pair_hash(case.qid, case.docid) for case, _ in scored]
        if c.debate_share is not None:
            self.band = band_for_share(probabilities, c.debate_share, keys)
        else:
            wide = Band(c.low, c.high)
            inside = sum(1 for p in probabilities if wide.contains(p))
            narrow = c.max_debate_share is not None and inside > c.max_debate_share * len(probabilities)
            self.band = band_for_share(probabilities, c.max_debate_share, keys) if narrow else wide  # type: ignore[arg-type]
            if narrow:
                b = self.band
                self.band = Band(max(b.low, c.low), min(b.high, c.high), c.max_debate_share, tie_cut=b.tie_cut)
        return self.band

    @property
    def calibration_pairs(self) -> int:
        """Known pairs the calibration draws (kept apart from the audit's)."""
        return self.config.calibration_pairs

    # -- preparation (the Preparable protocol) --------------------------------------------------------
    def prepare(self, preparation: Preparation) -> Prepared:
        """Calibrate on known pairs of the dataset that are neither pool nor audit pairs, each asked exactly as
        a pool pair with the same evidence is (``preparation.view``: the hint included); on answer data the
        negatives are answer-swap pairs, the kind the LLM decides in the pool."""
        if not preparation.reaches_llm:
            return Prepared(["cascade: no pair reaches the LLM judge, so it was not calibrated"])
        dataset = preparation.dataset
        avoid = set(preparation.pool) | set(preparation.known)
        drawn = draw_audit_pairs(dataset, avoid, self.config.calibration_pairs, self.config.calibration_seed, 1.0)
        cases = cases_for(dataset, [PoolEntry(p.qid, p.docid, (), 0) for p in drawn])
        seen = [(p, preparation.view(c)) for p, c in zip(drawn, cases, strict=True)]
        pairs = [p for p, c in seen if c is not None]
        if not pairs:
            raise BridgeError(f"the cascade needs known pairs to calibrate on, and {dataset.name} has none")
        kinds = ", ".join(f"{n} {KINDS.get(k, k)}" for k, n in sorted(Counter(p.source for p in pairs).items()))
        source = f"{len(pairs)} known pairs of {dataset.name} ({kinds}), none audited, asked as pool pairs are"
        scores = self.scorer.scores([c for _, c in seen if c is not None])
        truth, names = [p.truth for p in pairs], [(p.qid, p.docid) for p in pairs]
        calibrator = self.calibrate_scores(scores, truth, source, names)
        calibrator.save(preparation.calibration_path)
        path = preparation.calibration_path
        line = f"cascade: {calibrator.method} calibration on {source} -> {path} ({calibrator.identity})"
        return Prepared([line], usage_of([r for s in scores for r in s.responses]))

    def prepared_state(self) -> dict[str, Any]:
        calibrator = self.scorer.calibrator
        return {
            "calibrator": calibrator.to_json() if calibrator else None,
            "band": [self.band.low, self.band.high, self.band.tie_cut],
        }

    def restore(self, state: dict[str, Any]) -> None:
        if state.get("calibrator") is not None:
            self.scorer.calibrator = Calibrator.from_json(state["calibrator"])
        if state.get("band") is not None:
            low, high, tie_cut = state["band"]
            self.band = Band(low, high, tie_cut=tie_cut)

    def scores(self, cases: Sequence[Case]) -> list[Score]:
        """The one-pass scores of ``cases`` (what a Ray worker computes for :meth:`score_pass`)."""
        return self.scorer.scores(cases)

    def score_pass(
        self,
        to_llm: Sequence[Case],
        scores: ScoreRunner | None = None,
        batch_pairs: int = 64,
        deadline: float | None = None,
        progress: bool = False,
    ) -> Prepared:
        """The one-pass scores of the pool pairs this run will judge (as the LLM sees them), in order by
        ``scores`` (default: :func:`score_in_order` in this process) until ``deadline``, and the band set on
        them. Later the judging finds these calls in the response cache."""
        if self.scorer.calibrator is None:
            return Prepared()
        score = scores or partial(score_in_order, self.scorer.scores, batch_pairs=batch_pairs, progress=progress)
        scored = list(zip(to_llm, score(to_llm, deadline), strict=False))  # a prefix, under a deadline
        usage = usage_of([r for _, s in scored for r in s.responses])
        band = self.set_band([c for c, _ in scored], [s for _, s in scored])
        probabilities = [None if s.raw is None else self.scorer.probability(s.raw) for _, s in scored]
        settled = frozenset((c.qid, c.docid) for (c, _), p in zip(scored, probabilities, strict=True)
                            if not self.debates(c, p))  # fmt: skip
        inside = len(scored) - len(settled)
        share = f"{inside} of {len(scored)} pool pairs ({inside / len(scored):.0%})" if scored else "no pool pair"
        lines = [f"cascade: band [{band.low:.3f}, {band.high:.3f}] sends {share} to the DREAM debate"]
        if len(scored) < len(to_llm):
            lines.append(f"cascade: the time budget ended the scoring pass after {len(scored)} of {len(to_llm)} pairs")
        return Prepared(lines, usage, frozenset((c.qid, c.docid) for c, _ in scored), settled)

    def debates(self, case: Case, p: float | None) -> bool:
        """Whether the pair goes to the debate: no usable one-pass score, or P inside the band."""
        return p is None or self.band.contains(p, pair_hash(case.qid, case.docid))

    def judge(self, cases: Sequence[Case], on_record: Callable[[LabelRecord], None]) -> None:
        config_id = self.config_id
        band = {"band": [self.band.low, self.band.high, self.band.tie_cut]}
        uncertain: list[Case] = []
        first: dict[tuple[str, str], LabelRecord] = {}
        for case, score in zip(cases, self.scorer.scores(cases), strict=True):
            record = self.scorer.record_for(case, score)
            if not self.debates(case, record.p_yes):
                details = {**record.details, **band}
                on_record(replace(record, config_id=config_id, route=ONE_PASS, stage=ONE_PASS, details=details))
            else:
                first[(case.qid, case.docid)] = record
                uncertain.append(case)

        def stamp(record: LabelRecord) -> None:
            one_pass = first[(record.qid, record.docid)]
            details = {**record.details, ONE_PASS: {**one_pass.details, "p": one_pass.p_yes}, **band}
            usage: Usage = record.usage + one_pass.usage
            on_record(replace(record, config_id=config_id, details=details, usage=usage, p_yes=one_pass.p_yes))

        if uncertain:
            self.debate.judge(uncertain, stamp)


@dataclass(frozen=True)
class CascadeSettings:
    """The cascade judge's config: its one-pass score, its debate and its band."""

    single: SingleCallConfig = field(default_factory=SingleCallConfig)
    debate: DebateConfig = field(default_factory=DebateConfig)
    cascade: CascadeConfig = field(default_factory=CascadeConfig)


@register_judge(
    ONE_PASS, SingleCallConfig, calls_llm=True, selectable=False, measured=True, scores=True,
    sample_default=2, reference_default=3,
)  # fmt: skip
def make_calibrated(spec: JudgeSpec, context: JudgeContext) -> CalibratedJudge:
    return CalibratedJudge(context.needs(ONE_PASS, "llm"), spec.settings)


@register_judge(
    "cascade", CascadeSettings, calls_llm=True, measured=True, default=True, debates=True, sample_default=5,
    reference_default=4,
    budget_note=" (its one pass; a pair sent to the debate costs several times that)",
)  # fmt: skip
def make_cascade(spec: JudgeSpec, context: JudgeContext) -> CascadeJudge:
    s, llm = spec.settings, context.needs("cascade", "llm")
    return CascadeJudge(CalibratedJudge(llm, s.single), DebateEngine(llm, s.debate), s.cascade)
