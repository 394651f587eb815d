"""``bridge evidence`` as a library function (:func:`evidence_check`): the answer-string evidence stage measured
without any model, on the dataset's relevant passages and on the pool."""

from __future__ import annotations

from collections.abc import Callable

from bridge.core.errors import BridgeError
from bridge.core.layout import Workspace
from bridge.datasets import Dataset
from bridge.judging import cases_for
from bridge.judging.free.evidence import EvidenceRecall, gold_recall, matched_answers
from bridge.pool.pooling import read_pool


def evidence_check(ws: Workspace, ds: Dataset, show: int = 5, *, say: Callable[[str], None]) -> EvidenceRecall:
    """The evidence stage's recall on the original relevant passages (the gate would set the missed ones to 0), how
    many pool pairs hold an answer, and ``show`` examples of both, said through ``say``."""
    if not ds.has_answers:
        raise BridgeError(f"{ds.name} has no answers: the evidence stage does not apply (it is off for this dataset)")
    recall = gold_recall(ds)
    queries = {q.qid: q for q in ds.whole().queries}
    rate = "n/a" if recall.rate is None else f"{recall.rate:.4f}"
    scope = " (all questions, not only the --limit ones)" if ds.limit else ""
    say(f"{ds.name}: evidence recall on the original relevant passages{scope} {recall.found}/{recall.total} = {rate}")
    for qid, docid in recall.missed[:show]:
        doc = ds.corpus.get(docid)
        text = doc.contents().replace("\n", " ")[:240] if doc else ""
        say(f"  missed q{qid} {docid}: answers {list(queries[qid].answers)}; passage: {text}")
    pool_path = ws.pool_file(ds.slug)
    if pool_path.exists():
        topics = set(ds.qids)
        cases = cases_for(ds, [e for e in read_pool(pool_path) if e.qid in topics])
        found = [(c, matched_answers(c.answers, c.chunk)) for c in cases if c.answers]
        present = [(c, m) for c, m in found if m]
        share = len(present) / len(found) if found else 0.0
        say(
            f"pool {pool_path}: {len(present)} of {len(found)} pairs contain an answer ({share:.1%}, over "
            f"{len({c.qid for c, _ in present})} queries): with --evidence gate the other {len(found) - len(present)} "
            "are 0 without a call"
        )
        for case, matched in present[:show]:
            say(f"  q{case.qid} {case.docid} holds {list(matched)}: {case.chunk.replace(chr(10), ' ')[:200]}")
    return recall
