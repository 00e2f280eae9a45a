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


# --------------------------------------------------------------------------
# the two tiers give the same bits

import planner  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import lookahead.core as core  # noqa: E402
from lookahead.bounded import BoundedSearch  # noqa: E402
from lookahead.search import SearchCapExceeded, expectimax  # noqa: E402
from planner.generators import benchmark_domain  # noqa: E402
from strategies import domain_dicts  # noqa: E402


def _walk(node, seed, steps):
    """A node a few random eligible acquisitions (with possible outcomes) below `node`."""
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        kids = [(o, y) for o in np.flatnonzero(node.eligible) for y, p in enumerate(node.outcome_probs(int(o)))
                if p > 0]
        if not kids:
            break
        o, y = kids[int(rng.integers(len(kids)))]
        node = node.child(int(o), int(y))
    return node


def _both(fn):
    """`fn()` in the Python tier and in the compiled one."""
    jit.ensure_compiled(["lookahead.core", "lookahead.search", "lookahead.bounded"])
    with jit.python_only():
        slow = fn()
    return slow, fn()


def _same(a, b, path="result"):
    """Equal bit for bit (nan equal to nan), recursively through tuples, lists, dicts and arrays."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            _same(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{path}[{i}]")
    elif isinstance(a, np.ndarray):
        x, y = np.asarray(a), np.asarray(b)
        if x.dtype.names is not None:
            assert x.dtype.names == y.dtype.names, path
            for n in x.dtype.names:
                _same(x[n], y[n], f"{path}.{n}")
        else:
            np.testing.assert_array_equal(x, y, err_msg=path, strict=True)
    else:
        assert a == b or (a != a and b != b), f"{path}: {a!r} != {b!r}"


def _search(node, depth, **kw):
    c = node.compiled
    return expectimax(node.belief, node.outcome_of, node.spent, node.eligible, node.admission.admitted, depth,
                      c.lik, c.n_outcomes, c.loss, c.facts, c.cost, c.limits, c.penalty, c.n_values, **kw)


def _bounded(node, budget):
    c = node.compiled
    bs = BoundedSearch(c.prior, c.lik, c.n_outcomes, c.loss, c.cost, c.limits, c.penalty, node.admission.admitted,
                       c.facts)
    r = bs.plan(node.outcome_of, budget=budget)
    return r, tuple(bs.graph), bs.best_plan(r.root)


def _core(node):
    c = node.compiled
    f = c.facts
    out = np.empty(len(c.obs_names))
    return (core.node_facts(node.outcome_of, f),
            core.established_status(node.outcome_of, f.est_prop, f.est_kind, f.est_value, f.action_mentions.shape[1]),
            core.permitted_actions(node.outcome_of, f), core.available_observations(node.outcome_of, f),
            core.bayes_risk(node.belief, c.loss, node.permitted),
            core.evsi_all(node.belief, node.outcome_of, c.lik, c.n_outcomes, c.loss, f, node.eligible, out).copy(),
            core.reachable_actions(node.outcome_of, node.admission.admitted, f, c.n_values),
            core.evpi(node.belief, node.outcome_of, node.admission.admitted, c.loss, f, c.n_values),
            [core.affordable(o, node.spent, c.cost, c.limits) for o in range(len(c.obs_names))],
            [node.outcome_probs(o) for o in range(len(c.obs_names))])


@settings(max_examples=25)
@given(raw=domain_dicts(rich_preconditions=True), seed=st.integers(0, 2**16), steps=st.integers(0, 2),
       depth=st.integers(0, 5), prune=st.booleans(), entitled=st.booleans())
def test_python_and_compiled_searches_agree_bit_for_bit(raw, seed, steps, depth, prune, entitled):
    caller = planner.Caller(entitlements=["secret.read"] if entitled else [])
    node = _walk(planner.Session(planner.Domain.from_dict(raw), caller=caller).node, seed, steps)
    slow, fast = _both(lambda: _search(node, depth, prune=prune))
    _same(slow._asdict(), fast._asdict())
    slow, fast = _both(lambda: _core(node))
    _same(slow, fast)


@settings(max_examples=25)
@given(raw=domain_dicts(rich_preconditions=True), seed=st.integers(0, 2**16), steps=st.integers(0, 2),
       budget=st.sampled_from([1, 5, 30, 10**6]))
def test_python_and_compiled_best_first_searches_agree_bit_for_bit(raw, seed, steps, budget):
    node = _walk(planner.Session(planner.Domain.from_dict(raw)).node, seed, steps)
    slow, fast = _both(lambda: _bounded(node, budget))
    _same(slow, fast)


@pytest.mark.parametrize("n_obs, n_states, chain, seed", [(7, 8, 2, 1), (6, 16, 0, 2), (8, 4, 3, 3)])
def test_the_tiers_agree_on_generated_benchmark_domains(n_obs, n_states, chain, seed):
    """Larger than the random domains: many nodes, table growth, preconditions and a prerequisite chain."""
    node = planner.Session(planner.Domain.from_dict(benchmark_domain(n_obs, n_states, seed=seed, chain=chain))).node
    slow, fast = _both(lambda: (_search(node, 3), _bounded(node, 3_000), _core(node)))
    _same(slow, fast)


@pytest.mark.parametrize("n_obs, chain, seed", [(8, 3, 1), (7, 0, 2)])
def test_the_tiers_agree_reading_an_exact_memo(n_obs, chain, seed):
    """A capped full-depth search's exact memo, read by a depth-limited search and by the best-first one."""
    node = planner.Session(planner.Domain.from_dict(benchmark_domain(n_obs, 8, seed=seed, chain=chain))).node
    c = node.compiled

    def run():
        with pytest.raises(SearchCapExceeded) as err:
            _search(node, n_obs, max_nodes=300)
        memo = err.value.memo
        bs = BoundedSearch(c.prior, c.lik, c.n_outcomes, c.loss, c.cost, c.limits, c.penalty,
                           node.admission.admitted, c.facts)
        bs.use_exact(memo)
        r = bs.plan(node.outcome_of, budget=2_000)
        res = _search(node, 3, exact=memo)._asdict()
        res.pop("exact")
        return memo.table, res, r, tuple(bs.graph), bs.best_plan(r.root)

    slow, fast = _both(run)
    _same(slow, fast)
    assert fast[1]["reused"] > 0 and fast[2].reused > 0


