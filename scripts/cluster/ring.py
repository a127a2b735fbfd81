"""Waits until the Cassandra nodes form one cluster: each lists every other as a peer, all agree on the schema.

usage: ring.py HOST,HOST,... PORT TIMEOUT_SECONDS   (exit 0 once they do, 1 at the timeout)
"""

import sys
import time


def check(hosts: list[str], port: int) -> str:
    """'' when every node knows the others and one schema version; else what is missing."""
    from cassandra.cluster import Cluster
    from cassandra.policies import WhiteListRoundRobinPolicy

    versions = set()
    for host in hosts:
        cluster = Cluster(
            [host],
            port=port,
            load_balancing_policy=WhiteListRoundRobinPolicy([host]),
            connect_timeout=5,
            control_connection_timeout=5,
        )
        try:
            session = cluster.connect()
            local = session.execute("SELECT schema_version FROM system.local").one()
            peers = {
                str(r.peer): r.schema_version
                for r in session.execute("SELECT peer, schema_version FROM system.peers_v2")
            }
        except Exception as e:
            return f"{host}: {e}"
        finally:
            cluster.shutdown()
        if set(peers) != set(hosts) - {host}:
            return f"{host} knows {sorted(peers)}"
        versions |= {local.schema_version, *peers.values()}
    return "" if len(versions) == 1 else f"schema versions {versions}"


def main() -> int:
    hosts, port, timeout = sys.argv[1].split(","), int(sys.argv[2]), float(sys.argv[3])
    deadline = time.monotonic() + timeout
    while True:
        problem = check(hosts, port)
        if not problem:
            return 0
        if time.monotonic() > deadline:
            print(f"the Cassandra nodes are not one cluster: {problem}", file=sys.stderr)
            return 1
        time.sleep(1)


if __name__ == "__main__":
    sys.exit(main())
