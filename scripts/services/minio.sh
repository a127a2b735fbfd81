# shellcheck shell=bash
# MinIO: build (once per machine, into the cache), start, readiness, stop.
# Sourced by up.sh / down.sh after lib.sh.

minio_url() { echo "http://$UD_S3_HOST:$UD_S3_PORT"; }

# MinIO's unauthenticated readiness probe: 200 once it can serve requests.
minio_ready() {
  if command -v curl >/dev/null 2>&1; then
    curl -sf -o /dev/null --max-time 2 "$(minio_url)/minio/health/ready"
  else
    "$(services_python)" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
      "$(minio_url)/minio/health/ready" >/dev/null 2>&1
  fi
}

# Builds the pinned MinIO server from the Go module proxy into the shared cache. There is no
# prebuilt binary we could download here, so `go install` it is; Go's own module and build caches
# (~/go, ~/.cache/go-build) make a rebuild after a cache wipe much faster than the first one.
minio_provision() {
  [[ -x "$MINIO_BIN" ]] && return 0

  local go_cmd
  go_cmd="$(command -v go || true)"
  [[ -n "$go_cmd" ]] || { [[ -x /usr/local/go/bin/go ]] && go_cmd=/usr/local/go/bin/go; }
  [[ -n "$go_cmd" ]] || die "MinIO is not built yet and no 'go' toolchain was found (PATH or /usr/local/go/bin)"

  mkdir -p "$UD_SERVICES_CACHE"
  # Another clone may be building the same thing right now: serialise, then re-check.
  exec {lock_fd}>"$UD_SERVICES_CACHE/.minio.lock"
  flock "$lock_fd"
  if [[ ! -x "$MINIO_BIN" ]]; then
    local tmp
    tmp="$(mktemp -d "$UD_SERVICES_CACHE/.minio-build.XXXXXX")"
    log "building $MINIO_MODULE@$MINIO_VERSION with $("$go_cmd" env GOVERSION) (first run only; a few minutes on 2 cores)"
    # GOTOOLCHAIN=local: never try to fetch another Go; -trimpath/-s -w: smaller, reproducible binary.
    if ! GOBIN="$tmp" GOTOOLCHAIN=local GOFLAGS="-trimpath -buildvcs=false" \
        "$go_cmd" install -ldflags="-s -w" "$MINIO_MODULE@$MINIO_VERSION" >"$tmp/build.log" 2>&1; then
      log_tail "$tmp/build.log" 60
      die "building MinIO failed (full log: $tmp/build.log)"
    fi
    mkdir -p "$(dirname "$MINIO_BIN")"
    # Atomic rename: a half-written binary is never visible under the final name.
    mv -f "$tmp/minio" "$MINIO_BIN"
    rm -rf "$tmp"
    log "MinIO built: $MINIO_BIN"
  fi
  exec {lock_fd}>&-
}

# The drives MinIO stores objects on: one folder by default; scripts/cluster/ names four
# (MINIO_DRIVES="$MINIO_RUN/data{1...4}", MinIO's own expansion), which makes it erasure-code
# every object across them. Each starts with "$MINIO_RUN/data", the marker live_pid looks for.
minio_drive_folders() {
  if [[ -n "${MINIO_DRIVES:-}" ]]; then
    local prefix="${MINIO_DRIVES%%\{*}" range i
    range="${MINIO_DRIVES#*\{}"
    range="${range%\}*}"
    for ((i = ${range%%...*}; i <= ${range##*...}; i++)); do echo "$prefix$i"; done
  else
    echo "$MINIO_RUN/data"
  fi
}

minio_start() {
  local drives="${MINIO_DRIVES:-$MINIO_RUN/data}" folder extra=()
  # Folders of one disk as an erasure set: MinIO refuses drives on the root disk unless
  # MINIO_CI_CD=on (scripts/cluster sets it; each drive is a disk of its own on a real server).
  [[ -n "${MINIO_CI_CD:-}" ]] && extra=("MINIO_CI_CD=$MINIO_CI_CD")
  while read -r folder; do mkdir -p "$folder"; done < <(minio_drive_folders)
  : >"$MINIO_RUN/minio.log"
  # setsid: own session, so the server outlives `make` and is not hit by its Ctrl-C.
  # The data path is in the command line; live_pid uses it to recognise our process.
  # MINIO_BROWSER=off: no web console (one port less); MINIO_UPDATE=off: never phone home.
  MINIO_ROOT_USER="$UD_S3_ACCESS_KEY" \
  MINIO_ROOT_PASSWORD="$UD_S3_SECRET_KEY" \
  MINIO_SITE_REGION="$UD_S3_REGION" \
  MINIO_BROWSER=off \
  MINIO_UPDATE=off \
    env "${extra[@]}" setsid "$MINIO_BIN" server --quiet --address "$UD_S3_HOST:$UD_S3_PORT" "$drives" \
      </dev/null >>"$MINIO_RUN/minio.log" 2>&1 &
  echo $! >"$MINIO_RUN/minio.pid"
}

minio_stop() {
  stop_pidfile "$MINIO_RUN/minio.pid" "$MINIO_RUN/data" 20 MinIO
}
