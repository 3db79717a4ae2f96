"""Run TileLang's own test suite (`testing/python`), unchanged, on tilelang-core, and record the
counts per folder.

    python scripts/tilelang_suite.py collect --testing PATH/TO/tilelang/testing/python --json co.json
    python scripts/tilelang_suite.py run --testing ... --json run.json -- -n 16 cuda language
    python scripts/tilelang_suite.py --merge co.json run1.json run2.json --json suite.json

Every pytest process runs under `tilelang run` (so `import tilelang`, in pytest and in its
xdist workers, resolves to tilelang-core), from the `testing/python` folder, with
`--confcutdir` at the checkout's root so that TileLang's own `testing/conftest.py` (which puts
the checkout on `sys.path` for the tests that import `examples.*`) is loaded as in TileLang's
tree.

`collect` records, per folder, how many tests were collected (and per file) and, per file
that failed to collect, the error's last line. `run` (on the device) records, per folder, passed / failed /
skipped / errors from pytest's JUnit XML, and each failing test's message. `--merge` joins
records (later ones win per folder). `scripts/compat_doc.py --suite-json` classifies the
collection errors with its reviewed table (other hardware, not applicable by design, remaining)
and writes the section of docs/compat.md.

The tests are TileLang's (tile-ai/tilelang, `testing/python`): read from a checkout, never
stored in this repository.
"""
from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

_ERROR_HEADER = re.compile(r"^_+ ERROR collecting (\S+) _+$", re.M)
_EXCEPTION = re.compile(r"^\w+(Error|Exception|Interrupt)\b")
_TEST_ID = re.compile(r"^([\w./-]+\.py)::")


def _tilelang() -> list[str]:
    return [sys.executable, "-m", "tilelang_core.compat.run"]


def _pytest(testing: Path, args: list[str], timeout: float | None) -> subprocess.CompletedProcess:
    """Run pytest under `tilelang run`. Past `timeout` seconds pytest gets SIGINT, as from Ctrl-C, so
    that it stops its workers and still writes its JUnit report of the tests it finished; a pytest
    still alive 60 s later is killed."""
    root = testing.resolve().parent.parent  # the checkout holding testing/python
    command = [*_tilelang(), "-m", "pytest", "-p", "no:cacheprovider", f"--confcutdir={root}", *args]
    with subprocess.Popen(command, cwd=testing, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)
            try:
                out, err = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
            err += f"\nstopped after {timeout:.0f} s (--timeout)"
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


def _folder(path: str) -> str:
    """The top folder of a test path relative to testing/python ("." for a file at the top)."""
    parts = Path(path).parts
    return parts[0] if len(parts) > 1 else "."


def collection_errors(output: str) -> dict[str, str]:
    """File -> the error that stopped its collection (the last exception line pytest printed)."""
    pieces = _ERROR_HEADER.split(output)
    errors = {}
    for path, body in zip(pieces[1::2], pieces[2::2]):
        lines = [line[4:].strip() for line in body.splitlines() if line.startswith("E   ")]
        errors[path] = next((e for e in reversed(lines) if _EXCEPTION.match(e)), lines[-1] if lines else "?")
    return errors


def collect(testing: Path, paths: list[str], timeout: float | None) -> dict:
    out = _pytest(testing, ["--co", "-q", *(paths or ["."])], timeout)
    text = out.stdout + out.stderr
    per_file = collections.Counter(m.group(1) for m in map(_TEST_ID.match, out.stdout.splitlines()) if m)
    errors = collection_errors(text)
    folders: dict[str, dict] = {}
    for folder in sorted({_folder(f) for f in per_file} | {_folder(f) for f in errors}):
        files = {f: n for f, n in sorted(per_file.items()) if _folder(f) == folder}
        folders[folder] = {"collected": sum(files.values()), "files": files,
                           "collection_errors": {f: e for f, e in sorted(errors.items()) if _folder(f) == folder}}
    summary = text.strip().splitlines()[-1] if text.strip() else ""
    return {"kind": "collect", "folders": folders, "summary": summary, **_where()}


