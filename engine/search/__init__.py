"""The tree search: ``search.py`` runs a ``go`` (the loop, batches, limits, reporting) over ``tree.py``'s nodes with
``policy.py``'s PUCT; ``timeman.py`` and ``stopping.py`` keep the clock, ``memory.py`` keeps ``RamLimitMb``,
``report.py`` writes what the search says, ``pipeline.py`` and ``workers.py`` decide where leaves are evaluated,
``root_probe.py`` folds the tactics probe's finds into the root, and ``strength.py`` plays at a chosen ``UCI_Elo``."""
