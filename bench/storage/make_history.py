#!/usr/bin/env python3
"""A synthetic benchmark history for the scale benchmark (bench/storage/scale.sh, issue #26).

Writes RUNS runs over KEYS comparability keys, in time order, twice:
  OUT.csv    Liger-Kernel benchmark CSV (the columns of Liger's weekly CI files), and
  OUT.jsonl  kernelindex JSON Lines as a kernelindex tool exports them: the shared documents
             (one ExecutionEnvironment per GPU, one BenchmarkProtocol per timed pass) first,
             then one BenchmarkRun per line, joined to them by digest.
Each key has its own level, 1.5% log-normal noise, and a third of the keys a step (+25% or -20%)
at a random point; the Liger version changes every 50 rounds
(hours). In the JSON Lines,
1% of the runs failed (runtime_error, a reason, no timing) and 0.5% are incomplete_evidence.
The CSV has no status column: all its rows are passed speed rows. Deterministic for a seed.

With --gpus N (N > 1) each key runs on the N GPUs of one host each hour (one run per GPU, GPU i
at the hour + i ms, labelled host, gpu_index, gpu_uuid and pci_bus_id as the daemon labels them):
RUNS runs are then RUNS / N rounds of the keys on every GPU, and only the JSON Lines are
written (a Liger CSV has no labels). --no-labels writes the same runs without those labels (the
same history as the daemon would store it from runs that do not say where they ran: what the
labelled replay's cost is measured against, docs/PERFORMANCE.md).

Usage: make_history.py --runs 1000000 --keys 5000 --out /tmp/kwscale/h1m [--seed 1] [--gpus 8]
                       [--no-labels]
"""
import argparse
import hashlib
import json
import math
import random

GPUS = ["NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"]
GPU_DOCS = {
    "NVIDIA H100 80GB HBM3": ("nvidia", "NVIDIA H100", "80GB HBM3", "sm_90", "nvidia-h100-80gb-hbm3"),
    "NVIDIA A100-SXM4-80GB": ("nvidia", "NVIDIA A100", "SXM4-80GB", "sm_80", "nvidia-a100-sxm4-80gb"),
}
PASSES = ["forward", "backward", "full"]
PROVIDERS = ["liger", "torch"]
VERSIONS = ["0.5.8", "0.5.9", "0.5.10", "0.6.0", "0.6.1"]
HEADER = ("kernel_name,kernel_provider,kernel_operation_mode,metric_name,metric_unit,x_name,"
          "x_label,x_value,y_value_50,y_value_20,y_value_80,extra_benchmark_config_str,gpu_name,"
          "timestamp,liger_version,ghpages_commit_dir,ghpages_order")


def jcs(value):
    # RFC 8785 for documents of strings and integers only (all this script writes).
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(document):
    core = {k: document[k] for k in ("apiVersion", "kind", "spec")}
    return "sha256:" + hashlib.sha256(jcs(core).encode()).hexdigest()


def keys_for(count):
    # (kernel, provider, pass, gpu, x): kernels synth_kernel_NN with 25 x values each.
    per_kernel = len(PROVIDERS) * len(PASSES) * len(GPUS) * 25
    kernels = max(1, math.ceil(count / per_kernel))
    keys = []
    for k in range(kernels):
        for provider in PROVIDERS:
            for mode in PASSES:
                for gpu in GPUS:
                    for x in range(25):
                        keys.append((f"synth_kernel_{k:02d}", provider, mode, gpu, 1024 * (x + 1)))
    return keys[:count]


