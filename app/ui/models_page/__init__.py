"""The Models page, made of panes: recommended models, Hugging Face search with the model card,
downloads and the local library, composed by :class:`ModelsPage` (``page.py``)."""

from __future__ import annotations

from app.ui.models_page.page import ModelsPage
from app.ui.models_page.search import PREFERRED_QUANTS, recommended_file

__all__ = ["PREFERRED_QUANTS", "ModelsPage", "recommended_file"]
