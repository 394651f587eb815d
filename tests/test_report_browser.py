"""The evaluation report in a real headless Chromium (Debian's `chromium`, as the review page's test): its first
screen answers (the estimate table's header and a system's estimate with its interval), and no Markdown shows raw.
Run on a report built here and on the shipped docs/example-report."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_eval_cli import bridge, workspace  # noqa: F401  (the fixture)
from test_review_browser import browser, pytestmark  # noqa: F401  (the fixture; skipped without chromium)

from bridge.evaluation.report import ANSWER_COLUMNS

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "example-report" / "report.html"


@pytest.fixture
def page(browser):  # noqa: F811
    return browser.new_page(viewport={"width": 1280, "height": 800})


def assert_answers_on_the_first_screen(page, report: Path) -> None:
    page.goto(report.as_uri())
    table = page.locator("table").first
    header = [cell.strip() for cell in table.locator("thead th").all_inner_texts()]
    assert header == list(ANSWER_COLUMNS)
    for name in ("estimate", "95% interval"):
        box = table.locator("thead th", has_text=name).first.bounding_box()
        assert box is not None and box["y"] + box["height"] <= 800, (name, box)
    first = table.locator("tbody tr").first
    box = first.bounding_box()
    assert box is not None and box["y"] + box["height"] <= 800, box
    cells = first.locator("td").all_inner_texts()
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
