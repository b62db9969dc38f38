#!/usr/bin/env python3
"""The controller's tiers: who calls whom between the files of src/controller/.

    tests/tools/check_tiers.py [--check] [BUILD_DIR | --objects LIST]

The tiers are the table under "### The controller's tiers" in
docs/ARCHITECTURE.md (one home for the rule): each row a tier number and the
files in it, 0 at the bottom. A file may call functions of its own tier and of
those below, never above, and no two files may call each other, directly or
round a longer circle (a cycle). Calls are read from the compiled objects, not
the text: for each src/controller/*.c.o of BUILD_DIR (default: build), the
symbols it leaves undefined (`nm -u`) that another controller object defines
(`nm --defined-only`). Build first (cmake --build BUILD_DIR).

--objects takes the objects themselves, ';'-separated (CMake's
$<TARGET_OBJECTS:meshscaler_core>, as ctest's lint.tiers passes them): only
those of src/controller/ are read, so an object left in the build folder by a
file since removed or renamed is not taken for code; a listed object that is
missing (not built yet) is an error, never a pass on fewer files.

Prints the file-level call graph, then every upward call and every cycle.
With --check, exit 1 when there is any (ctest lint.tiers, label unit).
"""
import argparse
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROW = re.compile(r"^\|\s*(\d+)\s*\|([^|]*)\|")


def tiers():
    """file (e.g. "round.c") -> tier, from docs/ARCHITECTURE.md."""
    out, inside = {}, False
    with open(os.path.join(ROOT, "docs", "ARCHITECTURE.md")) as f:
        for line in f:
            if line.startswith("#"):
                inside = line.strip() == "### The controller's tiers"
                continue
            m = ROW.match(line) if inside else None
            if m:
                for name in re.findall(r"`([^`]+\.c)`", m.group(2)):
                    out[name] = int(m.group(1))
    return out


def symbols(obj, flag):
    res = subprocess.run(["nm", flag, obj], capture_output=True, text=True, check=True)
    names = set()
    for line in res.stdout.splitlines():
        parts = line.split()
        if flag == "-u" and len(parts) == 2 and parts[0] == "U":
            names.add(parts[1])
        elif flag != "-u" and len(parts) == 3 and parts[1] in "TDBR":
            names.add(parts[2])
    return names


def controller_objects(build, listed):
    """The controller's object files: those listed (a ';'-separated list), or
    every src/controller/*.c.o under build."""
    if listed is None:
        objs = glob.glob(os.path.join(build, "**", "src", "controller", "*.c.o"), recursive=True)
        where = "under %s" % build
    else:
        objs = [o for o in listed.split(";")
                if os.path.basename(os.path.dirname(o)) == "controller"
                and os.path.basename(os.path.dirname(os.path.dirname(o))) == "src"]
        where = "in --objects"
        missing = [o for o in objs if not os.path.exists(o)]
        if missing:
            sys.exit("check_tiers: %d object(s) not built, e.g. %s (build first)"
                     % (len(missing), missing[0]))
    if not objs:
        sys.exit("check_tiers: no src/controller/*.c.o %s (build first)" % where)
    return objs


def call_graph(objs):
    """{caller file: {callee file: [symbols]}} between the controller's objects."""
    defined = {}
    for o in objs:
        for s in symbols(o, "--defined-only"):
            defined[s] = os.path.basename(o)[:-2]
    graph = {}
    for o in objs:
        me = os.path.basename(o)[:-2]
        for s in sorted(symbols(o, "-u")):
            other = defined.get(s)
            if other and other != me:
                graph.setdefault(me, {}).setdefault(other, []).append(s)
    return graph


def cycles(graph):
    """The strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--objects", help="';'-separated object files (CMake's TARGET_OBJECTS)")
    ap.add_argument("build", nargs="?", default=os.path.join(ROOT, "build"))
    args = ap.parse_args()
    tier = tiers()
    graph = call_graph(controller_objects(args.build, args.objects))
    problems = []
    for caller in sorted(graph):
        print("%s (tier %s) -> %s" % (caller, tier.get(caller, "?"), ", ".join(sorted(graph[caller]))))
    for f in sorted(set(graph) | {c for g in graph.values() for c in g}):
        if f not in tier:
            problems.append("%s: in no tier of docs/ARCHITECTURE.md" % f)
    for caller in sorted(graph):
        for callee, syms in sorted(graph[caller].items()):
            if caller in tier and callee in tier and tier[callee] > tier[caller]:
                problems.append("upward: %s (tier %d) calls %s (tier %d): %s"
                                % (caller, tier[caller], callee, tier[callee], ", ".join(syms)))
    for comp in cycles(graph):
        problems.append("cycle: " + " <-> ".join(comp))
    for p in problems:
        print(p)
    print("check_tiers: %d files call others, %d problem(s)" % (len(graph), len(problems)))
    return 1 if problems and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
