"""The terminal summary of the leave-one-system-out test (``bridge reusability`` prints it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bridge.evaluation.reusability.results import ReusabilityResult
from bridge.judging.base import leaves_open


def _ci(interval: Sequence[float] | None, digits: int = 3) -> str:
    return "" if interval is None else f" [{interval[0]:.{digits}f}, {interval[1]:.{digits}f}]"


def verdict_line(result: ReusabilityResult, measure: str) -> str:
    """One line: does the judge beat each floor on this measure's mean |score - full|?"""
    parts = []
    for v in result.verdicts:
        if v.measure != measure or v.figure != "mean_abs_error":
            continue
        word = {"better": "beats", "worse": "loses to", "n.s.": "does not beat"}[v.verdict]
        parts.append(f"{word} {v.baseline} ({v.baseline_value:.4f} -> {v.judge_value:.4f}{_ci(v.interval, 4)})")
    return f"{measure}: the estimate " + "; ".join(parts) if parts else f"{measure}: no baseline to compare with"


def summary_lines(result: ReusabilityResult) -> str:
    lines = [
        f"leave-one-{result.mode}-out on {result.dataset} ({result.topics} topics, {len(result.systems)} systems, "
        f"depth {result.depth}, {result.removed_pairs} removed pairs), judge {result.judge}, "
        f"{result.grading} grades"
    ]
    lines.append(f"{'judge':28s} {'measure':8s} {'mean |err|':>26s} {'rank disp.':>10s} {'tau':>24s} {'tau_AP':>24s}")
    for r in result.rows:
        if r.kind == "people":
            continue
        lines.append(
            f"{r.judge[:28]:28s} {r.measure:8s} {r.error:8.4f}{_ci(r.error_interval, 4):18s} "
            f"{r.rank_displacement:10.2f} {r.kendall_tau:6.3f}{_ci(r.kendall_interval):18s} "
            f"{r.tau_ap:6.3f}{_ci(r.tau_ap_interval):18s}"
        )
    measures = list(dict.fromkeys(r.measure for r in result.rows))
    lines += [verdict_line(result, m) for m in measures]
    for c in result.coverage:
        if c.people and c.people[0] != "random":
            continue
        who = f"people {c.people[0]} {c.people[1]:.0%}" if c.people else "estimate"
        compared = (
            f"; likely comparisons in the full order {c.agree}/{c.likely} (adjacent {c.adjacent_agree}/"
            f"{c.adjacent_likely})"
            if c.likely or c.people is None or c.people[0] == "random"
            else ""
        )
        lines.append(
            f"coverage, {who}, {c.measure}: full-qrels score inside the 95% interval for {c.covered}/{c.systems} "
            f"left-out systems ({c.share:.3f}), mean width {c.mean_width:.4f}; inside its bounds for "
            f"{c.bounds_covered}/{c.systems}{compared}"
        )
    people = [r for r in result.rows if r.kind == "people"]
    if people:
        lines.append("people curve (mean |err| / tau at K% of the removed pairs answered by people):")
        for m in measures:
            for order in dict.fromkeys(r.people[0] for r in people):
                cells = [
                    f"{r.people[1]:.0%} {r.error:.4f}/{r.kendall_tau:.3f}"
                    for r in people
                    if r.measure == m and r.people[0] == order
                ]
                lines.append(f"  {m:8s} {order:11s} " + "  ".join(cells))
    for c in result.circularity:
        lines.append(
            f"circularity, {c.measure}: signed error on the {len(c.sharing)} systems sharing a model with the judge "
            f"({', '.join(c.models)}) {c.sharing_error:+.4f} vs {c.other_error:+.4f} on the others, "
            f"difference {c.difference:+.4f}"
            f"{_ci(c.interval, 4)}" + (" FLAGGED" if c.flagged else "")
        )
    c = result.confusion
    lines.append(
        f"the judge's thresholded labels on the {c.pairs} removed pairs vs hidden human labels: tp {c.tp} fn {c.fn} "
        f"fp {c.fp} tn {c.tn} "
        f"undecided {c.undecided}; bAcc {c.describe('balanced_accuracy')}, kappa {c.describe('kappa')}"
    )
    if result.audit is not None:
        lines.append(audit_line(result.audit))
    return "\n".join(lines)


def audit_line(audit: Mapping) -> str:
    """The one audit of the test: each lane's balanced accuracy on its known pairs, and the verdict."""
    if leaves_open(audit.get("judge", "")):
        return "audit (one for the test): none; the open judge labels no pair, every removed pair keeps the prior"
    lanes = []
    for name, lane in (audit.get("lanes") or {}).items():
        interval = (lane.get("intervals") or {}).get("balanced_accuracy")
        lanes.append(f"{name} bAcc {lane['balanced_accuracy']:.3f}{_ci(interval)} on {lane['pairs']} pairs")
    verdict = "trusted" if audit.get("trusted") else f"not trusted ({audit.get('warning') or 'see judge-audit.json'})"
    return "audit (one for the test): " + "; ".join(lanes) + f"; {verdict}"
