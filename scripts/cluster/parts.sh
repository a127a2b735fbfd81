# shellcheck shell=bash
# Start, readiness and stop of each part of the deployment. Sourced by up.sh and down.sh after
# scripts/services/{lib,minio,cassandra}.sh and lib.sh.

port_open_on() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# "ready", "starting" (our process is alive) or "start" (nothing of ours runs: start it); dies
# if the port is held by something else. As scripts/services/up.sh's service_state, any address.
part_state() {
  local name="$1" host="$2" port="$3" pidfile="$4" marker="$5" ready_fn="$6"
  if "$ready_fn"; then
    echo ready
  elif live_pid "$pidfile" "$marker" >/dev/null; then
    echo starting
  else
    rm -f "$pidfile"
    if port_open_on "$host" "$port"; then
      die "port $host:$port is in use by another program, but it is not this clone's $name; free it or set the UD_CLUSTER_* port (scripts/cluster/lib.sh)"
    fi
    echo start
  fi
}

wait_part() {
  local name="$1" pidfile="$2" marker="$3" ready_fn="$4" logs_fn="$5" deadline=$((SECONDS + UD_SERVICES_TIMEOUT))
  until "$ready_fn"; do
    if ! live_pid "$pidfile" "$marker" >/dev/null; then
      "$logs_fn"
      die "$name exited during startup (logs above)"
    fi
    if ((SECONDS >= deadline)); then
      "$logs_fn"
      die "$name did not become ready within ${UD_SERVICES_TIMEOUT}s (logs above)"
    fi
    sleep 0.25
  done
  clog "$name ready"
}

minio_logs() { log_tail "$MINIO_RUN/minio.log" 40; }

# Ready once the erasure set has its write quorum (/minio/health/ready answers before the drives
# are even formatted).
minio_cluster_ready() { curl -sf -o /dev/null --max-time 2 "$(minio_url)/minio/health/cluster"; }

# Whether the Cassandra nodes know each other and agree on the schema (scripts/cluster/ring.py).
cassandra_wait_ring() {
  local hosts
  hosts="$(tr ' ' ',' <<<"$UD_CLUSTER_CASSANDRA_NODES")"
  "$UD_VENV/bin/python" "$here/ring.py" "$hosts" "$UD_CASSANDRA_PORT" "$UD_SERVICES_TIMEOUT" ||
    die "the Cassandra nodes did not form one cluster (logs: $UD_CLUSTER_DIR/cassandra*/logs/system.log)"
}

# --- PostgreSQL (Debian's postgresql-15 binaries, our own data folder, never the system service) ---

