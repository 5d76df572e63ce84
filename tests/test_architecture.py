"""No package reaches into another package's private modules.

The rule (``docs/architecture.md``, "Layers"):

* A *package* is a top-level subpackage of ``ppdp`` (``ppdp.ledger``, ``ppdp.local``, ...).
  A *private name* is any dotted segment after ``ppdp`` that starts with one underscore:
  a private module (``ppdp.ledger._keys``), a private subpackage, or a private name imported
  from a public module (``from ppdp.publish.lda_projection import _add_noise``).
* A module may import private names of its **own** package, at any depth
  (``ppdp.local.collector._service`` may import ``ppdp.local._protocol``).
* The top-level helpers ``ppdp._io``, ``ppdp._validation``, ``ppdp._params``,
  ``ppdp._progress``, ``ppdp._http_guard`` and ``ppdp._version`` are shared infrastructure
  that every package may import (but not their own private names).
* Everything else another package needs is public: a public module (``ppdp.publish.fisher``,
  ``ppdp.mechanisms.grid``) or a re-export from the package's ``__init__``.

Every ``import`` and ``from ... import`` statement in ``src/ppdp`` is checked, at module
level and inside functions or ``TYPE_CHECKING`` blocks, relative imports resolved. Tests,
benchmarks and scripts may import private names (they test them).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

#: Shared infrastructure any package may import.
SHARED = frozenset(
    {
        "ppdp._io",
        "ppdp._validation",
        "ppdp._params",
        "ppdp._progress",
        "ppdp._http_guard",
        "ppdp._yaml",
        "ppdp._version",
    }
)


def _is_private(segment: str) -> bool:
    return segment.startswith("_") and not segment.startswith("__")


def _module_name(path: Path, root: Path) -> tuple[str, bool]:
    parts = list(path.with_suffix("").relative_to(root).parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package


def _imported_names(tree: ast.AST, module: str, is_package: bool) -> list[tuple[int, str]]:
    """``(line, dotted name)`` of every imported module and every name imported from one."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            out.append((node.lineno, source))
            out.extend((node.lineno, f"{source}.{alias.name}") for alias in node.names)
    return out


def violation(importer: str, name: str) -> str | None:
    """Why ``importer`` may not import ``name`` (``None`` when it may)."""
    segments = name.split(".")
    if segments[0] != "ppdp" or len(segments) < 2:
        return None
    first = next((i for i, s in enumerate(segments[1:], 1) if _is_private(s)), None)
    if first is None:
        return None
    if first == 1:
        target = ".".join(segments[:2])
        if target in SHARED and not any(_is_private(s) for s in segments[2:]):
            return None
        return f"{target} is private to the top-level ppdp package"
    own = importer.split(".")[1] if importer.count(".") >= 1 else None
    if segments[1] == own:
        return None
    return f"{'.'.join(segments[: first + 1])} is private to ppdp.{segments[1]}"


def scan(root: Path) -> list[str]:
    """Every cross-package private import under ``root/ppdp``, as ``path:line: message``."""
    found = []
    for path in sorted((root / "ppdp").rglob("*.py")):
        module, is_package = _module_name(path, root)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, name in _imported_names(tree, module, is_package):
            why = violation(module, name)
            if why is not None:
                found.append(f"{path.relative_to(root)}:{line}: imports {name}: {why}")
    return sorted(set(found))


def test_no_package_imports_another_packages_private_modules() -> None:
    found = scan(SRC)
    assert not found, (
        "make the shared piece public (a public module or a re-export from the package "
        "__init__) and import that:\n" + "\n".join(found)
    )


@pytest.mark.parametrize(
    ("importer", "name", "allowed"),
    [
        ("ppdp.federated.messages", "ppdp.ledger._keys.check_signer_id", False),
        ("ppdp.federated.messages", "ppdp.ledger.check_signer_id", True),
        ("ppdp.correlated._release", "ppdp.mechanisms._base", False),
        ("ppdp.experiments._gu2022", "ppdp.publish.lda_projection._add_noise", False),
        ("ppdp.local.collector._service", "ppdp.local._protocol", True),
        ("ppdp.cli._train", "ppdp.cli._common", True),
        ("ppdp.cli._local", "ppdp.local.collector._service", False),
        ("ppdp.ledger._ledger", "ppdp._io.atomic_paths", True),
        ("ppdp.ledger._ledger", "ppdp._io._private_helper", False),
        ("ppdp.ledger._ledger", "ppdp._secret", False),
        ("ppdp.data.stats", "numpy._core", True),
    ],
)
def test_the_rule_on_examples(importer: str, name: str, allowed: bool) -> None:
    assert (violation(importer, name) is None) is allowed


