"""Reads the call logs that client.py and client.js write ('<epoch ms> <address>' or
'<epoch ms> ERROR <code>') for scripts/interop-xds.

  analyse.py count LOG SINCE_MS              successful calls since SINCE_MS
  analyse.py share LOG SINCE_MS N ADDRESSES  percent of the first N calls since SINCE_MS that
                                             one of ADDRESSES (comma-separated) answered, then
                                             the calls and errors counted
  analyse.py last LOG ADDRESS                epoch ms of the last call ADDRESS answered (0: none)
  analyse.py errors LOG SINCE_MS             failed calls since SINCE_MS
  analyse.py moved LOG SINCE_MS ADDRESS PCT  ms from SINCE_MS to the first call that starts 200
                                             calls in a row of which ADDRESS answered PCT +- 5
                                             percent (-1: never)
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
        since, n, addresses = int(argv[3]), int(argv[4]), set(argv[5].split(","))
        total = mine = errors = 0
        for _, a, _ in calls(path, since):
            if a == "ERROR":
                errors += 1
                continue
            total += 1
            mine += a in addresses
            if total == n:
                break
        print("%.1f %d %d" % (100.0 * mine / max(total, 1), total, errors))
    elif cmd == "last":
        address = argv[3]
        print(max((ms for ms, a, _ in calls(path, 0) if a == address), default=0))
    elif cmd == "errors":
        print(sum(1 for _, a, _ in calls(path, int(argv[3])) if a == "ERROR"))
    elif cmd == "moved":
        since, address, pct = int(argv[3]), argv[4], float(argv[5])
        ok = [(ms, a == address) for ms, a, _ in calls(path, since) if a != "ERROR"]
        window = 200
        mine = sum(m for _, m in ok[:window])
        for i in range(len(ok) - window + 1):
            if i:
                mine += ok[i + window - 1][1] - ok[i - 1][1]
            if abs(100.0 * mine / window - pct) <= 5:
                print(ok[i][0] - since)
                return
        print(-1)
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main(sys.argv)
