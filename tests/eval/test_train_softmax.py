"""The shared softmax-regression solver: separable data, balancing, raw columns."""

from __future__ import annotations

from tests.support.components import need_module

np = need_module("numpy", "dev")

from claimfsm.eval.train.softmax import fit_softmax  # noqa: E402


def _blobs(n: int, k: int) -> tuple[object, object]:
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(k), n)
    x = rng.normal(size=(n * k, 3)) * 0.3 + np.eye(k, 3)[y] * 3.0
    return x, y.astype(np.int64)


def test_it_separates_separable_classes_deterministically() -> None:
    x, y = _blobs(30, 3)
    a = fit_softmax(x, y, k=3, l2=1e-3, iters=300, balanced=True)
    b = fit_softmax(x, y, k=3, l2=1e-3, iters=300, balanced=True)
    assert (a.probabilities(x).argmax(axis=1) == y).mean() == 1.0
    assert np.array_equal(a.weights, b.weights) and np.array_equal(a.bias, b.bias)


def test_balancing_lifts_a_rare_class() -> None:
    rng = np.random.default_rng(1)
    y = np.array([0] * 190 + [1] * 10, dtype=np.int64)
    x = rng.normal(size=(200, 2)) + y[:, None] * 1.0  # overlapping: the prior matters
    plain = fit_softmax(x, y, k=2, l2=1e-3, iters=300, balanced=False)
    fair = fit_softmax(x, y, k=2, l2=1e-3, iters=300, balanced=True)
    rare_fair = (fair.probabilities(x).argmax(1) == 1).sum()
    rare_plain = (plain.probabilities(x).argmax(1) == 1).sum()
    assert rare_fair > rare_plain


def test_columns_from_raw_from_are_not_standardised() -> None:
    x, y = _blobs(20, 2)
    f = fit_softmax(x, y, k=2, l2=1e-3, iters=50, balanced=False, raw_from=1)
    assert f.mean[1:].tolist() == [0.0, 0.0] and f.scale[1:].tolist() == [1.0, 1.0]
    assert f.mean[0] != 0.0
