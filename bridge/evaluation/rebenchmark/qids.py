"""Query-id agreement between topics, runs and qrels: every mismatch is reported, never averaged in silently.

The topics are the dataset's (limited) queries that the original qrels judge. A topic a run did
not answer scores 0 for that run; a run's query outside the topics is ignored; a topic without a
relevant judgment in some qrels set scores 0 for every system under that set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bridge.core.trec import Qrels, Run


@dataclass(frozen=True)
class QidIssue:
    source: str
    """``run bm25``, ``qrels augmented``, ``dataset``."""
    problem: str
    qids: tuple[str, ...]

    def message(self, examples: int = 5) -> str:
        shown = ", ".join(self.qids[:examples]) + (", ..." if len(self.qids) > examples else "")
        return f"{self.source}: {len(self.qids)} {self.problem} ({shown})"


def check_qids(
    topics: Sequence[str],
    runs: Mapping[str, Run],
    qrels_sets: Mapping[str, Qrels],
    dataset_qids: Sequence[str] = (),
    threshold: int = 1,
) -> list[QidIssue]:
    topic_set = set(topics)
    issues = []
    left_out = tuple(q for q in dataset_qids if q not in topic_set)
    if left_out:
        issues.append(QidIssue("dataset", "queries without original judgments, not evaluated", left_out))
    for system, run in sorted(runs.items()):
        missing = tuple(q for q in topics if q not in run)
        if missing:
            issues.append(QidIssue(f"run {system}", "topics without results, scored 0", missing))
        extra = tuple(sorted(q for q in run if q not in topic_set))
        if extra:
            issues.append(QidIssue(f"run {system}", "queries outside the topics, ignored", extra))
    for name, qrels in qrels_sets.items():
        empty = tuple(q for q in topics if not any(g >= threshold for g in qrels.get(q, {}).values()))
        if empty:
            issues.append(QidIssue(f"qrels {name}", "topics without a relevant judgment, every system scores 0", empty))
        extra = tuple(sorted(q for q in qrels if q not in topic_set))
        if extra:
            issues.append(QidIssue(f"qrels {name}", "queries outside the topics, ignored", extra))
    return issues
