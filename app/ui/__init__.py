"""The PySide6 user interface: thin views and one engine worker bridge."""
