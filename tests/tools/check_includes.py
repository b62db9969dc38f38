#!/usr/bin/env python3
"""Fail on an include that points up between the modules of src/.

    tests/tools/check_includes.py [--graph]

The allowed graph is the table under "## Dependencies between modules" in
docs/ARCHITECTURE.md (one home for the rule: change the table to change what
is allowed). Each module is a folder of src/ (and cmd/meshscaler); a public
header include/meshscaler/X.h belongs to the folder that holds X.c, else to
the folder its name starts with (kube.h, prom_sources.h). A module's files
are its .c/.h files under src/<module>/ and the public headers it owns.

Also refused: a quoted include of a private header that is not in the
including file's own folder (another module's internals), and a public header
no folder owns. For src/controller/ the include graph between its own files is
printed (the controller's tiers are a later step; nothing there fails yet).
Exit 0 when every include is allowed, 1 otherwise, naming each one.
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|(.*)\|\s*$")


def allowed_graph():
    """module -> set of modules it may include, from docs/ARCHITECTURE.md."""
    path = os.path.join(ROOT, "docs", "ARCHITECTURE.md")
    graph = {}
    inside = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("## "):
                inside = line.strip() == "## Dependencies between modules"
                continue
            m = ROW.match(line.strip()) if inside else None
            if m:
                graph[m.group(1)] = set(re.findall(r"`([^`]+)`", m.group(2)))
    if not graph:
        sys.exit(f"check_includes: no module table under '## Dependencies between modules' in {path}")
    return graph


def modules():
    found = {name: os.path.join(ROOT, "src", name) for name in os.listdir(os.path.join(ROOT, "src"))
             if os.path.isdir(os.path.join(ROOT, "src", name))}
    found["cmd/meshscaler"] = os.path.join(ROOT, "cmd", "meshscaler")
    return found


def header_owner(header, mods):
    """The module that implements include/meshscaler/<header>, or None."""
    stem = header[:-2]
    for name, folder in mods.items():
        if os.path.exists(os.path.join(folder, stem + ".c")):
            return name
    prefix = stem.split("_")[0]
    return prefix if prefix in mods else None


def includes(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return INCLUDE.findall(f.read())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--graph", action="store_true", help="print the module graph as found")
    a = ap.parse_args()
    graph = allowed_graph()
    mods = modules()
    problems = []
    for name in mods:
        if name not in graph:
            problems.append(f"module {name} has no row in docs/ARCHITECTURE.md's dependency table")
    pub_dir = os.path.join(ROOT, "include", "meshscaler")
    owner = {}
    files = {name: [] for name in mods}
    for h in sorted(os.listdir(pub_dir)):
        owner[h] = header_owner(h, mods)
        if owner[h] is None:
            problems.append(f"include/meshscaler/{h}: no folder of src/ implements it")
        else:
            files[owner[h]].append(os.path.join(pub_dir, h))
    for name, folder in mods.items():
        for f in sorted(os.listdir(folder)):
            if f.endswith((".c", ".h")):
                files[name].append(os.path.join(folder, f))
    found = {name: set() for name in mods}
    for name, paths in files.items():
        for path in paths:
            rel = os.path.relpath(path, ROOT)
            for inc in includes(path):
                if inc.startswith("meshscaler/"):
                    to = owner.get(inc[len("meshscaler/"):])
                    if to is None:
                        problems.append(f"{rel}: includes {inc}, which is not a public header")
                        continue
                    if to == name:
                        continue
                    found[name].add(to)
                    if to not in graph.get(name, set()):
                        problems.append(f"{rel}: module {name} includes {inc} of module {to}, "
                                        f"which docs/ARCHITECTURE.md does not allow "
                                        f"({name} may include: {', '.join(sorted(graph.get(name, ()))) or 'nothing'})")
                elif (os.path.dirname(os.path.normpath(os.path.join(os.path.dirname(path), inc)))
                      != os.path.dirname(path)
                      or not os.path.exists(os.path.join(os.path.dirname(path), inc))):
                    problems.append(f"{rel}: includes \"{inc}\", a private header of another folder")
    if a.graph:
        for name in sorted(found):
            print(f"{name} -> {', '.join(sorted(found[name])) or 'nothing'}")
    controller = os.path.join(ROOT, "src", "controller")
    print("src/controller include graph (its own files; tiers not checked yet):")
    for f in sorted(os.listdir(controller)):
        if f.endswith((".c", ".h")):
            local = [i for i in includes(os.path.join(controller, f)) if "/" not in i]
            print(f"  {f} -> {', '.join(local) or 'nothing'}")
    for p in problems:
        print(f"check_includes: {p}")
    print(f"check_includes: {sum(len(v) for v in files.values())} files, "
          f"{len(problems)} upward or foreign include(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
