# Stands in for Liger's benchmark_swiglu.py: a kernel whose workload is one of the importer's
# generic labels (x T, the rest of the config in name order).
import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "../..")))

from utils import fake_times, parse_benchmark_script_args, run_benchmarks  # noqa: E402


def bench_speed(x, provider, mode, extra):
    return fake_times(1.5 * x / 1024)


if __name__ == "__main__":
    args = parse_benchmark_script_args()
    run_benchmarks(
        bench_test_fn=bench_speed,
        kernel_name="swiglu",
        metric_name="speed",
        metric_unit="ms",
        x_name="T",
        x_label="sequence length",
        x_values=[1024],
        kernel_providers=["liger"],
        kernel_operation_modes=["forward"],
        extra_benchmark_configs=[
            {"B": 4, "hidden_size": 4096, "dtype": "torch.bfloat16", "intermediate_size": 11008, "hidden_act": "silu"}
        ],
        overwrite=args.overwrite,
    )