def test_policy_decisions_and_values_agree_in_both_tiers():
    """Exact evaluations (every world and outcome along the policy's own choices), each on a fresh domain."""
    from planner.evaluation.evaluate import evaluate_policy

    raw = benchmark_domain(6, 8, seed=4, chain=2)
    for spec in ("bounded", "bounded:40", "lookahead:2", "one-step", "decision-region"):
        slow, fast = _both(lambda: evaluate_policy(planner.Domain.from_dict(raw), spec))
        assert (slow.first, slow.stop_reasons, slow.actions) == (fast.first, fast.stop_reasons, fast.actions), spec
        assert abs(slow.expected_total_loss - fast.expected_total_loss) <= 1e-12, spec


# --------------------------------------------------------------------------
# the decorator's rules


def test_kernels_call_kernels_in_their_own_tier():
    m = kernels_module("""
        @kernel(cache=False)
        def inner(x):
            return x * 2.0

        @kernel(cache=False)
        def outer(x):
            return inner(x) + 1.0
    """)
    assert m.outer(1.5) == 4.0
    assert m.inner._dispatcher is None and m.outer._dispatcher is None  # the Python tier built no dispatcher
    jit.ensure_compiled([m.__name__])
    assert jit.compiled([m.__name__]) and m.outer(1.5) == 4.0
    assert m.outer.dispatcher.signatures and m.inner.dispatcher.signatures  # compiled code called compiled code
    assert m.outer.py_func.__globals__["inner"] is m.inner  # the module itself is untouched
    with jit.python_only():
        assert not jit.compiled([m.__name__]) and m.outer(2.0) == 5.0


