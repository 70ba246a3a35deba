#!/usr/bin/env python3
"""The symbol graphs Scripts/docs gives DocC, and the check that every public declaration
has a doc comment.

    symbol-graphs.py filter GRAPHS OUT MODULE   keep MODULE's own declarations
    symbol-graphs.py undocumented OUT           list those without a doc comment; exit 1 if any

The compiler's graph of a module holds every symbol the module makes visible: Stowage
re-exports Foundation and Observation (`@_exported import`, so that a SwiftData model file
compiles with only its import changed), and its graph holds all of Foundation too, some
twenty thousand symbols. `filter` keeps the symbols declared in `Sources/MODULE/` (and the
members the compiler synthesizes on them, such as `!=` from `Equatable`), with the
relationships that start from them, and writes them to OUT/MODULE.symbols.json for
`docc convert --additional-symbol-graph-dir OUT`.

`undocumented` reads what `filter` wrote. A declaration counts when it is public or open,
declared in the module's own sources, and not synthesized by the compiler (the members a
protocol's extension gives a type are documented, or not, where that extension is).
"""

import json
import os
import sys

SYNTHESIZED = "::SYNTHESIZED::"


def own_source(symbol, module):
    uri = symbol.get("location", {}).get("uri", "")
    return f"/Sources/{module}/" in uri


def filter_graph(graphs, out, module):
    with open(os.path.join(graphs, f"{module}.symbols.json")) as f:
        graph = json.load(f)
    symbols = graph["symbols"]
    kept = {s["identifier"]["precise"] for s in symbols if own_source(s, module)}
    # Members the compiler synthesizes on our types: `memberOf` one of ours.
    for relation in graph["relationships"]:
        source = relation["source"]
        if SYNTHESIZED in source and relation["kind"] == "memberOf" and relation["target"] in kept:
            kept.add(source)
    graph["symbols"] = [s for s in symbols if s["identifier"]["precise"] in kept]
    graph["relationships"] = [r for r in graph["relationships"] if r["source"] in kept]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, f"{module}.symbols.json"), "w") as f:
        json.dump(graph, f)
    print(f"{module}: kept {len(graph['symbols'])} of {len(symbols)} symbols")


def undocumented(out):
    missing = []
    total = 0
    for name in sorted(os.listdir(out)):
        if not name.endswith(".symbols.json"):
            continue
        module = name[: -len(".symbols.json")]
        with open(os.path.join(out, name)) as f:
            graph = json.load(f)
        for symbol in graph["symbols"]:
            if SYNTHESIZED in symbol["identifier"]["precise"] or not own_source(symbol, module):
                continue
            if symbol["accessLevel"] not in ("public", "open"):
                continue
            total += 1
            comment = symbol.get("docComment")
            lines = [line.get("text", "").strip() for line in (comment or {}).get("lines", [])]
            if not any(lines):
                location = symbol["location"]
                path = location["uri"].split(f"/Sources/{module}/", 1)[1]
                line = location["position"]["line"] + 1
                title = ".".join(symbol["pathComponents"])
                missing.append(f"Sources/{module}/{path}:{line}: {title} ({symbol['kind']['displayName']})")
    for entry in sorted(missing):
        print(entry)
    print(f"{total} public declarations, {len(missing)} without a doc comment")
    return 1 if missing else 0


def main(argv):
    if len(argv) == 5 and argv[1] == "filter":
        filter_graph(argv[2], argv[3], argv[4])
        return 0
    if len(argv) == 3 and argv[1] == "undocumented":
        return undocumented(argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
