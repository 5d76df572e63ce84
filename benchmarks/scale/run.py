"""Run DP-PCA, DP-LDA, the TableSynthesizer and private logistic regression at scale.

Usage::

    .venv/bin/python benchmarks/scale/run.py --data /tmp/scale-1e6 --in-memory
    .venv/bin/python benchmarks/scale/run.py --data /tmp/scale-2e7

``--data`` is a folder written by ``generate.py`` (its schema is ``<data>.schema.json``).
Every (path, engine) pair runs in its own subprocess, so that the memory of one cannot
inflate the next and a path that fails, or is not implemented yet, is one line in the table:

- ``dask``: the Parquet folder itself goes to ``fit`` with ``scheduler=`` a ``Client`` of a
  ``distributed.LocalCluster(n_workers=2, threads_per_worker=1, memory_limit=...)``; the
  row-level releases (DP-PCA's row-aligned table, the synthetic table) are written by ``fit``
  into ``output=`` folders under ``--work``;
- ``memory`` (``--in-memory``): ``pandas.read_parquet`` of the same folder (timed apart),
  then ``fit`` on the DataFrame.

Paths: ``dppca`` (``DPPCAPublisher``, ε = 1, k = 5, row-aligned release), ``dplda``
(``LDAProjectionPublisher``, ε = 1, δ = 1e-9, ``release="direction"``: the direction and the
LDA rule built from it, with the schema's public class counts), ``table-synth`` (the default
``TableSynthesizer``, ε = 1, as many synthetic rows as input rows) and ``logreg``
(``PrivateLogisticRegression``, ε = 1, objective perturbation, ``schema=``); on request
(``--paths``) also ``lda-synth`` (``DPLDASynthesizer``, ε = 1, ``n`` synthetic rows).

Measured per run: wall time of ``fit`` (the cluster is started before and is not counted),
rows/s, and the peak of the RSS summed over the driver and every descendant process (the
nannies' worker processes), sampled every 0.2 s in a thread; also the sum of the processes'
own high-water marks (``VmHWM``, an upper bound on the peak of the sum) and the RSS just
before ``fit``. Quality checks (not timed): the accuracy of the classifiers on the first
file, the rows of the released folders.

Written: ``benchmarks/scale/results-<rows>.md`` and ``.csv`` (``--results-dir``), with the
Dask / in-memory time ratio and peak RSS / in-memory size (rows x 51 x 8 B).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import logging
import math
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

PATHS = ("dppca", "dplda", "table-synth", "logreg", "lda-synth")
DEFAULT_PATHS = PATHS[:4]
ROW_LEVEL = ("dppca", "table-synth", "lda-synth")
ENGINES = ("dask", "memory")
HERE = Path(__file__).resolve().parent
EPSILON = 1.0
LDA_DELTA = 1e-9
PCA_K = 5
# Exceptions that mean "this API does not exist yet" rather than "it broke".
_MISSING = (TypeError, NotImplementedError, ImportError, AttributeError)


# -- memory ---------------------------------------------------------------------------------


def _tree(root: psutil.Process) -> list[psutil.Process]:
    try:
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return [root]


def tree_rss(root: psutil.Process) -> int:
    """RSS summed over ``root`` and all its descendants (bytes)."""
    total = 0
    for p in _tree(root):
        with contextlib.suppress(psutil.Error):
            total += p.memory_info().rss
    return total


def tree_hwm(root: psutil.Process) -> int:
    """Sum of the processes' own peak RSS (``VmHWM``; an upper bound on the peak of the sum)."""
    total = 0
    for p in _tree(root):
        with contextlib.suppress(OSError, psutil.Error):
            for line in Path(f"/proc/{p.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1]) * 1024
    return total


class PeakSampler:
    """Peak of :func:`tree_rss` of this process, sampled every ``interval`` s in a thread."""

    def __init__(self, interval: float = 0.2, on_peak: Callable[[int], None] | None = None) -> None:
        self.interval = interval
        self.peak = 0
        self._on_peak = on_peak
        self._root = psutil.Process()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, tree_rss(self._root))
            if self._on_peak is not None and time.monotonic() - last >= 5.0:
                last = time.monotonic()
                self._on_peak(self.peak)

    def __enter__(self) -> PeakSampler:
        self.peak = tree_rss(self._root)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, tree_rss(self._root))


