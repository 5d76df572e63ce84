"""Benchmark: what a Parquet release does when its dataset changes or its workers die.

Each scenario runs ``ppdp publish pca DATASET --epsilon 1 --components 2`` on a Parquet
dataset made from the shipped Adult data, charged to a fresh budget ledger (ε = 10), in its
own temporary folder, and reports the exit code, the ε the ledger charged, the rows
released (the output folder's row count, or ``-`` when there is none), the number of
stderr lines, the wall seconds, and the start of the last stderr line.

Scenarios (``--scenarios``, comma separated; default: the cheap ones)

``CHANGE-before-spend`` / ``CHANGE-after-spend``
    A 1,200-row dataset of three files, ``--scheduler sync``; the middle file is changed
    right after the scan (before the ε is charged) or right after the charge (before the
    release is written). ``CHANGE`` is ``category`` (an undeclared category in one row),
    ``nan`` (a missing number in one row), ``double`` (the file's rows twice) or
    ``delete`` (the file removed). ``control-before-spend`` changes nothing.
``killwrite``
    The same dataset, ``--scheduler threads``; the process SIGKILLs itself right after
    writing its first output part, then the same command runs again. Reported: the rerun,
    and in the notes the hidden folders the kill left and those left after the rerun.
``startup``
    All of Adult in four files, ``--scheduler local``; the Dask worker processes are
    SIGKILLed as soon as they appear (while the cluster starts).
``once`` / ``storm`` (not in the default: slow)
    ``--rows`` rows resampled from Adult (seed 0) in 20 files, ``--scheduler local``; at
    ``--kill-at`` seconds every worker process is SIGKILLed once (``once``), or every 0.2 s
    for 20 s, restarting workers included (``storm``). A run past ``--cap`` seconds is
    killed (rc ``cap``).

``--src`` puts another tree's ``src`` first on ``PYTHONPATH`` of every ppdp process (the
code before a change: ``git archive a2b99e2 src | tar -x -C /tmp/before``)::

    .venv/bin/python benchmarks/hostile/bench_parquet_dask_faults.py
    .venv/bin/python benchmarks/hostile/bench_parquet_dask_faults.py --src /tmp/before/src
    .venv/bin/python benchmarks/hostile/bench_parquet_dask_faults.py --scenarios storm \\
        --rows 1000000 --cap 600

The in-process changes (monkeypatched ``ppdp.data.distributed.scan_table`` and
``ppdp.release.charge``) run in a child process of this script (``--child``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[2]
CHANGES = ("category", "nan", "double", "delete")
CHEAP = (
    *(f"{c}-{w}" for c in CHANGES for w in ("before-spend", "after-spend")),
    "killwrite",
    "startup",
)
KILLS = ("startup", "once", "storm")
KNOWN = (*CHEAP, "control-before-spend", "control-after-spend", "once", "storm")
SMALL_ROWS = 1200


@dataclass
class Run:
    """One ppdp process: its exit code (None when stopped at the cap), stderr, seconds."""

    rc: int | None
    stderr: str
    secs: float


# ------------------------------------------------------------------ child side (ppdp code)


def _publish_args(root: Path, scheduler: str) -> list[str]:
    return [
        "publish", "pca", str(root / "ds"), "--schema", str(root / "s.json"),
        "--epsilon", "1", "--components", "2", "-o", str(root / "out"),
        "--ledger", str(root / "l.db"), "--scheduler", scheduler, "-q",
    ]  # fmt: skip


def _prepare(root: Path, rows: int, files: int) -> None:
    """Write ``rows`` Adult rows (0: all; resampled, seed 0, beyond Adult's) in ``files``."""
    import numpy as np

    from ppdp.datasets import load_adult

    df, schema = load_adult()
    rows = rows or len(df)
    if rows <= len(df):
        df = df.iloc[:rows]
    else:
        df = df.iloc[np.random.default_rng(0).integers(0, len(df), rows)]
    df = df.reset_index(drop=True)
    (root / "ds").mkdir(parents=True)
    bounds = np.linspace(0, rows, files + 1).astype(int)
    for i, (a, b) in enumerate(itertools.pairwise(bounds)):
        df.iloc[a:b].to_parquet(root / "ds" / f"part-{i:02d}.parquet", index=False)
    schema.to_file(root / "s.json")


def _change(root: Path, change: str) -> None:
    """Change the middle file of the small dataset (rows 400-800) as ``change`` says."""
    import numpy as np
    import pandas as pd

    from ppdp.datasets import load_adult

    df, schema = load_adult()
    target = root / "ds" / "part-01.parquet"
    part = df.iloc[400:800].copy()
    if change == "category":
        cat = next(c.name for c in schema.columns if getattr(c, "categories", None))
        part.loc[part.index[0], cat] = "UNDECLARED"
    elif change == "nan":
        num = next(c.name for c in schema.columns if getattr(c, "lower", None) is not None)
        part[num] = part[num].astype(float)
        part.loc[part.index[0], num] = np.nan
    elif change == "double":
        part = pd.concat([part, part])
    elif change == "delete":
        target.unlink()
        return
    elif change == "control":
        return
    swap = target.with_name(".swap.parquet")
    part.to_parquet(swap, index=False)
    os.replace(swap, target)


def _after_first_call(module: object, name: str, action: object) -> None:
    """Replace ``module.name`` by a wrapper that runs ``action()`` after its first call."""
    real = getattr(module, name)
    done: list[bool] = []

    def hook(*args: object, **kwargs: object) -> object:
        result = real(*args, **kwargs)
        if not done:
            done.append(True)
            action()  # type: ignore[operator]
        return result

    setattr(module, name, hook)


def _child_mutate(root: Path, change: str, when: str) -> int:
    import ppdp.data.distributed as dist
    import ppdp.release as base
    from ppdp.cli import main

    target = (dist, "scan_table") if when == "before-spend" else (base, "charge")
    _after_first_call(*target, lambda: _change(root, change))
    return main(_publish_args(root, "sync"))


def _child_killwrite(root: Path) -> int:
    import ppdp.data.distributed as dist
    from ppdp.cli import main

    _after_first_call(dist, "_write_part", lambda: os.kill(os.getpid(), signal.SIGKILL))
    return main(_publish_args(root, "threads"))


def _child_inspect(root: Path) -> int:
    import pandas as pd

    from ppdp.accounting import budget_report

    out = root / "out"
    rows = len(pd.read_parquet(out)) if out.is_dir() else None
    spent = budget_report(root / "l.db").spent.epsilon
    print(json.dumps({"spent": float(spent), "rows": rows}))
    return 0


def _child(argv: Sequence[str]) -> int:
    kind, root, *rest = argv
    if kind == "prepare":
        _prepare(Path(root), int(rest[0]), int(rest[1]))
        return 0
    if kind == "mutate":
        return _child_mutate(Path(root), rest[0], rest[1])
    if kind == "killwrite":
        return _child_killwrite(Path(root))
    return _child_inspect(Path(root))


# ------------------------------------------------------------------ parent side


class Bench:
    """Runs the scenarios against the ppdp sources in ``src``, each in a fresh folder."""

    def __init__(self, src: Path, base: Path, args: argparse.Namespace) -> None:
        self.args = args
        self.base = base
        self.env = {
            **os.environ,
            "PYTHONPATH": str(src),
            "PPDP_ANCHOR_DIR": str(base / "anchors"),
            "XDG_CONFIG_HOME": str(base / "config"),
        }

    def _cmd(self, *args: str) -> list[str]:
        return [sys.executable, *args]

    def _child(self, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = self._cmd(__file__, "--child", *args)
        return subprocess.run(cmd, env=self.env, capture_output=True, text=True, check=False)

    def _ppdp(self, *args: str) -> list[str]:
        return self._cmd("-m", "ppdp", *args)

    def _fresh(self, name: str, rows: int, files: int) -> Path:
        root = self.base / name
        root.mkdir()
        done = self._child("prepare", str(root), str(rows), str(files))
        if done.returncode:
            raise RuntimeError(f"preparing {name} failed:\n{done.stderr}")
        init = self._ppdp(
            "budget", "init", str(root / "l.db"), "--dataset-id", name,
            "--epsilon", "10", "--delta", "1e-6",
        )  # fmt: skip
        subprocess.run(init, env=self.env, capture_output=True, check=True)
        return root

    def _timed(self, cmd: list[str]) -> Run:
        t0 = time.perf_counter()
        done = subprocess.run(cmd, env=self.env, capture_output=True, text=True, check=False)
        return Run(done.returncode, done.stderr, time.perf_counter() - t0)

    def mutate(self, name: str) -> tuple[Path, Run, str]:
        """``CHANGE-WHEN``: change the dataset in the publishing process itself."""
        change, when = name.split("-", 1)
        root = self._fresh(name, SMALL_ROWS, 3)
        run = self._timed(self._cmd(__file__, "--child", "mutate", str(root), change, when))
        return root, run, ""

    def killwrite(self, name: str) -> tuple[Path, Run, str]:
        """SIGKILL a publish after its first output part; run it again; list leftovers."""
        root = self._fresh(name, SMALL_ROWS, 3)
        first = self._timed(self._cmd(__file__, "--child", "killwrite", str(root)))
        left = _hidden(root)
        run = self._timed(self._ppdp(*_publish_args(root, "threads")))
        note = (
            f"kill rc={first.rc}, left {left or 'nothing'}; "
            f"after rerun: {_hidden(root) or 'nothing'}"
        )
        return root, run, note

    def kill(self, name: str) -> tuple[Path, Run, str]:
        """``startup`` / ``once`` / ``storm``: SIGKILL the LocalCluster's workers."""
        rows, files = (0, 4) if name == "startup" else (self.args.rows, 20)
        root = self._fresh(name, rows, files)
        err_path = root / "stderr.txt"
        t0 = time.perf_counter()
        with err_path.open("w") as err:  # a file, not a pipe: a chatty run cannot block
            proc = subprocess.Popen(
                self._ppdp(*_publish_args(root, "local")),
                env=self.env,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
            killed = _watch(proc, name, t0, self.args)
            capped = proc.poll() is None
            if capped:
                for child in psutil.Process(proc.pid).children(recursive=True):
                    child.kill()
                proc.kill()
            proc.wait()
        secs = time.perf_counter() - t0
        run = Run(None if capped else proc.returncode, err_path.read_text(), secs)
        return root, run, f"killed {killed} worker(s)"

    def inspect(self, root: Path) -> dict[str, object]:
        """The ε the ledger charged and the rows released (None: no output)."""
        done = self._child("inspect", str(root))
        if done.returncode:
            last = (done.stderr.strip().splitlines() or ["?"])[-1]
            return {"spent": f"? ({last[:40]})", "rows": None}
        return json.loads(done.stdout)


def _hidden(root: Path) -> list[str]:
    """The hidden entries beside the output, their names cut to 20 characters."""
    names = sorted(p.name for p in root.iterdir() if p.name.startswith(".") and "out" in p.name)
    return [n if len(n) <= 20 else n[:20] + "…" for n in names]


def _workers(proc: subprocess.Popen[bytes]) -> list[psutil.Process]:
    found = []
    try:
        kids = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        return []
    for kid in kids:
        try:
            if "spawn_main" in " ".join(kid.cmdline()):
                found.append(kid)
        except psutil.Error:
            continue
    return found


def _watch(proc: subprocess.Popen[bytes], mode: str, t0: float, args: argparse.Namespace) -> int:
    """Kill the Dask workers of ``proc`` as ``mode`` says until it ends or the cap; count."""
    killed = 0
    start = 0.0 if mode == "startup" else args.kill_at
    stop = start + 20.0 if mode == "storm" else None
    while proc.poll() is None and time.perf_counter() - t0 < args.cap:
        time.sleep(0.2)
        elapsed = time.perf_counter() - t0
        if elapsed < start or (mode != "storm" and killed) or (stop and elapsed > stop):
            continue
        for worker in _workers(proc):
            try:
                worker.send_signal(signal.SIGKILL)
                killed += 1
            except psutil.Error:
                continue
    return killed


def _row(name: str, root: Path, run: Run, seen: dict[str, object], note: str) -> str:
    """One table row; the scenario's folder is written ``ROOT`` in the stderr line."""
    lines = [line.replace(str(root), "ROOT") for line in run.stderr.splitlines() if line.strip()]
    last = lines[-1][:100] if lines else ""
    rc = "cap" if run.rc is None else str(run.rc)
    spent = seen["spent"]
    eps = f"{spent:g}" if isinstance(spent, float) else str(spent)
    rows = "-" if seen["rows"] is None else str(seen["rows"])
    return (
        f"{name:<22} {rc:>4} {eps:>5} {rows:>8} {len(lines):>6} {run.secs:>7.1f}  "
        f"{note}{' | ' if note else ''}{last}"
    )


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--src", type=Path, default=REPO / "src", help="ppdp sources to run")
    p.add_argument("--scenarios", default=",".join(CHEAP), help=f"comma separated: {KNOWN}")
    p.add_argument("--rows", type=int, default=1_000_000, help="rows for once / storm")
    p.add_argument("--cap", type=float, default=300.0, help="seconds before a run is killed")
    p.add_argument("--kill-at", type=float, default=4.0, help="seconds before once / storm")
    args = p.parse_args(argv)
    args.scenarios = [s for s in args.scenarios.split(",") if s]
    unknown = [s for s in args.scenarios if s not in KNOWN]
    if unknown:
        p.error(f"--scenarios: unknown {unknown}; allowed: {', '.join(KNOWN)}")
    if not (args.src / "ppdp").is_dir():
        p.error(f"--src ({str(args.src)!r}) holds no ppdp package")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the selected scenarios; print one row each."""
    args = _parse(argv)
    print(f"ppdp sources: {args.src.resolve()}   python: {sys.executable}")
    head = f"{'scenario':<22} {'rc':>4} {'ε':>5} {'released':>8} {'stderr':>6} {'secs':>7}"
    print(f"{head}  notes | last stderr line")
    with tempfile.TemporaryDirectory(prefix="ppdp-parq-faults-") as tmp:
        bench = Bench(args.src.resolve(), Path(tmp), args)
        for name in args.scenarios:
            if name == "killwrite":
                root, run, note = bench.killwrite(name)
            elif name in KILLS:
                root, run, note = bench.kill(name)
            else:
                root, run, note = bench.mutate(name)
            print(_row(name, root, run, bench.inspect(root), note), flush=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        raise SystemExit(_child(sys.argv[2:]))
    raise SystemExit(main())
