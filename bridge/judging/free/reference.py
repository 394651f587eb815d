"""Reference judges that call no model: answers from a qrels file, one fixed answer, a coin at the topic's
prevalence, or no answer at all (``open``: the pair keeps the estimate's prior).

They check the protocol around a judge rather than judge anything: with the ``qrels`` judge
answering from the hidden human labels, the leave-one-system-out test must give back the full
qrels exactly; the ``constant`` judge (say "relevant" to everything) is the floor any judge
must beat, and the audit must flag it; the ``random`` judge (relevant with the topic's share of relevant
judgments) is the floor a judge must beat on a topic's base rate. LARF-style oracle feedback uses the
``qrels`` judge too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bridge.core.errors import BridgeError
from bridge.core.label_records import LabelRecord
from bridge.core.trec import Qrels, read_qrels
from bridge.judging.base import Case, Decider, JudgeContext, JudgeSpec, judge_record, register_judge
from bridge.judging.settings import option


@dataclass(frozen=True)
class QrelsConfig:
    file: str | None = option(
        None,
        "--judge-qrels",
        "qrels judge: answer from this TREC qrels file (pairs it does not judge stay undecided)",
        metavar="FILE",
    )
    """A TREC qrels file to answer from (None: the qrels the caller passes, e.g. the dataset's)."""


@dataclass(frozen=True)
class ConstantConfig:
    label: int = option(1, "--constant-label", "constant judge: the answer for every pair", choices=(0, 1))


@dataclass(frozen=True)
class RandomConfig:
    seed: int = option(
        0,
        "--random-seed",
        "random judge (relevant with the topic's share of relevant judgments): the seed of every pair's coin",
    )


def _record(
    case: Case, label: int | None, route: str, judge: str, config_id: str, details: dict, p_yes: float | None = None
) -> LabelRecord:
    return judge_record(case, label, route, Decider(judge, config_id), details, p_yes)


class QrelsJudge:
    """Labels from a qrels file: relevant when the grade reaches ``threshold``; a pair the file does not
    judge stays undecided (route ``unjudged``), never silently 0."""

    name = "qrels"

    def __init__(self, qrels: Qrels, threshold: int = 1, source: str = "") -> None:
        self.qrels = qrels
        self.threshold = threshold
        self.source = source

    @classmethod
    def from_file(cls, path: str | Path, threshold: int = 1) -> QrelsJudge:
        return cls(read_qrels(path), threshold, str(path))

    @property
    def config_id(self) -> str:
        h = hashlib.sha256(f"{self.threshold}\n".encode())
        for qid in sorted(self.qrels):
            for docid, grade in sorted(self.qrels[qid].items()):
                h.update(f"{qid}\t{docid}\t{grade}\n".encode())
        return "qrels-" + h.hexdigest()[:12]

    def judge(self, cases: Sequence[Case], on_record: Callable[[LabelRecord], None]) -> None:
        config_id = self.config_id
        for case in cases:
            grade = self.qrels.get(case.qid, {}).get(case.docid)
            if grade is None:
                on_record(_record(case, None, "unjudged", self.name, config_id, {"source": self.source}))
            else:
                label = int(grade >= self.threshold)
                on_record(
                    _record(case, label, self.name, self.name, config_id, {"grade": grade, "source": self.source})
                )


class ConstantJudge:
    """The same answer for every pair (``label`` 1: "everything is relevant")."""

    name = "constant"

    def __init__(self, label: int = 1) -> None:
        if label not in (0, 1):
            raise ValueError(f"the constant judge answers 0 or 1, not {label!r}")
        self.label = label

    @property
    def config_id(self) -> str:
        return f"constant-{self.label}"

    def judge(self, cases: Sequence[Case], on_record: Callable[[LabelRecord], None]) -> None:
        for case in cases:
            on_record(_record(case, self.label, self.name, self.name, self.config_id, {}))


OPEN_JUDGE = "open"


class OpenJudge:
    """Decides no pair: every pair it is given stays open and keeps the estimate's prior P (or what people answer).
    The judge of a zero budget, where a costly judge would be neither loaded, calibrated nor audited, and of
    ``--judge open`` (the free stages alone). It writes no record, so a later run with a budget finds every pair
    still to do."""

    name = OPEN_JUDGE
    config_id = OPEN_JUDGE

    def judge(self, cases: Sequence[Case], on_record: Callable[[LabelRecord], None]) -> None:
        return None


class RandomJudge:
    """Relevant with the probability of the topic's share of relevant judgments (topics without judgments: the
    share over all topics). Each pair's coin depends only on the seed and the pair, so the labels are the same
    in any order and any batch."""

    name = "random"

    def __init__(self, qrels: Qrels, threshold: int = 1, seed: int = 0) -> None:
        self.threshold = threshold
        self.seed = seed
        counts = {q: (sum(g >= threshold for g in docs.values()), len(docs)) for q, docs in qrels.items() if docs}
        relevant, judged = sum(r for r, _ in counts.values()), sum(n for _, n in counts.values())
        self.overall = relevant / judged if judged else 0.5
        self.prevalence = {q: r / n for q, (r, n) in counts.items()}
        digest = hashlib.sha256(f"{threshold}\n{seed}\n".encode())
        for qid in sorted(self.prevalence):
            digest.update(f"{qid}\t{self.prevalence[qid]!r}\n".encode())
        self._config_id = f"random-{seed}-" + digest.hexdigest()[:12]

    @property
    def config_id(self) -> str:
        return self._config_id

    def coin(self, qid: str, docid: str) -> float:
        """A uniform number in [0, 1) fixed by the seed and the pair."""
        h = hashlib.sha256(f"{self.seed}\t{qid}\t{docid}".encode()).digest()
        return int.from_bytes(h[:8], "big") / 2**64

    def judge(self, cases: Sequence[Case], on_record: Callable[[LabelRecord], None]) -> None:
        for case in cases:
            p = self.prevalence.get(case.qid, self.overall)
            label = int(self.coin(case.qid, case.docid) < p)
            details = {"prevalence": p, "seed": self.seed}
            on_record(_record(case, label, self.name, self.name, self.config_id, details, p))


@register_judge("qrels", QrelsConfig)
def make_qrels_judge(spec: JudgeSpec, context: JudgeContext) -> QrelsJudge:
    """Answers from the config's file, else from the context's qrels (the dataset's original qrels)."""
    if (file := spec.settings.file) is not None:
        return QrelsJudge.from_file(file, context.threshold)
    if context.qrels is None:
        raise BridgeError("--judge qrels needs --judge-qrels FILE (the qrels to answer from)")
    return QrelsJudge(context.qrels, context.threshold, "the dataset's original qrels")


@register_judge("constant", ConstantConfig)
def make_constant_judge(spec: JudgeSpec, context: JudgeContext) -> ConstantJudge:
    return ConstantJudge(spec.settings.label)


@register_judge("answer-string", selectable=False, measured=True, reference_default=1)
def make_answer_string_judge(spec: JudgeSpec, context: JudgeContext) -> ConstantJudge:
    """Relevant wherever the passage holds an answer string: the constant judge behind the evidence gate, measured
    on answer-bearing pairs as the baseline every answer judge must beat."""
    return ConstantJudge(1)


@register_judge(OPEN_JUDGE, leaves_open=True)
def make_open_judge(spec: JudgeSpec, context: JudgeContext) -> OpenJudge:
    return OpenJudge()


@register_judge("random", RandomConfig)
def make_random_judge(spec: JudgeSpec, context: JudgeContext) -> RandomJudge:
    """Prevalence from the judgments the dataset holds (e.g. a leave-out's holey qrels)."""
    dataset = context.needs("random", "dataset")
    return RandomJudge(dataset.qrels, context.threshold, spec.settings.seed)
