import { escapeHtml } from '../http/html.js';

export interface RenderedMail { subject: string; text: string; html: string }

/** The login code email. The code sits on its own line so people (and the dev sink) find it at once. */
export function loginCodeMail(code: string, clientName: string, expiresInSeconds: number): RenderedMail {
  const minutes = Math.max(1, Math.round(expiresInSeconds / 60));
  const text = `Your sign-in code for ${clientName} is:\n\n${code}\n\nIt expires in ${minutes} minutes. If you did not try to sign in, ignore this email.\n`;
  const html = `<!doctype html><html lang="en"><body><p>Your sign-in code for ${escapeHtml(clientName)} is:</p>` +
    `<p style="font-size:24px;letter-spacing:4px"><strong>${escapeHtml(code)}</strong></p>` +
    `<p>It expires in ${minutes} minutes. If you did not try to sign in, ignore this email.</p></body></html>`;
  return { subject: `${code} is your sign-in code`, text, html };
}

/** Finds the one-time code in a rendered login email (used by the dev sink and tests). */
export function extractCode(text: string): string | undefined {
  return /^(\d{4,10})$/m.exec(text)?.[1] ?? /(\d{4,10}) is your sign-in code/.exec(text)?.[1];
}

/** The approval step-up code email: the code on its own line, as in the login email. */
export function approvalCodeMail(code: string, requestId: string, expiresInSeconds: number): RenderedMail {
  const minutes = Math.max(1, Math.round(expiresInSeconds / 60));
  const text = `Your code to confirm your decision on access request ${requestId} is:\n\n${code}\n\nIt expires in ${minutes} minutes. If you are not deciding on this request, tell your security team.\n`;
  const html = `<!doctype html><html lang="en"><body><p>Your code to confirm your decision on access request ${escapeHtml(requestId)} is:</p>` +
    `<p style="font-size:24px;letter-spacing:4px"><strong>${escapeHtml(code)}</strong></p>` +
    `<p>It expires in ${minutes} minutes. If you are not deciding on this request, tell your security team.</p></body></html>`;
  return { subject: 'Confirm your approval decision', text, html };
}