# -- one path in one engine (child process) -------------------------------------------------


def _first_file(data: Path) -> Path:
    return sorted(data.glob("*.parquet"))[0]


def _parquet_rows(folder: Path) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(f).metadata.num_rows for f in sorted(folder.glob("*.parquet")))


def _accuracy(model: Any, data: Path, schema: Any) -> float:
    import numpy as np
    import pandas as pd

    df = pd.read_parquet(_first_file(data))
    pred = np.asarray(model.predict(df))
    truth = df[schema.label.name].to_numpy()
    return float(np.mean(pred.astype(truth.dtype) == truth))


def _row_output(pub: Any, folder: Path | None) -> str:
    if folder is not None:
        ok = (folder / "_SUCCESS").exists()
        return f"{_parquet_rows(folder):,} rows written{'' if ok else ' (no _SUCCESS)'}"
    return f"{len(pub.release_.data):,} rows in memory"


def run_path(
    path: str,
    data_arg: Any,
    schema: Any,
    fit_kwargs: dict[str, Any],
    out: Path | None,
    data_dir: Path,
) -> tuple[Callable[[], Any], Callable[[], str]]:
    """Build ``path``'s estimator; return (the timed fit, the untimed quality check)."""
    from ppdp.learn import PrivateLogisticRegression
    from ppdp.publish import (
        DPLDASynthesizer,
        DPPCAPublisher,
        LDAProjectionPublisher,
        TableSynthesizer,
    )

    if path == "dppca":
        pub = DPPCAPublisher(EPSILON, PCA_K, schema)
        kw = dict(fit_kwargs, output=out) if out is not None else fit_kwargs
        return (lambda: pub.fit(data_arg, **kw)), (lambda: _row_output(pub, out))
    if path in ("table-synth", "lda-synth"):
        pub = (TableSynthesizer if path == "table-synth" else DPLDASynthesizer)(EPSILON, schema)
        kw = dict(fit_kwargs, output=out) if out is not None else fit_kwargs
        return (lambda: pub.fit(data_arg, **kw)), (lambda: _row_output(pub, out))
    if path == "dplda":
        pub = LDAProjectionPublisher(EPSILON, LDA_DELTA, schema, release="direction")
        return (lambda: pub.fit(data_arg, **fit_kwargs)), (
            lambda: f"rule accuracy {_accuracy(pub, data_dir, schema):.3f} (file 0)"
        )
    if path == "logreg":
        clf = PrivateLogisticRegression(epsilon=EPSILON, schema=schema)
        return (lambda: clf.fit(data_arg, **fit_kwargs)), (
            lambda: f"accuracy {_accuracy(clf, data_dir, schema):.3f} (file 0)"
        )
    raise ValueError(f"path ({path!r}) must be one of {', '.join(PATHS)}")


def _error_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__


