"""References into the documents resolve, and nothing points outside the repository.

Code comments cite sections of docs/semantics.md, docs/scenarios.md and docs/plugins.md as
`(docs/semantics.md, "Proportion enqueue")`, and the README, the docs and the chart's README link to
`file.md#anchors`; a renamed heading must fail here rather than leave a dangling reference.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("docs/semantics.md", "docs/scenarios.md", "docs/plugins.md")
CITATION = re.compile(r"(docs/(?:semantics|scenarios|plugins)\.md),\s*(?:#\s*)?\"([^\"]+)\"((?:\s+and\s+\"[^\"]+\")*)")
LINK = re.compile(r"\]\(([^)\s#]*\.md)?#([^)\s]+)\)")
#: The documents whose links are checked: the README, the docs and the chart's README.
LINKING = (
    "README.md",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")),
    "charts/py-volcano/README.md",
)
#: Where a user's clone would not find a file: the build notes beside the project, never shipped with it.
OUTSIDE = ("../" + "shared", "BEHAVIOUR" + ".md", "FORMAT" + ".md")


def _headings(doc: str | Path) -> list[str]:
    return [line.lstrip("#").strip() for line in (ROOT / doc).read_text().splitlines() if line.startswith("#")]


def _anchor(heading: str) -> str:
    """Return GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def _sources() -> list[Path]:
    files = [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    for folder in ("py_volcano", "tests", "e2e", "bench"):
        files += [p for p in (ROOT / folder).rglob("*") if p.suffix in (".py", ".yaml", ".md") and p.is_file()]
    return [path for path in files if path != Path(__file__).resolve()]


def test_the_documents_have_unique_headings() -> None:
    """Every heading is unique, so each citation and anchor names exactly one section."""
    for doc in DOCS:
        headings = _headings(doc)
        assert sorted({h for h in headings if headings.count(h) > 1}) == [], doc


def test_every_cited_section_exists() -> None:
    """`(docs/semantics.md, "Section")` and `"A" and "B"` name headings of that document."""
    headings = {doc: set(_headings(doc)) for doc in DOCS}
    missing = []
    for path in _sources():
        for doc, first, more in CITATION.findall(path.read_text()):
            for section in [first, *re.findall(r"\"([^\"]+)\"", more)]:
                if not section.startswith("<") and " ".join(section.split()) not in headings[doc]:
                    missing.append(f"{path.relative_to(ROOT)}: {doc}, {section!r}")
    assert missing == []


@pytest.mark.parametrize("source", LINKING)
def test_links_into_the_documents_reach_a_heading(source: str) -> None:
    """Markdown links to `#anchor`, in the same document or another, land on a heading."""
    missing = []
    for target, anchor in LINK.findall((ROOT / source).read_text()):
        doc = ((ROOT / source).parent / target).resolve() if target else ROOT / source
        if not doc.is_file() or anchor not in {_anchor(h) for h in _headings(doc)}:
            missing.append(f"{target or source}#{anchor}")
    assert missing == []


def test_nothing_points_outside_the_repository() -> None:
    """No file names the build notes that only sit beside the project; the docs here replace them."""
    found = [
        f"{path.relative_to(ROOT)}: {needle}"
        for path in _sources()
        for needle in OUTSIDE
        if needle in path.read_text()
    ]
    assert found == []
