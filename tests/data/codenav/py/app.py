"""Entry point."""
import pkg.base
from pkg.formats import JsonReader, StrictJsonReader


def run(path):
    reader = StrictJsonReader(path)
    return reader.read()


def legacy(path):
    return pkg.base.Reader(path).read()


if __name__ == "__main__":
    print(run("a.json"), legacy("b.txt"), JsonReader)
