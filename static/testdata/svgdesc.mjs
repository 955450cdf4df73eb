// svgdesc.mjs: a check the chart tests share (not a test file itself):
// the markup descriptions charts.js and room/roomcharts.js return,
// {tag, attrs, kids}, walked attribute by attribute.

// problems lists every attribute or text of a description that is not a
// finite number or a clean string, with where it is.
export function problems(desc, where = 'svg') {
  const out = [];
  if (typeof desc.tag !== 'string' || !Array.isArray(desc.kids)) return [`${where}: not a {tag, attrs, kids} description`];
  for (const [k, v] of Object.entries(desc.attrs)) {
    const bad = typeof v === 'number' ? !Number.isFinite(v) : typeof v !== 'string' || /NaN|Infinity|undefined/.test(v);
    if (bad) out.push(`${where}/${desc.tag}[${k}] = ${String(v)}`);
  }
  desc.kids.forEach((kid, i) => out.push(...problems(kid, `${where}/${desc.tag}[${i}]`)));
  return out;
}
