"""The bundle's entry script (PyInstaller needs a file): the same ``main`` as ``python -m app``."""

import sys

from app.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
