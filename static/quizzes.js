// quizzes.js: a lesson's quizzes. A quiz on a cell is checked by the
// server against the runs it recorded for this browser; a quiz without a
// cell makes the server measure. A predict: yes quiz takes its answer
// before its cell may run, and that cell's next results grade it.

import { $, $$, h, store, safeInline, randomID, parseNumber } from './dom.js';
import { lessonSlug, resultsKey, progress, updateProgress, prediction, setPrediction, needToken, token, browserID } from './session.js';

// predictQuizzes are the predict: yes quizzes on a cell.
const predictQuizzes = (cell) => $$(`.quiz[data-predict][data-cell="${cell}"]`);

// cellLocked says a cell still waits for a prediction: some predict: yes
// quiz on it has none, or is being predicted again (data-predicting).
export function cellLocked(cell) { return predictQuizzes(cell).some((q) => !prediction(q.dataset.quiz) || q.dataset.predicting != null); }

// savePrediction stores a quiz prediction in the server's archive when
// the reader enters it, before the cell it predicts runs. It resolves
// to the stored prediction ({id, at}) or rejects with the server's message.
export async function savePrediction(quiz, value) {
  const resp = await fetch('/api/predict', { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ lesson: lessonSlug(), quiz, browser: browserID(), value: String(value) }) });
  const r = await resp.json();
  if (!resp.ok) throw new Error(r.error || `HTTP ${resp.status}`);
  return r;
}

const errorP = (...text) => h('p', { class: 'error' }, ...text);

const cellLink = (cell) => h('a', { href: `#cell-${cell}` }, cell);

