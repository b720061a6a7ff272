/** True when a granted permission covers `admin:<resource>:<action>`; `*` matches one segment, or all the rest when last. */
export function hasPermission(granted: Iterable<string>, needed: string): boolean {
  const want = needed.split(':');
  for (const g of granted) if (covers(g.split(':'), want)) return true;
  return false;
}

function covers(have: string[], want: string[]): boolean {
  for (let i = 0; i < have.length; i++) {
    if (have[i] === '*' && i === have.length - 1) return true;
    if (i >= want.length || (have[i] !== '*' && have[i] !== want[i])) return false;
  }
  return have.length === want.length;
}
