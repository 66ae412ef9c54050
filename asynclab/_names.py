"""The names the command line lists in its help, kept apart from what they name.

Building the parser must not import JAX, SimPy or the figures (``asynclab --help`` would
take seconds), so the help reads these tuples. ``tests/test_cli.py`` checks each against
the registry it mirrors; the registries of distributions and initialisations are these
tuples themselves. The problems are not listed here: the help names them from
``asynclab.problems.PROBLEMS`` when it is shown (see ``asynclab.cli._flags``).
"""

#: Compute-time distributions (``asynclab.cluster.DISTRIBUTIONS``).
DISTRIBUTIONS: tuple[str, ...] = ("constant", "exponential", "lognormal", "gamma")

#: Initialisations of a run (``asynclab.engine.INITS``).
INITS = ("start", "random", "random_per_worker")

#: What becomes of the work that misses a semi-synchronous round
#: (``asynclab.cluster.SemiSync.late``).
LATE = ("discard", "stale")

#: Figures, in the order they are built (``asynclab.figures.FIGURES``).
FIGURES = ("staleness", "straggler", "implicit_momentum", "momentum_tuning",
           "model_averaging_paths", "model_averaging_mc", "easgd", "agn", "real_cluster",
           "mnist_rules", "scaling", "semisync", "async_diloco", "movers", "failures")

#: The scores a sweep's points are ranked by (``asynclab.engine.SCORES``).
SCORES = ("final_loss", "commits_to_target", "success_rate", "final_accuracy",
          "time_to_accuracy")

#: What makes the schedules (``asynclab.cluster.SIMULATORS``).
SIMULATORS = ("auto", "simpy", "arrays")