def test_structured_tables_read_and_write_fields_in_both_tiers():
    m = kernels_module("""
        SLOT = np.dtype([("key", np.uint64), ("value", np.float64)])

        @kernel(cache=False)
        def fill(n):
            t = np.zeros(n, dtype=SLOT)
            for i in range(n):
                t[i].key = np.uint64(i) * np.uint64(0x9E3779B97F4A7C15)  # wraps, silently, in both tiers
                t[i].value = 1.0 / (i - 1.0) if i != 1 else np.inf
            return t

        @kernel(cache=False)
        def total(t):
            s = 0.0
            for i in range(t.shape[0]):
                if t[i].key != 0:
                    s += t[i].value
            return s
    """)
    slow = m.fill(5)
    jit.ensure_compiled([m.__name__])
    fast = m.fill(5)
    for name in ("key", "value"):
        np.testing.assert_array_equal(slow[name], fast[name])
    assert m.total(fast) == m.total(slow)  # the Python tier's record array, read compiled
    with jit.python_only():
        assert m.total(fast) == m.total(slow)


def test_nrt_free_kernels_may_not_return_arrays():
    m = kernels_module("""
        @kernel(nrt=False, cache=False)
        def leaks(x):
            return x

        @kernel(nrt=False, cache=False)
        def fine(x, out):
            s = 0.0
            for i in range(x.shape[0]):
                out[i] = 2.0 * x[i]
                s += x[i]
            return s
    """)
    x, out = np.arange(3.0), np.zeros(3)
    with pytest.raises(TypeError, match="nrt=False"):
        m.leaks(x)
    assert m.fine(x, out) == 3.0
    jit.ensure_compiled([m.__name__])
    with pytest.raises(TypeError, match="must never return an array"):
        m.leaks(x)  # refused before it ever runs compiled
    assert m.fine(x, out) == 3.0 and out.tolist() == [0.0, 2.0, 4.0]


def test_the_project_kernels_declared_nrt_free_return_no_arrays():
    """Every nrt=False kernel the project defines, after the suite compiled what it runs."""
    import lookahead.bounded  # noqa: F401 (registers its kernels)

    for module, kernels in jit.registered().items():
        for k in kernels:
            if module.startswith("lookahead.") and not k.nrt and k._dispatcher is not None:
                jit._refuse_array_types(k, k._dispatcher)


def test_tier_choice_counts_the_python_work_of_the_whole_process(monkeypatch):
    m = kernels_module("""
        @kernel(cache=False)
        def one():
            return 1
    """)
    monkeypatch.setattr(jit, "_PY_WORK", [0.0])
    assert jit.tier_for(10, 100) == "python" and jit.tier_for(101, 100) == "compiled"
    assert jit.prepare(60, [m.__name__], python_budget=100) == "python"
    assert not jit.compiled([m.__name__])
    with jit.python_only():
        assert jit.prepare(10**9, [m.__name__], python_budget=100) == "python"  # forced: never compiles
    assert jit.prepare(60, [m.__name__], python_budget=100) == "compiled"  # 120 in all: the compile pays now
    assert jit.compiled([m.__name__]) and m.one() == 1
    assert jit.prepare(1, [m.__name__]) == "compiled"
    with pytest.raises(ValueError, match="no kernels are registered"):
        jit.prepare(1, ["lookahead.no_such_module"])


