"""The gevent client in a monkey-patched process, run by test_gevent_client.py in a subprocess
(patching must not touch the test process).  The simulator's threads and sockets are gevent's
here too.  Prints ``patched: ok`` last when every check passed."""

from gevent import monkey

monkey.patch_all()

import faulthandler  # noqa: E402
import time  # noqa: E402

import gevent  # noqa: E402

from mongo_sansio.adapters.gevent import MongoClient  # noqa: E402
from mongo_sansio.adapters.sim import SimulatedReplicaSet  # noqa: E402


def main() -> None:
    faulthandler.dump_traceback_later(45, exit=True)
    assert monkey.is_module_patched("socket") and monkey.is_module_patched("threading")
    with SimulatedReplicaSet(members=3) as rs:
        client = MongoClient(rs.uri, serverSelectionTimeoutMS=5000, maxPoolSize=3)
        try:
            things = client.test.things
            writers = [
                gevent.spawn(things.insert_many, [{"w": w, "i": i} for i in range(10)])
                for w in range(20)
            ]
            gevent.joinall(writers, raise_error=True, timeout=20)
            assert things.count_documents({}) == 200
            assert len(list(things.find({}, batch_size=7))) == 200
            with things.watch(max_await_time_ms=50) as stream:
                gevent.spawn(things.insert_one, {"_id": "watched"})
                deadline = time.monotonic() + 5
                change = None
                while change is None and time.monotonic() < deadline:
                    change = stream.try_next()
                assert change is not None and change["documentKey"] == {"_id": "watched"}
            primary = rs.primary
            assert primary is not None
            rs.configure_failpoint(primary, {
                "configureFailPoint": "failCommand", "mode": {"times": 1},
                "data": {"failCommands": ["find"], "blockConnection": True, "blockTimeMS": 2000},
            })  # fmt: skip
            try:
                with gevent.Timeout(0.2):
                    things.find_one({})
                raise AssertionError("the blocked find was not interrupted")
            except gevent.Timeout:
                pass
            assert things.find_one({"_id": "watched"}) == {"_id": "watched"}
            for address in client.nodes:
                pool = client.engine.core.pool(address)
                assert pool is not None and pool.in_use_connection_count == 0
        finally:
            client.close()
    print("patched: ok")


if __name__ == "__main__":
    main()
