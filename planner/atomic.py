"""Atomic file writes: a reader sees the previous complete file or the new complete file, never a mix.

Every file the project writes (receipts, study CSVs, reports, plots) goes
through :func:`write_text`, :func:`write_bytes` or :func:`replacing`: the data
goes to a temporary file in the target's folder, is flushed and fsynced, and
only then renamed over the target (``os.replace``, atomic on POSIX and
Windows). A full disk, a missing or read-only folder or an interrupt leaves the
previous file untouched and raises :class:`OutputError`, one line naming the
file.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> write_text(d / "a.txt", "one")
>>> (d / "a.txt").read_text()
'one'
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from planner.errors import PlannerError

__all__ = ["OutputError", "write_text", "write_bytes", "replacing"]


class OutputError(PlannerError):
    """A file could not be written (``str(err)`` names it and says why, in one line)."""


def _why(err: OSError) -> str:
    return err.strerror or type(err).__name__


@contextlib.contextmanager
def replacing(path, mode: str = "w", encoding: str | None = "utf-8"):
    """Open a temporary file beside `path`; on a clean exit it replaces `path`, on any error it is removed.

    Yields a file object opened with `mode` (``"w"`` or ``"wb"``). Devices
    such as ``/dev/stdout`` or ``/dev/full`` are written directly (they cannot
    be renamed over), so a full device still gives an :class:`OutputError`.
    """
    path = Path(path)
    if path.exists() and not path.is_file():
        if path.is_dir():
            raise OutputError(f"{path}: is a folder, not a file")
        try:  # a device or a pipe: write in place
            with open(path, mode, encoding=encoding if "b" not in mode else None) as f:
                yield f
        except OSError as e:
            raise OutputError(f"{path}: cannot write: {_why(e)}") from None
        return
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise OutputError(f"{path}: the folder {folder} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as e:
        raise OutputError(f"{path}: cannot write in {folder}: {_why(e)}") from None
    try:
        with os.fdopen(fd, mode, encoding=encoding if "b" not in mode else None) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        _remove(tmp)
        raise OutputError(f"{path}: cannot write: {_why(e)} (the previous file, if any, is unchanged)") from None
    except BaseException:
        _remove(tmp)
        raise


def _remove(tmp: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(tmp)


def write_text(path, text: str) -> None:
    """Write `text` (UTF-8) to `path` atomically."""
    with replacing(path, "w") as f:
        f.write(text)


def write_bytes(path, data: bytes) -> None:
    """Write `data` to `path` atomically."""
    with replacing(path, "wb", encoding=None) as f:
        f.write(data)