pg_bin() {
  local dir
  for dir in /usr/lib/postgresql/*/bin; do
    [[ -x "$dir/pg_ctl" ]] && { echo "$dir"; return 0; }
  done
  return 1
}

# PostgreSQL refuses to run as root: as root, its commands run as the postgres user.
pg_as() {
  if [[ "$(id -u)" == 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

pg_ready() {
  local bin
  bin="$(pg_bin)" || return 1
  "$bin/pg_isready" -q -h 127.0.0.1 -p "$UD_CLUSTER_PG_PORT" -d dagster -U dagster
}

pg_logs() { log_tail "$PG_RUN/postgres.log" 30; }

pg_start() {
  local bin
  bin="$(pg_bin)" || { apt_install postgresql; bin="$(pg_bin)"; }
  mkdir -p "$PG_RUN"
  [[ "$(id -u)" == 0 ]] && chown postgres: "$PG_RUN"
  if [[ ! -s "$PG_RUN/data/PG_VERSION" ]]; then
    clog "creating the PostgreSQL cluster in $PG_RUN/data"
    rm -rf "$PG_RUN/data"
    printf 'dagster\n' >"$PG_RUN/pwfile"
    [[ "$(id -u)" == 0 ]] && chown postgres: "$PG_RUN/pwfile"
    pg_as "$bin/initdb" -D "$PG_RUN/data" -U dagster --pwfile="$PG_RUN/pwfile" --auth-local=trust \
      --auth-host=scram-sha-256 -E UTF8 --no-instructions >"$PG_RUN/initdb.log" 2>&1 ||
      { log_tail "$PG_RUN/initdb.log" 30; die "initdb failed"; }
    rm -f "$PG_RUN/pwfile"
    touch "$PG_RUN/.created"
  fi
  clog "starting PostgreSQL on 127.0.0.1:$UD_CLUSTER_PG_PORT (log: $PG_RUN/postgres.log)"
  # fsync stays on (the default): an acknowledged commit of Dagster's run storage survives a crash.
  pg_as "$bin/pg_ctl" start -D "$PG_RUN/data" -l "$PG_RUN/postgres.log" -w -t "$UD_SERVICES_TIMEOUT" \
    -o "-p $UD_CLUSTER_PG_PORT -c listen_addresses=127.0.0.1 -k $PG_RUN -c shared_buffers=64MB -c max_connections=200" \
    >/dev/null || { pg_logs; die "PostgreSQL did not start"; }
  # The postmaster's pid alone, for live_pid (data/postmaster.pid has more lines).
  head -n1 "$PG_RUN/data/postmaster.pid" >"$PG_RUN/postgres.pid"
  if [[ -e "$PG_RUN/.created" ]]; then
    pg_as "$bin/createdb" -h "$PG_RUN" -p "$UD_CLUSTER_PG_PORT" -U dagster dagster || die "createdb dagster failed"
    rm -f "$PG_RUN/.created"
  fi
}

pg_stop() {
  local bin
  bin="$(pg_bin)" || return 0
  # postmaster.pid holds more than the pid (live_pid does not read it): pg_ctl knows whether it runs.
  [[ -s "$PG_RUN/data/postmaster.pid" ]] || return 0
  pg_as "$bin/pg_ctl" status -D "$PG_RUN/data" >/dev/null 2>&1 || return 0
  clog "stopping PostgreSQL"
  pg_as "$bin/pg_ctl" stop -D "$PG_RUN/data" -m fast -w -t 60 >/dev/null || true
}

# --- Redis: the Celery broker and result backend --------------------------------------------

redis_ready() { [[ "$(redis-cli -h 127.0.0.1 -p "$UD_CLUSTER_REDIS_PORT" ping 2>/dev/null)" == PONG ]]; }
redis_logs() { log_tail "$REDIS_RUN/redis.log" 30; }

redis_start() {
  command -v redis-server >/dev/null 2>&1 || apt_install redis-server
  mkdir -p "$REDIS_RUN"
  # The queue of runs survives a restart of Redis: every write is appended and fsynced each second.
  cat >"$REDIS_RUN/redis.conf" <<CONF
# Generated by scripts/cluster/parts.sh on every start.
bind 127.0.0.1
port $UD_CLUSTER_REDIS_PORT
dir $REDIS_RUN
daemonize no
logfile $REDIS_RUN/redis.log
save ""
appendonly yes
appendfsync everysec
# The config path stays in the process title: live_pid recognises this clone's server by it.
proc-title-template "{title} {listen-addr} {config-file}"
CONF
  : >"$REDIS_RUN/redis.log"
  clog "starting Redis on 127.0.0.1:$UD_CLUSTER_REDIS_PORT"
  setsid redis-server "$REDIS_RUN/redis.conf" </dev/null >/dev/null 2>&1 &
  echo $! >"$REDIS_RUN/redis.pid"
}

redis_stop() { stop_pidfile "$REDIS_RUN/redis.pid" "$REDIS_RUN/redis.conf" 20 Redis; }

# --- Dagster: instance, code server, webserver, daemon, Celery workers ----------------------

# The environment of every Dagster process: cluster_exports, the clone on PYTHONPATH (the venv
# may hold the project installed from another clone), the Celery workers' settings module.
dagster_env() {
  local line
  DAGSTER_ENV=()
  while read -r line; do DAGSTER_ENV+=("$line"); done < <(cluster_exports)
  DAGSTER_ENV+=(
    "PYTHONPATH=$UD_REPO_ROOT:$UD_REPO_ROOT/deploy/celery"
    DO_NOT_TRACK=true UNSTRUCTURED_DISABLE_NOTICE=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
  )
}

# DAGSTER_HOME with deploy/dagster.yaml, the limits set to the worker count; the schema in
# PostgreSQL created or migrated once per Dagster version, before any Dagster process starts.
dagster_home() {
  mkdir -p "$CLUSTER_DAGSTER_HOME"
  UD_CLUSTER_WORKERS="$UD_CLUSTER_WORKERS" envsubst '${UD_CLUSTER_WORKERS}' <"$UD_REPO_ROOT/deploy/dagster.yaml" \
    >"$CLUSTER_DAGSTER_HOME/dagster.yaml.tmp"
  mv -f "$CLUSTER_DAGSTER_HOME/dagster.yaml.tmp" "$CLUSTER_DAGSTER_HOME/dagster.yaml"
  dagster_env
  local version stamp
  version="$("$UD_VENV/bin/python" -c 'from importlib.metadata import version; print(version("dagster"))')"
  stamp="$DAGSTER_RUN/.schema-$version"
  if [[ ! -e "$stamp" ]]; then
    clog "creating Dagster's tables in PostgreSQL (dagster instance migrate)"
    env "${DAGSTER_ENV[@]}" "$UD_VENV/bin/dagster" instance migrate >"$DAGSTER_RUN/migrate.log" 2>&1 ||
      { log_tail "$DAGSTER_RUN/migrate.log" 30; die "dagster instance migrate failed"; }
    touch "$stamp"
  fi
}

# Sets PART_CMD, PART_MARKER (a part of its command line only this clone's process has),
# PART_LOG and PART_PID for a Dagster part: code-server, webserver, daemon, workerN.
dagster_part_spec() {
  local name="$1" bin="$UD_VENV/bin" workspace="$UD_REPO_ROOT/deploy/workspace.yaml"
  PART_LOG="$DAGSTER_RUN/$name.log"
  PART_PID="$DAGSTER_RUN/$name.pid"
  case "$name" in
    code-server)
      PART_CMD=("$bin/dagster" api grpc -m ud_assets.definitions -d "$UD_REPO_ROOT" -h 127.0.0.1 -p "$UD_CLUSTER_GRPC_PORT" --location-name ud)
      PART_MARKER="api grpc -m ud_assets.definitions -d $UD_REPO_ROOT" ;;
    webserver)
      PART_CMD=("$bin/dagster-webserver" -w "$workspace" -h 127.0.0.1 -p "$UD_CLUSTER_WEB_PORT")
      PART_MARKER="dagster-webserver -w $workspace" ;;
    daemon)
      PART_CMD=("$bin/dagster-daemon" run -w "$workspace")
      PART_MARKER="dagster-daemon run -w $workspace" ;;
    worker*)
      # One run at a time (prefork pool of one process); it takes runs from the queue "dagster".
      PART_CMD=("$bin/celery" -A dagster_celery.app worker -n "$name@%h" -Q dagster --concurrency 1 --pool prefork
        --loglevel INFO --logfile "$PART_LOG" --without-gossip --without-mingle)
      PART_MARKER="--logfile $PART_LOG" ;;
    *) die "unknown part $name" ;;
  esac
}

dagster_ready() {
  case "$1" in
    code-server) "$UD_VENV/bin/dagster" api grpc-health-check -h 127.0.0.1 -p "$UD_CLUSTER_GRPC_PORT" >/dev/null 2>&1 ;;
    webserver) curl -sf -o /dev/null --max-time 2 "http://127.0.0.1:$UD_CLUSTER_WEB_PORT/server_info" ;;
    # The daemon has no port: alive and past its start-up (it logs each daemon it runs).
    daemon) grep -q "Instance is configured with the following daemons" "$DAGSTER_RUN/daemon.log" 2>/dev/null ;;
    worker*) grep -q "ready\.$" "$DAGSTER_RUN/$1.log" 2>/dev/null ;;
  esac
}

DAGSTER_STARTED=()

# Starts the part unless this clone's process runs already.
dagster_part() {
  local name="$1"
  dagster_part_spec "$name"
  if live_pid "$PART_PID" "$PART_MARKER" >/dev/null; then
    return 0
  fi
  if [[ "$name" == code-server ]] && port_open_on 127.0.0.1 "$UD_CLUSTER_GRPC_PORT"; then
    die "port $UD_CLUSTER_GRPC_PORT is in use by another program"
  fi
  if [[ "$name" == webserver ]] && port_open_on 127.0.0.1 "$UD_CLUSTER_WEB_PORT"; then
    die "port $UD_CLUSTER_WEB_PORT is in use by another program"
  fi
  mkdir -p "$DAGSTER_RUN"
  : >"$PART_LOG"
  clog "starting $name (log: $PART_LOG)"
  if [[ "$name" == worker* ]]; then
    # Celery writes its own log file; stdout gets only what escapes it.
    (cd "$DAGSTER_RUN" && exec env "${DAGSTER_ENV[@]}" setsid "${PART_CMD[@]}" </dev/null >>"$DAGSTER_RUN/$name.out" 2>&1) &
  else
    (cd "$UD_REPO_ROOT" && exec env "${DAGSTER_ENV[@]}" setsid "${PART_CMD[@]}" </dev/null >>"$PART_LOG" 2>&1) &
  fi
  echo $! >"$PART_PID"
  DAGSTER_STARTED+=("$name")
  # The webserver and the daemon load the code from the code server: it goes first.
  if [[ "$name" == code-server ]]; then
    wait_part code-server "$PART_PID" "$PART_MARKER" "dagster_code_server_ready" dagster_part_logs
  fi
}

dagster_part_logs() { log_tail "$PART_LOG" 40; }
dagster_code_server_ready() { dagster_ready code-server; }

wait_dagster_parts() {
  local name deadline=$((SECONDS + UD_SERVICES_TIMEOUT))
  for name in "${DAGSTER_STARTED[@]}"; do
    [[ "$name" == code-server ]] && continue
    dagster_part_spec "$name"
    until dagster_ready "$name"; do
      if ! live_pid "$PART_PID" "$PART_MARKER" >/dev/null; then
        log_tail "$PART_LOG" 40
        die "$name exited during startup (log above)"
      fi
      ((SECONDS < deadline)) || { log_tail "$PART_LOG" 40; die "$name not ready within ${UD_SERVICES_TIMEOUT}s"; }
      sleep 0.25
    done
    clog "$name ready"
  done
}

dagster_stop() {
  dagster_part_spec "$1"
  stop_pidfile "$PART_PID" "$PART_MARKER" 30 "$1"
}
