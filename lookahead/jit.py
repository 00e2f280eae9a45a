"""Execution tiers for the kernels: plain Python first, numba once the work pays for the compile.

A kernel is written once, as a plain function over NumPy arrays and scalars,
and decorated with :func:`kernel`. It then runs in one of two tiers:

- the **Python tier** (the default): the same source, run by the interpreter
  with NumPy. Nothing imports numba and nothing compiles, so a small problem
  (the seed's payment case has 2 states and 4 observations, and its whole
  search is 9 nodes) is answered in milliseconds from a cold start;
- the **compiled tier**, after :func:`ensure_compiled`: each kernel is
  ``numba.njit(cache=True)`` (nopython) of a copy of the function whose
  globals map every kernel name to that kernel's dispatcher, so compiled code
  calls compiled code (and ``inline="always"`` kernels are inlined as
  before), while the Python tier's copies call each other's Python copies.
  numba compiles a kernel at its first call with new argument types, or loads
  it from its on-disk cache when a previous process compiled it.

The two tiers run the same arithmetic in the same order, so they give the
same bits (``tests/lookahead/test_jit.py`` holds them equal on generated
domains). In the Python tier, floating-point and integer-overflow warnings are
silenced (numba wraps and produces inf/nan silently, and so does the Python
tier), and structured dtypes are handed to the kernel as record dtypes, so
``table[i].key`` reads and writes a field in both tiers.

Deciding the tier
-----------------
A caller that is about to plan estimates the work first (in
*state-operations*, the unit of :data:`lookahead.search.MAX_WORK`: nodes x S x
(A + Y x O); :mod:`planner.tiers` has the planner's estimate) and calls
:func:`prepare`, which decides with :func:`tier_for`:

>>> tier_for(448)      # the seed case's search: at most 16 nodes of 28 state-operations
'python'

Below :data:`PYTHON_WORK` (counted over the whole process, so that many small
calls add up) the kernels stay in Python; above it :func:`prepare` switches the
modules to the compiled tier and returns ``"compiled"``. :func:`tier_for` is
the decision alone. The first compiled call of a kernel from Python prints
one line on stderr (:data:`COMPILE_MESSAGE`, once per process) when numba will
really compile it rather than load it from its cache (:func:`announce`,
:func:`will_compile`). ``planner warm`` compiles every kernel ahead of time
(for images and CI), and a long-running caller may call
:func:`ensure_compiled` itself.

The on-disk cache
-----------------
Where no cache location is writable (a read-only install with an unwritable
``HOME``, or a read-only ``NUMBA_CACHE_DIR``), numba refuses ``cache=True``;
the kernels are then compiled without the disk cache and one
:class:`NoKernelCacheWarning` says so: the results are the same, each new
process only pays the compile time again.

Kernels with ``nrt=False`` are compiled without numba's reference counting
(``_nrt=False``): nothing in them may allocate an array, and they must never
return one (the caller would own an array nobody counted: heap corruption).
A returned array is refused in both tiers (``TypeError``), in the compiled
one before the kernel first runs with new argument types.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import os
import sys
import types
import warnings

import numpy as np

__all__ = [
    "kernel",
    "Kernel",
    "ensure_compiled",
    "compiled",
    "will_compile",
    "python_only",
    "forced",
    "announce",
    "quiet",
    "tier_for",
    "prepare",
    "registered",
    "NoKernelCacheWarning",
    "cache_available",
    "package_stamp",
    "PYTHON_WORK",
    "COMPILE_SECONDS",
    "COMPILE_MESSAGE",
]

#: The Python tier's share of work (state-operations, over a process) before the kernels compile. The
#: Python tier runs 0.9 to 4.1 million state-operations per CPU second (``bench/bench_compile.py``,
#: ``bench/results/compile.md``), so this is at most about 1.1 s of Python, against about 40 s of compiling
#: (:data:`COMPILE_SECONDS`) that every later process then loads from the cache in a fraction of a second.
PYTHON_WORK = 1_000_000
#: What :func:`announce` says a first compile costs: the CPU seconds of the first ``planner explain`` of an
#: 8-state, 12-observation domain with a 3-step chain from an empty cache, less the same run from a warm one
#: (37.3 s and 1.9 s, 2026-12-07 on a 2-core machine; 37.1 s wall; 42.8 s in a run beside the test suite; it
#: was 27.8 s before the revelation bound's kernels, which the depth-first search calls and so compiles with it).
#: ``planner warm``, which compiles every kernel, not only those one run needs, took 70.9 s of CPU compiling
#: against 41.5 s for the revision before the bound, side by side (``bench/results/compile.md``). A busy
#: machine takes longer in wall time.
COMPILE_SECONDS = 40
#: The line :func:`announce` prints.
COMPILE_MESSAGE = ("planner: compiling search kernels, first run only, about {seconds} s "
                   "(run 'planner warm' to do this ahead of time)")

_REGISTRY: dict = {}  # module name -> {kernel name: Kernel}, in definition order
_COMPILED: set = set()  # modules switched to the compiled tier
_FORCED: list = [0]  # > 0 inside python_only()
_NO_CACHE: list = []  # the first refusal, when numba had no cache location
_ANNOUNCED: list = []  # the line was printed in this process
_QUIET: list = [0]  # > 0 inside quiet()
_PY_WORK: list = [0.0]  # state-operations run in the Python tier so far (prepare)


class NoKernelCacheWarning(RuntimeWarning):
    """numba has no writable cache location: kernels are compiled in every process."""


def cache_available() -> bool:
    """True unless numba refused the on-disk cache for some kernel in this process."""
    return not _NO_CACHE


def _numba_njit(**options):
    """``numba.njit(**options)`` (imported here, at the first compile, never at import)."""
    import numba

    _install_locators()
    return numba.njit(**options)


_PACKAGE = os.path.dirname(os.path.abspath(__file__))
_LOCATORS: list = []  # the locator classes once installed


@functools.lru_cache(maxsize=8)
def _package_digest(stamps: tuple) -> bytes:
    """sha256 over the sources of every module of this package (`stamps`: their names, mtimes and sizes, so
    that a file changed while the process runs is read again)."""
    h = hashlib.sha256()
    for name, _, _ in stamps:
        h.update(name.encode())
        with open(os.path.join(_PACKAGE, name), "rb") as f:
            h.update(f.read())
    return h.digest()


def package_stamp() -> bytes:
    """The source stamp of every kernel's cache entry: a digest of all of ``lookahead``'s sources.

    numba keys a cached kernel on its own file's source alone, but a kernel's cached machine code includes the
    kernels it calls and inlines from other modules (``search._search`` calls ``reveal._child_bounds``): after
    an edit to ``reveal.py`` alone (a ``git pull`` into an editable install), numba would load ``_search`` with
    the old ``reveal`` code inside. Keying every kernel on the whole package makes any change to any module
    recompile them all, once.

    >>> len(package_stamp())
    32
    """
    names = sorted(n for n in os.listdir(_PACKAGE) if n.endswith(".py"))
    stamps = []
    for n in names:
        st = os.stat(os.path.join(_PACKAGE, n))
        stamps.append((n, st.st_mtime_ns, st.st_size))
    return _package_digest(tuple(stamps))


def _install_locators() -> None:
    """Put locators that key this package's kernels on :func:`package_stamp` in front of numba's own (the same
    cache folders; other code's kernels are left to numba's locators)."""
    if _LOCATORS:
        return
    try:
        from numba.core import caching

        bases = (caching.UserProvidedCacheLocator, caching.InTreeCacheLocator, caching.UserWideCacheLocator)
        classes = caching.CacheImpl._locator_classes
    except AttributeError:  # another numba layout: its own locators (each kernel keyed on its own file)
        _LOCATORS.append(None)
        return
    for base in bases:
        class Locator(base):
            def get_source_stamp(self):
                return package_stamp()

            @classmethod
            def from_function(cls, py_func, py_file):
                if os.path.dirname(os.path.abspath(py_file)) != _PACKAGE:
                    return None
                return super().from_function(py_func, py_file)

        Locator.__name__ = Locator.__qualname__ = "Package" + base.__name__
        _LOCATORS.append(Locator)
    classes[:0] = _LOCATORS


class Kernel:
    """A function run in the Python tier until its module is compiled (see the module docstring).

    Attributes
    ----------
    py_func : function
        The function as written (its globals are the module's).
    module : str
        The module that defined it (the unit :func:`ensure_compiled` switches).
    nrt : bool
        False: compiled without reference counting; it may never return an array.
    options : dict
        Options for ``numba.njit`` (``cache=True`` unless given).
    """

    def __init__(self, fn, nrt: bool = True, options=None, writable=()):
        self.py_func = fn
        self.module = fn.__module__
        self.nrt = bool(nrt)
        self.options = dict(options or {})
        names = fn.__code__.co_varnames[:fn.__code__.co_argcount]
        unknown = [w for w in writable if w not in names]
        if unknown:
            raise TypeError(f"kernel {fn.__qualname__}: writable names no argument: {', '.join(unknown)}")
        self.writable = tuple(names.index(w) for w in writable)
        self._python = None  # the Python tier's copy
        self._dispatcher = None  # the compiled tier's dispatcher
        self._fast = None  # what a call runs once the module is compiled
        self._checked: set = set()  # argument types whose compiled return type was checked (nrt=False)
        functools.update_wrapper(self, fn)
        _REGISTRY.setdefault(self.module, {})[fn.__qualname__] = self
        if self.module in _COMPILED:  # a kernel defined after its module was switched
            self._switch()

    @property
    def inline(self) -> bool:
        """True for ``inline="always"``: numba never compiles it on its own, only inside its callers."""
        return self.options.get("inline") == "always"

    def __repr__(self):
        return f"<kernel {self.module}.{self.py_func.__qualname__}>"

    def __get__(self, obj, objtype=None):  # a kernel stored on a class stays a plain function
        return self

    def __reduce__(self):  # pickled by name, as a function is (worker processes import the module)
        return _registered_kernel, (self.module, self.py_func.__qualname__)

    def __call__(self, *args, **kwargs):
        fast = self._fast
        if fast is not None and not _FORCED[0]:
            return fast(*args, **kwargs)
        return self.python(*args, **kwargs)

    # the Python tier

    def python(self, *args, **kwargs):
        """Run the Python tier, whatever the module's tier."""
        fn = self._python or _python_copy(self)
        args = tuple(_as_records(a) for a in args)
        with np.errstate(all="ignore"):
            out = fn(*args, **kwargs)
        if not self.nrt:
            _refuse_arrays(self, out)
        return out

    # the compiled tier

    @property
    def dispatcher(self):
        """The numba dispatcher (built, not compiled, on first access; this imports numba)."""
        return self._dispatcher if self._dispatcher is not None else _dispatcher(self)

    def _switch(self):
        self.dispatcher  # noqa: B018 (built now: numba imported, globals bound)
        self._fast = self._first_call

    def _first_call(self, *args, **kwargs):
        """The first compiled call from Python: announce a compile that will happen, then run."""
        call = self._dispatcher if self.nrt else self._guarded
        if self.writable:
            call = functools.partial(_writable_call, call, self.writable)
        self._fast = call
        if not self.inline:
            announce(self)
        return call(*args, **kwargs)

    def _guarded(self, *args, **kwargs):
        """The dispatcher, after refusing (once per argument types) a compiled version that returns an array."""
        disp = self._dispatcher
        if kwargs:
            raise TypeError(f"{self!r}: an nrt=False kernel takes positional arguments only")
        sig = tuple(disp.typeof_pyval(a) for a in args)
        if sig not in self._checked:
            disp.compile(sig)
            _refuse_array_types(self, disp)
            self._checked.add(sig)
        return disp(*args)


def _writable_call(call, positions, *args, **kwargs):
    """`call` with the read-only arrays at `positions` copied (so numba sees one array type there)."""
    args = list(args)
    for i in positions:
        if i < len(args):
            a = args[i]
            if isinstance(a, np.ndarray) and not a.flags.writeable:
                args[i] = a.copy()
    return call(*args, **kwargs)


def _registered_kernel(module: str, qualname: str) -> Kernel:
    if module not in _REGISTRY:
        importlib.import_module(module)
    return _REGISTRY[module][qualname]


def kernel(fn=None, *, nrt: bool = True, writable=(), **numba_options):
    """Declare a kernel: ``@kernel`` or ``@kernel(nrt=False, inline="always", ...)``.

    Parameters
    ----------
    fn : function
        Plain Python over NumPy arrays and scalars, in numba's nopython subset;
        it calls other kernels by their bare names.
    nrt : bool
        False compiles it without reference counting (``_nrt=False``): it must
        allocate no array and return none.
    writable : tuple of str
        Arguments (small per-node inputs: a belief, the pairs, a mask) that a
        caller may hand over read-only or not; the compiled tier copies a
        read-only one, so numba compiles one signature for both (a read-only
        array is a distinct numba type). The kernel must not write them.
    **numba_options
        Passed to ``numba.njit`` when the module is compiled (``cache=True``
        unless given).

    Returns
    -------
    Kernel

    Examples
    --------
    >>> @kernel
    ... def total(x):
    ...     s = 0.0
    ...     for i in range(x.shape[0]):
    ...         s += x[i]
    ...     return s
    >>> float(total(np.array([0.5, 0.25])))   # the Python tier: no numba import, no compile
    0.75
    """
    if fn is not None and not callable(fn):
        raise TypeError(f"kernel: expected a function, got {fn!r}")

    def decorate(f):
        return Kernel(f, nrt=nrt, options=numba_options, writable=writable)

    return decorate if fn is None else decorate(fn)


def njit(*args, **options):
    """``numba.njit`` at once (imports numba): only for old revisions of the kernels that ``bench/bench_kernel.py``
    imports side by side with today's; new kernels use :func:`kernel`."""
    if args and callable(args[0]) and not options:
        return _numba_njit(cache=True)(args[0])
    options.setdefault("cache", True)
    return _numba_njit(**options)


def registered() -> dict:
    """``{module: [kernel, ...]}`` for every module that defined kernels (in definition order)."""
    return {m: list(ks.values()) for m, ks in _REGISTRY.items()}


def _modules(modules) -> list:
    """Module names: None means all registered; a name not registered yet is imported first."""
    if modules is None:
        return list(_REGISTRY)
    if isinstance(modules, str):
        modules = [modules]
    out = []
    for m in modules:
        m = getattr(m, "__name__", m)
        if m not in _REGISTRY:
            try:
                importlib.import_module(m)
            except ImportError:
                pass
        if m not in _REGISTRY:
            raise ValueError(f"no kernels are registered in module {m!r} (registered: {', '.join(_REGISTRY)})")
        out.append(m)
    return out


# --------------------------------------------------------------------------
# the two copies of a kernel


def _as_records(a):
    """A structured array as a view with a record dtype, so that ``a[i].field`` works in Python too."""
    if isinstance(a, np.ndarray) and a.dtype.names is not None and a.dtype.type is not np.record:
        return a.view(np.dtype((np.record, a.dtype)))
    return a


def _python_value(v):
    if isinstance(v, Kernel):
        return v._python or _python_copy(v)
    if isinstance(v, np.dtype) and v.names is not None and v.type is not np.record:
        return np.dtype((np.record, v))
    return v


def _copy(fn, globs):
    out = types.FunctionType(fn.__code__, globs, fn.__name__, fn.__defaults__, fn.__closure__)
    out.__kwdefaults__ = fn.__kwdefaults__
    out.__qualname__ = fn.__qualname__
    out.__module__ = fn.__module__
    out.__doc__ = fn.__doc__
    return out


_PY_GLOBALS: dict = {}  # id(module globals) -> (module globals, the Python tier's globals)
_NB_GLOBALS: dict = {}  # the same for the compiled tier


def _tier_copy(k: Kernel, table: dict, value, make):
    """`make` of a copy of `k` over its module's globals in one tier (one globals dict per module and tier).

    The globals are copied at the module's first use in the tier (as numba reads them at compile
    time), and their kernels (and structured dtypes) replaced by `value` of them only once the copy
    exists, so kernels that call each other, or themselves, resolve.
    """
    src = k.py_func.__globals__
    entry = table.get(id(src))
    globs = dict(src) if entry is None else entry[1]
    if entry is None:
        table[id(src)] = (src, globs)
    out = make(_copy(k.py_func, globs))
    if entry is None:
        return out, lambda: globs.update({n: value(v) for n, v in src.items() if isinstance(v, (Kernel, np.dtype))})
    # a kernel the module defined after its globals were copied
    return out, lambda: globs.update({n: value(v) for n, v in src.items() if v is k})


def _python_copy(k: Kernel):
    if k._python is None:
        k._python, fill = _tier_copy(k, _PY_GLOBALS, _python_value, lambda f: f)
        if fill:
            fill()
    return k._python


def _numba_value(v):
    return v.dispatcher if isinstance(v, Kernel) else v


def _make_dispatcher(fn, options):
    """``numba.njit`` of `fn` with the disk cache, or without it where numba has no cache location."""
    opts = dict(options)
    want_cache = opts.pop("cache", True)
    if want_cache and not _NO_CACHE:
        try:
            return _numba_njit(cache=True, **opts)(fn)
        except RuntimeError as e:  # numba: "cannot cache function ...: no locator available"
            if "cannot cache" not in str(e):
                raise
            _NO_CACHE.append(str(e))
            # warn_explicit with no source line: the warning prints as one line
            warnings.warn_explicit("numba cannot write its kernel cache here (no writable cache folder; set "
                                   "NUMBA_CACHE_DIR to one): compiling without it, so each new process "
                                   "compiles the kernels again", NoKernelCacheWarning, "lookahead.jit", 0)
    return _numba_njit(cache=False, **opts)(fn)


def _dispatcher(k: Kernel):
    if k._dispatcher is None:
        opts = dict(k.options)
        if not k.nrt:
            opts["_nrt"] = False
        k._dispatcher, fill = _tier_copy(k, _NB_GLOBALS, _numba_value, lambda f: _make_dispatcher(f, opts))
        if fill:
            fill()
    return k._dispatcher


def _has_array(t) -> bool:
    """Does numba type `t` hold an array (directly, in a tuple, or a record of arrays)?"""
    from numba.core import types as nt

    if isinstance(t, nt.Array):
        return True
    if isinstance(t, nt.BaseTuple):
        return any(_has_array(x) for x in t.types)
    return False


def _refuse_array_types(k: Kernel, disp) -> None:
    for sig, res in disp.overloads.items():
        if _has_array(res.signature.return_type):
            raise TypeError(f"{k!r} is compiled with nrt=False but returns {res.signature.return_type} for "
                            f"arguments {sig}: an nrt=False kernel must never return an array")


def _refuse_arrays(k: Kernel, out) -> None:
    if isinstance(out, np.ndarray) or (isinstance(out, tuple) and any(isinstance(x, np.ndarray) for x in out)):
        raise TypeError(f"{k!r} is declared nrt=False but returned an array: an nrt=False kernel must never "
                        "return an array")


# --------------------------------------------------------------------------
# switching tiers


def ensure_compiled(modules=None) -> None:
    """Switch the kernels of `modules` (names; default: every registered module) to the compiled tier.

    Builds each kernel's ``numba.njit(cache=True)`` dispatcher (this imports
    numba), and those of the kernels it calls; numba compiles each one at its
    first call with new argument types, or loads it from its on-disk cache.
    Idempotent. ``planner warm`` calls it and then runs every kernel once.
    """
    for m in _modules(modules):
        for k in _REGISTRY[m].values():
            k._switch()
        _COMPILED.add(m)


def compiled(modules=None) -> bool:
    """True when every module in `modules` (default: all registered) is in the compiled tier.

    >>> with python_only():
    ...     compiled(["lookahead.core"])
    False
    """
    return not _FORCED[0] and all(m in _COMPILED for m in _modules(modules))


@contextlib.contextmanager
def python_only():
    """Run every kernel in the Python tier inside the block, compiled or not (for tests and comparisons).

    >>> import lookahead.core as core
    >>> with python_only():
    ...     risk, action = core.bayes_risk(np.array([0.55, 0.45]), np.array([[0.0, 100.0], [8.0, 1.0]]),
    ...                                    np.array([False, True]))
    >>> round(float(risk), 2), int(action)
    (4.85, 1)
    """
    _FORCED[0] += 1
    try:
        yield
    finally:
        _FORCED[0] -= 1


def forced() -> bool:
    """True inside :func:`python_only`: every kernel runs in the Python tier, and nothing should switch tiers.

    >>> with python_only():
    ...     forced()
    True
    """
    return bool(_FORCED[0])


def _roots(modules) -> list:
    """The kernels of `modules` numba compiles on their own: not inlined, and called by no other kernel.

    Compiling one compiles the kernels it calls too (and caches them), so
    these say whether a run would compile.
    """
    ks = [k for m in _modules(modules) for k in _REGISTRY[m].values()]
    called = set()
    for m, kernels in _REGISTRY.items():
        for k in kernels.values():
            g = k.py_func.__globals__
            for name in k.py_func.__code__.co_names:
                v = g.get(name)
                if isinstance(v, Kernel) and v is not k:
                    called.add(id(v))
    return [k for k in ks if not k.inline and id(k) not in called]


def will_compile(*what) -> bool:
    """Would running these kernels compile rather than load them from numba's on-disk cache?

    `what`: kernels, or module names (each meaning the kernels numba
    compiles on their own, see :func:`_roots`); none: every registered module.
    True when numba has no disk cache here, or a kernel's cache index is
    missing, stale (its source file changed) or empty. This imports numba.
    Used to tell a person why the first run is slow (:func:`announce`).

    >>> import lookahead.search as search
    >>> will_compile(search._expectimax) in (True, False)
    True
    """
    kernels = []
    mods = []
    for w in what:
        if isinstance(w, Kernel):
            kernels.append(w)
        elif isinstance(w, (list, tuple, set)):
            for x in w:
                (kernels if isinstance(x, Kernel) else mods).append(x)
        else:
            mods.append(w)
    if not what:
        mods = None
    if mods is None or mods:
        kernels += _roots(mods)
    for k in kernels:
        disp = k.dispatcher
        if not cache_available():
            return True
        try:
            if not disp._cache._cache_file._load_index():
                return True
        except AttributeError:  # a NullCache (cache=False), or another numba layout: say nothing rather than guess
            if type(disp._cache).__name__ == "NullCache":
                return True
            return False
    return False


def announce(*what, seconds: int | None = None, stream=None) -> bool:
    """Print :data:`COMPILE_MESSAGE` on stderr once per process, when :func:`will_compile` says a compile is coming.

    Returns True when it printed the line.
    """
    if _ANNOUNCED or _QUIET[0] or not will_compile(*what):
        return False
    _ANNOUNCED.append(True)
    text = COMPILE_MESSAGE.format(seconds=COMPILE_SECONDS if seconds is None else seconds)
    print(text, file=sys.stderr if stream is None else stream, flush=True)
    return True


@contextlib.contextmanager
def quiet():
    """No compile line inside the block (``planner warm`` says what it does itself; benchmarks)."""
    _QUIET[0] += 1
    try:
        yield
    finally:
        _QUIET[0] -= 1


def tier_for(estimated_work: float, python_budget: float = PYTHON_WORK, *, done: float = 0.0) -> str:
    """``"python"`` while `done` + `estimated_work` stays within `python_budget` state-operations, else ``"compiled"``.

    >>> tier_for(252), tier_for(5e9)
    ('python', 'compiled')
    """
    return "python" if done + float(estimated_work) <= python_budget else "compiled"


def prepare(estimated_work: float, modules, *, python_budget: float = PYTHON_WORK) -> str:
    """The tier to plan in, compiling first when the work pays for it (see the module docstring).

    Parameters
    ----------
    estimated_work : float
        State-operations the coming call will do at most.
    modules : list of str
        The modules whose kernels it runs.
    python_budget : float
        The Python tier's share, over the whole process (:data:`PYTHON_WORK`).

    Returns
    -------
    str
        ``"python"`` or ``"compiled"``.
    """
    mods = _modules(modules)
    if _FORCED[0]:
        return "python"
    if all(m in _COMPILED for m in mods):
        return "compiled"
    if tier_for(estimated_work, python_budget, done=_PY_WORK[0]) == "python":
        _PY_WORK[0] += float(estimated_work)
        return "python"
    ensure_compiled(mods)
    return "compiled"
