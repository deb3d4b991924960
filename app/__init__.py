"""Callisto: a desktop chat application for local language models.

``app.engine``, ``app.tools`` and ``app.storage`` are the Qt-free core;
``app.ui`` is the only package that imports PySide6.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
