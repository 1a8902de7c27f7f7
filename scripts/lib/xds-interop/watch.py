"""Timestamps etcd's events under a prefix for scripts/interop-xds: runs `etcdctl watch --prefix`
and writes '<epoch ms> <line>' for every line it prints, so that the time a command's write
reached etcd is known, whatever the command's own start-up time. Stops (and stops etcdctl) on
SIGTERM.

  watch.py ETCD_URL PREFIX LOG
"""
import os
import signal
import subprocess
import sys
import time


def main():
    url, prefix, log_path = sys.argv[1:4]
    child = subprocess.Popen(
        ["etcdctl", "--endpoints", url, "watch", "--prefix", prefix],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env=dict(os.environ, ETCDCTL_API="3"))

    def stop(*_):
        child.kill()
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    with open(log_path, "w", buffering=1) as log:
        for line in child.stdout:
            log.write("%d %s\n" % (time.time() * 1000, line.rstrip()))


if __name__ == "__main__":
    main()