// Quiz is one .quiz element of the page. relock(cell) is called when a
// prediction unlocks the quiz's cell.
class Quiz {
  constructor(el, relock) {
    this.el = el; this.relock = relock;
    this.id = el.dataset.quiz;
    this.cell = el.dataset.cell;
    this.form = $('.quiz-form', el);
    this.fb = $('.quiz-feedback', el);
    this.btn = $('.check', el);
    this.choice = !!el.querySelector('fieldset');
    this.predict = el.dataset.predict != null && !!this.cell;
    // A reason-it-out quiz is asked and graded as a prediction is, but
    // its answer is the same on every disk: the page never calls it a
    // prediction of this disk.
    this.reason = el.dataset.reason != null;
    this.repeat = Number(el.dataset.repeat || 0);
    if (this.repeat) $('.quiz-source', el).replaceChildren(`Graded on ${this.repeat} rounds of `, cellLink(this.cell), ` (its Run makes all ${this.repeat}): the answer is their median; when most rounds fall outside the band around it, the reply says the machine was too noisy to grade.`);
    // Once a prediction is graded, Check answers (after the result) and
    // this button starts a new prediction, a new attempt: the cell's
    // figures are hidden and the cell locked until it is locked in, and
    // the cell's next run grades it.
    this.again = this.predict ? h('button', { type: 'button', class: 'btn predict-again', hidden: true, onclick: () => this.predictAgain() }, 'Predict again') : null;
    if (this.again) this.btn.after(' ', this.again);
    this.showPrevious();
    this.form.addEventListener('submit', (e) => { e.preventDefault(); this.submit(); });
    if (this.predict) {
      // The cell's first run after the prediction grades it, once.
      document.addEventListener('kvlab:measured', (e) => {
        const p = prediction(this.id);
        if (e.detail.cell === this.cell && p && !p.graded) this.check(p.answer, true);
      });
    }
  }
  say(...nodes) { this.fb.replaceChildren(...nodes); }
  // predictAgain opens a new attempt: the answer field empties, the
  // cell's last figures are hidden (kvlab:predicting) and the cell locks
  // until the new prediction is locked in; Enter or the button then
  // records it, and the next run grades it.
  predictAgain() {
    this.el.dataset.predicting = '';
    for (const i of $$('input[name=answer]', this.el)) { if (i.type === 'radio') i.checked = false; else i.value = ''; }
    this.btn.textContent = 'Lock in prediction';
    this.again.hidden = true;
    this.say(h('p', { class: 'predict-new' }, 'A new prediction: the figures of your last run are hidden until you lock it in, and the next run of the cell ', cellLink(this.cell), ' grades it.'));
    document.dispatchEvent(new CustomEvent('kvlab:predicting', { detail: { cell: this.cell } }));
    this.relock(this.cell);
    const first = $('input[name=answer]', this.el);
    if (first) first.focus();
  }
  waiting(p) {
    return h('p', { class: 'prediction-kept' }, 'Your prediction: ', h('b', {}, this.choice ? choiceText(this.el, p.answer) : p.answer), '. Now run the cell ', cellLink(this.cell), ' to measure it.');
  }
  // showPrevious shows what this browser answered or predicted before.
  showPrevious() {
    const prev = progress(lessonSlug()).quizzes[this.id];
    const p = this.predict ? prediction(this.id) : null;
    if (this.predict) {
      this.el.classList.add('is-predict');
      $('.quiz-source', this.el).replaceChildren(this.reason ? 'Reason it out first (the answer follows from how it works, the same on every disk): the cell ' : 'Predict first: the cell ', cellLink(this.cell), ' stays locked until you do, and ',
        this.repeat ? `its Run (${this.repeat} rounds) grades the prediction, against their median.` : 'your next run grades the prediction.');
      this.btn.textContent = p ? 'Check' : 'Lock in prediction';
      this.again.hidden = !(p && p.graded);
      if (p && !p.graded) this.say(this.waiting(p));
    }
    if (prev && !(p && !p.graded)) this.say(...attemptLines(prev, this.choice), this.lastLine(prev));
  }
  lastLine(prev) {
    const how = prev.prediction ? 'predicted' : prev.timing === 'answered after the result' && this.predict ? 'answered after the result' : 'answered';
    const said = prev.busy ? 'not graded, the machine busy' : prev.noisy ? 'not graded, the machine too noisy' : prev.correct ? 'right' : this.choice ? 'wrong' : 'not within range';
    return h('p', { class: `quiz-last ${prev.noisy ? 'noisy' : prev.correct ? 'ok' : 'bad'}` }, `Last time you ${how} ${prev.answer}: ${said}${prev.off ? ` (${prev.off})` : ''}.`);
  }
  // submit sends the typed answer: as a prediction when none is stored
  // yet (or anew, after Predict again), else as an answer to check.
  async submit() {
    const answer = String(new FormData(this.form).get('answer') || '').trim();
    if (!answer) { this.say(errorP(this.choice ? 'Pick one of the choices.' : 'Type a number first.')); return; }
    // The server reads numbers the same way; saying so here saves a round trip.
    const num = this.choice ? null : parseNumber(answer, (this.el.querySelector('.unit') || {}).textContent || '');
    if (num && num.error) { this.say(errorP(`Your answer ${num.error}`)); return; }
    const p = prediction(this.id);
    if (this.predict && (!p || this.el.dataset.predicting != null)) {
      // The first answer (and one sent with Predict again: a new
      // attempt) is the prediction: stored in the server's record before
      // the cell runs, kept, and graded once, by the cell's first run
      // after it, which it unlocks.
      let stored;
      try { stored = await savePrediction(this.id, answer); } catch (err) { this.say(errorP(`Your prediction was not recorded: ${err.message}`)); return; }
      setPrediction(this.id, answer, stored.id);
      delete this.el.dataset.predicting;
      this.btn.textContent = 'Check';
      this.again.hidden = true;
      this.say(this.waiting(prediction(this.id)));
      this.relock(this.cell);
      return;
    }
    await this.check(answer, false);
  }
  // request is the POST /api/quiz body for answer, or null (after saying
  // why) when it cannot be sent yet.
  request(answer, asPrediction) {
    const req = { lesson: lessonSlug(), quiz: this.id, answer };
    if (asPrediction) req.prediction = true;
    if (this.cell) {
      const last = store.json(resultsKey(this.cell), null);
      // The server grades from the runs it recorded: the page sends their ids, never numbers.
      if (!last || !last.lines || !last.lines.every((l) => l.run_id)) { this.say(errorP('Run the cell ', cellLink(this.cell), ' first: this quiz is checked against your own measurement, as this server recorded it.')); return null; }
      // A repeated run sends every round's run (a repeat: quiz is graded on them).
      req.run_ids = last.lines.flatMap((l) => (l.group && l.group.length > 1 ? l.group : [l.run_id]));
      req.browser = browserID();
      return req;
    }
    if (needToken() && !token(true)) { this.say(errorP('This server needs the instructor token to measure.')); return null; }
    req.token = token(false);
    req.ticket = randomID();
    req.browser = browserID();
    this.say(measuringNote(' Measuring on this server\'s disk (waits its turn in the queue)…'));
    return req;
  }
  // check sends one answer and shows the verdict; asPrediction says it
  // was entered before the cell's results existed.
  async check(answer, asPrediction) {
    const req = this.request(answer, asPrediction);
    if (!req) return;
    this.btn.disabled = true;
    // The reply comes when the measurement is done; meanwhile the page
    // asks for the run's place in the queue by the request's ticket.
    const poll = req.ticket ? this.pollQueue(req.ticket) : null;
    try {
      const resp = await fetch('/api/quiz', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(req) });
      const r = await resp.json();
      if (!resp.ok) { this.say(errorP(r.error || `HTTP ${resp.status}`)); return; }
      this.say(verdict(r, this.choice, this.predict, this.reason));
      updateProgress(lessonSlug(), (p) => {
        const prev = p.quizzes[this.id] || {};
        const q = { correct: r.correct, noisy: !!r.too_noisy, busy: !!r.busy, answer: `${r.answer}`, at: Date.now(), prediction: !!r.predicted, off: offWords(r), timing: r.timing || '', attempts: prev.attempts || {} };
        if (r.attempt) q.attempts[r.attempt] = { answer: `${r.answer}`, correct: r.correct, noisy: !!r.too_noisy, busy: !!r.busy, off: offWords(r) };
        p.quizzes[this.id] = q;
        // The server keeps this prediction's verdict: the next answer is a new attempt.
        const mine = (p.predictions || {})[this.id];
        if (r.predicted && mine && mine.id === r.prediction_id) mine.graded = true;
      });
      if (this.again) this.again.hidden = !(prediction(this.id) && prediction(this.id).graded);
    } catch (err) {
      this.say(errorP(`Could not reach labserver: ${err.message}`));
    } finally {
      if (poll) poll.stop();
      this.btn.disabled = false;
    }
  }
  // pollQueue shows the measurement's place in the server's queue every
  // second until stopped.
  pollQueue(ticket) {
    let on = true;
    const timer = setInterval(async () => {
      try {
        const pr = await fetch(`/api/quiz/queue?ticket=${encodeURIComponent(ticket)}`);
        if (!pr.ok || !on) return;
        const p = await pr.json();
        if (!on) return; // the verdict is already shown
        this.say(measuringNote(p.running || p.position === 0
          ? ' Measuring on this server\'s disk…'
          : ` Waiting to measure on this server's disk · ${p.position} run${p.position === 1 ? '' : 's'} ahead in the queue…`));
      } catch { /* the POST reports a lost server */ }
    }, 1000);
    return { stop() { on = false; clearInterval(timer); } };
  }
}

