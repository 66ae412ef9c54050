"""``python -m asynclab.cli``: the ``asynclab`` executable."""

from ._main import console

if __name__ == "__main__":
    console()
