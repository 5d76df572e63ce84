"""Fixtures of the ``ppdp ui`` tests: a small table drafted by the app, and a client of the
app holding its token (or not)."""

from __future__ import annotations

import re
import warnings

import pytest

pytest.importorskip("fastapi", reason="ppdp ui needs the server extra")
pytest.importorskip("jinja2", reason="ppdp ui needs the server extra")

with warnings.catch_warnings():  # this starlette asks for httpx2; httpx still works
    warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
    from fastapi.testclient import TestClient

from ppdp.datasets import load_adult
from ppdp.ui import Secrets, create_app

#: The columns of Adult the tests keep (a small, fast table with numbers, codes and a label).
COLUMNS = ["age", "workclass", "education-num", "sex", "hours-per-week", "income"]
BASE = "http://127.0.0.1"


@pytest.fixture(autouse=True)
def _anchors(tmp_path, monkeypatch):
    """Ledger anchors in a temporary folder, never the user's."""
    monkeypatch.setenv("PPDP_ANCHOR_DIR", str(tmp_path / "anchors"))


@pytest.fixture
def table(tmp_path):
    """1,500 rows of Adult (6 columns) as a CSV file."""
    df, _ = load_adult()
    path = tmp_path / "adult.csv"
    df[COLUMNS].head(1500).to_csv(path, index=False)
    return path


@pytest.fixture
def secrets_():
    return Secrets()


@pytest.fixture
def app(tmp_path, secrets_):
    return create_app(workdir=tmp_path / "runs", secrets_=secrets_, port=8123)


@pytest.fixture
def anonymous(app):
    """A client without the token."""
    return TestClient(app, base_url=BASE, follow_redirects=False)


@pytest.fixture
def client(app, secrets_):
    """A client that opened the link with the token (so holds its cookie)."""
    c = TestClient(app, base_url=BASE)
    response = c.get(f"/?token={secrets_.token}")
    assert response.status_code == 200
    return c


def csrf(page: str) -> str:
    """The CSRF token of a page's form."""
    return re.search(r'name="csrf" value="([^"]+)"', page).group(1)


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
