"""The review web app: sign-in, the case page, tokens on every write, escaping, parallel browsers."""

from __future__ import annotations

import re
import threading

import httpx
import pytest
from review_support import (
    add_xss_document,
    login_post,
    running_server,
    staged_records,
    synced_db,
    tiny_dataset,
    xss_record,
)

from bridge.review.app import create_app
from bridge.review.store import ReviewDB


@pytest.fixture
def db(tiny_beir, tmp_path):
    return synced_db(tmp_path / "r.sqlite", tiny_dataset(tiny_beir), staged_records(), check_share=0.0)


def sign_in(client, token):
    response = login_post(client, token)
    assert response.status_code == 303, response.data
    return response.headers["Location"].rsplit("/", 1)[1]


def counts(db):
    return len(db.judgments()), sum(1 for _ in db.items()), len(db.annotators())


def test_case_page_shows_query_chunk_and_the_debate_round_by_round(db):
    token = db.add_annotator("ann")
    client = create_app(db).test_client()
    public_id = sign_in(client, token)
    html = client.get(f"/item/{public_id}").get_data(as_text=True)
    assert "who won the first nobel prize in physics" in html
    assert "Round 1" in html and "Round 2" in html
    assert "The chunk names the discoverer of X-rays." in html and "It never mentions the Nobel Prize." in html
    # both agents' evidence is highlighted in the chunk; a quote the chunk does not contain is marked
    assert '<mark class="ev ev-a" data-quotes="q1-0-0 q2-0-0">Rontgen discovered X-rays in 1895</mark>' in html
    assert '<mark class="ev ev-b" data-quotes="q1-1-0">in Wurzburg</mark>' in html
    assert "“made up quote” <em>(not found in the chunk)</em>" in html
    assert 'name="token" value="' + token + '"' in html


def test_labelling_moves_on_and_a_resubmitted_form_counts_once(db):
    token = db.add_annotator("ann")
    client = create_app(db).test_client()
    first = sign_in(client, token)
    form = {"token": token, "label": "1", "comment": "clear case"}
    response = client.post(f"/item/{first}", data=form)
    assert response.status_code == 303 and first not in response.headers["Location"]
    again = client.post(f"/item/{first}", data={**form, "label": "0"})  # back button + resubmit
    assert again.status_code == 303
    assert [(j.label, j.comment) for j in db.judgments()] == [(1, "clear case")]
    page = client.get(f"/item/{first}").get_data(as_text=True)
    assert "You already judged this item (relevant)" in page


def test_every_write_needs_the_token_and_a_wrong_one_writes_nothing(db):
    token = db.add_annotator("ann")
    client = create_app(db).test_client()
    public_id = sign_in(client, token)
    before = counts(db), db.assignment_state(1, 2)
    for path, data in [
        (f"/item/{public_id}", {"token": "not-the-token", "label": "1"}),
        (f"/item/{public_id}", {"label": "1"}),
        (f"/item/{public_id}/skip", {"token": "nope"}),
        ("/next", {"token": token + "x"}),
    ]:
        assert client.post(path, data=data).status_code == 403
    assert (counts(db), db.assignment_state(1, 2)) == before
    assert db.judgments() == []
    assert login_post(client, "guess").status_code == 403
    anonymous = create_app(db).test_client()
    assert anonymous.get(f"/item/{public_id}").status_code == 302  # pages need a sign-in too


def test_another_annotators_item_is_not_found(db):
    db.configure(judgments_per_case=1)  # ben is given another case
    ann, ben = db.add_annotator("ann"), db.add_annotator("ben")
    app = create_app(db)
    first = sign_in(app.test_client(), ann)
    other = app.test_client()
    sign_in(other, ben)
    assert other.get(f"/item/{first}").status_code == 404
    assert other.post(f"/item/{first}", data={"token": ben, "label": "1"}).status_code == 404
    assert db.judgments() == []


def test_markup_in_chunk_reason_and_quotes_is_shown_as_text(tiny_beir, tmp_path):
    add_xss_document(tiny_beir)
    db = synced_db(tmp_path / "x.sqlite", tiny_dataset(tiny_beir), [xss_record()], check_share=0.0)
    token = db.add_annotator("ann")
    client = create_app(db).test_client()
    response = client.get(f"/item/{sign_in(client, token)}")
    html = response.get_data(as_text=True)
    assert html.count("<script") == 1 and '<script src="/static/review.js"></script>' in html
    assert "<img" not in html and "<b>bold</b>" not in html and "<i>nothing</i>" not in html
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in html
    assert "Rontgen &lt;b&gt;bold&lt;/b&gt;" in html
    # the quoted <script> is highlighted as escaped text inside the chunk
    assert re.search(r'<mark class="ev ev-a"[^>]*>&lt;script&gt;window.__pwned = 1&lt;/script&gt;</mark>', html)
    assert "script-src 'self'" in response.headers["Content-Security-Policy"]


