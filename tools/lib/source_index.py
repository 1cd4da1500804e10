"""Eunice's own source, as search_self_code reads it: the tracked source files of its
packages and docs, never its data or secrets.

What counts as source is an allowlist (``PACKAGES`` and ``TOP_FILES`` under the project
root, files ending in ``SUFFIXES``), with a denylist checked on every path part on top
of it: nothing under ``var/``, uploads, caches or hidden directories (whatever their
case), no ``.env`` and no settings module, no symlink (it could point anywhere), and
nothing under a directory the deployment keeps data in (``excluded``: the var, files,
static and scratch directories it is configured with, wherever they are put — one
moved into a package is still data). Files are read once per process and capped in
size and number, so a search is bounded whatever the tree holds. Where the tree is a
git checkout, only the files git tracks count (a scratch file or a local note dropped
into a package is not source); an installed copy without git falls back to the rules
above alone.
"""

from __future__ import annotations

import functools
import math
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGES = (
    "eunice",
    "registry",
    "conversations",
    "tools",
    "llm",
    "datacatalog",
    "docs",
    "templates",
    "static",
    "bench",
)
TOP_FILES = ("README.md", "pyproject.toml", "manage.py", "requirements.txt")
SUFFIXES = frozenset({".py", ".md", ".html", ".js", ".css", ".toml", ".txt"})
# Path parts that are never source, wherever they appear.
DENIED_PARTS = frozenset({"var", "media", "uploads", "staticfiles", "node_modules", "__pycache__", "migrations"})
MAX_FILE_BYTES = 256 * 1024
MAX_FILES = 4000

_TERM = re.compile(r"[a-z_][a-z0-9_]{2,}")
STOPWORDS = frozenset(
    "the and for are but not you all any can how does what when where which who why with this that from into "
    "its it's was were will would should could there their them then than have has had been being our out use "
    "used uses using about".split()
)


@dataclass(frozen=True, slots=True)
class SourceFile:
    path: str  # relative to the root, with forward slashes
    text: str
    folded: str  # ``text`` case-folded, for matching


@dataclass(frozen=True, slots=True)
class Match:
    path: str
    score: float
    lines: list[tuple[int, str]]  # (1-based number, the line)


def is_source(relative: Path) -> bool:
    """Whether ``relative`` (to the root) is a file search_self_code may read."""
    parts = relative.parts
    if not parts or any(part.startswith(".") or part.lower() in DENIED_PARTS for part in parts):
        return False
    name = relative.name.lower()
    if "settings" in name or "secret" in name or name.startswith(".env"):
        return False
    if len(parts) == 1:
        return relative.name in TOP_FILES
    return parts[0] in PACKAGES and relative.suffix in SUFFIXES


def _walk(root: Path) -> Iterator[Path]:
    for top in TOP_FILES:
        yield root / top
    for package in PACKAGES:
        base = root / package
        if base.is_dir() and not base.is_symlink():
            yield from sorted(base.rglob("*"))


def tracked_paths(root: Path) -> frozenset[str] | None:
    """The paths git tracks under ``root`` (relative, forward slashes), or None where
    ``root`` is not a git checkout or git cannot say (then the allowlist alone rules)."""
    if not (root / ".git").exists():
        return None
    try:
        listed = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z"], capture_output=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if listed.returncode != 0:
        return None
    return frozenset(path for path in listed.stdout.decode("utf-8", "replace").split("\0") if path)


def _inside(path: Path, directories: tuple[Path, ...]) -> bool:
    return any(path == directory or directory in path.parents for directory in directories)


@functools.cache
def source_files(root: Path, excluded: tuple[Path, ...] = ()) -> tuple[SourceFile, ...]:
    """The source files under ``root``, none under the ``excluded`` directories (the
    deployment's data), read once per process (at most MAX_FILES)."""
    found: list[SourceFile] = []
    real_root = root.resolve()
    data_dirs = tuple(directory.resolve() for directory in excluded)
    tracked = tracked_paths(root)
    for path in _walk(root):
        if len(found) >= MAX_FILES:
            break
        relative = path.relative_to(root)
        if path.is_symlink() or not path.is_file() or not is_source(relative):
            continue
        if tracked is not None and relative.as_posix() not in tracked:
            continue
        # What the path really is, past any link in a parent: inside the tree, outside the data.
        real = path.resolve()
        if real_root not in real.parents or _inside(real, data_dirs):
            continue
        if path.stat().st_size > MAX_FILE_BYTES:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        found.append(SourceFile(relative.as_posix(), text, text.casefold()))
    return tuple(found)


def terms_of(query: str) -> list[str]:
    """The words of ``query`` worth matching: identifiers whole and split at underscores."""
    words: list[str] = []
    for word in _TERM.findall(query.casefold()):
        for term in (word, *word.strip("_").split("_")):
            if len(term) > 2 and term not in STOPWORDS and term not in words:
                words.append(term)
    return words


def search(files: tuple[SourceFile, ...], query: str, *, limit: int, lines_each: int = 3) -> list[Match]:
    """The files that best match ``query``, best first, each with its best lines.

    A file scores by each term's rarity across the files times how often it occurs
    there (dampened), more for a term in its path, and most for the whole query.
    """
    terms = terms_of(query)
    phrase = " ".join(query.casefold().split())
    if not terms and len(phrase) < 3:
        return []
    counts = {term: [f.folded.count(term) for f in files] for term in terms}
    rarity = {term: math.log((1 + len(files)) / (1 + sum(1 for n in counts[term] if n))) + 1 for term in terms}
    scored = []
    for i, source in enumerate(files):
        score = sum(rarity[t] * (math.log1p(counts[t][i]) + 2 * (t in source.path)) for t in terms)
        if len(phrase) >= 3 and phrase in source.folded:
            score += 5 + 2 * sum(rarity.values())
        if score > 0:
            scored.append((score, source))
    scored.sort(key=lambda pair: (-pair[0], pair[1].path))
    return [Match(s.path, round(score, 2), best_lines(s, terms, phrase, lines_each)) for score, s in scored[:limit]]


def best_lines(source: SourceFile, terms: list[str], phrase: str, limit: int) -> list[tuple[int, str]]:
    """The lines of ``source`` with the most distinct terms, in file order: the whole phrase
    first, then a line that defines a term (``def term``, ``term = …``) before one that uses it."""
    ranked = []
    for number, line in enumerate(source.folded.splitlines(), 1):
        hits = sum(1 for t in terms if t in line) + (len(terms) + 1) * (len(phrase) >= 3 and phrase in line)
        if hits:
            hits += 2 * any(_defines(line.lstrip(), t) for t in terms)
            ranked.append((hits, number))
    chosen = sorted(number for _, number in sorted(ranked, key=lambda pair: (-pair[0], pair[1]))[:limit])
    lines = source.text.splitlines()
    return [(number, lines[number - 1].strip()[:200]) for number in chosen]


def _defines(line: str, term: str) -> bool:
    for opening in ("def ", "async def ", "class ", ""):
        if line.startswith(opening + term):
            rest = line[len(opening) + len(term) :]
            return rest[:1] in ("(", ":", " ", "=", "")
    return False
