"""Which pool pairs are worth a costly judgment, decided before any is made.

After the free stages (the evidence gate, topic adapters) have decided what their own measurements let them
decide, every pair that would go to the LLM or to people is open. Against the runs, the bounds of each
system's score over the open pairs say which comparisons of adjacent systems are already settled
(:mod:`bridge.settle`); a pair whose label can change the bounds of no unsettled comparison has value 0:
it is not asked, and stays open and bounded. The others are asked most valuable first, so a budget
(``--max-pairs``, ``--max-minutes``) goes where it can change a ranking.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bridge.datasets import Dataset
from bridge.judging.answer_context import AnswerContextJudge
from bridge.judging.metrics import CHANCE_LINE
from bridge.label.chain import JudgeChain
from bridge.label_records import LabelRecord
from bridge.settle import DEFAULT_MEASURES, Leaderboard, Pair, SettleConfig, label_state, parse_measures
from bridge.trec import Run


@dataclass(frozen=True)
class ValueConfig:
    measures: str = DEFAULT_MEASURES
    """The leaderboard's measures whose comparisons a judgment may settle."""
    settle: SettleConfig = field(default_factory=lambda: SettleConfig(resamples=500, simulations=100))
    ask_all: bool = False
    """Ask the costly judge about value-0 pairs too (in value order, after the others)."""


@dataclass(frozen=True)
class PairValues:
    values: dict[Pair, int]
    """Open pair that would go to the costly judge -> how many unsettled comparisons its label can change."""
    unsettled: int
    comparisons: int
    prior: float | None
    """P(relevant) of an open pair without one of its own (the judge's prior)."""

    def line(self) -> str:
        asked = sum(1 for v in self.values.values() if v > 0)
        return (
            f"value: {asked} of {len(self.values)} pairs for the costly judge can change one of {self.unsettled} "
            f"unsettled adjacent comparisons (of {self.comparisons}); the other {len(self.values) - asked} have "
            "value 0: they cannot change a ranking whatever their label, and stay open and bounded"
        )


def free_stage_trust(chain: JudgeChain, dataset: Dataset, gate_recall: Mapping[str, Any] | None) -> dict[str, Any]:
    """What the free stages' trust rests on before any LLM call, in judge-audit.json's shape: the gate's recall on
    known relevant passages and each adapter topic's cross-validation; the LLM is not trusted yet."""
    from bridge.judging.adapter import routing_summary

    trust: dict[str, Any] = {"trusted": False, "chance_line": CHANCE_LINE}
    if gate_recall is not None:
        trust["evidence"] = {"recall_on_gold": dict(gate_recall)}
    if chain.adapter is not None:
        trust["adapter"] = routing_summary(chain.adapter.routes(dataset.qids))
        trust["chance_line"] = chain.adapter.config.chance_low
    return trust


def judgment_values(
    dataset: Dataset,
    runs: Mapping[str, Run],
    chain: JudgeChain,
    records: Iterable[LabelRecord],
    pool: Sequence[Pair],
    asked: Sequence[Pair],
    trust: Mapping[str, Any],
    config: ValueConfig,
) -> PairValues:
    """The value of each pair of ``asked`` (the pool pairs the costly judge would see) given ``records`` (what the
    free stages decided). Open pairs are relevant with the judge's prior (an answer-context judge: the share of
    relevant pairs it was fitted on), which orders the systems; the bounds do not depend on it."""
    judge = chain.judge
    prior = judge.model.threshold if isinstance(judge, AnswerContextJudge) and judge.model is not None else None
    return open_pair_values(dataset, runs, records, pool, trust, config, prior, asked)


def open_pair_values(
    dataset: Dataset,
    runs: Mapping[str, Run],
    records: Iterable[LabelRecord],
    pool: Sequence[Pair],
    trust: Mapping[str, Any] | None,
    config: ValueConfig,
    prior: float | None = None,
    pairs: Sequence[Pair] | None = None,
) -> PairValues:
    """The value of the open pairs (those of ``pairs``, default all), given the records, the trust of the stages
    that made them (judge-audit.json's shape) and the runs."""
    topics = list(dataset.judged_topics())
    state = label_state(
        dataset.qrels, records, pool, trust, topics, dataset.relevance_threshold, config.settle.gate_max_miss, prior
    )
    board = Leaderboard(runs, state, topics, parse_measures(config.measures), config.settle)
    wanted = state.open if pairs is None else [p for p in pairs if p in state.open]
    return PairValues(board.values(wanted), len(board.unsettled()), len(board.comparisons), prior)
