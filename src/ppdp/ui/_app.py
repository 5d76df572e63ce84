"""The web app of ``ppdp ui``: server-rendered pages over the flow's steps (:mod:`._steps`).

Screens, in order: the table (``/``) -> its schema (``/schema``) -> what to release
(``/release``) -> the budget and the dry run (``/budget``) -> the release and its report
(``/report``) -> the ledger's history (``/ledger``). Each shows the ``ppdp`` command it
runs. Security (token, Host, CSRF, headers): :mod:`._security`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import secrets
import shlex
import shutil
import sys
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape

from ppdp.budget import Neighbouring
from ppdp.exceptions import BudgetExceededError, ParameterError, PPDPError
from ppdp.ui import _steps
from ppdp.ui._schema_form import (
    column_rows,
    error_column,
    schema_from_form,
    unit_fields,
    values_text,
)
from ppdp.ui._security import (
    COMMON_HEADERS,
    MAX_FORM_BYTES,
    PAGE_CSP,
    REPORT_CSP,
    Secrets,
    parse_form,
    without_token,
)
from ppdp.ui._state import Run, Session, check_table_path
from ppdp.ui._words import budget_words, plain_number

__all__ = ["USER_ERRORS", "PostedForm", "create_app"]

#: What the CLI says in one line (exit 2); anything else is a bug and a 500.
USER_ERRORS = (PPDPError, ValueError, TypeError, OSError)
#: The errors whose message a page shows as it is: ppdp's own (written to be shown: they
#: name the parameter, the value typed and what is allowed, never a value of the data) and
#: the system's file errors (a path typed and the reason). Any other exception, a library's
#: ``ValueError`` included (pandas' may quote a value of the data), is one generic line on
#: the page and its traceback on the server's stderr (:func:`_failed`).
SHOWN_ERRORS = (PPDPError, OSError)


async def _posted_form(request: Request) -> dict[str, Any]:
    """The posted form, once its CSRF token is checked: every POST route takes it."""
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        raise HTTPException(413, "form too large")
    data = parse_form(body)
    token = data.pop("csrf", None)
    if not request.app.state.secrets.csrf_ok(token if isinstance(token, str) else None):
        raise HTTPException(403, "the form's CSRF token is missing or wrong: reload the page")
    return data


#: A POST route's form (CSRF-checked).
PostedForm = Annotated[dict[str, Any], Depends(_posted_form)]

_HERE = Path(__file__).parent
#: The screens, in the order of the flow: (path, title).
SCREENS = (
    ("/", "1. Table"),
    ("/schema", "2. Schema"),
    ("/release", "3. What to release"),
    ("/budget", "4. Budget"),
    ("/report", "5. Release and report"),
    ("/ledger", "6. Ledger history"),
)
#: Files of the run folder the app serves (by name; nothing else is reachable but the
#: release notes and reports written in this run, ``RELEASE.note.html`` and
#: ``RELEASE.report.html``: pages of their own, see ``Run.pages``).
_PAGE = "text/html; charset=utf-8"
_SERVED = {
    "commands.sh": "text/plain; charset=utf-8",
    "schema.json": "application/json",
    "log.txt": "text/plain; charset=utf-8",
}


#: Python advice in library messages, in the app's words.
_UI_ADVICE = (
    (re.compile(r";? ?pass allow_large_epsilon=True to accept (it|a larger value)"),
     " (the app stays within 10; the command line's --allow-large-epsilon accepts more)"),
    (re.compile(r"training a classifier needs a label with two classes$"),
     "training a classifier needs a label with two classes (name the label column on "
     "screen 1, “Table”, and draft again)"),
    (re.compile(r"delete it from the schema"),
     "leave it out (tick “Leave out” on the schema screen)"),
)  # fmt: skip


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    for pattern, words in _UI_ADVICE:
        text = pattern.sub(words, text)
    return text


#: What a step that failed unexpectedly has done (the release step says more).
_NOTHING = "nothing was saved or spent"
_NOT_RELEASED = (
    "nothing was released; the ledger's history (screen 6) shows whether a spend was recorded"
)


def _failed(exc: BaseException, step: str, done: str = _NOTHING) -> tuple[str, int]:
    """The one line a page shows for a step that raised ``exc``, and its HTTP status.

    ppdp's own errors (and file errors) are the input's fault: their message, status 200 as
    any refused form. Anything else is a fault of ppdp or of a library it calls: status
    500, a line naming the exception's type (never its message, which may quote a value of
    the data), and the whole traceback written to the server's stderr for the custodian."""
    if isinstance(exc, SHOWN_ERRORS):
        return _one_line(exc), 200
    print(f"ppdp ui: unexpected error in the {step}:", file=sys.stderr)
    traceback.print_exception(exc, file=sys.stderr)
    sys.stderr.flush()
    return (
        f"unexpected error in the {step} ({type(exc).__name__}): a fault of ppdp, not of "
        f"your input; {done}. The details are in the log of the terminal where 'ppdp ui' "
        "runs (report them with the ppdp version)."
    ), 500


