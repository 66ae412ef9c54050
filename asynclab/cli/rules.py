"""``asynclab rules``: the update rules, their hyperparameters and references."""

from __future__ import annotations


def _rules(args) -> int:
    from ..rules import RULES
    from ._own import load

    for source in getattr(args, "imports", None) or ():
        load(source, "--import")

    width = max(len(name) for name in RULES)
    print("hyperparameters marked * are static (a new value compiles a new replay); the "
          "others are traced\nand can be swept (`asynclab sweep --grid NAME=...`). Those "
          "marked + add state when given\n(None, the default, is none; 0.0 is a buffer "
          "that changes nothing):")
    # what each option adds, as the declarations say (one line per distinct text)
    described: dict[tuple[str, str], None] = {}
    for info in RULES.values():
        described.update(dict.fromkeys(info.state_options.items()))
    for name, what in described:
        print(f"  +{name}: {what}")
    print()
    for info in RULES.values():
        kind = f"{info.kind:<5}"
        params = ", ".join(
            ("*" if h.static else "+" if h.adds_state else "")
            + (h.name if h.required or h.adds_state else f"{h.name}={h.default}")
            for h in info.hyperparameters if h.name != "learning_rate")
        print(f"{info.name:<{width}}  {kind}  {info.description}")
        print(f"{'':<{width}}         {params}")
        print(f"{'':<{width}}         ref: {info.reference}")
    return 0
