"""The review web application (Flask, server-rendered pages, no external assets).

Pages read; every write is a POST that carries the annotator's secret token in the form and is
refused with 403, writing nothing, when the token is wrong; the sign-in POST carries the sign-in page's
per-session secret instead (another site cannot sign a browser in under its own token). The browser
session only remembers the token so that pages can be shown and forms filled in. After each write the browser is
redirected (303), so a reload never repeats a POST, and the database ignores a second judgment
of the same item by the same annotator (double click, back button).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

from flask import Flask, abort, flash, redirect, render_template, request, session, url_for
from werkzeug.serving import make_server
from werkzeug.wrappers import Response

from bridge.review import render
from bridge.review.records import Annotator, AnnotatorFlagged, NotAssigned
from bridge.review.store import ReviewDB

MAX_COMMENT = 2000
LOGIN_NONCE = "login_nonce"
"""The sign-in form's field (and session key) that a cross-site POST cannot fill in."""
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def create_app(db: ReviewDB, title: str = "bridge review") -> Flask:
    app = Flask(__name__)
    app.config.update(
        SECRET_KEY=db.secret_key,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Strict",
        MAX_CONTENT_LENGTH=64 * 1024,
    )

    def signed_in() -> Annotator | None:
        return db.annotator_by_token(session.get("token"))

    def writer() -> Annotator:
        """The annotator whose token came with the form; 403 before anything is written otherwise."""
        annotator = db.annotator_by_token(request.form.get("token", ""))
        if annotator is None:
            abort(403)
        return annotator

    def go_next(annotator: Annotator) -> Response | str:
        try:
            item = db.next_item(annotator.id)
        except AnnotatorFlagged as exc:
            return page("Paused", str(exc), annotator)
        if item is None:
            return redirect(url_for("done"), code=303)
        return redirect(url_for("case", public_id=item.public_id), code=303)

    def page(heading: str, message: str, annotator: Annotator | None = None, status: int = 200) -> Response:
        body = render_template("message.html", title=title, heading=heading, message=message, annotator=annotator)
        return Response(body, status=status, mimetype="text/html")

    @app.after_request
    def secure(response: Response) -> Response:
        response.headers.update(SECURITY_HEADERS)
        return response

    @app.errorhandler(403)
    def forbidden(_: Exception) -> Response:
        return page("Forbidden", "This form came without a valid annotator token. Nothing was saved.", status=403)

    @app.errorhandler(404)
    def not_found(_: Exception) -> Response:
        return page("Not found", "There is no such page or item for you.", signed_in(), status=404)

    @app.get("/")
    def home() -> Response | str:
        annotator = signed_in()
        if annotator is None:
            return redirect(url_for("login"))
        return render_template("home.html", title=title, annotator=annotator, done=db.judged_count(annotator.id))

    def login_nonce() -> str:
        """The sign-in form's one-per-session secret: a form another site posts cannot carry it."""
        nonce = session.get(LOGIN_NONCE) or secrets.token_urlsafe(24)
        session[LOGIN_NONCE] = nonce
        return str(nonce)

    @app.route("/login", methods=["GET", "POST"])
    def login() -> Response | str:
        if request.method == "GET":
            return render_template("login.html", title=title, annotator=None, error=None, nonce=login_nonce())
        expected, sent = session.get(LOGIN_NONCE), request.form.get(LOGIN_NONCE, "")
        if not expected or not secrets.compare_digest(str(expected), sent):
            message = "This sign-in form did not come from this site's sign-in page; open it again. Nothing changed."
            return page("Forbidden", message, status=403)
        token = request.form.get("token", "").strip()
        annotator = db.annotator_by_token(token)
        if annotator is None:
            body = render_template("login.html", title=title, annotator=None, error="Unknown token.", nonce=expected)
            return Response(body, status=403, mimetype="text/html")
        session.clear()
        session["token"] = token
        return go_next(annotator)

    @app.post("/logout")
    def logout() -> Response:
        session.clear()
        return redirect(url_for("login"), code=303)

    @app.post("/next")
    def next_item() -> Response | str:
        return go_next(writer())

    @app.get("/item/<public_id>")
    def case(public_id: str) -> Response | str:
        annotator = signed_in()
        if annotator is None:
            return redirect(url_for("login"))
        item = db.item(public_id)
        if item is None or db.assignment_state(annotator.id, item.id) is None:
            abort(404)
        rounds = render.debate(item.rounds, item.chunk)
        return render_template(
            "case.html",
            title=title,
            annotator=annotator,
            token=session["token"],
            item=item,
            rounds=rounds,
            chunk_html=render.highlight(item.chunk, render.all_quotes(rounds)),
            adjudication=item.source.get("details", {}).get("adjudication"),
            verdict_text=render.verdict_text,
            judged=db.judgment_of(annotator.id, item.id),
            done=db.judged_count(annotator.id),
        )

    @app.post("/item/<public_id>")
    def judge(public_id: str) -> Response | str:
        annotator = writer()
        label = request.form.get("label")
        if label not in ("0", "1"):
            return page("Choose a label", "Pick Relevant or Not relevant before going on.", annotator, status=400)
        comment = request.form.get("comment", "")[:MAX_COMMENT]
        try:
            recorded = db.submit(annotator.id, public_id, int(label), comment)
        except NotAssigned:
            abort(404)
        if not recorded:
            flash("That item was already judged by you; your first answer was kept.")
        return go_next(annotator)

    @app.post("/item/<public_id>/skip")
    def skip(public_id: str) -> Response | str:
        annotator = writer()
        db.skip(annotator.id, public_id)
        return go_next(annotator)

    @app.get("/done")
    def done() -> Response | str:
        annotator = signed_in()
        if annotator is None:
            return redirect(url_for("login"))
        message = "There is nothing left for you to judge right now. Thank you!"
        return page("All done", message, annotator)

    @app.get("/progress")
    def progress() -> Response | str:
        annotator = signed_in()
        if annotator is None:
            return redirect(url_for("login"))
        return render_template("progress.html", title=title, annotator=annotator, p=db.progress())

    return app


def serve(app: Flask, host: str, port: int, on_ready: Callable[[str], None]) -> None:
    """Serve ``app`` with werkzeug's threaded server until interrupted; ``on_ready`` gets the URL."""
    server = make_server(host, port, app, threaded=True)
    on_ready(f"http://{host}:{server.server_port}/")
    try:
        server.serve_forever()
    finally:
        server.server_close()
