"""Calls Greeter/SayHello on xds:///SERVICE in a loop (grpcio, C-core's xDS client) and logs
one line per call to LOG: '<epoch ms> <server address>' or '<epoch ms> ERROR <code>'.

  GRPC_XDS_BOOTSTRAP=bootstrap.json python client.py greeter calls.log [CALLS]

With CALLS, stops calling after CALLS successful calls and idles with the channel open (what an
idle client costs: scripts/bench-xds-clients). Stops on SIGTERM. Messages are encoded by hand
(two string fields), so no generated stubs are needed.
"""
import signal
import sys
import time

import grpc

stop = False


def _on_term(*_):
    global stop
    stop = True


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def encode_request(name):
    data = name.encode()
    return b"\x0a" + _varint(len(data)) + data


def decode_reply(buf):
    """Returns HelloReply.server_address (field 2)."""
    i, fields = 0, {}
    while i < len(buf):
        key = buf[i]
        i += 1
        length, shift = 0, 0
        while True:
            b = buf[i]
            i += 1
            length |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        fields[key >> 3] = buf[i:i + length].decode()
        i += length
    return fields.get(2, "")


def main():
    service, log_path = sys.argv[1], sys.argv[2]
    calls = int(sys.argv[3]) if len(sys.argv) > 3 else None
    signal.signal(signal.SIGTERM, _on_term)
    channel = grpc.insecure_channel("xds:///" + service)
    say_hello = channel.unary_unary(
        "/steelyard.examples.Greeter/SayHello",
        request_serializer=lambda r: r,
        response_deserializer=decode_reply,
    )
    with open(log_path, "w", buffering=1 << 16) as log:
        n = ok = 0
        while not stop:
            if calls is not None and ok >= calls:
                log.flush()
                signal.pause()  # until SIGTERM
                continue
            try:
                address = say_hello(encode_request("python"), timeout=5)
                log.write("%d %s\n" % (time.time() * 1000, address))
                ok += 1
            except grpc.RpcError as e:
                log.write("%d ERROR %s\n" % (time.time() * 1000, e.code().name))
                time.sleep(0.05)
            n += 1
            if n % 50 == 0:
                log.flush()
                time.sleep(0.002)  # ~400 calls a second at most: the machine is shared
    channel.close()


if __name__ == "__main__":
    main()
