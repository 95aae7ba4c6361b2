//! The game's original art, drawn as SVG markup: sea and island, totem,
//! chests closed and open, compass rose and needle, the four symbols and the
//! cross. Pieces are drawn in a 100 × 100 box, the size of one map square.
//! Colours are SVG presentation attributes (allowed by the page's CSP).

const SVG_NS = 'http://www.w3.org/2000/svg';

/** Creates an SVG element with attributes. */
export function svg(tag, attrs = {}) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  return node;
}

/** Shared gradients, added once to the page (an invisible, not `display:none`, SVG). */
export const DEFS = `
<defs>
  <radialGradient id="g-sea" cx="50%" cy="50%" r="75%">
    <stop offset="0" stop-color="#3cc2d6"/><stop offset=".55" stop-color="#1a8fb8"/><stop offset="1" stop-color="#0b4f7c"/>
  </radialGradient>
  <linearGradient id="g-sand" x1="0" y1="0" x2="0" y2="1">
    <stop offset="0" stop-color="#fbe6b0"/><stop offset="1" stop-color="#ecc981"/>
  </linearGradient>
  <linearGradient id="g-grass" x1="0" y1="0" x2="1" y2="1">
    <stop offset="0" stop-color="#86cc6c"/><stop offset="1" stop-color="#55a24c"/>
  </linearGradient>
  <linearGradient id="g-foil" x1="0" y1="0" x2="1" y2="1">
    <stop offset="0" stop-color="#eef1f4"/><stop offset=".5" stop-color="#aab4bf"/><stop offset="1" stop-color="#dde3e9"/>
  </linearGradient>
  <linearGradient id="g-wood" x1="0" y1="0" x2="0" y2="1">
    <stop offset="0" stop-color="#b5733a"/><stop offset="1" stop-color="#6e3d17"/>
  </linearGradient>
  <linearGradient id="g-lid" x1="0" y1="0" x2="0" y2="1">
    <stop offset="0" stop-color="#c98646"/><stop offset="1" stop-color="#8a4f20"/>
  </linearGradient>
  <linearGradient id="g-gold" x1="0" y1="0" x2="1" y2="1">
    <stop offset="0" stop-color="#fff1a8"/><stop offset=".45" stop-color="#f1c232"/><stop offset="1" stop-color="#a8780b"/>
  </linearGradient>
  <linearGradient id="g-gem" x1="0" y1="0" x2="1" y2="1">
    <stop offset="0" stop-color="#8fc8ff"/><stop offset=".5" stop-color="#2563eb"/><stop offset="1" stop-color="#0b2a80"/>
  </linearGradient>
  <radialGradient id="g-bone" cx="40%" cy="35%" r="70%">
    <stop offset="0" stop-color="#fffef8"/><stop offset="1" stop-color="#d8cfb8"/>
  </radialGradient>
  <radialGradient id="g-fur" cx="45%" cy="35%" r="70%">
    <stop offset="0" stop-color="#a8673a"/><stop offset="1" stop-color="#5f3318"/>
  </radialGradient>
  <linearGradient id="g-totem" x1="0" y1="0" x2="1" y2="0">
    <stop offset="0" stop-color="#6b3a16"/><stop offset=".4" stop-color="#a8672f"/><stop offset="1" stop-color="#5a2f10"/>
  </linearGradient>
  <radialGradient id="g-brass" cx="40%" cy="35%" r="75%">
    <stop offset="0" stop-color="#ffe8a3"/><stop offset=".6" stop-color="#c9982f"/><stop offset="1" stop-color="#7a5512"/>
  </radialGradient>
  <radialGradient id="g-glow" cx="50%" cy="50%" r="50%">
    <stop offset="0" stop-color="#fff6c2" stop-opacity=".95"/><stop offset="1" stop-color="#ffd54a" stop-opacity="0"/>
  </radialGradient>
  <pattern id="p-waves" width="120" height="60" patternUnits="userSpaceOnUse">
    <path d="M6 20 q12 -9 24 0 t24 0 M66 50 q12 -9 24 0 t24 0" fill="none" stroke="#e6fbff" stroke-width="3" stroke-linecap="round" opacity=".45"/>
  </pattern>
</defs>`;

