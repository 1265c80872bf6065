"""prsd's benchmark harness: the workloads of BENCH.md through prsd and the alternatives.

``python -m bench --suite quick|full`` runs them side by side and writes the tables
under ``bench/results/``; see ``bench/README.md``.
"""
