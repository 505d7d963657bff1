#!/usr/bin/env python3
"""liger_bench: rerun Liger-Kernel's own TVD and LayerNorm speed benchmarks for kernelwatch.

kernelwatch's daemon runs this file as a child process with the host's own Python interpreter
(a venv with torch, triton and liger-kernel installed; nothing is vendored here). Every case is
timed exactly as Liger-Kernel's benchmark scripts time it, so that a result lands in the same
comparability key as a row of Liger's published benchmark CSV.

Liger scripts followed (github.com/linkedin/Liger-Kernel, benchmark/scripts/):
  benchmark_layer_norm.py, the x = N (hidden size) sweep of mid-2025 (blob of commit 77ff1a9b;
    the timing code is the same in the older 4ced0426): config {"M": 4096, "dtype":
    torch.float32, "eps": 1e-6}; providers liger = LigerLayerNorm(hidden_size=N) (eps is not
    passed: LigerLayerNorm's default, 1e-6) and huggingface = torch.nn.LayerNorm(N, eps=eps);
    x = randn(M, N, dtype), dy = randn_like(x), then x.requires_grad_(True);
    do_bench(quantiles=[0.5, 0.2, 0.8], grad_to_none=[x], rep=500) for all three passes.
  benchmark_tvd.py, the x = V (vocab size) sweep as of 2026-03 (blob of commit 01e74d9f):
    config {"B": 8, "T": 2048}; p = randn(B*T, V, requires_grad=True).softmax(-1),
    q = randn(B*T, V).softmax(-1); providers liger = LigerTVDLoss(reduction="batchmean") and
    torch = the script's TorchTVDLoss (sum(|p - q| / 2) / p.size(0)); do_bench(quantiles=
    [0.5, 0.2, 0.8], rep=100); only backward passes grad_to_none=[p], and p is the softmax
    output, not a leaf: the randn leaf's .grad accumulates across calls, as in Liger's runs.
  utils.py: QUANTILES = [0.5, 0.2, 0.8]; gpu_name = torch.cuda.get_device_name(current device).
  Passes: forward = fwd(); backward = y = fwd() once, then y.backward(dy or nothing,
  retain_graph=True); full = fwd() + backward in each call.
Extensions beyond Liger's history: any shape, and dtype torch.bfloat16. For a dtype other than
float32 the LayerNorm module is cast to the input dtype (as Liger's later scripts do); for
float32 this is a no-op. TVD takes an optional "dtype" (Liger's script uses the default float32).

Interface (kernelwatch's C++ side is written against exactly this):
  stdin: ONE JSON object {"cases": [CASE, ...]}, CASE = {"kernel": "layer_norm"|"tvd",
    "pass": "forward"|"backward"|"full", "provider": "liger"|"huggingface" (layer_norm) or
    "liger"|"torch" (tvd), "x_name": "N" (layer_norm) | "V" (tvd), "x_value": int,
    "config": {...Liger's extra_benchmark_config, dtype as "torch.float32"/"torch.bfloat16"}}.
  stdout: one JSON object per case, in order, one line each, flushed; nothing else (diagnostics
    go to stderr, and so does anything a library prints):
    {"case": CASE, "status": "passed", "ms": {"p50": f, "p20": f, "p80": f},
     "device": {"name": str, "capability": "9.0", "index": int},
     "versions": {"torch", "triton", "liger_kernel", "cuda", "python"}}
    {"case": CASE, "status": "failed", "reason": "<one line>"}  (then the next case runs)
  exit: 0 every case attempted; 2 bad request (stdin is not one JSON object with a "cases" array
    of objects; anything wrong inside a case object fails that case only); 3 a module cannot be
    imported ("liger_bench: cannot import <module>: <error>"); 4 no CUDA device
    ("liger_bench: no CUDA device: ...").
  --versions prints the "versions" object (no GPU work) and exits 0 (or 3/4); --help: usage.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.metadata
import json
import math
import os
import platform
import sys
from pathlib import Path
from typing import Any, Callable, NoReturn, TextIO

PROG = "liger_bench"
EXIT_BAD_REQUEST, EXIT_IMPORT, EXIT_NO_CUDA = 2, 3, 4
QUANTILES = [0.5, 0.2, 0.8]  # Liger's utils.QUANTILES: do_bench returns [p50, p20, p80]
DEVICE = "cuda"  # Liger's infer_device(): the current CUDA device
KERNELS: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    # kernel: (x_name, providers, required config keys)
    "layer_norm": ("N", ("liger", "huggingface"), ("M", "dtype", "eps")),
    "tvd": ("V", ("liger", "torch"), ("B", "T")),
}
PASSES = ("forward", "backward", "full")
DTYPES = {"torch.float32": "float32", "torch.bfloat16": "bfloat16"}
MODULES = ("torch", "triton", "triton.testing", "liger_kernel",
           "liger_kernel.transformers.layer_norm", "liger_kernel.transformers.tvd")

torch: Any = None  # set by import_modules(); never vendored, always the interpreter's own
triton: Any = None
liger_kernel: Any = None


class CaseError(Exception):
    """A case that cannot run; its message is the one-line reason."""


def die(code: int, message: str) -> NoReturn:
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


def one_line(text: object, limit: int = 400) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def import_modules() -> None:
    global torch, triton, liger_kernel
    loaded: dict[str, Any] = {}
    for name in MODULES:
        try:
            loaded[name] = importlib.import_module(name)
        except Exception as e:  # ImportError, but also OSError/RuntimeError from native libraries
            die(EXIT_IMPORT, f"cannot import {name}: {one_line(f'{type(e).__name__}: {e}')}")
    torch, triton, liger_kernel = loaded["torch"], loaded["triton"], loaded["liger_kernel"]


def require_cuda() -> None:
    try:
        available = torch.cuda.is_available() and torch.cuda.device_count() > 0
    except Exception as e:
        die(EXIT_NO_CUDA, f"no CUDA device: {one_line(e)}")
    if not available:
        die(EXIT_NO_CUDA, "no CUDA device: torch.cuda.is_available() is False "
                          f"(torch {torch.__version__}, built for CUDA {torch.version.cuda})")


def liger_version() -> str:
    """The installed distribution's version, unless that copy is shadowed (e.g. by PYTHONPATH)."""
    for dist_name in ("liger-kernel", "liger-kernel-nightly"):
        try:
            dist = importlib.metadata.distribution(dist_name)
        except importlib.metadata.PackageNotFoundError:
            continue
        init = [f for f in dist.files or [] if f.as_posix() == "liger_kernel/__init__.py"]
        imported = getattr(liger_kernel, "__file__", None)
        if init and imported and Path(dist.locate_file(init[0])).resolve() != Path(imported).resolve():
            continue
        return dist.version
    return str(getattr(liger_kernel, "__version__", "unknown"))


