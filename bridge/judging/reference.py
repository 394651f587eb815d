"""Reference judges that call no model: answers from a qrels file, or one fixed answer.

They check the protocol around a judge rather than judge anything: with the ``qrels`` judge
answering from the hidden human labels, the leave-one-system-out test must give back the full
qrels exactly; the ``constant`` judge (say "relevant" to everything) is the floor any judge
must beat, and the audit must flag it. LARF-style oracle feedback uses the ``qrels`` judge too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bridge.errors import BridgeError
from bridge.judging.base import Case, register_judge
from bridge.label_records import LabelRecord
from bridge.trec import Qrels, read_qrels

if TYPE_CHECKING:
    from bridge.judging.spec import JudgeSpec


def _record(case: Case, label: int | None, route: str, judge: str, config_id: str, details: dict) -> LabelRecord:
    return LabelRecord(
        qid=case.qid,
        docid=case.docid,
        label=label,
        route=route,
        judge=judge,
        config_id=config_id,
        model="",
        details=details,
        systems=list(case.systems),
        min_rank=case.min_rank,
        stage=judge,
    )


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


@register_judge("qrels")
def make_qrels_judge(spec: JudgeSpec, llm: Any = None, qrels: Qrels | None = None, threshold: int = 1) -> QrelsJudge:
    """Answers from ``spec.qrels`` (a file), else from ``qrels`` (the dataset's original qrels)."""
    if spec.qrels is not None:
        return QrelsJudge.from_file(spec.qrels, threshold)
    if qrels is None:
        raise BridgeError("--judge qrels needs --judge-qrels FILE (the qrels to answer from)")
    return QrelsJudge(qrels, threshold, "the dataset's original qrels")


@register_judge("constant")
def make_constant_judge(spec: JudgeSpec, llm: Any = None, **_: Any) -> ConstantJudge:
    return ConstantJudge(spec.constant_label)
