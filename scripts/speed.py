#!/usr/bin/env python3
"""How fast the README's two commands are, measured as a new user meets them.

    scripts/speed.py [--repo URL_OR_PATH] [--skip-tests] [--json FILE]

1. A fresh clone in a temporary directory, built with an empty target directory and an
   empty codex cache (the cargo registry is kept: `--fresh-registry` empties it too), then
   `cargo run -p codex-parity -- run`: when the first scenario result is printed, when it
   exits, and the CPU (user + system, every process it waited for) per scenario run.
2. `cargo test --features codex-parity` in the same clone right after: its wall time and each
   test binary's own time, slowest first.

Numbers, not assertions: they go in docs/speed.md and in issue notes. Nothing here needs the
internet beyond the package registries.
"""

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

FIRST_RESULT = re.compile(r"\[1/\d+\] ")
BINARY = re.compile(r"Running (\S+)")
FINISHED = re.compile(r"test result: .* finished in ([0-9.]+)s")
TOTAL = re.compile(r"total: (\d+) passed, (\d+) known drift, (\d+) contradicting drift, "
                   r"(\d+) failed, (\d+) skipped")


def timed(cmd, cwd, env, on_line=None):
    """Runs `cmd`, streaming its merged output; wall seconds, CPU seconds of what it
    waited for, exit code and the lines."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace")
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if on_line:
            on_line(line, time.monotonic() - start)
    code = proc.wait()
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, code, lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--repo", default=here, help="what to clone (default: this checkout)")
    parser.add_argument("--skip-tests", action="store_true", help="measure the first command only")
    parser.add_argument("--fresh-registry", action="store_true",
                        help="an empty CARGO_HOME too (downloads every crate)")
    parser.add_argument("--json", help="also write the numbers to this file")
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="codex-parity-speed-")
    out = {"repo": args.repo}
    try:
        clone = os.path.join(work, "clone")
        subprocess.run(["git", "clone", "-q", args.repo, clone], check=True)
        out["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=clone,
                                       capture_output=True, text=True).stdout.strip()
        env = dict(os.environ)
        env["CODEX_PARITY_CACHE"] = os.path.join(work, "codex-cache")
        env.pop("CARGO_TARGET_DIR", None)
        if args.fresh_registry:
            env["CARGO_HOME"] = os.path.join(work, "cargo-home")
            shutil.copytree(os.path.expanduser("~/.cargo/bin"), os.path.join(env["CARGO_HOME"], "bin"))

        first = {}

        def see(line, at):
            if "first_result" not in first and FIRST_RESULT.search(line):
                first["first_result"] = at
            sys.stderr.write(f"[{at:6.1f}] {line}")

        wall, cpu, code, lines = timed(["cargo", "run", "-q", "-p", "codex-parity", "--", "run"],
                                       clone, env, see)
        out["run"] = {"exit": code, "wall_s": round(wall, 1),
                      "first_result_s": round(first.get("first_result", -1), 1)}
        # The CPU of the scenarios alone: the same command again, built and installed.
        wall2, cpu2, code2, lines2 = timed(["cargo", "run", "-q", "-p", "codex-parity", "--", "run"],
                                           clone, env)
        totals = [TOTAL.search(line) for line in lines2]
        totals = [t for t in totals if t]
        cells = sum(int(x) for x in totals[-1].groups()[:4]) if totals else 0
        out["run_again"] = {"exit": code2, "wall_s": round(wall2, 1), "cpu_s": round(cpu2, 1),
                            "scenarios_run": cells,
                            "cpu_per_scenario_s": round(cpu2 / cells, 3) if cells else None}

        if not args.skip_tests:
            binaries = []

            def see_test(line, at):
                m = BINARY.search(line)
                if m:
                    binaries.append([m.group(1), None])
                m = FINISHED.search(line)
                if m and binaries:
                    binaries[-1][1] = float(m.group(1))
                sys.stderr.write(f"[{at:6.1f}] {line}")

            wall, cpu, code, _ = timed(["cargo", "test", "--features", "codex-parity"],
                                       clone, env, see_test)
            out["test"] = {"exit": code, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
                           "binaries": sorted(([b, s] for b, s in binaries if s is not None),
                                              key=lambda b: -b[1])}
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(json.dumps(out, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
