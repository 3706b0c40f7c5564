"""The layering rules of the code base, and the import walk that checks them (tests/test_layering.py).

Every rule lives in ``RULES`` below; ``check(root)`` returns what breaks them in the packages under
``root``. The walk is static (``ast``): it reads every import statement of the project's modules,
resolves relative imports, counts ``from package import name`` as importing ``package.name`` when that
is a module, and follows the project's own modules transitively; anything outside the project is a
leaf. An import inside a function or under ``if TYPE_CHECKING:`` is still a dependency of the module,
which the rules count, but it does not run when the module is imported, which is all a "loads" rule
asks. ``check_loaded`` asks a real interpreter too, which also sees what third-party packages and
dynamic imports load.

Two checks hold for the whole import graph of ``forwarder`` (every import, lazy and type-only ones
too: each is a dependency): no circle (``check_cycles``; importing a submodule runs its package, so
that edge, always there, is left out), and no import from a lower layer up to a higher one
(``check_layers``: ``LAYERS``, lowest first; every module has a layer, within one layer any import
goes; importing ``a.b.c`` runs the package ``a.b``, whose own imports are checked where they are).

The transport rule: urllib3's, requests', botocore's and PySocks' private parts are touched by
``forwarder.transport`` only, which checks them at import; elsewhere neither their modules (connection
pools, adapters, sessions) are imported nor their hooks named (``PRIVATE_HOOKS``, as an attribute or
a method defined).

The report rule: delivery/ imports neither the run report nor the observer. The shipper's threads
tally each stream's outcome in a value of their own, which the pipeline merges into the stream's
report, so a report has one writer at a time (tests/test_pipeline.py checks the threads).

The environment rule: the process environment is read, never written (``os.environ`` item or whole
assigned or deleted, a mutating method, ``os.putenv``/``unsetenv``): settings come from a mapping and a
proxy is an argument, so one run (a Splunk input, a tenant) cannot change what the next one reads.

The plugin rules: a sink, state store, quarantine or secret source (``PLUGIN_MODULES``, read from
the registries) is imported by its own package only; everything else reaches it through the registry,
so nothing outside a sink reads its options. The configuration names sinks by scheme and loads none.

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
ENVIRON_WRITERS = frozenset({"pop", "popitem", "update", "setdefault", "clear", "__setitem__", "__delitem__"})
ENV_SETTERS = frozenset({"putenv", "unsetenv"})
# The libraries' modules whose classes forwarder.transport overrides or whose tables it writes.
TRANSPORT_INTERNALS = frozenset(
    {
        "urllib3.connection",
        "urllib3.connectionpool",
        "urllib3.poolmanager",
        "urllib3.response",
        "urllib3.contrib",
        "urllib3.util.ssltransport",
        "requests.adapters",
        "botocore.awsrequest",
        "botocore.httpsession",
        "botocore.endpoint",
        "socks",
    }
)
# The hooks themselves, by name (forwarder.transport.watched and aws_deadline check each at import).
PRIVATE_HOOKS = frozenset(
    {
        "_new_conn",
        "_tunnel",
        "_put_conn",
        "_tunnel_host",
        "_tunnel_port",
        "ConnectionCls",
        "pool_classes_by_scheme",
        "_pool_classes_by_scheme",
        "_get_proxy_manager",
        "http_session",
        "init_poolmanager",
        "proxy_manager_for",
        "enforce_content_length",
    }
)
# The layers of forwarder/, lowest first: a module imports its own layer and those below only. A
# module is in the layer of the longest name listed that is it or a package holding it.
LAYERS: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    (
        "foundation",
        (
            "forwarder",  # the package itself: its __version__
            "forwarder.actions",
            "forwarder.causes",
            "forwarder.domains",
            "forwarder.errors",
            "forwarder.events",
            "forwarder.extras",
            "forwarder.files",
            "forwarder.health",  # a run's health summary, from its report alone (normalize/ formats it)
            "forwarder.http_headers",
            "forwarder.jsonutil",
            "forwarder.kinds",
            "forwarder.logs",
            "forwarder.observer",
            "forwarder.plugins",
            "forwarder.reading.pages",  # the paging contract a page source (api) and its reader share
            "forwarder.records",
            "forwarder.report",
            "forwarder.stop",
            "forwarder.streams",
            "forwarder.timeutil",
            "forwarder.urls",
            "forwarder.variables",
        ),
    ),
    (
        "transport",
        ("forwarder.transport", "forwarder.deadline", "forwarder.http", "forwarder.retry", "forwarder.aws"),
    ),
    (
        "clients, stores, sinks and formats",  # a sink may write a format (Security Lake: OCSF)
        (
            "forwarder.api",
            "forwarder.credentials",
            "forwarder.normalize",
            "forwarder.quarantine",
            "forwarder.secret_sources",
            "forwarder.sinks",
            "forwarder.state",
        ),
    ),
    (
        "run parts",
        (
            "forwarder.config",
            "forwarder.delivery",
            "forwarder.reading",
            "forwarder.scheduling",
        ),
    ),
    ("pipeline", ("forwarder.pipeline", "forwarder.replay", "forwarder.tenants")),
    ("runs", ("forwarder.app", "forwarder.check", "forwarder.fanout", "forwarder.multitenant")),
    (
        "interfaces",
        ("forwarder.__main__", "forwarder.cli", "forwarder.console", "forwarder.demo", "forwarder.sim"),
    ),
)


# The plugins' modules, each chosen through its kind's registry (forwarder/plugins.py): sinks, state
# stores, quarantines, secret sources. Read from the registries, so a new plugin is covered by its line.
def _plugin_modules() -> FrozenSet[str]:
    from forwarder import credentials, quarantine, sinks, state

    registries = (sinks.REGISTRY, state.STORES, quarantine.QUARANTINES, credentials.SOURCES)
    return frozenset(module for registry in registries for module in registry.modules())


PLUGIN_MODULES = _plugin_modules()
SINK_MODULES = frozenset(m for m in PLUGIN_MODULES if m.startswith("forwarder.sinks."))
CIRCLE = "import-circle"
UPWARD = "import-up"
GRAPH_RULES = (CIRCLE, UPWARD)
HEAVY_CLIENTS = frozenset({"requests", "boto3", "botocore"})


@dataclass(frozen=True)
class Rule:
    name: str
    why: str
    scope: str  # the modules the rule holds for: this module and, if a package, everything in it ("": all)
    forbidden: FrozenSet[str]  # modules (with their submodules) the scope must not import
    transitive: bool = False  # also through the project's modules the scope imports
    loads_only: bool = False  # only imports that run when the module is imported
    clock: bool = False  # also no clock reading by name (CLOCK_NAMES)
    exempt: str = ""  # a package in the scope the rule does not hold for
    attributes: FrozenSet[str] = frozenset()  # names the scope must not use, as attribute or method
    environ: bool = False  # also no write to the process environment
    own_package: bool = False  # a module may still import the forbidden modules of its own package


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
        "transport-privates-outside-the-fence",
        "only forwarder.transport touches the HTTP libraries' private hooks: it checks each at import",
        "",  # handlers/ too
        TRANSPORT_INTERNALS,
        exempt="forwarder.transport",
        attributes=PRIVATE_HOOKS,
    ),
    Rule(
        "delivery-writes-reports",
        "the shipper's threads tally each stream's outcome apart; its report has one writer (pipeline)",
        "forwarder.delivery",
        frozenset({"forwarder.report", "forwarder.observer"}),
        transitive=True,
    ),
    Rule(
        "environment-written",
        "settings come from a mapping and the proxy is an argument: no run changes what the next reads",
        "",  # handlers/ too
        frozenset(),
        environ=True,
    ),
    Rule(
        "plugins-through-their-registry",
        "a sink, state store, quarantine or secret source is chosen by its registry, and its options are "
        "read by it alone: outside its package nothing imports it, so adding one is a module and a line",
        "forwarder",
        PLUGIN_MODULES,
        own_package=True,
    ),
    Rule(
        "config-loads-sinks",
        "the configuration names sinks by scheme: importing it loads no sink (nor what a sink needs)",
        "forwarder.config",
        SINK_MODULES,
        transitive=True,
        loads_only=True,
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
    parent: bool = False  # a package run only because a module in it is imported


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
                yield Import(".".join(parts[:n]), line, at_load, parent=True)
        yield Import(name, line, at_load)

    def in_scope(self, scope: str, exempt: str = "") -> List[str]:
        """The modules in ``scope`` ("": every module) but not in ``exempt``."""
        inside = [m for m in self.files if not scope or _within(m, scope)]
        return [m for m in inside if not (exempt and _within(m, exempt))]

    def edges(self, parents: bool = True) -> Dict[str, Dict[str, int]]:
        """module -> {project module it imports: first line}, every import, without the edge to a
        package holding the module (always run before it, so never a choice of the module), and
        without ``parents`` the packages run only because a module in them is imported."""
        found: Dict[str, Dict[str, int]] = {}
        for module, imports in self.imports.items():
            targets = found.setdefault(module, {})
            for imp in imports:
                if imp.target not in self.files or imp.target == module or _within(module, imp.target):
                    continue
                if parents or not imp.parent:
                    targets.setdefault(imp.target, imp.line)
        return found


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


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
        for start in project.in_scope(rule.scope, rule.exempt):
            found.extend(_check_from(project, rule, start, forbidden))
    found.extend(check_cycles(project))
    found.extend(check_layers(project))
    return sorted(set(found), key=str)


def check_cycles(project: Project) -> List[Violation]:
    """One violation per circle (strongly connected set of modules) in the import graph, naming a
    circle through it."""
    edges = project.edges()
    found = []
    for circle in _circles(edges):
        path = _a_circle(edges, circle)  # first ... last, first
        last, first = path[-2], path[-1]
        found.append(Violation(CIRCLE, last, first, edges[last][first], tuple(path[:-2])))
    return found


def _circles(edges: Dict[str, Dict[str, int]]) -> List[List[str]]:
    """The strongly connected sets of more than one module (Tarjan, without recursion)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack = set()
    circles = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(edges[target]))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == node:
                        break
                if len(members) > 1:
                    circles.append(sorted(members))
    return circles


