// SPDX-License-Identifier: MIT
// The HTML flame graph is interactive: load it in headless Chromium through
// the DevTools protocol, click one frame, and check that it then spans the
// chart (zoomed in) while its siblings are gone. Prints one line; exit 0 when
// the zoom worked. Needs node's WebSocket (node 22, or node 20 with
// --experimental-websocket).
// Usage: node --experimental-websocket tests/html_zoom.mjs CHROMIUM FILE NAME
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';

const [chromium, file, name] = process.argv.slice(2);
const dir = mkdtempSync('/tmp/jsf-zoom-');
const ch = spawn(chromium, ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
  '--disable-extensions', `--user-data-dir=${dir}`, '--remote-debugging-port=0',
  '--window-size=1280,800', 'about:blank'], { stdio: ['ignore', 'ignore', 'pipe'] });
const finish = (code, msg) => {
  console.log(msg);
  ch.kill();
  setTimeout(() => { rmSync(dir, { recursive: true, force: true }); process.exit(code); }, 300);
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
try {
  const wsUrl = await new Promise((res, rej) => {
    let buf = '';
    ch.stderr.on('data', (d) => {
      buf += d;
      const m = buf.match(/DevTools listening on (ws:\/\/\S+)/);
      if (m) res(m[1]);
    });
    setTimeout(() => rej(new Error('Chromium printed no DevTools address')), 30000);
  });
  const port = new URL(wsUrl).port;
  const page = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json())
    .find((t) => t.type === 'page');
  const ws = new WebSocket(page.webSocketDebuggerUrl);
  await new Promise((r, j) => { ws.onopen = r; ws.onerror = j; });
  let id = 0;
  const pending = new Map();
  ws.onmessage = (e) => {
    const m = JSON.parse(e.data);
    if (m.id && pending.has(m.id)) { pending.get(m.id)(m); pending.delete(m.id); }
  };
  const send = (method, params = {}) => new Promise((r) => {
    pending.set(++id, r);
    ws.send(JSON.stringify({ id, method, params }));
  });
  const js = async (expr) => (await send('Runtime.evaluate',
    { expression: expr, returnByValue: true })).result.result.value;
  await send('Page.navigate', { url: 'file://' + path.resolve(file) });
  const frames = `[...document.querySelectorAll('#chart g.frame')].map((g) =>
    [g.getAttribute('name'), +g.querySelector('rect').getAttribute('width')])`;
  let before = [];
  for (let i = 0; i < 50 && !before.length; i++) { await sleep(100); before = await js(frames) ?? []; }
  const root = before.find((f) => f[0] === 'all');
  const target = before.find((f) => f[0] === name);
  if (!root || !target) finish(1, `frames missing before the click: ${JSON.stringify(before).slice(0, 300)}`);
  else {
    await js(`document.querySelector('#chart g.frame[name=' + JSON.stringify(${JSON.stringify(name)}) + ']')
      .dispatchEvent(new MouseEvent('click', { bubbles: true }))`);
    let after = [], last = -1;
    for (let i = 0; i < 50; i++) {  // the zoom animates: until still, <= 5 s
      await sleep(100);
      after = await js(frames);
      const t = after.find((f) => f[0] === name);
      if (t && t[1] >= 0.99 * root[1] && after.length < before.length && t[1] === last) break;
      last = t ? t[1] : -1;
    }
    const t = after.find((f) => f[0] === name);
    if (t && t[1] >= 0.99 * root[1] && after.length < before.length)
      finish(0, `zoom: ${name} ${target[1].toFixed(0)} -> ${t[1].toFixed(0)} px wide, ${before.length} -> ${after.length} frames drawn`);
    else finish(1, `no zoom: ${JSON.stringify(after).slice(0, 300)}`);
  }
} catch (e) {
  finish(1, 'error: ' + e.message);
}
