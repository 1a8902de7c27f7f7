"""Reads the call logs that client.py and client.js write ('<epoch ms> <address>' or
'<epoch ms> ERROR <code>') for scripts/interop-xds.

  analyse.py count LOG SINCE_MS              successful calls since SINCE_MS
  analyse.py share LOG SINCE_MS N ADDRESSES  percent of the first N calls since SINCE_MS that
                                             one of ADDRESSES (comma-separated) answered, then
                                             the calls and errors counted
  analyse.py last LOG ADDRESS                epoch ms of the last call ADDRESS answered (0: none)
  analyse.py errors LOG SINCE_MS             failed calls since SINCE_MS
  analyse.py codes LOG SINCE_MS              calls since SINCE_MS by outcome: 'OK n' and one
                                             'CODE n' per status code of the failed ones
  analyse.py moved LOG SINCE_MS ADDRESS PCT  ms from SINCE_MS to the first call that starts 200
                                             calls in a row of which ADDRESS answered PCT +- 5
                                             percent (-1: never)
  analyse.py ramp LOG SINCE_MS ADDRESS FULL SECONDS
                                             per second since SINCE_MS, the calls and the
                                             percent ADDRESS answered, as a table on stderr; then
                                             ADDRESS's share of the calls in the first 2 s and
                                             from 12 s to SECONDS, each in percent of FULL (its
                                             full share, in percent)
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
    elif cmd == "codes":
        outcomes = {}
        for _, a, code in calls(path, int(argv[3])):
            key = code if a == "ERROR" else "OK"
            outcomes[key] = outcomes.get(key, 0) + 1
        print(" ".join("%s %d" % kv for kv in sorted(outcomes.items())) or "none 0")
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
    elif cmd == "ramp":
        since, address, full, seconds = int(argv[3]), argv[4], float(argv[5]), int(argv[6])
        total, mine = [0] * seconds, [0] * seconds
        for ms, a, _ in calls(path, since):
            second = (ms - since) // 1000
            if second >= seconds:
                break
            if a != "ERROR":
                total[second] += 1
                mine[second] += a == address
        sys.stderr.write("second  calls  to the new server  of its full share\n")
        for i in range(seconds):
            pct = 100.0 * mine[i] / max(total[i], 1)
            sys.stderr.write("%6d %6d %17.1f %% %16.0f %%\n" % (i, total[i], pct, 100.0 * pct / full))

        def of_full(lo, hi):
            return 100.0 * (100.0 * sum(mine[lo:hi]) / max(sum(total[lo:hi]), 1)) / full

        print("%.1f %.1f" % (of_full(0, 2), of_full(12, seconds)))
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main(sys.argv)
