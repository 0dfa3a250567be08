// The in-container end of the stream transport (node images); the same frames as relay.py, which documents them.
// Usage: node relay.js DIR NAME...  (listens on DIR/NAME.sock; writes DIR/ready once they all listen)
"use strict";
const net = require("net");
const fs = require("fs");
const path = require("path");
const OPEN = 1, DATA = 2, EOF = 3, CLOSE = 4;
const [dir, ...names] = process.argv.slice(2);
const conns = new Map();
let nextId = 0;

function send(kind, channel, payload) {
  const body = payload || Buffer.alloc(0);
  const header = Buffer.alloc(9);
  header.writeUInt8(kind, 0);
  header.writeUInt32BE(channel, 1);
  header.writeUInt32BE(body.length, 5);
  process.stdout.write(Buffer.concat([header, body]));
}

fs.mkdirSync(dir, { recursive: true });
let listening = 0;
for (const name of names) {
  const where = path.join(dir, name + ".sock");
  try { fs.unlinkSync(where); } catch (e) { /* absent */ }
  const server = net.createServer({ allowHalfOpen: true }, (conn) => {
    const channel = ++nextId;
    conns.set(channel, conn);
    send(OPEN, channel, Buffer.from(name));
    conn.on("data", (data) => send(DATA, channel, data));
    conn.on("end", () => send(EOF, channel));
    conn.on("error", () => {});
    conn.on("close", () => conns.delete(channel));
  });
  server.listen(where, () => {
    if (++listening === names.length) fs.writeFileSync(path.join(dir, "ready"), "");
  });
}

let pending = Buffer.alloc(0);
process.stdin.on("data", (chunk) => {
  pending = Buffer.concat([pending, chunk]);
  while (pending.length >= 9) {
    const kind = pending.readUInt8(0), channel = pending.readUInt32BE(1), length = pending.readUInt32BE(5);
    if (pending.length < 9 + length) break;
    const payload = pending.subarray(9, 9 + length);
    pending = pending.subarray(9 + length);
    const conn = conns.get(channel);
    if (!conn) continue;
    if (kind === DATA) conn.write(payload);
    else if (kind === EOF) conn.end();
    else if (kind === CLOSE) conn.destroy();
  }
});
process.stdin.on("end", () => process.exit(0));
