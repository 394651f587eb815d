"""A hole reference (somebody's reading of random pool holes) written as people's random answers: once, only on this
pool's holes, each with the model's record it replaces; the hole model then fixes those holes and the judge's level
on the others moves to what the reading says."""

from __future__ import annotations

import numpy as np
import pytest

from bridge.core.errors import BridgeError
from bridge.core.fsio import JsonlAppender
from bridge.core.label_records import HUMAN_JUDGE, LabelRecord, read_labels
from bridge.estimate.calibration import INTERCEPT, Calibration
from bridge.estimate.hole_evidence import HoleEvidence, build_hole_model
from bridge.label.hole_reading import READING_CONFIG, apply_reading

POOL = [("q1", f"d{i}") for i in range(200)]


def exemplar_record(pair: tuple[str, str]) -> LabelRecord:
    """The free exemplar stage's record: P 0.5 for every hole (its calibration's intercept 0)."""
    return LabelRecord(pair[0], pair[1], 1, "exemplar", "exemplar", "exemplar-x", "", p_yes=0.5, stage="exemplar",
                       details={"calibration": "exemplar", "features": {}})  # fmt: skip


def write_reading(path, rows):
    path.write_text("qid\tdocid\tlabel\tnote\n" + "".join(f"{q}\t{d}\t{y}\tread\n" for q, d, y in rows))


def test_a_reading_fixes_its_holes_once_and_moves_the_judges_level(tmp_path):
    labels = tmp_path / "labels.jsonl"
    with JsonlAppender(labels) as log:
        for pair in POOL:
            log.append(exemplar_record(pair).to_json())
    reading = tmp_path / "reading.tsv"
    rows = [("q1", f"d{i}", int(i < 2)) for i in range(40)] + [("q9", "elsewhere", 1)]  # 2 of 40 relevant
    write_reading(reading, rows)
    applied = apply_reading(labels, tmp_path / "judge-audit.json", POOL, reading)
    assert (applied.read, applied.in_pool, applied.written) == (41, 40, 40)
    answers = [r for r in read_labels(labels) if r.judge == HUMAN_JUDGE]
    assert {r.config_id for r in answers} == {READING_CONFIG}
    assert all(r.details["sampling"] == "random" and r.details["escalated"]["stage"] == "exemplar" for r in answers)
    assert sum(r.label for r in answers) == 2
    again = apply_reading(labels, tmp_path / "judge-audit.json", POOL, reading)
    assert again.written == 0 and len([r for r in read_labels(labels) if r.judge == HUMAN_JUDGE]) == 40

    calibration = Calibration("exemplar", (INTERCEPT,), np.zeros((200, 1)), "toy", hole_like=True, transfer_sd=2.5)
    evidence = HoleEvidence({"q1": {"x": 1}}, read_labels(labels), POOL, ["q1"], 1, {"exemplar": calibration},
                            None, POOL)  # fmt: skip
    model = build_hole_model(evidence)
    assert len(model.pairs) == 160  # the 40 read holes are fixed
    # the level: P 0.5 before; 2 of 40 read relevant, so about (2 + 1) / (40 + 2) after (a flat-ish prior on it)
    assert model.p.mean() == pytest.approx(3 / 42, abs=0.03)


def test_a_bad_reading_names_its_file_and_line(tmp_path):
    reading = tmp_path / "reading.tsv"
    reading.write_text("q1\td1\tyes\n")
    with pytest.raises(BridgeError, match=r"reading\.tsv:1: field 'label' must be 0 or 1"):
        apply_reading(tmp_path / "labels.jsonl", tmp_path / "judge-audit.json", POOL, reading)
