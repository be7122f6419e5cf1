"""The base reader."""
import os


class Reader:
    """Reads a file by name."""

    kind = "plain"

    def __init__(self, path):
        self.path = path
        self._cache = None

    def read(self):
        return self._load(os.path.basename(self.path))

    def _load(self, name):
        # Subclasses parse the text.
        return name
