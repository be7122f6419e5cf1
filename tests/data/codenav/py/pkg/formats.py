"""Readers of structured text."""
import json as js

from pkg.base import Reader
from . import base


class JsonReader(Reader):
    def read(self):
        text = super().read()
        return js.loads(text)


class StrictJsonReader(JsonReader, base.Reader):
    def read(self):
        data = JsonReader.read(self)
        self.check(data)
        return data

    def check(self, data):
        if not data:
            raise ValueError(self.path)
