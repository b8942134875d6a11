"""The trained claim verifier: its training pairs, its training, and its measurement."""
