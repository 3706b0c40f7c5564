"""The layering rules of the code base, and the import walk that checks them (tests/test_layering.py).

Every rule lives in ``RULES`` below; ``check(root)`` returns what breaks them in the packages under
``root``. The walk is static (``ast``): it reads every import statement of the project's modules,
resolves relative imports, counts ``from package import name`` as importing ``package.name`` when that
is a module, and follows the project's own modules transitively; anything outside the project is a
leaf. An import inside a function or under ``if TYPE_CHECKING:`` is still a dependency of the module,
which the rules count, but it does not run when the module is imported, which is all a "loads" rule
asks. ``check_loaded`` asks a real interpreter too, which also sees what third-party packages and
dynamic imports load.

The clock rule: normalize/ is pure, so it reads no clock. It imports no ``time`` module, and reaches
none of the clock readers ``now``, ``utcnow``, ``today`` (datetime, date) or the forwarder's own
``now_us``, neither as an attribute (``datetime.now``, ``timeutil.now_us``) nor by importing it; a
local variable that happens to be called ``now`` reads no clock. The ingest time comes in
``NormalizeOptions.ingest_time_us``.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, FrozenSet, Iterator, List, Optional, Sequence, Tuple

# Importing any of these (or a submodule) is I/O: network, files, processes or the clock.
IO_MODULES = frozenset(
    {
        "requests",
        "urllib3",
        "boto3",
        "botocore",
        "s3transfer",
        "socket",
        "ssl",
        "select",
        "selectors",
        "urllib.request",
        "http.client",
        "http.server",
        "os",
        "pathlib",
        "io",
        "shutil",
        "tempfile",
        "glob",
        "subprocess",
        "sqlite3",
        "time",
    }
)
CLOCK_NAMES = frozenset({"now", "utcnow", "today", "now_us"})
HEAVY_CLIENTS = frozenset({"requests", "boto3", "botocore"})


@dataclass(frozen=True)
class Rule:
    name: str
    why: str
    scope: str  # the modules the rule holds for: this module and, if a package, everything in it
    forbidden: FrozenSet[str]  # modules (with their submodules) the scope must not import
    transitive: bool = False  # also through the project's modules the scope imports
    loads_only: bool = False  # only imports that run when the module is imported
    clock: bool = False  # also no clock reading by name (CLOCK_NAMES)


RULES: Tuple[Rule, ...] = (
    Rule(
        "forwarder-imports-runtimes",
        "the core knows nothing of its runtimes: handlers/ and the Splunk add-on import forwarder/",
        "forwarder",
        frozenset({"handlers", "splunk_app"}),  # plus the add-on's bin/ scripts, added by check()
    ),
    Rule(
        "normalize-does-io",
        "normalizers are pure functions of the record and NormalizeOptions: no network, files or clock",
        "forwarder.normalize",
        IO_MODULES,
        transitive=True,
        clock=True,
    ),
    Rule(
        "sinks-import-state",
        "a sink delivers bytes; committing state is the delivery layer's job",
        "forwarder.sinks",
        frozenset({"forwarder.state"}),
        transitive=True,
    ),
    Rule(
        "pipeline-reads-through-the-face",
        "the pipeline reads a pass through reading.pass_: the API, strategies and paging stay behind it",
        "forwarder.pipeline",
        frozenset(
            {
                "forwarder.api",
                "forwarder.reading.trail",
                "forwarder.reading.windows",
                "forwarder.reading.strategy",
                "forwarder.reading.pages",
            }
        ),
    ),
    Rule(
        "pipeline-loads-clients",
        "the pipeline is orchestration: importing it must not load an HTTP or AWS client",
        "forwarder.pipeline",
        HEAVY_CLIENTS,
        transitive=True,
        loads_only=True,
    ),
)


@dataclass(frozen=True)
class Import:
    target: str  # absolute module name
    line: int
    at_load: bool  # runs when the importing module is imported


@dataclass(frozen=True)
class Violation:
    rule: str
    module: str
    target: str
    line: int
    via: Tuple[str, ...] = ()  # the project modules between the rule's module and ``module``

    def __str__(self) -> str:
        path = " -> ".join((*self.via, self.module))
        where = f"line {self.line}" if self.line else "seen in sys.modules"
        return f"{self.rule}: {path} uses {self.target} ({where})"


class Project:
    """The modules of the packages under ``root``, and what each imports."""

    def __init__(self, root: Path, packages: Sequence[str]) -> None:
        self.root = root
        self.files: Dict[str, Path] = {}
        for package in packages:
            for path in sorted((root / package).rglob("*.py")):
                parts = path.relative_to(root).with_suffix("").parts
                name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
                self.files[name] = path
        self.trees = {name: ast.parse(path.read_text(), str(path)) for name, path in self.files.items()}
        self.imports = {name: list(self._imports(name)) for name in self.files}

    def _imports(self, module: str) -> Iterator[Import]:
        is_package = self.files[module].name == "__init__.py"
        for node, at_load in _walk(self.trees[module]):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield from self._with_parents(alias.name, node.lineno, at_load)
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(module, is_package, node.module, node.level)
                yield from self._with_parents(base, node.lineno, at_load)
                for alias in node.names:
                    if f"{base}.{alias.name}" in self.files:  # ``from . import submodule``
                        yield Import(f"{base}.{alias.name}", node.lineno, at_load)

    def _with_parents(self, name: str, line: int, at_load: bool) -> Iterator[Import]:
        """Importing a.b.c runs a, a.b and a.b.c (the project's packages matter for the walk)."""
        parts = name.split(".")
        for n in range(1, len(parts)):
            if ".".join(parts[:n]) in self.files:
                yield Import(".".join(parts[:n]), line, at_load)
        yield Import(name, line, at_load)

    def in_scope(self, scope: str) -> List[str]:
        return [m for m in self.files if m == scope or m.startswith(scope + ".")]


def _absolute(module: str, is_package: bool, name: Optional[str], level: int) -> str:
    if level == 0:
        return name or ""
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


def _walk(tree: ast.Module) -> Iterator[Tuple[ast.AST, bool]]:
    """Every node with whether it runs at import time (not in a function, not under TYPE_CHECKING)."""
    stack: List[Tuple[ast.AST, bool]] = [(tree, True)]
    while stack:
        node, at_load = stack.pop()
        yield node, at_load
        for child in ast.iter_child_nodes(node):
            runs = at_load and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(node, ast.If) and _is_type_checking(node.test) and child in node.body:
                runs = False
            stack.append((child, runs))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _matches(target: str, forbidden: FrozenSet[str]) -> bool:
    return any(target == f or target.startswith(f + ".") for f in forbidden)


def check(root: Path, packages: Sequence[str] = ("forwarder", "handlers")) -> List[Violation]:
    """Every break of ``RULES`` in the packages under ``root``."""
    project = Project(root, packages)
    addon = frozenset(p.stem for p in (root / "splunk_app").rglob("*.py"))
    found: List[Violation] = []
    for rule in RULES:
        forbidden = rule.forbidden | addon if "splunk_app" in rule.forbidden else rule.forbidden
        for start in project.in_scope(rule.scope):
            found.extend(_check_from(project, rule, start, forbidden))
    return sorted(set(found), key=str)


def _check_from(project: Project, rule: Rule, start: str, forbidden: FrozenSet[str]) -> Iterator[Violation]:
    """Breaks of ``rule`` by ``start`` or, for a transitive rule, the project modules it reaches."""
    paths: Dict[str, Tuple[str, ...]] = {start: ()}
    queue = [start]
    while queue:
        module = queue.pop(0)
        for imp in project.imports[module]:
            if rule.loads_only and not imp.at_load:
                continue
            if _matches(imp.target, forbidden):
                yield Violation(rule.name, module, imp.target, imp.line, paths[module])
            elif rule.transitive and imp.target in project.files and imp.target not in paths:
                paths[imp.target] = (*paths[module], module)
                queue.append(imp.target)
    if rule.clock:
        for node, _ in _walk(project.trees[start]):
            name = _clock_name(node)
            if name:
                yield Violation(rule.name, start, name, getattr(node, "lineno", 0))


def _clock_name(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Attribute) and node.attr in CLOCK_NAMES:
        return node.attr
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return next((a.name for a in node.names if a.name.split(".")[-1] in CLOCK_NAMES), None)
    return None


def check_loaded(root: Path) -> List[Violation]:
    """The "loads" rules asked of a fresh interpreter, which also sees what third-party packages and
    dynamic imports load: the forbidden modules it holds after importing each rule's module."""
    found: List[Violation] = []
    for rule in RULES:
        if rule.loads_only:
            loaded = set(_loaded_modules(root, rule.scope))
            found.extend(Violation(rule.name, rule.scope, m, 0) for m in sorted(rule.forbidden & loaded))
    return found


def _loaded_modules(root: Path, module: str) -> List[str]:
    code = f"import json, sys; import {module}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    if out.returncode:
        raise RuntimeError(f"importing {module} failed:\n{out.stderr}")
    loaded: List[str] = json.loads(out.stdout)
    return loaded
