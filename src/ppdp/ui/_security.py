"""What keeps the UI to the custodian who started it.

* **A one-time token.** ``ppdp ui`` prints (and opens) ``http://127.0.0.1:PORT/?token=T``;
  that request sets ``T`` in a cookie (HttpOnly, SameSite=Strict) and redirects to the same
  page without it, so the token leaves the address bar and the history. Every other request
  without the cookie is refused with 403.
* **The Host header** must name the address the server was started on (a web page
  elsewhere cannot reach the server through a DNS name it points at 127.0.0.1).
* **CSRF.** Every form carries a second secret; a POST without it, or with an ``Origin``
  that is not the server's own, is refused with 403 before its body is used.
* **Headers.** No caching, no framing, no referrer to other sites, and a content security
  policy that allows the app's own files only (no inline script, no network beyond it).
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode

__all__ = ["Secrets", "is_loopback", "parse_form"]

#: The app's own pages: its files only, forms posted to itself, never framed elsewhere.
PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "frame-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
#: A report written by ``ppdp report`` (inline styles and SVG, no script), shown in a frame.
REPORT_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'self'; sandbox"
)
COMMON_HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "same-origin",  # "no-referrer" makes a form's Origin "null"
    "X-Content-Type-Options": "nosniff",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
#: The most bytes a form may have (a schema form of a few thousand columns fits).
MAX_FORM_BYTES = 8 * 1024 * 1024


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is a loopback address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Secrets:
    """The session's token (in the URL, then a cookie) and its CSRF token (in every form)."""

    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    def cookie_name(self, port: int | None) -> str:
        """One cookie per port: two ``ppdp ui`` on one machine keep their own."""
        return f"ppdp_ui_{port or 0}"

    def token_ok(self, value: str | None) -> bool:
        return value is not None and hmac.compare_digest(value.encode(), self.token.encode())

    def csrf_ok(self, value: str | None) -> bool:
        return value is not None and hmac.compare_digest(value.encode(), self.csrf.encode())


def parse_form(body: bytes) -> dict[str, Any]:
    """An ``application/x-www-form-urlencoded`` body: one value per name, or the list of
    them for a name given several times."""
    pairs = parse_qs(body.decode("utf-8", errors="replace"), keep_blank_values=True)
    return {k: v[0] if len(v) == 1 else v for k, v in pairs.items()}


def without_token(path: str, query: dict[str, list[str]]) -> str:
    """``path`` with the query minus ``token`` (where the token request redirects)."""
    rest = {k: v for k, v in query.items() if k != "token"}
    path = "/" + path.lstrip("/\\")  # never '//host': a redirect stays on this server
    return path + ("?" + urlencode(rest, doseq=True) if rest else "")