def _a_circle(edges: Dict[str, Dict[str, int]], members: List[str]) -> List[str]:
    """A path from the first member back to it inside ``members`` (breadth first: a shortest one)."""
    start, inside = members[0], set(members)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for target in sorted(edges[node]):
            if target == start:
                return [*paths[node], start]
            if target in inside and target not in paths:
                paths[target] = [*paths[node], target]
                queue.append(target)
    raise AssertionError(f"no circle through {start}")  # members are strongly connected


def layer_of(module: str) -> Optional[int]:
    """The index in LAYERS of ``module``'s layer (None: it has none)."""
    best: Optional[Tuple[int, int]] = None
    for number, (_, names) in enumerate(LAYERS):
        for name in names:
            matches = module == name if name == "forwarder" else _within(module, name)
            if matches and (best is None or len(name) > best[1]):
                best = (number, len(name))
    return None if best is None else best[0]


def check_layers(project: Project) -> List[Violation]:
    """Every module of forwarder/ without a layer, and every import of a module in a higher layer."""
    found = []
    edges = project.edges(parents=False)  # a package's own imports are checked where they are
    for module in project.in_scope("forwarder"):
        mine = layer_of(module)
        if mine is None:
            found.append(Violation(UPWARD, module, "no layer (add it to LAYERS in tests/layering.py)", 1))
            continue
        for target, line in edges[module].items():
            theirs = layer_of(target)
            if theirs is not None and theirs > mine:
                found.append(
                    Violation(UPWARD, module, f"{target} ({LAYERS[theirs][0]} over {LAYERS[mine][0]})", line)
                )
    return found


