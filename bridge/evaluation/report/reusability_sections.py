"""Reusability: the leave-one-system-out test as `bridge reusability` wrote it (reports/<ds>/reusability.json):
coverage of the full-qrels scores, each fill against the full leaderboard, people at random, circularity and the
judge on the removed pairs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bridge.evaluation.report.blocks import Block, Heading, Image, Para, Table, ci


def reusability_blocks(data: Mapping[str, Any], figures: dict[str, Path]) -> list[Block]:
    """The leave-one-system-out test (reports/<ds>/reusability.json, written by `bridge reusability`)."""
    blocks: list[Block] = [Heading("Reusability: leave one system out")]
    if "judges" not in data or "coverage" not in data:
        return [*blocks, Para("reusability.json was written by an older bridge: re-run `bridge reusability`.")]
    unit = "system" if data["leave_out"] == "system" else "retriever family"
    blocks.append(
        Para(
            f"For each of the {len(data['systems'])} systems, the judged pairs in its top-{data['depth']} that no "
            f"other {unit} retrieved were removed from the original qrels (holey) and estimated again as `bridge "
            f"eval` estimates holes: open, with the calibrated P of the judge `{data['judge']}` (one label run and one "
            f"audit over all {data['removed_pairs']} removed pairs, trained without any of them). Beside the "
            "estimate, in the same run, the floors: the judge's thresholded labels (what augmented.qrels holds), "
            "holey, condensed lists, everything relevant and relevant at random with the topic's share of relevant "
            "judgments; the qrels fill checks the protocol. Error: mean over systems of |score - full-qrels score|; "
            f"rank displacement: mean |rank change| among the other systems' full scores; {data['grading']} grades "
            f"for nDCG where a label fills ({data['topics']} topics; 95% bootstrap intervals over topics)."
        )
    )
    blocks += _coverage_blocks(data)
    blocks += _fill_blocks(data)
    blocks += _people_blocks([r for r in data["judges"] if r["kind"] == "people"])
    for c in data.get("circularity", []):
        blocks.append(
            Para(
                f"Circularity, {c['measure']}: the judge's signed error on the {len(c['sharing_systems'])} systems "
                f"that share {', '.join(c['judge_models'])} with it is {c['sharing_signed_error']:+.4f}, on the others "
                f"{c['other_signed_error']:+.4f} (difference {ci(c['difference'], c['interval'], 4)})"
                + (
                    ": **flagged**, the judge treats its own kind differently."
                    if c["flagged"]
                    else ": not significant."
                )
            )
        )
    blocks += _removed_pair_blocks(data["judge_on_removed_pairs"])
    if "reusability" in figures:
        blocks.append(Image(figures["reusability"], "Each system under the full and holey qrels, and its estimate."))
    return blocks


def _coverage_blocks(data: Mapping[str, Any]) -> list[Block]:
    """The estimates' coverage of the full-qrels scores (the estimate and people at random)."""
    cover_rows = tuple(
        (
            c["fill"],
            c["measure"],
            f"{c['covered']}/{c['systems']} ({c['coverage']:.3f})",
            f"{c['mean_width']:.4f}",
            f"{c['bounds_covered']}/{c['systems']}" if "bounds_covered" in c else "n/a",
            f"{c['agree']}/{c['likely']}" if c["likely"] else "",
            f"{c['adjacent_agree']}/{c['adjacent_likely']}" if c["adjacent_likely"] else "",
        )
        for c in data["coverage"]
        if not c.get("people") or c["people"]["order"] == "random"
    )
    return [
        Para(
            "Coverage: the share of left-out systems whose full-qrels score lies in the estimate's 95% interval "
            "(inside the bounds: within its lowest and highest score, which holds every one unless the gate misses "
            "more than its credible bound allows); "
            "likely: the comparisons of each left-out system with another that the estimate calls likely (P >= 0.95 "
            "either way), and how many of them the full-qrels scores order the same way (adjacent: its neighbours "
            "under the estimate). People at random: that share of the removed pairs answered from their hidden "
            "labels at random, which also calibrates the estimate on holes."
        ),
        Table(
            ("estimate", "measure", "covered", "mean width", "inside the bounds", "likely agree", "adjacent agree"),
            cover_rows,
        ),
    ]


