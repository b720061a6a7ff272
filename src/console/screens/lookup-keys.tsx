import { Alert, Badge, Button, Group, Modal, Progress, Stack, Stepper, Table, Text, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import type { AdminLookupHmacRotation } from '../../generated/types.ts';
import { api } from '../api.ts';
import { can } from '../auth.ts';
import { MODAL } from '../paged.tsx';
import { useSession } from '../session.ts';

type Rotation = AdminLookupHmacRotation['rotation'];
const STATES: Array<Rotation['state']> = ['planned', 'distributing', 'activation_dual_write', 'dual_read', 'reindexing', 'verifying', 'grace', 'complete'];
const LAST = 'svc-console-lookup-rotation';
const when = (ms: number | null | undefined) => (ms ? new Date(ms).toLocaleString() : '—');
const label = (s: string) => s.replace(/_/g, ' ');

/**
 * Lookup-key (HMAC) rotation, environment-wide and for platform administrators only: start one, follow
 * its state and reindex progress (polled), move it on once every process applies it, or abort it.
 */
export function LookupKeys() {
  const session = useSession();
  const queries = useQueryClient();
  const [typed, setTyped] = useState(localStorage.getItem(LAST) ?? '');
  const [id, setId] = useState(localStorage.getItem(LAST) ?? '');
  const [aborting, setAborting] = useState(false);
  const show = (op: string) => { localStorage.setItem(LAST, op); setTyped(op); setId(op); };
  const path = `/platform/control-plane/lookup-hmac/rotations`;
  const rotation = useQuery({
    queryKey: [path, id], enabled: id !== '', retry: false,
    queryFn: () => api<AdminLookupHmacRotation>('GET', `${path}/${encodeURIComponent(id)}`),
    refetchInterval: (q) => (q.state.data?.rotation.finished ? false : 2000),
  });
  // A poll sent before the change may answer after it: cancelled first, so it cannot put the old state back.
  const done = (r: AdminLookupHmacRotation) => {
    void queries.cancelQueries({ queryKey: [path, r.rotation.operationId] });
    queries.setQueryData([path, r.rotation.operationId], r);
    setAborting(false);
  };
  const start = useMutation({
    mutationFn: (op: string) => api<AdminLookupHmacRotation>('POST', path, { operationId: op }),
    onSuccess: (r) => { done(r); show(r.rotation.operationId); },
  });
  const advance = useMutation({ mutationFn: () => api<AdminLookupHmacRotation>('POST', `${path}/${encodeURIComponent(id)}/advance`, {}), onSuccess: done });
  const abort = useMutation({ mutationFn: () => api<AdminLookupHmacRotation>('POST', `${path}/${encodeURIComponent(id)}/abort`, { reason: 'aborted in the console' }), onSuccess: done });
  const writer = can(session, 'admin:control-plane:write');
  const r = rotation.data?.rotation;
  const error = start.error ?? advance.error ?? abort.error;
  return (
    <Stack>
      <Title order={2}>Lookup-key rotation</Title>
      <Text>Email lookups are indexed with a keyed hash; rotating its key re-indexes every user while both keys read.</Text>
      <form role="search" onSubmit={(e) => { e.preventDefault(); show(typed.trim()); }}>
        <Group align="flex-end">
          <TextInput label="Operation id" value={typed} onChange={(e) => setTyped(e.currentTarget.value)} />
          <Button type="submit" variant="default" disabled={!typed.trim()}>Show</Button>
          {writer && <Button loading={start.isPending} disabled={!typed.trim()} onClick={() => start.mutate(typed.trim())}>Start a rotation with this id</Button>}
        </Group>
      </form>
      {error && <Alert color="red" role="alert">{error.message}</Alert>}
      {rotation.error && <Alert color="red" role="alert">{rotation.error.message}</Alert>}
      {r && <RotationView r={r} />}
      {r && writer && !r.finished && (
        <Group>
          {r.state !== 'blocked' && r.state !== 'complete' && <Button loading={advance.isPending} onClick={() => advance.mutate()}>Move to the next state</Button>}
          {r.state !== 'blocked' && <Button color="red.9" variant="outline" onClick={() => setAborting(true)}>Abort rotation</Button>}
        </Group>)}
      <Modal opened={aborting} onClose={() => setAborting(false)} {...MODAL} title="Abort this rotation?">
        <Stack>
          <Text>The rotation ends blocked and the index is rolled back to the current key. Start a new rotation to try again.</Text>
          <Group justify="flex-end">
            <Button variant="default" onClick={() => setAborting(false)}>Cancel</Button>
            <Button color="red.9" loading={abort.isPending} onClick={() => abort.mutate()}>Abort</Button>
          </Group>
        </Stack>
      </Modal>
    </Stack>
  );
}

function RotationView({ r }: { r: Rotation }) {
  const at = STATES.indexOf(r.state);
  const rows = r.sourceRowCount && r.currentRowCount !== null ? Math.min(100, Math.round((r.currentRowCount / r.sourceRowCount) * 100)) : null;
  const overall = r.state === 'complete' ? 100 : Math.round((Math.max(0, at) / (STATES.length - 1)) * 100);
  return (
    <Stack>
      <Group>
        <Text>Rotation <strong>{r.operationId}</strong></Text>
        <Badge color={r.state === 'blocked' ? 'red.9' : r.state === 'complete' ? 'teal.9' : 'blue.9'} data-testid="rotation-state">{label(r.state)}</Badge>
        {r.finished && <Text size="sm">finished {when(r.finishedAt)}</Text>}
      </Group>
      {r.blockedReason && <Alert color="red" variant="outline" role="status">Blocked: {r.blockedReason}</Alert>}
      <Progress value={overall} size="lg" aria-label="Rotation progress" />
      <Stepper active={r.state === 'blocked' ? -1 : r.state === 'complete' ? STATES.length : at} size="xs" allowNextStepsSelect={false} orientation="horizontal" wrap>
        {STATES.map((s) => <Stepper.Step key={s} label={label(s)} />)}
      </Stepper>
      {rows !== null && <><Text size="sm">Users found under the new key: {r.currentRowCount} of {r.sourceRowCount}</Text><Progress value={rows} aria-label="Reindexed users" /></>}
      <Table aria-label="Rotation keys">
        <Table.Thead><Table.Tr><Table.Th>Key</Table.Th><Table.Th>Generation</Table.Th><Table.Th>Slot</Table.Th><Table.Th>Fingerprint</Table.Th></Table.Tr></Table.Thead>
        <Table.Tbody>
          {([['From', r.source], ['To', r.candidate]] as const).map(([k, key]) => (
            <Table.Tr key={k}><Table.Td>{k} {key.keyId}</Table.Td><Table.Td>{key.generation}</Table.Td><Table.Td>{key.slot}</Table.Td><Table.Td>{key.fingerprint.slice(0, 16)}…</Table.Td></Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {r.components && (
        <Table aria-label="Processes">
          <Table.Thead><Table.Tr><Table.Th>Process</Table.Th><Table.Th>Role</Table.Th><Table.Th>Applies</Table.Th><Table.Th>Seen</Table.Th></Table.Tr></Table.Thead>
          <Table.Tbody>
            {r.components.map((c) => <Table.Tr key={c.id}><Table.Td>{c.id}</Table.Td><Table.Td>{c.role}</Table.Td><Table.Td>{c.state ? label(c.state) : 'no rotation'}</Table.Td><Table.Td>{when(c.lastSeenAt)}</Table.Td></Table.Tr>)}
          </Table.Tbody>
        </Table>)}
      <Text size="sm" c="dimmed">Updated {when(r.updatedAt)}{r.graceExpiresAt ? `; the old key reads until ${when(r.graceExpiresAt)}` : ''}.</Text>
    </Stack>
  );
}