def versions() -> dict[str, Any]:
    return {"torch": torch.__version__, "triton": getattr(triton, "__version__", "unknown"),
            "liger_kernel": liger_version(), "cuda": torch.version.cuda,
            "python": platform.python_version()}


def device_info() -> dict[str, Any]:
    try:
        index = torch.cuda.current_device()
        major, minor = torch.cuda.get_device_capability(index)
        return {"name": torch.cuda.get_device_name(index), "capability": f"{major}.{minor}",
                "index": index}
    except Exception as e:
        die(EXIT_NO_CUDA, f"no CUDA device: {one_line(e)}")


def read_request(text: str) -> list[dict[str, Any]]:
    def reject_constant(name: str) -> NoReturn:
        raise ValueError(f"{name} is not JSON")

    try:
        request = json.loads(text, parse_constant=reject_constant)
    except ValueError as e:
        die(EXIT_BAD_REQUEST, f"bad request: stdin is not one JSON object: {one_line(e)}")
    if not isinstance(request, dict) or not isinstance(request.get("cases"), list):
        die(EXIT_BAD_REQUEST, 'bad request: expected {"cases": [CASE, ...]}')
    for i, case in enumerate(request["cases"]):
        if not isinstance(case, dict):
            die(EXIT_BAD_REQUEST, f"bad request: cases[{i}] is not a JSON object")
    return request["cases"]


