"""Peer of `make bench`: the lesson's model vectorised with numpy over a grid of
lesson.json, one core, as a data scientist might write it: every point of a
batch and every client advance together, one second at a time. The semantics
are lesson_grid.mjs's (fixed window, sliding window, token bucket per client).

Usage: python3 bench/peers/numpy_grid.py bench|large   (numpy: pip install
numpy, or Debian's python3-numpy). Prints one JSON line: peer, grid, points,
seconds, points_per_s and checksum, the false cut summed over all points.
"""

import json
import pathlib
import sys
import time

import numpy as np

CFG = json.loads((pathlib.Path(__file__).parent / "lesson.json").read_text())
T = CFG["duration_s"]


def arrivals(classes):
    """Requests per second, one row per client of the given classes."""
    rows = [c for c in CFG["clients"] if c["class"] in classes]
    a = np.zeros((len(rows), T))
    for i, c in enumerate(rows):
        for t0, t1, r in c["segments"]:
            a[i, t0:t1] = r
    return a


LEGIT = arrivals({"legit"})  # only the legit clients count towards the false cut


def fixed_window(limits, win):
    """Admitted requests per (limit, client) under a fixed window of win s."""
    count = np.zeros((len(limits), LEGIT.shape[0]))
    total = np.zeros_like(count)
    room = limits[:, None]
    for t in range(T):
        if t % win == 0:
            count[:] = 0
        take = np.minimum(LEGIT[:, t], np.maximum(0.0, room - count))
        count += take
        total += take
    return total


def sliding_window(limits, win):
    """Admitted requests per (limit, client) under a sliding window of win s."""
    taken = np.zeros((T, len(limits), LEGIT.shape[0]))
    recent = np.zeros(taken.shape[1:])  # admitted in the previous win-1 seconds
    room = limits[:, None]
    for t in range(T):
        if t - win >= 0:
            recent -= taken[t - win]
        # recent now covers seconds t-win+1 .. t-1
        taken[t] = np.minimum(LEGIT[:, t], np.maximum(0.0, room - recent))
        recent += taken[t]
    return taken.sum(axis=0)


def token_bucket(capacities, rate):
    """Admitted requests per (capacity, client) under a token bucket."""
    cap = np.repeat(capacities[:, None], LEGIT.shape[0], axis=1)
    tokens = cap.copy()
    total = np.zeros_like(cap)
    for t in range(T):
        np.minimum(cap, tokens + rate, out=tokens)
        take = np.minimum(LEGIT[:, t], tokens)
        tokens -= take
        total += take
    return total


def span(v, listed):
    return np.array(v if listed else range(v[0], v[1] + 1), dtype=float)


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "bench"
    if name not in CFG["grids"]:
        sys.exit(f"numpy_grid: unknown grid {name!r} (bench, large)")
    g = CFG["grids"][name]
    start = time.perf_counter()
    windows = span(g["window_s"], name == "bench").astype(int)
    limits, rates, capacities = span(g["limit"], False), span(g["rate"], False), span(g["capacity"], False)
    offered = LEGIT.sum(axis=1)
    points, checksum = 0, 0.0
    runs = [(fixed_window, limits, w) for w in windows] + [(sliding_window, limits, w) for w in windows]
    runs += [(token_bucket, capacities, r) for r in rates]
    for fn, xs, y in runs:
        admitted = fn(xs, y)
        checksum += (offered[None, :] - admitted).sum()
        points += len(xs)
    seconds = time.perf_counter() - start
    print(json.dumps({"peer": "numpy", "grid": name, "points": points, "seconds": seconds,
                      "points_per_s": points / seconds, "checksum": int(checksum)}))


if __name__ == "__main__":
    main()
