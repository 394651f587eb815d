"""Reference labels read from a file: pairs somebody labelled by reading, kept beside the benchmark.

On nq nobody judged the answer-bearing pool pairs, the only ones a judge must decide there;
``bench/data/nq-answer-reference/`` holds the maintainers' reading of 300 of them. A reference file
has one pair per line, ``qid<TAB>docid<TAB>label[<TAB>note]`` with label 0 or 1; lines starting with
``#`` and a ``qid docid label`` header are skipped. Judges are measured on it (``bridge judge-eval
--reference``), fitted on one part of it and audited on the other (``bridge label --reference``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bridge.core.errors import BridgeError
from bridge.core.fsio import read_utf8
from bridge.pool.pooling import PoolEntry, read_pool


@dataclass(frozen=True)
class HumanPair:
    """A pair with a label somebody gave by reading (a dataset's assessors or a reference file)."""

    qid: str
    docid: str
    relevant: bool


DESIGN_FILE = "design.tsv"
"""The sampling design beside a reference: ``qid  docid  kind  inclusion`` per pair (header line first)."""


@dataclass(frozen=True)
class Inclusion:
    """How a reference pair came into the sample: the kind it was drawn in, and its probability of being drawn."""

    kind: str
    probability: float


def read_reference_design(path: Path) -> dict[tuple[str, str], Inclusion]:
    """Each reference pair's kind and inclusion probability (``design.tsv`` beside the reference); empty where the
    file is absent (a simple random sample: every pair weighs the same)."""
    design_path = path.with_name(DESIGN_FILE)
    if not design_path.exists():
        return {}
    out: dict[tuple[str, str], Inclusion] = {}
    lines = read_utf8(design_path).splitlines()
    if not lines or lines[0].split("\t") != ["qid", "docid", "kind", "inclusion"]:
        raise BridgeError(f"{design_path}:1: expected the header qid<TAB>docid<TAB>kind<TAB>inclusion")
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 4:
            raise BridgeError(f"{design_path}:{number}: expected 4 tab-separated fields, got {len(fields)}")
        try:
            probability = float(fields[3])
        except ValueError:
            raise BridgeError(f"{design_path}:{number}: field 'inclusion' is not a number: {fields[3]!r}") from None
        if not 0.0 < probability <= 1.0:
            raise BridgeError(f"{design_path}:{number}: field 'inclusion' must lie in (0, 1], got {probability}")
        out[(fields[0], fields[1])] = Inclusion(fields[2], probability)
    return out


def read_reference_facts(path: Path) -> dict[tuple[str, str], PoolEntry]:
    """Each reference pair's place in the pool it was drawn from (``pairs.tsv`` beside the reference: the systems
    that pooled it, its best rank), which an answer judge's strata read; empty where the file is absent."""
    facts_path = path.with_name("pairs.tsv")
    return {(e.qid, e.docid): e for e in read_pool(facts_path)} if facts_path.exists() else {}


def read_reference(path: Path) -> list[HumanPair]:
    """The labelled pairs of a reference file, in file order (a pair listed twice is an error)."""
    if not path.exists():
        raise BridgeError(f"reference file {path} not found")
    pairs: list[HumanPair] = []
    seen: dict[tuple[str, str], int] = {}
    for number, line in enumerate(read_utf8(path).splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if number == 1 and fields[:3] == ["qid", "docid", "label"]:
            continue
        if len(fields) < 3:
            raise BridgeError(f"{path}:{number}: expected qid<TAB>docid<TAB>label, got {len(fields)} field(s)")
        qid, docid, label = (f.strip() for f in fields[:3])
        if label not in ("0", "1"):
            raise BridgeError(f"{path}:{number}: field 'label' must be 0 or 1, got {label!r}")
        if not qid or not docid:
            raise BridgeError(f"{path}:{number}: empty field '{'qid' if not qid else 'docid'}'")
        if (qid, docid) in seen:
            raise BridgeError(f"{path}:{number}: pair ({qid}, {docid}) already labelled on line {seen[(qid, docid)]}")
        seen[(qid, docid)] = number
        pairs.append(HumanPair(qid, docid, label == "1"))
    if not pairs:
        raise BridgeError(f"reference file {path} holds no labelled pair")
    return pairs


def question_folds(pairs: Sequence[HumanPair], folds: int, seed: int = 0) -> list[int]:
    """Each pair's fold (0..folds-1), whole questions per fold, questions shuffled with ``seed``."""
    questions = sorted({p.qid for p in pairs})
    random.Random(seed).shuffle(questions)
    fold = {qid: i % folds for i, qid in enumerate(questions)}
    return [fold[p.qid] for p in pairs]


def subsample(pairs: Sequence[HumanPair], size: int | None, seed: int = 0) -> list[HumanPair]:
    """``size`` pairs drawn with ``seed`` (all of them when ``size`` is None or not smaller), in file order."""
    if size is None or size >= len(pairs):
        return list(pairs)
    keep = set(random.Random(seed).sample(range(len(pairs)), size))
    return [p for i, p in enumerate(pairs) if i in keep]
