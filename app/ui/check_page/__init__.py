"""The Check page ("Will it call?" in the window): the form and the run (``page.py``), the run's
thread (``runner.py``) and the results matrix with its details (``results.py``)."""

from __future__ import annotations

from app.ui.check_page.page import CheckPage
from app.ui.check_page.results import cell_colour
from app.ui.check_page.runner import CheckRunner, HostedTarget

__all__ = ["CheckPage", "CheckRunner", "HostedTarget", "cell_colour"]
