//! The dashboard's charts, drawn as SVG by the page itself (no library): a
//! line-and-area chart over time and a grouped bar chart, each with axes,
//! labels, a title and description for screen readers, and its numbers as a
//! table under a "Show the numbers" disclosure.

import { textNode } from './i18n.js';

const NS = 'http://www.w3.org/2000/svg';
let chartSeq = 0;

function s(tag, attrs = {}, ...children) {
  const node = document.createElementNS(NS, tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value !== null && value !== undefined) node.setAttribute(name, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : textNode(String(child)));
  }
  return node;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === 'class') node.className = value;
    else if (value !== null && value !== undefined) node.setAttribute(name, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : textNode(String(child)));
  }
  return node;
}

/**
 * Ticks from 0 to a round maximum at or above `max`: about `wanted` steps of
 * 1, 2 or 5 times a power of ten (a whole step for counts).
 */
export function ticks(max, wanted = 4, whole = true) {
  if (!(max > 0)) return [0, 1];
  const rough = max / wanted;
  const power = 10 ** Math.floor(Math.log10(rough));
  let step = [1, 2, 5, 10].map((m) => m * power).find((candidate) => candidate >= rough) ?? 10 * power;
  if (whole) step = Math.max(1, Math.round(step));
  const values = [];
  for (let v = 0; v < max + step / 2 && values.length < 12; v += step) values.push(Number(v.toPrecision(12)));
  if (values[values.length - 1] < max) values.push(values[values.length - 1] + step);
  return values;
}

function disclosure(headings, rows) {
  return el(
    'details',
    { class: 'chart-table' },
    el('summary', {}, 'Show the numbers'),
    el(
      'div',
      { class: 'table-wrap' },
      el(
        'table',
        {},
        el('thead', {}, el('tr', {}, headings.map((text) => el('th', { scope: 'col' }, text)))),
        el('tbody', {}, rows.map((cells) => el('tr', {}, cells.map((text) => el('td', {}, text))))),
      ),
    ),
  );
}

/**
 * A line over an area: `points` are `{label, value}` in order, `xLabel(i)`
 * says which ticks to label on the x axis (a string, or '' for none).
 * `width` is the container's, in pixels, so text keeps its size. Returns
 * the figure (SVG and table) to put in the page.
 */
export function lineChart({ points, title, describe, xLabel, format = String, unit = '', width = 720, height = 220 }) {
  const id = `chart-${++chartSeq}`;
  const m = { left: 46, right: 14, top: 12, bottom: 28 };
  const innerW = width - m.left - m.right;
  const innerH = height - m.top - m.bottom;
  const max = Math.max(0, ...points.map((p) => p.value));
  const yTicks = ticks(max);
  const yMax = yTicks[yTicks.length - 1];
  const x = (i) => m.left + (points.length <= 1 ? innerW : (i * innerW) / (points.length - 1));
  const y = (v) => m.top + innerH - (v / yMax) * innerH;
  const line = points.map((p, i) => `${i ? 'L' : 'M'}${x(i).toFixed(1)},${y(p.value).toFixed(1)}`).join(' ');
  const area = points.length
    ? `${line} L${x(points.length - 1).toFixed(1)},${y(0)} L${x(0).toFixed(1)},${y(0)} Z`
    : '';
  const last = points.length ? points[points.length - 1] : null;
  const svg = chartSvg({ id, width, height, title, describe }, yAxis(m, width, yTicks, y, format),
    s(
      'g',
      { class: 'axis x', 'aria-hidden': 'true' },
      points.map((p, i) => {
        const text = xLabel(i, p);
        if (!text) return null;
        return [
          s('line', { x1: x(i), x2: x(i), y1: y(0), y2: y(0) + 4, class: 'tick' }),
          s('text', { x: x(i), y: height - 8, 'text-anchor': i === 0 ? 'start' : i === points.length - 1 ? 'end' : 'middle' }, text),
        ];
      }),
    ),
    s('path', { d: area, class: 'area', 'aria-hidden': 'true' }),
    s('path', { d: line, class: 'line', 'aria-hidden': 'true' }),
    last ? s('circle', { cx: x(points.length - 1), cy: y(last.value), r: 3.5, class: 'dot', 'aria-hidden': 'true' }) : null,
  );
  return el(
    'figure',
    { class: 'figure' },
    svg,
    disclosure(['Time', unit || 'Value'], points.map((p) => [p.label, format(p.value)])),
  );
}