/** The candlestick (chandelier): a golden three-branch candelabrum. */
const CANDLESTICK = `
<path d="M28 93 h44 l-7 -9 h-30 z" fill="url(#g-gold)" stroke="#8a6100" stroke-width="2.5" stroke-linejoin="round"/>
<path d="M45 84 l2 -30 h6 l2 30 z" fill="url(#g-gold)" stroke="#8a6100" stroke-width="2.5" stroke-linejoin="round"/>
<path d="M20 44 Q20 62 50 62 Q80 62 80 44" fill="none" stroke="#8a6100" stroke-width="9" stroke-linecap="round"/>
<path d="M20 44 Q20 62 50 62 Q80 62 80 44" fill="none" stroke="#f1c232" stroke-width="5" stroke-linecap="round"/>
<circle cx="50" cy="62" r="5" fill="url(#g-gold)" stroke="#8a6100" stroke-width="2"/>
<rect x="12" y="40" width="16" height="7" rx="2" fill="url(#g-gold)" stroke="#8a6100" stroke-width="2"/>
<rect x="42" y="36" width="16" height="7" rx="2" fill="url(#g-gold)" stroke="#8a6100" stroke-width="2"/>
<rect x="72" y="40" width="16" height="7" rx="2" fill="url(#g-gold)" stroke="#8a6100" stroke-width="2"/>
<rect x="16" y="22" width="8" height="18" rx="1.5" fill="#fff8e7" stroke="#cdbb98" stroke-width="1.5"/>
<rect x="46" y="16" width="8" height="20" rx="1.5" fill="#fff8e7" stroke="#cdbb98" stroke-width="1.5"/>
<rect x="76" y="22" width="8" height="18" rx="1.5" fill="#fff8e7" stroke="#cdbb98" stroke-width="1.5"/>
<g class="flame"><path d="M20 8 q7 8 0 13 q-7 -5 0 -13z" fill="#ff8a1c"/><path d="M20 13 q3 4 0 7 q-3 -3 0 -7z" fill="#ffe27a"/></g>
<g class="flame"><path d="M50 2 q7 8 0 13 q-7 -5 0 -13z" fill="#ff8a1c"/><path d="M50 7 q3 4 0 7 q-3 -3 0 -7z" fill="#ffe27a"/></g>
<g class="flame"><path d="M80 8 q7 8 0 13 q-7 -5 0 -13z" fill="#ff8a1c"/><path d="M80 13 q3 4 0 7 q-3 -3 0 -7z" fill="#ffe27a"/></g>`;

/** The monkey: a cheeky face with big ears. */
const MONKEY = `
<circle cx="19" cy="50" r="13" fill="url(#g-fur)" stroke="#40210c" stroke-width="2.5"/>
<circle cx="19" cy="50" r="6.5" fill="#eab98a"/>
<circle cx="81" cy="50" r="13" fill="url(#g-fur)" stroke="#40210c" stroke-width="2.5"/>
<circle cx="81" cy="50" r="6.5" fill="#eab98a"/>
<circle cx="50" cy="50" r="32" fill="url(#g-fur)" stroke="#40210c" stroke-width="2.5"/>
<path d="M44 19 q6 -9 10 -2 q4 -7 8 1" fill="none" stroke="#40210c" stroke-width="3" stroke-linecap="round"/>
<path d="M50 40 C37 25 20 38 29 55 C33 68 42 77 50 77 C58 77 67 68 71 55 C80 38 63 25 50 40Z" fill="#f1c79a" stroke="#c48b5a" stroke-width="1.5"/>
<ellipse cx="40.5" cy="47" rx="5" ry="6" fill="#2a1608"/><circle cx="42" cy="45" r="1.8" fill="#fff"/>
<ellipse cx="59.5" cy="47" rx="5" ry="6" fill="#2a1608"/><circle cx="61" cy="45" r="1.8" fill="#fff"/>
<ellipse cx="50" cy="59" rx="7" ry="4" fill="#8a5230"/>
<circle cx="47.5" cy="59" r="1.4" fill="#3b1d0a"/><circle cx="52.5" cy="59" r="1.4" fill="#3b1d0a"/>
<path d="M39 66 Q50 75 61 66" fill="none" stroke="#6b3a1a" stroke-width="3" stroke-linecap="round"/>`;

