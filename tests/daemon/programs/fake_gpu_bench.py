#!/usr/bin/python3
"""A stand-in for a GPU benchmark program on a machine without a GPU (the daemon's GPU tests).

It runs as the daemon runs a `command` entry on each GPU: CUDA_VISIBLE_DEVICES names its one GPU
(a UUID or an index of the fake device list in KERNELWATCH_FAKE_GPUS, the file that stands in for
NVML). It prints Google Benchmark JSON of nine benchmarks, each three repetitions, whose times are
fixed, multiplied by the factor KW_GPU_SPEEDS (a JSON file {"<uuid or index>": factor, "all":
factor}) gives its GPU, so a test makes one GPU, or every GPU, slower without changing the
program, its command or its keys. Exit 2 when it is not given exactly one GPU of the list.
"""
import json
import os
import sys


def main():
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    with open(os.environ["KERNELWATCH_FAKE_GPUS"]) as f:
        devices = json.load(f)
    mine = [d for d in devices if visible in (d.get("uuid"), str(d["index"]))]
    if "," in visible or len(mine) != 1:
        print("fake_gpu_bench: CUDA_VISIBLE_DEVICES=%r is not one GPU of the list" % visible,
              file=sys.stderr)
        return 2
    factor = 1.0
    path = os.environ.get("KW_GPU_SPEEDS", "")
    if path and os.path.exists(path):
        with open(path) as f:
            speeds = json.load(f)
        factor = speeds.get("all", 1.0) * speeds.get(mine[0].get("uuid", ""), 1.0)
    rows = []
    for k in range(9):
        base = 1000.0 * (k + 1)  # microseconds
        for r in range(3):
            rows.append({"name": "BM_K%d/1024" % k, "run_name": "BM_K%d/1024" % k,
                         "run_type": "iteration", "repetitions": 3, "repetition_index": r,
                         "threads": 1, "iterations": 10,
                         "real_time": base * factor * (1 + 0.001 * r),
                         "cpu_time": base * factor * (1 + 0.001 * r), "time_unit": "us"})
    json.dump({"context": {"library_build_type": "release"}, "benchmarks": rows}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
