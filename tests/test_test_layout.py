"""Tests mirror the code they test, so a module's tests are found without searching.

``tests/<pkg>/test_<module>.py`` tests ``forwarder/<pkg>/<module>.py`` (``tests/test_<module>.py`` a
top-level module; ``tests/test_<pkg>.py`` a package's ``__init__.py``); ``tests/bench/``,
``tests/tools/`` and ``tests/handlers/`` mirror ``bench/``, ``tools/`` and ``handlers/``; a test fake's
own tests sit beside it in ``tests/receivers/``. Tests that span many modules live in the themed
folders below, and the repository-wide checks at the top. Every folder holding test modules is a
package, so two ``test_s3.py`` in different folders are different modules.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Tuple

ROOT = Path(__file__).resolve().parents[1]

# Folders of tests that span many modules: whole runs, deployments, sessions, hostile peers.
THEMED = {
    "aws": "Lambda handler, fan-out and template runs on the moto server, AWS endpoints that stall",
    "console": "command sessions in a pseudo-terminal (beside the console package's own tests)",
    "detections": "detection rules compiled and run on the forwarder's events",
    "e2e": "whole forwarder runs against the simulator and the receivers",
    "hostile": "every client or sink against peers that lie, stall or break",
    "pipeline": "whole passes of several streams as properties: delivery, strategies, clocks",
    "sentinel": "the Sentinel deployment template",
    "splunk": "the Splunk add-on: package, inputs, REST hooks, CIM",
}
REPOSITORY_CHECKS = {"test_docs.py", "test_layering.py", "test_test_layout.py"}
MIRRORED_ROOTS = {"bench": "bench", "tools": "tools", "handlers": "handlers"}
FAKES = "receivers"  # tests/receivers/test_<fake>.py tests tests/receivers/<fake>.py

# Modules under forwarder/ with a tests/<pkg>/test_<module>.py: the count may grow, never drop.
MIRRORED_AT_LEAST = 108


def modules_of_tests(root: Path) -> List[Path]:
    return sorted(path for path in (root / "tests").rglob("test_*.py") if "__pycache__" not in path.parts)


def mirror_of(root: Path, test: Path) -> List[Path]:
    """The modules ``test`` may mirror (one must exist), or [] where it needs none."""
    parts = test.relative_to(root / "tests").parts
    folders, name = parts[:-1], parts[-1][len("test_") : -len(".py")]
    if not folders:
        if parts[-1] in REPOSITORY_CHECKS:
            return []
        return [root / "forwarder" / f"{name}.py", root / "forwarder" / name / "__init__.py"]
    if folders[0] in THEMED:
        return []
    if folders == (FAKES,):
        return [root / "tests" / FAKES / f"{name}.py"]
    if folders[0] in MIRRORED_ROOTS:
        base = root / MIRRORED_ROOTS[folders[0]] / Path(*folders[1:])
    else:
        base = root / "forwarder" / Path(*folders)
    return [base / f"{name}.py", base / name / "__init__.py"]


def misplaced(root: Path) -> Dict[str, List[str]]:
    """Test modules that mirror no module, each with where its module was looked for."""
    found = {}
    for test in modules_of_tests(root):
        candidates = mirror_of(root, test)
        if candidates and not any(path.is_file() for path in candidates):
            found[str(test.relative_to(root))] = [str(path.relative_to(root)) for path in candidates]
    return found


def unpackaged(root: Path) -> List[str]:
    """Folders holding test modules without an __init__.py (same-named test modules would collide)."""
    folders = {test.parent for test in modules_of_tests(root)}
    return sorted(
        str(folder.relative_to(root)) for folder in folders if not (folder / "__init__.py").is_file()
    )


def mirrored(root: Path) -> Tuple[List[str], List[str]]:
    """The modules under forwarder/ with a mirrored test module, and those without."""
    tested, untested = [], []
    for module in sorted((root / "forwarder").rglob("*.py")):
        if module.name in ("__init__.py", "__main__.py") or "__pycache__" in module.parts:
            continue
        relative = module.relative_to(root / "forwarder")
        test = root / "tests" / relative.parent / f"test_{module.name}"
        (tested if test.is_file() else untested).append(str(module.relative_to(root)))
    return tested, untested


def test_every_test_module_outside_the_themed_folders_mirrors_a_module() -> None:
    found = misplaced(ROOT)
    assert not found, "test modules that mirror no module (move them, or theme their folder):\n" + "\n".join(
        f"{test}: no {' or '.join(candidates)}" for test, candidates in found.items()
    )


def test_every_folder_of_test_modules_is_a_package() -> None:
    assert not unpackaged(ROOT)


def test_modules_with_a_mirrored_test_module_never_get_fewer() -> None:
    tested, untested = mirrored(ROOT)
    print(f"{len(tested)} of {len(tested) + len(untested)} modules have a mirrored test module; without one:")
    print("\n".join(f"  {module}" for module in untested))
    assert len(tested) >= MIRRORED_AT_LEAST, f"modules without a mirrored test module: {untested}"


# The test of the test: a small tree in tmp_path.


def make_tree(root: Path, files: List[str]) -> Path:
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    return root


TREE = [
    "forwarder/__init__.py",
    "forwarder/app.py",
    "forwarder/state/__init__.py",
    "forwarder/state/s3.py",
    "forwarder/sinks/__init__.py",
    "forwarder/sinks/s3.py",
    "bench/backlog.py",
    "tests/__init__.py",
    "tests/test_app.py",
    "tests/test_sinks.py",
    "tests/test_docs.py",
    "tests/state/__init__.py",
    "tests/state/test_s3.py",
    "tests/sinks/__init__.py",
    "tests/sinks/test_s3.py",
    "tests/bench/__init__.py",
    "tests/bench/test_backlog.py",
    "tests/receivers/__init__.py",
    "tests/receivers/hec.py",
    "tests/receivers/test_hec.py",
    "tests/e2e/__init__.py",
    "tests/e2e/test_every_sink.py",
]


def test_a_mirrored_tree_passes(tmp_path: Path) -> None:
    root = make_tree(tmp_path, TREE)
    assert misplaced(root) == {} and unpackaged(root) == []
    assert mirrored(root) == (["forwarder/app.py", "forwarder/sinks/s3.py", "forwarder/state/s3.py"], [])


def test_a_test_module_named_after_no_module_is_found(tmp_path: Path) -> None:
    root = make_tree(tmp_path, [*TREE, "tests/state/test_s3_store.py", "tests/test_event_floats.py"])
    assert misplaced(root) == {
        "tests/state/test_s3_store.py": [
            "forwarder/state/s3_store.py",
            "forwarder/state/s3_store/__init__.py",
        ],
        "tests/test_event_floats.py": ["forwarder/event_floats.py", "forwarder/event_floats/__init__.py"],
    }


def test_a_test_module_in_a_folder_no_package_has_is_found(tmp_path: Path) -> None:
    root = make_tree(tmp_path, [*TREE, "tests/aws_stores/__init__.py", "tests/aws_stores/test_s3.py"])
    assert misplaced(root) == {
        "tests/aws_stores/test_s3.py": ["forwarder/aws_stores/s3.py", "forwarder/aws_stores/s3/__init__.py"]
    }


def test_a_folder_of_test_modules_without_init_is_found(tmp_path: Path) -> None:
    root = make_tree(tmp_path, [*TREE, "forwarder/delivery/shipper.py", "tests/delivery/test_shipper.py"])
    assert unpackaged(root) == ["tests/delivery"]


def test_a_module_whose_test_module_went_is_counted_untested(tmp_path: Path) -> None:
    root = make_tree(tmp_path, [name for name in TREE if name != "tests/state/test_s3.py"])
    assert mirrored(root) == (["forwarder/app.py", "forwarder/sinks/s3.py"], ["forwarder/state/s3.py"])