def _check_from(project: Project, rule: Rule, start: str, forbidden: FrozenSet[str]) -> Iterator[Violation]:
    """Breaks of ``rule`` by ``start`` or, for a transitive rule, the project modules it reaches."""
    paths: Dict[str, Tuple[str, ...]] = {start: ()}
    queue = [start]
    while queue:
        module = queue.pop(0)
        for imp in project.imports[module]:
            if rule.loads_only and not imp.at_load:
                continue
            if rule.own_package and _within(module, imp.target.rpartition(".")[0]):
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
    for node, _ in _walk(project.trees[start]) if rule.attributes else ():
        name = _named(node)
        if name in rule.attributes:
            yield Violation(rule.name, start, name, getattr(node, "lineno", 0))
    for node, _ in _walk(project.trees[start]) if rule.environ else ():
        written = _environ_write(node)
        if written:
            yield Violation(rule.name, start, written, getattr(node, "lineno", 0))


def _is_environ(node: ast.AST) -> bool:
    """``os.environ`` (or ``environ`` imported from os)."""
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def _environ_write(node: ast.AST) -> Optional[str]:
    """How ``node`` writes the process environment, if it does."""
    targets: List[ast.expr] = []
    if isinstance(node, (ast.Assign, ast.Delete)):
        targets = node.targets
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    for target in targets:
        if _is_environ(target) or (isinstance(target, ast.Subscript) and _is_environ(target.value)):
            return "os.environ"
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in ENVIRON_WRITERS and _is_environ(func.value):
        return f"os.environ.{func.attr}"
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return f"os.{name}" if name in ENV_SETTERS else None


def _named(node: ast.AST) -> Optional[str]:
    """The name an attribute access or a method (function) definition uses."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return node.name
    return None


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
