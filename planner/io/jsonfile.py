"""Reading a JSON file that anyone may have written: bounded work, one-line errors, nothing silently lost.

:func:`read_json` is what every JSON reader of the planner shares (session
receipts, settlement receipts, corpora, calibrators). It refuses, in one
line ``"<path>: <what>"`` of the caller's error class: a path that is not a
regular file (a FIFO would block), a missing file or a folder, a file over
`limit` bytes (checked on the open file's size, then by reading one byte
more than allowed, since a file may grow or be a device), bytes that are
not UTF-8, JSON that does not parse or nests too deeply, ``NaN`` and
``Infinity`` (JSON has no such numbers; Python's parser accepts them), a
number that overflows to infinity (``1e999``), an integer of more than
4,300 digits, and a key repeated in one object (Python keeps the last one
silently). A leading byte-order mark is dropped.

>>> import tempfile, pathlib
>>> from planner.retrieval.errors import CorpusError
>>> p = pathlib.Path(tempfile.mkdtemp()) / "x.json"
>>> _ = p.write_text('{"a": NaN}')
>>> read_json(p, limit=100, error=CorpusError)
Traceback (most recent call last):
...
planner.retrieval.errors.CorpusError: .../x.json: NaN is not a JSON number
>>> _ = p.write_text('{"a": 1, "a": 2}')
>>> read_json(p, limit=100, error=CorpusError, what="corpus")
Traceback (most recent call last):
...
planner.retrieval.errors.CorpusError: .../x.json: duplicate key 'a' in one object (the last would silently win)
"""

from __future__ import annotations

import json
import math
import os

from planner.io.files import special_file

__all__ = ["read_json", "loads", "BadValue"]


class BadValue(ValueError):
    """What a value hook raises for a value JSON allows but the file must not hold (its message is shown)."""


def _finite(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):
        raise BadValue(f"the number {text[:40]} is out of range")
    return x


def _constant(name: str):
    raise BadValue(f"{name} is not a JSON number")


def _unique(pairs) -> dict:
    out = {}
    for k, v in pairs:
        if k in out:
            raise BadValue(f"duplicate key {repr(k)[:60]} in one object (the last would silently win)")
        out[k] = v
    return out


def loads(text: str, parse_int=None):
    """``json.loads`` refusing what JSON files here must not hold: NaN / Infinity, 1e999, a repeated key.

    Raises :class:`BadValue` for those (and ``json.JSONDecodeError``, ``RecursionError`` as ``json.loads``).

    >>> loads('{"a": [1, 2.5]}')
    {'a': [1, 2.5]}
    >>> loads('{"a": 1, "a": 2}')
    Traceback (most recent call last):
    ...
    planner.io.jsonfile.BadValue: duplicate key 'a' in one object (the last would silently win)
    """
    return json.loads(text, parse_float=_finite, parse_int=parse_int, parse_constant=_constant,
                      object_pairs_hook=_unique)


def read_json(path, *, limit: int, error, what: str = "file", shown: str | None = None, parse_int=None):
    """The parsed contents of the JSON file at `path`, or `error` (a PlannerError class) in one line.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    limit : int
        The most bytes the file may hold.
    error : type
        The exception class raised, with ``"<shown>: <what is wrong>"``.
    what : str
        What the file should be, for the messages (``"receipt file"``, ``"corpus"``).
    shown : str, optional
        The path as messages show it (default ``str(path)``; a caller quotes unprintable paths).
    parse_int : callable, optional
        Converts each integer's text; may raise :class:`BadValue` (a receipt's 64-bit integers).
    """
    shown = str(path) if shown is None else shown
    kind = special_file(path)
    if kind is not None:  # opening a FIFO would block until a writer came
        raise error(f"{shown}: is {kind}, not a {what}")
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > limit:  # refused before a byte is read
                raise error(_too_large(shown, size, limit, what))
            data = f.read(limit + 1)  # one byte more than allowed: the file may have grown, or be a device
    except FileNotFoundError:
        raise error(f"{shown}: no such file") from None
    except IsADirectoryError:
        raise error(f"{shown}: is a folder, not a {what}") from None
    except OSError as e:
        raise error(f"{shown}: cannot read: {e.strerror or type(e).__name__}") from None
    if len(data) > limit:
        raise error(_too_large(shown, None, limit, what))
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise error(f"{shown}: not UTF-8 text (byte {e.start})") from None
    try:
        return loads(text, parse_int=parse_int)
    except json.JSONDecodeError as e:
        raise error(f"{shown}: line {e.lineno}, column {e.colno}: JSON syntax error: {e.msg}") from None
    except RecursionError:
        raise error(f"{shown}: nested too deeply to be a {what}") from None
    except BadValue as e:
        raise error(f"{shown}: {e}") from None
    except ValueError:  # Python refuses to convert integers of more than 4,300 digits
        raise error(f"{shown}: an integer too long to be a number") from None


def _too_large(shown: str, size: int | None, limit: int, what: str) -> str:
    got = f"{size:,} bytes, " if size is not None else ""
    mib = f"{limit // 2**20} MiB ({limit:,} bytes)" if limit >= 2**20 else f"{limit:,} bytes"
    return f"{shown}: {got}larger than the {mib} a {what} may be; not a {what}"
