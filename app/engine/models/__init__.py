"""Model management: GGUF metadata, the local library, Hugging Face search and downloads."""
