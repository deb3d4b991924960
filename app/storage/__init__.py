"""Qt-free storage: SQLite conversation history and the settings file.

Submodules: ``paths`` (where things live), ``settings`` (``load_settings``/``save_settings``),
``history`` (``History``), ``export`` (a conversation as Markdown or JSON), ``atomic`` (atomic
file replacement). Import them directly; this
package module stays import-light.
"""

__all__ = ["atomic", "export", "history", "paths", "settings"]
