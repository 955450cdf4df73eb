// share.js: "share with room" on a lesson page. A student running
// labserver on their own laptop can send a probe or bench result of a
// cell to the room's board on the instructor's server.
//
// The page asks once for the room (its URL and code, kept in this
// browser). Sharing then takes two steps, because this page may only
// talk to origins its Content-Security-Policy names: it registers the
// room server's origin with its OWN server (POST /api/share-target),
// which adds that origin to the policy of the pages it serves from then
// on; and it POSTs the result to ROOM/api/rooms/CODE/share (the one route
// the room server opens to other origins). A page loaded before the
// registration cannot reach the room yet: it reloads once and finishes
// the share by itself. The result is sent as labserver emitted it, less
// a probe's host name and directory path.

import { h, store } from '../dom.js';
import { resultsKey } from '../session.js';

const ROOM_KEY = 'kvlab:share-room';
const PENDING_KEY = 'kvlab:share-pending';
const LABEL_RE = /^[A-Za-z0-9 -]{0,40}$/;

const results = (cell) => store.json(resultsKey(cell), null);

let registered = []; // origins this page's policy lets it reach (as of load)

// shareable lists a cell's stored results a room accepts: each probe or
// bench object, with the line it came from.
function shareable(cell) {
  const last = results(cell);
  const out = [];
  (last && last.lines || []).forEach((l, i) => {
    for (const r of (Array.isArray(l.result) ? l.result : [l.result])) {
      if (r && (r.kind === 'probe' || r.kind === 'bench')) out.push({ line: i, spec: l.spec, result: r });
    }
  });
  return out;
}

// parseRoom reads what the student typed: the room server's URL (a join
// link such as http://10.0.0.5:8080/room/ABCDE-FGHJK carries the code
// too) and the code.
export function parseRoom(urlText, codeText) {
  let u;
  try { u = new URL(urlText.trim()); } catch { throw new Error(`"${urlText}" is not a URL: type the room server's address, like http://10.0.0.5:8080`); }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`"${urlText}": the room's address starts with http:// or https://`);
  const fromPath = (u.pathname.match(/\/room\/([A-Za-z0-9-]+)/) || [])[1] || '';
  const c = (codeText.trim() || fromPath).toUpperCase().replace(/[\s-]/g, '');
  if (!/^[2-9A-HJKMNP-TV-Z]{10}$/.test(c)) throw new Error(`"${codeText || fromPath}" is not a room code: 10 letters and digits from the projector, like ABCDE-FGHJK`);
  return { origin: u.origin, code: `${c.slice(0, 5)}-${c.slice(5)}` };
}

// clean is a result as the room gets it: a probe without the host name
// and the directory's path (they name the student's machine and user).
function clean(r) {
  if (r.kind !== 'probe') return r;
  const out = { ...r };
  delete out.host;
  delete out.dir;
  return out;
}

async function json(resp) { try { return await resp.json(); } catch { return {}; } }

// register asks this page's own server to let its pages reach origin.
async function register(origin) {
  const body = { url: origin };
  const resp = await fetch('/api/share-target', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  if (!resp.ok) throw new Error(`your labserver refused to remember ${origin}: ${(await json(resp)).error || `HTTP ${resp.status}`}`);
}

// send POSTs one result to the room; it resolves to the server's reply.
async function send(room, result, label) {
  let resp;
  try {
    resp = await fetch(`${room.origin}/api/rooms/${room.code}/share`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(label ? { result: clean(result), label } : { result: clean(result) }) });
  } catch (err) {
    throw new Error(`could not reach the room server at ${room.origin} (${err.message}): is the address right, and is it serving?`);
  }
  const r = await json(resp);
  if (!resp.ok) throw new Error(`the room server refused it: ${r.error || `HTTP ${resp.status}`}`);
  return r;
}

// share sends item of cell to the saved room, registering and reloading
// first when this page may not reach it yet; say shows the outcome.
async function share(cell, item, label, say) {
  const room = store.json(ROOM_KEY, null);
  if (!room) return;
  say('sending…', 'busy');
  try {
    if (!registered.includes(room.origin)) {
      await register(room.origin);
      sessionStorage.setItem(PENDING_KEY, JSON.stringify({ cell, line: item.line, spec: item.spec, label }));
      say('the room is now allowed; reloading this page to send…', 'busy');
      location.reload();
      return;
    }
    const r = await send(room, item.result, label);
    say(`shared with room ${room.code} as entry #${r.id}: it is on the board at ${room.origin}/room/${room.code}/board`, 'ok');
  } catch (err) {
    say(err.message, 'bad');
  }
}

