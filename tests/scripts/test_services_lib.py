"""scripts/services/lib.sh: waiting for a server the script has just started."""

import subprocess
from pathlib import Path

LIB = Path(__file__).resolve().parents[2] / "scripts" / "services" / "lib.sh"

# A "server" that takes a while to exec its program, as a forked shell does on a busy machine:
# until then /proc shows the script's own command line, not the server's marker.
_WAIT = """
source "$LIB"
UD_SERVICES_TIMEOUT=20
pidfile="$(mktemp)"
# Built at run time: the marker must not appear in this script's own command line (bash -c).
marker="sleep $((3)).25"
( sleep 0.5; {exec_or_exit} ) &
echo $! >"$pidfile"
ready() {{ live_pid "$pidfile" "$marker" >/dev/null; }}
logs() {{ echo "no log"; }}
wait_ready slow-server "$pidfile" "$marker" ready logs
echo READY
"""


def _wait(exec_or_exit: str) -> subprocess.CompletedProcess:
    script = _WAIT.format(exec_or_exit=exec_or_exit)
    return subprocess.run(
        ["bash", "-c", script],
        env={"LIB": str(LIB), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_server_slow_to_exec_its_program_is_waited_for_not_called_dead():
    out = _wait("exec sleep $((3)).25")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("READY")


def test_a_server_that_exits_during_startup_is_reported():
    out = _wait("exit 3")
    assert out.returncode != 0
    assert "slow-server exited during startup" in out.stderr
    assert "READY" not in out.stdout