/** The sapphire: a cut blue gem with a sparkle. */
const SAPPHIRE = `
<path d="M28 24 L72 24 L90 44 L50 92 L10 44 Z" fill="url(#g-gem)" stroke="#0b2a80" stroke-width="3" stroke-linejoin="round"/>
<path d="M10 44 L90 44 M28 24 L38 44 L50 24 L62 44 L72 24 M38 44 L50 92 L62 44" fill="none" stroke="#d6ebff" stroke-opacity=".7" stroke-width="2" stroke-linejoin="round"/>
<path d="M31 28 L45 28 L37 41 Z" fill="#fff" opacity=".75"/>
<path d="M16 46 L35 46 L48 82 Z" fill="#fff" opacity=".18"/>
<path class="sparkle" d="M80 10 l3 8 l8 3 l-8 3 l-3 8 l-3 -8 l-8 -3 l8 -3 z" fill="#fff"/>`;

/** The skull (tête de mort). */
const SKULL = `
<path d="M50 10 C24 10 13 30 15 49 C16 60 22 65 28 67 L29 74 L71 74 L72 67 C78 65 84 60 85 49 C87 30 76 10 50 10Z" fill="url(#g-bone)" stroke="#5d5443" stroke-width="3" stroke-linejoin="round"/>
<rect x="31" y="70" width="38" height="18" rx="6" fill="url(#g-bone)" stroke="#5d5443" stroke-width="3"/>
<path d="M40 72 V87 M50 72 V88 M60 72 V87" stroke="#5d5443" stroke-width="2.5"/>
<ellipse cx="36" cy="46" rx="10" ry="11" fill="#2b2419"/>
<ellipse cx="64" cy="46" rx="10" ry="11" fill="#2b2419"/>
<circle cx="38" cy="44" r="2.5" fill="#c62828" opacity=".8"/><circle cx="66" cy="44" r="2.5" fill="#c62828" opacity=".8"/>
<path d="M50 56 L44 66 L56 66 Z" fill="#2b2419"/>
<path d="M26 24 q8 -8 18 -9" fill="none" stroke="#fff" stroke-width="4" stroke-linecap="round" opacity=".8"/>`;

/** The cross shown for an empty chest. */
const CROSS = `
<path d="M24 24 L76 76 M76 24 L24 76" stroke="#fff" stroke-width="22" stroke-linecap="round"/>
<path d="M24 24 L76 76 M76 24 L24 76" stroke="#c62828" stroke-width="13" stroke-linecap="round"/>`;

const CONTENTS = { candlestick: CANDLESTICK, monkey: MONKEY, sapphire: SAPPHIRE, skull: SKULL, empty: CROSS };

/** The markup of a symbol (or the cross for `empty`) in a 100 × 100 box. */
export function contentArt(content) {
  return CONTENTS[content] ?? CROSS;
}

/** A standalone `<svg>` of a symbol, for the column of found symbols and dialogs. */
export function symbolSvg(content, className = 'sym') {
  const node = svg('svg', { viewBox: '0 0 100 100', class: `${className} sym-${content}`, 'aria-hidden': 'true', focusable: 'false' });
  node.innerHTML = contentArt(content);
  return node;
}

/** A closed chest: wooden body, domed lid, gold bands and lock. */
export const CHEST_CLOSED = `
<ellipse cx="50" cy="88" rx="36" ry="7" fill="#000" opacity=".22"/>
<rect x="16" y="48" width="68" height="38" rx="5" fill="url(#g-wood)" stroke="#3d2007" stroke-width="3"/>
<path d="M16 50 Q16 22 50 22 Q84 22 84 50 Z" fill="url(#g-lid)" stroke="#3d2007" stroke-width="3" stroke-linejoin="round"/>
<path d="M22 60 H78 M22 72 H78" stroke="#4a2409" stroke-width="1.5" opacity=".5"/>
<path d="M30 25 V86 M70 25 V86" stroke="url(#g-gold)" stroke-width="7"/>
<path d="M30 25 V86 M70 25 V86" stroke="#7a5200" stroke-width="1" opacity=".4"/>
<rect x="16" y="47" width="68" height="5" fill="#3d2007" opacity=".6"/>
<rect x="42" y="46" width="16" height="18" rx="3" fill="url(#g-gold)" stroke="#7a5200" stroke-width="2"/>
<path d="M50 52 v6" stroke="#3d2007" stroke-width="3" stroke-linecap="round"/>
<path d="M24 30 Q34 25 44 24" fill="none" stroke="#fff" stroke-width="3" stroke-linecap="round" opacity=".35"/>`;