def test_progress_page(db):
    token = db.add_annotator("ann")
    client = create_app(db).test_client()
    public_id = sign_in(client, token)
    client.post(f"/item/{public_id}", data={"token": token, "label": "1"})
    html = client.get("/progress").get_data(as_text=True)
    assert re.search(r'id="cases">3<', html) and "0 relevant" in html and "(1 started)" in html
    assert "<td>ann</td><td>1</td>" in html


def test_parallel_browsers_lose_nothing_and_count_nothing_twice(tiny_beir, tmp_path):
    records = staged_records()
    db = synced_db(tmp_path / "r.sqlite", tiny_dataset(tiny_beir), records, judgments_per_case=2, check_share=0.0)
    tokens = [db.add_annotator(f"ann{k}") for k in range(5)]  # 3 cases x 2 = 6 slots for 5 people
    start = threading.Barrier(len(tokens))
    acknowledged: list[tuple[str, str]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def annotate(base: str, token: str) -> None:
        try:
            with httpx.Client(base_url=base, timeout=30) as client:
                start.wait()
                response = login_post(client, token)
                while "/item/" in response.headers.get("location", ""):
                    public_id = response.headers["location"].rsplit("/", 1)[1]
                    response = client.post(f"/item/{public_id}", data={"token": token, "label": "1"})
                    assert response.status_code == 303
                    with lock:
                        acknowledged.append((token, public_id))
                assert response.headers["location"].endswith("/done")
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    with running_server(db) as base:
        threads = [threading.Thread(target=annotate, args=(base, t)) for t in tokens]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert errors == []
    judgments = db.judgments()
    assert len(judgments) == len(acknowledged) == 6  # every acknowledged answer is stored, none twice
    per_case = {}
    for j in judgments:
        per_case.setdefault(j.item_id, set()).add(j.annotator_id)
    assert sorted(len(v) for v in per_case.values()) == [2, 2, 2]  # exactly N distinct annotators per case


def test_a_double_click_sent_in_parallel_is_one_judgment(db):
    token = db.add_annotator("ann")
    with running_server(db) as base:
        with httpx.Client(base_url=base) as client:
            public_id = login_post(client, token).headers["location"].rsplit("/", 1)[1]
        go = threading.Barrier(8)
        statuses = []

        def click(label: str) -> None:
            with httpx.Client(base_url=base, timeout=30) as c:
                go.wait()
                statuses.append(c.post(f"/item/{public_id}", data={"token": token, "label": label}).status_code)

        threads = [threading.Thread(target=click, args=("1" if k % 2 else "0",)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    assert statuses == [303] * 8
    assert len(db.judgments()) == 1


def test_restarted_server_keeps_judgments_and_signed_in_browsers(db):
    token = db.add_annotator("ann")
    with httpx.Client(timeout=30) as browser:
        with running_server(db) as base:
            first = login_post(browser, token, base).headers["location"]
            second = browser.post(f"{base}{first}", data={"token": token, "label": "1"}).headers["location"]
        restarted = ReviewDB(db.path)  # a new process would open the file the same way
        with running_server(restarted) as base:
            page = browser.get(f"{base}{second}")  # the old session cookie is still valid
            assert page.status_code == 200 and 'id="judge-form"' in page.text
            again = browser.post(f"{base}{first}", data={"token": token, "label": "0"})  # stale form
            assert again.status_code == 303
    assert [(j.annotator, j.label) for j in restarted.judgments()] == [("ann", 1)]


def test_sign_in_needs_the_sign_in_pages_secret(db):
    """A sign-in form posted from another site (no session, or another session's secret) signs nobody in."""
    token = db.add_annotator("ann")
    client = create_app(db).test_client()
    forged = client.post("/login", data={"token": token})  # cross-site: never saw the sign-in page
    assert forged.status_code == 403 and "did not come from this site" in forged.get_data(as_text=True)
    other = create_app(db).test_client()
    theirs = re.search(r'name="login_nonce" value="([^"]+)"', other.get("/login").get_data(as_text=True)).group(1)
    assert client.post("/login", data={"token": token, "login_nonce": theirs}).status_code == 403
    assert client.get("/").status_code == 302  # still signed out
    assert login_post(client, token).status_code == 303
