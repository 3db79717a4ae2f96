"""Compile workers: separate Python processes that compile candidates' kernel IR into the
shared on-disk kernel cache, so the tuning process then loads each one as a cache hit.

A worker is `python -m tilelang_core.autotuner.worker`, talking JSON lines: it answers
`{"ready": true}` once it has imported the compiler, then one reply per job:

    job:   {"id", "text" (the PrimFunc's TVMScript), "out_idx", "target", "target_options",
            "pass_configs", "compile_kwargs", "timeout"}
    reply: {"id", "ok", "stage", "error", "seconds", "exact"}

`stage` says where a job failed: "read" (the IR text did not parse back, or the worker could
not take the job: not the candidate's fault, so the tuning process compiles it itself) or
"compile" (the candidate's compile failed, ran past its timeout, or crashed the worker).

`exact` says the parsed text prints back identically, which is what makes the tuning
process's own compile of the original PrimFunc hit the entry the worker wrote (the kernel
cache key holds the printed IR). Workers are plain subprocesses rather than a
multiprocessing pool: nothing is pickled, the caller's `__main__` script is not re-run in
them (as spawn and forkserver do), and a worker stuck past the timeout is killed and
replaced without breaking the others.
"""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

from .limits import CandidateTimeout, deadline, describe_error

__all__ = ["CompilePool", "compile_job", "main"]

_STARTUP_TIMEOUT_S = 120.0  # importing TVM can take seconds on a loaded machine
_KILL_GRACE_S = 5.0  # past the job's timeout, before the worker is killed


def compile_job(job: dict[str, Any]) -> dict[str, Any]:
    """Parse and compile one job in this process (see the module doc for the fields)."""
    import tilelang_core
    from tilelang_core.plugin import get_plugin_manager
    from tvm.script import from_source

    start = time.perf_counter()
    reply: dict[str, Any] = {"id": job["id"], "ok": False, "stage": "read", "error": "", "exact": False}
    try:
        with deadline(job["timeout"], "compiling"):
            func = from_source(job["text"])
            reply["exact"] = func.script(show_meta=True) == job["text"]
            reply["stage"] = "compile"
            target = get_plugin_manager().parse_target(job["target"], job["target_options"] or None)
            tilelang_core.compile(func, out_idx=job["out_idx"], target=target, pass_configs=job["pass_configs"],
                                  **job["compile_kwargs"])
        reply["ok"] = True
    except (Exception, CandidateTimeout) as err:
        reply["error"] = describe_error(err)
    reply["seconds"] = time.perf_counter() - start
    return reply


def main() -> None:
    """The worker loop: jobs on stdin, replies on stdout; anything else printed goes to stderr."""
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # prints from the compiler (verbose, C code) must not mix with the replies
    sys.stdout = sys.stderr
    import tilelang_core.language  # noqa: F401  (registers the tile ops the IR text names)

    replies.write(json.dumps({"ready": True, "pid": os.getpid()}) + "\n")
    for line in sys.stdin:
        if line.strip():
            replies.write(json.dumps(compile_job(json.loads(line))) + "\n")


