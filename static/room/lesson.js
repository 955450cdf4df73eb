// lesson.js: the room's additions to a lesson page: "share with room"
// on a cell's probe or bench result, and "present this lesson to a room".

import { startShare } from './share.js';
import { addStart } from './start.js';

if (document.body.classList.contains('lesson')) {
  startShare();
  addStart();
}