def positive_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise CaseError(f"{what} must be a positive integer, got {json.dumps(value)}")
    return value


def parse_dtype(config: dict[str, Any]) -> Any:
    name = config.get("dtype", "torch.float32")
    if name not in DTYPES:
        raise CaseError(f"unsupported dtype {json.dumps(name)} (supported: {', '.join(DTYPES)})")
    return getattr(torch, DTYPES[name])


def do_bench(fn: Callable[[], Any], rep: int, grad_to_none: list[Any] | None) -> dict[str, float]:
    ms = triton.testing.do_bench(fn, quantiles=QUANTILES, grad_to_none=grad_to_none, rep=rep)
    p50, p20, p80 = (float(v) for v in ms)
    if not all(math.isfinite(v) and v > 0 for v in (p50, p20, p80)):
        raise CaseError(f"NaN/inf or non-positive time: p50={p50} p20={p20} p80={p80}")
    return {"p50": p50, "p20": p20, "p80": p80}


def bench_layer_norm(provider: str, mode: str, N: int, config: dict[str, Any]) -> dict[str, float]:
    """benchmark_layer_norm.py bench_speed_layer_norm (mid-2025), one provider and pass."""
    M = positive_int(config["M"], "config.M")
    eps = config["eps"]
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise CaseError(f"config.eps must be a number, got {json.dumps(eps)}")
    dtype = parse_dtype(config)
    from liger_kernel.transformers.layer_norm import LigerLayerNorm

    if provider == "liger":
        ln = LigerLayerNorm(hidden_size=N).to(DEVICE)  # as Liger's script: eps left at 1e-6
    else:
        ln = torch.nn.LayerNorm(N, eps=eps).to(DEVICE)
    if dtype != torch.float32:
        ln = ln.to(dtype)  # Liger's mid-2025 script keeps fp32 parameters (it only ran fp32)

    x = torch.randn((M, N), dtype=dtype, device=DEVICE)
    dy = torch.randn_like(x)
    x.requires_grad_(True)

    def y_fwd() -> Any:
        return ln(x)

    if mode == "forward":
        return do_bench(y_fwd, rep=500, grad_to_none=[x])
    if mode == "backward":
        y = y_fwd()
        return do_bench(lambda: y.backward(dy, retain_graph=True), rep=500, grad_to_none=[x])

    def full() -> None:
        y = y_fwd()
        y.backward(dy, retain_graph=True)

    return do_bench(full, rep=500, grad_to_none=[x])


class TorchTVDLoss:
    """benchmark_tvd.py's TorchTVDLoss, reduction="batchmean" (the only one the script uses)."""

    def __call__(self, p: Any, q: Any) -> Any:
        tvd = torch.abs(p - q) / 2.0
        return torch.sum(tvd) / p.size(0)


def bench_tvd(provider: str, mode: str, V: int, config: dict[str, Any]) -> dict[str, float]:
    """benchmark_tvd.py bench_speed_tvd (2026-03), one provider and pass."""
    B = positive_int(config["B"], "config.B")
    T = positive_int(config["T"], "config.T")
    dtype = parse_dtype(config)
    from liger_kernel.transformers.tvd import LigerTVDLoss

    loss = LigerTVDLoss(reduction="batchmean") if provider == "liger" else TorchTVDLoss()
    # As in Liger's script: _input is the softmax output (a non-leaf); the randn leaf is unnamed.
    _input = torch.randn(B * T, V, requires_grad=True, device=DEVICE, dtype=dtype).softmax(dim=-1)
    target = torch.randn(B * T, V, device=DEVICE, dtype=dtype).softmax(dim=-1)

    def fwd() -> Any:
        return loss(_input, target)

    if mode == "forward":
        return do_bench(fwd, rep=100, grad_to_none=None)
    if mode == "backward":
        y = fwd()
        return do_bench(lambda: y.backward(retain_graph=True), rep=100, grad_to_none=[_input])

    def full() -> None:
        y = fwd()
        y.backward(retain_graph=True)

    return do_bench(full, rep=100, grad_to_none=None)


