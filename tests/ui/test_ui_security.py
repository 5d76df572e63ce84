"""``ppdp ui`` keeps to whoever holds its link: the token, the Host check, CSRF, headers,
loopback binding and ``--no-browser``."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time

import httpx
import pytest
from ui_helpers import BASE, csrf

from ppdp.exceptions import ParameterError
from ppdp.ui import bind, serve

PAGES = ("/", "/schema", "/release", "/budget", "/report", "/ledger",
         "/files/synthetic.csv.report.html", "/static/ui.css", "/static/ui.js")  # fmt: skip


def _post_routes(app):
    return sorted(r.path for r in app.routes if "POST" in getattr(r, "methods", ()))


@pytest.mark.parametrize("path", PAGES)
def test_every_page_refuses_a_request_without_the_token(anonymous, path):
    response = anonymous.get(path)
    assert response.status_code == 403
    assert "token" in response.text


def test_a_wrong_token_is_refused_and_sets_nothing(anonymous, secrets_):
    response = anonymous.get("/?token=" + secrets_.token[:-1] + "x")
    assert response.status_code == 403
    assert not response.cookies


def test_the_token_sets_a_strict_httponly_cookie_and_leaves_the_address(anonymous, secrets_):
    response = anonymous.get(f"/schema?token={secrets_.token}&x=1")
    assert response.status_code == 303
    assert response.headers["location"] == "/schema?x=1"  # the token leaves the URL
    cookie = response.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    assert secrets_.token.lower() in cookie
    assert anonymous.get("/").status_code == 200  # the cookie now opens every page


def test_the_token_redirect_stays_on_the_server():
    from ppdp.ui._security import without_token

    query = {"token": ["t"], "a": ["1"]}
    assert without_token("//evil.example/x", query) == "/evil.example/x?a=1"
    assert without_token("/\\evil.example", {}) == "/evil.example"
    assert without_token("/schema", {"token": ["t"]}) == "/schema"


def test_another_host_name_is_refused_even_with_the_cookie(client):
    # a page elsewhere reaching the server through a DNS name pointing at 127.0.0.1
    response = client.get("/", headers={"host": "evil.example:8123"})
    assert response.status_code == 403
    assert client.get("/", headers={"host": "localhost:8123"}).status_code == 200


def test_every_post_route_refuses_a_form_without_its_csrf_token(app, client, tmp_path):
    routes = _post_routes(app)
    assert routes == ["/draft", "/ledger/init", "/plan", "/publish", "/report", "/schema"]
    for path in routes:
        for token in (None, "wrong"):
            data = {"table": str(tmp_path / "t.csv")} | ({"csrf": token} if token else {})
            response = client.post(path, data=data, follow_redirects=False)
            assert response.status_code == 403, path
            assert "CSRF" in response.text
    assert not (tmp_path / "runs").exists()  # nothing was made


def test_a_form_posted_from_another_origin_is_refused(client, table):
    token = csrf(client.get("/").text)
    response = client.post("/draft", data={"csrf": token, "table": str(table)},
                           headers={"origin": "http://evil.example"})  # fmt: skip
    assert response.status_code == 403
    ok = client.post("/draft", data={"csrf": token, "table": str(table)},
                     headers={"origin": BASE})  # fmt: skip
    assert ok.status_code == 200 and "Review the schema" in ok.text


def test_pages_forbid_caching_framing_and_foreign_resources(client):
    response = client.get("/")
    headers = response.headers
    assert headers["cache-control"] == "no-store"
    assert headers["x-frame-options"] == "DENY"
    assert headers["referrer-policy"] == "same-origin"
    csp = headers["content-security-policy"]
    assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
    # no CDN, no inline script: every resource of the page is the app's own
    assert not re.search(r'(src|href)="(https?:)?//', response.text)
    assert "<script>" not in response.text


def test_a_non_loopback_host_is_refused_without_allow_remote(tmp_path):
    with pytest.raises(ParameterError, match=r"--host \('0.0.0.0'\) is not a loopback"):
        serve(workdir=tmp_path, host="0.0.0.0", open_browser=False)


def test_bind_takes_a_free_port_and_refuses_one_in_use():
    sock = bind("127.0.0.1", 0)
    try:
        host, port = sock.getsockname()
        assert host == "127.0.0.1" and port > 0
        with pytest.raises(ParameterError, match=rf"--port \({port}\) cannot be used"):
            bind("127.0.0.1", port)
    finally:
        sock.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("no_browser", [True, False])
def test_ppdp_ui_no_browser_prints_the_link_and_opens_nothing(tmp_path, no_browser):
    """``--no-browser`` opens nothing; without it the link goes to $BROWSER (the control)."""
    marker = tmp_path / "opened"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho "$1" > {marker}\n')
    browser.chmod(0o755)
    port = _free_port()
    env = {**os.environ, "BROWSER": str(browser), "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, "-m", "ppdp", "ui", "--port", str(port), "--workdir", "runs"]
    command += ["--no-browser"] if no_browser else []
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                          env=env, cwd=tmp_path) as proc:  # fmt: skip
        try:
            line = proc.stdout.readline()
            match = re.search(r"http://127\.0\.0\.1:(\d+)/\?token=([\w-]+)", line)
            assert match, line
            assert int(match.group(1)) == port
            url = match.group(0)
            for _ in range(100):  # the socket listens before the line is printed; uvicorn starts
                try:
                    with httpx.Client() as http:
                        if http.get(url.split("?")[0]).status_code == 403:
                            break
                except httpx.TransportError:
                    time.sleep(0.05)
            with httpx.Client(follow_redirects=True) as http:
                assert http.get(url.split("?")[0]).status_code == 403
                page = http.get(url)
                assert page.status_code == 200 and "Choose the table" in page.text
            if no_browser:
                assert not marker.exists()  # no browser was opened
            else:
                assert marker.read_text().strip() == url
        finally:
            proc.terminate()
            proc.wait(timeout=10)
