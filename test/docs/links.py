#!/usr/bin/env python3
"""The links of the documentation, and the doc paths the repository names.

Prints one line per check, "ok NAME" or "bad NAME: what is wrong" (run.sh counts them):
  - every relative link [text](path#anchor) of README.md and docs/**.md names a file
    that exists, and its anchor (if any) a heading of that file, as GitHub makes anchors
    of headings (lower case, punctuation but - and _ dropped, spaces to -);
  - every docs/NAME.md (docs/guide/NAME.md, ...) named in a file git tracks exists.
"""
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def anchors(path):
    out = set()
    fence = False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fence = not fence
        if fence or not line.startswith("#"):
            continue
        text = line.lstrip("#").strip()
        a = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        n = 1
        base = a
        while a in out:
            a = f"{base}-{n}"
            n += 1
        out.add(a)
    return out


def pages():
    yield "README.md"
    for d, _, files in os.walk(os.path.join(ROOT, "docs")):
        for f in sorted(files):
            if f.endswith(".md"):
                yield os.path.relpath(os.path.join(d, f), ROOT)


def links():
    for page in pages():
        bad = []
        count = 0
        text = open(os.path.join(ROOT, page), encoding="utf-8").read()
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        for m in re.finditer(r"\]\(([^)\s]+)\)", text):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target):
                continue
            count += 1
            path, _, anchor = target.partition("#")
            file = os.path.normpath(os.path.join(ROOT, os.path.dirname(page), path)) if path else os.path.join(ROOT, page)
            if not os.path.exists(file):
                bad.append(f"{target} (no such file)")
            elif anchor and file.endswith(".md") and anchor not in anchors(file):
                bad.append(f"{target} (no such heading)")
        if bad:
            print(f"bad {page}: {len(bad)} of its {count} links lead nowhere: " + "; ".join(bad))
        else:
            print(f"ok {page}: its {count} links lead to a file and heading")


def paths():
    files = subprocess.run(["git", "grep", "-lE", r"docs/[a-z/-]+\.md", "--", "."], cwd=ROOT,
                           capture_output=True, text=True).stdout.split()
    missing = {}
    for f in files:
        try:
            text = open(os.path.join(ROOT, f), encoding="utf-8", errors="replace").read()
        except OSError:
            continue
        for m in re.finditer(r"(?<![\w/.-])docs/[a-z/-]+\.md", text):
            if not os.path.exists(os.path.join(ROOT, m.group(0))):
                missing.setdefault(m.group(0), set()).add(f)
    if missing:
        print("bad the doc paths the repository names exist: " +
              "; ".join(f"{p} (in {', '.join(sorted(fs))})" for p, fs in sorted(missing.items())))
    else:
        print(f"ok the doc paths the repository names exist ({len(files)} files name one)")


links()
paths()
