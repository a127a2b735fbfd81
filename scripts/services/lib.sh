# shellcheck shell=bash
# shellcheck disable=SC2034  # settings are used by the scripts that source this file
# Shared settings and helpers for the local test services (MinIO + Cassandra).
# Sourced by up.sh, down.sh and env.sh; not meant to be run on its own.
#
# Layout:
#   $UD_SERVICES_CACHE (~/.cache/ud-services)  built/downloaded servers, shared by every clone
#                                              on this machine so a fresh clone starts in seconds
#   $UD_SERVICES_DIR   (<clone>/.services)     throwaway data, logs and pid files of this clone
#
# Every knob can be overridden from the environment; env.sh prints what the tests need.

# The clone this script lives in, wherever it was called from.
UD_REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

UD_SERVICES_CACHE="${UD_SERVICES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ud-services}"
UD_SERVICES_DIR="${UD_SERVICES_DIR:-$UD_REPO_ROOT/.services}"

# --- S3 (MinIO) -----------------------------------------------------------------------------
# Pinned: the Go module proxy serves MinIO only as pseudo-versions of its master branch (the
# project stopped tagging Go-module releases), so we pin the exact one we tested with.
MINIO_MODULE="github.com/minio/minio"
MINIO_VERSION="v0.0.0-20260212201848-7aac2a2c5b7c"
UD_S3_HOST=127.0.0.1
UD_S3_PORT="${UD_S3_PORT:-9000}"
UD_S3_ACCESS_KEY="${UD_S3_ACCESS_KEY:-minioadmin}"
UD_S3_SECRET_KEY="${UD_S3_SECRET_KEY:-minioadmin}"
UD_S3_REGION="${UD_S3_REGION:-us-east-1}"

# --- Cassandra ------------------------------------------------------------------------------
CASSANDRA_VERSION="5.0.9"
UD_CASSANDRA_HOST=127.0.0.1
UD_CASSANDRA_PORT="${UD_CASSANDRA_PORT:-9042}"
# Inter-node (gossip) port; a single node still binds it.
UD_CASSANDRA_STORAGE_PORT="${UD_CASSANDRA_STORAGE_PORT:-7000}"
UD_CASSANDRA_HEAP_MIN="${UD_CASSANDRA_HEAP_MIN:-512m}"
UD_CASSANDRA_HEAP_MAX="${UD_CASSANDRA_HEAP_MAX:-1g}"
# When Cassandra acknowledges a write (cassandra.yaml commitlog_sync):
#   group    (default) once the commit log holding it is fsynced; one fsync per window of
#            UD_CASSANDRA_COMMITLOG_WINDOW_MS (default 2) covers every write of the window.
#            Nothing acknowledged is lost when the node is killed or the machine loses power.
#            A longer window adds to every write's latency (README.md, "Durability").
#   batch    likewise, with an fsync as soon as a write arrives (no window).
#   periodic at once; the commit log is fsynced every UD_CASSANDRA_COMMITLOG_WINDOW_MS (default
#            10000, Cassandra's own default), and that much acknowledged data is lost by a crash.
#            Not crash-safe.
UD_CASSANDRA_COMMITLOG_SYNC="${UD_CASSANDRA_COMMITLOG_SYNC:-group}"
UD_CASSANDRA_COMMITLOG_WINDOW_MS="${UD_CASSANDRA_COMMITLOG_WINDOW_MS:-}"
# "allow" (AllowAllAuthenticator, the default) or "password" (PasswordAuthenticator with the
# stock superuser cassandra/cassandra; env.sh then exports CASSANDRA_USERNAME/PASSWORD).
UD_CASSANDRA_AUTH="${UD_CASSANDRA_AUTH:-allow}"
# The memtable every table uses unless it names one: trie (less CPU per row) or skiplist (the
# stock cassandra.yaml's default).
UD_CASSANDRA_MEMTABLE="${UD_CASSANDRA_MEMTABLE:-trie}"

# Seconds to wait for each server to become ready before giving up.
UD_SERVICES_TIMEOUT="${UD_SERVICES_TIMEOUT:-180}"

MINIO_BIN="$UD_SERVICES_CACHE/minio/$MINIO_VERSION/minio"
CASSANDRA_HOME="$UD_SERVICES_CACHE/cassandra/$CASSANDRA_VERSION"

MINIO_RUN="$UD_SERVICES_DIR/minio"
CASSANDRA_RUN="$UD_SERVICES_DIR/cassandra"

log() { printf '[services] %s\n' "$*" >&2; }
die() { printf '[services] ERROR: %s\n' "$*" >&2; exit 1; }

# A python for the CQL check: the clone's venv if it exists (any python3 works, the check only
# needs the standard library).
services_python() {
  if [[ -x "$UD_REPO_ROOT/.venv/bin/python" ]]; then
    echo "$UD_REPO_ROOT/.venv/bin/python"
  elif command -v python3 >/dev/null 2>&1; then
    command -v python3
  else
    die "no python3 found for the Cassandra readiness check"
  fi
}