def child(args: argparse.Namespace) -> dict[str, Any]:
    """Run one (path, engine) and return its measurements."""
    warnings.simplefilter("ignore")
    logging.getLogger("distributed").setLevel(logging.ERROR)
    from ppdp.data import Schema

    schema = Schema.from_file(args.schema)
    rows = int(sum(schema.label.public_counts)) if schema.label.public_counts else None
    result: dict[str, Any] = {"path": args.path, "engine": args.engine, "rows": rows}
    root = psutil.Process()
    progress = args.report.with_suffix(".progress")

    def on_peak(peak: int) -> None:  # read by the driver if this run times out
        progress.write_text(json.dumps({"peak_rss": peak}))

    out = None
    if args.engine == "dask" and args.path in ROW_LEVEL:
        out = args.work / f"{args.path}-out"
        shutil.rmtree(out, ignore_errors=True)
        out.parent.mkdir(parents=True, exist_ok=True)
    stage = "setup"
    try:
        if args.engine == "dask":
            from distributed import Client, LocalCluster

            cluster = LocalCluster(
                n_workers=2,
                threads_per_worker=1,
                memory_limit=args.memory_limit,
                dashboard_address=None,
                silence_logs=logging.ERROR,
                local_directory=str(args.work / "dask-scratch"),
            )
            client = Client(cluster)
            client.wait_for_workers(2)
            fit, check = run_path(
                args.path, str(args.data), schema, {"scheduler": client}, out, args.data
            )
            result["idle_rss"] = tree_rss(root)
            stage = "fit"
            with PeakSampler(on_peak=on_peak) as mem:
                t0 = time.perf_counter()
                fit()
                result["wall_s"] = time.perf_counter() - t0
            result["peak_rss"] = mem.peak
            result["hwm_sum"] = tree_hwm(root)
            stage = "check"
            result["check"] = check()
            client.close()
            cluster.close()
        else:
            import pandas as pd

            result["idle_rss"] = tree_rss(root)
            stage = "fit"
            with PeakSampler(on_peak=on_peak) as mem:
                t0 = time.perf_counter()
                df = pd.read_parquet(args.data)
                result["read_s"] = time.perf_counter() - t0
                fit, check = run_path(args.path, df, schema, {}, None, args.data)
                t1 = time.perf_counter()
                fit()
                result["wall_s"] = time.perf_counter() - t1
            result["peak_rss"] = mem.peak
            result["hwm_sum"] = tree_hwm(root)
            result["rows"] = len(df)
            stage = "check"
            del df
            result["check"] = check()
        result["status"] = "ok"
    except Exception as exc:  # one line in the table, whatever it is
        line = _error_line(exc)
        missing = stage in ("setup", "fit") and (
            isinstance(exc, _MISSING) or "distributed" in str(exc) or "Dask" in str(exc)
        )
        if stage == "check":
            result["status"] = "ok"
            result["check"] = f"check failed: {line}"
        elif args.engine == "dask" and missing:
            result["status"] = f"not implemented yet: {line}"
        else:
            result["status"] = f"failed ({stage}): {line}"
    finally:
        if out is not None and not args.keep_output:
            shutil.rmtree(out, ignore_errors=True)
    return result


# -- driver ---------------------------------------------------------------------------------


def _git_head() -> str:
    """The commit that ran, and whether ``src/`` had uncommitted changes."""
    try:
        head = subprocess.run(
            ["git", "log", "-1", "--format=%h %s"],
            cwd=HERE,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()[:90]
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "src"],
            cwd=HERE,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + (" (+ uncommitted changes under src/)" if dirty else "")


def _spawn(args: argparse.Namespace, path: str, engine: str) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        report = Path(tmp.name)
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        path,
        engine,
        "--data",
        str(args.data),
        "--schema",
        str(args.schema),
        "--work",
        str(args.work),
        "--memory-limit",
        args.memory_limit,
        "--report",
        str(report),
    ]
    if args.keep_output:
        cmd.append("--keep-output")
    progress = report.with_suffix(".progress")
    log = report.with_suffix(".log")
    t0 = time.perf_counter()
    try:
        with log.open("w") as sink:
            # A session of its own, so that a timeout ends the child and its workers together.
            proc = subprocess.Popen(cmd, stdout=sink, stderr=sink, start_new_session=True)
            try:
                proc.wait(timeout=args.timeout)
            except subprocess.TimeoutExpired:
                _end_group(proc)
                took = time.perf_counter() - t0
                status = f"timed out after {took:.0f} s"
                if progress.exists():
                    peak = json.loads(progress.read_text())["peak_rss"]
                    status += f" (peak RSS so far {peak / 1e9:.2f} GB)"
                return {"path": path, "engine": engine, "status": status}
        if report.stat().st_size:
            return json.loads(report.read_text())
        tail = log.read_text().strip().splitlines()
        why = tail[-1] if tail else f"exit status {proc.returncode}"
        return {"path": path, "engine": engine, "status": f"crashed: {why[:200]}"}
    finally:
        for f in (report, progress, log):
            f.unlink(missing_ok=True)


