import { Alert, Button, Code, CopyButton, Group, Modal, Stack, Table, Text } from '@mantine/core';
import type { ReactNode } from 'react';
import { ApiError } from './api.ts';
import { MODAL } from './paged.tsx';

/**
 * The pieces every edit screen shares: the server's validation_error details by field, the confirmation
 * of a destructive action, a secret shown once, and a two-column detail table.
 */

/**
 * The server's messages for a field and its sub-fields, joined once each: `redirect_uris.1` is told as
 * "item 2: …", `headers.X-Svc-Id` as "X-Svc-Id: …".
 */
export function fieldErrors(error: unknown): (field: string) => string | undefined {
  const details = error instanceof ApiError ? error.details : {};
  return (f) => {
    const said = new Set<string>();
    for (const [k, messages] of Object.entries(details)) {
      if (k !== f && !k.startsWith(`${f}.`)) continue;
      const rest = k.slice(f.length + 1);
      const where = rest === '' ? '' : /^\d+$/.test(rest) ? `item ${Number(rest) + 1}: ` : `${rest}: `;
      for (const m of messages) said.add(where + m);
    }
    return [...said].join('; ') || undefined;
  };
}

/** A failed call's message, announced to screen readers. */
export function Failure({ error }: { error: unknown }) {
  if (!error) return null;
  return <Alert color="red" role="alert">{error instanceof Error ? error.message : String(error)}</Alert>;
}

/** Words separated by spaces or new lines, as list fields are typed. */
export const words = (s: string): string[] => s.split(/\s+/).filter(Boolean);

/** An epoch-ms time for people; a dash when there is none. */
export const when = (ms: number | null | undefined): string => (ms === null || ms === undefined ? '—' : new Date(ms).toLocaleString());

/** A destructive action asked once more, in a dialog named by its question. */
export function Confirm({ opened, title, children, action, pending, error, onConfirm, onClose }: {
  opened: boolean; title: string; children: ReactNode; action: string; pending: boolean; error?: unknown;
  onConfirm: () => void; onClose: () => void;
}) {
  return (
    <Modal opened={opened} onClose={onClose} {...MODAL} title={title}>
      <Stack>
        {children}
        <Failure error={error} />
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>Cancel</Button>
          <Button color="red.9" loading={pending} onClick={onConfirm}>{action}</Button>
        </Group>
      </Stack>
    </Modal>
  );
}

/** A secret the server shows only in this answer: copy it now, it cannot be shown again. */
export function SecretOnce({ label, value, testId }: { label: string; value: string; testId: string }) {
  return (
    <Alert color="dark" variant="outline" title={`Copy the ${label} now`}>
      <Stack gap="xs">
        <Text>It is shown only this once: the server keeps no copy it could show again.</Text>
        <Code block data-testid={testId}>{value}</Code>
        <CopyButton value={value}>{({ copied, copy }) => <Button size="xs" onClick={copy}>{copied ? 'Copied' : `Copy ${label}`}</Button>}</CopyButton>
      </Stack>
    </Alert>
  );
}

/** Name/value rows of one resource. */
export function Details({ label, rows }: { label: string; rows: Array<[string, ReactNode]> }) {
  return (
    <Table aria-label={label}>
      <Table.Tbody>
        {rows.map(([k, v]) => <Table.Tr key={k}><Table.Th scope="row" w={220}>{k}</Table.Th><Table.Td>{v === '' || v === null || v === undefined ? '—' : v}</Table.Td></Table.Tr>)}
      </Table.Tbody>
    </Table>
  );
}
