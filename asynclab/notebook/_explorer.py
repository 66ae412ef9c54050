"""An interactive explorer of one run: every setting of a run as a control, and the
pictures of the run (paths on the surface, loss against time and commits, staleness),
redrawn when a control changes; a time slider scrubs through the run.

The run is :func:`asynclab.run` on a 2-D surface; its replay is compiled once per
structure (problem, rule and its static hyperparameters, n, budget, seeds, σ²), so
moving a real-valued control (η, a momentum, heterogeneity, the straggler, the
compute-time shape) replays without compiling. The picture is drawn with
:mod:`asynclab.plot` into one matplotlib figure whose surface is drawn once per
problem, and shown as a PNG image widget (no notebook-side matplotlib backend needed,
so it works the same in Jupyter and in a served page).
"""

from __future__ import annotations

import html
import math
import time
from contextlib import contextmanager

import ipywidgets as widgets
import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

from .. import _files, _validate
from .._errors import ConfigError
from ..cluster import Cluster, ComputeTime, Straggler, heterogeneous
from ..engine import prepare, run, schedules
from ..plot import clip_staleness, draw_contours, draw_loss, draw_staleness, draw_timeline
from ..problems import get_problem
from ..rules import RULES
from ._controls import (
    NOISE_MAX,
    STYLE,
    SURFACES,
    WIDE,
    group_size_choice,
    group_sizes,
    rule_controls,
    run_controls,
    state_note,
)

#: Rules that run one worker: choosing one sets n = 1.
ONE_WORKER_RULES = ("sequential_sgd",)

_TAB20 = matplotlib.colormaps["tab20"]
_PLAIN = FuncFormatter(lambda value, _: f"{value:g}")


def explorer_cluster(*, workers: int, distribution: str, shape: float, heterogeneity: float,
                     straggler_worker: int, straggler_at: float, straggler_delay: float,
                     group_size: int = 1, seed: int = 0) -> Cluster:
    """The cluster of the explorer's controls: one distribution of compute times (mean
    1 s per local step), lognormal per-worker speeds of spread ``heterogeneity``, and a
    straggler (none when ``straggler_delay`` is 0)."""
    stragglers = ()
    if straggler_delay > 0:
        stragglers = (Straggler(worker=straggler_worker, delay=straggler_delay,
                                at_time=straggler_at),)
    scale = heterogeneous(workers, heterogeneity, rng=seed) if heterogeneity > 0 else None
    return Cluster(workers, ComputeTime(distribution, 1.0, shape), time_scale=scale,
                   stragglers=stragglers, group_size=group_size)


