"""Results folders of `acceltrace replay` (replay/results.h) as tidy rows."""
import csv
import json
import os

from .errors import TraceError

_KEYS = ("trace_hash", "config_hash", "config_index", "model", "row", "rows")


class Rows(list):
    """A list of row dicts with .units ({column: unit}, "" when dimensionless)."""

    units = None


def load_results(dir, table="results", pandas=None):
    """Reads DIR/<table>.jsonl (results.jsonl by default; "ops" etc. for a model's
    secondary tables) into tidy rows: one dict per row with the key columns
    (trace_hash, config_hash, config_index, model, row, rows), every config key, then the
    labels, counts and metrics flattened to their names. Units come as metadata: the
    `units` attribute of the list, or df.attrs["units"] of the pandas DataFrame returned
    when pandas is importable (pandas=False forces the list). Units are those of the
    JSON lines' "units" objects and of the "name [unit]" header cells of DIR/<table>.csv. A malformed line raises
    TraceError naming the file and line."""
    path = os.path.join(os.fspath(dir), table + ".jsonl")
    rows = Rows()
    units = {}
    try:
        f = open(path, encoding="utf-8")
    except OSError as e:
        raise TraceError("cannot open '%s': %s" % (path, e.strerror), path, position=False)
    with f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                if not isinstance(obj, dict):
                    raise ValueError("not an object")
                row = {k: obj[k] for k in _KEYS if k in obj}
                for part in ("config", "labels", "counts", "metrics"):
                    row.update(obj.get(part) or {})
                units.update(obj.get("units") or {})
            except (ValueError, TypeError, AttributeError) as e:
                raise TraceError("bad results line: %s ('%s' line %d)" % (e, path, lineno),
                                 path, position=False)
            rows.append(row)
    # config keys carry their units in the CSV header only ("name [unit]" cells)
    try:
        with open(os.path.join(os.fspath(dir), table + ".csv"), encoding="utf-8") as f:
            head = next(csv.reader(f), [])
    except OSError:
        head = []
    for cell in head:
        if cell.endswith("]") and " [" in cell:
            name, unit = cell[:-1].split(" [", 1)
            units.setdefault(name, unit)
    rows.units = units
    if pandas is not False:
        try:
            import pandas as pd
        except ImportError:
            if pandas:
                raise
            return rows
        df = pd.DataFrame(list(rows))
        df.attrs["units"] = units
        return df
    return rows