def timestamp(hour):
    # Hours after 2023-01-02 00:00:00 (naive, as Liger writes it): a million runs over 5,000
    # keys is 200 hours; every key runs once per hour.
    days, h = divmod(hour, 24)
    # 2023-01-02 + days, by ordinal arithmetic.
    import datetime
    t = datetime.datetime(2023, 1, 2) + datetime.timedelta(days=days, hours=h)
    return t


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=5000)
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--gpus", type=int, default=1)
    parser.add_argument("--no-labels", action="store_true",
                        help="with --gpus: leave out the host and GPU labels")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    keys = keys_for(args.keys)
    gpus = max(1, args.gpus)
    rounds = math.ceil(args.runs / (len(keys) * gpus))
    level = [rng.uniform(0.02, 5.0) for _ in keys]
    step_at = [rng.randrange(rounds) if rng.random() < 1 / 3 else None for _ in keys]
    step_by = [rng.choice([1.25, 0.8]) for _ in keys]

    env_docs, protocol_docs = {}, {}
    for gpu, (vendor, product, form, arch, label) in GPU_DOCS.items():
        env_docs[gpu] = {"apiVersion": "kernelindex.dev/v1alpha1", "kind": "ExecutionEnvironment",
                         "metadata": {"name": "synthetic-" + label},
                         "spec": {"hardware": {"vendor": vendor, "product": product,
                                               "formFactor": form, "architecture": arch},
                                  "software": {"driver": "550.54.15", "cudaToolkit": "12.4"}}}
    for mode in PASSES:
        protocol_docs[mode] = {
            "apiVersion": "kernelindex.dev/v1alpha1", "kind": "BenchmarkProtocol",
            "metadata": {"name": "synthetic-do-bench-" + mode},
            "spec": {"harness": {"name": "synthetic benchmark harness"},
                     "measurement": {"timer": "cuda_events", "primaryStatistic": "median"},
                     "comparability": {"family": "synthetic",
                                       "notes": "Timed: the " + mode + " pass (synthetic)."}}}
    env_digest = {g: digest(d) for g, d in env_docs.items()}
    protocol_digest = {m: digest(d) for m, d in protocol_docs.items()}

    written = 0
    with open(args.out + ".csv" if gpus == 1 else "/dev/null", "w") as csv, \
            open(args.out + ".jsonl", "w") as jsonl:
        csv.write(HEADER + "\n")
        for d in list(env_docs.values()) + list(protocol_docs.values()):
            jsonl.write(jcs(d) + "\n")
        for r in range(rounds):
            t = timestamp(r)
            stamp = t.strftime("%Y-%m-%d %H:%M:%S")
            iso = t.strftime("%Y-%m-%dT%H:%M:%S.000Z")
            id_time = t.strftime("%Y-%m-%d-%H-%M-%S")
            version = VERSIONS[min(len(VERSIONS) - 1, r // 50)]  # a release every 50 hours
            commit = "%07x" % (0xabc000 + r)
            for i, g, (kernel, provider, mode, gpu, x) in (
                    (i, g, k) for i, k in enumerate(keys) for g in range(gpus)):
                if written == args.runs:
                    break
                written += 1
                base = level[i] * (step_by[i] if step_at[i] is not None and r >= step_at[i] else 1)
                median = base * math.exp(rng.gauss(0, 0.015))
                p20 = median * (1 - abs(rng.gauss(0, 0.004)))
                p80 = median * (1 + abs(rng.gauss(0, 0.004)))
                config = '"{""M"": 4096, ""dtype"": ""torch.float32""}"'
                csv.write(f"{kernel},{provider},{mode},speed,ms,N,hidden size,{x},{median!r},"
                          f"{p20!r},{p80!r},{config},{gpu},{stamp},{version},{commit},{r}\n")
                label = GPU_DOCS[gpu][4]
                workload = f"n{x}-bf16-m4096"
                benchmark = f"{kernel}/{mode}"
                name = f"synth-{kernel.replace('_', '-')}-{mode}-{provider}-{label}-{workload}-{id_time}"
                roll = rng.random()
                status = "passed"
                if roll < 0.01:
                    status = "runtime_error"
                elif roll < 0.015:
                    status = "incomplete_evidence"
                spec = {"status": status, "observedAt": iso,
                        "environmentDigest": env_digest[gpu],
                        "protocolDigest": protocol_digest[mode],
                        "workloadDigest": "sha256:" + hashlib.sha256(workload.encode()).hexdigest(),
                        "implementationDigest":
                            "sha256:" + hashlib.sha256(f"{provider}@{version}".encode()).hexdigest(),
                        "sourceNative": {"source": "synthetic-bench", "benchmark": benchmark,
                                         "externalId": f"{benchmark}/{provider}/{label}/{workload}/{id_time}"}}
                metadata = {"name": name, "labels": {"provider": provider, "workload": workload,
                                                     "liger_version": version}}
                if status == "runtime_error":
                    metadata["description"] = "runner exited with status 1: CUDA error: an illegal memory access"
                else:
                    ns = round(median * 1e6)
                    spec["timing"] = {"latencyNs": {"median": ns}, "primaryStatistic": "median"}
                    spec["measurements"] = [
                        {"metric": "latency", "statistic": "p20", "unit": "ns", "value": round(p20 * 1e6)},
                        {"metric": "latency", "statistic": "p80", "unit": "ns", "value": round(p80 * 1e6)}]
                    if status == "incomplete_evidence":
                        metadata["description"] = "SM clock 345 MHz is under 75% of its maximum 1980 MHz"
                if gpus > 1:
                    spec["observedAt"] = t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{g:03d}Z"
                    metadata["name"] += f"-gpu{g}"
                    spec["sourceNative"]["externalId"] += f"/gpu{g}"
                if gpus > 1 and not args.no_labels:
                    metadata["labels"].update({
                        "host": "synth-host", "gpu_index": str(g),
                        "gpu_uuid": f"GPU-{g:08d}-synth", "pci_bus_id": f"00000000:{0x19 + g:02X}:00.0"})
                jsonl.write(jcs({"apiVersion": "kernelindex.dev/v1alpha1", "kind": "BenchmarkRun",
                                 "metadata": metadata, "spec": spec}) + "\n")
    print(f"{args.out}.csv, {args.out}.jsonl: {written} runs over {len(keys)} keys, {rounds} rounds")


if __name__ == "__main__":
    main()
