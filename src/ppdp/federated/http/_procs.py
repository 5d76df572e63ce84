"""Start the parties of a deployment as separate processes and wait for them."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ppdp.federated.http._deploy import Deployment

__all__ = ["PartyProcess", "start_parties", "wait_parties"]

_ONE_THREAD = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


@dataclass
class PartyProcess:
    """A running party: its id, role, process and log file."""

    party: str
    role: str
    process: subprocess.Popen[bytes]
    log: Path

    def kill(self) -> None:
        """SIGKILL the party (a crash: no goodbye, nothing flushed)."""
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGKILL)

    def last_line(self) -> str:
        """The last non-empty line of its stderr log."""
        try:
            lines = [ln for ln in self.log.read_text(errors="replace").splitlines() if ln.strip()]
        except FileNotFoundError:
            return ""
        return lines[-1] if lines else ""


def party_command(role: str, config: Path, *, verbose: int = 0) -> list[str]:
    """``python -m ppdp federate ROLE --config FILE``."""
    return [
        sys.executable,
        "-m",
        "ppdp",
        *(["-v"] * verbose),
        "federate",
        role,
        "--config",
        str(config),
    ]


def start_parties(
    deployment: Deployment,
    *,
    order: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
    verbose: int = 0,
) -> dict[str, PartyProcess]:
    """Start every party (publisher last by default, so the others are already starting)."""
    logs = deployment.workdir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    names = (
        list(order)
        if order is not None
        else sorted(deployment.roles, key=lambda p: deployment.roles[p] == "publisher")
    )
    # One BLAS thread per party: a dozen processes on a few cores would otherwise each spin
    # a thread pool for 33 x 33 products and slow every party down many times over.
    full_env = {**_ONE_THREAD, **os.environ, **(env or {})}
    procs: dict[str, PartyProcess] = {}
    for p in names:
        log = logs / f"{p}.log"
        with open(log, "wb") as fh:
            proc = subprocess.Popen(
                party_command(deployment.roles[p], deployment.configs[p], verbose=verbose),
                stdout=fh,
                stderr=subprocess.STDOUT,
                env=full_env,
                cwd=deployment.workdir,
            )
        procs[p] = PartyProcess(p, deployment.roles[p], proc, log)
    return procs


def wait_parties(procs: Mapping[str, PartyProcess], *, timeout: float) -> dict[str, int]:
    """Wait for every process; kill stragglers at ``timeout``; return exit codes."""
    deadline = time.monotonic() + timeout
    codes: dict[str, int] = {}
    for p, pp in procs.items():
        left = max(0.0, deadline - time.monotonic())
        try:
            codes[p] = pp.process.wait(timeout=left)
        except subprocess.TimeoutExpired:
            pp.kill()
            codes[p] = pp.process.wait()
    return codes
