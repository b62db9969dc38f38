#!/usr/bin/env python3
"""List the C functions in src/ longer than a limit (default 80 lines).

    tests/tools/long_functions.py [--limit N] [--check] [PATH...]

A function's length counts from the line naming it to its closing brace. The
scan needs no ctags: comments, strings, character constants and preprocessor
lines are blanked, then a '{' at brace depth 0 whose preceding text ends in a
parameter list ')' opens a function (a struct, enum or initializer does not).

A function may stay long with a reason: a comment line `long-function: WHY`
among the three lines above its name. Such functions are listed as kept.
--check exits 1 when a long function has no reason.
"""
import argparse
import os
import re
import sys

REASON = re.compile(r"long-function:\s*\S")
NAME = re.compile(r"([A-Za-z_]\w*)\s*\($")


def blank(text):
    """text with comments, strings, char constants and preprocessor lines
    replaced by spaces (newlines kept, so line numbers hold)."""
    out = []
    i, n = 0, len(text)
    line_start = True  # only blanks since the last newline
    while i < n:
        c = text[i]
        if line_start and c == "#":
            # a preprocessor line, with its continuations
            while i < n and text[i] != "\n":
                if text.startswith("\\\n", i):
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        out.append(c)
        line_start = c == "\n" or (line_start and c in " \t")
        i += 1
    return "".join(out)


def functions(path):
    """(name, first line, length) of each function defined in path."""
    with open(path, encoding="utf-8", errors="replace") as f:
        raw = f.read()
    text = blank(raw)
    lines = raw.split("\n")
    depth = 0
    head_start = 0  # where the text before the next top-level '{' starts
    open_at = None
    found = []
    for i, c in enumerate(text):
        if c == "{":
            if depth == 0:
                open_at = None
                head = text[head_start:i].rstrip()
                if head.endswith(")") and "=" not in head:
                    # the name is the identifier before the parameter list's '('
                    level, j = 0, len(head) - 1
                    while j >= 0:
                        if head[j] == ")":
                            level += 1
                        elif head[j] == "(":
                            level -= 1
                            if level == 0:
                                break
                        j -= 1
                    m = NAME.search(head[:j].rstrip() + "(") if j >= 0 else None
                    if m:
                        pos = head_start + m.start(1)
                        open_at = (m.group(1), text.count("\n", 0, pos) + 1)
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                if open_at is not None:
                    name, first = open_at
                    last = text.count("\n", 0, i) + 1
                    above = lines[max(0, first - 4) : first - 1]
                    reason = any(REASON.search(s) for s in above)
                    found.append((name, first, last - first + 1, reason))
                open_at = None
                head_start = i + 1
        elif c == ";" and depth == 0:
            head_start = i + 1
    return found


def c_files(paths):
    for p in paths:
        if os.path.isfile(p):
            yield p
            continue
        for root, _, names in os.walk(p):
            for name in sorted(names):
                if name.endswith((".c", ".h")):
                    yield os.path.join(root, name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=int, default=80)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("paths", nargs="*")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    paths = a.paths or [os.path.join(root, "src")]
    bad = 0
    for path in sorted(c_files(paths)):
        rel = os.path.relpath(path, root)
        for name, first, length, reason in functions(path):
            if length <= a.limit:
                continue
            tag = "kept (reason in the code)" if reason else "TOO LONG"
            print(f"{rel}:{first}: {name}: {length} lines: {tag}")
            if not reason:
                bad += 1
    if a.check and bad:
        print(f"long_functions: {bad} function(s) over {a.limit} lines "
              "with no 'long-function:' reason above them")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
