"""Spaces: gymnasium.spaces.Box when gymnasium is importable, else a minimal compatible Box.

The fallback Box has what vector-env users touch: shape, dtype, low, high, sample(), contains(x) / ``in``,
seed(), is_bounded(), equality and a readable repr, with Gymnasium's semantics (float samples: uniform on
bounded dimensions, normal on unbounded ones, exponential on half-bounded ones).
"""
import numpy as np

try:  # pragma: no cover - depends on the installation
    import gymnasium.spaces as _gym_spaces
    HAVE_GYMNASIUM = True
except Exception:  # gymnasium is optional
    _gym_spaces = None
    HAVE_GYMNASIUM = False

__all__ = ["Box", "make_box", "batch_box", "HAVE_GYMNASIUM"]


class Box:
    """A (possibly unbounded) box in R^shape, the minimal counterpart of gymnasium.spaces.Box."""

    def __init__(self, low, high, shape=None, dtype=np.float32, seed=None):
        self.dtype = np.dtype(dtype)
        if shape is None:
            shape = np.broadcast(np.asarray(low), np.asarray(high)).shape
        self._shape = tuple(int(s) for s in shape)
        self.low = np.broadcast_to(np.asarray(low, dtype=self.dtype), self._shape).copy()
        self.high = np.broadcast_to(np.asarray(high, dtype=self.dtype), self._shape).copy()
        if np.any(self.low > self.high):
            raise ValueError("Box: some low > high")
        self.bounded_below = np.isfinite(self.low)
        self.bounded_above = np.isfinite(self.high)
        self._np_random = None
        if seed is not None:
            self.seed(seed)

    @property
    def shape(self):
        return self._shape

    @property
    def np_random(self):
        if self._np_random is None:
            self._np_random = np.random.default_rng()
        return self._np_random

    def seed(self, seed=None):
        self._np_random = np.random.default_rng(seed)
        return [seed]

    def is_bounded(self, manner="both"):
        below, above = bool(np.all(self.bounded_below)), bool(np.all(self.bounded_above))
        if manner == "both":
            return below and above
        if manner == "below":
            return below
        if manner == "above":
            return above
        raise ValueError("manner is not in {'below', 'above', 'both'}")

    def sample(self, mask=None):
        """A random element: uniform where bounded, normal where unbounded, shifted exponential where
        bounded on one side (as gymnasium.spaces.Box.sample)."""
        rng = self.np_random
        low = self.low.astype(np.float64)
        high = self.high.astype(np.float64)
        out = np.empty(self._shape, dtype=np.float64)
        both = self.bounded_below & self.bounded_above
        none = ~self.bounded_below & ~self.bounded_above
        lo_only = self.bounded_below & ~self.bounded_above
        hi_only = ~self.bounded_below & self.bounded_above
        out[none] = rng.normal(size=int(none.sum()))
        out[lo_only] = rng.exponential(size=int(lo_only.sum())) + low[lo_only]
        out[hi_only] = high[hi_only] - rng.exponential(size=int(hi_only.sum()))
        out[both] = rng.uniform(low[both], high[both])
        if np.issubdtype(self.dtype, np.integer):
            out = np.floor(out)
        return out.astype(self.dtype)

    def contains(self, x):
        if not isinstance(x, np.ndarray):
            try:
                x = np.asarray(x, dtype=self.dtype)
            except (ValueError, TypeError):
                return False
        return bool(np.can_cast(x.dtype, self.dtype) and x.shape == self._shape
                    and np.all(x >= self.low) and np.all(x <= self.high))

    def __contains__(self, x):
        return self.contains(x)

    def __eq__(self, other):
        return (isinstance(other, Box) and self._shape == other.shape and self.dtype == other.dtype
                and np.array_equal(self.low, other.low) and np.array_equal(self.high, other.high))

    def __repr__(self):
        def short(a):
            return str(a.flat[0]) if a.size and np.all(a == a.flat[0]) else str(a)
        return "Box(%s, %s, %s, %s)" % (short(self.low), short(self.high), self._shape, self.dtype)


def make_box(low, high, dtype=np.float32, seed=None):
    """A Box (gymnasium's when available) with per-element bounds."""
    low = np.asarray(low, dtype=dtype)
    high = np.asarray(high, dtype=dtype)
    if HAVE_GYMNASIUM:
        return _gym_spaces.Box(low=low, high=high, shape=low.shape, dtype=dtype, seed=seed)
    return Box(low, high, low.shape, dtype, seed)


def batch_box(box, n, seed=None):
    """The batched space of n copies of box (gymnasium.vector.utils.batch_space for a Box)."""
    low = np.broadcast_to(box.low, (n,) + tuple(box.shape))
    high = np.broadcast_to(box.high, (n,) + tuple(box.shape))
    return make_box(low, high, box.dtype, seed)
