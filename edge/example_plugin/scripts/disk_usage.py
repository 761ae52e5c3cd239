"""A QZX CLI-JSON producer: the disk usage of each path on stdin, one QZX result on stdout, progress
on stderr. Exit code 0 on success, 1 on failure (the document says why)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time

GB = 1024 ** 3


def mount_of(path: str) -> str:
    path = os.path.realpath(path)
    while not os.path.ismount(path):
        path = os.path.dirname(path)
    return path


def main() -> int:
    started = time.monotonic()
    paths = sys.stdin.read().split() or ["/"]
    volumes, warnings = [], []
    for path in paths:
        print(f"reading {path}", file=sys.stderr, flush=True)
        if not os.path.exists(path):
            result = {"success": False, "message": f"Disk usage not read: {path} does not exist.",
                      "error": f"{path}: no such file or directory", "error_code": "not_found",
                      "meta": {"command": "diskUsage", "schema_version": 1,
                               "duration_ms": round((time.monotonic() - started) * 1000, 1)}}
            print(json.dumps(result))
            return 1
        usage = shutil.disk_usage(path)
        used_pct = round(100 * (usage.total - usage.free) / usage.total, 1) if usage.total else 0.0
        volumes.append({"path": path, "mount": mount_of(path), "size_gb": round(usage.total / GB, 1),
                        "free_gb": round(usage.free / GB, 1), "used_pct": used_pct})
        if used_pct >= 90:
            warnings.append(f"{path} is {used_pct}% used")
    result = {"success": True, "message": f"Disk usage read for {len(volumes)} path{'s' * (len(volumes) != 1)}.",
              "volumes": volumes,
              "meta": {"command": "diskUsage", "schema_version": 1,
                       "duration_ms": round((time.monotonic() - started) * 1000, 1)}}
    if warnings:
        result["warnings"] = warnings
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
