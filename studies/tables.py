"""CSV tables of the studies: written whole (atomically), read back as strings.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
>>> write_csv([{"policy": "one-step", "total_loss": 1.1925}], p)
>>> read_csv(p)
[{'policy': 'one-step', 'total_loss': '1.1925'}]
"""

from __future__ import annotations

import csv
import io

from planner.io.atomic import write_bytes

__all__ = ["write_csv", "read_csv"]


def _columns(rows) -> list:
    cols: dict = {}
    for r in rows:
        for k in r:
            cols.setdefault(k, None)
    return list(cols)


def write_csv(rows, path) -> None:
    r"""Write rows (dicts) to CSV, columns in order of first appearance; floats at full precision.

    The file is replaced atomically (:func:`planner.io.atomic.write_bytes`): a
    failure raises :class:`~planner.io.atomic.OutputError` and leaves the
    previous file as it was.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
    >>> write_csv([{"a": 0.1, "b": None}, {"b": "x"}], p)
    >>> p.read_text()
    'a,b\n0.1,\n,x\n'
    """
    cols = _columns(rows)
    # built in memory and written as bytes: "\n" line ends on every platform, one atomic write
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: _cell(r.get(k)) for k in cols})
    write_bytes(path, buf.getvalue().encode("utf-8"))


def _cell(v):
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)
    return v


def read_csv(path) -> list:
    """Rows as dicts of strings (numbers as written)."""
    with open(path, encoding="utf-8") as f:
        return list(csv.DictReader(f))
