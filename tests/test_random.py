"""The replay's own Threefry draws against ``jax.random`` (the oracle), bit for bit, and
local work with the noise of a window drawn at once against the per-step draws."""

import children
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from asynclab import _random
from asynclab.problems import get_problem, stochastic_gradient
from asynclab.rules import make_rule


def per_step(key, start, count, shape):
    return jnp.stack([jax.random.normal(jax.random.fold_in(key, start + j), shape)
                      for j in range(count)])


@pytest.fixture(autouse=True)
def fused(monkeypatch):
    """Test the fused copy on every platform (by default a GPU uses jax.random's own)."""
    monkeypatch.setattr(_random, "FUSE", True)


@pytest.mark.parametrize("data", [0, 1, 7, 12345, 2**31 - 1])
def test_fold_in_is_jax_random_fold_in(data):
    key = jax.random.key(11)
    mine = jax.jit(_random.fold_in)(key, jnp.uint32(data))
    assert np.array_equal(jax.random.key_data(mine),
                          jax.random.key_data(jax.random.fold_in(key, data)))


@pytest.mark.parametrize("shape", [(), (1,), (2,), (3,), (4, 5), (1000,)])
def test_normal_is_jax_random_normal(shape):
    key = jax.random.fold_in(jax.random.key(3), 9)
    mine = jax.jit(lambda k: _random.normal(k, shape))(key)
    theirs = jax.random.normal(key, shape)
    assert mine.shape == theirs.shape and np.array_equal(mine, theirs)


@pytest.mark.parametrize("shape", [(), (1,), (250,), (4, 5)])
def test_uniform_is_jax_random_uniform(shape):
    keys = jax.random.split(jax.random.key(8), 3)
    mine = jax.jit(jax.vmap(lambda k: _random.uniform(k, shape)))(keys)
    theirs = jax.vmap(lambda k: jax.random.uniform(k, shape))(keys)
    assert mine.shape == theirs.shape and np.array_equal(mine, theirs)


def test_normal_falls_back_for_other_dtypes():
    key = jax.random.key(0)
    for dtype in (jnp.float16, jnp.bfloat16):
        assert np.array_equal(_random.normal(key, (5,), dtype),
                              jax.random.normal(key, (5,), dtype))


# the quick tier: a window of vectors and windows of scalars; the slow tier every shape
@pytest.mark.parametrize("count,shape", [
    (4, (2,)), pytest.param(1, (2,), marks=pytest.mark.slow),
    pytest.param(1, (3, 2), marks=pytest.mark.slow), (1, ()),
    pytest.param(5, (), marks=pytest.mark.slow)])
def test_window_is_per_step_draws_under_nested_vmap(count, shape):
    keys = jax.random.split(jax.random.key(5), 6).reshape(2, 3)
    starts = jnp.array([[0, 5, 9], [100, 7, 2**20]], jnp.int32)
    ref = jax.vmap(jax.vmap(lambda k, s: per_step(k, s, count, shape)))(keys, starts)
    got = jax.jit(jax.vmap(jax.vmap(
        lambda k, s: _random.normal_window(k, s, count, shape))))(keys, starts)
    assert got.shape == ref.shape and np.array_equal(got, ref)
    # unbatched, and with a start shared by all keys
    assert np.array_equal(_random.normal_window(keys[0, 1], 5, count, shape), ref[0, 1])
    shared = jax.jit(jax.vmap(lambda k: _random.normal_window(k, 5, count, shape)))(keys[0])
    assert np.array_equal(shared[1], ref[0, 1])


def _primitives(jaxpr, name: str) -> int:
    """How many equations of primitive ``name`` a jaxpr holds, its sub-jaxprs (a
    conditional's every branch, a jit's body) counted each time they appear."""
    def inner(value):
        if hasattr(value, "eqns"):
            return [value]
        if hasattr(value, "jaxpr"):
            return inner(value.jaxpr)
        if isinstance(value, tuple | list):
            return [j for v in value for j in inner(v)]
        return []

    return sum((eqn.primitive.name == name)
               + sum(_primitives(j, name) for v in eqn.params.values() for j in inner(v))
               for eqn in jaxpr.eqns)


