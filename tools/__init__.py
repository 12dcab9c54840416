"""greyhound's benchmark tooling. The data path is one straight line, each step a module with `main()`:

    asv results/  --python -m tools.export-->  docs/data/benchmark_data.csv  --python -m tools.plot-->  PNG / HTML

No step reaches back into an earlier one: tools.plot reads only the CSV, whose columns are CSV_COLUMNS.
"""
import csv
import io
import math
from pathlib import Path

CSV_COLUMNS = (
    "kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name", "metric_unit",
    "x_name", "x_label", "x_value", "y_value_50", "y_value_20", "y_value_80",
    "extra_benchmark_config_str", "gpu_name", "git_commit", "timestamp", "asv_machine", "asv_environment",
    "achieved", "achieved_unit", "ceiling_share",
)

SWEEP_CLI_MACHINE = "sweep-cli"  # the asv_machine of the sweep CLI's rows (benchmarks/__main__.py): not an asv run


def is_finite_number(value):
    """A real int or float that is not NaN/inf (bool and None are not numbers here; nor is an int too large for a
    float)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int past a float's range
        return False


def x_value_order(text):
    """Sort key for CSV x values: numbers first, in numeric order (so 4096 < 32768), then other text."""
    try:
        number = float(text)
    except ValueError:
        return (1, 0.0, text)
    return (0, number, text) if math.isfinite(number) else (1, 0.0, text)


class CsvFormatError(ValueError):
    """A benchmark CSV that is not in CSV_COLUMNS' schema, or has a damaged (cut) row: the message names the file."""


def csv_records(text, columns, where, hint=""):
    """The rows of CSV `text` as dicts under the header `columns`, none for an empty text; CsvFormatError naming
    `where` (and the line) when the header is not `columns` (`hint` appended) or a row has another number of fields (a
    cut last row would otherwise read with its missing fields empty and a cut number as data), or a line is not CSV."""
    columns = tuple(columns)
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader, None)
        if header is None:
            return []
        if tuple(header) != columns:
            raise CsvFormatError(f"{where} has columns {header}, expected {list(columns)}{hint}")
        rows = []
        for fields in reader:
            if not fields:
                continue
            if len(fields) != len(columns):
                raise CsvFormatError(f"{where} line {reader.line_num} has {len(fields)} fields, expected "
                                     f"{len(columns)} (a cut or damaged row)")
            rows.append(dict(zip(columns, fields)))
    except csv.Error as err:
        raise CsvFormatError(f"{where} line {reader.line_num}: {err}") from None
    return rows


def read_csv_records(path):
    """The rows of a benchmark CSV as dicts (CSV_COLUMNS), none when the file is empty; CsvFormatError naming the file
    as csv_records does (a header of an earlier schema, CSV_COLUMNS cut short, says so). OSError /
    UnicodeDecodeError as raised."""
    text = Path(path).read_text(encoding="utf-8")
    if not text.strip():
        return []
    try:
        header = tuple(next(csv.reader(io.StringIO(text)), None) or ())
    except csv.Error:  # (csv_records names the line)
        header = ()
    # an earlier schema of this CSV: CSV_COLUMNS cut after a column (15: before asv_machine / asv_environment, 17:
    # before achieved / achieved_unit / ceiling_share)
    older = 0 < len(header) < len(CSV_COLUMNS) and header == CSV_COLUMNS[:len(header)]
    hint = f" (an earlier schema of this CSV, without {list(CSV_COLUMNS[len(header):])}: export into a new file)"
    return csv_records(text, CSV_COLUMNS, path, hint if older else "")