def _end_group(proc: subprocess.Popen[bytes]) -> None:
    """Stop the child's process group (the child and its cluster), TERM then KILL."""
    for sig, wait in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _gb(x: float | None) -> str:
    return "" if x is None else f"{x / 1e9:.2f}"


def _fmt(x: float | None, spec: str) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def tabulate(results: list[dict[str, Any]], mem_bytes: int) -> list[dict[str, str]]:
    """One row per run, with the derived figures, as strings."""
    wall = {(r["path"], r["engine"]): r.get("wall_s") for r in results if r.get("status") == "ok"}
    read = {r["path"]: r.get("read_s") for r in results if r.get("engine") == "memory"}
    rows_out = []
    for r in results:
        ok = r.get("status") == "ok"
        n = r.get("rows")
        w = r.get("wall_s") if ok else None
        peak = r.get("peak_rss") if ok else None
        ratio = ratio_read = None
        if ok and r["engine"] == "dask" and wall.get((r["path"], "memory")):
            ratio = w / wall[(r["path"], "memory")]
            if read.get(r["path"]):
                ratio_read = w / (wall[(r["path"], "memory")] + read[r["path"]])
        rows_out.append(
            {
                "path": r["path"],
                "engine": r["engine"],
                "status": r.get("status", "?"),
                "wall_s": _fmt(w, ".1f"),
                "read_s": _fmt(r.get("read_s") if ok else None, ".1f"),
                "rows_per_s": _fmt(n / w if ok and n and w else None, ",.0f"),
                "peak_rss_gb": _gb(peak),
                "idle_rss_gb": _gb(r.get("idle_rss") if ok else None),
                "hwm_sum_gb": _gb(r.get("hwm_sum") if ok else None),
                "peak_over_data": _fmt(peak / mem_bytes if peak else None, ".2f"),
                "dask_over_memory": _fmt(ratio, ".2f"),
                "dask_over_memory_incl_read": _fmt(ratio_read, ".2f"),
                "check": r.get("check", "") if ok else "",
            }
        )
    return rows_out


