"""Structure measures of issue 31 (the release run), printed as a table.

For a source tree (default: this checkout's ``src``): the import cycles between ppdp's
modules (strongly connected components of the module import graph, an import of a
package's own ``__init__`` from inside it not counted), the private attribute uses of the
four file workflows (``name._attr`` where ``name`` is not a module or ``self``), and the
constraint-table checks of one ``publish_table_file`` / ``train_model_file`` run (the
most checks of one estimator object, and all checks, ε's included); the files of ppdp
outside ``ppdp.audit`` that name the audits' noise hook (``_noise_factor``); and the lines
of Python under ``src`` and ``tests`` (every line, blank and comment lines included).

Reproduce (before: the tree at the merge base; after: this checkout)::

    git archive 956c538 src | tar -x -C /tmp/base
    PYTHONPATH=/tmp/base/src python benchmarks/structure/release_run_measures.py /tmp/base/src
    PYTHONPATH=src python benchmarks/structure/release_run_measures.py src

(the source lines of a base: ``git archive REV src tests | tar -x -C /tmp/base``).
"""

from __future__ import annotations

import ast
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

WORKFLOWS = (
    "ppdp/publish/files.py",
    "ppdp/publish/parquet_files.py",
    "ppdp/learn/files.py",
    "ppdp/learn/parquet_files.py",
)


def import_cycles(root: Path) -> list[list[str]]:
    """Strongly connected components (more than one module) of ppdp's import graph."""
    mods = {}
    for p in root.rglob("*.py"):
        name = ".".join(p.relative_to(root).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = p
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            graph[m] |= {t for t in targets if t in mods and t != m and not m.startswith(t + ".")}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []
    sys.setrecursionlimit(10000)

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return sorted(c for c in out if len(c) > 1)


def private_uses(root: Path) -> dict[str, int]:
    """``name._attr`` uses in each workflow file (``name`` neither a module nor ``self``)."""
    counts = {}
    for f in WORKFLOWS:
        tree = ast.parse((root / f).read_text(encoding="utf-8"))
        modules = {
            a.asname or a.name
            for n in ast.walk(tree)
            if isinstance(n, ast.Import | ast.ImportFrom)
            for a in n.names
        }
        counts[f] = sum(
            1
            for n in ast.walk(tree)
            if isinstance(n, ast.Attribute)
            and n.attr.startswith("_")
            and not n.attr.startswith("__")
            and isinstance(n.value, ast.Name)
            and n.value.id not in modules
            and n.value.id != "self"
        )
    return counts


def hook_files(root: Path) -> list[str]:
    """The files of ppdp outside ``ppdp.audit`` that name the audits' noise hook."""
    ppdp = root / "ppdp"
    return sorted(
        p.relative_to(ppdp).as_posix()
        for p in ppdp.rglob("*.py")
        if "_noise_factor" in p.read_text(encoding="utf-8") and "audit" not in p.parts
    )


def python_lines(folder: Path) -> int:
    """Every line of every ``.py`` file below ``folder`` (0 where it does not exist)."""
    return sum(len(p.read_text(encoding="utf-8").splitlines()) for p in folder.rglob("*.py"))


def validations() -> list[tuple[str, int, int]]:
    """``(run, most checks of one estimator, all checks)`` of the constraint table."""
    import numpy as np
    import pandas as pd

    import ppdp._params as params
    from ppdp.data import Schema
    from ppdp.learn.files import train_model_file
    from ppdp.publish.files import publish_table_file

    seen: list[Any] = []
    original = params.check_table

    def counted(obj: Any, *args: Any) -> Any:
        seen.append(obj)
        return original(obj, *args)

    params.check_table = counted
    schema = Schema.from_dict(
        {
            "columns": [
                {"name": "a", "type": "numeric", "lower": 0, "upper": 10},
                {"name": "b", "type": "numeric", "lower": 0, "upper": 5},
            ],
            "label": {"name": "y", "classes": ["n", "p"]},
        }
    )
    rng = np.random.default_rng(0)
    tmp = Path(tempfile.mkdtemp())
    pd.DataFrame(
        {
            "a": rng.uniform(0, 10, 300),
            "b": rng.uniform(0, 5, 300),
            "y": rng.choice(["n", "p"], 300),
        }
    ).to_csv(tmp / "d.csv", index=False)
    rows = []
    runs = [
        ("publish", m, o) for m, o in [("synth", {}), ("laplace", {}), ("pca", {"n_components": 1})]
    ]
    runs.append(("train", "logreg", {}))
    for kind, method, options in runs:
        for dry in (False, True):
            seen.clear()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if kind == "publish":
                    publish_table_file(
                        method, tmp / "d.csv", schema=schema, output=tmp / f"{method}{dry}.csv",
                        epsilon=1.0, options=options, random_state=1, dry_run=dry,
                    )  # fmt: skip
                else:
                    train_model_file(
                        method, tmp / "d.csv", schema=schema, output=tmp / f"m{dry}.json",
                        epsilon=1.0, random_state=1, dry_run=dry,
                    )  # fmt: skip
            ids = [id(o) for o in seen]
            most = max(ids.count(i) for i in ids)
            rows.append((f"{kind} {method}{' --dry-run' if dry else ''}", most, len(seen)))
    return rows


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "src")
    cycles = import_cycles(root)
    print(f"| measure | value |\n|---|---|\n| import cycles | {len(cycles)} |")
    for c in cycles:
        print(f"| cycle | {', '.join(c)} |")
    uses = private_uses(root)
    for f, n in uses.items():
        print(f"| private uses in {f} | {n} |")
    print(f"| private uses in the workflows | {sum(uses.values())} |")
    hooks = hook_files(root)
    print(f"| files naming the audit noise hook (outside ppdp.audit) | {len(hooks)} |")
    lines = f"{python_lines(root)}, {python_lines(root.parent / 'tests')}"
    print(f"| lines of Python in src, tests | {lines} |")
    for run, most, total in validations():
        print(f"| table checks, {run} (one estimator / all) | {most} / {total} |")


if __name__ == "__main__":
    main()
