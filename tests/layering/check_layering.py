#!/usr/bin/env python3
"""Checks the module layering of ARCHITECTURE.md over a source tree.

A module may include its own headers and those of modules on a lower level, never one above or
beside it. Third-party headers stay inside the module that owns them. tests/ and bench/ are not
checked: they exist to reach into every module.

Usage: check_layering.py ROOT    (exit 0 when clean, 1 with one line per violation)
"""
import pathlib
import re
import sys

# The levels of ARCHITECTURE.md. config/ sits above the modules it configures and parses into
# their types; runners/ (external benchmark programs) is checked as soon as it exists; replay/
# (the one replay of stored history, over storage and detectors) sits beside them, and web/ (the
# dashboard, drawn from the replay) above it, beside config/. http/ (the HTTP server and the
# Prometheus text builder, over core/ only) sits on L1.
LEVELS = {
    "core": 0,
    "kernels": 1, "storage": 1, "detectors": 1, "http": 1,
    "notifiers": 2, "runners": 2, "replay": 2,
    "config": 3, "web": 3,
    "daemon": 4,
}

# (pattern on the included path, rule saying where it may appear, description)
def sqlite_ok(module, rel):
    return module == "storage" and (rel.suffix == ".cpp" or "detail" in rel.parts)

def asio_ok(module, rel):
    return module in ("http", "notifiers", "daemon")

def cuda_ok(module, rel):
    return module == "kernels" and (rel.suffix in (".cu", ".cuh") or "detail" in rel.parts)

def openssl_ok(module, rel):
    # Only in implementation files: public headers stay free of OpenSSL types.
    return module in ("core", "http", "notifiers", "daemon") and rel.suffix == ".cpp"

THIRD_PARTY = [
    (re.compile(r"^sqlite3\.h$"), sqlite_ok, "sqlite3.h belongs to storage/*.cpp and storage/detail/"),
    (re.compile(r"^boost/(asio|beast)"), asio_ok, "Asio/Beast belong to http/, notifiers/ and daemon/"),
    (re.compile(r"^(cuda_runtime|cuda|cuda_bf16|cuda_fp16|cuda_runtime_api)\.h$|^(cub|thrust|cuda)/"),
     cuda_ok, "CUDA headers belong to kernels/*.cu and kernels/detail/"),
    (re.compile(r"^openssl/"), openssl_ok, "OpenSSL belongs in .cpp files of core/, http/, notifiers/, daemon/"),
]

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SOURCES = {".hpp", ".h", ".cpp", ".cu", ".cuh"}


def check(root: pathlib.Path):
    violations = []
    for module, level in LEVELS.items():
        base = root / module
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            if path.suffix not in SOURCES or not path.is_file():
                continue
            rel = path.relative_to(base)
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                target = match.group(2)
                where = f"{module}/{rel}:{number}"
                top = target.split("/", 1)[0]
                if top in LEVELS and "/" in target:
                    other = LEVELS[top]
                    if top == module:
                        pass
                    elif other > level:
                        violations.append(f"{where}: includes {target}: {top}/ is above {module}/")
                    elif other == level:
                        violations.append(f"{where}: includes {target}: {top}/ is beside {module}/ (same level)")
                    elif "detail" in target.split("/")[1:-1]:
                        violations.append(f"{where}: includes {target}: {top}/detail/ is private to {top}/")
                    continue
                for pattern, allowed, rule in THIRD_PARTY:
                    if pattern.search(target) and not allowed(module, rel):
                        violations.append(f"{where}: includes {target}: {rule}")
    return violations


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = pathlib.Path(sys.argv[1])
    if not (root / "core").is_dir():
        print(f"check_layering: {root} has no core/ folder", file=sys.stderr)
        return 2
    violations = check(root)
    for v in violations:
        print(v)
    print(f"layering: {len(violations)} violation{'s' if len(violations) != 1 else ''}")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
