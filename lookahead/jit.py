"""``njit`` for the project's kernels: numba's, with the on-disk cache when the machine allows one.

Every kernel is compiled with ``@njit(cache=True)`` so that a new process
loads it from numba's on-disk cache instead of compiling it again (compile
times are in the README). Where no cache location is writable (a read-only
install with an unwritable ``HOME``, or a read-only ``NUMBA_CACHE_DIR``),
numba refuses ``cache=True`` when the kernel is defined, which would make
``import planner`` fail; this wrapper then compiles without the disk cache
and warns once (:class:`NoKernelCacheWarning`): the results are the same, each
new process only pays the compile time again.
"""

from __future__ import annotations

import warnings

from numba import njit as _numba_njit

__all__ = ["njit", "NoKernelCacheWarning", "cache_available", "will_compile"]

_NO_CACHE: list = []  # the first refusal, when numba had no cache location


class NoKernelCacheWarning(RuntimeWarning):
    """numba has no writable cache location: kernels are compiled in every process."""


def cache_available() -> bool:
    """True unless numba refused the on-disk cache for some kernel in this process."""
    return not _NO_CACHE


def njit(*args, cache: bool = True, **options):
    """``numba.njit`` (nopython), with ``cache=True`` falling back to no disk cache (see the module docstring)."""
    if args and callable(args[0]) and not options:
        return njit(cache=cache)(args[0])

    def decorate(fn):
        if cache and not _NO_CACHE:
            try:
                return _numba_njit(cache=True, **options)(fn)
            except RuntimeError as e:  # numba: "cannot cache function ...: no locator available"
                if "cannot cache" not in str(e):
                    raise
                _NO_CACHE.append(str(e))
                # warn_explicit with no source line: the warning prints as one line
                warnings.warn_explicit("numba cannot write its kernel cache here (no writable cache folder; set "
                                       "NUMBA_CACHE_DIR to one): compiling without it, so each new process "
                                       "compiles the kernels again", NoKernelCacheWarning, "lookahead.jit", 0)
        return _numba_njit(cache=False, **options)(fn)

    return decorate


def will_compile(*kernels) -> bool:
    """Best guess whether calling any of `kernels` will JIT-compile rather than load from the disk cache.

    True when a kernel has no disk cache (this process compiles in memory), or
    its cache index is missing or older than its source file. A guess: numba
    decides by the index's contents, and a signature not cached yet compiles
    too. Used only to tell a person at a terminal why the first run is slow.

    >>> from lookahead.search import _expectimax
    >>> will_compile(_expectimax) in (True, False)
    True
    """
    import os

    for k in kernels:
        if not cache_available():
            return True
        try:
            index = k._cache._cache_file._index_path
            source = k.py_func.__code__.co_filename
            if not os.path.exists(index) or os.path.getmtime(index) < os.path.getmtime(source):
                return True
        except (AttributeError, OSError):
            return False  # another numba layout: say nothing rather than guess
    return False
