"""Each column's evidence lives in one document under docs/columns/: every profile links to an existing one, every
document is linked from a profile, and every vendor package's module docstring links to its column's document."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs" / "columns"
PROFILES = sorted((REPO / "harness_profiles").glob("*.yaml"))
PACKAGES = sorted(p.parent for p in (REPO / "runner" / "harnesses").glob("*/__init__.py"))
LINK = re.compile(r"docs/columns/([a-z0-9-]+\.md)")
# a package named otherwise than its column: the model column's is model_only, runner.model being the model endpoint
PACKAGE_COLUMN = {"model_only": "model"}


def _profile_link(profile: Path) -> str:
    """The document the profile's header comment (the comment lines it opens with) names."""
    header = []
    for line in profile.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        header.append(line)
    found = LINK.findall("\n".join(header))
    assert len(found) == 1, f"{profile.name}: its header comment should name one docs/columns/<doc>.md"
    return found[0]


def _package_links(package: Path) -> set[str]:
    docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""
    return set(LINK.findall(docstring))


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.stem)
def test_every_profile_links_to_an_existing_column_document(profile: Path) -> None:
    assert (DOCS / _profile_link(profile)).is_file(), f"{profile.name} links to a missing docs/columns document"


def test_every_column_document_is_linked_from_a_profile() -> None:
    linked = {_profile_link(p) for p in PROFILES}
    documents = {d.name for d in DOCS.glob("*.md") if d.name != "README.md"}
    assert documents, "docs/columns holds no document"
    assert documents == linked, f"documents no profile links to: {sorted(documents - linked)}"


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_every_vendor_package_links_to_its_column_document(package: Path) -> None:
    profiles = {p.stem: _profile_link(p) for p in PROFILES}
    links = _package_links(package)
    assert links, f"runner/harnesses/{package.name}/__init__.py: the module docstring names no docs/columns document"
    for link in links:
        assert (DOCS / link).is_file(), f"runner/harnesses/{package.name}: {link} does not exist"
    # the package's own column (its directory, with - for _) must be among the documents it names
    column = PACKAGE_COLUMN.get(package.name, package.name.replace("_", "-"))
    assert column in profiles, f"runner/harnesses/{package.name} has no profile harness_profiles/{column}.yaml"
    assert profiles[column] in links, f"runner/harnesses/{package.name} does not link {profiles[column]}"


def test_the_index_lists_every_document() -> None:
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    for document in DOCS.glob("*.md"):
        if document.name != "README.md":
            assert f"]({document.name})" in index, f"docs/columns/README.md does not list {document.name}"
