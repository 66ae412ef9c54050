"""Assemble figures/README.md from the per-figure notes in figures/notes/.

Run: python figures/_assemble.py
"""

from pathlib import Path

HERE = Path(__file__).parent
ORDER = ["staleness", "straggler", "implicit_momentum", "momentum_tuning",
         "model_averaging_paths", "model_averaging_mc", "easgd", "agn", "real_cluster",
         "mnist_rules", "scaling"]

HEADER = """# Figures

Every figure is registered in `asynclab.figures` (shipped with the package): its
simulation is a study in `asynclab.studies` (config in, data out) and its drawing is in
`asynclab.plot`. `asynclab figures` rebuilds them all (into `./figures` when run from the
repository root, else into the current folder); `asynclab figures NAME... [--quick]
[--out DIR]` some of them. Each run also writes the study's data to `figures/data/NAME.npz`
(`asynclab.studies.load`), so a figure can be redrawn without re-simulating. The tests
run every figure's quick version and check its claim numerically.

Run times below were measured on the project's 2-core machine. The whole
`asynclab figures` took **652 s (10.9 min)** on 2026-11-26 at load ≈ 1 (model_averaging_mc
494 s, easgd 57 s, momentum_tuning 40 s, implicit_momentum 16 s, agn 16 s,
model_averaging_paths 12 s, straggler 12 s, staleness 5 s); `asynclab figures --quick`
took 44 s. Since then momentum_tuning became a joint (η, μ) sweep (150 s) and easgd
gained its synchronous stability region (144 s), both measured at load ≈ 8–10 (see their
notes).

Later on 2026-11-26 the executors stopped handing reductions to XLA's CPU library (a
seed's run used to change in its last bits with the number of seeds replayed beside it;
see `docs/design.md`). Every figure with a replay was rebuilt then, at load ≈ 1–2: eight
in **597 s** (model_averaging_mc 455 s, momentum_tuning 33 s, easgd 24 s,
implicit_momentum 20 s, agn 20 s, model_averaging_paths 18 s, straggler 17 s,
real_cluster 11 s), then mnist_rules (262 s) and scaling (133 s). Straggler,
implicit_momentum, easgd, agn and model_averaging_mc gave the same bits;
model_averaging_paths, momentum_tuning and real_cluster moved in the last digits
(relative ≤ 4e-6; no quoted number, no pixel changed); mnist_rules moved one table entry
by 0.001 and scaling its n = 32 synchronous runs (their notes say what moved).
"""


def main():
    notes = HERE / "notes"
    names = [n for n in ORDER if (notes / f"{n}.md").exists()]
    names += sorted(p.stem for p in notes.glob("*.md") if p.stem not in ORDER)
    text = HEADER + "".join("\n" + (notes / f"{n}.md").read_text().strip() + "\n"
                            for n in names)
    (HERE / "README.md").write_text(text)


if __name__ == "__main__":
    main()