class _Worker:
    """One worker process, owned by one thread of a `CompilePool`."""

    command = [sys.executable, "-m", "tilelang_core.autotuner.worker"]

    def __init__(self) -> None:
        self.log = tempfile.TemporaryFile()
        path = os.pathsep.join(p for p in sys.path if p)
        env = dict(os.environ, PYTHONPATH=path)
        self.proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     text=True, env=env)

    def wait_ready(self) -> None:
        """Block until the worker has imported the compiler; RuntimeError if it could not."""
        ready = self._read(_STARTUP_TIMEOUT_S)
        if not ready or not ready.get("ready"):
            tail = self._tail()
            self.stop()
            raise RuntimeError(f"a compile worker did not start: {tail}")

    def _read(self, timeout: float) -> dict[str, Any] | None:
        """The next reply, or None if the worker exited or was killed after `timeout` seconds."""
        timer = threading.Timer(timeout, self.proc.kill)
        timer.start()
        try:
            line = self.proc.stdout.readline()
        finally:
            timer.cancel()
        return json.loads(line) if line else None

    def run(self, job: dict[str, Any]) -> dict[str, Any]:
        try:
            self.proc.stdin.write(json.dumps(job) + "\n")
            self.proc.stdin.flush()
        except OSError:
            pass  # reported below as an exit
        reply = self._read(job["timeout"] + _KILL_GRACE_S)
        if reply is not None:
            return reply
        self.proc.wait()
        if self.proc.returncode == -9:
            error = f"CandidateTimeout: compiling took longer than the timeout ({job['timeout']:g} s); the worker was stopped"
        else:
            error = f"the compile worker exited with code {self.proc.returncode}: {self._tail()}"
        return {"id": job["id"], "ok": False, "stage": "compile", "error": error, "exact": False, "seconds": None}

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def _tail(self, limit: int = 2000) -> str:
        self.log.seek(0)
        text = self.log.read().decode(errors="replace").strip()
        return text[-limit:] or "(no output)"

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class CompilePool:
    """`size` workers taking jobs from one queue; the caller may take jobs from it too
    (`take`) and compile them itself, which it does while the workers start.

    Replies arrive on `results`. A worker that fails to start takes no jobs (its error is in
    `startup_errors`); one that dies or is killed on a timeout is replaced for the next job.
    """

    def __init__(self, size: int) -> None:
        self.results: queue.Queue[dict[str, Any]] = queue.Queue()
        self.startup_errors: list[str] = []
        self._jobs: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._closing = threading.Event()
        self._lock = threading.Lock()
        self._starting: set[_Worker] = set()
        self._starting_threads: set[threading.Thread] = set()
        self._threads = [threading.Thread(target=self._serve, name=f"tilelang-compile-{i}", daemon=True)
                         for i in range(size)]
        for thread in self._threads:
            thread.start()

    def submit(self, job: dict[str, Any]) -> None:
        self._jobs.put(job)

    def take(self) -> dict[str, Any] | None:
        """A job no worker has taken yet, or None."""
        try:
            job = self._jobs.get_nowait()
        except queue.Empty:
            return None
        if job is None:  # a stop marker: leave it for a worker thread
            self._jobs.put(None)
        return job

    def close(self) -> None:
        """Stop the workers: those still starting at once, the others after their current
        job; jobs no one has taken are dropped."""
        self._closing.set()
        while self.take() is not None:
            pass
        with self._lock:
            for worker in self._starting:
                worker.proc.kill()
            starting = set(self._starting_threads)
        for _ in self._threads:
            self._jobs.put(None)
        for thread in self._threads:
            if thread not in starting:  # a killed worker's thread ends by itself
                thread.join()

    def _start_worker(self) -> _Worker | None:
        try:
            worker = _Worker()
        except OSError as err:
            self.startup_errors.append(f"a compile worker did not start: {err}")
            return None
        with self._lock:
            if self._closing.is_set():
                worker.proc.kill()
            self._starting.add(worker)
            self._starting_threads.add(threading.current_thread())
        try:
            worker.wait_ready()
        except RuntimeError as err:
            if not self._closing.is_set():
                self.startup_errors.append(str(err))
            return None
        finally:
            with self._lock:
                self._starting.discard(worker)
                self._starting_threads.discard(threading.current_thread())
        return worker

    def _serve(self) -> None:
        worker: _Worker | None = None
        try:
            while not self._closing.is_set():
                if worker is None:
                    worker = self._start_worker()
                    if worker is None:
                        return
                job = self._jobs.get()
                if job is None:
                    return
                try:
                    reply = worker.run(job)
                except Exception as err:  # a broken pipe, a garbled reply: the job must still be answered
                    reply = {"id": job["id"], "ok": False, "stage": "read", "error": describe_error(err),
                             "exact": False, "seconds": None}
                self.results.put(reply)
                if not worker.alive:
                    worker.stop()
                    worker = None
        finally:
            if worker is not None:
                worker.stop()


if __name__ == "__main__":
    main()
