"""The import rules of docs/architecture.md, checked on the source: a lower layer never imports a
higher one, packages import each other without loops, and no shipped module imports test code.

Every ``import`` counts, also those inside functions (loaded on demand) and under
``TYPE_CHECKING`` (a type is a dependency too); :data:`EXCEPTIONS` lists the ones still to move,
each with its reason, and the test fails when one of them is gone (so the list stays true).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "commwall"

#: Layers from the bottom: a unit (a package, or a top-level module) imports its own layer and
#: those below. Same-layer units may import each other as long as no loop forms.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "_version"),
    ("units", "mpl", "checks", "megatron_args", "megatron_bridge"),
    ("scenario", "collectives", "transport"),
    ("catalog", "defaults"),
    ("phy",),
    ("topology",),
    ("routing",),
    ("cluster",),
    ("engines", "calibration"),
    ("io", "measure"),
    ("workload",),
    ("faults", "validation", "sweep"),
    ("report", "console"),
    ("commands", "cli", "__init__"),
)
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}

#: Upward imports not yet removed: (importing module, imported unit) → why it is still there.
EXCEPTIONS: dict[tuple[str, str], str] = {}


def _unit(module: str) -> str:
    """``commwall.io.chakra`` → ``io``; ``commwall`` (the package facade) → ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        if path.name.startswith("test_") or "testdata" in path.parts:
            continue
        rel = path.relative_to(SRC.parent).with_suffix("")
        name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        found[name] = path
    return found


def _imports(name: str, path: Path) -> set[str]:
    """The commwall modules ``name`` imports (``from commwall import units`` is ``commwall.units``)."""
    out = set()
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "commwall"}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))  # fmt: skip
            if base.split(".")[0] != "commwall":
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.add(sub if sub in MODULES else base)
    return out


MODULES = _modules()
EDGES = {name: _imports(name, path) for name, path in MODULES.items()}


def test_every_unit_has_a_layer() -> None:
    units = {_unit(m) for m in MODULES}
    assert units <= set(RANK), f"add to LAYERS: {sorted(units - set(RANK))}"


def test_no_lower_layer_imports_a_higher_one() -> None:
    upward = {}
    for module, targets in EDGES.items():
        for target in targets:
            a, b = _unit(module), _unit(target)
            if RANK[b] > RANK[a]:
                upward[(module.removeprefix("commwall."), b)] = target
    unexpected = {k: v for k, v in upward.items() if k not in EXCEPTIONS}
    assert not unexpected, "upward imports: " + ", ".join(
        f"{m} ({_unit('commwall.' + m)}) -> {t}" for (m, _), t in sorted(unexpected.items())
    )
    gone = set(EXCEPTIONS) - set(upward)
    assert not gone, f"no longer needed, remove from EXCEPTIONS: {sorted(gone)}"


def test_packages_import_each_other_without_loops() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for module, targets in EDGES.items():
        for target in targets:
            known = (module.removeprefix("commwall."), _unit(target)) in EXCEPTIONS
            if _unit(module) != _unit(target) and not known:
                graph[_unit(module)].add(_unit(target))
    state: dict[str, int] = {}
    loop: list[str] = []

    def visit(node: str, trail: list[str]) -> bool:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                loop.extend([*trail, node, nxt])
                return True
            if nxt not in state and visit(nxt, [*trail, node]):
                return True
        state[node] = 2
        return False

    for unit in sorted(graph):
        if unit not in state and visit(unit, []):
            break
    assert not loop, "import loop between packages: " + " -> ".join(loop)


def test_shipped_code_does_not_import_tests_or_fixtures() -> None:
    bad = sorted(
        f"{m} -> {t}"
        for m, targets in EDGES.items()
        for t in targets
        if t.rsplit(".", 1)[-1].startswith("test_") or t == "commwall.report.fixtures"
        if m != "commwall.report.fixtures"
    )
    assert not bad, bad


def test_the_engines_stand_apart() -> None:
    """The flow and packet engines share the cluster's link graph (``engines.links``) and the
    collective compiler (``engines.transfers``); neither imports the other."""
    crossing = sorted(
        f"{m} -> {t}"
        for m, targets in EDGES.items()
        for t in targets
        for a, b in (("flow", "packet"), ("packet", "flow"))
        if m.startswith(f"commwall.engines.{a}") and t.startswith(f"commwall.engines.{b}")
    )
    assert not crossing, crossing
