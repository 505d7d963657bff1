# Stands in for Liger's benchmark_layer_norm.py: the same kernel name, providers, modes, x axis
# and extra config as the rows of its published history, made-up times.
import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "../..")))

from benchmark_model_configs import HIDDEN_SIZES  # noqa: E402
from test.fake_reference import REFERENCE  # noqa: E402
from utils import fake_times, parse_benchmark_script_args, run_benchmarks  # noqa: E402


def bench_speed(x, provider, mode, extra):
    return fake_times(0.02 * x / 1024)


def bench_memory(x, provider, mode, extra):
    return 64.0, 64.0, 64.0


if __name__ == "__main__":
    args = parse_benchmark_script_args()
    common = dict(
        kernel_name="layer_norm",
        x_name="N",
        x_label="hidden size",
        x_values=HIDDEN_SIZES,
        kernel_providers=["liger", REFERENCE],
        extra_benchmark_configs=[{"M": 4096, "dtype": "torch.float32", "eps": 1e-6}],
        overwrite=args.overwrite,
    )
    run_benchmarks(bench_test_fn=bench_speed, kernel_operation_modes=["forward"], metric_name="speed", metric_unit="ms", **common)
    run_benchmarks(bench_test_fn=bench_memory, kernel_operation_modes=["full"], metric_name="memory", metric_unit="MB", **common)