def test_the_compile_line_is_printed_once_and_only_before_a_real_compile(monkeypatch):
    import io

    out = io.StringIO()
    monkeypatch.setattr(jit, "_ANNOUNCED", [])
    monkeypatch.setattr(jit, "will_compile", lambda *what: False)
    assert not jit.announce("lookahead.search", stream=out) and out.getvalue() == ""
    monkeypatch.setattr(jit, "will_compile", lambda *what: True)
    with jit.quiet():
        assert not jit.announce("lookahead.search", stream=out)
    assert jit.announce("lookahead.search", stream=out)
    assert not jit.announce("lookahead.search", stream=out)
    assert out.getvalue() == jit.COMPILE_MESSAGE.format(seconds=jit.COMPILE_SECONDS) + "\n"
    assert out.getvalue().startswith("planner: compiling search kernels, first run only, about ")


def test_will_compile_reads_numbas_cache_index():
    m = kernels_module("""
        @kernel(cache=False)
        def one():
            return 1
    """)
    assert jit.will_compile(m.one)  # no disk cache for it: every process compiles it
    import lookahead.search as search

    planner.Session(planner.load_domain("payment_release")).node.search(2)  # compiled (conftest), so cached
    if jit.cache_available():
        assert not jit.will_compile(search._expectimax)


def test_writable_arguments_compile_one_signature_for_read_only_and_writable_arrays():
    m = kernels_module("""
        @kernel(writable=("x",), cache=False)
        def total(x, scale):
            s = 0.0
            for i in range(x.shape[0]):
                s += x[i] * scale[i]
            return s
    """)
    frozen = np.arange(3.0)
    frozen.setflags(write=False)
    scale = np.ones(3)
    jit.ensure_compiled([m.__name__])
    assert m.total(frozen, scale) == m.total(frozen.copy(), scale) == 3.0
    assert len(m.total.dispatcher.signatures) == 1 and not frozen.flags.writeable
    with pytest.raises(TypeError, match="writable names no argument"):
        jit.kernel(writable=("y",))(lambda x: x)


def test_a_kernel_pickles_by_name():
    import pickle

    assert pickle.loads(pickle.dumps(core.bayes_risk)) is core.bayes_risk


def test_a_kernel_defined_after_its_module_was_compiled_is_compiled_and_callable():
    m = kernels_module("""
        @kernel(cache=False)
        def one():
            return 1
    """)
    jit.ensure_compiled([m.__name__])
    assert m.one() == 1
    exec(compile("@kernel(cache=False)\ndef two():\n    return one() + 1\n", "<later>", "exec"), m.__dict__)
    assert m.two() == 2 and m.two.dispatcher.signatures
    with jit.python_only():
        assert m.two() == 2


def test_the_cache_stamp_covers_every_module_of_the_package(tmp_path, monkeypatch):
    # a kernel's cached code includes the kernels it calls from other modules, so an edit to any module must
    # change every kernel's stamp (numba's own stamp is the defining file alone)
    import pathlib
    import shutil

    for src in pathlib.Path(jit.__file__).parent.glob("*.py"):
        shutil.copy(src, tmp_path / src.name)
    monkeypatch.setattr(jit, "_PACKAGE", str(tmp_path))
    before = jit.package_stamp()
    assert jit.package_stamp() == before  # deterministic
    (tmp_path / "reveal.py").write_text((tmp_path / "reveal.py").read_text() + "\n# an edit\n")
    after = jit.package_stamp()
    assert after != before
    (tmp_path / "reveal.py").write_text((tmp_path / "reveal.py").read_text()[: -len("\n# an edit\n")])
    assert jit.package_stamp() == before  # content, not the clock


def test_the_project_kernels_are_cached_under_the_package_stamp():
    import lookahead.search as search

    planner.Session(planner.load_domain("payment_release")).node.search(2)  # compiled (conftest)
    disp = search._search.dispatcher
    if not jit.cache_available() or type(disp._cache).__name__ == "NullCache":
        pytest.skip("numba has no disk cache here")
    locator = disp._cache._impl.locator
    assert type(locator).__name__.startswith("Package")
    assert locator.get_source_stamp() == jit.package_stamp()
