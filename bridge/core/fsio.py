"""File helpers shared by every stage: atomic writes and durable JSONL appends.

A stage never leaves a half-written output behind: files are written to a temporary
sibling and renamed into place, and append-only logs are flushed and fsynced per record.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO[Any]]:
    """Open a temporary file next to ``path``; rename it over ``path`` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp creates 0600; outputs get the usual permissions
    try:
        handle = os.fdopen(fd, mode) if "b" in mode else os.fdopen(fd, mode, encoding=encoding, newline="")
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _read_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _read_umask()  # read once at import: os.umask can only be read by setting it


def write_text_atomic(path: str | Path, text: str) -> None:
    with atomic_write(path) as handle:
        handle.write(text)


def write_json_atomic(path: str | Path, obj: Any) -> None:
    write_text_atomic(path, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def copy_atomic(source: str | Path, target: str | Path) -> bool:
    """Copy ``source`` to ``target`` unless ``target`` already holds the same bytes; a kill mid-copy leaves
    ``target`` as it was (never half a file). Returns whether it wrote."""
    data = Path(source).read_bytes()
    target = Path(target)
    if target.exists() and target.read_bytes() == data:
        return False
    with atomic_write(target, "wb") as handle:
        handle.write(data)
    return True


class JsonlAppender:
    """Append-only JSONL log that survives ``kill -9``: each record is flushed and fsynced.

    A record torn by a crash (a last line without newline) is cut off when the file is reopened,
    so the log always holds whole records only.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        truncate_torn_tail(self.path)
        self._handle = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()

    def append(self, record: dict[str, Any]) -> None:
        self._handle.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> JsonlAppender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def truncate_torn_tail(path: Path) -> None:
    """Drop a trailing partial line (no final newline) left by an interrupted append; a whole record that only
    lacks its newline (the kill fell between the two) is kept and given one, as the readers count it."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with open(path, "rb+") as handle:
        handle.seek(-1, os.SEEK_END)
        if handle.read(1) == b"\n":
            return
        handle.seek(0)
        data = handle.read()
        start = data.rfind(b"\n") + 1
        if _is_record(data[start:]):
            handle.write(b"\n")
        else:
            handle.truncate(start)


def _is_record(raw: bytes) -> bool:
    try:
        return isinstance(json.loads(raw.decode("utf-8")), dict)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return False


def read_jsonl(path: str | Path, *, append_log: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, record); a malformed line raises an error naming file and line.

    ``append_log``: the file is an append-only log (:class:`JsonlAppender`), whose last line a kill may have cut:
    that one line (no final newline, does not parse) is skipped with a warning instead of blocking every later
    command; the next append cuts it off. Any other malformed line is still an error."""
    from bridge.core.errors import InputError

    with open(path, "rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            torn = append_log and not raw.endswith(b"\n")  # only the last line can lack its newline
            try:
                line = raw.decode("utf-8")
                if not line.strip():
                    continue
                record = json.loads(line)
            except UnicodeDecodeError as exc:
                if torn:
                    _warn_torn(Path(path), lineno)
                    return
                raise InputError(f"not UTF-8 text (byte {exc.start + 1} of the line)", path=path, line=lineno) from None
            except json.JSONDecodeError as exc:
                if torn:
                    _warn_torn(Path(path), lineno)
                    return
                raise InputError(f"not valid JSON ({exc.msg})", path=path, line=lineno) from None
            if not isinstance(record, dict):
                raise InputError("expected a JSON object", path=path, line=lineno)
            yield lineno, record


_TORN_WARNED: set[tuple[Path, int]] = set()
"""Torn lines already reported: a command reads labels.jsonl several times but says so once."""


def _warn_torn(path: Path, lineno: int) -> None:
    key = (path.resolve(), lineno)
    if key not in _TORN_WARNED:
        _TORN_WARNED.add(key)
        log.warning("%s line %d was cut by an interrupted write; ignored, it will be judged again", path, lineno)


def read_utf8(path: str | Path) -> str:
    """A text file's content; bytes that are not UTF-8 are one :class:`InputError` naming the line."""
    return read_decoded(lambda p: p.read_text(encoding="utf-8"), path)


def read_decoded(reader: Callable[[Path], T], path: str | Path) -> T:
    """``reader(path)`` (a reader that decodes the file as UTF-8); bytes that are not UTF-8 are one
    :class:`InputError` naming the line (:func:`decode_error`)."""
    try:
        return reader(Path(path))
    except UnicodeDecodeError:
        raise decode_error(path) from None


def decode_error(path: str | Path) -> Exception:
    """A text file's bad bytes as one :class:`InputError` naming the first line that is not UTF-8 (the readers
    decode whole files for speed and look for the line only when that fails)."""
    from bridge.core.errors import InputError

    with open(path, "rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                return InputError(f"not UTF-8 text (byte {exc.start + 1} of the line)", path=path, line=lineno)
    return InputError("not UTF-8 text", path=path)


def cache_key(dataset_fingerprint: str, fingerprint: Mapping[str, Any]) -> str:
    """A short hash of a dataset's identity and an artifact's fingerprint (model, parameters)."""
    payload = json.dumps({"dataset": dataset_fingerprint, "retriever": dict(fingerprint)}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def artifact_dir(
    cache_dir: Path, dataset_slug: str, dataset_fingerprint: str, name: str, fingerprint: Mapping[str, Any]
) -> Path:
    """Cache folder of an index or encoding: ``<cache>/<dataset>/<name>-<key>``. Everything that needs the
    same artifact (a Lucene index, a model's passage embeddings) shares it; any change to its inputs gives a
    new folder."""
    return cache_dir / dataset_slug / f"{name}-{cache_key(dataset_fingerprint, fingerprint)}"
