"""People's answers teach the judges that can learn from them.

A label run's judges decided before anyone answered. When people then answer holes (``bridge review``), a judge whose
P rests on what a topic's known passages look like has more to go on: a hole marked relevant is one more known
relevant passage of its topic, one marked not relevant the first real negative the qrels never held. A **teacher**
re-derives the features of its judge's records from the answers; the estimate reads the taught records (``bridge
eval``), so the ranking moves with the answers and not only the level. The label run's files are left as they are:
teaching is a reading of them, done again whenever the answers change.

Teachers register by the stage whose records they teach, in the modules of :data:`TEACHER_MODULES`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bridge.core.label_records import HUMAN_JUDGE, LabelRecord
from bridge.core.registry import Registry
from bridge.datasets import Dataset

TEACHER_MODULES = ("bridge.judging.learned.exemplar_teaching",)


@dataclass(frozen=True)
class Lesson:
    """What a teacher reads: every record of a label run (people's among them), its dataset and the cache folder
    (where the judge's encodings are kept)."""

    records: Sequence[LabelRecord]
    dataset: Dataset
    cache_dir: Path
    progress: bool = False

    def answers(self) -> dict[str, dict[str, int]]:
        """People's current label of each pair they decided, per topic (a later record of a pair wins; a withdrawn
        decision removes it)."""
        out: dict[str, dict[str, int]] = {}
        for r in self.records:
            if r.judge != HUMAN_JUDGE:
                continue
            if r.label is None:
                out.get(r.qid, {}).pop(r.docid, None)
            else:
                out.setdefault(r.qid, {})[r.docid] = int(r.label)
        return out


@dataclass(frozen=True)
class Taught:
    """The records, those a teacher re-derived replaced in place, and what it did in one sentence ("" where it had
    nothing to learn)."""

    records: list[LabelRecord]
    note: str = ""


Teacher = Callable[[Lesson], Taught]
TEACHERS: Registry[Teacher] = Registry("teacher", TEACHER_MODULES)
"""Teachers by the stage whose records they re-derive."""


def register_teacher(stage: str) -> Callable[[Teacher], Teacher]:
    return TEACHERS.register(stage)


def teach(lesson: Lesson) -> Taught:
    """Every registered teacher whose stage wrote records of this run, in turn, where people answered anything."""
    if not any(r.judge == HUMAN_JUDGE and r.label is not None for r in lesson.records):
        return Taught(list(lesson.records))
    stages = {r.stage for r in lesson.records}
    records, notes = list(lesson.records), []
    for stage in TEACHERS.names():
        if stage in stages:
            taught = TEACHERS[stage](Lesson(records, lesson.dataset, lesson.cache_dir, lesson.progress))
            records = taught.records
            notes += [taught.note] if taught.note else []
    return Taught(records, "; ".join(notes))
