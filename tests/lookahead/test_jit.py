"""Without a writable numba cache, kernels still compile (without the disk cache), with one warning."""

from __future__ import annotations

import warnings

import pytest

import lookahead.jit as jit


def test_no_cache_location_falls_back_to_compiling_without_the_cache(monkeypatch):
    real = jit._numba_njit
    calls = []

    def refusing(*args, **kw):
        calls.append(kw.get("cache"))
        if kw.get("cache"):
            def fail(fn):
                raise RuntimeError(f"cannot cache function {fn.__name__!r}: no locator available for file 'x.py'")
            return fail
        return real(*args, **kw)

    monkeypatch.setattr(jit, "_numba_njit", refusing)
    monkeypatch.setattr(jit, "_NO_CACHE", [])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")

        @jit.njit(cache=True)
        def add(x):
            return x + 1

        @jit.njit(cache=True, inline="always")
        def twice(x):
            return 2 * x

    assert add(1) == 2 and twice(3) == 6
    assert calls == [True, False, False]  # refused once; the next kernel does not even ask
    assert [w.category for w in caught] == [jit.NoKernelCacheWarning]
    assert "\n" not in str(caught[0].message) and not jit.cache_available()


def test_other_compile_errors_are_not_swallowed(monkeypatch):
    def broken(*args, **kw):
        def fail(fn):
            raise RuntimeError("something else")
        return fail

    monkeypatch.setattr(jit, "_numba_njit", broken)
    monkeypatch.setattr(jit, "_NO_CACHE", [])
    with pytest.raises(RuntimeError, match="something else"):
        jit.njit(cache=True)(lambda x: x)