def _fill_blocks(data: Mapping[str, Any]) -> list[Block]:
    """Each fill's leave-one-out leaderboard against the full one, and the estimate's verdicts on the floors."""
    rows = [r for r in data["judges"] if r["kind"] != "people"]
    blocks: list[Block] = [
        Table(
            ("judge", "measure", "mean |score - full|", "rank displacement", "Kendall tau", "tau_AP"),
            tuple(
                (
                    r["judge"],
                    r["measure"],
                    ci(r["mean_abs_error"], r["mean_abs_error_interval"], 4),
                    f"{r['rank_displacement']:.2f}",
                    ci(r["kendall_tau"], r["kendall_tau_interval"]),
                    ci(r["tau_ap"], r["tau_ap_interval"]),
                )
                for r in rows
            ),
        )
    ]
    for measure in dict.fromkeys(r["measure"] for r in rows):
        said = [v for v in data["verdicts"] if v["measure"] == measure and v["figure"] == "mean_abs_error"]
        if said:
            words = {"better": "beats", "worse": "loses to", "n.s.": "does not significantly beat"}
            parts = [
                f"{words[v['verdict']]} {v['baseline']} (error {v['baseline_value']:.4f} -> {v['judge_value']:.4f}, "
                f"gain {ci(v['gain'], v['interval'], 4)})"
                for v in said
            ]
            blocks.append(Para(f"**{measure}**: the estimate " + "; ".join(parts) + " (paired bootstrap over topics)."))
    return blocks


def _people_blocks(people: Sequence[Mapping[str, Any]]) -> list[Block]:
    """The people curve: error and tau with K% of the removed pairs answered by (simulated) people, per order."""
    if not people:
        return []
    shares = sorted({r["people"]["share"] for r in people})
    table_rows = []
    for measure in dict.fromkeys(r["measure"] for r in people):
        for order in dict.fromkeys(r["people"]["order"] for r in people):
            by_share = {
                r["people"]["share"]: r for r in people if r["measure"] == measure and r["people"]["order"] == order
            }
            table_rows.append(
                (
                    measure,
                    order,
                    *tuple(
                        f"{by_share[x]['mean_abs_error']:.4f} / {by_share[x]['kendall_tau']:.3f}"
                        if x in by_share
                        else ""
                        for x in shares
                    ),
                )
            )
    return [
        Para(
            "People, simulated: K% of the removed pairs answered from their hidden human labels (at random, or in "
            "the review queue's value order with a quarter of them at random), the estimate for the rest. Cells: "
            "mean |score - full| / Kendall tau."
        ),
        Table(("measure", "order", *tuple(f"K = {x:.0%}" for x in shares)), tuple(table_rows)),
    ]


def _removed_pair_blocks(c: Mapping[str, Any]) -> list[Block]:
    """The judge's thresholded labels on the removed pairs against their hidden human labels."""
    intervals = c.get("intervals", {})
    bacc = ci(c["balanced_accuracy"], intervals.get("balanced_accuracy"))
    return [
        Para(
            "The judge's thresholded labels on the removed pairs against their hidden human labels (a free audit on "
            "exactly the pairs that "
            f"move the leaderboard): balanced accuracy {bacc}, Cohen's kappa {ci(c['kappa'], intervals.get('kappa'))}"
            f", {c['undecided']} undecided."
        ),
        Table(
            ("human \\ judge", "relevant", "not relevant"),
            (("relevant", str(c["tp"]), str(c["fn"])), ("not relevant", str(c["fp"]), str(c["tn"]))),
        ),
    ]
