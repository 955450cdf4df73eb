// api.js: the room's HTTP API and its websocket, as the room's pages use
// them (docs/api.md, "Rooms", is the contract). Every call resolves to the
// server's JSON or rejects with an Error carrying the server's own
// message ({"error": "..."}) and the HTTP status.

import { needToken, token, browserID, lessonSlug, presenterSecret, forgetPresenterSecret } from '../session.js';
import { showConn } from '../cells.js';

export { needToken, token, browserID, lessonSlug };

export const code = () => document.body.dataset.code;

// request sends one JSON request to this server.
export async function request(method, path, body) {
  let resp;
  try {
    resp = await fetch(path, { method, headers: body ? { 'Content-Type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined });
  } catch (err) {
    throw Object.assign(new Error(`could not reach labserver: ${err.message}`), { status: 0 });
  }
  let data = null;
  try { data = await resp.json(); } catch { /* not JSON: the status says it */ }
  if (!resp.ok) throw Object.assign(new Error((data && data.error) || `HTTP ${resp.status} from ${path}`), { status: resp.status });
  return data;
}

const roomPath = (rest = '') => `/api/rooms/${encodeURIComponent(code())}${rest}`;

export const getState = () => request('GET', roomPath());

export const predict = (poll, value) => request('POST', roomPath(`/polls/${encodeURIComponent(poll)}/predict`), { browser: browserID(), value: String(value) });

// ---------- presenter actions: each carries the room's presenter secret

// onThisMachine says the page was opened as localhost or a loopback
// address: on a server without a token, its requests are the presenter's.
export const onThisMachine = () => /^(localhost|.*\.localhost|127\.\d+\.\d+\.\d+|\[::1\])$/.test(location.hostname);

// secret is this browser's presenter secret for the room; a browser that
// needs one and has none asks for it.
export const secret = () => presenterSecret(code(), needToken() || !onThisMachine());

// presenterCall sends a presenter action; a refused secret is forgotten
// so that the next action asks again.
export async function presenterCall(path, body = {}, method = 'POST') {
  try {
    return await request(method, roomPath(path), { ...body, presenter: secret() });
  } catch (err) {
    if (err.status === 403) forgetPresenterSecret(code());
    throw err;
  }
}

export const setSection = (n) => presenterCall('/section', { section: n });
export const allowRuns = (allow) => presenterCall('/allow-runs', { allow });
export const openPoll = (quiz) => presenterCall('/polls', { quiz });
export const closeRoom = () => presenterCall('/close');
export const removeEntry = (id) => presenterCall(`/board/${encodeURIComponent(id)}`, {}, 'DELETE');

// RoomSocket is the follower's socket, /room/CODE/ws: it reconnects after
// a lost connection (with a growing pause, at most 5 s) until the room
// is closed. A message whose id has a handler (on, as cells.js's Socket:
// a run this page draws) goes to it, every other to onMessage; when the
// connection drops, each handler gets {type: 'lost'}. onStatus sees
// 'connecting', 'connected', 'disconnected' and 'closed'.
export class RoomSocket {
  constructor(onMessage, onStatus) {
    this.onMessage = onMessage; this.onStatus = onStatus;
    this.ws = null; this.pause = 500; this.ended = false; this.handlers = new Map();
  }
  on(id, fn) { this.handlers.set(id, fn); }
  off(id) { this.handlers.delete(id); }
  url() { return `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}/room/${encodeURIComponent(code())}/ws`; }
  connect() {
    if (this.ended) return;
    this.onStatus('connecting');
    const ws = new WebSocket(this.url());
    this.ws = ws;
    ws.onopen = () => { this.pause = 500; this.onStatus('connected'); };
    ws.onmessage = (ev) => {
      let m;
      try { m = JSON.parse(ev.data); } catch { return; }
      if (m.type === 'closed') this.end();
      const fn = m.id != null && m.type !== 'room_run' ? this.handlers.get(m.id) : null;
      if (fn) fn(m); else this.onMessage(m);
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      for (const [id, fn] of this.handlers) fn({ type: 'lost', id });
      if (this.ended) { this.onStatus('closed'); return; }
      this.onStatus('disconnected');
      setTimeout(() => this.connect(), this.pause);
      this.pause = Math.min(this.pause * 2, 5000);
    };
  }
  send(m) { if (this.ws && this.ws.readyState === WebSocket.OPEN) { this.ws.send(JSON.stringify(m)); return true; } return false; }
  end() { this.ended = true; }
}

// statusLight shows a socket's state in the bar's #conn element.
export function statusLight(st) { showConn(document.getElementById('conn'), st); }

// banner shows a message under the bar (kind 'error', 'notice' or
// 'closed'); an empty text hides it.
export function banner(text, kind = 'notice') {
  const el = document.getElementById('room-status');
  if (!el) return;
  el.hidden = !text;
  el.className = `room-status ${kind}`;
  el.textContent = text || '';
}
