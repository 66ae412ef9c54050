"""The names the command line lists in its help, kept apart from what they name.

Building the parser must not import JAX, SimPy or the figures (``asynclab --help`` would
take seconds), so the help reads these tuples. ``tests/test_cli.py`` checks each against
the registry it mirrors; the registries of distributions and initialisations are these
tuples themselves.
"""

#: Problems, as registered in ``asynclab.problems.PROBLEMS``.
PROBLEMS = ("beale", "rosenbrock", "booth", "himmelblau", "quadratic", "linear_regression",
            "digits", "mnist", "collider")

#: Compute-time distributions (``asynclab.cluster.DISTRIBUTIONS``).
DISTRIBUTIONS: tuple[str, ...] = ("constant", "exponential", "lognormal", "gamma")

#: Initialisations of a run (``asynclab.engine.INITS``).
INITS = ("start", "random", "random_per_worker")

#: Figures, in the order they are built (``asynclab.figures.FIGURES``).
FIGURES = ("staleness", "straggler", "implicit_momentum", "momentum_tuning",
           "model_averaging_paths", "model_averaging_mc", "easgd", "agn", "real_cluster",
           "mnist_rules", "scaling")