def write_results(
    table: list[dict[str, str]], rows: int, mem_bytes: int, args: argparse.Namespace
) -> tuple[Path, Path]:
    args.results_dir.mkdir(parents=True, exist_ok=True)
    tag = f"{rows:.0e}".replace("+0", "").replace("+", "")
    name = args.name or f"results-{tag}"
    csv_path = args.results_dir / f"{name}.csv"
    md_path = args.results_dir / f"{name}.md"
    with csv_path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(table[0]))
        w.writeheader()
        w.writerows(table)
    head = [
        "path",
        "engine",
        "wall s",
        "read s",
        "rows/s",
        "peak RSS GB",
        "RSS before GB",
        "Σ VmHWM GB",
        "peak / data",
        "Dask / mem",
        "Dask / (mem + read)",
        "check",
    ]
    keys = [k for k in table[0] if k != "status"]
    lines = [
        f"# Scale benchmark: {rows:,} rows x 50 columns + label",
        "",
        f"- data: `{args.data}` ({mem_bytes / 1e9:.2f} GB in memory as rows x 51 x 8 B)",
        f"- commit: {_git_head()}",
        *([f"- note: {args.note}"] if args.note else []),
        f"- machine: {os.cpu_count()} CPUs, {psutil.virtual_memory().total / 2**30:.0f} GiB RAM, "
        f"Python {platform.python_version()}; load average at the end "
        f"{os.getloadavg()[0]:.1f} (a shared machine: other jobs inflate the times)",
        "- Dask: LocalCluster(n_workers=2, threads_per_worker=1, "
        f"memory_limit={args.memory_limit!r}); wall time excludes the cluster's start",
        "- peak RSS: summed over the driver and all its descendant processes, sampled every 0.2 s;"
        " Σ VmHWM is the sum of each process's own peak (an upper bound)",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "|".join("---" for _ in head) + "|",
    ]
    for r in table:
        if r["status"] != "ok":
            cells = [r["path"], r["engine"], r["status"]] + [""] * (len(head) - 3)
        else:
            cells = [r[k] for k in keys]
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    md_path.write_text("\n".join(lines) + "\n")
    return md_path, csv_path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="folder written by generate.py")
    ap.add_argument("--schema", type=Path, default=None, help="default <data>.schema.json")
    ap.add_argument(
        "--paths",
        default=",".join(DEFAULT_PATHS),
        help=f"comma list of {', '.join(PATHS)} (default: all but lda-synth)",
    )
    ap.add_argument("--in-memory", action="store_true", help="also run the in-memory paths")
    ap.add_argument("--no-dask", action="store_true", help="skip the Dask paths")
    ap.add_argument("--memory-limit", default="4GB", help="LocalCluster memory_limit per worker")
    ap.add_argument("--work", type=Path, default=None, help="outputs and Dask scratch")
    ap.add_argument("--keep-output", action="store_true", help="keep the released folders")
    ap.add_argument("--results-dir", type=Path, default=HERE)
    ap.add_argument("--name", default=None, help="results file stem (default results-<rows>)")
    ap.add_argument("--note", default=None, help="a line for the results' header")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per run")
    ap.add_argument("--child", nargs=2, metavar=("PATH", "ENGINE"), help=argparse.SUPPRESS)
    ap.add_argument("--report", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.data = args.data.resolve()
    if args.schema is None:
        args.schema = args.data.with_name(args.data.name + ".schema.json")
    if args.work is None:
        args.work = Path(tempfile.gettempdir()) / f"scale-work-{args.data.name}"

    if args.child:
        args.path, args.engine = args.child
        result = child(args)
        args.report.write_text(json.dumps(result))
        return

    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    bad = [p for p in paths if p not in PATHS]
    if bad:
        sys.exit(f"--paths ({','.join(bad)}) must name some of {', '.join(PATHS)}")
    if not args.data.is_dir() or not any(args.data.glob("*.parquet")):
        sys.exit(f"--data ({args.data}) must be a folder of Parquet files (run generate.py)")
    if not args.schema.is_file():
        sys.exit(f"--schema ({args.schema}) not found")
    engines = [e for e, on in (("dask", not args.no_dask), ("memory", args.in_memory)) if on]
    if not engines:
        sys.exit("nothing to run: --no-dask without --in-memory")
    schema = json.loads(args.schema.read_text())
    rows = int(sum(schema["label"]["public_counts"]))
    mem_bytes = rows * 51 * 8
    print(f"{args.data}: {rows:,} rows, {mem_bytes / 1e9:.2f} GB in memory; engines {engines}")
    results = []
    for path in paths:
        for engine in engines:
            t0 = time.perf_counter()
            r = _spawn(args, path, engine)
            r.setdefault("rows", rows)
            results.append(r)
            extra = (
                f"fit {r['wall_s']:.1f} s, peak RSS {r['peak_rss'] / 1e9:.2f} GB; {r.get('check')}"
                if r.get("status") == "ok"
                else r.get("status")
            )
            print(
                f"  {path:<12} {engine:<7} [{time.perf_counter() - t0:6.1f} s] {extra}", flush=True
            )
            # Written after every run, so that a long run leaves its results so far.
            md, csv_path = write_results(tabulate(results, mem_bytes), rows, mem_bytes, args)
    print(md.read_text())
    print(f"written: {md}, {csv_path}")


if __name__ == "__main__":
    main()
