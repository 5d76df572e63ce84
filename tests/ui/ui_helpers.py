"""Helpers of the ``ppdp ui`` tests (imported by them; the fixtures are in conftest.py)."""

from __future__ import annotations

import html
import re
import warnings

with warnings.catch_warnings():  # this starlette asks for httpx2; httpx still works
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from fastapi.testclient import TestClient

__all__ = ["BASE", "TestClient", "confirm_all", "csrf", "errors"]

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
    fields = dict(re.findall(r'name="(c\d+-[a-z]+)" value="([^"]*)"', page))
    fields.update({name: "on" for name in re.findall(r'name="(c\d+-public)"', page)})
    for name, kind in re.findall(r'name="(c\d+-type)".*?<option selected>(\w+)', page, re.S):
        fields[name] = kind
    for name in re.findall(r'name="(c\d+-integer)" checked', page):
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
