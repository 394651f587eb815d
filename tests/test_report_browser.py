"""The evaluation report in a real headless Chromium (Debian's `chromium`, as the review page's test): its first
screen answers (the one-line answer and the systems-by-measures table), the answer table gives a system's estimate
within its interval, no Markdown shows raw, and the example is at most 9,000 px tall with its folds closed. Run on a
report built here and on the shipped docs/example-report."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_eval_cli import bridge, workspace  # noqa: F401  (the fixture)
from test_review_browser import browser, pytestmark  # noqa: F401  (the fixture; skipped without chromium)

from bridge.evaluation.report.answer import ANSWER_COLUMNS

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "example-report" / "report.html"


@pytest.fixture
def page(browser):  # noqa: F811
    return browser.new_page(viewport={"width": 1280, "height": 800})


def assert_answers_on_the_first_screen(page, report: Path) -> None:
    """The first screen holds the one-line answer and the systems-by-measures table (every system's estimate per
    measure, the first in bold); the answer table with both intervals follows."""
    page.goto(report.as_uri())
    assert page.locator("p", has_text="In one line:").first.bounding_box()["y"] <= 800
    glance = page.locator("table").first
    header = [cell.strip() for cell in glance.locator("thead th").all_inner_texts()]
    assert header[0] == "system" and len(header) >= 2
    first = glance.locator("tbody tr").first
    box = first.bounding_box()
    assert box is not None and box["y"] + box["height"] <= 800, box
    assert glance.locator("strong").count() >= len(header) - 1  # the first of each measure in bold
    table = page.locator("table").nth(1)
    assert [cell.strip() for cell in table.locator("thead th").all_inner_texts()] == list(ANSWER_COLUMNS)
    cells = table.locator("tbody tr").first.locator("td").all_inner_texts()
    estimate, interval = float(cells[2]), cells[3]
    low, high = (float(x) for x in interval.strip("[]").split(","))
    assert low <= estimate <= high, cells
    text = page.inner_text("body")
    assert "**" not in text and "estimate" in page.locator("strong").all_inner_texts()


def test_a_built_report_answers_on_its_first_screen(workspace, page):  # noqa: F811
    tmp, dataset = workspace
    assert bridge("eval", "--dataset", dataset, "--permutations", "200", "--orders", "2") == 0
    assert_answers_on_the_first_screen(page, tmp / "reports/beir-small/report.html")


def test_the_shipped_example_report_answers_on_its_first_screen(page):
    assert_answers_on_the_first_screen(page, EXAMPLE)


def test_the_shipped_example_report_is_short_with_its_folds_closed(page):
    """At 1280 px with every fold (details) closed, the whole nq report is at most 9,000 px tall: the answer, how far
    to trust it and what it rests on, not the same tables twice."""
    page.goto(EXAMPLE.as_uri())
    assert page.locator("details[open]").count() == 0
    assert page.evaluate("document.documentElement.scrollHeight") <= 9000
