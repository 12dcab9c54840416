"""greyhound's benchmark tooling. The data path is one straight line, each step a module with `main()`:

    asv results/  --python -m tools.export-->  docs/data/benchmark_data.csv  --python -m tools.plot-->  PNG / HTML

No step reaches back into an earlier one: tools.plot reads only the CSV, whose columns are CSV_COLUMNS.
"""

CSV_COLUMNS = (
    "kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name", "metric_unit",
    "x_name", "x_label", "x_value", "y_value_50", "y_value_20", "y_value_80",
    "extra_benchmark_config_str", "gpu_name", "git_commit", "timestamp",
)
