"""The UCI front: ``protocol.py`` reads commands and answers them, ``loading.py`` makes the evaluator an option asks
for, and ``bench.py`` / ``bench_phases.py`` are the customary ``bench`` command."""
