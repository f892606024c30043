"""Knowledge documents: Markdown or plain-text files in a folder, split into sections.

A document's title is its first `# ` heading (else its file name); an optional first-lines
`url: https://...` front matter gives its source URL. Every heading (`#` to `######`)
starts a section; text before the first heading is a section of its own. Section ids are
stable across re-indexing (`<doc_id>#<heading-slug>`, numbered when a slug repeats), so a
reply can cite them. The first-level sub-folder under the knowledge folder names the
document's collection; files at the top level belong to `DEFAULT_COLLECTION`.

Nothing here knows the database or the transport.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

DEFAULT_COLLECTION = "general"
SUFFIXES = (".md", ".markdown", ".txt")
# A help-centre page is a few KB; a file past this is a mistake (a log, an export).
MAX_DOCUMENT_BYTES = 1_000_000

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_URL_LINE = re.compile(r"^url:\s*(\S+)\s*$", re.IGNORECASE)
_SLUG_DROP = re.compile(r"[^a-z0-9]+")


class KnowledgeDocumentError(ValueError):
    """A knowledge file that cannot be indexed; the message names the file."""


@dataclass(frozen=True)
class Section:
    """One heading's text within a document (the heading is "" for text before the first)."""

    id: str
    doc_id: str
    position: int
    heading: str
    text: str


@dataclass(frozen=True)
class Document:
    """One knowledge file, parsed: its sections and the hash of its bytes."""

    doc_id: str
    collection: str
    title: str
    url: str | None
    path: str
    content_hash: str
    sections: tuple[Section, ...]


def slugify(text: str) -> str:
    """Lower-case ASCII words joined by hyphens ("Refund windows" -> "refund-windows")."""
    return _SLUG_DROP.sub("-", text.lower()).strip("-") or "section"


def doc_id_for(relative: Path) -> str:
    """The document id for a path relative to the knowledge folder, without its suffix:
    `billing/refunds.md` -> `billing/refunds`."""
    return relative.with_suffix("").as_posix()


def collection_for(relative: Path) -> str:
    """The first-level folder of `relative`, or `DEFAULT_COLLECTION` at the top level."""
    return relative.parts[0] if len(relative.parts) > 1 else DEFAULT_COLLECTION


def parse_document(
    raw: bytes, *, doc_id: str, collection: str, path: str, max_bytes: int = MAX_DOCUMENT_BYTES
) -> Document:
    """Parse one file's bytes. Raises `KnowledgeDocumentError` naming `path` when the file
    is far over `max_bytes`, is not UTF-8 text, or holds no text."""
    if len(raw) > max_bytes:
        raise KnowledgeDocumentError(
            f"{path}: {len(raw):,} bytes is over the {max_bytes:,}-byte limit for one document"
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise KnowledgeDocumentError(
            f"{path}: not UTF-8 text (byte {exc.start}); save it as UTF-8"
        ) from None
    lines = text.splitlines()
    url, lines = _front_matter(lines)
    title, sections = _split(lines, doc_id)
    if not sections:
        raise KnowledgeDocumentError(f"{path}: the document is empty")
    return Document(
        doc_id=doc_id,
        collection=collection,
        title=title or Path(path).stem.replace("-", " ").replace("_", " "),
        url=url,
        path=path,
        content_hash=hashlib.sha256(raw).hexdigest(),
        sections=tuple(sections),
    )


def load_document(root: Path, file: Path, *, max_bytes: int = MAX_DOCUMENT_BYTES) -> Document:
    """Read and parse `file`, which lies under the knowledge folder `root`."""
    relative = file.relative_to(root)
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise KnowledgeDocumentError(f"{file}: cannot be read ({exc.strerror or exc})") from None
    return parse_document(
        raw,
        doc_id=doc_id_for(relative),
        collection=collection_for(relative),
        path=str(file),
        max_bytes=max_bytes,
    )


def document_files(root: Path) -> Iterator[Path]:
    """The knowledge files under `root`, in a stable order (hidden files and README
    files are skipped: a folder's README describes the folder, it is not a document)."""
    if not root.is_dir():
        raise KnowledgeDocumentError(f"{root}: the knowledge folder does not exist")
    for file in sorted(root.rglob("*")):
        relative = file.relative_to(root)
        if any(part.startswith(".") for part in relative.parts):
            continue
        if file.suffix.lower() in SUFFIXES and file.is_file():
            if file.stem.upper() == "README":
                continue
            yield file


def load_folder(root: Path, *, max_bytes: int = MAX_DOCUMENT_BYTES) -> list[Document]:
    """Every document under `root`. The first bad file raises `KnowledgeDocumentError`."""
    return [load_document(root, file, max_bytes=max_bytes) for file in document_files(root)]


def _front_matter(lines: list[str]) -> tuple[str | None, list[str]]:
    """A `url:` line among the first non-blank lines (before any heading), or a
    `---`-fenced block holding one; the remaining lines."""
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    if start < len(lines) and lines[start].strip() == "---":
        for end in range(start + 1, len(lines)):
            if lines[end].strip() == "---":
                url = next(
                    (m.group(1) for ln in lines[start + 1 : end] if (m := _URL_LINE.match(ln))),
                    None,
                )
                return url, lines[end + 1 :]
        return None, lines
    if start < len(lines) and (match := _URL_LINE.match(lines[start].strip())):
        return match.group(1), lines[start + 1 :]
    return None, lines


def _split(lines: list[str], doc_id: str) -> tuple[str | None, list[Section]]:
    """The title (the first `# ` heading, when it opens the document's text) and sections."""
    title: str | None = None
    chunks: list[tuple[str, list[str]]] = [("", [])]
    for line in lines:
        match = _HEADING.match(line)
        if match is None:
            chunks[-1][1].append(line)
            continue
        level, heading = len(match.group(1)), match.group(2).strip()
        opening = len(chunks) == 1 and not "".join(chunks[0][1]).strip()
        if level == 1 and title is None and opening:
            title = heading
            continue
        chunks.append((heading, []))
    sections: list[Section] = []
    seen: dict[str, int] = {}
    for heading, body in chunks:
        text = "\n".join(body).strip()
        if not text and not heading:
            continue
        slug = slugify(heading) if heading else "intro"
        seen[slug] = seen.get(slug, 0) + 1
        anchor = slug if seen[slug] == 1 else f"{slug}-{seen[slug]}"
        sections.append(
            Section(
                id=f"{doc_id}#{anchor}",
                doc_id=doc_id,
                position=len(sections),
                heading=heading,
                text=text,
            )
        )
    return title, sections
