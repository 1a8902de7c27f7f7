# shellcheck shell=bash
# Shared by scripts/test and scripts/demo: make sure the testkit can start a real etcd.
# The testkit prefers Docker (Testcontainers) and falls back to the local `etcd` binary;
# with neither, we install Debian's etcd-server/etcd-client when we are root.

steelyard_have_docker() {
  command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1
}

steelyard_ensure_etcd() {
  if [ -n "${ETCD_BINARY:-}" ] && [ -x "${ETCD_BINARY}" ]; then
    return 0
  fi
  if command -v etcd >/dev/null 2>&1 && command -v etcdctl >/dev/null 2>&1; then
    return 0
  fi
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "steelyard: installing etcd-server and etcd-client with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq etcd-server etcd-client >&2
    # Debian's package may start a system etcd on 2379; the tests use their own ports,
    # but a stray server on the default port would confuse the demo and the CLI defaults.
    if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet etcd 2>/dev/null; then
      systemctl stop etcd >/dev/null 2>&1 || true
    fi
    command -v etcd >/dev/null 2>&1 && return 0
  fi
  if steelyard_have_docker; then
    return 0
  fi
  cat >&2 <<'MSG'
steelyard: no etcd available. Install one of:
  - Debian/Ubuntu: sudo apt-get install -y etcd-server etcd-client   (puts etcd and etcdctl on PATH)
  - any etcd 3.4+ release binary, and export ETCD_BINARY=/path/to/etcd
  - a running Docker engine (the testkit then uses Testcontainers)
MSG
  return 1
}
