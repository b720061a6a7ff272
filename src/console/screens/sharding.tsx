import { Alert, Button, Checkbox, Group, NumberInput, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import type { AdminShardingConfig, AdminShardingResult, AdminShardingUpdate } from '../../generated/types.ts';
import { api, ApiError, viewedTenant } from '../api.ts';
import { can } from '../auth.ts';
import { useSession } from '../session.ts';

const when = (ms: number | null | undefined) => (ms ? new Date(ms).toLocaleString() : '—');

/**
 * Refresh-token sharding: the current generation and the ones before it, globally or for one client.
 * Resharding makes a new generation; tokens of older ones keep resolving (src/admin/sharding.ts).
 */
export function Sharding() {
  const session = useSession();
  const queries = useQueryClient();
  const [typed, setTyped] = useState('');
  const [clientId, setClientId] = useState('');
  const path = `/settings/refresh-token-sharding${clientId ? `?clientId=${encodeURIComponent(clientId)}` : ''}`;
  const config = useQuery({ queryKey: ['/settings/refresh-token-sharding', viewedTenant(), clientId], queryFn: () => api<AdminShardingConfig>('GET', path) });
  const [count, setCount] = useState<number | string>('');
  const [notes, setNotes] = useState('');
  const [skip, setSkip] = useState(false);
  const change = useMutation({
    mutationFn: (body: AdminShardingUpdate) => api<AdminShardingResult>('PUT', '/settings/refresh-token-sharding', body),
    onSuccess: async () => { setCount(''); setNotes(''); await queries.invalidateQueries({ queryKey: ['/settings/refresh-token-sharding'] }); },
  });
  const c = config.data;
  // The global setting is the platform's; tenant administrators reshard their own clients only.
  const mayChange = can(session, 'admin:settings:write') && (clientId !== '' || !!session?.platform);
  const err = change.error instanceof ApiError ? change.error.details : {};
  return (
    <Stack>
      <Title order={2}>Refresh-token sharding</Title>
      <form role="search" onSubmit={(e) => { e.preventDefault(); change.reset(); setClientId(typed.trim()); }}>
        <Group align="flex-end">
          <TextInput label="Client id" description="Empty: the global setting" value={typed} onChange={(e) => setTyped(e.currentTarget.value)} />
          <Button type="submit" variant="default">Show</Button>
        </Group>
      </form>
      {config.error && <Alert color="red" role="alert">{config.error.message}</Alert>}
      {c && (
        <>
          <Table aria-label="Current sharding">
            <Table.Tbody>
              {([
                ['Scope', clientId ? `client ${clientId}${c.inherited ? ' (no override: follows the global setting)' : ''}` : 'global'],
                ['Current generation', String(c.currentGeneration)], ['Shards', String(c.currentShardCount)],
                ['Authorization code shards', c.authCodeShardCount === undefined ? '—' : String(c.authCodeShardCount)],
                ['Changed', `${when(c.updatedAt)} by ${c.updatedBy}`],
              ] as const).map(([k, v]) => <Table.Tr key={k}><Table.Th scope="row">{k}</Table.Th><Table.Td>{v}</Table.Td></Table.Tr>)}
            </Table.Tbody>
          </Table>
          <Title order={3}>Earlier generations</Title>
          {c.previousGenerations.length === 0
            ? <Text>None: this is the first generation.</Text>
            : (
              <Table aria-label="Earlier generations">
                <Table.Thead><Table.Tr><Table.Th>Generation</Table.Th><Table.Th>Shards</Table.Th><Table.Th>Active from</Table.Th><Table.Th>Deprecated</Table.Th><Table.Th>Notes</Table.Th></Table.Tr></Table.Thead>
                <Table.Tbody>
                  {c.previousGenerations.map((g) => (
                    <Table.Tr key={g.generation}>
                      <Table.Td>{g.generation}</Table.Td><Table.Td>{g.shardCount}</Table.Td><Table.Td>{when(g.activatedAt)}</Table.Td><Table.Td>{when(g.deprecatedAt)}</Table.Td><Table.Td>{g.notes ?? '—'}</Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>)}
        </>
      )}
      {mayChange && (
        <form aria-label="Reshard" noValidate onSubmit={(e) => {
          e.preventDefault();
          change.mutate({ shardCount: Number(count), ...(clientId ? { clientId } : {}), ...(notes ? { notes } : {}), ...(!clientId && skip ? { skip_sync_check: true } : {}) });
        }}>
          <Stack maw={480}>
            <Title order={3}>Reshard</Title>
            <Text size="sm">A new generation becomes current at once; tokens already issued keep their generation.</Text>
            {change.data && <Alert color="teal.9" variant="outline" role="status">{change.data.message}</Alert>}
            {change.error && <Alert color="red" role="alert">{change.error.message}</Alert>}
            <NumberInput label="Shard count" min={1} max={16384} value={count} onChange={setCount} error={err.shardCount?.join('; ')} />
            <TextInput label="Notes" value={notes} onChange={(e) => setNotes(e.currentTarget.value)} />
            {!clientId && <Checkbox label="Allow a count different from the authorization code shards" checked={skip} onChange={(e) => setSkip(e.currentTarget.checked)} />}
            <Group><Button type="submit" loading={change.isPending} disabled={count === ''}>Create generation</Button></Group>
          </Stack>
        </form>)}
    </Stack>
  );
}
