// util.js — small pure helpers of the playground: hex lane masks, the per-lane formula language,
// parsing typed values, formatting lane values for the diagram. No DOM here (tests import it too).

export const LANES = 32;

/** "0x0000ffff" / "ffff" / 65535 → unsigned 32-bit number, or null when it is not a mask. */
export function parseMask(text) {
  if (typeof text === 'number') return Number.isInteger(text) && text >= 0 && text <= 0xffffffff ? text >>> 0 : null;
  const s = String(text).trim().toLowerCase().replace(/^0x/, '').replace(/_/g, '');
  if (!/^[0-9a-f]{1,8}$/.test(s)) return null;
  return parseInt(s, 16) >>> 0;
}

export function maskHex(m) {
  return '0x' + (m >>> 0).toString(16).padStart(8, '0');
}

export function bit(m, i) {
  return ((m >>> i) & 1) === 1;
}

// ---- Per-lane formulas: integers, `lane` (0..31 within the warp), `t` (thread index), `n` (lanes),
// + - * / % & | ^ ~ << >> and parentheses. Parsed, never eval'd.
export function evalFormula(text, vars) {
  const toks = String(text).match(/\s*(0x[0-9a-fA-F]+|\d+|[A-Za-z_]\w*|<<|>>|[-+*/%&|^~()])\s*/gy);
  const joined = toks ? toks.join('') : '';
  if (!toks || joined.length !== String(text).length) throw new Error(`cannot read "${text}" as a lane formula`);
  const ts = toks.map((x) => x.trim());
  let i = 0;
  const peek = () => ts[i];
  const take = () => ts[i++];
  const prec = { '|': 1, '^': 2, '&': 3, '<<': 4, '>>': 4, '+': 5, '-': 5, '*': 6, '/': 6, '%': 6 };
  function unary() {
    const t = take();
    if (t === undefined) throw new Error('formula ends too early');
    if (t === '-') return -unary();
    if (t === '+') return unary();
    if (t === '~') return ~unary();
    if (t === '(') {
      const v = binary(0);
      if (take() !== ')') throw new Error('missing )');
      return v;
    }
    if (/^(0x[0-9a-fA-F]+|\d+)$/.test(t)) return Number(t);
    if (t in vars) return vars[t];
    throw new Error(`unknown name "${t}" (use lane, t, n)`);
  }
  function binary(minPrec) {
    let lhs = unary();
    for (;;) {
      const op = peek();
      const p = prec[op];
      if (p === undefined || p <= minPrec) return lhs;
      take();
      const rhs = binary(p);
      switch (op) {
        case '+': lhs = lhs + rhs; break;
        case '-': lhs = lhs - rhs; break;
        case '*': lhs = lhs * rhs; break;
        case '/': if (rhs === 0) throw new Error('division by zero'); lhs = Math.trunc(lhs / rhs); break;
        case '%': if (rhs === 0) throw new Error('division by zero'); lhs = lhs % rhs; break;
        case '&': lhs = lhs & rhs; break;
        case '|': lhs = lhs | rhs; break;
        case '^': lhs = lhs ^ rhs; break;
        case '<<': lhs = lhs << rhs; break;
        case '>>': lhs = lhs >> rhs; break;
      }
    }
  }
  const v = binary(0);
  if (i !== ts.length) throw new Error(`unexpected "${ts[i]}" in formula`);
  return v;
}

/** One run-time argument field → a number (same for every lane) or a list (one per lane).
 *  Accepts "3", "1,2,3,..." (repeated over warps when 32 long) or a formula using lane/t/n. */
export function parseArg(text, n) {
  const s = String(text ?? '').trim();
  if (s === '') return undefined;
  if (/^-?\d+$/.test(s)) return Number(s);
  if (/^\[?\s*-?\d+(\s*[, ]\s*-?\d+)+\s*\]?$/.test(s)) {
    const list = s.replace(/[[\]]/g, '').split(/[\s,]+/).filter(Boolean).map(Number);
    if (list.length === n) return list;
    if (list.length === LANES && n % LANES === 0) return Array.from({ length: n }, (_, t) => list[t % LANES]);
    throw new Error(`${list.length} values given; give one, ${n} (one per lane) or a formula in lane`);
  }
  return Array.from({ length: n }, (_, t) => evalFormula(s, { lane: t % LANES, t, n }));
}

function token(tok) {
  const t = tok.trim();
  if (/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(t)) {
    const v = Number(t);
    // Big integers travel as strings so nothing is rounded through a double (DESIGN §4).
    return Number.isInteger(v) && !Number.isSafeInteger(v) ? t : v;
  }
  if (/^0x[0-9a-f]+$/i.test(t)) return Number.isSafeInteger(Number(t)) ? Number(t) : BigInt(t).toString();
  const named = { nan: 'NaN', inf: 'Infinity', '+inf': 'Infinity', infinity: 'Infinity', '-inf': '-Infinity', '-infinity': '-Infinity', true: 1, false: 0 };
  if (t.toLowerCase() in named) return named[t.toLowerCase()];
  if (t === '-0' || t === '-0.0') return '-0.0';
  throw new Error(`"${t}" is not a number`);
}

/** Typed values: JSON ("[1,2]" or "[[1,2],[3,4]]"), "1, 2, 3", or arrays as "1 2 3; 4 5 6". */
export function parseValues(text) {
  const s = String(text ?? '').trim();
  if (s === '') throw new Error('no values given');
  if (s.startsWith('[')) {
    const v = JSON.parse(s);
    if (!Array.isArray(v)) throw new Error('values must be a list');
    return v;
  }
  if (s.includes(';')) {
    return s.split(';').map((x) => x.trim()).filter(Boolean).map((lane) => lane.split(/[\s,]+/).filter(Boolean).map(token));
  }
  return s.split(/[\s,]+/).filter(Boolean).map(token);
}

/** A lane value as the diagram prints it in a box of a few characters; the full text goes in the tooltip. */
export function fmtValue(v) {
  if (v === null || v === undefined) return '';
  if (typeof v === 'boolean') return v ? '1' : '0';
  if (typeof v === 'number') {
    if (Object.is(v, -0)) return '-0';
    if (Number.isInteger(v)) return String(v);
    const a = Math.abs(v);
    if (a >= 1e5 || a < 1e-3) return v.toExponential(1).replace('e+', 'e');
    return String(Number(v.toPrecision(4)));
  }
  const s = String(v);
  if (s === 'Infinity') return '∞';
  if (s === '-Infinity') return '-∞';
  if (/^-?\d{7,}$/.test(s)) return Number(s).toExponential(1).replace('e+', 'e');
  return s;
}

export function fullValue(v) {
  if (v === null || v === undefined) return 'undefined';
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  return Array.isArray(v) ? '[' + v.map(fullValue).join(', ') + ']' : String(v);
}

/** Lanes of a run as a compact range list: [0,1,2,5] → "0–2, 5". */
export function ranges(list) {
  const out = [];
  for (let i = 0; i < list.length; i++) {
    let j = i;
    while (j + 1 < list.length && list[j + 1] === list[j] + 1) j++;
    out.push(j > i ? `${list[i]}–${list[j]}` : `${list[i]}`);
    i = j;
  }
  return out.join(', ');
}
