"""Fixtures of the ``ppdp ui`` tests: a small table, and a client of the app holding its
token (or not). Helpers: ui_helpers.py."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="ppdp ui needs the server extra")
pytest.importorskip("jinja2", reason="ppdp ui needs the server extra")

from ui_helpers import BASE, TestClient

from ppdp.datasets import load_adult
from ppdp.ui import Secrets, create_app


@pytest.fixture(autouse=True)
def _anchors(tmp_path, monkeypatch):
    """Ledger anchors in a temporary folder, never the user's."""
    monkeypatch.setenv("PPDP_ANCHOR_DIR", str(tmp_path / "anchors"))


@pytest.fixture
def table(tmp_path):
    """1,500 rows of Adult (10 features and the label) as a CSV file.

    (Fewer columns make a domain small enough for the synthesizer's ``pairs`` model, which
    takes minutes on 6 of Adult's columns; the ``tree`` model chosen here takes a second.)"""
    df, _ = load_adult()
    path = tmp_path / "adult.csv"
    df.head(1500).to_csv(path, index=False)
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
