"""Take docs/review-case.png: the review page of a real NQ pair with an illustrative two-round debate.

The pair (query 32, DPR passage 9354615) and its text come from the shared NQ data; the debate in
docs/review-demo/labels.jsonl is hand-written to look like a DREAM escalation. The page is served by
the real app and photographed in Debian's headless Chromium:

    python scripts/review_screenshot.py [--data-dir ../shared/data] [--out docs/review-case.png]
"""

from __future__ import annotations

import argparse
import tempfile
import threading
from pathlib import Path

from werkzeug.serving import make_server

from bridge.core.label_records import read_labels
from bridge.datasets import load_dataset
from bridge.review.app import create_app
from bridge.review.items import attention_checks, review_cases
from bridge.review.store import ReviewDB

ROOT = Path(__file__).resolve().parents[1]
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--labels", type=Path, default=ROOT / "docs" / "review-demo" / "labels.jsonl")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "review-case.png")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    dataset = load_dataset("nq", args.data_dir)
    with tempfile.TemporaryDirectory() as tmp:
        db = ReviewDB(Path(tmp) / "review.sqlite")
        db.configure(check_share=0.0)
        cases, reviewed = review_cases(dataset, read_labels(args.labels))
        db.sync(cases, reviewed, lambda n, taken: attention_checks(dataset, n, 0, taken))
        token = db.add_annotator("annotator-1")
        server = make_server("127.0.0.1", 0, create_app(db, title="bridge review · nq"), threaded=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1200, "height": 900}, device_scale_factor=1)
                page.goto(f"http://127.0.0.1:{server.server_port}/login")
                page.fill("#token", token)
                page.click("#login")
                page.wait_for_url("**/item/*")
                page.keyboard.press("2")  # "not relevant" chosen with the keyboard, not yet submitted
                page.hover("[data-quote='q2-1-0']")  # Agent B's round-2 quote lights up in the chunk
                page.screenshot(path=str(args.out), full_page=True)
                browser.close()
        finally:
            server.shutdown()
    print(f"-> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