/** An open chest: the lid thrown back, a dark inside and a golden glow. */
export const CHEST_OPEN = `
<ellipse cx="50" cy="88" rx="36" ry="7" fill="#000" opacity=".22"/>
<path d="M18 46 L24 12 Q50 4 76 12 L82 46 Z" fill="#5a2f10" stroke="#3d2007" stroke-width="3" stroke-linejoin="round"/>
<path d="M30 14 L28 44 M70 14 L72 44" stroke="url(#g-gold)" stroke-width="6"/>
<rect x="16" y="48" width="68" height="38" rx="5" fill="url(#g-wood)" stroke="#3d2007" stroke-width="3"/>
<path d="M19 48 L81 48 L77 57 L23 57 Z" fill="#1b0d03"/>
<path d="M30 57 V86 M70 57 V86" stroke="url(#g-gold)" stroke-width="7"/>
<path d="M22 70 H78" stroke="#4a2409" stroke-width="1.5" opacity=".5"/>`;

/** The totem: a carved, painted pole with two faces and wings; it towers above its square. */
export const TOTEM = `
<ellipse cx="50" cy="90" rx="28" ry="7" fill="#000" opacity=".28"/>
<path d="M32 -2 L4 -16 L10 10 L32 14 Z" fill="#d9462b" stroke="#3b1f0b" stroke-width="2.5" stroke-linejoin="round"/>
<path d="M68 -2 L96 -16 L90 10 L68 14 Z" fill="#d9462b" stroke="#3b1f0b" stroke-width="2.5" stroke-linejoin="round"/>
<path d="M10 -6 L28 2 M90 -6 L72 2" stroke="#f2b134" stroke-width="3" stroke-linecap="round"/>
<path d="M34 -22 L50 -44 L66 -22 Z" fill="#f2b134" stroke="#3b1f0b" stroke-width="2.5" stroke-linejoin="round"/>
<rect x="30" y="-24" width="40" height="114" rx="7" fill="url(#g-totem)" stroke="#3b1f0b" stroke-width="3"/>
<path d="M34 -12 h12 M54 -12 h12" stroke="#1f2a2a" stroke-width="4" stroke-linecap="round"/>
<circle cx="40" cy="-2" r="7" fill="#fff8e7" stroke="#3b1f0b" stroke-width="2"/><circle cx="41" cy="-1" r="3.5" fill="#1b1b1b"/>
<circle cx="60" cy="-2" r="7" fill="#fff8e7" stroke="#3b1f0b" stroke-width="2"/><circle cx="61" cy="-1" r="3.5" fill="#1b1b1b"/>
<path d="M47 4 L50 14 L53 4" fill="#7a3d14" stroke="#3b1f0b" stroke-width="1.5"/>
<rect x="37" y="18" width="26" height="10" rx="3" fill="#a3231a" stroke="#3b1f0b" stroke-width="2"/>
<path d="M42 18 v5 M47 18 v5 M53 18 v5 M58 18 v5" stroke="#fff8e7" stroke-width="2.5"/>
<rect x="28" y="32" width="44" height="8" rx="2" fill="#1f8a8a" stroke="#3b1f0b" stroke-width="2"/>
<path d="M33 36 h34" stroke="#8fe3d6" stroke-width="2" stroke-dasharray="4 3"/>
<path d="M34 50 q6 -6 12 0 M54 50 q6 -6 12 0" fill="none" stroke="#1b1b1b" stroke-width="4" stroke-linecap="round"/>
<path d="M36 58 q14 18 28 0 z" fill="#2a1608" stroke="#3b1f0b" stroke-width="2"/>
<path d="M41 60 l3 6 l3 -6 M53 60 l3 6 l3 -6" fill="#fff8e7"/>
<path d="M30 74 h40 M30 80 h40" stroke="#f2b134" stroke-width="3"/>
<path d="M36 -20 v104" stroke="#fff" stroke-width="3" opacity=".18" stroke-linecap="round"/>`;

