#!/usr/bin/env python3
"""Synthetic kernelindex runs as JSON Lines, for `kernelwatch import` in the daemon benchmarks.

    synthetic_runs.py OUT.jsonl --keys K --runs R [--stepped FRACTION] [--failing FRACTION]
                      [--minutes-apart M]

K keys (workloads bench-0 ... bench-K-1 of benchmark bench/forward, provider bench, one H100
environment) with R runs each, as records valid by the public kernelindex schemas, 1% deterministic noise around 1 ms, dated R*M minutes before now
up to one minute ago (never in the future). A FRACTION of the keys steps 30% slower for its
last two runs (an alert once imported: the next stored run confirms the step); another FRACTION
ends with a failed run. Prints nothing; writes OUT.
"""
import argparse
import datetime
import hashlib
import json
import math


def _digest(value):
    # These documents hold only strings and integers: sorted compact JSON is RFC 8785's form.
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def record(key, i, median, status, at):
    """One run, valid by the public kernelindex schemas, with the four digests a client computes."""
    workload = f"bench-{key}"
    spec = {
        "status": status,
        "observedAt": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "sourceNative": {"source": "synthetic-bench", "benchmark": "bench/forward",
                         "externalId": f"bench/{key}/{i}"},
    }
    if status == "passed":
        spec["timing"] = {"latencyNs": {"median": median}, "primaryStatistic": "median"}
        spec["measurements"] = [
            {"metric": "latency", "statistic": "p20", "unit": "ns", "value": median - 500},
            {"metric": "latency", "statistic": "p80", "unit": "ns", "value": median + 500}]
    doc = {
        "run": {"apiVersion": "kernelindex.dev/v1alpha1", "kind": "BenchmarkRun", "spec": spec,
                "metadata": {"name": f"synthetic-bench-{key}-{i}",
                             "labels": {"provider": "bench", "workload": workload}}},
        "protocol": {"apiVersion": "kernelindex.dev/v1alpha1", "kind": "BenchmarkProtocol",
                     "spec": {"harness": {"name": "bench"},
                              "measurement": {"timer": "cuda_events",
                                              "primaryStatistic": "median"}},
                     "metadata": {"name": "bench-protocol"}},
        "environment": {"apiVersion": "kernelindex.dev/v1alpha1", "kind": "ExecutionEnvironment",
                        "metadata": {"name": "bench-nvidia-h100"},
                        "spec": {"hardware": {"vendor": "nvidia", "product": "NVIDIA H100",
                                              "formFactor": "80GB HBM3",
                                              "architecture": "sm_90"},
                                 "software": {}}}}
    for member, field in (("environment", "environmentDigest"), ("protocol", "protocolDigest")):
        spec[field] = _digest({k: doc[member][k] for k in ("apiVersion", "kind", "spec")})
    spec["workloadDigest"] = _digest({"workload": workload})
    spec["implementationDigest"] = _digest({"provider": "bench"})
    return doc


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--keys", type=int, required=True)
    parser.add_argument("--runs", type=int, required=True)
    parser.add_argument("--stepped", type=float, default=0.0)
    parser.add_argument("--failing", type=float, default=0.0)
    parser.add_argument("--minutes-apart", type=int, default=1)
    args = parser.parse_args()
    now = datetime.datetime.now(datetime.timezone.utc).replace(second=0, microsecond=0)
    first = now - datetime.timedelta(minutes=args.runs * args.minutes_apart)
    stepped = int(args.keys * args.stepped)
    failing = int(args.keys * args.failing)
    with open(args.out, "w") as out:
        for key in range(args.keys):
            base = 1_000_000 + 1000 * key
            for i in range(args.runs):
                median = base + int(base * 0.01 * math.sin(i * 1.7 + key))
                status = "passed"
                if key < stepped and i >= args.runs - 2:
                    median = int(median * 1.3)
                elif stepped <= key < stepped + failing and i == args.runs - 1:
                    status = "failed"
                at = first + datetime.timedelta(minutes=i * args.minutes_apart)
                out.write(json.dumps(record(key, i, median, status, at)) + "\n")


if __name__ == "__main__":
    main()
