#!/usr/bin/env python3
"""The load of bench/storage/fleet_post.sh: one client per daemon, all at once.

    fleet_post.py --ports P1,P2,... --token-file FILE --batches B --keys K

For each daemon (one port each) a thread POSTs /api/v1/runs B times, each body one run of each
of K keys (the records of bench/daemon/synthetic_runs.py: workloads bench-0 ... bench-K-1, 1%
deterministic noise around 1 ms), batch b dated now - (B - b) minutes (never in the future).
The bodies are built before the clients start; the threads start together at a barrier. Each
POST opens a fresh http.client connection (a host's cycle posts once per cycle, minutes apart,
so a kept-alive connection would not be there) and its latency is time.perf_counter around the
connection, the request and reading the whole answer. Every answer must be 200 with
"stored": K, "duplicates": 0 and K results; anything else is printed to stderr and the exit
status is 1. Prints one line to stdout: runs stored, wall seconds of the load (first POST's
start to the last POST's end), runs/s, and POST latency p50, p99 and max in ms (nearest rank
over all POSTs of all daemons).
"""
import argparse
import datetime
import http.client
import json
import math
import os
import sys
import threading
import time

sys.dont_write_bytecode = True  # nothing written into the checkout
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "daemon"))
from synthetic_runs import record  # noqa: E402  (bench/daemon: the project's one generator)


def bodies(batches, keys, now):
    """B bodies, each one run per key, batch b observed now - (B - b) minutes."""
    out = []
    for b in range(batches):
        at = now - datetime.timedelta(minutes=batches - b)
        runs = []
        for key in range(keys):
            base = 1_000_000 + 1000 * key
            median = base + int(base * 0.01 * math.sin(b * 1.7 + key))
            runs.append(record(key, b, median, "passed", at))
        out.append(json.dumps(runs).encode())
    return out


def client(index, port, token, batch_bodies, keys, barrier, results, errors):
    latencies = []
    first = last = None
    stored = 0
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    try:
        barrier.wait()
        for b, body in enumerate(batch_bodies):
            start = time.perf_counter()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
            try:
                conn.request("POST", "/api/v1/runs", body=body, headers=headers)
                answer = conn.getresponse()
                text = answer.read()
            finally:
                conn.close()
            end = time.perf_counter()
            first = start if first is None else first
            last = end
            latencies.append(end - start)
            where = f"daemon {index} (port {port}), batch {b}"
            if answer.status != 200:
                raise RuntimeError(f"{where}: answered {answer.status}: {text[:500]!r}")
            doc = json.loads(text)
            if (doc.get("stored") != keys or doc.get("duplicates") != 0
                    or len(doc.get("runs", [])) != keys):
                raise RuntimeError(f"{where}: expected {keys} stored, 0 duplicates; answered "
                                   f"stored={doc.get('stored')} duplicates={doc.get('duplicates')} "
                                   f"results={len(doc.get('runs', []))}")
            stored += doc["stored"]
    except Exception as e:  # noqa: BLE001  (any failure of a client fails the benchmark)
        errors.append(f"{type(e).__name__}: {e}")
        barrier.abort()
    results[index] = (latencies, first, last, stored)


def nearest_rank(sorted_values, fraction):
    return sorted_values[max(0, math.ceil(fraction * len(sorted_values)) - 1)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ports", required=True)
    parser.add_argument("--token-file", required=True)
    parser.add_argument("--batches", type=int, required=True)
    parser.add_argument("--keys", type=int, required=True)
    args = parser.parse_args()
    ports = [int(p) for p in args.ports.split(",")]
    with open(args.token_file) as f:
        token = f.read().strip()
    now = datetime.datetime.now(datetime.timezone.utc).replace(second=0, microsecond=0)
    batch_bodies = bodies(args.batches, args.keys, now)  # the same records for every daemon
    barrier = threading.Barrier(len(ports))
    results = [None] * len(ports)
    errors = []
    threads = [threading.Thread(target=client, args=(i, port, token, batch_bodies, args.keys,
                                                     barrier, results, errors))
               for i, port in enumerate(ports)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        for e in errors:
            print(f"fleet_post: {e}", file=sys.stderr)
        sys.exit(1)
    latencies = sorted(x for r in results for x in r[0])
    first = min(r[1] for r in results)
    last = max(r[2] for r in results)
    stored = sum(r[3] for r in results)
    wall = last - first
    print(f"{stored} {wall:.3f} {stored / max(wall, 1e-9):.0f} "
          f"{nearest_rank(latencies, 0.50) * 1000:.1f} {nearest_rank(latencies, 0.99) * 1000:.1f} "
          f"{latencies[-1] * 1000:.1f}")


if __name__ == "__main__":
    main()
