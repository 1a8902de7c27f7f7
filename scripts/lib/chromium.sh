# shellcheck shell=bash
# Sourced by scripts/test: the console's browser tests drive a headless Chromium through
# chromedriver. Debian's chromium and chromium-driver come as a matched pair; install them when
# either is missing and we are root (as etcd.sh does for etcd). Without them the browser tests
# fail with a message naming this script.

steelyard_ensure_chromium() {
  if command -v chromium >/dev/null 2>&1 && [ -x /usr/bin/chromedriver ]; then
    return 0
  fi
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "steelyard: installing chromium and chromium-driver with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends chromium chromium-driver fonts-dejavu-core >&2
    command -v chromium >/dev/null 2>&1 && [ -x /usr/bin/chromedriver ] && return 0
  fi
  cat >&2 <<'MSG'
steelyard: no headless Chromium for the console's browser tests. Install:
  - Debian/Ubuntu: sudo apt-get install -y chromium chromium-driver
MSG
  return 1
}