/** The compass: brass ring, ticks, an eight-point rose and letters; the needle is separate. */
export function compassRose(letters) {
  const ticks = [];
  for (let i = 0; i < 32; i++) {
    const a = (i * Math.PI) / 16;
    const r1 = i % 4 === 0 ? 74 : 79;
    ticks.push(`M${(Math.sin(a) * r1).toFixed(1)} ${(-Math.cos(a) * r1).toFixed(1)} L${(Math.sin(a) * 84).toFixed(1)} ${(-Math.cos(a) * 84).toFixed(1)}`);
  }
  const point = (angle, long, dark) => {
    const r = long ? 66 : 46;
    const w = long ? 11 : 8;
    const rad = (angle * Math.PI) / 180;
    const tip = [Math.sin(rad) * r, -Math.cos(rad) * r];
    const left = [Math.sin(rad - Math.PI / 2) * w, -Math.cos(rad - Math.PI / 2) * w];
    const right = [Math.sin(rad + Math.PI / 2) * w, -Math.cos(rad + Math.PI / 2) * w];
    const f = (p) => `${p[0].toFixed(1)} ${p[1].toFixed(1)}`;
    return `<path d="M0 0 L${f(left)} L${f(tip)} Z" fill="${dark ? '#2f3b4a' : '#e9dcb8'}" stroke="#2f3b4a" stroke-width="1"/>` +
      `<path d="M0 0 L${f(right)} L${f(tip)} Z" fill="${dark ? '#e9dcb8' : '#2f3b4a'}" stroke="#2f3b4a" stroke-width="1"/>`;
  };
  let rose = '';
  for (const a of [45, 135, 225, 315]) rose += point(a, false, a < 180);
  for (const a of [0, 90, 180, 270]) rose += point(a, true, a < 180);
  const letter = (text, x, y, fill) =>
    `<text x="${x}" y="${y}" text-anchor="middle" dominant-baseline="central" font-size="19" font-weight="700" fill="${fill}" font-family="Georgia, 'Times New Roman', serif">${text}</text>`;
  return `
<circle r="98" fill="#5a3c0c" opacity=".35" cy="4"/>
<circle r="96" fill="url(#g-brass)" stroke="#5a3c0c" stroke-width="3"/>
<circle r="86" fill="#fbf3dc" stroke="#7a5512" stroke-width="2.5"/>
<circle r="58" fill="none" stroke="#c9b27a" stroke-width="1.5"/>
<path d="${ticks.join(' ')}" stroke="#7a5512" stroke-width="2"/>
${rose}
${letter(letters.N, 0, -74, '#b3261e')}${letter(letters.E, 74, 0, '#2f3b4a')}${letter(letters.S, 0, 74, '#2f3b4a')}${letter(letters.W, -74, 0, '#2f3b4a')}`;
}

/** The compass needle, pointing north at rest (rotated from JS). */
export const NEEDLE = `
<path d="M0 -70 L11 0 L-11 0 Z" fill="#c62828" stroke="#5b0f0f" stroke-width="2" stroke-linejoin="round"/>
<path d="M0 -70 L11 0 L0 0 Z" fill="#8e1b1b"/>
<path d="M0 70 L11 0 L-11 0 Z" fill="#dfe6ee" stroke="#2f3b4a" stroke-width="2" stroke-linejoin="round"/>
<path d="M0 70 L11 0 L0 0 Z" fill="#aeb9c6"/>
<circle r="10" fill="url(#g-gold)" stroke="#5a3c0c" stroke-width="2"/>
<circle r="3.5" fill="#5a3c0c"/>`;

/** A small favicon-like emblem for the header: the island with a palm tree. */
export const EMBLEM = `
<circle cx="32" cy="32" r="30" fill="url(#g-sea)"/>
<ellipse cx="32" cy="44" rx="20" ry="8" fill="url(#g-sand)"/>
<path d="M33 44 Q31 30 36 20" fill="none" stroke="#6e3d17" stroke-width="3.5" stroke-linecap="round"/>
<path d="M36 20 q-12 -6 -20 4 q10 -3 20 -4 q-2 -12 -14 -12 q10 4 14 12 q6 -10 18 -6 q-12 0 -18 6 q12 -2 16 8 q-8 -6 -16 -8z" fill="#3f9b45" stroke="#24662b" stroke-width="1.5" stroke-linejoin="round"/>
<path d="M14 52 q4 -3 8 0 t8 0 M36 55 q4 -3 8 0 t8 0" fill="none" stroke="#e6fbff" stroke-width="2" stroke-linecap="round"/>`;
