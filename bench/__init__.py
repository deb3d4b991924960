"""Callisto's benchmarks (``python -m bench``, ``make bench``): one module per figure, a shared
harness (:mod:`bench.harness`) for rows, medians, interleaving and the table."""

__all__: list[str] = []
