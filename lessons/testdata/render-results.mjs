// render-results.mjs prints the text a cell's results show on the page:
// static/results.js's renderLines, on a minimal stand-in for the
// browser's document, without the raw JSON (the <details class="raw">
// under the tables), which is not what a lesson asks the reader to read.
// Input on stdin: a JSON array of the cell's lines, {spec, result}.
// Used by lessons/fields_test.go.

class FakeNode {
  constructor(tag, text) {
    this.tagName = tag ? tag.toUpperCase() : undefined;
    this.nodeType = tag ? 1 : 3;
    this.data = text;
    this.children = [];
    this.attrs = {};
    this.className = '';
    this.style = {};
    this.dataset = {};
  }
  append(...kids) { for (const k of kids) this.children.push(typeof k === 'string' ? new FakeNode(null, k) : k); }
  appendChild(k) { this.append(k); return k; }
  replaceChildren(...kids) { this.children = []; this.append(...kids); }
  setAttribute(k, v) { this.attrs[k] = String(v); }
  getAttribute(k) { return this.attrs[k] ?? null; }
  setAttributeNS(_, k, v) { this.setAttribute(k, v); }
  addEventListener() {}
  get childElementCount() { return this.children.filter((c) => c.nodeType === 1).length; }
  get classList() { const el = this; return { add(c) { el.className = `${el.className} ${c}`.trim(); }, contains(c) { return el.className.split(/\s+/).includes(c); }, toggle() {}, remove() {} }; }
  set textContent(v) { this.children = [new FakeNode(null, String(v))]; }
  get textContent() { return this.nodeType === 3 ? this.data : this.children.map((c) => c.textContent).join(''); }
  querySelector() { return null; }
  querySelectorAll() { return []; }
}
globalThis.Node = class { static TEXT_NODE = 3; static [Symbol.hasInstance](x) { return x instanceof FakeNode; } };
globalThis.document = {
  createElement: (tag) => new FakeNode(tag),
  createElementNS: (_, tag) => new FakeNode(tag),
  createTextNode: (t) => new FakeNode(null, t),
  createDocumentFragment: () => new FakeNode('fragment'),
};

// text prints the visible text of n, one block element a line.
function text(n) {
  if (n.nodeType === 3) return n.data;
  if (n.tagName === 'DETAILS' && n.className.split(/\s+/).includes('raw')) return '';
  const inner = n.children.map(text).join(['TR', 'P', 'DIV', 'TABLE', 'TBODY', 'THEAD'].includes(n.tagName) ? '\n' : n.tagName === 'TD' || n.tagName === 'TH' ? '' : '');
  return ['TD', 'TH'].includes(n.tagName) ? `${inner}\t` : inner;
}

const { renderLines } = await import('../../static/results.js');
let input = '';
for await (const chunk of process.stdin) input += chunk;
process.stdout.write(text(renderLines(JSON.parse(input))));
