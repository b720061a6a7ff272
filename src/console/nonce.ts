/** The per-response CSP nonce the server wrote into index.html: Mantine's <style> element must carry it. */
export function styleNonce(): string {
  return document.querySelector<HTMLMetaElement>('meta[name="csp-nonce"]')?.content ?? '';
}
