"""Atomic file writes, and write failures as one line.

A reader (or a resumed run) never sees a half-written result, checkpoint or policy folder: files are
written to a temporary name beside the target and renamed over it; folders are built under a temporary
name and renamed into place. A failed write leaves the previous file (or nothing) and raises
`WriteError`, whose message is one line: "cannot write <path>: read-only file system", or "no space left
on <mount point> while writing <path>". Left out: Windows file locking semantics for the rename.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
_NO_SPACE_TEXT = ("no space left on device", "os error 28", "storagefull", "disk quota exceeded")


class WriteError(OSError):
    """A file or folder could not be written; `str()` is one line naming the path and the reason."""

    def __str__(self) -> str:
        return self.strerror or super().__str__()


def mount_point(path: str | Path) -> Path:
    """The mount point of the filesystem holding `path` (its nearest existing ancestor)."""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    while not os.path.ismount(p) and p != p.parent:
        p = p.parent
    return p


def write_error(exc: BaseException, path: str | Path) -> WriteError:
    """`exc` (an OSError, or a library's error wrapping one) as a one-line `WriteError` about `path`."""
    if isinstance(exc, WriteError):
        return exc
    code = getattr(exc, "errno", None)
    if code in _NO_SPACE or (code is None and any(t in str(exc).lower() for t in _NO_SPACE_TEXT)):
        return WriteError(code or errno.ENOSPC, f"no space left on {mount_point(path)} while writing {path}")
    reason = os.strerror(code).lower() if code else (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return WriteError(code or errno.EIO, f"cannot write {path}: {reason}")


def os_error_in(exc: BaseException) -> OSError | None:
    """The OSError `exc` is or was raised while handling (torch's zip writer raises a RuntimeError
    while unwinding from a full disk's OSError), or None."""
    seen: set[int] = set()
    node: BaseException | None = exc
    while node is not None and id(node) not in seen:
        if isinstance(node, OSError):
            return node
        seen.add(id(node))
        node = node.__cause__ or node.__context__
    return None


def make_dirs(path: str | Path) -> Path:
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_error(exc, path) from exc
    return path


def atomic_write(path: str | Path, write: Callable[[Path], object]) -> Path:
    """Call `write(tmp_path)` on a temporary file beside `path`, fsync it, then rename it over `path`."""
    path = Path(path)
    make_dirs(path.parent)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise write_error(exc, path) from exc
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        write(tmp_path)
        with open(tmp_path, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp_path, path)
    except Exception as exc:
        cause = os_error_in(exc)
        if cause is None:
            raise
        raise write_error(cause, path) from exc
    finally:
        if tmp_path.exists():
            tmp_path.unlink()
    return path


@contextmanager
def atomic_dir(path: str | Path) -> Iterator[Path]:
    """Yield a fresh temporary folder beside `path`; on success it replaces `path`, on failure it is removed."""
    path = Path(path)
    make_dirs(path.parent)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
        tmp.chmod(path.parent.stat().st_mode & 0o777)  # mkdtemp's 0700 would hide the folder from its readers
    except OSError as exc:
        raise write_error(exc, path) from exc
    try:
        try:
            yield tmp
        except Exception as exc:
            cause = os_error_in(exc)
            if cause is not None:
                raise write_error(cause, path) from exc
            if any(t in str(exc).lower() for t in _NO_SPACE_TEXT):  # a library's error text (safetensors)
                raise write_error(exc, path) from exc
            raise
        old = path.with_name(f".{path.name}.old")
        if path.exists():
            shutil.rmtree(old, ignore_errors=True)
            path.rename(old)
        tmp.rename(path)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write(path, lambda p: p.write_text(text, encoding="utf-8"))


def atomic_write_json(path: str | Path, data: Any) -> Path:
    return atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def kept_json(path: str | Path, compute: Callable[[], Any], parse: Callable[[Any], Any] = lambda data: data,
              ) -> tuple[Any, bool]:
    """(`parse` of the JSON kept at `path`, True), or, where there is none or it cannot be read or parsed (a torn
    write, another shape), `compute()` written there atomically and (its `parse`, False): finished work that a
    killed caller does not redo."""
    try:
        return parse(json.loads(Path(path).read_text(encoding="utf-8"))), True
    except (OSError, ValueError, KeyError, TypeError):
        data = compute()
    atomic_write_json(path, data)
    return parse(data), False


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a JSON-lines file; a torn last line (a killed writer) is ignored."""
    path = Path(path)
    if not path.exists():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return rows


def rewrite_jsonl(path: str | Path, rows: list[dict[str, Any]]) -> Path:
    """Replace a JSON-lines file atomically (used to drop rows past a resumed checkpoint)."""
    text = "".join(json.dumps(r, sort_keys=True, default=str) + "\n" for r in rows)
    return atomic_write_text(path, text)


def append_jsonl(path: str | Path, row: dict[str, Any]) -> None:
    """Append one row; a failed write is cut back off, so the file never ends in a torn line."""
    data = memoryview((json.dumps(row, sort_keys=True, default=str) + "\n").encode("utf-8"))
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        raise write_error(exc, path) from exc
    try:
        size = os.fstat(fd).st_size
        try:
            while data:
                data = data[os.write(fd, data):]
            os.fsync(fd)
        except OSError as exc:
            try:
                os.ftruncate(fd, size)
            except OSError:
                pass  # read_jsonl still stops at the torn line
            raise write_error(exc, path) from exc
    finally:
        os.close(fd)
