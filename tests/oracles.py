"""Independent few-line numpy transcriptions used as test oracles."""

import numpy as np


def beale_loss(p):
    """Beale's function over the last axis of ``p`` (any leading shape), in float64."""
    x, y = p[..., 0].astype(np.float64), p[..., 1].astype(np.float64)
    return ((1.5 - x + x * y) ** 2 + (2.25 - x + x * y**2) ** 2
            + (2.625 - x + x * y**3) ** 2)


def beale_gradient(p):
    """∇ of Beale's function, differentiated by hand."""
    x, y = float(p[0]), float(p[1])
    a = 1.5 - x + x * y
    b = 2.25 - x + x * y**2
    c = 2.625 - x + x * y**3
    dx = 2 * a * (y - 1) + 2 * b * (y**2 - 1) + 2 * c * (y**3 - 1)
    dy = 2 * a * x + 2 * b * 2 * x * y + 2 * c * 3 * x * y**2
    return np.array([dx, dy])


def async_sgd(gradient, start, workers, n_workers, learning_rate, local_steps=1):
    """DOWNPOUR by hand: each commit's worker runs its local steps from the centre it
    pulled, adds its accumulated step to the centre, and pulls the new centre."""
    center = np.array(start, dtype=np.float64)
    pulled = [center.copy() for _ in range(n_workers)]
    path = []
    for w in workers:
        params = pulled[w].copy()
        for _ in range(local_steps):
            params = params - learning_rate * gradient(params)
        center = center + (params - pulled[w])
        pulled[w] = center.copy()
        path.append(center.copy())
    return np.array(path)
