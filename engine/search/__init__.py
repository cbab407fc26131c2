"""The tree search: ``search.py`` runs a ``go`` (the loop, batches, limits, reporting) over ``tree.py``'s compiled
tree (selection by PUCT, new leaves, backup, the mate solver) and ``nodes.py``'s compiled memory (nodes, their moves
and priors, the evaluation cache); ``timeman.py`` and ``stopping.py`` keep the clock, ``memory.py`` keeps
``RamLimitMb``, ``report.py`` writes what the search says, ``pipeline.py`` and ``workers.py`` decide where leaves are
evaluated, ``root_probe.py`` folds the tactics probe's finds into the root, ``strength.py`` plays at a chosen
``UCI_Elo``, ``tablebase.py`` probes Syzygy and ``mop_up.py`` steers the mate against a lone king."""
