"""What the daemon benchmarks post and import: a schema-valid kernelindex record of one synthetic
run (benchmark bench/forward on an H100), with honest digests. Imported by the embedded Python of
restart_rss.sh and wrk_vs_nginx.sh (sys.path has this folder)."""

import hashlib
import json


def _canonical(value):
    # These documents hold only strings and integers: sorted compact JSON is RFC 8785's form.
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _digest(value):
    return "sha256:" + hashlib.sha256(_canonical(value).encode()).hexdigest()


def record(at, median, name, external_id, source, provider, workload):
    """One run observed at `at` (a datetime in UTC) with `median` ns and a 1,000 ns p20-p80."""
    doc = {
        "run": {"apiVersion": "kernelindex.dev/v1alpha1", "kind": "BenchmarkRun",
                "spec": {"status": "passed",
                         "timing": {"latencyNs": {"median": median}, "primaryStatistic": "median"},
                         "observedAt": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                         "measurements": [
                             {"metric": "latency", "statistic": "p20", "unit": "ns", "value": median - 500},
                             {"metric": "latency", "statistic": "p80", "unit": "ns", "value": median + 500}],
                         "sourceNative": {"source": source, "benchmark": "bench/forward",
                                          "externalId": external_id}},
                "metadata": {"name": name, "labels": {"provider": provider, "workload": workload}}},
        "protocol": {"apiVersion": "kernelindex.dev/v1alpha1", "kind": "BenchmarkProtocol",
                     "spec": {"harness": {"name": "bench"},
                              "measurement": {"timer": "cuda_events", "primaryStatistic": "median"}},
                     "metadata": {"name": "bench-protocol"}},
        "environment": {"apiVersion": "kernelindex.dev/v1alpha1", "kind": "ExecutionEnvironment",
                        "metadata": {"name": "bench-nvidia-h100"},
                        "spec": {"hardware": {"vendor": "nvidia", "product": "NVIDIA H100",
                                              "formFactor": "80GB HBM3", "architecture": "sm_90"},
                                 "software": {}}}}
    spec = doc["run"]["spec"]
    for member, field in (("environment", "environmentDigest"), ("protocol", "protocolDigest")):
        spec[field] = _digest({k: doc[member][k] for k in ("apiVersion", "kind", "spec")})
    spec["workloadDigest"] = _digest({"workload": workload})
    spec["implementationDigest"] = _digest({"provider": provider})
    return doc