function roomForm(panel, then) {
  const room = store.json(ROOM_KEY, null);
  const url = h('input', { type: 'url', name: 'room-url', class: 'share-url', placeholder: 'http://10.0.0.5:8080', value: room ? room.origin : '', required: true, autocomplete: 'off', 'aria-label': "The room server's address" });
  const code = h('input', { type: 'text', name: 'room-code', class: 'share-code', placeholder: 'ABCDE-FGHJK', value: room ? room.code : '', autocomplete: 'off', spellcheck: 'false', 'aria-label': 'Room code' });
  const err = h('p', { class: 'error', role: 'alert', hidden: true });
  const form = h('form', { class: 'share-room-form' },
    h('p', {}, 'Which room? The address and code are on the projector.'),
    h('label', {}, 'Room server ', url), ' ', h('label', {}, 'Code ', code), ' ',
    h('button', { type: 'submit', class: 'btn check' }, 'Save'), err);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    try {
      store.setJSON(ROOM_KEY, parseRoom(url.value, code.value));
      then();
    } catch (x) { err.hidden = false; err.textContent = x.message; }
  });
  panel.replaceChildren(form);
  url.focus();
}

// openPanel shows the cell's shareable results, each with a label field
// and a Share button, under the cell's buttons.
function openPanel(cell, el, pending) {
  let panel = el.querySelector('.share-panel');
  if (!panel) { panel = h('div', { class: 'share-panel' }); el.querySelector('.cell-actions').after(panel); }
  const room = store.json(ROOM_KEY, null);
  if (!room) { roomForm(panel, () => openPanel(cell, el, pending)); return panel; }
  const rows = shareable(cell).map((item) => {
    const label = h('input', { type: 'text', class: 'share-label', maxlength: 40, placeholder: 'label (optional)', autocomplete: 'off', 'aria-label': 'Label shown on the board' });
    const out = h('span', { class: 'share-out', role: 'status' });
    const say = (text, cls) => { out.className = `share-out ${cls}`; out.textContent = text; };
    const btn = h('button', { type: 'button', class: 'btn share-send' }, 'Share');
    btn.addEventListener('click', () => {
      if (!LABEL_RE.test(label.value)) { say('a label has at most 40 letters, digits, spaces or -', 'bad'); return; }
      share(cell, item, label.value.trim(), say);
    });
    if (pending && pending.line === item.line) { label.value = pending.label || ''; share(cell, item, pending.label, say); }
    return h('li', {}, h('code', {}, `line ${item.line + 1}: ${item.spec || item.result.kind}`), ' ', label, ' ', btn, ' ', out);
  });
  panel.replaceChildren(
    h('p', { class: 'share-head' }, 'Share with room ', h('b', {}, room.code), ' at ', h('code', {}, room.origin), ' · ',
      h('button', { type: 'button', class: 'linkish share-change', onclick: () => roomForm(panel, () => openPanel(cell, el)) }, 'change room')),
    rows.length ? h('ul', { class: 'share-list' }, rows) : h('p', {}, 'Run the cell first: a probe or bench result can be shared.'),
    h('p', { class: 'share-note' }, 'The board shows the figure with its conditions (OS, filesystem, device); your host name and directory are not sent.'));
  return panel;
}

// addButton puts "Share with room" among a cell's buttons when it has a
// result the room takes.
function addButton(el) {
  const cell = el.dataset.cell;
  let btn = el.querySelector('.share-room');
  if (!shareable(cell).length) { if (btn) btn.hidden = true; return; }
  if (!btn) {
    btn = h('button', { type: 'button', class: 'btn share-room', title: "Send this cell's result to a room's class board" }, 'Share with room');
    btn.addEventListener('click', () => {
      const p = el.querySelector('.share-panel');
      if (p && !p.hidden) { p.hidden = true; return; }
      openPanel(cell, el).hidden = false;
    });
    el.querySelector('.cell-actions').insertBefore(btn, el.querySelector('.cell-actions .hint'));
  }
  btn.hidden = false;
}

// startShare adds the share buttons and finishes a share that waited
// for a reload.
export async function startShare() {
  const cells = Array.from(document.querySelectorAll('.cell'));
  cells.forEach(addButton);
  document.addEventListener('kvlab:measured', (e) => { const el = cells.find((c) => c.dataset.cell === e.detail.cell); if (el) addButton(el); });
  // Only a browser that shares asks its server which rooms it may reach.
  if (!store.json(ROOM_KEY, null)) return;
  try {
    const resp = await fetch('/api/share-target');
    if (resp.ok) registered = (await resp.json()).urls || [];
  } catch { /* unreachable: every share registers first */ }
  const pending = JSON.parse(sessionStorage.getItem(PENDING_KEY) || 'null');
  if (!pending) return;
  sessionStorage.removeItem(PENDING_KEY);
  const el = cells.find((c) => c.dataset.cell === pending.cell);
  const room = store.json(ROOM_KEY, null);
  if (!el || !room) return;
  // After the reload the policy names the room: send without registering again.
  if (!registered.includes(room.origin)) registered.push(room.origin);
  openPanel(pending.cell, el, pending).hidden = false;
}

