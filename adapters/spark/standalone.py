"""A standalone Spark cluster on loopback, for tests and benchmarks: a master and N workers
started from pyspark's own ``bin/spark-class``, each in its own JVM, torn down on exit.

``with standalone_cluster(workers=2, cores=1) as master_url:`` gives ``spark://127.0.0.1:PORT``
once every worker has registered with the master (read from the master's web UI JSON), or raises
``StandaloneClusterError`` with the tail of each log when they do not within ``start_seconds``.
The driver is whoever uses the URL (``SparkSession.builder.master(url)``, ``mongo-sansio
pipeline --master url``); the executors run ``PYSPARK_PYTHON``, which defaults to this
interpreter so that they can import the data source.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path


class StandaloneClusterError(RuntimeError):
    """The cluster did not start: the message holds the end of each process's log."""


def free_port() -> int:
    """A loopback port nothing listens on now (for a Spark process to listen on)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _alive_workers(webui: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{webui}/json/", timeout=2) as answer:
            return int(json.load(answer).get("aliveworkers", 0))
    except (OSError, ValueError):
        return 0


def _stop(process: subprocess.Popen[bytes]) -> None:
    # each JVM leads a process group of its own (start_new_session): its children go with it
    try:
        os.killpg(process.pid, 15)
        process.wait(20)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        process.wait(20)


@contextmanager
def standalone_cluster(
    workers: int = 2,
    cores: int = 1,
    memory: str = "1g",
    folder: str | Path | None = None,
    start_seconds: float = 120.0,
) -> Iterator[str]:
    """Run a master and ``workers`` workers of ``cores`` cores each; yield the master's URL.

    Logs and the workers' work directories go to ``folder`` (a temporary folder removed on exit
    when not given).  ``start_seconds`` bounds the start (two JVMs on a busy two-core machine
    take about half a minute)."""
    from pyspark.find_spark_home import _find_spark_home

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark_class = os.path.join(_find_spark_home(), "bin", "spark-class")
    with ExitStack() as stack:
        if folder is None:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="spark-standalone-"))
        root = Path(folder)
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1",
               "PYSPARK_PYTHON": os.environ["PYSPARK_PYTHON"], "SPARK_LOG_DIR": str(root)}
        port, webui = free_port(), free_port()
        master_url = f"spark://127.0.0.1:{port}"

        def start(name: str, *arguments: str) -> None:
            log = stack.enter_context(open(root / f"{name}.log", "w", encoding="utf-8"))
            process = subprocess.Popen(
                [spark_class, *arguments], stdout=log, stderr=subprocess.STDOUT, env=env,
                start_new_session=True,
            )
            stack.callback(_stop, process)

        start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
              "--port", str(port), "--webui-port", str(webui))
        for n in range(1, workers + 1):
            start(f"worker{n}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                  "--cores", str(cores), "--memory", memory, "--webui-port", "0",
                  "--work-dir", str(root / f"work{n}"), master_url)
        deadline = time.monotonic() + start_seconds
        while _alive_workers(webui) < workers:
            if time.monotonic() > deadline:
                logs = {p.name: p.read_text(errors="replace")[-1500:] for p in root.glob("*.log")}
                raise StandaloneClusterError(
                    f"{workers} workers did not register within {start_seconds:.0f} s: {logs}"
                )
            time.sleep(0.5)
        yield master_url