def test_one_steps_draw_compiles_once_and_stays_a_loop_of_its_own():
    # a step's draw of a vector sits in a conditional whose other branch is empty: the
    # hash and its transform appear once in the program, and XLA keeps the conditional
    # (it cannot tell that its predicate always holds), so the draw does not fuse into
    # its consumer
    keys = jax.random.split(jax.random.key(5), 8)
    draw = jax.jit(jax.vmap(lambda k, s: 2.0 * _random.normal_window(k, s, 1, (2,))))
    starts = jnp.arange(8, dtype=jnp.int32)
    assert _primitives(jax.make_jaxpr(draw)(keys, starts).jaxpr, "erf_inv") == 1
    assert "conditional(" in draw.lower(keys, starts).compile().as_text()
    got = draw(keys, starts)
    ref = jnp.stack([2.0 * per_step(k, s, 1, (2,)) for s, k in enumerate(keys)])
    np.testing.assert_array_equal(got, ref)


# the quick tier: an asynchronous window and a synchronous one; the slow tier the rules
# whose local work stops early or changes length
@pytest.mark.parametrize("name,hp", [
    ("downpour", {"local_steps": 5}),
    ("model_averaging", {"local_steps": 1}),
    pytest.param("easgd", {"local_steps": 6, "elasticity": 2.0, "early_stop": True},
                 marks=pytest.mark.slow),
    pytest.param("post_local_sgd", {"local_steps": 4, "warmup_rounds": 3},
                 marks=pytest.mark.slow),
])
def test_windowed_local_work_equals_per_step_noise(name, hp):
    """A problem's gradient lets local work draw the window at once; a plain function
    (no ``clean``/``noise_std``) makes it draw per step. Same numbers."""
    problem = get_problem("beale")
    gradient = stochastic_gradient(problem, 10.0)

    def plain(params, key, worker, step):
        return gradient(params, key, worker, step)

    rule = make_rule(name, learning_rate=1e-3, **hp)
    server = rule.init_server(jnp.asarray(problem.start))
    starts = jnp.asarray(problem.start)[None] + jnp.array([[0.0, 0.0], [0.3, -0.2], [-0.5, 0.1]])
    workers = jax.vmap(rule.init_worker, in_axes=(0, None))(starts, server)
    workers = workers._replace(steps=jnp.array([0, 6, 12], jnp.int32))
    keys = jax.random.split(jax.random.key(2), 3)
    ids = jnp.arange(3, dtype=jnp.int32)
    run = lambda g: jax.jit(jax.vmap(lambda w, k, i: rule.local(w, g, k, i)))(  # noqa: E731
        workers, keys, ids)
    windowed, stepwise = run(gradient), run(plain)
    np.testing.assert_allclose(windowed.params, stepwise.params, rtol=1e-6, atol=1e-7)
    assert np.array_equal(windowed.steps, stepwise.steps)


def test_early_stop_draws_fresh_noise_after_stopping():
    """A worker whose test fires at once still advances its step counter by λ, so the
    next round's gradient noise differs (it used to re-draw the same noise and freeze)."""
    problem = get_problem("beale")
    lam = 5
    rule = make_rule("easgd", learning_rate=1e-5, local_steps=lam, elasticity=100.0,
                     early_stop=True)
    server = rule.init_server(jnp.asarray(problem.start))
    # at the minimum, far from the centre: the elastic pull (α d ≈ 2.4e-3) beats the
    # noisy gradient step (η‖g‖ ≈ 4e-5), so the test fires at the first step
    worker = rule.init_worker(jnp.asarray(problem.global_minimum), server)
    gradient = stochastic_gradient(problem, 10.0)
    key = jax.random.key(0)
    first = rule.local(worker, gradient, key, 0)
    assert np.array_equal(first.params, worker.params)  # no step taken
    assert int(first.steps) == lam                       # yet the counter moved on
    seen = []

    def spy(params, key, worker_id, step):  # a plain function: per-step draws
        jax.debug.callback(lambda s: seen.append(int(s)), step)
        return gradient(params, key, worker_id, step)

    second = rule.local(first, spy, key, 0)
    assert int(second.steps) == 2 * lam
    jax.effects_barrier()
    assert sorted(seen) == list(range(lam, 2 * lam))  # the rule asked for steps λ…2λ−1
    # so the next round draws the noise of steps λ…2λ−1, not that of step 0 again
    assert not np.array_equal(gradient(worker.params, jax.random.fold_in(key, lam), 0, lam),
                              gradient(worker.params, jax.random.fold_in(key, 0), 0, 0))


