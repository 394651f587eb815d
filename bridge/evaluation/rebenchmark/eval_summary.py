"""The terminal summary of an evaluation (``bridge eval`` prints it; :meth:`bridge.api.Evaluation.summary`
returns it)."""

from __future__ import annotations

from bridge.evaluation.rebenchmark.inputs import AUGMENTED as AUGMENTED_NAME


def audit_lines(audit: dict | None) -> list[str]:
    """The judge audit in a few lines (and its warning), for the terminal."""
    if audit is None:
        return ["judge audit: none found for the augmented qrels (labels made without one); their quality is unknown"]
    lines = []
    for name, lane in audit.get("lanes", {}).items():
        b, k = lane.get("balanced_accuracy"), lane.get("kappa")
        bi, ki = lane["intervals"].get("balanced_accuracy"), lane["intervals"].get("kappa")
        mark = " (decides trust)" if name == audit.get("decisive") else ""
        lines.append(
            f"judge audit [{name}]{mark}: bAcc {fmt_ci(b, bi)}, kappa {fmt_ci(k, ki)} on {lane['pairs']} pairs"
        )
    if audit.get("warning"):
        lines.append(f"WARNING: {audit['warning']}")
    return lines


def fmt_ci(value: float | None, interval: list[float] | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3f}" + (f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else "")


def summary_text(result) -> str:
    names = result.scores.qrels_names
    lines = [f"{result.inputs.dataset}: {len(result.scores.systems)} systems, {len(result.scores.topics)} topics"]
    if AUGMENTED_NAME in names:
        lines += audit_lines(result.inputs.audit)
    header = f"{'system':24s} {'measure':12s}" + "".join(f" {q[:10]:>10s}" for q in names) + "  rank"
    lines.append(header)
    for r in result.rows:
        values = "".join(f" {r.values[q]:10.4f}" for q in names)
        ranks = "->".join(str(r.ranks[q]) for q in names)
        lines.append(f"{r.system:24s} {r.measure:12s}{values}  {ranks}")
    for s in result.shifts:
        lines.append(
            f"rank shift {s.measure} {names[0]}->{s.qrels}: Kendall tau {s.kendall_tau:.3f}, "
            f"tau_AP {s.tau_ap:.3f}, {len(s.moved)} moved"
        )
    for h in result.holes:
        pooled = "" if h.pooled else ", not pooled"
        lines.append(f"{h.system:24s} Hole@{h.k:<7d} {h.hole_rate:10.4f}  ({h.qrels}{pooled})")
    lines.append(f"curves: {result.curves_note}")
    if result.estimated is not None:
        lines += result.estimated.lines()
        if result.estimated_note:
            lines.append(f"estimate: {result.estimated_note}")
    elif result.estimated_note and AUGMENTED_NAME in names:
        lines.append(f"estimate: not computed ({result.estimated_note})")
    return "\n".join(lines)
