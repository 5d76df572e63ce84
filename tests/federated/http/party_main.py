"""Run one party in a subprocess for the tests, optionally crashing on a message kind.

``python party_main.py CONFIG [--toy] [--crash-on KIND] [--crash-after-send KIND]``

``--crash-on KIND``: SIGKILL this process when its role is handed a message of that kind
(before handling it). ``--crash-after-send KIND``: SIGKILL it right after its role
produced a message of that kind (so the message is never delivered). A SIGKILL is a
crash: nothing is flushed, no goodbye is sent.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from ppdp.federated.http import load_config, run_party


def _crashing(role, crash_on, crash_after_send):  # type: ignore[no-untyped-def]
    handle = role.handle

    def wrapped(message):  # type: ignore[no-untyped-def]
        if crash_on and message.kind == crash_on:
            os.kill(os.getpid(), signal.SIGKILL)
        out = handle(message)
        if crash_after_send and any(m.kind == crash_after_send for m in out):
            os.kill(os.getpid(), signal.SIGKILL)
        return out

    role.handle = wrapped
    start = role.start

    def wrapped_start():  # type: ignore[no-untyped-def]
        out = start()
        if crash_after_send and any(m.kind == crash_after_send for m in out):
            os.kill(os.getpid(), signal.SIGKILL)
        return out

    role.start = wrapped_start
    return role


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("--toy", action="store_true")
    ap.add_argument("--crash-on", default=None)
    ap.add_argument("--crash-after-send", default=None)
    args = ap.parse_args()
    config = load_config(args.config)
    if args.toy:
        from toy_roles import build_toy as base
    else:
        from ppdp.federated.http._parties import build_parts as base

    def build(cfg):  # type: ignore[no-untyped-def]
        parts = base(cfg)
        if args.crash_on or args.crash_after_send:
            _crashing(parts.node.role, args.crash_on, args.crash_after_send)
        return parts

    outcome = run_party(config, build=build)
    if not outcome.ok:
        sys.stderr.write(f"round aborted: {outcome.reason}\n")
        return 3
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