def test_fold_in_wraps_large_python_ints_like_jax():
    key = jax.random.key(4)
    for data in (2**31, 2**32 - 1):
        assert np.array_equal(jax.random.key_data(_random.fold_in(key, data)),
                              jax.random.key_data(jax.random.fold_in(key, data)))


def test_window_fallback_draws_float32_with_other_keys():
    """A non-Threefry key goes through jax.random, still float32 like the fast path."""
    key = jax.random.key(1, impl="rbg")
    window = _random.normal_window(key, 3, 2, (2,))
    assert window.dtype == jnp.float32
    assert np.array_equal(window, per_step(key, 3, 2, (2,)))


@pytest.mark.parametrize("seed", [0, 7, 2**31 + 5, 2**32 - 1])
def test_seed_keys_are_jax_random_split_and_fold_in(seed):
    """Every executor's keys: split(key(seed)) -> (init, noise), worker k = fold_in(noise, k)."""
    from asynclab.engine import seed_keys
    from asynclab.engine._core import seed_key_data, seed_keys_batch

    init_key, noise_key = jax.random.split(jax.random.key(seed))
    workers = [jax.random.fold_in(noise_key, k) for k in range(5)]
    got_init, got_workers = seed_keys(seed, 5)
    assert np.array_equal(jax.random.key_data(got_init), jax.random.key_data(init_key))
    assert np.array_equal(jax.random.key_data(got_workers),
                          np.stack([jax.random.key_data(w) for w in workers]))
    batch_init, batch_workers = seed_keys_batch(jnp.asarray([seed, 1], jnp.uint32), 5)
    assert np.array_equal(jax.random.key_data(batch_workers[0]),
                          jax.random.key_data(got_workers))
    assert np.array_equal(jax.random.key_data(batch_init[0]), jax.random.key_data(init_key))
    # the replay's keys, hashed on the host in NumPy: the same data
    host_init, host_workers = seed_key_data([1, seed], 5)
    assert host_init.dtype == host_workers.dtype == np.uint32
    assert np.array_equal(host_init[1], jax.random.key_data(init_key))
    assert np.array_equal(host_workers[1], np.stack([jax.random.key_data(w) for w in workers]))
    assert np.array_equal(host_workers[0], jax.random.key_data(batch_workers[1]))


_OTHER_KEYS = """
import jax, numpy as np
from asynclab.engine._core import seed_key_data, seed_keys
seeds = [0, 7, 2**31 + 5, 2**32 - 1]
for n, name, value, width in ((3, "jax_threefry_partitionable", False, 2),
                              (5, "jax_default_prng_impl", "rbg", 4)):
    jax.config.update(name, value)
    init, workers = seed_key_data(seeds, n)
    assert init.shape == (4, width) and workers.shape == (4, n, width), (name, init.shape)
    for i, seed in enumerate(seeds):
        want_init, want_workers = seed_keys(seed, n)
        assert np.array_equal(init[i], jax.random.key_data(want_init)), (name, seed)
        assert np.array_equal(workers[i], jax.random.key_data(want_workers)), (name, seed)
        # and jax.random's own split and fold_in, the oracle
        first, noise = jax.random.split(jax.random.key(seed))
        assert np.array_equal(init[i], jax.random.key_data(first)), (name, seed)
        for k in range(n):
            assert np.array_equal(workers[i, k],
                                  jax.random.key_data(jax.random.fold_in(noise, k))), (name, k)
print("ok")
"""


@pytest.mark.slow  # a fresh process for an edge setting; the default keys are checked above
def test_keys_that_are_not_the_default_threefry_come_from_jax():
    # Threefry that is not partitionable, and another generator: the replay's key data
    # are still every seed's seed_keys (made by JAX, not by the host's hash); a fresh
    # process, since the settings are global
    proc = children.run("-c", _OTHER_KEYS)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
