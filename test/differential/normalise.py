#!/usr/bin/env python3
"""The two runs of the differential test (test/differential/run.sh) made comparable.

Each run writes the same rows at other times, so a time is replaced by its rank among
the distinct times of its run (t1 the earliest): two runs whose times are equal where
they should be, and ordered the same way, normalise alike. A ready row's row_tid, where
its delivery was written, becomes "*" whether set or NULL: the direct enqueue_batch
knows that place, the statement's trigger runs before the row is written and leaves it
NULL (a difference by design); run.sh checks the tids themselves within a run.

    normalise.py rows FILE        FILE: "#time TABLE COLUMN" lines, then "TABLE<TAB>JSON"
                                  rows (checks.sql: dw.time_columns(), dw.rows()); prints
                                  "TABLE JSON" lines, sorted
    normalise.py decoding FILE    FILE: test_decoding's lines (BEGIN, table ..., COMMIT);
                                  prints them with times ranked
    normalise.py decoding --sorted FILE
                                  the same, each transaction's changes sorted
    normalise.py reordered A B    A, B: two outputs of "decoding" whose sorted forms are
                                  equal; prints how many transactions list their changes
                                  in another order in B than in A, and the first
"""
import datetime
import json
import re
import sys

TIME_IN_DECODING = re.compile(r"\[timestamp with time zone\]:'([^']*)'")
TID_IN_DECODING = re.compile(r"row_tid\[tid\]:('\(\d+,\d+\)'|null)")


def parse_time(text):
    """A timestamptz as to_jsonb or test_decoding print it (UTC offsets of hours or
    hours and minutes)."""
    s = text.replace(" ", "T", 1)
    if re.search(r"[+-]\d\d$", s):
        s += ":00"
    return datetime.datetime.fromisoformat(s)


def ranks(texts):
    """Each distinct time's label, by its rank among them (t1 the earliest)."""
    by_time = sorted({parse_time(t) for t in texts})
    label = {t: "t%d" % (i + 1) for i, t in enumerate(by_time)}
    return {t: label[parse_time(t)] for t in texts}


def rows(path):
    time_columns = {}
    table_rows = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            if line.startswith("#time "):
                _, table, column = line.split(" ")
                time_columns.setdefault(table, set()).add(column)
                continue
            table, text = line.split("\t", 1)
            table_rows.append((table, json.loads(text)))
    texts = [row[c] for table, row in table_rows for c in time_columns.get(table, ())
             if row.get(c) is not None]
    label = ranks(texts)
    out = []
    for table, row in table_rows:
        for c in time_columns.get(table, ()):
            if row.get(c) is not None:
                row[c] = label[row[c]]
        if table == "ready" and "row_tid" in row:
            row["row_tid"] = "*"
        out.append("%s %s" % (table, json.dumps(row, sort_keys=True)))
    for line in sorted(out):
        print(line)


def decoding(path, sort_changes):
    with open(path) as f:
        lines = [line.rstrip("\n") for line in f if line.strip()]
    texts = [m.group(1) for line in lines for m in TIME_IN_DECODING.finditer(line)]
    label = ranks(texts)
    out = []
    changes = []
    for line in lines:
        line = TIME_IN_DECODING.sub(lambda m: "[timestamp with time zone]:" + label[m.group(1)], line)
        line = TID_IN_DECODING.sub("row_tid[tid]:*", line)
        if line.startswith("BEGIN"):
            changes = []
            out.append(line)
        elif line.startswith("COMMIT"):
            out.extend(sorted(changes) if sort_changes else changes)
            out.append(line)
            changes = []
        else:
            changes.append(line)
    out.extend(changes)  # a transaction without its COMMIT line (none expected)
    for line in out:
        print(line)


def transactions(path):
    """The transactions of a "decoding" output, each the list of its lines."""
    out = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("BEGIN"):
                out.append([])
            elif not line.startswith("COMMIT") and out:
                out[-1].append(line)
    return out


def reordered(a_path, b_path):
    a, b = transactions(a_path), transactions(b_path)
    differ = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
    first = ""
    if differ:
        x, y = a[differ[0]], b[differ[0]]
        k = next(k for k in range(len(x)) if x[k] != y[k])
        first = " (the first: transaction %d, change %d of %d)" % (differ[0] + 1, k + 1, len(x))
    print("%d of %d%s" % (len(differ), len(a), first))


def main(argv):
    if len(argv) == 3 and argv[1] == "rows":
        rows(argv[2])
    elif len(argv) == 3 and argv[1] == "decoding":
        decoding(argv[2], False)
    elif len(argv) == 4 and argv[1] == "decoding" and argv[2] == "--sorted":
        decoding(argv[3], True)
    elif len(argv) == 4 and argv[1] == "reordered":
        reordered(argv[2], argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
