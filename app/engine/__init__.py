"""Qt-free engine: templates, tool-call formats, generation, the chat loop, models."""
