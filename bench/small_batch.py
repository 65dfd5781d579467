"""Small-batch gradients (issue 17, "Small batches"): s2sad's grad against the
hand-written numpy gradient (bench/arrays.py's losses), timed in one process,
interleaved, 5 repeats, median of each; the ratio is what to read (absolute times
move with the machine's load).

    python bench/small_batch.py            # n = 32, 1,000, 10,000
    python bench/small_batch.py 32         # n = 32 only
"""
import os
import sys
import timeit

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]     # bench's losses; this checkout's s2sad
import arrays  # noqa: E402
import s2sad  # noqa: E402

LOSSES = {"mlp": (arrays.mlp_loss, arrays.mlp_hand), "logreg": (arrays.logreg_loss, arrays.logreg_hand),
          "softmax": (arrays.softmax_loss, arrays.softmax_hand)}
REPEATS = 5


def calls_per_repeat(n: int) -> int:
    """About 50 ms a repeat."""
    return 2000 if n <= 100 else 200 if n <= 2000 else 50 if n <= 20_000 else 5


def row(key: str, n: int) -> tuple[float, float]:
    """(s2sad's median time, the hand-written gradient's), seconds per call."""
    loss, hand = LOSSES[key]
    args, nargs = arrays.make_args(key, n)
    g = s2sad.grad(loss, argnums=tuple(range(nargs)))
    want = hand(*args)
    for a, b in zip(g(*args), want if isinstance(want, tuple) else (want,)):   # they agree (and are warm)
        np.testing.assert_allclose(np.reshape(a, np.shape(b)), b, rtol=1e-9, atol=1e-12)
    num = calls_per_repeat(n)
    times = {"s2sad": [], "hand": []}
    for _ in range(REPEATS):
        for name, f in (("s2sad", g), ("hand", hand)):
            times[name].append(timeit.timeit(lambda: f(*args), number=num) / num)
    return float(np.median(times["s2sad"])), float(np.median(times["hand"]))


def main(sizes) -> None:
    print(f"{'loss':8s} {'n':>7s} {'s2sad us':>10s} {'hand us':>10s} {'ratio':>6s}")
    for key in LOSSES:
        for n in sizes:
            a, b = row(key, n)
            print(f"{key:8s} {n:>7d} {a * 1e6:10.1f} {b * 1e6:10.1f} {a / b:6.2f}", flush=True)


if __name__ == "__main__":
    main([int(s) for s in sys.argv[1:]] or [32, 1000, 10_000])
