"""Which of the project's modules a runtime can import: the closure of its entry modules over every
import statement (at any depth: lazy imports inside functions count) and over the registries (a
package whose ``__init__`` imports by name ships whole). The Lambda package and the Splunk add-on
carry exactly that closure, so neither ships the simulator, the CLI or the other runtime's adapters.

    python tools/runtime_modules.py prune DIR ENTRY...   keep in DIR/forwarder only the closure
    python tools/runtime_modules.py list ENTRY...        print the closure
"""

from __future__ import annotations

import ast
import shutil
import sys
from pathlib import Path
from typing import Iterable, Iterator, List, Optional, Set

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("forwarder", "handlers")
LAMBDA_ENTRIES = ("handlers.aws_lambda", "handlers.aws_planner", "handlers.aws_worker")
SPLUNK_ENTRIES = ("handlers.splunk_input", "handlers.splunk_settings", "handlers.splunk_hooks")


def path_of(module: str, root: Path = ROOT) -> Optional[Path]:
    base = root.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def _is_package(module: str, root: Path) -> bool:
    return (root.joinpath(*module.split(".")) / "__init__.py").exists()


def _imported(module: str, path: Path, root: Path) -> Iterator[str]:
    """Every project module ``module`` names in an import, and the registries' whole packages."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)  # `from pkg import module`
        elif isinstance(node, ast.Attribute) and node.attr == "import_module" and path.name == "__init__.py":
            yield from (f"{package}.{p.stem}" for p in path.parent.glob("*.py") if p.stem != "__init__")


def closure(entries: Iterable[str], root: Path = ROOT) -> Set[str]:
    """The project modules (dotted names, packages as their own name) ``entries`` can import."""
    found: Set[str] = set()
    todo: List[str] = list(entries)
    while todo:
        module = todo.pop()
        if module in found or module.split(".")[0] not in PACKAGES:
            continue
        path = path_of(module, root)
        if path is None:  # `from pkg import name` where name is not a module
            continue
        found.add(module)
        parts = module.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # the parents' __init__
        todo.extend(_imported(module, path, root))
    return {m for m in found if path_of(m, root) is not None}


def files(modules: Iterable[str], root: Path = ROOT) -> Set[Path]:
    return {p.relative_to(root) for p in (path_of(m, root) for m in modules) if p is not None}


def prune(target: Path, entries: Iterable[str]) -> List[Path]:
    """Keep in ``target`` (an install directory holding ``forwarder/``) only the closure of
    ``entries``, copying the adapters from ``handlers/`` here; returns what was removed."""
    keep = files(closure(entries))
    removed = []
    for path in sorted((target / "forwarder").rglob("*.py")):
        relative = path.relative_to(target)
        if relative not in keep:
            path.unlink()
            removed.append(relative)
    for relative in sorted(p for p in keep if p.parts[0] == "handlers"):
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / relative, target / relative)
    for cache in list((target / "forwarder").rglob("__pycache__")):
        shutil.rmtree(cache)
    for directory in sorted((target / "forwarder").rglob("*"), reverse=True):
        if directory.is_dir() and not any(directory.iterdir()):
            directory.rmdir()  # an empty folder would still import, as a namespace package
    return removed


def main(argv: List[str]) -> int:
    if len(argv) >= 2 and argv[0] == "list":
        print("\n".join(sorted(closure(argv[1:]))))
        return 0
    if len(argv) >= 3 and argv[0] == "prune":
        removed = prune(Path(argv[1]), argv[2:])
        print(f"runtime_modules: {len(removed)} modules the runtime never imports left out")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