// setupQuizzes makes every .quiz of the page live.
export function setupQuizzes(relock) {
  for (const el of $$('.quiz')) new Quiz(el, relock);
}

// choiceText is the text of choice n (1-based) of a choice quiz.
function choiceText(el, n) {
  const input = el.querySelector(`input[name=answer][value="${n}"]`);
  return input ? input.parentElement.textContent.trim() : n;
}

// attemptLines lists a predict: yes quiz's graded attempts, as kept in
// the progress; none when there was only one.
function attemptLines(prev, choice) {
  const nums = Object.keys(prev.attempts || {}).map(Number).sort((a, b) => a - b);
  if (nums.length < 2) return [];
  return [h('ol', { class: 'quiz-attempts' }, ...nums.map((n) => {
    const a = prev.attempts[n];
    // An attempt the judge did not grade (its rounds too noisy, or the
    // machine busy) is neither right nor wrong.
    const said = a.busy ? 'not graded, the machine busy' : a.noisy ? 'not graded, the machine too noisy' : a.correct ? 'right' : choice ? 'wrong' : 'off';
    return h('li', { value: n, class: a.noisy ? 'noisy' : a.correct ? 'ok' : 'bad' }, `Attempt ${n}: predicted ${a.answer}, ${said}${a.off && !choice ? ` (${a.off})` : ''}`);
  }))];
}

