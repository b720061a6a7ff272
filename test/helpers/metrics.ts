/** Reading Prometheus text exposition in tests, as a scraper would. */
/** One sample line of the exposition format: name, labels, value. */
export interface Sample { name: string; labels: Record<string, string>; value: number }

export function parse(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

/** The value of one series (0 when absent: a counter never incremented is not exposed). */
export function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const s = samples.filter((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  return s.reduce((a, x) => a + x.value, 0);
}

/** Scrapes GET /metrics of a server. */
export async function scrape(url: string): Promise<Sample[]> {
  const res = await fetch(`${url}/metrics`);
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`);
  return parse(await res.text());
}
