"""The README and docs/: every link resolves inside the repository (a fresh clone has nothing beside
it), every anchor names a heading, and the README opens with its title and the two commands."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "CHANGELOG.md"]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set:
    return {slug(m.group(1)) for m in re.finditer(r"(?m)^#{1,6} (.+)$", page.read_text(encoding="utf-8"))}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_link_stays_in_the_repository_and_resolves(page):
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        assert not re.match(r"^[a-z]+:", target), f"{page.name}: {target} leaves the repository"
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists() and ROOT in linked.parents, f"{page.name}: {target}"
        if anchor and linked.suffix == ".md":
            assert anchor in anchors(linked), f"{page.name}: {target} names no heading"


def test_the_readme_opens_with_its_title_a_line_and_the_two_commands():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# ") and lines[1] == "" and lines[2] and lines[3] == ""
    block = lines[lines.index("```sh") + 1 : lines.index("```", lines.index("```sh"))]
    assert [line.split()[:2] for line in block] == [["make", "demo"], ["make", "test"]]