def test_the_scan_finds_a_planted_violation(tmp_path: Path) -> None:
    pkg = tmp_path / "ppdp"
    for sub in ("", "ledger", "federated", "federated/http"):
        (pkg / sub).mkdir(parents=True, exist_ok=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "ledger" / "_keys.py").write_text("def check_signer_id(x): return x\n")
    (pkg / "ledger" / "_chain.py").write_text("from ppdp.ledger._keys import check_signer_id\n")
    (pkg / "federated" / "ok.py").write_text("from ppdp.ledger import Signer\n")
    (pkg / "federated" / "http" / "bad.py").write_text(
        "def f():\n    from ..._keys import x\n    from ppdp.ledger import _keys\n"
    )
    (pkg / "federated" / "bad.py").write_text("import ppdp.ledger._keys\n")
    found = scan(tmp_path)
    assert found == sorted(
        [
            "ppdp/federated/bad.py:1: imports ppdp.ledger._keys: ppdp.ledger._keys is private "
            "to ppdp.ledger",
            "ppdp/federated/http/bad.py:2: imports ppdp._keys: ppdp._keys is private to the "
            "top-level ppdp package",
            "ppdp/federated/http/bad.py:2: imports ppdp._keys.x: ppdp._keys is private to the "
            "top-level ppdp package",
            "ppdp/federated/http/bad.py:3: imports ppdp.ledger._keys: ppdp.ledger._keys is "
            "private to ppdp.ledger",
        ]
    )


# -- the layers ---------------------------------------------------------------------------------

DOC = SRC.parent / "docs" / "architecture.md"

#: The upward imports the architecture page names, each lazy, inside the one function that
#: needs it: ``(importing package, imported module)``.
UPWARD = frozenset(
    {
        ("accounting", "ppdp.mechanisms.calibration"),  # the Gaussian event's δ
        ("_params", "ppdp.data.schema"),  # a draft schema refused before any table
    }
)


def documented_layers(text: str) -> dict[str, int]:
    """``package or module -> layer`` from the table of the architecture page ("Layers")."""
    import re

    layers: dict[str, int] = {}
    for line in text.splitlines():
        row = re.match(r"\| (\d+)\. [^|]+\| ([^|]+)\|", line)
        if row:
            for name in re.findall(r"`([a-z_]+)`", row.group(2)):
                layers[name] = int(row.group(1))
    return layers


def _top(module: str) -> str:
    """The top-level package (or module) of a dotted ``ppdp`` name."""
    return module.split(".")[1] if module.count(".") else "__init__"


def layer_violations(root: Path, layers: dict[str, int]) -> list[str]:
    """Every import of a higher layer and every package without a layer, one line each."""
    found = []
    for path in sorted((root / "ppdp").rglob("*.py")):
        module, is_package = _module_name(path, root)
        top = _top(module)
        if top == "__init__":
            continue
        if top not in layers:
            found.append(f"{path.relative_to(root)}: ppdp.{top} has no layer on the page")
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, name in _imported_names(tree, module, is_package):
            if not name.startswith("ppdp.") or _top(name) not in layers:
                continue  # a name imported from a module, or not ppdp's
            target = _top(name)
            named = any(top == t and (name == m or name.startswith(m + ".")) for t, m in UPWARD)
            if layers[target] > layers[top] and not named:
                found.append(
                    f"{path.relative_to(root)}:{line}: ppdp.{top} (layer {layers[top]}) "
                    f"imports {name} (layer {layers[target]})"
                )
    return sorted(set(found))


def test_every_package_imports_only_its_layer_and_those_above() -> None:
    layers = documented_layers(DOC.read_text(encoding="utf-8"))
    assert {"publish", "learn", "release", "accounting", "cli"} <= set(layers)
    found = layer_violations(SRC, layers)
    assert not found, (
        "an import runs down the layers of docs/architecture.md (or a package has no row "
        "there): move the shared piece up, or give the package its row:\n" + "\n".join(found)
    )


