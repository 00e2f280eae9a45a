"""Atomic file writes: a reader sees the previous complete file or the new complete file, never a mix.

Every file the project writes (receipts, study CSVs, reports, plots) goes
through :func:`write_text`, :func:`write_bytes` or :func:`replacing`: the data
goes to a temporary file in the target's folder, is flushed and fsynced, and
only then renamed over the target (``os.replace``, atomic on POSIX and
Windows). A full disk, a missing or read-only folder or an interrupt leaves the
previous file untouched and raises :class:`OutputError`, one line naming the
file. The new file gets the mode an ``open()`` would give it (the previous
file's, else 0666 less the umask), not the 0600 of a bare ``mkstemp``.

A set of files that belong together (the depth study's tables, plots and
report) is written into a fresh folder and swapped in whole by
:func:`replacing_folder`; see there for exactly what is atomic.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> write_text(d / "a.txt", "one")
>>> (d / "a.txt").read_text()
'one'
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from pathlib import Path

from planner.errors import PlannerError

__all__ = ["OutputError", "write_text", "write_bytes", "replacing", "replacing_folder", "FolderSwap",
           "recover_folder"]


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
        fd, tmp = _create_temp(folder, path)
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


def _create_temp(folder: Path, path: Path) -> tuple:
    """``(fd, name)`` of a new temporary file beside `path`.

    Opened ``O_EXCL`` with mode 0666, so the umask applies as it does to
    ``open()`` (``tempfile.mkstemp`` would force 0600 on every receipt and
    table); a file that replaces another keeps that file's mode.
    """
    for _ in range(100):
        tmp = str(folder / f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        except FileExistsError:  # pragma: no cover - 48 random bits
            continue
        with contextlib.suppress(OSError):
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        return fd, tmp
    raise FileExistsError(f"no free temporary name in {folder}")  # pragma: no cover


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


# --------------------------------------------------------------------------
# a folder of files that belong together


class FolderSwap:
    """What :func:`replacing_folder` yields: the fresh folder to write into, and whether the swap is done.

    Attributes
    ----------
    path : pathlib.Path
        The folder to write every file of the set into.
    target : pathlib.Path
        The folder it replaces (as the caller named it).
    done : bool
        True once the new folder is in place at `target` (an interrupt after
        that point leaves the new set; before it, the previous one).
    """

    def __init__(self, path: Path, target: Path):
        self.path = path
        self.target = target
        self.done = False


def _backup(real: Path) -> Path:
    return real.with_name(f".{real.name}.previous")


def _fsync_folder(path: Path) -> None:
    """Make a folder's entries (renames, new files) durable; a no-op where folders cannot be opened (Windows)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - file systems that do not sync folders
        pass
    finally:
        os.close(fd)


def recover_folder(target) -> str | None:
    """Finish or undo a folder swap that an interrupt or a crash cut short.

    :func:`replacing_folder` swaps with two renames, target -> backup
    (``.<name>.previous``) and new -> target, then removes the backup. Whatever
    point it was stopped at, this leaves one complete set at `target`:

    - no target but a backup: stopped between the two renames; the backup is
      the previous complete set and goes back (returns ``"restored"``);
    - a target and a backup: the swap was done; the old set is removed
      (returns ``"cleaned"``);
    - folders being written by a run that never swapped (``.<name>.*.new``) are
      incomplete by construction and are removed.

    Returns None when there was nothing to do.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> (d / ".out.previous").mkdir()
    >>> recover_folder(d / "out"), sorted(p.name for p in d.iterdir())
    ('restored', ['out'])
    """
    real = Path(os.path.realpath(target))
    backup = _backup(real)
    done = None
    try:
        if os.path.lexists(backup):
            if os.path.lexists(real):
                shutil.rmtree(backup)
                done = "cleaned"
            else:
                os.rename(backup, real)
                done = "restored"
        if real.parent.is_dir():
            for leftover in real.parent.glob(f".{real.name}.*.new"):
                shutil.rmtree(leftover, ignore_errors=True)
    except OSError as e:
        raise OutputError(f"{target}: cannot recover from an interrupted run ({backup.name}): {_why(e)}") from None
    return done


