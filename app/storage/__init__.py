"""Qt-free storage: SQLite conversation history and the settings file."""
