"""What the scripts that turn a sweep's runs.csv into tables with confidence intervals share
(figure4_virtual.py, figure56_virtual.py, stragglers_virtual.py, table1_virtual.py)."""
import csv
import sys

from table2_ci import mean_ci


def one_argument(argv, doc):
    """The script's one argument; with none, several or -h, the docstring (exit 0 for -h, else 2)."""
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print(doc)
        sys.exit(0 if argv and argv[0] in ("-h", "--help") else 2)
    return argv[0]


def read_rows(path):
    """runs.csv's epoch rows; exits naming the file when it has none."""
    with open(path) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"{path}: no epoch rows")
    return rows


def last_epochs(rows):
    """Each run's last epoch row, by run."""
    last = {}
    for r in rows:
        if r["run"] not in last or int(r["epoch"]) > int(last[r["run"]]["epoch"]):
            last[r["run"]] = r
    return last


def cell(values, digits, scale=1.0):
    """The mean of the values (times scale) with the half-width of its 95% interval in brackets."""
    m, h = mean_ci([v * scale for v in values])
    return f"{m:,.{digits}f}" if h != h else f"{m:,.{digits}f} (±{h:,.{digits}f})"
