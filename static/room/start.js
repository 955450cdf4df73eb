// start.js: "Present this lesson to a room" on a lesson page. It is
// shown where starting a room can work: on a page opened on the server's
// own machine (localhost), in a browser that keeps the server's
// presenter token, or on a lesson opened with #present (which asks for
// the presenter token). It starts a room on the lesson (POST
// /api/rooms), keeps the room's presenter secret in this browser and
// opens the presenter's view.

import { h } from '../dom.js';
import { keepPresenterSecret, presenterToken, forgetPresenterToken } from '../session.js';
import { request, onThisMachine } from './api.js';

export function addStart() {
  const toc = document.querySelector('nav.toc');
  const asked = location.hash === '#present';
  if (!toc || !(onThisMachine() || presenterToken() || asked)) return;
  const msg = h('span', { class: 'start-room-msg', role: 'status' });
  const btn = h('button', { type: 'button', class: 'linkish start-room' }, 'Present this lesson to a room');
  btn.addEventListener('click', async () => {
    btn.disabled = true;
    msg.textContent = ' starting…';
    try {
      const body = { lesson: document.body.dataset.lesson };
      const pt = presenterToken(!onThisMachine() && 'Starting a room from another machine needs the server\'s presenter token (not the token students run cells with).');
      if (pt) body.presenter = pt;
      const room = await request('POST', '/api/rooms', body);
      keepPresenterSecret(room.code, room.presenter_secret);
      location.href = room.presenter_url;
    } catch (err) {
      if (err.status === 403) forgetPresenterToken();
      msg.textContent = ` ${err.message}`;
      btn.disabled = false;
    }
  });
  toc.append(h('p', { class: 'toc-room' }, btn, msg));
}
