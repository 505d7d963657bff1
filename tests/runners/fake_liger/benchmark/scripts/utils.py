# The part of Liger-Kernel's benchmark/scripts/utils.py the liger-scripts runner depends on,
# without torch: the rows a run writes and how update_benchmark_data_csv writes them.
import argparse
import csv
import json
import os
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass
from itertools import zip_longest
from typing import Any, Dict, List, Optional, Union

LIGER_KERNEL_VERSION = "0.7.0"


@dataclass
class BenchmarkData:
    kernel_name: str
    kernel_provider: str
    metric_name: str
    metric_unit: str
    gpu_name: str
    x_name: str
    x_label: str
    x_values: List[Union[float, str]]
    y_values_50: List[float]
    y_values_20: List[float]
    y_values_80: List[float]
    timestamp: str
    kernel_operation_mode: Optional[str] = None
    extra_benchmark_config_str: Optional[str] = None
    liger_version: str = LIGER_KERNEL_VERSION


@dataclass
class BenchmarkDataCSVRow:
    # The column order of the CSV.
    kernel_name: str
    kernel_provider: str
    kernel_operation_mode: Union[str, None]
    metric_name: str
    metric_unit: str
    x_name: str
    x_label: str
    x_value: Union[float, str]
    y_value_50: float
    y_value_20: float
    y_value_80: float
    extra_benchmark_config_str: Union[str, None]
    gpu_name: str
    timestamp: str
    liger_version: str


def get_current_file_directory() -> str:
    return os.path.dirname(os.path.abspath(__file__))


def get_formatted_time():
    return time.strftime("%Y-%m-%d %H:%M:%S")


def update_benchmark_data_csv(benchmark_data_list, filename="all_benchmark_data.csv", overwrite=True):
    def unique_key(row):
        return (
            row["kernel_name"],
            row["kernel_provider"],
            row["kernel_operation_mode"] or "",
            row["metric_name"],
            row["x_name"],
            str(row["x_value"]),
            row["extra_benchmark_config_str"] or "",
            row["gpu_name"],
        )

    path = os.path.join(get_current_file_directory(), "../data", filename)
    rows = OrderedDict()
    if os.path.isfile(path):
        with open(path, mode="r") as file:
            for row in csv.DictReader(file):
                rows[unique_key(row)] = row
    for data in benchmark_data_list:
        fields = asdict(data)
        xs = fields.pop("x_values")
        y50 = fields.pop("y_values_50")
        y20 = fields.pop("y_values_20")
        y80 = fields.pop("y_values_80")
        for x, a, b, c in zip_longest(xs, y50, y20, y80):
            row = asdict(
                BenchmarkDataCSVRow(
                    x_value=x,
                    y_value_50=float("nan") if a is None else a,
                    y_value_20=float("nan") if b is None else b,
                    y_value_80=float("nan") if c is None else c,
                    **fields,
                )
            )
            key = unique_key(row)
            if key not in rows or overwrite:
                rows[key] = row
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, mode="w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=BenchmarkDataCSVRow.__annotations__.keys())
        writer.writeheader()
        for row in rows.values():
            writer.writerow(row)


def fake_times(base_ms):
    # Made-up medians with their p20/p80, as triton.testing.do_bench returns (0.5, 0.2, 0.8).
    scale = float(os.environ.get("FAKE_LIGER_SCALE", "1"))
    ms = base_ms * scale
    return ms, ms * 0.98, ms * 1.02


def run_benchmarks(
    bench_test_fn,
    kernel_name,
    metric_name,
    metric_unit,
    x_name,
    x_label,
    x_values,
    kernel_providers,
    kernel_operation_modes=[None],
    extra_benchmark_configs=None,
    overwrite=False,
):
    gpu_name = os.environ.get("FAKE_LIGER_GPU", "NVIDIA H100 80GB HBM3")
    data_list = []
    for extra in extra_benchmark_configs:
        for mode in kernel_operation_modes:
            for provider in kernel_providers:
                y50, y20, y80 = [], [], []
                for x in x_values:
                    a, b, c = bench_test_fn(x, provider, mode, extra)
                    y50.append(a)
                    y20.append(b)
                    y80.append(c)
                data_list.append(
                    BenchmarkData(
                        kernel_name=kernel_name,
                        kernel_operation_mode=mode,
                        kernel_provider=provider,
                        metric_name=metric_name,
                        metric_unit=metric_unit,
                        gpu_name=gpu_name,
                        x_name=x_name,
                        x_label=x_label,
                        x_values=x_values,
                        y_values_50=y50,
                        y_values_20=y20,
                        y_values_80=y80,
                        extra_benchmark_config_str=json.dumps(extra),
                        timestamp=get_formatted_time(),
                        liger_version=LIGER_KERNEL_VERSION,
                    )
                )
    target = os.environ.get("LIGER_BENCH_TARGET", "").strip().lower()
    name = f"all_benchmark_data_{target}.csv" if target else "all_benchmark_data.csv"
    update_benchmark_data_csv(data_list, filename=name, overwrite=overwrite)


def parse_benchmark_script_args():
    parser = argparse.ArgumentParser(description="Benchmarking script for Liger-Kernel (fake)")
    parser.add_argument("--overwrite", action="store_true")
    return parser.parse_args()
