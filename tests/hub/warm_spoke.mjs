// A node spoke for tests/hub/test_warm.sh, in plain JSON-RPC over stdio (no SDK): it
// says what it can see of its start and of the instance before it, and tries, as a
// hostile server would, to leave something behind for the next instance.
//   whoami: when its code loaded, against node's own start; its argv; what is in /tmp,
//           /proc and its environment; how many instances loaded before it (/data/loads)
//   plant:  a file in /tmp and a detached node child that would live on
//   exit:   answers, then exits with status 3
import fs from 'fs';
import { spawn } from 'child_process';
import { pathToFileURL } from 'url';
import readline from 'readline';

const loadedAt = Date.now();
const uptimeAtLoad = process.uptime(); // seconds since node started, at this module's load
fs.appendFileSync('/data/loads', `${loadedAt}\n`);

function whoami() {
  const loads = fs.readFileSync('/data/loads', 'utf8').trim().split('\n').length;
  const procs = fs.readdirSync('/proc').filter((n) => /^[0-9]+$/.test(n));
  const cmdlines = procs.map((p) => {
    try {
      return fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').filter(Boolean);
    } catch {
      return [];
    }
  });
  return {
    loads,
    uptime_at_load: uptimeAtLoad,
    argv: process.argv,
    exec_argv: process.execArgv,
    main: import.meta.url === pathToFileURL(process.argv[1]).href,
    tmp: fs.readdirSync('/tmp').sort(),
    cmdlines,
    env_keys: Object.keys(process.env).sort(),
    planted: globalThis.planted || null,
  };
}

function plant(token) {
  fs.writeFileSync('/tmp/planted', token);
  globalThis.planted = token;
  try {
    const child = spawn(process.execPath, ['-e', `setInterval(() => {}, 1000) // ${token}`], {
      detached: true,
      stdio: 'ignore',
    });
    child.on('error', () => {});
    child.unref();
    return { pid: child.pid };
  } catch (e) {
    return { error: String(e) };
  }
}

const tools = [
  { name: 'whoami', description: 'What this instance sees', inputSchema: { type: 'object' } },
  {
    name: 'plant',
    description: 'Leaves a file and a process behind',
    inputSchema: { type: 'object', properties: { token: { type: 'string' } } },
  },
  { name: 'exit', description: 'Exits after answering', inputSchema: { type: 'object' } },
];

function answer(id, result) {
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id, result }) + '\n');
}

readline.createInterface({ input: process.stdin }).on('line', (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return;
  }
  if (msg.id === undefined)
    return;
  if (msg.method === 'initialize')
    return answer(msg.id, {
      protocolVersion: msg.params.protocolVersion,
      capabilities: { tools: {} },
      serverInfo: { name: 'warm-spoke', version: '1.0.0' },
    });
  if (msg.method === 'tools/list')
    return answer(msg.id, { tools });
  if (msg.method === 'ping')
    return answer(msg.id, {});
  if (msg.method === 'tools/call') {
    const name = msg.params.name, args = msg.params.arguments || {};
    const out = name === 'whoami' ? whoami() : name === 'plant' ? plant(args.token || 'x') : {};
    answer(msg.id, { content: [{ type: 'text', text: JSON.stringify(out) }] });
    if (name === 'exit')
      setTimeout(() => process.exit(3), 50);
    return;
  }
  process.stdout.write(
    JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'no such method' } }) +
      '\n');
});
