"""Reads the call logs that client.py and client.js write ('<epoch ms> <address>' or
'<epoch ms> ERROR <code>') for scripts/interop-xds.

  analyse.py count LOG SINCE_MS              successful calls since SINCE_MS
  analyse.py share LOG SINCE_MS N ADDRESS    percent of the first N calls since SINCE_MS that
                                             ADDRESS answered, then the calls and errors counted
  analyse.py last LOG ADDRESS                epoch ms of the last call ADDRESS answered (0: none)
  analyse.py errors LOG SINCE_MS             failed calls since SINCE_MS
"""
import sys


def calls(path, since):
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 2:
                continue  # a line the client is still writing
            try:
                ms = int(parts[0])
            except ValueError:
                continue
            if ms >= since:
                yield ms, parts[1], parts[2] if len(parts) > 2 else ""


def main(argv):
    cmd, path = argv[1], argv[2]
    if cmd == "count":
        print(sum(1 for _, a, _ in calls(path, int(argv[3])) if a != "ERROR"))
    elif cmd == "share":
        since, n, address = int(argv[3]), int(argv[4]), argv[5]
        total = mine = errors = 0
        for _, a, _ in calls(path, since):
            if a == "ERROR":
                errors += 1
                continue
            total += 1
            mine += a == address
            if total == n:
                break
        print("%.1f %d %d" % (100.0 * mine / max(total, 1), total, errors))
    elif cmd == "last":
        address = argv[3]
        print(max((ms for ms, a, _ in calls(path, 0) if a == address), default=0))
    elif cmd == "errors":
        print(sum(1 for _, a, _ in calls(path, int(argv[3])) if a == "ERROR"))
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main(sys.argv)
