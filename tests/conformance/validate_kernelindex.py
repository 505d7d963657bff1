#!/usr/bin/python3
"""Validates kernelindex.dev v1alpha1 documents with an independent validator.

Usage: validate_kernelindex.py SCHEMA_DIR FILE... [--label NAME]

Each FILE holds JSON: one document or record, an array of them, or JSON Lines. A record is
kernelwatch's bundle {run, protocol, environment[, workload, implementation]}; a document is
{apiVersion, kind, metadata, spec}. Every document is checked against the schema of its kind
with Debian's python3-jsonschema (Draft 2020-12, the schemas' own draft), and every digest a
bundled run carries for a document of the bundle is recomputed here as kernelindex defines it
(SHA-256 of the RFC 8785 canonical JSON of {apiVersion, kind, spec}) and compared.

Prints one line per kind: how many documents, how many valid, how many digests recomputed and
equal; then each problem. Exit 0 when everything is valid, 1 otherwise, 2 on bad usage.
Written for kernelwatch's test suite (tests/conformance); it shares no code with kernelwatch.
"""

import hashlib
import json
import math
import sys
from pathlib import Path

try:
    import jsonschema
except ImportError:
    print("validate_kernelindex: python3-jsonschema is not installed", file=sys.stderr)
    sys.exit(3)

KINDS = {
    "BenchmarkRun": "benchmark-run",
    "BenchmarkProtocol": "benchmark-protocol",
    "ExecutionEnvironment": "execution-environment",
    "WorkloadCase": "workload-case",
    "ImplementationRevision": "implementation-revision",
}
MEMBER_FIELD = {
    "environment": ("environmentDigest", "ExecutionEnvironment"),
    "protocol": ("protocolDigest", "BenchmarkProtocol"),
    "workload": ("workloadDigest", "WorkloadCase"),
    "implementation": ("implementationDigest", "ImplementationRevision"),
}


def es_number(x):
    """ECMAScript Number::toString, as RFC 8785 prints numbers."""
    if isinstance(x, bool):
        raise TypeError("bool is not a number")
    if isinstance(x, int):
        x = float(x)
    if math.isnan(x) or math.isinf(x):
        raise ValueError("JSON has no NaN or Infinity")
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    x = abs(x)
    mantissa, _, exp = repr(x).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    point = len(whole) + (int(exp) if exp else 0) - (len(whole + frac) - len((whole + frac).lstrip("0")))
    digits = digits.rstrip("0") or "0"
    k, n = len(digits), point
    if k <= n <= 21:
        out = digits + "0" * (n - k)
    elif 0 < n <= 21:
        out = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        out = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return sign + out


def jcs(value):
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return es_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ",".join(jcs(v) for v in value) + "]"
    if isinstance(value, dict):
        names = sorted(value, key=lambda s: s.encode("utf-16-be"))
        return "{" + ",".join(json.dumps(n, ensure_ascii=False) + ":" + jcs(value[n]) for n in names) + "}"
    raise TypeError(type(value))


def digest(document):
    identity = {k: document[k] for k in ("apiVersion", "kind", "spec") if k in document}
    return "sha256:" + hashlib.sha256(jcs(identity).encode("utf-8")).hexdigest()


def values_of(path):
    text = Path(path).read_text(encoding="utf-8")
    try:
        whole = json.loads(text)
        return whole if isinstance(whole, list) else [whole]
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def main(argv):
    args = [a for a in argv[1:]]
    if len(args) < 2 or args[0] in ("-h", "--help"):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    schema_dir = Path(args[0])
    validators = {}
    for kind, stem in KINDS.items():
        schema = json.loads((schema_dir / f"{stem}.v1alpha1.schema.json").read_text())
        jsonschema.Draft202012Validator.check_schema(schema)
        validators[kind] = jsonschema.Draft202012Validator(schema)
    counts = {kind: [0, 0, 0, 0] for kind in KINDS}  # documents, valid, digests, equal
    problems = []

    def check(document, where):
        kind = document.get("kind") if isinstance(document, dict) else None
        if kind not in validators:
            problems.append(f"{where}: not a kernelindex document (kind {kind!r})")
            return
        counts[kind][0] += 1
        errors = sorted(validators[kind].iter_errors(document), key=lambda e: list(e.absolute_path))
        if not errors:
            counts[kind][1] += 1
        for e in errors[:5]:
            path = ".".join(str(p) for p in e.absolute_path) or "(document)"
            problems.append(f"{where}: {kind} {path}: {e.message[:300]}")

    for path in args[1:]:
        for i, value in enumerate(values_of(path)):
            where = f"{path}[{i}]"
            if isinstance(value, dict) and "run" in value:
                for member in ("run", "protocol", "environment", "workload", "implementation"):
                    if member in value and value[member] is not None:
                        check(value[member], f"{where}.{member}")
                spec = value["run"].get("spec", {}) if isinstance(value["run"], dict) else {}
                for member, (field, kind) in MEMBER_FIELD.items():
                    if member not in value or value[member] is None:
                        continue
                    counts[kind][2] += 1
                    if spec.get(field) == digest(value[member]):
                        counts[kind][3] += 1
                    else:
                        problems.append(f"{where}: run.spec.{field} {spec.get(field)} is not the digest "
                                        f"of the {kind} it carries ({digest(value[member])})")
            else:
                check(value, where)
    for kind, (n, valid, digests, equal) in counts.items():
        if n:
            print(f"{kind}: {n} documents, {valid} valid; {digests} digests recomputed, {equal} equal")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
