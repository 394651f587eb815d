"""Up-to-date checks for the main job's stages, by content: a warm re-run does nothing and says so.

``make pool label eval`` runs every stage again; a stage whose settings, code, inputs and outputs are byte for
byte what they were when it last finished would write the same files again (every stage is deterministic, and a
label run stops at a fixed point: its budget is kept per configuration, so a second run asks nothing new). So each
stage keeps a stamp beside its outputs: one digest of its settings (the command line but its verbosity), the
source of bridge's packages and the versions of the libraries it computes with, and every file it reads or writes.
A stage whose stamp matches prints "up to date" and stops; ``--force`` runs it anyway. Content digests, not
modification times: a copied or touched folder is not stale; a file edited by hand, a review's new labels or a new
run file is.

The retrieve stage keeps one stamp per system run (``runs/<ds>/.meta/.<system>.stamp.json``, over the run's
settings and its run file) without the code digest (``with_code=False``): a retriever's fingerprint names what
changes its results (model digests, parameters, prompt templates), and an unrelated edit of bridge's code must not
re-run hours of encoding or LLM calls.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from bridge.core.fsio import write_json_atomic
from bridge.core.layout import RUN_STAMPS

STAMP_SUFFIX = ".stamp.json"
SOURCE_SUFFIXES = (".py", ".j2", ".toml", ".txt", ".html", ".js", ".css")


DEPENDENCIES = (
    "faiss-cpu", "ir-measures", "llama-cpp-python", "numpy", "pyserini", "pytrec-eval-terrier", "scikit-learn",
    "scipy", "sentence-transformers", "torch", "transformers",
)  # fmt: skip
"""The installed libraries whose versions are part of every stamp: a new version may change a result."""


@cache
def code_digest() -> str:
    """The source of the ``bridge`` package and the versions of the libraries it computes with: a changed rule or
    library reruns its stages."""
    from importlib import metadata

    root = Path(__file__).resolve().parents[2]  # above bridge/
    h = hashlib.blake2b(digest_size=16)
    for name in DEPENDENCIES:
        try:
            h.update(f"{name}=={metadata.version(name)}\0".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{name} absent\0".encode())
    for path in sorted((root / "bridge").rglob("*")):
        if path.suffix in SOURCE_SUFFIXES and path.is_file() and "__pycache__" not in path.parts:
            h.update(f"{path.relative_to(root)}\0".encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def _files(paths: Iterable[Path], stamp: Path, ignore: Iterable[Path] = ()) -> list[Path]:
    """Every regular file under ``paths`` (folders recursively) but stamps and what lies under ``ignore``, sorted;
    missing paths as given."""
    out: set[Path] = set()
    skipped = tuple(ignore)
    for path in paths:
        if path.is_dir():
            out.update(
                p for p in path.rglob("*")
                if p.is_file() and not p.name.endswith(STAMP_SUFFIX) and not any(p.is_relative_to(i) for i in skipped)
            )  # fmt: skip
        elif path != stamp:
            out.add(path)
    return sorted(out)


@dataclass(frozen=True)
class StageStamp:
    """A stage's stamp file and what its digest covers."""

    path: Path
    settings: Mapping[str, Any]
    paths: tuple[Path, ...]
    """Files and folders the stage reads or writes (missing ones count as missing)."""
    extra: Mapping[str, str] = field(default_factory=dict)
    """Identities that are not files (a dataset's fingerprint)."""
    with_code: bool = True
    """Whether the code digest (:func:`code_digest`) is covered; False where the settings already name what
    changes the stage's result (retrieve: the retriever's fingerprint)."""
    ignore: tuple[Path, ...] = ()
    """Folders under ``paths`` the stage neither reads nor writes (another stage's outputs kept there)."""

    def digest(self, outputs: Iterable[Path] = ()) -> str:
        """One digest of the settings, the code (``with_code``), ``extra`` and the bytes of every file under
        ``paths`` and ``outputs`` (the files a stage wrote, recorded in its stamp)."""
        h = hashlib.blake2b(digest_size=16)
        h.update(json.dumps({"settings": self.settings, "extra": self.extra}, sort_keys=True).encode())
        if self.with_code:
            h.update(code_digest().encode())
        for path in _files([*self.paths, *outputs], self.path, self.ignore):
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
        if not isinstance(saved, dict) or not isinstance(saved.get("outputs", []), list):
            return None
        if saved.get("digest") != self.digest(Path(p) for p in saved.get("outputs", [])):
            return None
        return str(saved.get("summary", ""))

    def write(self, summary: str, outputs: Iterable[Path] = ()) -> None:
        """Stamp the state the stage leaves, with what it printed and the files it wrote that ``paths`` does not
        cover (call after its last output is written)."""
        written = sorted({str(p) for p in outputs})
        stamp = {"digest": self.digest(Path(p) for p in written), "settings": self.settings, "summary": summary}
        write_json_atomic(self.path, {**stamp, "outputs": written})

    def skip_message(self, force: bool) -> str | None:
        """What a stage prints instead of running when it is up to date and not forced; None: run it."""
        saved = None if force else self.up_to_date()
        if saved is None:
            return None
        stage = self.path.name.removeprefix(".").removesuffix(STAMP_SUFFIX)
        why = f"nothing changed since the last run (stamp {self.path}; --force runs it again)"
        return f"{stage}: up to date: {why}\n{saved}"


def run_families(run_dir: Path) -> dict[str, str]:
    """System -> retrieval family of every run in ``run_dir`` that ``bridge retrieve`` made: its stamp
    (``.meta/.<system>.stamp.json``) records the family, so the label stage's value order and the evaluation group
    pairs by the same families without reading the pool files (a run with no stamp is absent: its own family)."""
    families = {}
    for path in sorted((run_dir / RUN_STAMPS).glob(f".*{STAMP_SUFFIX}")):
        try:
            settings = json.loads(path.read_text(encoding="utf-8")).get("settings", {})
        except (OSError, ValueError, AttributeError):
            continue  # a stamp is a cache record: one that cannot be read says nothing
        if isinstance(settings, dict) and isinstance(settings.get("system"), str) and settings.get("family"):
            families[settings["system"]] = str(settings["family"])
    return families


def family_of_each(systems: Iterable[str], families: Mapping[str, str] | None) -> dict[str, str]:
    """Every system's retrieval family: its own name where ``families`` (stamps, a pool file) names none."""
    known = families or {}
    return {system: known.get(system, system) for system in systems}


def stage_stamp(
    folder: Path,
    stage: str,
    settings: Mapping[str, Any],
    paths: Iterable[Path],
    with_code: bool = True,
    ignore: Iterable[Path] = (),
    **extra: str,
) -> StageStamp:
    """The stamp of ``stage`` kept in ``folder`` (``.<stage>.stamp.json``) over its ``settings`` (JSON), ``paths``
    and ``extra`` identities (and the code, unless ``with_code`` is False)."""
    identities = {k: str(v) for k, v in extra.items()}
    return StageStamp(
        folder / f".{stage}{STAMP_SUFFIX}", dict(settings), tuple(paths), identities, with_code, tuple(ignore)
    )