def _outcome(case: ElementTree.Element) -> tuple[str, str]:
    for tag, outcome in (("failure", "failed"), ("error", "errors"), ("skipped", "skipped")):
        child = case.find(tag)
        if child is not None:
            return outcome, (child.get("message") or "").strip().splitlines()[0][:300] if child.get("message") else ""
    return "passed", ""


def run(testing: Path, pytest_args: list[str], timeout: float | None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        out = _pytest(testing, [f"--junitxml={report}", "-q", *pytest_args], timeout)
        tree = ElementTree.parse(report) if report.is_file() else None
    folders: dict[str, dict] = collections.defaultdict(lambda: {"passed": 0, "failed": 0, "skipped": 0,
                                                                "errors": 0, "failures": {}})
    for case in tree.iter("testcase") if tree is not None else ():
        module = (case.get("classname") or "").split(".")
        for at in range(len(module) - 1):  # a rootdir above the checkout prefixes "...testing.python."
            if module[at:at + 2] == ["testing", "python"]:
                module = module[at + 2:]
                break
        # classname is "folder.test_file[.Class]"; a file at the top has no folder
        folder = module[0] if len(module) > 1 and not module[0].startswith("test_") else "."
        outcome, message = _outcome(case)
        folders[folder][outcome] += 1
        if outcome in ("failed", "errors"):
            folders[folder]["failures"][f"{'/'.join(module)}::{case.get('name')}"] = message
    stopped = " (stopped at --timeout: the tests pytest finished)" if "stopped after" in out.stderr else ""
    return {"kind": "run", "folders": dict(sorted(folders.items())), "summary": _totals(folders) + stopped,
            "exit_status": out.returncode, "args": pytest_args, **_where()}


def _totals(folders: dict) -> str:
    """'P passed, F failed, S skipped, E errors' over every folder of a run record."""
    keys = ("passed", "failed", "skipped", "errors")
    return ", ".join(f"{sum(f.get(k, 0) for f in folders.values())} {k}" for k in keys)


def _where() -> dict:
    device = os.environ.get("TILELANG_SUITE_DEVICE") or _gpu_name() or platform.processor() or platform.machine()
    return {"date": datetime.date.today().isoformat(), "device": device, "python": platform.python_version()}


def _gpu_name() -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    names = out.stdout.strip().splitlines()
    return names[0] if out.returncode == 0 and names else None


def merge(records: list[dict]) -> dict:
    """One record per kind ("collect", "run"), later records winning per folder."""
    merged: dict[str, dict] = {}
    for record in records:
        for kind, part in ((record["kind"], record),) if "kind" in record else record.items():
            first = kind not in merged
            into = merged.setdefault(kind, {**part, "folders": {}})
            args = into.get("args")
            into.update({k: v for k, v in part.items() if k != "folders"})
            into["folders"].update(part["folders"])
            if kind == "run" and not first:  # runs split over calls: every call's arguments, the joint counts
                into["args"] = [*(args or []), ";", *(part.get("args") or [])]
                into["summary"] = _totals(into["folders"])
    return merged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", nargs="?", choices=("collect", "run"), help="what to measure")
    parser.add_argument("--testing", type=Path, help="TileLang's testing/python folder")
    parser.add_argument("--json", type=Path, required=True, help="where to write the record")
    parser.add_argument("--merge", type=Path, nargs="+", help="join these records instead of measuring")
    parser.add_argument("--timeout", type=float, default=None, help="seconds for the pytest process")
    argv = list(sys.argv[1:] if argv is None else argv)
    # everything after "--" is pytest's: paths (collect) or pytest arguments (run)
    ours, pytest_args = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    args = parser.parse_args(ours)
    args.pytest_args = pytest_args
    if args.merge:
        record = merge([json.loads(p.read_text()) for p in args.merge])
    elif args.mode and args.testing:
        if not (args.testing / "conftest.py").is_file() and not args.testing.is_dir():
            parser.error(f"--testing {args.testing}: not a folder")
        measure = collect if args.mode == "collect" else run
        record = merge([measure(args.testing, args.pytest_args, args.timeout)])
    else:
        parser.error("give a mode (collect or run) with --testing, or --merge")
    args.json.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    for kind, part in record.items():
        print(f"{kind}: {part.get('summary', '')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