/** A chart's accessible SVG: its title and description named, then `parts`. */
function chartSvg({ id, width, height, title, describe }, ...parts) {
  return s(
    'svg',
    {
      viewBox: `0 0 ${width} ${height}`,
      class: 'chart-svg',
      role: 'img',
      'aria-labelledby': `${id}-t ${id}-d`,
      preserveAspectRatio: 'xMidYMid meet',
    },
    s('title', { id: `${id}-t` }, title),
    s('desc', { id: `${id}-d` }, describe),
    ...parts,
  );
}

/** The y axis: a grid line and a label (`format`ted) at each tick. */
function yAxis(m, width, yTicks, y, format) {
  return s(
    'g',
    { class: 'axis y', 'aria-hidden': 'true' },
    yTicks.map((v) => [
      s('line', { x1: m.left, x2: width - m.right, y1: y(v), y2: y(v), class: v ? 'grid' : 'base' }),
      s('text', { x: m.left - 6, y: y(v) + 4, 'text-anchor': 'end' }, format(v)),
    ]),
  );
}

/**
 * Grouped bars: `groups` are `{label, bars: [{name, value, kind}]}`, the
 * same series in each group, drawn with the legend `series`
 * (`[{name, kind}]`, `kind` naming the CSS colour class).
 */
export function barChart({ groups, series, title, describe, format = String, shortFormat = format, width = 420, height = 230, groupHeading = 'Period' }) {
  const id = `chart-${++chartSeq}`;
  const m = { left: 62, right: 10, top: 12, bottom: 30 };
  const innerW = width - m.left - m.right;
  const innerH = height - m.top - m.bottom;
  const max = Math.max(0, ...groups.flatMap((g) => g.bars.map((b) => b.value)));
  const yTicks = ticks(max, 4, false);
  const yMax = yTicks[yTicks.length - 1] || 1;
  const y = (v) => m.top + innerH - (v / yMax) * innerH;
  const slot = innerW / Math.max(1, groups.length);
  const barW = Math.min(34, (slot * 0.78) / Math.max(1, series.length));
  const svg = chartSvg({ id, width, height, title, describe }, yAxis(m, width, yTicks, y, shortFormat),
    groups.map((group, gi) => {
      const start = m.left + gi * slot + (slot - barW * series.length) / 2;
      return s(
        'g',
        { class: 'group' },
        group.bars.map((bar, bi) => {
          const top = y(bar.value);
          return s(
            'rect',
            {
              x: (start + bi * barW).toFixed(1),
              y: top.toFixed(1),
              width: Math.max(1, barW - 3).toFixed(1),
              height: Math.max(0, y(0) - top).toFixed(1),
              class: `bar ${bar.kind}`,
            },
            s('title', {}, `${group.label}, ${bar.name}: ${format(bar.value)}`),
          );
        }),
        s('text', { x: m.left + gi * slot + slot / 2, y: height - 10, 'text-anchor': 'middle', class: 'group-label', 'aria-hidden': 'true' }, group.label),
      );
    }),
  );
  const legend = el(
    'ul',
    { class: 'legend', 'aria-hidden': 'true' },
    series.map((entry) => el('li', {}, el('span', { class: `swatch ${entry.kind}` }), entry.name)),
  );
  return el(
    'figure',
    { class: 'figure' },
    legend,
    svg,
    disclosure([groupHeading, ...series.map((entry) => entry.name)], groups.map((g) => [g.label, ...g.bars.map((b) => format(b.value))])),
  );
}
