"""The audit's files: one judged audit pair as audit.jsonl holds it (:class:`AuditRecord`), reading them back, reading
judge-audit.json (and the evidence gate's recall in it), and what a record says of the request and the hint the
judge saw.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bridge.core.errors import InputError
from bridge.core.fsio import read_jsonl, read_utf8
from bridge.core.label_records import LabelRecord
from bridge.judging.base import AuditPair
from bridge.judging.llm.cascade import ONE_PASS
from bridge.judging.quality.audit import LANES


@dataclass(frozen=True)
class AuditRecord:
    """One judged audit pair: which lane, what was known, and the judge's full record."""

    lane: str
    pair: AuditPair
    record: LabelRecord
    gated: bool = False
    """The pipeline's evidence gate decides this pair without the LLM (it holds none of its answers): the LLM
    never decides such a pool pair, so the LLM lane's headline figure leaves it out."""

    def to_json(self) -> dict[str, Any]:
        return {
            "lane": self.lane,
            "truth": self.pair.truth,
            "source": self.pair.source,
            "gated": self.gated,
            "record": self.record.to_json(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], path: Path | None = None, line: int | None = None) -> AuditRecord:
        try:
            record = LabelRecord.from_json(data["record"], path=path, line=line)
            pair = AuditPair(record.qid, record.docid, int(data["truth"]), str(data["source"]))
            lane = str(data["lane"])
            gated = bool(data.get("gated", False))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"not an audit record ({exc})", path=path, line=line) from None
        if lane not in LANES:
            raise InputError(f"unknown audit lane {lane!r}", path=path, line=line, field="lane")
        return cls(lane, pair, record, gated)


def read_audit(path: Path) -> list[AuditRecord]:
    """Every audit record of a file; for a repeated (lane, config, qid, docid) the last wins."""
    if not path.exists():
        return []
    latest: dict[tuple[str, str, str, str], AuditRecord] = {}
    for lineno, row in read_jsonl(path, append_log=True):
        a = AuditRecord.from_json(row, path=path, line=lineno)
        latest[(a.lane, a.record.config_id, a.pair.qid, a.pair.docid)] = a
    return list(latest.values())


def gate_recall(audit: Mapping[str, Any] | None) -> tuple[int, int] | None:
    """The evidence gate's (known relevant passages holding an answer, checked) from a judge audit (judge-audit.json
    or its ``extra``), or None where the run had no gate."""
    recall = ((audit or {}).get("evidence") or {}).get("recall_on_gold")
    if not recall or recall.get("total") is None:
        return None
    return int(recall.get("found") or 0), int(recall["total"])


def read_audit_report(path: Path) -> dict[str, Any] | None:
    """A label run's judge-audit.json, or None when there is none; a clear error when it is not one."""
    if not path.exists():
        return None
    try:
        data = json.loads(read_utf8(path))
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg}); re-run `bridge label` to rewrite it", path=path) from None
    if not isinstance(data, dict) or "trusted" not in data:
        raise InputError("not a judge audit (no 'trusted' field); re-run `bridge label` to rewrite it", path=path)
    return data


def one_pass_prompt(record: LabelRecord) -> str | None:
    """Digest of the first request a single-call or cascade judge sent for the pair (None for other judges)."""
    details = record.details.get(ONE_PASS, record.details)
    prompt = details.get("prompt") if isinstance(details, dict) else None
    return prompt if isinstance(prompt, str) else None


def hint_of(record: LabelRecord) -> tuple[str, ...] | None:
    """The answers the judge was shown as evidence (None where no evidence stage looked at the pair)."""
    evidence = record.details.get("evidence")
    return tuple(evidence.get("matched", ())) if isinstance(evidence, dict) else None
