"""greyhound's benchmark tooling. The data path is one straight line, each step a module with `main()`:

    asv results/  --python -m tools.export-->  docs/data/benchmark_data.csv  --python -m tools.plot-->  PNG / HTML

No step reaches back into an earlier one: tools.plot reads only the CSV, whose columns are CSV_COLUMNS.
"""
import math

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
