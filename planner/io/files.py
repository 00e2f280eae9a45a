"""What the readers ask of a path before they open it: a regular file, not a FIFO or a device.

Opening a FIFO for reading blocks until a writer comes (forever, for a
typo'd path); reading a device such as ``/dev/zero`` never ends, and SQLite
writes a ``-journal`` file beside a device node it is pointed at. Domain
files, receipts and outcome logs are therefore refused at once, with one
line, when the path is anything but a regular file (a symbolic link to one
is fine).
"""

from __future__ import annotations

import os
import stat

__all__ = ["special_file"]

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def special_file(path) -> str | None:
    """What `path` is when it exists and is neither a regular file nor a folder ("a FIFO (named pipe)", ...).

    None for a regular file, a folder, a missing path or one that cannot be
    examined (the caller's own open then reports it). The check does not
    open the path, so it never blocks.

    Examples
    --------
    >>> import os
    >>> special_file(os.devnull)
    'a character device'
    >>> import planner
    >>> special_file(planner.DOMAINS / "payment_release.yaml") is None
    True
    """
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return None