// verdict renders a quiz reply: the answer or prediction, the measured
// value, how far off, where it came from, and the explanation. For a
// predict: yes quiz it says which attempt was graded, that a kept
// verdict is not graded again, and when an answer came after the result.
function verdict(r, choice, predictQuiz, reason) {
  const unit = r.unit && !choice ? ` ${r.unit}` : '';
  // Rounds most of which fall outside the band grade nothing: the machine
  // was too noisy to tell a good prediction from a bad one. Nor do runs
  // whose conditions say the machine was busy (r.busy says how).
  const head = r.busy
    ? '· Not graded: your machine was busy while your runs measured, and a busy machine\'s figure cannot judge a prediction. Predict again, and run the cell when it is quieter.'
    : r.too_noisy
    ? `· Not graded: your machine was too noisy to grade the ${r.predicted ? 'prediction' : 'answer'}.`
    : r.predicted
      ? (reason ? (r.correct ? '✓ Your reasoning holds.' : '✗ Your reasoning missed.') : r.correct ? '✓ Your prediction holds.' : choice ? '✗ Your prediction was wrong.' : '✗ Your prediction was off.')
      : (r.correct ? '✓ Right.' : choice ? '✗ Not what your run shows.' : '✗ Not within range.');
  const late = predictQuiz && !r.predicted && r.timing === 'answered after the result';
  return h('div', { class: `verdict ${r.too_noisy ? 'noisy' : r.correct ? 'ok' : 'bad'}${r.predicted ? ' predicted' : ''}` },
    h('p', { class: 'verdict-head' }, r.attempt ? `Attempt ${r.attempt}: ${head}` : head),
    late ? h('p', { class: 'timing-note' }, 'Answered after the result: the server had no prediction of yours stored before this run, so this is graded as an answer, not a prediction.') : null,
    r.kept ? h('p', { class: 'timing-note' }, 'Graded by your first run after this prediction; later runs do not change it. Predict again for a new attempt.') : null,
    h('table', { class: 'kv' }, h('tbody', {},
      h('tr', {}, h('th', { scope: 'row' }, r.predicted ? 'your prediction' : 'your answer'), h('td', {}, `${r.answer}${unit}`)),
      h('tr', {}, h('th', { scope: 'row' }, r.spread ? 'measured (median)' : 'measured'), h('td', {}, h('b', {}, `${r.want}${unit}`), r.range && r.low !== r.high ? ` (accepted ${r.range}${unit})` : '')),
      r.off && !choice ? h('tr', { class: 'off' }, h('th', { scope: 'row' }, 'off by'), h('td', {}, offWords(r))) : null,
      r.spread ? h('tr', { class: 'spread' }, h('th', { scope: 'row' }, r.spread.paired ? 'your rounds (paired)' : 'your rounds'), h('td', {}, r.spread.text)) : null,
      r.busy ? h('tr', { class: 'busy' }, h('th', { scope: 'row' }, 'your machine'), h('td', {}, r.busy)) : null,
      r.shown ? h('tr', {}, h('th', { scope: 'row' }, 'from'), h('td', {}, r.shown)) : null)),
    r.explain_html ? h('p', { class: 'explain' }, safeInline(r.explain_html)) : null);
}

// offWords says how far a numeric answer was from the measured value.
// Off by 2× or more either way it is a factor of at least 1 with its
// direction, "19.5× too low" (the server's words, "0.0512× the measured
// value", read like a near miss); closer, the server's words in percent
// ("15% below the measured value"). The reply's off_factor is answer ÷
// measured.
export function offWords(r) {
  const f = r.off_factor;
  if (!(f >= 2 || (f > 0 && f <= 0.5))) return r.off || '';
  const [x, dir] = f >= 1 ? [f, 'high'] : [1 / f, 'low'];
  return `${+x.toPrecision(3)}× ${r.correct ? `${dir === 'high' ? 'above' : 'below'} the measured value` : `too ${dir}`}`;
}

function measuringNote(text) {
  return h('p', { class: 'measuring' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), text);
}
