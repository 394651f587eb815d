"""The answer judges' kept fits: the version of the fitting procedure a kept fit must match, and what a run says when
no shipped fit is reused (which of its inputs differ, what the refit will cost).

A fit on the reference is a fixed cost paid once: it is kept beside the labels, or shipped in the reference's
``fits/`` folder, under a digest of everything it was fitted from (:mod:`bridge.judging.learned.answer_context`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bridge.judging.base import Case

CALIBRATION_VERSION = 5
"""Bumped when the fitting procedure changes, so a kept fit is not reused across it."""


def why_refit(name: str, shipped_folder: Path, inputs: Mapping[str, Any]) -> str:
    """Why no shipped fit of the judge ``name`` is reused: the inputs in which the nearest one differs."""
    differences = []
    for path in sorted(shipped_folder.glob(f"{name}-fit-*.json")):
        kept = json.loads(path.read_text(encoding="utf-8")).get("inputs")
        if not kept:
            differences.append(f"{path.name} predates this version of the fit")
            continue
        changed = [f"{k} {kept.get(k)!r} there, {v!r} here" for k, v in inputs.items() if kept.get(k) != v]
        differences.append(f"{path.name}: " + ("; ".join(changed) or "inputs the digest covers differ"))
    if not differences:
        return f"no fit of {name} is shipped in {shipped_folder}"
    return "no shipped fit matches (" + " | ".join(differences) + ")"


def refit_plan(name: str, cases: Sequence[Case], shipped_folder: Path, reads: bool, scores: bool) -> str:
    """What a refit on the reference will cost, said before it starts: the model calls (``reads``: a reader's per pair
    and per question; ``scores``: a one-pass score's per pair), and the time a shipped fit of the judge ``name`` took
    (the fit files record it)."""
    questions = len({c.qid for c in cases})
    calls = (len(cases) + questions if reads else 0) + (len(cases) if scores else 0)
    plan = f"reading {len(cases)} reference pairs: about {calls} model calls (a fixed cost, kept for later runs)"
    for path in sorted(shipped_folder.glob(f"{name}-fit-*.json")):
        cost = json.loads(path.read_text(encoding="utf-8")).get("cost")
        if isinstance(cost, dict) and cost.get("pairs"):
            minutes = cost["seconds"] / cost["pairs"] * len(cases) / 60
            plan += f"; about {minutes:.0f} min at the pace of the shipped fit ({cost['seconds']:.0f} s for "
            plan += f"{cost['pairs']} pairs on {cost.get('cpu', 'another CPU')})"
            break
    return plan
