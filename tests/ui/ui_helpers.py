"""Helpers of the ``ppdp ui`` tests (imported by them; the fixtures are in conftest.py)."""

from __future__ import annotations

import html
import re
import warnings

with warnings.catch_warnings():  # this starlette asks for httpx2; httpx still works
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from fastapi.testclient import TestClient

__all__ = ["BASE", "TestClient", "confirm_all", "csrf", "errors", "plan", "publish", "ready"]

BASE = "http://127.0.0.1"


def csrf(page: str) -> str:
    """The CSRF token of a page's form."""
    return re.search(r'name="csrf" value="([^"]+)"', page).group(1)


def errors(page: str) -> dict[str, str]:
    """The one-line errors of a page, by the id of the element they describe."""
    found = re.findall(r'class="error" id="([\w-]+)-error" role="alert">([^<]*)<', page)
    return {name: html.unescape(text) for name, text in found}


def confirm_all(client, **changes):
    """Post the schema form with every column (and the label) confirmed public."""
    page = client.get("/schema").text
    found = re.findall(r'name="(c\d+-[a-z]+)" value="([^"]*)"', page)
    fields = {name: html.unescape(value) for name, value in found}  # as a browser posts it
    fields.update({name: "on" for name in re.findall(r'name="(c\d+-public)"', page)})
    for name, kind in re.findall(r'name="(c\d+-type)".*?<option selected>(\w+)', page, re.S):
        fields[name] = kind
    for name in re.findall(r'name="(c\d+-(?:integer|open))" checked', page):
        fields[name] = "on"
    fields.update({"label-classes": "<=50K, >50K", "label-public": "on", "next": "1"})
    fields.update(changes)
    return client.post("/schema", data={"csrf": csrf(page), **fields})


#: Chromium's flags in the tests: headless, and no network of its own (updates, sync).
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip


class Served:
    """``ppdp ui --no-browser --port 0`` in a child process: its link, stopped on exit."""

    def __init__(self, workdir, cwd) -> None:
        import os
        import subprocess
        import sys

        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        command = [sys.executable, "-m", "ppdp", "ui", "--no-browser", "--workdir", str(workdir)]
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env, cwd=cwd)  # fmt: skip
        line = self.proc.stdout.readline()
        match = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=[\w-]+", line)
        if match is None:
            self.stop()
            raise RuntimeError(f"ppdp ui did not print its link: {line!r}")
        self.url, self.base = match.group(0), match.group(1)

    def stop(self) -> str:
        """Stop the server; its stderr."""
        self.proc.terminate()
        _, err = self.proc.communicate(timeout=20)
        return err

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def plan(client, ledger, **values):
    """Post the release form (a synthetic table at ε = 1 by default): the dry run."""
    page = client.get("/release").text
    data = {"csrf": csrf(page), "ledger": str(ledger), "kind": "synth", "epsilon": "1",
            "delta": "1e-9", **values}  # fmt: skip
    return client.post("/plan", data=data)


def publish(client):
    """Press “Release” on the budget screen."""
    page = client.get("/budget").text
    nonce = re.search(r'name="nonce" value="([^"]*)"', page).group(1)
    return client.post("/publish", data={"csrf": csrf(page), "nonce": nonce})


def ready(client, table, ledger):
    """Adult drafted (label income), every column confirmed, and ``ledger`` created (ε 3)."""
    page = client.get("/").text
    client.post("/draft", data={"csrf": csrf(page), "table": str(table), "label": "income"})
    assert confirm_all(client).url.path == "/release"
    page = client.get("/release").text
    client.post("/ledger/init", data={
        "csrf": csrf(page), "ledger": str(ledger), "dataset_id": "adult", "total_epsilon": "3",
        "total_delta": "1e-6", "relation": "replace-one"})  # fmt: skip
    return ledger
