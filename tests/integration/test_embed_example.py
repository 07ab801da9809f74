"""examples/embed_selectors.py, the embedding example, run as a user would run it.

The script is started as a subprocess against a simulated replica set that requires
authentication.  It must discover the set, authenticate, read its documents back across
getMores and see its insert on a change stream -- in one thread, with none of the library's
adapters or transports imported (it brings its own event loop).  Without credentials the same
script is refused by the server, so the first run did authenticate.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mongo_sansio.adapters.blocking import MongoClient
from mongo_sansio.adapters.sim import SimulatedReplicaSet

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "embed_selectors.py"

# Runs the example as ``python examples/embed_selectors.py URI`` would, then reports on the
# process: the threads left and whether any adapter or transport module was imported.
_WRAPPER = """
import runpy, sys, threading
sys.argv = [sys.argv[1], sys.argv[2]]
runpy.run_path(sys.argv[0], run_name="__main__")
imported = sorted(m for m in sys.modules
                  if m.split(".")[:2] in (["mongo_sansio", "adapters"], ["mongo_sansio", "transports"])
                  or m.split(".")[0] in ("adapters", "transports"))
print("imported", imported)
print("threads", threading.active_count())
"""


def run_example(uri: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _WRAPPER, str(EXAMPLE), uri],
        capture_output=True,
        text=True,
        timeout=40,
    )


def test_the_example_runs_against_an_authenticated_replica_set() -> None:
    with SimulatedReplicaSet(members=3, auth={"ada": "lovelace"}) as rs:
        done = run_example(rs.uri_with_credentials())
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert lines[0] == "found [0, 1, 2, 3, 4]"
        assert lines[1].startswith("topology REPLICA_SET_WITH_PRIMARY primary ('127.0.0.1', ")
        assert lines[1].endswith(f"{rs.primary.split(':')[1]})")
        assert lines[2] == "change insert 99"
        assert lines[3] == "imported []"
        assert lines[4] == "threads 1"
        assert done.stderr == ""  # no background task failed
        # the documents are really on the server, where the example put them
        with MongoClient(rs.uri_with_credentials()) as client:
            found = sorted(d["n"] for d in client.embed.things.find({}, {"_id": 0}))
        assert found == [0, 1, 2, 3, 4, 99]


def test_without_credentials_the_server_refuses_it() -> None:
    with SimulatedReplicaSet(members=1, auth={"ada": "lovelace"}) as rs:
        done = run_example(rs.uri)
        assert done.returncode != 0
        assert "requires authentication" in done.stderr or "Unauthorized" in done.stderr, (
            done.stderr
        )