def _make_staging(real: Path, shown) -> Path:
    for _ in range(100):
        staging = real.with_name(f".{real.name}.{secrets.token_hex(6)}.new")
        try:
            os.mkdir(staging, 0o777)  # the umask applies, as for any new folder (mkdtemp would force 0700)
        except FileExistsError:  # pragma: no cover - 48 random bits
            continue
        except OSError as e:
            raise OutputError(f"{shown}: cannot write in {real.parent}: {_why(e)}") from None
        with contextlib.suppress(OSError):
            os.chmod(staging, os.stat(real).st_mode & 0o7777)
        return staging
    raise OutputError(f"{shown}: no free temporary name in {real.parent}")  # pragma: no cover


@contextlib.contextmanager
def replacing_folder(target, *, keep=None):
    """Write a set of files into a fresh folder that replaces `target` whole on a clean exit.

    Yields a :class:`FolderSwap`; write every file into ``swap.path``. On a
    clean exit the folder is swapped in; on any error or interrupt inside the
    block it is removed and `target` is untouched.

    What is atomic: no single step swaps two folders on POSIX, so the swap is
    two renames (target -> ``.<name>.previous``, new -> target) and the old
    set is then removed. Every file is fsynced before, and the parent folder
    after. An interrupt inside the swap is undone on the spot, and a crash
    (power, SIGKILL) by :func:`recover_folder`, which runs first on the next
    start: at every point there is one complete set, the previous one or the
    new one, never a mix. Between the two renames a concurrent *reader* can
    find no target at all for a moment; one run per folder at a time (a
    second run removes the first one's unfinished folder).

    Parameters
    ----------
    target : path
        The folder to replace (created, with its parents, if missing). A
        symlink is followed: the folder it points to is replaced.
    keep : callable, optional
        ``keep(name) -> bool`` for the names the set is made of. The swap
        discards everything in an existing `target`, so a folder holding any
        other name is refused (:class:`OutputError`) rather than emptied.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()) / "results"
    >>> with replacing_folder(d) as swap:
    ...     write_text(swap.path / "a.csv", "x\\n")
    >>> sorted(p.name for p in d.iterdir()), swap.done
    (['a.csv'], True)
    """
    shown = Path(target)
    real = Path(os.path.realpath(shown))
    parent = real.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(f"{shown}: cannot create the folder {parent}: {_why(e)}") from None
    recover_folder(real)
    if os.path.lexists(real):
        if not real.is_dir():
            raise OutputError(f"{shown}: is a file, not a folder")
        if keep is not None:
            try:
                foreign = sorted(n for n in os.listdir(real) if not keep(n))
            except OSError as e:
                raise OutputError(f"{shown}: cannot read the folder: {_why(e)}") from None
            if foreign:
                raise OutputError(f"{shown}: holds {foreign[0]!r}, which this run does not write; refusing to "
                                  "replace the folder (choose a new or empty one)")
    staging = _make_staging(real, shown)
    swap = FolderSwap(staging, shown)
    try:
        yield swap
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    backup = _backup(real)
    try:
        _fsync_folder(staging)
        previous = os.path.lexists(real)
        if previous:
            os.rename(real, backup)
        os.rename(staging, real)
        swap.done = True
        _fsync_folder(parent)
        if previous:  # a failure to remove it is not a failure of the run: the next start cleans it
            shutil.rmtree(backup, ignore_errors=True)
    except BaseException as e:
        if not swap.done:
            shutil.rmtree(staging, ignore_errors=True)
        with contextlib.suppress(OutputError):
            recover_folder(real)
        if isinstance(e, OSError):
            kept = "the new results are in place" if swap.done else "the previous results are unchanged"
            raise OutputError(f"{shown}: cannot swap the new folder in: {_why(e)} ({kept})") from None
        raise
