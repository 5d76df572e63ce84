"""``ppdp ui``: a local web app from a table on this machine to a released, reported and
ledgered release, for custodians who do not use a shell.

The app is server-rendered HTML (FastAPI, Jinja2; a little vanilla JavaScript for search and
bulk edit) served on a loopback address, behind a one-time token (:mod:`._security`). Each
screen runs the same library function as the ``ppdp`` command it shows (:mod:`._steps`),
and writes the schema, the command lines and the outputs to a run folder. Guide:
``docs/ui.md``.

Examples
--------
>>> from ppdp.ui import create_app
>>> app = create_app(workdir="runs")  # doctest: +SKIP
"""

from __future__ import annotations

from ppdp.ui._app import create_app
from ppdp.ui._security import Secrets, is_loopback
from ppdp.ui._serve import bind, serve

__all__ = ["Secrets", "bind", "create_app", "is_loopback", "serve"]
