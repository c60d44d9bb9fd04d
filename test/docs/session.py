#!/usr/bin/env python3
"""Runs the psql session a markdown page documents and compares each output with the page.

    session.py check PAGE.md [--write]

A page documents a session in fenced blocks opened by ```psql. In a block, a line that
starts with "=# " is a statement (or a psql meta-command) as typed at psql's prompt, a
line that starts with "-# " continues it, and every other line up to the next "=# " is
what psql printed for it. A block opened by ```sql session is plain SQL (definitions, a
driver loop) that belongs to the session but shows no output: it runs in its place and
must print no ERROR. The page's blocks, in order, form one session in one database:
the statements are fed to one psql (as a script, so psql prints each command's tag), and
what it prints for each is cut out by an \\echo marker the runner puts between them.

What varies from run to run is normalised, in the output that psql printed only:
  - "psql:<stdin>:LINE: " before an error and the LOCATION line of a verbose error go;
  - "PID 1234" of an asynchronous notification becomes "PID <pid>";
  - a value made at run time and kept in a psql variable (\gset) that is a uuid (a run's
    id) or a wake-up channel's name (baton_ and 32 hex digits, keyed by the database's
    own random secret) becomes <VAR>, VAR the variable that holds it at the end of the
    session; a channel's name in no variable becomes <channel>. A value the page types
    (a tenant's uuid in \set) stays as it is.
Nothing else is rewritten: a page must not show now() or another uuid made at run time.

Prints one line per block ("ok   - PAGE: block N (heading)" or "FAIL - ..." with a diff
of the documented output against the real one); exits 1 when a block differs. With
--write, rewrites the page's outputs from the run instead (and exits 0).

Reads PGHOST, PGPORT, PGUSER, and BATON_DOCS_DB (the database to run in, which must
exist and be empty; run.sh creates and drops it).
"""
import difflib
import os
import re
import subprocess
import sys

MARK = "@@baton-docs-item "
VARS = "@@baton-docs-vars"
CHANNEL = re.compile(r"baton_[0-9a-f]{32}")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def parse(text):
    """The page's lines and its psql blocks: each block is (first line, last line,
    heading, items), an item being [input lines, output lines]."""
    lines = text.split("\n")
    blocks = []
    heading = ""
    i = 0
    while i < len(lines):
        if lines[i].startswith("#"):
            heading = lines[i].lstrip("#").strip()
        if lines[i].strip() in ("```psql", "```sql session"):
            silent = lines[i].strip() != "```psql"
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            if j == len(lines):
                raise SystemExit(f"unclosed ```psql block at line {i + 1}")
            items = []
            if silent:
                blocks.append((i, j, heading, [[lines[i + 1:j], None]]))
                i = j + 1
                continue
            for n, line in enumerate(lines[i + 1:j], start=i + 2):
                if line.startswith("=# ") or line == "=#":
                    items.append([[line[3:]], []])
                elif line.startswith("-# ") or line == "-#":
                    if not items or items[-1][1]:
                        raise SystemExit(f"line {n}: a continuation (-#) after output")
                    items[-1][0].append(line[3:])
                else:
                    if not items:
                        raise SystemExit(f"line {n}: output before the first statement of its block")
                    items[-1][1].append(line)
            blocks.append((i, j, heading, items))
            i = j
        i += 1
    return lines, blocks


