// Calls Greeter/SayHello on xds:///SERVICE in a loop (@grpc/grpc-js with @grpc/grpc-js-xds) and
// logs one line per call to LOG: '<epoch ms> <server address>' or '<epoch ms> ERROR <code>'.
//
//   GRPC_XDS_BOOTSTRAP=bootstrap.json node client.js greeter calls.log [CALLS]
//
// With CALLS, stops calling after CALLS successful calls and idles with the channel open (what an
// idle client costs: scripts/bench-xds-clients). Stops on SIGTERM. Messages are encoded by hand
// (two string fields): no generated stubs.
'use strict';
const fs = require('fs');
const grpc = require('@grpc/grpc-js');
require('@grpc/grpc-js-xds').register();

const [service, logPath, callsArg] = process.argv.slice(2);
const calls = callsArg === undefined ? Infinity : Number(callsArg);
const out = fs.openSync(logPath, 'w');
let stop = false;
process.on('SIGTERM', () => { stop = true; });

function encodeRequest(name) {
  const data = Buffer.from(name);
  return Buffer.concat([Buffer.from([0x0a, data.length]), data]);
}

function decodeReply(buf) {
  let i = 0;
  const fields = {};
  while (i < buf.length) {
    const key = buf[i++];
    let len = 0, shift = 0, b;
    do { b = buf[i++]; len |= (b & 0x7f) << shift; shift += 7; } while (b & 0x80);
    fields[key >> 3] = buf.subarray(i, i + len).toString();
    i += len;
  }
  return fields[2] || '';
}

const client = new grpc.Client('xds:///' + service, grpc.credentials.createInsecure());
let lines = [];
let n = 0;
let ok = 0;

function flush() {
  if (lines.length) { fs.writeSync(out, lines.join('')); lines = []; }
}

function call() {
  if (stop) { flush(); client.close(); fs.closeSync(out); process.exit(0); }
  if (ok >= calls) { flush(); setTimeout(call, 1000); return; }
  const deadline = new Date(Date.now() + 5000);
  client.makeUnaryRequest('/steelyard.examples.Greeter/SayHello', (x) => x, decodeReply,
    encodeRequest('node'), { deadline }, (err, address) => {
      if (err) {
        lines.push(`${Date.now()} ERROR ${grpc.status[err.code]}\n`);
      } else {
        lines.push(`${Date.now()} ${address}\n`);
        ok++;
      }
      n++;
      if (n % 50 === 0) { flush(); setTimeout(call, 2); } else if (err) { setTimeout(call, 50); } else { setImmediate(call); }
    });
}
call();
