"""Print the README's reusability table (markdown) from `bridge reusability` outputs.

    python bench/reusability_table.py system=reports/dl19/reusability.json family=/path/to/family/reusability.json

One block per leave-out mode: the estimate's coverage (the share of left-out systems whose full-qrels score lies in
its 95% interval, the mean width, the likely comparisons in the full order), then each fill (the estimate, the
thresholded labels, the floors, the qrels check) x measure with mean |score - full|, rank displacement, Kendall tau
and tau_AP (95% bootstrap intervals over topics), the estimate's verdicts against each floor and the people curve.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def ci(value: float, interval: list[float] | None, digits: int = 3) -> str:
    return f"{value:.{digits}f}" + (f" [{interval[0]:.{digits}f}, {interval[1]:.{digits}f}]" if interval else "")


def bounds_covered(coverage: dict) -> str:
    """``40/40``: left-out systems inside their bounds (n/a for a reusability.json from before they were counted)."""
    return f"{coverage['bounds_covered']}/{coverage['systems']}" if "bounds_covered" in coverage else "n/a"


def table(label: str, data: dict) -> list[str]:
    lines = [
        f"**{label} leave-out** ({data['dataset']}, {len(data['systems'])} systems, {data['topics']} topics, "
        f"{data['removed_pairs']} removed pairs, judge `{data['judge']}`, {data['grading']} grades)",
        "",
        "| estimate | measure | covered | mean width | inside the bounds | likely in the full order "
        "| adjacent likely |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in data.get("coverage", []):
        if c.get("people") and c["people"]["order"] != "random":
            continue
        lines.append(
            f"| {c['fill']} | {c['measure']} | {c['covered']}/{c['systems']} ({c['coverage']:.3f}) | "
            f"{c['mean_width']:.4f} | {bounds_covered(c)} | {c['agree']}/{c['likely']} | "
            f"{c['adjacent_agree']}/{c['adjacent_likely']} |"
        )
    lines += [
        "",
        "| fill | measure | mean \\|score - full\\| | rank displacement | Kendall tau | tau_AP |",
        "|---|---|---|---|---|---|",
    ]
    for r in data["judges"]:
        if r["kind"] != "people":
            lines.append(
                f"| {r['judge']} | {r['measure']} | {ci(r['mean_abs_error'], r['mean_abs_error_interval'], 4)} | "
                f"{r['rank_displacement']:.2f} | {ci(r['kendall_tau'], r['kendall_tau_interval'])} | "
                f"{ci(r['tau_ap'], r['tau_ap_interval'])} |"
            )
    lines.append("")
    for v in data["verdicts"]:
        if v["figure"] == "mean_abs_error":
            lines.append(
                f"- {v['measure']}: estimate vs {v['baseline']}: {v['verdict']} (error {v['baseline_value']:.4f} -> "
                f"{v['judge_value']:.4f}, gain {ci(v['gain'], v['interval'], 4)})"
            )
    people = [r for r in data["judges"] if r["kind"] == "people"]
    if people:
        shares = sorted({r["people"]["share"] for r in people})
        lines += ["", "| people order | measure | " + " | ".join(f"K = {s:.0%}" for s in shares) + " |"]
        lines.append("|---|---|" + "---|" * len(shares))
        for order in dict.fromkeys(r["people"]["order"] for r in people):
            for measure in dict.fromkeys(r["measure"] for r in people):
                cells = {
                    r["people"]["share"]: r for r in people if r["people"]["order"] == order and r["measure"] == measure
                }
                lines.append(
                    f"| {order} | {measure} | "
                    + " | ".join(f"{cells[s]['mean_abs_error']:.4f} / {cells[s]['kendall_tau']:.3f}" for s in shares)
                    + " |"
                )
    for c in data.get("circularity", []):
        lines.append(
            f"Circularity, {c['measure']}: signed error on {len(c['sharing_systems'])} systems sharing "
            f"{', '.join(c['judge_models'])} {c['sharing_signed_error']:+.4f}, others {c['other_signed_error']:+.4f}, "
            f"difference {ci(c['difference'], c['interval'], 4)}{' FLAGGED' if c['flagged'] else ''}"
        )
    return lines


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    for item in argv:
        label, _, path = item.partition("=")
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        print("\n".join(table(label, data)) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