def test_the_layer_check_finds_a_planted_violation(tmp_path: Path) -> None:
    pkg = tmp_path / "ppdp"
    for sub in ("", "accounting", "publish", "newpkg"):
        (pkg / sub).mkdir(parents=True, exist_ok=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "publish" / "ok.py").write_text("from ppdp.accounting import charge\n")
    (pkg / "accounting" / "bad.py").write_text("def f():\n    from ppdp.publish import ok\n")
    layers = documented_layers(
        "| 2. accounting | `accounting` | x |\n| 4. releases | `publish` | y |\n"
    )
    assert layer_violations(tmp_path, layers) == [
        "ppdp/accounting/bad.py:2: ppdp.accounting (layer 2) imports ppdp.publish (layer 4)",
        "ppdp/accounting/bad.py:2: ppdp.accounting (layer 2) imports ppdp.publish.ok (layer 4)",
        "ppdp/newpkg/__init__.py: ppdp.newpkg has no layer on the page",
    ]


# ----------------------------------------------------------------------------- import cycles
#: Import cycles left in ``src/ppdp`` (issue 31; before it: 6). Each is a method of a class
#: that delegates to a module which names the class back: ``Schema.encode`` and
#: ``ppdp.data.encoding`` (the back edge is a ``TYPE_CHECKING`` import),
#: ``QualityReport.to_html`` and its HTML page (likewise), and the table synthesizer and
#: its synthetic persons. Lower it when one goes; never raise it.
MAX_IMPORT_CYCLES = 3


def import_cycles(root: Path) -> list[list[str]]:
    """The import cycles among the modules under ``root/ppdp``, each a sorted list of names.

    A cycle is a strongly connected component (more than one module) of the graph with an
    edge for every import of another module, at module level or inside a function or a
    ``TYPE_CHECKING`` block (``from m import x`` is an edge to ``m`` and, when ``m.x`` is
    a module, to it), relative imports resolved; an import of a package by a module inside
    it (its own ``__init__``) is no edge. The graph of
    ``benchmarks/structure/release_run_measures.py``.
    """
    modules = {}
    for path in (root / "ppdp").rglob("*.py"):
        modules[_module_name(path, root)[0]] = path
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        names = _imported_names(tree, module, path.name == "__init__.py")
        graph[module] = {
            name
            for _, name in names
            if name in modules and name != module and not module.startswith(name + ".")
        }
    return _strong_components(graph)


def _strong_components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one node, iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return sorted(out)


def cycles_over(root: Path, limit: int) -> str | None:
    """What is wrong when ``root/ppdp`` has more than ``limit`` import cycles, else None."""
    cycles = import_cycles(root)
    if len(cycles) <= limit:
        return None
    listed = "\n".join(", ".join(c) for c in cycles)
    return (
        f"{len(cycles)} import cycles in ppdp, at most {limit} allowed: move what both sides "
        f"use into the lower module or a small leaf module:\n{listed}"
    )


def test_import_cycles_do_not_grow() -> None:
    problem = cycles_over(SRC, MAX_IMPORT_CYCLES)
    assert problem is None, problem


def test_the_cycle_check_finds_a_planted_cycle(tmp_path: Path) -> None:
    pkg = tmp_path / "ppdp"
    (pkg / "data").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "data" / "__init__.py").write_text("from ppdp.data.a import f\n")
    (pkg / "data" / "a.py").write_text("from ppdp.data import b\n\ndef f():\n    pass\n")
    (pkg / "data" / "b.py").write_text("from ppdp import data\n")  # its own package: no edge
    (pkg / "data" / "c.py").write_text("import ppdp.data.a\n")
    assert import_cycles(tmp_path) == []
    assert cycles_over(tmp_path, 0) is None
    # a lazy import inside a function closes a cycle too, and a relative one is resolved
    (pkg / "data" / "b.py").write_text("def g():\n    from .c import x\n")
    assert import_cycles(tmp_path) == [["ppdp.data.a", "ppdp.data.b", "ppdp.data.c"]]
    problem = cycles_over(tmp_path, 0)
    assert problem is not None and "ppdp.data.a, ppdp.data.b, ppdp.data.c" in problem
