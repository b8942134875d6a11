"""Benchmarks. Run them all with ``python -m bench``; each prints ratios against a baseline
measured in the same run, since absolute times on shared machines mean little."""
