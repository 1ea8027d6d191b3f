'use strict';
// A held node (a manifest's "warm": true, hub/runtime/held.c): the jail is made and node
// has booted, but no code of the server has loaded. It waits for one newline on stdin,
// the hub's go, then becomes `node ENTRY ARGS...` and loads the server as node would
// have loaded it as its main module. Until then it reads nothing else and writes
// nothing: the hub owns both ends of stdin, and the MCP stream starts after the go.
//   node held_node.cjs ENTRY [ARGS...]
const fs = require('fs');

function waitForGo() {
  const one = Buffer.alloc(1);
  const nap = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    let n;
    try {
      n = fs.readSync(0, one, 0, 1, null);
    } catch (e) {
      if (e.code === 'EAGAIN') {
        // A non-blocking stdin: wait a moment rather than spin.
        Atomics.wait(nap, 0, 0, 5);
        continue;
      }
      if (e.code === 'EINTR')
        continue;
      throw e;
    }
    if (n === 0)
      process.exit(0); // the hub let go of it before it was needed
    if (one[0] !== 10) {
      process.stderr.write('held node: expected the go (a newline) before anything else\n');
      process.exit(2);
    }
    return;
  }
}

if (process.argv.length < 3) {
  process.stderr.write('usage: node held_node.cjs ENTRY [ARGS...]\n');
  process.exit(2);
}
waitForGo();
// [node, this file, ENTRY, ...] -> [node, ENTRY, ...], ENTRY made absolute as node makes
// it: the server sees the argv of a plain start, and node's own entry point loads it
// (CommonJS or ES module alike).
process.argv.splice(1, 1);
process.argv[1] = require('path').resolve(process.argv[1]);
require('module').runMain();
