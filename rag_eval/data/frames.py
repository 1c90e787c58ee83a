"""Records from Python objects: lists of dicts, pandas DataFrames and ``datasets.Dataset``s."""

from __future__ import annotations

import math
from typing import Any

from rag_eval.data.records import Record
from rag_eval.errors import DataError, Problem


def _plain(value: Any) -> Any:
    """numpy scalars and arrays as Python values; a missing cell (NaN, None) as None."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def records_from(obj: Any, what: str) -> list[Record]:
    """Every row of ``obj`` as a Record that names it (``test set row 3``) for error messages.

    Accepts a list (or tuple) of dicts, a pandas DataFrame or a ``datasets.Dataset``."""
    kind = type(obj).__name__
    if hasattr(obj, "to_dict") and hasattr(obj, "columns") and hasattr(obj, "iloc"):  # pandas
        rows = obj.to_dict(orient="records")
    elif hasattr(obj, "column_names") and hasattr(obj, "to_list"):  # datasets.Dataset
        rows = obj.to_list()
    elif isinstance(obj, (list, tuple)):
        rows = list(obj)
    else:
        raise DataError(
            Problem(
                f"{what} ({kind})",
                f"cannot read a {what} from a {kind}",
                "pass a list of dicts, a pandas DataFrame or a datasets.Dataset",
            )
        )
    if not rows:
        raise DataError(Problem(f"{what} ({kind})", f"the {what} is empty", f"add {what} rows"))
    out = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise DataError(
                Problem(
                    f"{what} row {i}",
                    f"a row must be a dict, not {type(row).__name__}",
                    "give each row as a mapping of field to value",
                )
            )
        # A table has every column in every row: an empty cell means the field is absent.
        plain = {str(k): _plain(v) for k, v in row.items()}
        out.append(Record({k: v for k, v in plain.items() if v is not None}, f"{what} row {i}"))
    return out
