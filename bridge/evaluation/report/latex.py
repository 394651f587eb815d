"""The answer table as LaTeX (booktabs), for a paper: ``reports/<ds>/answer.tex``, as ranx exports its tables.

One ``table`` environment per measure, its rows as the report's answer table orders them (estimate, best first): the
estimate, its 95% interval on these topics (the holes' uncertainty only) and on topics like these (topics resampled
too), the holey score and the bounds. ``\\usepackage{booktabs}`` is all it needs.
"""

from __future__ import annotations

from collections.abc import Mapping

from bridge.evaluation.rebenchmark.estimated import EstimatedLeaderboard

TEX_MARKS = {"▲": r"$^{\blacktriangle}$", "△": r"$^{\vartriangle}$", "=": r"$^{=}$"}
"""The report's marks (:data:`bridge.evaluation.rebenchmark.estimated.MARKS`) as superscripts (amssymb)."""
TEX_LEGEND = (
    r"Marks against the system ranked just below: $^{\blacktriangle}$ settled better, $^{\vartriangle}$ likely better "
    r"($P(\textrm{better}) \geq 0.95$), $^{=}$ not separable; no mark: open; bold: first (ties share it)."
)

SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
    "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
}  # fmt: skip


def escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped."""
    return "".join(SPECIAL.get(c, c) for c in text)


def _interval(low: float, high: float, digits: int) -> str:
    return f"[{low:.{digits}f}, {high:.{digits}f}]"


def answer_tex(
    estimated: EstimatedLeaderboard,
    holey: Mapping[tuple[str, str], float],
    reference: str,
    dataset: str,
    digits: int = 3,
) -> str:
    """The answer table per measure as booktabs tables, systems best first, the first in bold and each estimate with
    the report's mark against the next system (``holey``: (system, measure) -> the score under the ``reference``
    qrels)."""
    out = [f"% bridge: the estimated leaderboard of {dataset} (booktabs, amssymb); one table per measure", ""]
    for measure, scores in estimated.ranked_with_ranks().items():
        label = "".join(c if c.isalnum() else "-" for c in f"{dataset}-{measure}").strip("-").lower()
        out += [
            r"\begin{table}[t]",
            r"\centering",
            rf"\caption{{{escape(dataset)}, {escape(measure)}: each system's estimate once every hole is judged, with "
            r"its 95\% interval on these topics (holes) and on topics like these (topics and holes), its score under "
            rf"the {escape(reference)} qrels (holes counted not relevant) and the bounds the holes allow. "
            rf"{TEX_LEGEND}}}",
            rf"\label{{tab:{label}}}",
            r"\begin{tabular}{rlrccrc}",
            r"\toprule",
            r"Rank & System & Estimate & 95\% CI (these topics) & 95\% CI (topics like these) & Holey & Bounds \\",
            r"\midrule",
        ]
        for rank, s in scores:
            holey_score = holey.get((s.system, measure))
            value = f"{s.estimate:.{digits}f}"
            value = (rf"\textbf{{{value}}}" if rank == 1 else value) + TEX_MARKS.get(
                estimated.mark(s.system, measure), ""
            )
            cells = [
                str(rank), escape(s.system), value, _interval(*s.interval, digits),
                _interval(*s.topic_interval, digits), "--" if holey_score is None else f"{holey_score:.{digits}f}",
                _interval(s.low, s.high, digits),
            ]  # fmt: skip
            out.append(" & ".join(cells) + r" \\")
        out += [r"\bottomrule", r"\end{tabular}", r"\end{table}", ""]
    return "\n".join(out)
