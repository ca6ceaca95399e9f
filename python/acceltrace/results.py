"""Results folders of `acceltrace replay` (replay/results.h) as tidy rows."""
import csv
import json
import os

from .errors import TraceError, open_error

_KEYS = ("trace_hash", "config_hash", "config_index", "model", "name", "row", "rows")


class Results(list):
    """What load_results returns: a list of row dicts (one per line of the table, in file
    order) with

    units        {column: unit} ("" or absent when dimensionless)
    path         the .jsonl file read
    to_pandas()  the same rows as a pandas DataFrame, units in df.attrs["units"]
    """

    def __init__(self, rows=(), units=None, path=None):
        super().__init__(rows)
        self.units = dict(units or {})
        self.path = path

    def columns(self):
        """Column names in first-seen order over all rows."""
        seen = {}
        for row in self:
            for k in row:
                seen.setdefault(k, None)
        return list(seen)

    def to_pandas(self):
        """The rows as a pandas.DataFrame (columns in first-seen order; a row lacking a
        column gets NaN there); the units are in df.attrs["units"]. Needs pandas (Debian:
        python3-pandas); ImportError naming it otherwise."""
        try:
            import pandas as pd
        except ImportError as e:
            raise ImportError("Results.to_pandas() needs pandas (Debian: apt-get install "
                              "python3-pandas)") from e
        df = pd.DataFrame(list(self), columns=self.columns())
        df.attrs["units"] = dict(self.units)
        return df


def load_results(dir, table="results"):
    """Reads DIR/<table>.jsonl (results.jsonl by default; "ops" etc. for a model's
    secondary tables) into a Results: one dict per row with the key columns (trace_hash,
    config_hash, config_index, model, then name when the sweep grid named its rows, row,
    rows), every config key, then the labels, counts and metrics flattened to their names.
    Units are those of the JSON lines' "units" objects and of the "name [unit]" header
    cells of DIR/<table>.csv. `.to_pandas()` gives a DataFrame. A missing file raises
    TraceNotFoundError (a TraceError and a FileNotFoundError); a malformed line raises
    TraceError naming the file and line."""
    path = os.path.join(os.fspath(dir), table + ".jsonl")
    rows = Results(path=path)
    units = {}
    try:
        f = open(path, encoding="utf-8")
    except OSError as e:
        raise open_error(path, e) from None
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
    return rows