def run(blocks):
    """Runs every item in one psql; returns each item's raw output and psql's variables."""
    script = []
    count = 0
    for _, _, _, items in blocks:
        for inputs, _ in items:
            script.append(f"\\echo '{MARK}{count}'")
            script.extend(inputs)
            count += 1
    script.append(f"\\echo '{VARS}'")
    script.append("\\set")
    env = dict(os.environ, PGDATABASE=os.environ["BATON_DOCS_DB"], PAGER="", PSQL_PAGER="",
               PGTZ=os.environ.get("PGTZ", "UTC"), LC_ALL="C.UTF-8")
    proc = subprocess.run(["psql", "-X", "-f", "-"], input="\n".join(script) + "\n",
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = proc.stdout
    head, _, varpart = out.partition(VARS + "\n")
    parts = re.split(r"^" + re.escape(MARK) + r"(\d+)\n", head, flags=re.M)
    if parts[0].strip():
        raise SystemExit("psql printed before the first statement:\n" + parts[0])
    raw = [""] * count
    for k in range(1, len(parts), 2):
        raw[int(parts[k])] = parts[k + 1]
    variables = {}
    for line in varpart.split("\n"):
        m = re.match(r"^(\w+) = '(.*)'$", line)
        if m:
            variables[m.group(1)] = m.group(2)
    return raw, variables


def normalise(text, variables, typed):
    names = {v: k for k, v in variables.items()
             if (CHANNEL.fullmatch(v) or UUID.fullmatch(v)) and v not in typed}
    out = []
    if text == "":
        return out
    if text.endswith("\n"):
        text = text[:-1]
    for line in text.split("\n"):
        if re.match(r"^LOCATION:  ", line):
            continue
        line = re.sub(r"^psql:<stdin>:\d+: ", "", line)
        line = re.sub(r"\bPID \d+\b", "PID <pid>", line)
        line = CHANNEL.sub(lambda m: f"<{names[m.group(0)]}>" if m.group(0) in names else "<channel>", line)
        line = UUID.sub(lambda m: f"<{names[m.group(0)]}>" if m.group(0) in names else m.group(0), line)
        out.append(line)
    return out


def strip_end(lines):
    lines = list(lines)
    while lines and lines[-1] == "":
        lines.pop()
    return lines


def main():
    if len(sys.argv) < 3 or sys.argv[1] != "check":
        raise SystemExit(__doc__)
    page = sys.argv[2]
    write = "--write" in sys.argv[3:]
    text = open(page, encoding="utf-8").read()
    lines, blocks = parse(text)
    if not blocks:
        raise SystemExit(f"{page}: no ```psql block")
    raw, variables = run(blocks)
    typed = "\n".join(x for _, _, _, items in blocks for inputs, _ in items for x in inputs)
    failed = 0
    k = 0
    new_blocks = []
    for number, (start, end, heading, items) in enumerate(blocks, start=1):
        real_block = []
        same = True
        diffs = []
        for inputs, documented in items:
            real = normalise(raw[k], variables, typed)
            k += 1
            if documented is None:
                errors = [x for x in real if x.startswith("ERROR:")]
                if errors:
                    same = False
                    diffs.extend(["a ```sql session block printed:"] + errors)
                real_block = None
                continue
            if strip_end(real) != strip_end(documented):
                same = False
                diffs.append(f"=# {inputs[0]}")
                diffs.extend(list(difflib.unified_diff(strip_end(documented), strip_end(real),
                                                       "documented", "real", lineterm="", n=2))[2:])
            real_block.append((inputs, real))
        if real_block is None:
            new_blocks.append(None)
            name = f"{page}: block {number} ({heading}, plain SQL)"
            print(("ok   - " if same else "FAIL - ") + name)
            failed += 0 if same else 1
            for d in diffs:
                print("    " + d)
            continue
        name = f"{page}: block {number} ({heading})"
        if same:
            print(f"ok   - {name}")
        else:
            failed += 1
            print(f"FAIL - {name}")
            for d in diffs:
                print("    " + d)
        new_blocks.append((start, end, real_block))
    if write:
        out = []
        prev = 0
        for start, end, real_block in (b for b in new_blocks if b is not None):
            out.extend(lines[prev:start + 1])
            body = []
            for inputs, real in real_block:
                body.append("=# " + inputs[0] if inputs[0] else "=#")
                body.extend("-# " + x if x else "-#" for x in inputs[1:])
                body.extend(real)
            out.extend(strip_end(body))
            prev = end
        out.extend(lines[prev:])
        with open(page, "w", encoding="utf-8") as f:
            f.write("\n".join(out))
        print(f"wrote {page}")
        return 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
