"""Reading a JSON file that anyone may have written: bounded work, one-line errors.

:func:`read_json` is what the corpus, calibrator and settlement-receipt
readers share: it reads at most `limit` bytes (one more to tell a larger
file), refuses what is not UTF-8, not JSON, nested too deeply, or holds
``NaN`` / ``Infinity`` (JSON has no such numbers; Python's parser accepts
them), and raises the caller's error class with ``"<path>: <what>"``.

>>> import tempfile, pathlib
>>> from planner.retrieval.errors import CorpusError
>>> p = pathlib.Path(tempfile.mkdtemp()) / "x.json"
>>> _ = p.write_text('{"a": NaN}')
>>> read_json(p, limit=100, error=CorpusError)
Traceback (most recent call last):
...
planner.retrieval.errors.CorpusError: .../x.json: not JSON: NaN is not a JSON number
"""

from __future__ import annotations

import json

from planner.io.files import special_file

__all__ = ["read_json"]


class _NotJSON(ValueError):
    pass


def _constant(name):
    raise _NotJSON(f"{name} is not a JSON number")


def read_json(path, *, limit: int, error, what: str = "file"):
    """The parsed contents of the JSON file at `path`, or `error` (a PlannerError class) in one line."""
    kind = special_file(path)
    if kind is not None:  # a FIFO would block until a writer came
        raise error(f"{path}: is {kind}, not a {what}")
    try:
        with open(path, "rb") as f:
            raw = f.read(limit + 1)  # a device or a pipe has no size to check first
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except IsADirectoryError:
        raise error(f"{path}: is a folder, not a {what}") from None
    except OSError as e:
        raise error(f"{path}: cannot read: {e.strerror or type(e).__name__}") from None
    if len(raw) > limit:
        raise error(f"{path}: larger than {limit // 2**20} MiB: not a {what}")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise error(f"{path}: not UTF-8 text (byte {e.start})") from None
    try:
        return json.loads(text, parse_constant=_constant)
    except json.JSONDecodeError as e:
        raise error(f"{path}: line {e.lineno}, column {e.colno}: JSON syntax error: {e.msg}") from None
    except RecursionError:
        raise error(f"{path}: nested too deeply to be a {what}") from None
    except _NotJSON as e:
        raise error(f"{path}: not JSON: {e}") from None
    except ValueError:  # Python refuses to convert integers of more than 4,300 digits
        raise error(f"{path}: an integer too long to be a number") from None
