"""tests/clients/tool_args.json, read the same way by every client test (see its _comment).

    table = ToolTable.load()
    problems = table.coverage(served_names)      # [] when every served tool has an entry
    await table.resolve(call, root)               # fills the placeholders, call(tool, args) -> structured
    for tool, arguments in table.calls(served_names): ...
"""

import asyncio
import json
import re
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


class ToolTable:
    def __init__(self, raw):
        self.placeholders = raw.pop("_placeholders", {})
        self.optional = set(raw.pop("_optional", []))
        self.entries = {k: v for k, v in raw.items() if not k.startswith("_")}
        self.values = {}

    @classmethod
    def load(cls):
        return cls(json.loads((HERE / "tool_args.json").read_text()))

    def coverage(self, served):
        """What is wrong between the served tool names and the table, as messages."""
        served = set(served)
        problems = []
        missing = sorted(served - set(self.entries))
        if missing:
            problems.append(
                f"served tools without an entry in tests/clients/tool_args.json: {missing} "
                "(add their arguments on the fixture data there)"
            )
        unknown = sorted(set(self.entries) - served - self.optional)
        if unknown:
            problems.append(
                f"tests/clients/tool_args.json has entries for tools not served: {unknown} "
                "(remove them, or list them in _optional while another branch adds them)"
            )
        return problems

    def substitute(self, value):
        if isinstance(value, str):
            return PLACEHOLDER.sub(lambda m: str(self.values[m.group(1)]), value)
        if isinstance(value, list):
            return [self.substitute(v) for v in value]
        if isinstance(value, dict):
            return {k: self.substitute(v) for k, v in value.items()}
        return value

    async def resolve(self, call, root, patience=60.0):
        """Fills the placeholders: {root}, then each _placeholders entry in order, by a
        call whose structured content is picked into. `call(tool, arguments)` is async and
        returns the structured content (raising on a tool error). A call whose answer lacks
        the value is repeated for up to `patience` seconds: the RAG trees are built in the
        background after the scan, so a fresh daemon has none at first."""
        self.values = {"root": str(Path(root).resolve())}
        for name, how in self.placeholders.items():
            deadline = time.monotonic() + patience
            while True:
                answer = await call(how["tool"], self.substitute(how["arguments"]))
                value = pick(answer, how["pick"])
                if value is not None:
                    break
                if time.monotonic() > deadline:
                    raise SystemExit(
                        f"tool_args.json placeholder {name}: {how['tool']} gave no {how['pick']} "
                        f"within {patience:g} s: {json.dumps(answer)[:300]}"
                    )
                await asyncio.sleep(0.5)
            self.values[name] = value

    def calls(self, served):
        """(tool, arguments) for every served tool with an entry, placeholders filled."""
        served = set(served)
        out = []
        for tool, entry in self.entries.items():
            if tool not in served:
                continue
            for arguments in entry if isinstance(entry, list) else [entry]:
                needs = arguments.get("_if_served")
                if needs and needs not in served:
                    continue
                arguments = {k: v for k, v in arguments.items() if k != "_if_served"}
                out.append((tool, self.substitute(arguments)))
        return out


def pick(value, steps):
    for step in steps:
        try:
            value = value[step]
        except (KeyError, IndexError, TypeError):
            return None
    return value
