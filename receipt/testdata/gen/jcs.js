// Throwaway independent JCS (RFC 8785) reference, relying on ECMAScript itself:
// Number -> String is exactly the JCS number form, JSON.stringify(string) is the
// JCS string form, and Array.prototype.sort() compares UTF-16 code units.
function canon(v) {
  if (v === null) return 'null';
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'number') { if (!isFinite(v)) throw new Error('non-finite'); return String(v); }
  if (typeof v === 'string') return JSON.stringify(v);
  if (Array.isArray(v)) return '[' + v.map(canon).join(',') + ']';
  const keys = Object.keys(v).sort();
  return '{' + keys.map(k => JSON.stringify(k) + ':' + canon(v[k])).join(',') + '}';
}
module.exports = { canon };
