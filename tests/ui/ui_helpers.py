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
