// start.js: "Present this lesson to a room" on a lesson page. It is
// shown where starting a room can work: on a server without a token (the
// presenter is then whoever uses it from this machine), or in a browser
// that keeps the instructor token. It starts a room on the lesson
// (POST /api/rooms) and opens the presenter's view.

import { h } from '../dom.js';
import { needToken, token } from '../session.js';
import { request } from './api.js';

export function addStart() {
  const toc = document.querySelector('nav.toc');
  if (!toc || (needToken() && !token(false))) return;
  const msg = h('span', { class: 'start-room-msg', role: 'status' });
  const btn = h('button', { type: 'button', class: 'linkish start-room' }, 'Present this lesson to a room');
  btn.addEventListener('click', async () => {
    btn.disabled = true;
    msg.textContent = ' starting…';
    try {
      const body = { lesson: document.body.dataset.lesson };
      if (token(false)) body.token = token(false);
      location.href = (await request('POST', '/api/rooms', body)).presenter_url;
    } catch (err) {
      msg.textContent = ` ${err.message}`;
      btn.disabled = false;
    }
  });
  toc.append(h('p', { class: 'toc-room' }, btn, msg));
}
