"""Programs that drive UCI engines from outside: ``arbor match``, ``arbor puzzles``, ``arbor calibrate``, and the
Elo arithmetic they report with. The engine itself (``engine/`` outside this package) never imports them."""
