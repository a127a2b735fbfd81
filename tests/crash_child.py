"""The run's own process in tests/test_crash.py: materializes documents one run each, on command.

    python -m tests.crash_child '{"workspace": ..., "bucket": ...}'   (UD_FAULTS set: resources/faults.py)

It reads one JSON command a line from stdin, {"run": key or [keys], "arm": kill point or null},
arms the kill point (resources.faults.arm), runs the project's job for that one partition (or the
batch of those partitions, as a range run) with the time pinned (tests/end_state.py) and answers on
stdout with a line "CRASH-CHILD {json}": the key, the run's success and its first step failure. A
killed child answers nothing: its stdout ends. With "dagster_home" in its spec, its Dagster
instance lives in that folder, so another process can read what a killed run had materialized.
"""

from __future__ import annotations

import json
import os
import sys

PREFIX = "CRASH-CHILD "


def say(message: dict) -> None:
    sys.stdout.write(PREFIX + json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    spec = json.loads(sys.argv[1])
    import dagster as dg

    from resources import faults
    from tests.defs.test_assets import run
    from tests.end_state import pinned_time
    from ud_assets.defs.resources import LibrarianResource

    assert faults.ENABLED, "UD_FAULTS is not set: no kill point can fire"
    resource = LibrarianResource(backend="cassandra", workspace=spec["workspace"], bucket=spec["bucket"])
    home = spec.get("dagster_home")
    with dg.DagsterInstance.local_temp(home) if home else dg.instance_for_test() as instance, pinned_time():
        say({"ready": os.getpid()})
        for line in sys.stdin:
            command = json.loads(line)
            faults.arm(command.get("arm"))
            keys = command["run"] if isinstance(command["run"], list) else [command["run"]]
            result = run(resource, instance, keys)
            faults.arm(None)
            events = result.get_step_failure_events()
            error = events[0].step_failure_data.error.message[:300] if events else ""
            say({"key": command["run"], "success": result.success, "error": error})


if __name__ == "__main__":
    main()