def _status(response: Any, status: int) -> Any:
    response.status_code = status
    return response


def _field_of(message: str, fields: tuple[str, ...], exc: BaseException | None = None) -> str:
    """The form field a library message is about: ε for a spend the ledger cannot take, else
    the first of ``fields`` it opens with or names as ``name (`` / ``--name``; ``"form"``
    when none."""
    if isinstance(exc, BudgetExceededError) and "epsilon" in fields:
        return "epsilon"
    low = message.lower()
    for name in fields:
        flag = "--" + name.replace("_", "-")
        if low.startswith((name, flag)) or f"{flag} (" in low or f" {name} (" in low:
            return name
    return "form"


def create_app(
    *,
    workdir: str | Path,
    secrets_: Secrets | None = None,
    port: int | None = None,
    allowed_hosts: tuple[str, ...] = ("127.0.0.1", "localhost"),
) -> Any:
    """The FastAPI app of ``ppdp ui``.

    Parameters
    ----------
    workdir : path
        Where run folders are made (one per table chosen).
    secrets_ : Secrets, optional
        The token and CSRF token (fresh ones by default).
    port : int, optional
        The port served (names the cookie and the allowed ``Host`` values).
    allowed_hosts : tuple of str
        Host names a request may address (``Host`` header, without the port).
    """
    keys = secrets_ or Secrets()
    cookie = keys.cookie_name(port)
    session = Session(workdir=Path(workdir).resolve())
    env = Environment(
        loader=FileSystemLoader(_HERE / "templates"), autoescape=select_autoescape(default=True)
    )
    env.filters["values"] = values_text  # a list as its comma-separated field shows it
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    app.state.session = session
    app.state.secrets = keys

    @app.middleware("http")
    async def guard(request: Request, call_next: Callable[..., Any]) -> Any:
        host = (request.headers.get("host") or "").rsplit(":", 1)[0].strip("[]")
        if host not in allowed_hosts:
            return _refuse("this server answers requests to its own loopback address only")
        if keys.token_ok(request.query_params.get("token")):
            target = without_token(request.url.path, _multi(request))
            response: Any = RedirectResponse(target, status_code=303)
            response.set_cookie(cookie, keys.token, httponly=True, samesite="strict", path="/")
        elif not keys.token_ok(request.cookies.get(cookie)):
            return _refuse(
                "open the link with its token that 'ppdp ui' printed (this page needs it)"
            )
        else:
            origin = request.headers.get("origin")
            if request.method == "POST" and origin is not None and origin != _origin(request):
                return _refuse("a form posted from another site is refused")
            response = await call_next(request)
        for name, value in COMMON_HEADERS.items():
            response.headers.setdefault(name, value)
        response.headers.setdefault("Content-Security-Policy", PAGE_CSP)
        response.headers.setdefault("X-Frame-Options", "DENY")
        return response

    def page(name: str, path: str, **context: Any) -> HTMLResponse:
        run = session.run
        html = env.get_template(name).render(
            screens=SCREENS, current=path, csrf=keys.csrf, run=run, ledger=session.ledger,
            done=_done(run), **context,
        )  # fmt: skip
        return HTMLResponse(html)

    def need_run() -> Run:
        if session.run is None:
            raise _Redirect("/")
        return session.run

    @app.exception_handler(_Redirect)
    async def redirect(_request: Request, exc: _Redirect) -> Any:
        return RedirectResponse(exc.to, status_code=303)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> Any:
        """The last resort (a step's own failure keeps its form, see ``_failed``): the
        app's page with one line, never a bare 500."""
        line = _failed(exc, f"page {request.url.path}")[0]
        response = page("failed.html", request.url.path, errors={"form": line})
        response.status_code = 500
        for name, value in {**COMMON_HEADERS, "Content-Security-Policy": PAGE_CSP,
                            "X-Frame-Options": "DENY"}.items():  # fmt: skip
            response.headers[name] = value
        return response

    # ------------------------------------------------------------------ 1. the table
    @app.get("/", response_class=HTMLResponse)
    def start() -> Any:
        return page("start.html", "/", errors={}, values={}, workdir=session.workdir)

    @app.post("/draft")
    def draft(data: PostedForm) -> Any:
        values = {k: str(data.get(k, "")) for k in ("table", "label", "missing", "exclude")}
        try:
            table = check_table_path(values["table"])
        except ParameterError as exc:
            return page("start.html", "/", errors={"table": str(exc)}, values=values,
                        workdir=session.workdir)  # fmt: skip
        with session.lock:
            run = session.new_run(table)
            label = values["label"].strip() or None
            step = _steps.draft_step(
                table, run.draft_path, label=label, missing=_list(values["missing"]),
                exclude=_list(values["exclude"]),
            )  # fmt: skip
            said: list[str] = []
            try:
                result = _quietly(step.run, said.append)
            except Exception as exc:  # every failure is a page (_failed)
                session.run = None
                shutil.rmtree(run.folder, ignore_errors=True)  # made above, for this draft
                line, status = _failed(exc, "draft of the schema")
                field = "label" if label and label in line else "table"
                field = field if status == 200 else "form"
                return _status(page("start.html", "/", errors={field: line}, values=values,
                               workdir=session.workdir), status)  # fmt: skip
            run.label = label
            run.schema = result.schema.to_dict()
            run.draft_lines = said + list(result.warnings)
            run.dropped = dict(result.dropped)
            run.drafted_bounds = {c["name"]: (c.get("lower"), c.get("upper"))
                                  for c in run.schema["columns"]}  # fmt: skip
            for text in said:
                run.say(text)
            run.record("draft", step.line())
        return RedirectResponse("/schema", status_code=303)

    # ------------------------------------------------------------------ 2. the schema
    @app.get("/schema", response_class=HTMLResponse)
    def schema_page() -> Any:
        run = need_run()
        return _schema_page(run, {})

    def _schema_page(
        run: Run, errors: dict[str, str], saved: str | None = None, form: Any = None
    ) -> Any:
        assert run.schema is not None
        check = None
        if "schema" in run.commands and run.schema_path.exists():
            check = _steps.schema_check_step(run.schema_path)
        data_step, data_check, data_error = _data_check(run)
        label = run.schema.get("label")
        return page(
            "schema.html", "/schema", rows=column_rows(run.schema, run.public, form,
            drafted=run.drafted_bounds), errors=errors,
            schema=run.schema, label=label, label_public=bool(label and label["name"] in
            run.public), saved=saved, check=check, check_lines=check.run() if check else [],
            draft_line=run.commands.get("draft"), unit=unit_fields(run.schema, form),
            unit_columns=_unit_columns(run), data_step=data_step, data_check=data_check,
            data_error=data_error, dropped=list(run.dropped.items()),
            per_person=[c["name"] for c in run.schema["columns"] if c.get("per_person")],
        )  # fmt: skip

    @app.post("/schema")
    def save_schema(data: PostedForm) -> Any:
        from ppdp.data.schema import Schema

        run = need_run()
        assert run.schema is not None
        proposed, public = schema_from_form(run.schema, data)
        names = [c["name"] for c in proposed["columns"]]
        try:
            schema = Schema.from_dict(proposed)
        except Exception as exc:  # every failure is a page (_failed)
            line, status = _failed(exc, "check of the schema")
            unit = line.startswith("privacy_unit") or _is_unit_column(line, proposed)
            where = "unit" if unit else error_column(line, names) or "form"
            run.public = public
            where = where if status == 200 else "form"
            return _status(_schema_page(run, {where: line}, form=data), status)
        with session.lock:
            run.schema, run.public = schema.to_dict(), public
            schema.to_file(run.schema_path)
            run.record("schema", _steps.schema_check_step(run.schema_path).line())
        if data.get("next") == "1" and not schema.draft:
            return RedirectResponse("/release", status_code=303)
        saved = "saved to schema.json" + (
            "" if not schema.draft else " (still a draft: confirm every column's bounds first)"
        )
        return _schema_page(run, {}, saved=saved)

    # ------------------------------------------------------------------ 3. what to release
    def _release_page(run: Run, errors: dict[str, str]) -> Any:
        assert run.schema is not None
        values = {**_release_defaults(run, session), **run.release}
        ledger = Path(values["ledger"]) if values.get("ledger") else None
        needs_init, init = ledger is not None and not ledger.exists(), None
        if needs_init:  # a total that is not a number is said next to its field instead
            with contextlib.suppress(ValueError):
                init = _init_step(values, ledger)  # type: ignore[arg-type]
        return page(
            "release.html", "/release", values=values, errors=errors, init=init,
            needs_init=needs_init,
            ledger_exists=bool(ledger and ledger.exists()), schema=run.schema,
            columns=[c["name"] for c in run.schema["columns"]], draft=bool(run.schema.get(
            "draft")), plan_step=_plan_step(run, values, dry_run=True, session=session)[0],
        )  # fmt: skip

    @app.get("/release", response_class=HTMLResponse)
    def release_page() -> Any:
        return _release_page(need_run(), {})

    @app.post("/ledger/init")
    def init_ledger(data: PostedForm) -> Any:
        run = need_run()
        run.release.update({k: str(v) for k, v in data.items() if isinstance(v, str)})
        values = {**_release_defaults(run, session), **run.release}
        try:
            ledger = _ledger_path(values["ledger"])
            step = _init_step(values, ledger)
        except ValueError as exc:
            return _release_page(run, {_init_field(str(exc)): str(exc)})
        with session.lock:
            try:
                step.run()
            except Exception as exc:  # every failure is a page (_failed)
                line, status = _failed(exc, "creation of the ledger")
                field = _init_field(line) if status == 200 else "form"
                return _status(_release_page(run, {field: line}), status)
            session.ledger = ledger
            # the script creates the ledger only where there is none (a budget is never reset)
            run.record("ledger", f"test -e {shlex.quote(str(ledger))} || {step.line()}")
        return RedirectResponse("/release", status_code=303)

    @app.post("/plan")
    def plan(data: PostedForm) -> Any:
        run = need_run()
        run.release.update({k: str(v) for k, v in data.items() if isinstance(v, str)})
        values = {**_release_defaults(run, session), **run.release}
        try:
            step, error = _plan_step(run, values, dry_run=True, session=session)
            if error:
                raise ParameterError(error)
            assert step is not None
            result = _quietly(step.run, run.say)
        except Exception as exc:  # every failure is a page (_failed)
            line, status = _failed(exc, "dry run")
            field = _release_field(line, exc) if status == 200 else "form"
            return _status(_release_page(run, {field: line}), status)
        session.ledger = Path(values["ledger"]).resolve()
        run.plan = {
            "nonce": secrets.token_urlsafe(16), "values": values, "line": step.line(),
            "lines": _dry_run_lines(values["kind"], result), "words": _plain_words(values,
            result), "release_line": _plan_step(run, values, dry_run=False,
            session=session)[0].line(),  # type: ignore[union-attr]
        }  # fmt: skip
        run.record("dry-run", step.line())
        return RedirectResponse("/budget", status_code=303)

    # ------------------------------------------------------------------ 4. the budget
    @app.get("/budget", response_class=HTMLResponse)
    def budget_page() -> Any:
        run = need_run()
        if run.plan is None:
            return RedirectResponse("/release", status_code=303)
        return page("budget.html", "/budget", plan=run.plan, errors={})

    @app.post("/publish")
    def publish(data: PostedForm) -> Any:
        run = need_run()
        with session.lock:
            if run.plan is None or data.get("nonce") != run.plan["nonce"]:
                return page("budget.html", "/budget", plan=run.plan, errors={
                    "form": "this release was already submitted, or its plan changed: "
                    "review the plan again"})  # fmt: skip
            values = run.plan["values"]
            run.plan["nonce"] = None  # one release per plan: a double submit is refused
            step, _ = _plan_step(run, values, dry_run=False, session=session)
            assert step is not None
            logged = len(run.log)
            try:
                result = _quietly(step.run, run.say)
            except Exception as exc:  # every failure is a page (_failed)
                line, status = _failed(exc, "release", _NOT_RELEASED)
                run.plan = None
                field = _release_field(line, exc) if status == 200 else "form"
                return _status(_release_page(run, {field: line}), status)
            run.record("release", step.line())
            run.result = _release_summary(values["kind"], result, run)
            run.result["line"] = step.line()
            run.result["warnings"] = [w for w in run.log[logged:] if w.startswith("warning:")]
            run.result["lost_pair"] = any("--keep" in w for w in run.result["warnings"])
            run.result["note"] = _write_note(run)
            run.outputs.append({"name": run.result["name"], "kind": values["kind"],
                                "note": (run.result["note"] or {}).get("name"),
                                "report": None, "entries": run.result["entries"]})  # fmt: skip
            run.report = None
            run.record("history", _steps.budget_show_step(Path(values["ledger"])).line())
        return RedirectResponse("/report", status_code=303)

    # ------------------------------------------------------------------ 5. the report
    @app.get("/report", response_class=HTMLResponse)
    def report_page() -> Any:
        run = need_run()
        if run.result is None:
            return RedirectResponse("/release", status_code=303)
        return page("report.html", "/report", result=run.result, report=run.report, errors={},
                    step=_report_step(run, run.result.get("target")))  # fmt: skip

    @app.post("/report")
    def make_report(data: PostedForm) -> Any:
        run = need_run()
        if run.result is None or run.result["kind"] not in REPORTED:
            return RedirectResponse("/report", status_code=303)
        target = str(data.get("target", "")).strip() or None
        run.result["target"] = target
        step = _report_step(run, target)
        try:
            with session.lock:
                done = _quietly(step.run, run.say)
        except Exception as exc:  # every failure is a page (_failed)
            line, status = _failed(exc, "report")
            # next to the column to predict (a synthetic table's), else to the button
            where = "target" if run.result["kind"] == "synth" else "report"
            return _status(page("report.html", "/report", result=run.result, report=None,
                           errors={where if status == 200 else "form": line}, step=step),
                           status)  # fmt: skip
        run.record("report", step.line())
        name = Path(done.paths[0]).name
        run.report = {"headline": done.report.headline(), "details": done.report.details(),
                      "note": done.note, "name": name,
                      "lost": _lost_pairs(done.report)}  # fmt: skip
        if run.report["lost"] and not str(run.release.get("keep", "")).strip():
            run.release["keep"] = ", ".join(run.report["lost"])  # the next release's form
        run.outputs[-1]["report"] = name
        return RedirectResponse("/report", status_code=303)

    @app.get("/files/{name}")
    def served(name: str) -> Any:
        run = need_run()
        page_of_its_own = name in run.pages()  # shown in a sandboxed frame
        kind = _PAGE if page_of_its_own else _SERVED.get(name)
        path = run.folder / name
        if kind is None or not path.is_file():
            raise HTTPException(404, "no such file in this run")
        response = Response(path.read_bytes(), media_type=kind)
        if page_of_its_own:
            response.headers["Content-Security-Policy"] = REPORT_CSP
            response.headers["X-Frame-Options"] = "SAMEORIGIN"
        return response

    # ------------------------------------------------------------------ 6. the ledger
    @app.get("/ledger", response_class=HTMLResponse)
    def ledger_page() -> Any:
        ledger = session.ledger
        step = _steps.budget_show_step(ledger) if ledger is not None else None
        shown, error = None, None
        if step is not None:
            try:
                shown = step.run()
            except Exception as exc:  # every failure is a page (_failed)
                error = _failed(exc, "ledger's history")[0]
        words = {} if shown is None else {
            "left_words": budget_words(shown["remaining"], shown["total"]),
            "total_words": budget_words(shown["total"])}  # fmt: skip
        return page("ledger.html", "/ledger", step=step, shown=shown, error=error, kinds=_KINDS,
                    reported=REPORTED, rows=_history_rows(shown, session.run), **words)  # fmt: skip

    @app.get("/static/{name}")
    def static(name: str) -> Any:
        kinds = {"ui.css": "text/css", "ui.js": "text/javascript"}
        if name not in kinds:
            raise HTTPException(404)
        return Response((_HERE / "static" / name).read_bytes(), media_type=kinds[name])

    return app


