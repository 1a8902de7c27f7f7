# shellcheck shell=bash
# Shared by scripts/interop-xds and scripts/bench-xds-clients: the real xDS clients' tools, an
# etcd of their own, and waiting for a line. The caller defines fail_setup MESSAGE (exits) and an
# array pids of processes to stop on exit.

# xds_interop_tools DIR: a Python venv with grpcio 1.84 in DIR/venv and the npm packages
# @grpc/grpc-js-xds 1.14 and @grpc/grpc-js 1.14 in DIR/node, installed once.
xds_interop_tools() {
  local tools="$1" me
  me="$(basename "$0")"
  need_apt() {
    [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1 || fail_setup "missing $1 (install it)"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
  }
  mkdir -p "$tools"
  if [[ ! -x "$tools/venv/bin/python" ]]; then
    python3 -m venv "$tools/venv" 2>/dev/null || { need_apt python3-venv; python3 -m venv "$tools/venv"; }
  fi
  if ! "$tools/venv/bin/python" -c 'import grpc' 2>/dev/null; then
    echo "$me: installing grpcio 1.84 into $tools/venv" >&2
    "$tools/venv/bin/pip" install -q --retries 0 'grpcio==1.84.*' >&2 || fail_setup "pip install grpcio failed"
  fi
  command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || need_apt nodejs npm
  if [[ ! -d "$tools/node/node_modules/@grpc/grpc-js-xds" ]]; then
    echo "$me: installing @grpc/grpc-js-xds 1.14 into $tools/node" >&2
    mkdir -p "$tools/node"
    (cd "$tools/node" && { [[ -f package.json ]] || npm init -y >/dev/null; } \
      && npm install --no-audit --no-fund -s '@grpc/grpc-js-xds@1.14' '@grpc/grpc-js@1.14' >&2) \
      || fail_setup "npm install failed"
  fi
}

# xds_interop_etcd WORK: starts a one-member etcd on loopback with its data and log in WORK,
# sets etcd_url and adds its pid to pids. A free port may be taken by another process before
# etcd binds it: retries with new ports.
xds_interop_etcd() {
  local work="$1" attempt client_port peer_port etcd_pid deadline
  for attempt in 1 2 3; do
    read -r client_port peer_port < <(python3 -c '
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
    etcd_url="http://127.0.0.1:$client_port"
    rm -rf "$work/etcd"
    etcd --name interop --data-dir "$work/etcd" --listen-client-urls "$etcd_url" \
      --advertise-client-urls "$etcd_url" --listen-peer-urls "http://127.0.0.1:$peer_port" \
      --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
      --initial-cluster "interop=http://127.0.0.1:$peer_port" >"$work/etcd.log" 2>&1 &
    etcd_pid=$!
    pids+=("$etcd_pid")
    deadline=$((SECONDS + 30))
    while kill -0 "$etcd_pid" 2>/dev/null && ! grep -q "ready to serve client requests" "$work/etcd.log" \
        && ((SECONDS < deadline)); do
      sleep 0.2
    done
    if grep -q "ready to serve client requests" "$work/etcd.log"; then return 0; fi
    kill "$etcd_pid" 2>/dev/null || true
    ((attempt < 3)) || fail_setup "etcd did not start: $(tail -n 3 "$work/etcd.log")"
  done
}

# wait_line FILE PATTERN SECONDS: prints the first line of FILE matching PATTERN.
wait_line() {
  local deadline=$((SECONDS + $3)) line
  while ((SECONDS < deadline)); do
    line="$(grep -m1 -E "$2" "$1" 2>/dev/null || true)"
    if [[ -n "$line" ]]; then echo "$line"; return 0; fi
    sleep 0.2
  done
  echo "$(basename "$0"): no '$2' in $1 after $3 s; its last lines:" >&2
  tail -n 20 "$1" >&2 || true
  return 1
}
