"""The README and the pages under docs/ hold together: every relative link (and image) names a file
that exists, and a heading there when it has an anchor; every page is in the README's contents and
links back to it; every path of this repository they name (`broker/server.py`, `tests/unit/...`)
exists, so a file moved or renamed takes its mentions with it."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))

FENCED_BLOCK = re.compile(r"^```.*?^```", re.M | re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]\n]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} +(.+?) *#*$", re.M)
# A path from the repository root, starting at one of its top-level folders: the text names it
# from the root wherever it stands. Stops at a placeholder (`<topic>`) or a wildcard.
ROOMS = sorted(path.name for path in ROOT.iterdir() if path.is_dir() and not path.name.startswith("."))
REPOSITORY_PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(map(re.escape, ROOMS)) + r")/[\w./-]*)")


def prose(text: str) -> str:
    """The text without fenced code blocks and code spans, where brackets are not links."""
    return CODE_SPAN.sub("", FENCED_BLOCK.sub("", text))


def links(path: Path) -> list[str]:
    return LINK.findall(prose(path.read_text()))


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (not - or _), spaces to -."""
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor, repeats numbered as GitHub numbers them (-1, -2, ...)."""
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(prose(path.read_text())):
        slug = anchor(heading)
        found.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return found


def relative(target: str) -> bool:
    return not re.match(r"[a-z][a-z0-9+.-]*:", target)


def broken_links(path: Path) -> list[str]:
    """The relative links of a page that name no file, or no heading of the page they name."""
    broken = []
    for target in filter(relative, links(path)):
        file_part, _, fragment = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif fragment and (linked.suffix != ".md" or fragment not in anchors(linked)):
            broken.append(f"{target}: no heading #{fragment} there")
    return broken


@pytest.mark.parametrize("path", [README, *PAGES], ids=lambda path: str(path.relative_to(ROOT)))
def test_every_relative_link_resolves(path):
    assert any(map(relative, links(path))), f"{path.name} links to nothing of ours"
    assert broken_links(path) == []


def missing_paths(text: str) -> list[str]:
    """The repository paths a text names that do not exist."""
    named = {path.rstrip(".,;:") for path in REPOSITORY_PATH.findall(text)}
    return sorted(path for path in named if not (ROOT / path).exists())


@pytest.mark.parametrize("path", [README, *PAGES], ids=lambda path: str(path.relative_to(ROOT)))
def test_every_repository_path_named_exists(path):
    assert missing_paths(path.read_text()) == []


def test_a_path_that_moved_is_caught():
    text = "served by `broker/server.py` (see broker/handlers/p00_produce.py); gone: broker/wire_client.py."
    assert missing_paths(text) == ["broker/wire_client.py"]
    assert {"broker", "client", "cli", "testing", "docs"} <= set(ROOMS)


def test_the_readme_lists_every_page_and_every_page_links_back():
    listed = {(README.parent / target.partition("#")[0]).resolve() for target in links(README)
              if relative(target)}
    assert PAGES
    for page in PAGES:
        assert page.resolve() in listed, f"docs/{page.name} is not linked from the README"
        back = [target for target in links(page) if target.partition("#")[0] == "../README.md"]
        assert back, f"docs/{page.name} does not link back to the README"


def test_a_broken_link_or_anchor_is_caught(tmp_path):
    """The check can fail: a missing file and a missing heading are both reported, a link in code is not."""
    (tmp_path / "other.md").write_text("# Other page\n")
    page = tmp_path / "page.md"
    page.write_text("# A page\n\n## Some section\n\n[ok](#some-section) [ok](other.md#other-page) "
                    "[gone](missing.md) [no heading](other.md#some-section) `[in code](nowhere.md)`\n\n"
                    "```\n[in a block](nowhere.md)\n```\n[web](https://example.com/x.md)\n")
    assert broken_links(page) == ["missing.md: no such file", "other.md#some-section: no heading #some-section there"]