class _Redirect(Exception):  # noqa: N818 - control flow, not an error
    def __init__(self, to: str) -> None:
        self.to = to


def _multi(request: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for k, v in request.query_params.multi_items():
        out.setdefault(k, []).append(v)
    return out


def _origin(request: Any) -> str:
    return f"{request.url.scheme}://{request.headers.get('host')}"


def _refuse(line: str) -> Any:
    response = PlainTextResponse(f"ppdp ui: {line}\n", status_code=403)
    for name, value in COMMON_HEADERS.items():
        response.headers[name] = value
    return response


def _list(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


#: The kinds of release whose quality report the report screen makes (``ppdp report``):
#: a synthetic table (its columns, pairs and a classifier) and group statistics (each
#: group's statistics against the true ones, :func:`ppdp.evaluate.group_report`).
REPORTED = ("synth", "groupby")

#: What each kind of release is, in words.
_KINDS = {"synth": "synthetic table", "groupby": "group statistics", "model": "model"}


def _done(run: Run | None) -> set[str]:
    """The screens whose step is done (the navigation marks them)."""
    if run is None:
        return set()
    done = {"/"}
    if "schema" in run.commands:
        done.add("/schema")
    if run.plan is not None or run.result is not None:
        done |= {"/release", "/budget"}
    if run.result is not None:
        done.add("/report")
    return done


#: The ledger form's fields; the library's "epsilon" and "delta" are its totals.
_INIT_FIELDS = ("ledger", "dataset_id", "total_epsilon", "total_delta", "relation", "epsilon",
                "delta")  # fmt: skip


#: The release form's fields that show an error next to them (others go above the form).
_RELEASE_FIELDS = ("ledger", "epsilon", "delta", "keep", "by", "means", "keys", "regularization",
                   "seed", "kind", "max_groups", "max_rows_per_group")  # fmt: skip


def _release_field(message: str, exc: BaseException) -> str:
    """The release form's field of a library message: the kind of release for a privacy
    unit that the release refuses (it protects single rows only)."""
    field = _field_of(message, _RELEASE_FIELDS, exc)
    return "kind" if field == "form" and "privacy_unit" in message else field


def _data_check(run: Run) -> tuple[_steps.Step | None, Any, str | None]:
    """``ppdp schema check --data`` of the schema on screen (saved, else the draft) against
    the custodian's table: its step, its ``TableCheck`` (None when it failed) and the line
    that says why it failed. The schema screen is the custodian's own, on this machine."""
    path = run.schema_path if run.schema_path.exists() else run.draft_path
    if not path.exists():
        return None, None, None
    step = _steps.schema_data_check_step(path, run.data)
    try:
        return step, _quietly(step.run), None
    except Exception as exc:  # every failure is a line (_failed)
        return step, None, _failed(exc, "check of the table against the schema")[0]


def _is_unit_column(message: str, proposed: dict[str, Any]) -> bool:
    """Whether a schema error is about the privacy unit's column (declared as a feature)."""
    unit = proposed.get("privacy_unit")
    return bool(unit) and f"privacy_unit: column ({unit.get('column')!r})" in message


def _unit_columns(run: Run) -> list[str]:
    """The columns a privacy unit may name: the table's header (the custodian's own file;
    only its names are read), less the label; the schema's columns when it cannot be read."""
    import pandas as pd

    assert run.schema is not None
    try:
        if run.data.name.lower().endswith(".parquet"):
            import pyarrow.parquet as pq

            names = list(pq.read_schema(run.data).names)
        else:
            names = [str(c) for c in pd.read_csv(run.data, nrows=0).columns]
    except (OSError, ValueError, ImportError):
        names = [c["name"] for c in run.schema["columns"]]
    unit = (run.schema.get("privacy_unit") or {}).get("column")
    if unit and unit not in names:
        names.insert(0, unit)
    label = (run.schema.get("label") or {}).get("name")
    return [n for n in names if n != label]


def _cap(text: str) -> Any:
    """A contribution cap as ``ppdp publish groupby`` parses it (an integer; None when
    empty); other text is passed on as typed, for the library's rule to refuse in one line."""
    text = text.strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        return text


def _init_field(message: str) -> str:
    field = _field_of(message, _INIT_FIELDS)
    return {"epsilon": "total_epsilon", "delta": "total_delta"}.get(field, field)


def _release_defaults(run: Run, session: Session) -> dict[str, Any]:
    stem = run.data.name.split(".")[0]
    ledger = session.ledger or (session.workdir / f"{stem}.ledger.db")
    return {
        "kind": "synth", "epsilon": "1", "delta": "1e-9", "keep": "", "by": "", "means": "",
        "keys": "declared", "regularization": "", "seed": "",
        "max_groups": "", "max_rows_per_group": "", "ledger": str(ledger),
        "dataset_id": stem,
        "total_epsilon": "3", "total_delta": "1e-6", "relation": "replace-one",
    }  # fmt: skip


def _ledger_path(text: str) -> Path:
    text = text.strip()
    if not text:
        raise ParameterError("ledger: give the path of the dataset's budget ledger")
    return Path(text).expanduser().resolve()


def _float(name: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ParameterError(f"{name} ({text!r}) must be a number") from None


def _init_step(values: dict[str, Any], ledger: Path) -> _steps.Step:
    return _steps.init_ledger_step(
        ledger,
        dataset_id=str(values.get("dataset_id", "")).strip(),
        epsilon=_float("total_epsilon", str(values["total_epsilon"])),
        delta=_float("total_delta", str(values["total_delta"])),
        relation=str(values.get("relation", "replace-one")),
    )


def _plan_step(
    run: Run, values: dict[str, Any], *, dry_run: bool, session: Session
) -> tuple[_steps.Step | None, str | None]:
    """The release's step from the form's values (None and the one line when a value is not
    even a number)."""
    kind = str(values.get("kind", "synth"))
    if kind not in _steps.METHODS:
        return None, f"kind ({kind!r}) must be one of {', '.join(_steps.METHODS)}"
    try:
        epsilon = _float("epsilon", str(values["epsilon"]))
        seed_text = str(values.get("seed", "")).strip()
        try:
            seed = int(seed_text) if seed_text else None
        except ValueError:
            raise ParameterError(f"seed ({seed_text!r}) must be a whole number") from None
        ledger = _ledger_path(str(values["ledger"]))
    except ValueError as exc:
        return None, str(exc)
    options: dict[str, Any] = {}
    if kind in ("synth", "groupby") and ledger.is_file():
        # the release is charged under the ledger's relation, chosen when it was created
        try:
            relation = _ledger_relation(ledger)
        except Exception as exc:  # every failure is a line (_failed)
            return None, _failed(exc, "reading of the ledger")[0]
        options["--relation"] = relation if relation != "replace-one" else None
    if kind == "synth":
        delta = str(values.get("delta", "")).strip()
        options["--delta"] = _float("delta", delta) if delta else None
        options["--keep"] = ",".join(_list(str(values.get("keep", "")))) or None
        output = run.free_output("synthetic.csv")
    elif kind == "groupby":
        options["--by"] = ",".join(_list(str(values.get("by", "")))) or None
        options["--means"] = ",".join(_list(str(values.get("means", "")))) or None
        if values.get("keys") == "private":  # keys read from the data: δ is charged too
            options["--keys"] = "private"
            delta = str(values.get("delta", "")).strip()
            options["--delta"] = _float("delta", delta) if delta else None
        options["--max-groups"] = _cap(str(values.get("max_groups", "")))
        options["--max-rows-per-group"] = _cap(str(values.get("max_rows_per_group", "")))
        output = run.free_output("groups.csv")
    else:
        reg = str(values.get("regularization", "")).strip()
        options["--regularization"] = _float("regularization", reg) if reg else None
        output = run.free_output("model.json")
    step = _steps.release_step(
        kind, run.data, schema=run.schema_path, output=output, epsilon=epsilon, ledger=ledger,
        options=options, seed=seed, dry_run=dry_run, say=run.say,
    )  # fmt: skip
    return step, None


def _ledger_relation(ledger: Path) -> str:
    """The neighbouring relation pinned in a budget ledger (verified first)."""
    from ppdp.accounting import budget_report

    return str(budget_report(ledger).relation.value)


def _quietly(call: Callable[[], Any], say: Callable[[str], None] | None = None) -> Any:
    """Run a step with the warnings it raises said as log lines (the CLI's stderr) rather
    than raised: the test suite, and a server, turn warnings into errors otherwise. The
    library's logged warnings (a decimal comma read as such, ...) go to ``say`` too."""
    handler = _Said(say) if say is not None else None
    logger = logging.getLogger("ppdp")
    if handler is not None:
        logger.addHandler(handler)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return call()
    finally:
        if handler is not None:
            logger.removeHandler(handler)


class _Said(logging.Handler):
    """The library's log lines at warning level and above, to the custodian's log."""

    def __init__(self, say: Callable[[str], None]) -> None:
        super().__init__(logging.WARNING)
        self.say = say

    def emit(self, record: logging.LogRecord) -> None:
        self.say(record.getMessage())


def _dry_run_lines(kind: str, result: Any) -> list[str]:
    """The CLI's ``--dry-run`` summary without its clipping table (read from the data; the
    report screen, for the custodian, has it)."""
    from ppdp.accounting.plan import dry_run_lines

    if kind == "model":
        charges, schema = [result.plan], result.schema
        state = result.ledger_state
    else:
        charges, schema, state = result.charges, result.publisher.schema, result.ledger
    lines = dry_run_lines(what=_what(kind), charges=charges, schema=schema,
                          report=result.report, per_value=False, after=result.after,
                          remaining=None if state is None else state.remaining,
                          plain=True)  # fmt: skip
    cut = next((i for i, s in enumerate(lines) if s.startswith("values clipped")), len(lines))
    lines = lines[:cut]
    relation = getattr(getattr(result, "publisher", None), "relation", "replace-one")
    if Neighbouring.parse(relation) is Neighbouring.ADD_REMOVE:
        # n is private under add/remove: the screens show no private value
        lines[0] = re.sub(r" on [\d,]+ rows:", " (n private under add/remove):", lines[0])
    return lines


def _what(kind: str) -> str:
    command, method = _steps.METHODS[kind]
    return f"{command} {method}"


def _plain_words(values: dict[str, Any], result: Any) -> list[str]:
    """The budget in plain words, from public quantities only (ε, δ, what the ledger has)."""
    state = result.ledger_state if values["kind"] == "model" else result.ledger
    after = result.after
    cost = result.plan.budget if values["kind"] == "model" else result.cost
    what = {"synth": "a synthetic table with the declared columns",
            "groupby": "noisy counts (and means) for every declared group",
            "model": "a private logistic-regression model"}[values["kind"]]  # fmt: skip
    if values["kind"] == "groupby":
        by, means = _list(str(values.get("by", ""))), _list(str(values.get("means", "")))
        counts = "noisy row counts" + (f" and means of {', '.join(means)}" if means else "")
        groups = f" of {', '.join(by)}" if by else " (one group: the whole table)"
        what = f"{counts} for every combination of the declared categories{groups}"
        if values.get("keys") == "private":
            what = f"{counts} for the groups{groups} whose noisy count passes a threshold"
    words = [f"You are about to release {what}."]
    words.append(
        f"It spends {budget_words(cost)} from the dataset's budget. A smaller ε means more "
        "privacy and more noise; δ is the small chance that the ε guarantee does not hold."
    )
    if state is not None:
        left = state.remaining
        words.append(f"The ledger has {budget_words(left, getattr(state, 'total', None))} left.")
        words.append(
            "After this release it would not fit: the release would be refused."
            if after is None
            else f"After this release it will have {budget_words(after, left)} left."
        )
    if values["kind"] == "groupby":
        words += _mean_words(result.charges)
    if values.get("seed"):
        words.append(
            "A seed is set: the noise is reproducible, which is for experiments only, never "
            "for a real release (the ledger records it)."
        )
    return words


def _mean_words(charges: Any) -> list[str]:
    """Each group mean's expected error by group size, in words (the dry run's figures,
    :func:`ppdp.accounting.plan.group_mean_errors`: public quantities only)."""
    from ppdp.accounting.plan import group_mean_errors

    words = []
    for column, errors in group_mean_errors(charges).items():
        (n, low, high), *more = errors
        tail = "".join(f"; of {m:,} rows, ±{lo:.2g} to ±{hi:.2g}" for m, lo, hi in more)
        words.append(
            f"The mean of {column} in a group of {n:,} rows will be off by about ±{low:.2g} to "
            f"±{high:.2g}{tail} (one standard deviation; the less, the nearer the true mean is "
            "to the middle of the declared bounds). A group's size is private: read these at "
            "the sizes you expect."
        )
    return words


def _history_rows(shown: dict[str, Any] | None, run: Run | None) -> list[dict[str, Any]]:
    """The ledger's history rows (:func:`ppdp.accounting.files.release_history`) as the
    ledger screen shows them: ε, δ and what was left in the budget screen's words, and the
    release's file where this run made it."""
    if shown is None:
        return []
    files = {i: o["name"] for o in (run.outputs if run else []) for i in o.get("entries", ())}
    out = []
    for row in shown["rows"]:
        entries = row.entries
        where = f"entry {entries[0]}" if len(entries) == 1 else (
            f"entries {entries[0]}–{entries[-1]}")  # fmt: skip
        out.append({
            "file": next((files[i] for i in entries if i in files), None), "entries": where,
            "method": row.method, "epsilon": plain_number(row.spent.epsilon),
            "delta": plain_number(row.spent.delta), "unit": f"{row.relation}, {row.unit}",
            "time": row.time[:19].replace("T", " ") + " UTC", "seeded": row.seeded,
            "left": budget_words(row.left, shown["total"]), "facts": row.facts,
        })  # fmt: skip
    return out


def _release_summary(kind: str, result: Any, run: Run) -> dict[str, Any]:
    """What the release screen shows: the guarantee, the ledger entries and, for group
    statistics (a release, public), the table itself."""
    from ppdp.accounting.receipt import guarantee_lines

    if kind == "model":
        guarantee, path, indices = result.guarantee, result.path, result.ledger_indices
        rows = None
    else:
        guarantee, path = result.release.guarantee, result.path
        indices = result.release.ledger_indices
        rows = result.rows_written
    out: dict[str, Any] = {
        "kind": kind, "path": str(path), "name": Path(path).name, "rows": rows,
        "guarantee": guarantee_lines(guarantee, verbose=True, full_in=None),
        "entries": list(indices), "target": run.label,
    }  # fmt: skip
    if kind == "groupby":
        table = result.table
        rows = table.head(200).astype(str).values.tolist()
        out["table"] = {"columns": [str(c) for c in table.columns], "rows": rows, "n": len(table)}
        # what each released column is, in the guarantee's own words (public)
        notes = (getattr(guarantee, "details", None) or {}).get("columns") or {}
        out["table"]["notes"] = [(str(k), str(v)) for k, v in notes.items()]
    return out


def report_path(release: Path) -> Path:
    """The quality report of ``release``, beside it: each release of a run has its own
    (``synthetic.csv.report.html``, ``synthetic-2.csv.report.html``), as its note."""
    return release.with_name(release.name + ".report.html")


def _lost_pairs(report: Any) -> list[str]:
    """The strong pairs of columns a synthetic table's report finds lost, as the release
    form's “Pairs to keep together” takes them (``a:b``; at most three)."""
    strong = (getattr(report, "pairs", None) or {}).get("strong") or []
    return [":".join(map(str, d["columns"])) for d in strong if d.get("lost")][:3]


def _write_note(run: Run) -> dict[str, Any] | None:
    """Write the public release note beside a released table (``ppdp note``): its file's
    name and command line, or the one line that refused it (the release itself stands).
    A model's file holds its own guarantee: it has no note."""
    assert run.result is not None
    if run.result["kind"] == "model":
        return None
    release = Path(run.result["path"])
    step = _steps.note_step(release, output=release.with_name(release.name + ".note.html"),
                            schema=run.schema_path)  # fmt: skip
    try:
        path = _quietly(step.run)
    except Exception as exc:  # the release stands; its note says why not
        return {"name": None, "line": step.line(), "error": _failed(exc, "release note")[0]}
    run.record("note", step.line())
    return {"name": Path(path).name, "line": step.line(), "error": None}


def _report_step(run: Run, target: str | None) -> _steps.Step | None:
    """``ppdp report`` of the run's latest release (a synthetic table or group statistics;
    a model has none here), written beside it (:func:`report_path`)."""
    if run.result is None or run.result["kind"] not in REPORTED:
        return None
    if run.result["kind"] != "synth":  # a group-by's report has no column to predict
        target = None
    return _steps.report_step(
        Path(run.result["path"]), original=run.data, schema=run.schema_path,
        output=report_path(Path(run.result["path"])), target=target,
    )  # fmt: skip


def schema_json(schema: dict[str, Any]) -> str:  # pragma: no cover - a template helper
    return json.dumps(schema, indent=2, ensure_ascii=False)
