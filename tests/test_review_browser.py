"""The review page in a real headless Chromium (Debian's `chromium`, driven by Playwright).

Never `playwright install`: the test uses the system browser and skips, saying so, only when no
chromium binary exists (CI installs it with apt).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from review_support import add_xss_document, running_server, staged_records, synced_db, tiny_dataset, xss_record

CHROMIUM = shutil.which("chromium") or next((p for p in ("/usr/bin/chromium",) if Path(p).exists()), None)
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium binary on PATH or at /usr/bin/chromium (apt-get install chromium)"
)


@pytest.fixture
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def test_annotator_signs_in_reads_the_debate_and_labels_with_the_keyboard(browser, tiny_beir, tmp_path):
    add_xss_document(tiny_beir)
    records = [xss_record(), *staged_records()]
    db = synced_db(tmp_path / "r.sqlite", tiny_dataset(tiny_beir), records, judgments_per_case=1, check_share=0.0)
    token = db.add_annotator("ann")
    annotator = db.annotator_by_token(token)
    with running_server(db) as base:
        page = browser.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(f"{base}/login")
        page.fill("#token", token)
        page.click("#login")
        page.wait_for_url("**/item/*")

        # the first case is the one whose chunk, reasons and quotes carry markup
        first = db.item(page.url.rsplit("/", 1)[1])
        assert (first.qid, first.docid) == ("q1", "d6")
        assert "<script>window.__pwned = 1</script>" in page.inner_text("#chunk")
        assert '<img src=x onerror="window.__pwned = 2">' in page.inner_text("#chunk")
        history = page.inner_text("#history")
        assert "Round 1" in history and "It says <script>" in history and "<i>nothing</i>" in history
        injected = "document.querySelectorAll('#case script, #case img, #case b, #case i').length"
        assert page.evaluate(injected) == 0
        assert page.evaluate("typeof window.__pwned") == "undefined" and dialogs == []

        # keyboard: 2 chooses "not relevant", Enter submits and moves to the next case
        page.keyboard.press("2")
        assert page.is_checked("#label-0")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        assert db.judgment_of(annotator.id, first.id) == 0

        # the next case shows the two-round debate with the evidence highlighted in the chunk
        second = db.item(page.url.rsplit("/", 1)[1])
        assert (second.qid, second.docid) == ("q1", "d2")
        history = page.inner_text("#history")
        assert "Round 2" in history and "Discovering X-rays is not winning the first prize." in history
        assert page.inner_text("#chunk mark.ev-b") == "in Wurzburg"
        page.hover("[data-quote='q1-0-0']")
        assert "active" in page.get_attribute("#chunk mark.ev-a", "class")

        # Enter without a label does nothing but ask for one; then 1, a comment, and Ctrl+Enter
        page.keyboard.press("Enter")
        assert page.is_visible("#hint") and db.judgment_of(annotator.id, second.id) is None
        page.keyboard.press("1")
        page.keyboard.press("c")
        page.keyboard.type("names the discoverer, not the prize")
        with page.expect_navigation():
            page.keyboard.press("Control+Enter")
        assert [(j.item_id, j.label, j.comment) for j in db.judgments() if j.item_id == second.id] == [
            (second.id, 1, "names the discoverer, not the prize")
        ]

        # the back button and a second submission do not add a judgment
        page.go_back()
        assert "You already judged this item" in page.inner_text("#case")
        assert len(db.judgments()) == 2
        page.close()
