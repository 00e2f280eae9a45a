"""The execution tiers: lazy kernels, the same bits in Python and numba, the cache fallback, nrt=False guards."""

from __future__ import annotations

import itertools
import sys
import textwrap
import types
import warnings

import numpy as np
import pytest

import lookahead.jit as jit

_fresh = itertools.count()


def kernels_module(source: str) -> types.ModuleType:
    """A new module (its own name, registered in sys.modules) whose kernels are defined by `source`."""
    name = f"_jit_test_module_{next(_fresh)}"
    mod = types.ModuleType(name)
    mod.__dict__.update(np=np, kernel=jit.kernel)
    sys.modules[name] = mod
    exec(compile(textwrap.dedent(source), f"<{name}>", "exec"), mod.__dict__)
    return mod


def test_no_cache_location_falls_back_to_compiling_without_the_cache(monkeypatch):
    real = jit._numba_njit
    calls = []

    def refusing(**kw):
        calls.append(kw.get("cache"))
        if kw.get("cache"):
            def fail(fn):
                raise RuntimeError(f"cannot cache function {fn.__name__!r}: no locator available for file 'x.py'")
            return fail
        return real(**kw)

    monkeypatch.setattr(jit, "_numba_njit", refusing)
    monkeypatch.setattr(jit, "_NO_CACHE", [])

    m = kernels_module("""
        @kernel
        def add_one(x):
            return x + 1

        @kernel(inline="always")
        def twice(x):
            return 2 * x
    """)
    add_one, twice = m.add_one, m.twice
    assert add_one(1) == 2 and twice(3) == 6  # the Python tier: numba not asked yet
    assert calls == []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jit.ensure_compiled([m.__name__])
        assert add_one(1) == 2 and twice(3) == 6
    assert add_one.dispatcher.signatures  # it really ran compiled
    assert calls == [True, False, False]  # refused once; the next kernel does not even ask
    assert [w.category for w in caught] == [jit.NoKernelCacheWarning]
    assert "\n" not in str(caught[0].message) and not jit.cache_available()
    assert jit.will_compile(add_one)  # no disk cache: every process compiles


def test_other_compile_errors_are_not_swallowed(monkeypatch):
    def broken(**kw):
        def fail(fn):
            raise RuntimeError("something else")
        return fail

    monkeypatch.setattr(jit, "_numba_njit", broken)
    monkeypatch.setattr(jit, "_NO_CACHE", [])

    m = kernels_module("""
        @kernel
        def ident(x):
            return x
    """)
    with pytest.raises(RuntimeError, match="something else"):
        jit.ensure_compiled([m.__name__])