def run_case(case: dict[str, Any]) -> dict[str, float]:
    kernel, mode, provider = case.get("kernel"), case.get("pass"), case.get("provider")
    if kernel not in KERNELS:
        raise CaseError(f"unknown kernel {json.dumps(kernel)} (known: {', '.join(KERNELS)})")
    x_name, providers, required = KERNELS[kernel]
    if mode not in PASSES:
        raise CaseError(f"unknown pass {json.dumps(mode)} (known: {', '.join(PASSES)})")
    if provider not in providers:
        raise CaseError(f"unknown provider {json.dumps(provider)} for {kernel} "
                        f"(known: {', '.join(providers)})")
    if case.get("x_name") != x_name:
        raise CaseError(f"x_name must be {json.dumps(x_name)} for {kernel}, "
                        f"got {json.dumps(case.get('x_name'))}")
    x_value = positive_int(case.get("x_value"), "x_value")
    config = case.get("config")
    if not isinstance(config, dict):
        raise CaseError("config must be a JSON object")
    missing = [key for key in required if key not in config]
    if missing:
        raise CaseError(f"config lacks {', '.join(missing)} for {kernel}")
    # Liger's scripts do not seed (their inputs differ run to run; neither kernel's time depends
    # on the values); seeding each case makes kernelwatch's inputs deterministic.
    torch.manual_seed(0)
    bench = bench_layer_norm if kernel == "layer_norm" else bench_tvd
    return bench(provider, mode, x_value, config)


def failure_reason(e: BaseException) -> str:
    oom = getattr(torch.cuda, "OutOfMemoryError", ())
    text = str(e)
    if isinstance(e, CaseError):
        return one_line(text)
    if (oom and isinstance(e, oom)) or "out of memory" in text.lower():
        return one_line("CUDA out of memory: " + text.removeprefix("CUDA out of memory.").strip())
    return one_line(f"{type(e).__name__}: {text}")


def free_memory() -> None:
    gc.collect()
    try:
        torch.cuda.empty_cache()
    except Exception as e:  # a broken context fails the next cases with their own reasons
        print(f"{PROG}: empty_cache failed: {one_line(e)}", file=sys.stderr)


def emit(out: TextIO, record: dict[str, Any]) -> None:
    out.write(json.dumps(record, allow_nan=False) + "\n")
    out.flush()


def claim_stdout() -> TextIO:
    """Keep fd 1 for results only: anything else printed (Python or native) goes to stderr."""
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="liger_bench.py",
        description="Rerun Liger-Kernel's TVD and LayerNorm speed benchmarks (triton.testing."
                    "do_bench, quantiles 0.5/0.2/0.8) for kernelwatch. Reads one JSON object "
                    '{"cases": [...]} on stdin and prints one JSON result per case on stdout.',
        epilog="exit status: 0 all cases attempted, 2 bad request, 3 import failure, "
               "4 no CUDA device. See the module docstring or README.md for the case format.")
    parser.add_argument("--versions", action="store_true",
                        help="print the versions JSON object (no GPU work) and exit")
    args = parser.parse_args(argv)
    out = claim_stdout()

    if args.versions:
        import_modules()
        require_cuda()
        emit(out, versions())
        return 0

    cases = read_request(sys.stdin.read())
    import_modules()
    require_cuda()
    device, vers = device_info(), versions()
    for case in cases:
        try:
            ms = run_case(case)
            record = {"case": case, "status": "passed", "ms": ms, "device": device,
                      "versions": vers}
        except Exception as e:
            record = {"case": case, "status": "failed", "reason": failure_reason(e)}
            print(f"{PROG}: case failed: {record['reason']}", file=sys.stderr)
        free_memory()
        emit(out, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