# Installs Debian packages the servers need (Maven, a JDK) when missing, as the Makefile does for
# its own system packages; the machines this project runs on have them already.
apt_install() {
  command -v apt-get >/dev/null 2>&1 || die "missing: $* (no apt-get here to install it)"
  local sudo=()
  [[ "$(id -u)" == 0 ]] || sudo=(sudo)
  log "installing Debian packages: $*"
  if ! "${sudo[@]}" apt-get update -qq >/dev/null ||
     ! DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "$@" >/dev/null; then
    die "could not install: $*"
  fi
}

# True if something accepts TCP connections on 127.0.0.1:$1.
port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# The pid recorded in pid file $1, if it holds one (nothing else: a pid file can be empty or torn).
pidfile_pid() {
  local pid
  [[ -s "$1" ]] || return 1
  pid="$(<"$1")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  echo "$pid"
}

# Reads the pid in file $1 and prints it if that process is alive AND its command line contains
# $2 (a path unique to this clone's service). After a reboot the old pid may belong to an
# unrelated process, so a bare `kill -0` is not enough.
live_pid() {
  local pidfile="$1" marker="$2" pid
  pid="$(pidfile_pid "$pidfile")" || return 1
  [[ -r "/proc/$pid/cmdline" ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$marker" || return 1
  # A zombie has exited already, whatever its cmdline says.
  [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]] || return 1
  echo "$pid"
}

# Whether a server this script just started (pid file $1) is still starting or running. Until the
# forked shell has exec'd the server, /proc shows this script's command line, not the marker, so
# live_pid alone would call a slow start an exit (a busy machine: "daemon exited during startup"
# with an empty log, CI on fe898ec). Our own child that is not a zombie is alive whatever it shows.
starting_pid() {
  local pidfile="$1" marker="$2" pid state ppid rest
  live_pid "$pidfile" "$marker" >/dev/null && return 0
  pid="$(pidfile_pid "$pidfile")" || return 1
  rest="$(cat "/proc/$pid/stat" 2>/dev/null)" || return 1
  # /proc/PID/stat: "pid (comm) state ppid ..."; comm may hold spaces, so split after its ")".
  read -r state ppid _ <<<"${rest##*) }"
  [[ "$state" != Z && ("$ppid" == "$$" || "$ppid" == "$BASHPID") ]]
}

# Stops the process recorded in pid file $1 (if it is really ours, see live_pid), waiting up to
# $3 seconds for a clean exit before SIGKILL, then removes the pid file.
# Sets STOP_KILLED=1 if it had to use SIGKILL.
stop_pidfile() {
  local pidfile="$1" marker="$2" grace="$3" name="$4" pid i
  STOP_KILLED=0
  if pid="$(live_pid "$pidfile" "$marker")"; then
    log "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < grace * 10; i++)); do
      live_pid "$pidfile" "$marker" >/dev/null || break
      sleep 0.1
    done
    if live_pid "$pidfile" "$marker" >/dev/null; then
      log "$name did not exit within ${grace}s, killing it"
      STOP_KILLED=1
      kill -KILL "$pid" 2>/dev/null || true
      for ((i = 0; i < 50; i++)); do
        live_pid "$pidfile" "$marker" >/dev/null || break
        sleep 0.1
      done
    fi
  fi
  rm -f "$pidfile"
}

# Prints the last lines of a log file, for failure messages.
log_tail() {
  local file="$1"
  if [[ -s "$file" ]]; then
    printf '%s\n' "----- last lines of $file -----" >&2
    # Cut very long lines (Cassandra logs its whole configuration on one line).
    tail -n "${2:-40}" "$file" | cut -c1-400 >&2
    printf '%s\n' "-----" >&2
  fi
}

# Waits until $ready_fn succeeds, our process dies, or the timeout passes (make services-up and
# make cluster-up). $stop_fn, when given, stops a half-started server on timeout, so that the next
# start begins from scratch.
wait_ready() {
  local name="$1" pidfile="$2" marker="$3" ready_fn="$4" logs_fn="$5" stop_fn="${6:-}"
  local deadline=$((SECONDS + UD_SERVICES_TIMEOUT))
  until "$ready_fn"; do
    if ! starting_pid "$pidfile" "$marker"; then
      "$logs_fn"
      die "$name exited during startup (logs above)"
    fi
    if ((SECONDS >= deadline)); then
      "$logs_fn"
      if [[ -n "$stop_fn" ]]; then "$stop_fn" || true; fi
      die "$name did not become ready within ${UD_SERVICES_TIMEOUT}s (logs above; raise UD_SERVICES_TIMEOUT if the machine is just slow)"
    fi
    sleep 0.25
  done
}
