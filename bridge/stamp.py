"""Up-to-date checks for the main job's stages, by content: a warm re-run does nothing and says so.

``make pool label eval`` runs every stage again; a stage whose settings, code, inputs and outputs are byte for
byte what they were when it last finished would write the same files again (every stage is deterministic, and a
label run stops at a fixed point: its budget is kept per configuration, so a second run asks nothing new). So each
stage keeps a stamp beside its outputs: one digest of its settings (the command line but its verbosity), the
source of bridge's packages, and every file it reads or writes. A stage whose stamp matches prints "up to date"
and stops; ``--force`` runs it anyway. Content digests, not modification times: a copied or touched folder is not
stale, a file edited by hand, a review's new labels or a new run file is.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from bridge.fsio import write_json_atomic

STAMP_SUFFIX = ".stamp.json"
SOURCE_SUFFIXES = (".py", ".j2", ".toml", ".txt", ".html", ".js", ".css")


@cache
def code_digest() -> str:
    """The source of bridge's packages (``bridge``, ``retrievers``, ``eval``): a changed rule reruns its stages."""
    import bridge

    root = Path(bridge.__file__).resolve().parent.parent
    h = hashlib.blake2b(digest_size=16)
    for package in ("bridge", "retrievers", "eval"):
        for path in sorted((root / package).rglob("*")):
            if path.suffix in SOURCE_SUFFIXES and path.is_file() and "__pycache__" not in path.parts:
                h.update(f"{path.relative_to(root)}\0".encode())
                h.update(path.read_bytes())
    return h.hexdigest()


def _files(paths: Iterable[Path], stamp: Path, ignore: Iterable[Path]) -> list[Path]:
    """Every regular file under ``paths`` (folders recursively) but stamps and ``ignore``'s folders, sorted;
    missing paths as given."""
    skip = tuple(ignore)
    out: set[Path] = set()
    for path in paths:
        if path.is_dir():
            out.update(p for p in path.rglob("*") if p.is_file() and not p.name.endswith(STAMP_SUFFIX))
        elif path != stamp:
            out.add(path)
    return sorted(p for p in out if not any(p.is_relative_to(folder) for folder in skip))


@dataclass(frozen=True)
class StageStamp:
    """A stage's stamp file and what its digest covers."""

    path: Path
    settings: Mapping[str, Any]
    paths: tuple[Path, ...]
    """Files and folders the stage reads or writes (missing ones count as missing)."""
    extra: Mapping[str, str] = field(default_factory=dict)
    """Identities that are not files (a dataset's fingerprint)."""
    ignore: tuple[Path, ...] = ()
    """Folders inside ``paths`` that are not the stage's (another command's outputs)."""

    def digest(self) -> str:
        h = hashlib.blake2b(digest_size=16)
        h.update(json.dumps({"settings": self.settings, "extra": self.extra}, sort_keys=True).encode())
        h.update(code_digest().encode())
        for path in _files(self.paths, self.path, self.ignore):
            h.update(f"\0{path}\0".encode())
            if path.is_file():
                with path.open("rb") as handle:
                    h.update(hashlib.file_digest(handle, "blake2b").digest())
            else:
                h.update(b"missing")
        return h.hexdigest()

    def up_to_date(self) -> str | None:
        """What the stage printed when it last finished, if it finished on exactly this state; else None."""
        try:
            saved = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(saved, dict) or saved.get("digest") != self.digest():
            return None
        return str(saved.get("summary", ""))

    def write(self, summary: str) -> None:
        """Stamp the state the stage leaves, with what it printed (call after its last output is written)."""
        write_json_atomic(self.path, {"digest": self.digest(), "settings": self.settings, "summary": summary})

    def skip_line(self) -> str:
        return f"up to date: nothing changed since the last run (stamp {self.path}; --force runs it again)"


def stage_stamp(
    folder: Path,
    stage: str,
    settings: Mapping[str, Any],
    paths: Iterable[Path],
    ignore: Iterable[Path] = (),
    **extra: str,
) -> StageStamp:
    """The stamp of ``stage`` kept in ``folder`` (``.<stage>.stamp.json``) over its ``settings`` (JSON), ``paths``
    (but the folders in ``ignore``) and ``extra`` identities."""
    identities = {k: str(v) for k, v in extra.items()}
    return StageStamp(folder / f".{stage}{STAMP_SUFFIX}", dict(settings), tuple(paths), identities, tuple(ignore))