def worker_paths(result, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each worker's parameters after its local work, as ``(commit indices, points)``.

    Asynchronous rules record the committing worker's parameters at each commit;
    synchronous ones every worker's at each round.
    """
    if not hasattr(result, "worker_path"):
        raise ConfigError(f"worker_paths: give a Result, got {type(result).__name__}")
    if result.worker_path is None:
        raise ConfigError("worker_paths: this result recorded no worker paths; replay with "
                          "record_paths=True (the default for problems of dimension <= 2)")
    seed = _validate.count(seed, "seed (an index into result.seeds)", low=0,
                           high=result.n_seeds - 1)
    path = result.worker_path[seed]
    if path.ndim == 3:  # synchronous: (rounds, n, d)
        rounds = np.arange(path.shape[0])
        return [(rounds, path[:, k]) for k in range(path.shape[1])]
    who = result.worker[result.trace_index[seed]]
    return [(np.flatnonzero(who == k), path[who == k]) for k in range(int(who.max()) + 1)]


def explorer_schedule(settings: dict):
    """The first seed's schedule of a run of these :meth:`Explorer.settings`, simulated
    again with its activity (what every worker did when): the trace the run replayed,
    plus ``trace.activity``."""
    options = {k: v for k, v in settings.items() if k != "progress"}
    return schedules(prepare(**options), activity=True)[0]


class Explorer:
    """Every control of a run, and the run's pictures, updated when a control changes.

    Display it in a notebook (it is its own widget). ``controls`` holds the widgets by
    name (set ``.value`` to drive it from code); ``result`` is the last run;
    ``artists`` the plotted lines (``"center"``, ``"workers"``, ``"loss_time"``,
    ``"timeline"``: each worker's commits against time, coloured by staleness, over its
    computing / communicating / waiting intervals) and ``"staleness"`` bars; ``trace``
    the first seed's schedule with its activity (``explorer_schedule``);
    ``message`` shows a summary or the reason a combination cannot run (the
    :class:`asynclab.ConfigError` text);
    ``timings`` the seconds the last update spent replaying and drawing.

    Args:
      problem: the problem control's starting value (a name).
      rule: the rule control's starting value (a name).
      workers: the starting number of workers n.
      learning_rate: the starting η, in 1/gradient units.
      noise: the starting σ², the variance of the additive Gaussian gradient noise.
      commits: the starting budget of server updates.
      seeds: the starting number of seeds.
      straggler_delay: seconds the straggler's one local step takes longer (0: none).
      dpi: pixels per inch of the picture as shown (it is rendered at
        ``PIXEL_RATIO`` times that).
    """

    def __init__(self, problem: str = "beale", rule: str = "downpour", *, workers: int = 4,
                 learning_rate: float = 5e-3, noise: float = 10.0, commits: int = 2000,
                 seeds: int = 4, straggler_delay: float = 40.0, dpi: int = 72):
        if problem not in SURFACES:
            raise ConfigError(f"problem must be one of {', '.join(SURFACES)}, got {problem!r}")
        if rule not in RULES:
            raise ConfigError(f"unknown rule {rule!r}; available: {', '.join(RULES)}")
        # every start value within its control's range (a slider would clamp it silently)
        noise = _validate.number(noise, "noise", low=0, high=NOISE_MAX)
        workers = _validate.count(workers, "workers", high=32)
        learning_rate = _validate.number(learning_rate, "learning_rate", low=1e-4, high=1.0)
        commits = _validate.count(commits, "commits", low=100, high=5000)
        seeds = _validate.count(seeds, "seeds", high=32)
        straggler_delay = _validate.number(straggler_delay, "straggler_delay", low=0,
                                           high=500)
        dpi = _validate.count(dpi, "dpi", low=10, high=600)
        self.dpi = dpi
        self.result = None
        self.trace = None
        self.error: Exception | None = None
        self.timings: dict[str, float] = {}
        self._hold_depth = 0
        self._pending = False
        self._drawn_problem = None
        self.artists: dict = {}
        c = run_controls(problem, rule, workers=workers, learning_rate=learning_rate,
                         noise=noise, commits=commits, seeds=seeds,
                         straggler_delay=straggler_delay)
        self.controls = c
        self.rule_box = widgets.VBox()
        self._set_rule_controls(rule)

        self.time = widgets.IntSlider(value=commits, min=0, max=commits,
                                      description="commit shown", style=STYLE,
                                      layout=WIDE)
        self.time.add_class("asynclab-time")
        self.play = widgets.Play(value=commits, min=0, max=commits, step=max(commits // 50, 1),
                                 interval=100, description="play")
        widgets.jslink((self.play, "value"), (self.time, "value"))
        self.message = widgets.HTML()
        self.image = widgets.Image(format="png")
        self.image.add_class("asynclab-picture")

        self.figure = Figure(figsize=(11, 8), dpi=dpi)
        FigureCanvasAgg(self.figure)
        # a fixed layout: tight_layout on every redraw would cost more than the drawing
        grid = self.figure.add_gridspec(2, 2, left=0.07, right=0.98, bottom=0.07, top=0.91,
                                        wspace=0.22, hspace=0.3)
        self.axes = {
            "paths": self.figure.add_subplot(grid[0, 0]),
            "staleness": self.figure.add_subplot(grid[0, 1]),
            "loss_time": self.figure.add_subplot(grid[1, 0]),
            "timeline": self.figure.add_subplot(grid[1, 1]),
        }

        # a change of the rule or of n first rebuilds the controls that depend on it (the
        # rule's own; the straggler's worker and mixed's group size), then runs once
        for name, control in c.items():
            if name not in ("rule", "workers"):
                control.observe(self._on_change, names="value")
        c["rule"].observe(self._on_rule, names="value")
        c["workers"].observe(self._on_workers, names="value")
        c["distribution"].observe(self._on_distribution, names="value")
        self._on_distribution({"new": c["distribution"].value})
        self.time.observe(self._on_time, names="value")

        run_box = widgets.VBox([widgets.HTML("<b>run</b>"), c["problem"], c["rule"],
                                c["workers"], c["local_steps"], c["learning_rate"],
                                self.rule_box, c["noise"], c["commits"], c["seeds"]])
        cluster_box = widgets.VBox([widgets.HTML("<b>cluster</b> (mean 1 s per local step)"),
                                    c["distribution"], c["shape"], c["heterogeneity"],
                                    c["straggler_worker"], c["straggler_at"],
                                    c["straggler_delay"]])
        # controls in a sidebar beside the picture: a control and its effect are seen
        # together on a 1366 × 768 screen
        controls = widgets.VBox([run_box, cluster_box],
                                layout=widgets.Layout(width="440px", flex="0 0 auto"))
        self.image.layout = widgets.Layout(width=f"{int(11 * dpi)}px", max_width="100%",
                                           height="auto")
        picture = widgets.VBox([self.message, self.image,
                                widgets.HBox([self.play, self.time])],
                               layout=widgets.Layout(flex="1 1 auto", min_width="0"))
        self.widget = widgets.HBox([controls, picture],
                                   layout=widgets.Layout(align_items="flex-start"))
        self.update()

    # ------------------------------------------------------------------ display
    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

    # ------------------------------------------------------------------ controls
    def _set_rule_controls(self, rule: str) -> None:
        for control in getattr(self, "rule_controls", {}).values():
            control.unobserve(self._on_change, names="value")
        self.rule_controls = rule_controls(rule, workers=self.controls["workers"].value)
        for control in self.rule_controls.values():
            control.observe(self._on_change, names="value")
        info = RULES[rule]
        self.rule_box.children = tuple(self.rule_controls.values()) + (
            (state_note(rule),) if info.state_options else ())
        has_steps = "local_steps" in info.parameters
        steps = self.controls["local_steps"]
        steps.disabled = not has_steps
        steps.value = info.defaults.get("local_steps", 1) if has_steps else 1

    @contextmanager
    def hold(self):
        """Change several controls with one update at the end."""
        self._hold_depth += 1
        try:
            yield self
        finally:
            self._hold_depth -= 1
            if self._hold_depth == 0 and self._pending:
                self.update()

    def _on_change(self, change) -> None:
        if self._hold_depth:
            self._pending = True
        else:
            self.update()

    def _on_rule(self, change) -> None:
        with self.hold():
            if change["new"] in ONE_WORKER_RULES:
                self.controls["workers"].value = 1
            self._set_rule_controls(change["new"])
            self._pending = True

    def _on_workers(self, change) -> None:
        workers = change["new"]
        with self.hold():
            self.controls["straggler_worker"].max = max(workers - 1, 0)
            group = self.rule_controls.get("group_size")
            if group is not None:
                value = group_size_choice(workers, group.value)
                group.options = group_sizes(workers)
                group.value = value
            self._pending = True

    def _on_distribution(self, change) -> None:
        # only the lognormal and gamma distributions have a shape
        self.controls["shape"].disabled = change["new"] not in ("lognormal", "gamma")

    def _on_time(self, change) -> None:
        if self.result is not None:
            self._show_time(change["new"])
            self._render()

    def settings(self) -> dict:
        """The keyword arguments of :func:`asynclab.run` that the controls describe."""
        c = {name: control.value for name, control in self.controls.items()}
        rule = c["rule"]
        info = RULES[rule]
        hyper = {name: control.value for name, control in self.rule_controls.items()}
        group_size = int(hyper.get("group_size", 1))
        cluster = explorer_cluster(
            workers=c["workers"], distribution=c["distribution"], shape=c["shape"],
            heterogeneity=c["heterogeneity"], straggler_worker=c["straggler_worker"],
            straggler_at=c["straggler_at"], straggler_delay=c["straggler_delay"],
            group_size=group_size)
        options = dict(cluster=cluster, commits=c["commits"], seeds=range(c["seeds"]),
                       learning_rate=c["learning_rate"], noise=c["noise"],
                       record_every=max(1, math.ceil(c["commits"] / 2000)),
                       record_paths=True, progress=False, **hyper)
        if "local_steps" in info.parameters:
            options["local_steps"] = c["local_steps"]
        return {"problem": get_problem(c["problem"]), "rule": rule, **options}

    # ------------------------------------------------------------------ updating
    def update(self) -> None:
        """Run the controls' configuration and redraw (a clear message instead when the
        combination cannot run).

        Any other error is shown on the page too, with its type, and kept in
        ``self.error`` (a widget callback's exception would otherwise vanish, leaving a
        stale picture and controls that seem dead); ``self.error`` is None after a
        successful update.
        """
        self._pending = False
        self.error = None
        start = time.perf_counter()
        try:
            self._update(start)
        except Exception as error:  # noqa: BLE001 - shown on the page, never swallowed
            if isinstance(error, ConfigError):
                text = "<b>cannot run this combination:</b> "
            else:
                self.error = error
                text = f"<b>the explorer failed:</b> {html.escape(type(error).__name__)}: "
            text += html.escape(str(error), quote=False)
            self.message.value = f"<span style='color:#b00020'>{text}</span>"
            self.timings = {"replay": time.perf_counter() - start, "draw": 0.0}

    def _update(self, start: float) -> None:
        settings = self.settings()
        spec = prepare(**{k: v for k, v in settings.items() if k != "progress"})
        result = run(spec, progress=False)
        self.trace = schedules(spec, activity=True)[0]
        replayed = time.perf_counter()
        self.result = result
        self._draw(result)
        commits = result.n_events
        for slider in (self.time, self.play):
            slider.max = commits
        # showing the whole run is the natural default after a change
        if self.time.value != commits:
            self.time.unobserve(self._on_time, names="value")
            self.time.value = commits
            self.time.observe(self._on_time, names="value")
        self._show_time(commits)
        self._render()
        self.message.value = _summary(result)
        self.timings = {"replay": replayed - start, "draw": time.perf_counter() - replayed}

    def _draw(self, result) -> None:
        problem = get_problem(self.controls["problem"].value)
        ax = self.axes["paths"]
        if self._drawn_problem is not problem:
            # clearing the axes removes the old paths with the old contours
            ax.cla()
            draw_contours(ax, problem, resolution=120, levels=25)
            self._drawn_problem = problem
        else:
            for artist in self.artists.get("workers", []) + self.artists.get("center", []):
                artist.remove()
        self.artists["workers"] = self.artists["center"] = []
        self._paths = worker_paths(result)
        workers = []
        for k, (_, points) in enumerate(self._paths):
            color = _TAB20(k % 20)
            workers.append(ax.plot(points[:, 0], points[:, 1], "-", lw=0.8, alpha=0.6,
                                   color=color)[0])
        center = result.center_path[0]
        line = ax.plot(center[:, 0], center[:, 1], "-", color="tab:red", lw=1.6,
                       label="centre (seed 0)")[0]
        marker = ax.plot(*center[-1], "o", color="tab:red", markeredgecolor="k")[0]
        self.artists["workers"] = workers
        self.artists["center"] = [line, marker]
        ax.set_title(f"central variable and {len(workers)} worker paths (seed 0)")
        if ax.get_legend() is None:
            ax.legend(loc="lower left", fontsize=8)

        ax = self.axes["loss_time"]
        ax.cla()
        self.artists["loss_time"] = draw_loss(ax, result, against="time")
        # plain tick labels: log-axis mathtext labels cost more to render than the data
        ax.yaxis.set_major_formatter(_PLAIN)
        ax.yaxis.set_minor_formatter(NullFormatter())
        self.artists["loss_time_now"] = ax.axvline(0, color="k", lw=0.8, ls=":")
        ax.set_title(f"central loss, {result.n_seeds} seed(s)")
        ax = self.axes["timeline"]
        ax.cla()
        self.artists["timeline"] = draw_timeline(ax, self.trace, legend=False)
        ax.set_title(ax.get_title() + " (seed 0)")
        self.artists["timeline_now"] = ax.axvline(0, color="k", lw=0.8, ls=":")
        ax = self.axes["staleness"]
        ax.cla()
        self.artists["staleness"] = draw_staleness(ax, result)
        ax.set_title("staleness of the commits")
        self.artists["staleness_outliers"] = clip_staleness(ax, result)
        config = result.config
        hp = config.get("hyperparameters", {})
        self.figure.suptitle(
            f"{config.get('rule')} on {config.get('problem')}: n = {config.get('workers')}, "
            f"λ = {hp.get('local_steps', 1)}, η = {hp.get('learning_rate', 0):.3g}, "
            f"σ² = {config.get('noise', 0):g}")

    def _show_time(self, commit: int) -> None:
        """Cut the paths at ``commit`` and mark it on the loss curves."""
        result = self.result
        records = int(np.searchsorted(result.record_events, commit, side="right"))
        center = result.center_path[0][:records]
        line, marker = self.artists["center"]
        line.set_data(center[:, 0], center[:, 1])
        marker.set_data([center[-1, 0]], [center[-1, 1]])
        for artist, (index, points) in zip(self.artists["workers"], self._paths, strict=True):
            shown = points[: int(np.searchsorted(index, commit, side="left"))]
            artist.set_data(shown[:, 0], shown[:, 1])
        when = 0.0 if commit == 0 else float(result.time[result.trace_index[0], commit - 1])
        for key in ("loss_time_now", "timeline_now"):
            self.artists[key].set_xdata([when, when])

    def _render(self) -> None:
        # twice the pixels of the shown size: sharp on screens of pixel ratio 2
        self.image.value = _files.figure_bytes(self.figure, format="png",
                                               dpi=PIXEL_RATIO * self.dpi,
                                               pil_kwargs={"compress_level": 1})


#: The picture is rendered at this many pixels per shown pixel (sharp on HiDPI screens).
PIXEL_RATIO = 2


def _summary(result) -> str:
    final = result.final_loss
    diverged = int(result.diverged.sum())
    hist = result.staleness_histogram()
    mean = float(np.average(np.arange(hist.size), weights=hist)) if hist.sum() else 0.0
    text = (f"{result.n_events} commits in {float(result.simulated_time[0]):.1f} s of "
            f"simulated time; mean staleness {mean:.2f}; final central loss "
            f"(median over seeds) {np.nanmedian(final) if diverged < final.size else np.nan:.3g}")
    if diverged:
        text += (f"; <span style='color:#b00020'>{diverged} of {final.size} seed(s) "
                 "diverged</span> (try a smaller η)")
    return text
