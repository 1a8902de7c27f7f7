# shellcheck shell=bash
# Used by scripts/test: make sure a Prometheus binary is there for the metrics round trip
# (integration-tests' PrometheusRoundTripIT), installing Debian's package when we are root.
# Without one that test is skipped with a message saying so; nothing else needs Prometheus.

steelyard_ensure_prometheus() {
  if [ -n "${PROMETHEUS_BINARY:-}" ] && [ -x "${PROMETHEUS_BINARY}" ]; then
    return 0
  fi
  if command -v prometheus >/dev/null 2>&1; then
    return 0
  fi
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "steelyard: installing prometheus with apt-get (for the metrics round-trip test)" >&2
    export DEBIAN_FRONTEND=noninteractive
    if apt-get update -qq >&2 && apt-get install -y -qq prometheus >&2; then
      # The package may start a system Prometheus on :9090; the test runs its own on a free port.
      if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus 2>/dev/null; then
        systemctl stop prometheus >/dev/null 2>&1 || true
      fi
      command -v prometheus >/dev/null 2>&1 && return 0
    fi
  fi
  echo "steelyard: no prometheus binary (apt-get install -y prometheus, or set PROMETHEUS_BINARY);" \
    "the Prometheus round-trip test will be skipped" >&2
  return 0
}
