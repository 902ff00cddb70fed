"""Summarise CSV files of the workspace: columns, row count and statistics of numeric columns."""

import csv
import math

from cst_plugin import ToolError, tool


def _number(text: str):
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


@tool(perm="read")
def csv_summary(path: str, delimiter: str = ",", max_rows: int | None = None) -> dict:
    """Column names, row count and min/max/mean of the numeric columns of a CSV file in the workspace.

    Args:
        path: CSV file, relative to the workspace root.
        delimiter: the field separator.
        max_rows: read at most this many data rows (all when omitted).
    """
    if len(delimiter) != 1:
        raise ToolError("delimiter must be one character")
    try:
        f = open(path, newline="", encoding="utf-8")
    except OSError as e:
        raise ToolError(f"cannot open {path}: {e.strerror or e}")
    with f:
        reader = csv.reader(f, delimiter=delimiter)
        header = next(reader, None)
        if header is None:
            return {"path": path, "columns": [], "rows": 0}
        stats = [{"count": 0, "min": None, "max": None, "sum": 0.0, "blank": 0} for _ in header]
        numeric = [True] * len(header)
        rows = 0
        for row in reader:
            if max_rows is not None and rows >= max_rows:
                break
            rows += 1
            for i, cell in enumerate(row[: len(header)]):
                if cell.strip() == "":
                    stats[i]["blank"] += 1
                    continue
                value = _number(cell)
                if value is None:
                    numeric[i] = False
                    continue
                s = stats[i]
                s["count"] += 1
                s["sum"] += value
                s["min"] = value if s["min"] is None else min(s["min"], value)
                s["max"] = value if s["max"] is None else max(s["max"], value)
    columns = []
    for name, s, is_num in zip(header, stats, numeric):
        col = {"name": name}
        if is_num and s["count"]:
            col.update(type="number", min=s["min"], max=s["max"], mean=round(s["sum"] / s["count"], 6))
        else:
            col["type"] = "text"
        if s["blank"]:
            col["blank"] = s["blank"]
        columns.append(col)
    return {"path": path, "columns": columns, "rows": rows}


@tool(perm="read")
def csv_head(path: str, rows: int = 5) -> str:
    """The first lines of a CSV file in the workspace (header included).

    Args:
        path: CSV file, relative to the workspace root.
        rows: how many data rows to show.
    """
    if rows < 0:
        raise ValueError("rows must not be negative")
    with open(path, newline="", encoding="utf-8") as f:
        lines = [line.rstrip("\n") for _, line in zip(range(rows + 1), f)]
    return "\n".join(lines)


if __name__ == "__main__":
    import cst_plugin

    cst_plugin.main()
