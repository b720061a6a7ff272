import { Badge, Button, Checkbox, Code, Group, NativeSelect, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, Route, Routes } from 'react-router';
import type { AdminCheckApiKey, AdminCheckApiKeyCreate, AdminCheckApiKeyCreated, AdminCheckApiKeyList } from '../../generated/types.ts';
import { api } from '../api.ts';
import { can } from '../auth.ts';
import { Confirm, Failure, fieldErrors, SecretOnce, when } from '../forms.tsx';
import { NumberedTable } from '../numbered.tsx';
import { useSession } from '../session.ts';

const OPERATIONS = ['check', 'batch', 'subscribe'] as const;

/** The tenant's check API keys (never the keys themselves), filtered by client and activity; revoke after a confirmation. */
function CheckKeyList() {
  const session = useSession();
  const queries = useQueryClient();
  const [typed, setTyped] = useState('');
  const [client, setClient] = useState('');
  const [active, setActive] = useState('');
  const [revoking, setRevoking] = useState<AdminCheckApiKey | null>(null);
  const revoke = useMutation({
    mutationFn: (k: AdminCheckApiKey) => api<AdminCheckApiKey>('POST', `/check-api-keys/${encodeURIComponent(k.id)}/revoke`),
    onSuccess: async () => { setRevoking(null); await queries.invalidateQueries({ queryKey: ['/check-api-keys'] }); },
  });
  const writer = can(session, 'admin:check-api-keys:write');
  const params = { ...(client ? { client_id: client } : {}), ...(active ? { is_active: active } : {}) };
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Check API keys</Title>
        {writer && <Button component={Link} to="/check-keys/new">New key</Button>}
      </Group>
      <form role="search" onSubmit={(e) => { e.preventDefault(); setClient(typed.trim()); }}>
        <Group align="flex-end">
          <TextInput label="Client id" value={typed} onChange={(e) => setTyped(e.currentTarget.value)} />
          <NativeSelect label="State" value={active} onChange={(e) => setActive(e.currentTarget.value)} data={[{ value: '', label: 'Any' }, { value: 'true', label: 'Active' }, { value: 'false', label: 'Revoked' }]} />
          <Button type="submit" variant="default">Search</Button>
        </Group>
      </form>
      <NumberedTable<AdminCheckApiKey, AdminCheckApiKeyList>
        key={JSON.stringify(params)} label="Check API keys" path="/check-api-keys" params={params} items={(a) => a.keys}
        columns={['Name', 'Prefix', 'Client', 'Operations', 'Tier', 'State', 'Expires', ...(writer ? ['Actions'] : [])]}
        row={(k) => (
          <Table.Tr key={k.id}>
            <Table.Td>{k.name}</Table.Td>
            <Table.Td><Code>{k.key_prefix}</Code></Table.Td>
            <Table.Td>{k.client_id}</Table.Td>
            <Table.Td>{k.allowed_operations.join(', ')}</Table.Td>
            <Table.Td>{k.rate_limit_tier}</Table.Td>
            <Table.Td><Badge color={k.is_active ? 'teal.9' : 'gray.7'}>{k.is_active ? 'active' : 'revoked'}</Badge></Table.Td>
            <Table.Td>{when(k.expires_at)}</Table.Td>
            {writer && <Table.Td>{k.is_active && <Button size="xs" variant="outline" color="red.9" onClick={() => setRevoking(k)} aria-label={`Revoke ${k.name}`}>Revoke</Button>}</Table.Td>}
          </Table.Tr>
        )}
      />
      <Confirm opened={revoking !== null} title="Revoke this key?" action="Revoke key" pending={revoke.isPending} error={revoke.error} onConfirm={() => revoking && revoke.mutate(revoking)} onClose={() => setRevoking(null)}>
        <Text>{revoking?.name} stops working at once: checks sent with it are refused. This cannot be undone.</Text>
      </Confirm>
    </Stack>
  );
}

/** A new key for one of the tenant's clients; the key itself is shown once. */
function CheckKeyCreate() {
  const queries = useQueryClient();
  const [v, setV] = useState({ name: '', client: '', tier: 'moderate', expires: '' });
  const [ops, setOps] = useState<string[]>(['check', 'batch']);
  const create = useMutation({
    mutationFn: (b: AdminCheckApiKeyCreate) => api<AdminCheckApiKeyCreated>('POST', '/check-api-keys', b),
    onSuccess: () => queries.invalidateQueries({ queryKey: ['/check-api-keys'] }),
  });
  const err = fieldErrors(create.error);
  const made = create.data;
  if (made) {
    return (
      <Stack>
        <Title order={2}>Key created</Title>
        <Text>{made.name} for client <Code>{made.client_id}</Code>: send it as Authorization: Bearer to /api/check.</Text>
        <SecretOnce label="key" value={made.key} testId="check-key" />
        <Button component={Link} to="/check-keys" variant="default" w="fit-content">Back to the keys</Button>
      </Stack>
    );
  }
  return (
    <Stack maw={560}>
      <Title order={2}>New check API key</Title>
      <form noValidate onSubmit={(e) => {
        e.preventDefault();
        create.mutate({
          name: v.name, client_id: v.client, allowed_operations: ops as AdminCheckApiKeyCreate['allowed_operations'], rate_limit_tier: v.tier as AdminCheckApiKeyCreate['rate_limit_tier'],
          ...(v.expires ? { expires_at: new Date(v.expires).getTime() } : {}),
        });
      }}>
        <Stack>
          <Failure error={create.error} />
          <TextInput label="Name" value={v.name} onChange={(e) => setV({ ...v, name: e.currentTarget.value })} error={err('name')} />
          <TextInput label="Client id" description="The client whose checks this key makes" value={v.client} onChange={(e) => setV({ ...v, client: e.currentTarget.value })} error={err('client_id')} />
          <Checkbox.Group label="Allowed operations" value={ops} onChange={setOps} error={err('allowed_operations')}>
            <Group mt="xs">{OPERATIONS.map((o) => <Checkbox key={o} value={o} label={o} />)}</Group>
          </Checkbox.Group>
          <NativeSelect label="Rate limit" value={v.tier} onChange={(e) => setV({ ...v, tier: e.currentTarget.value })} error={err('rate_limit_tier')}
            data={[{ value: 'strict', label: 'Strict (60 checks a minute)' }, { value: 'moderate', label: 'Moderate (600 a minute)' }, { value: 'lenient', label: 'Lenient (3000 a minute)' }]} />
          <TextInput label="Expires" description="Empty: never" type="datetime-local" value={v.expires} onChange={(e) => setV({ ...v, expires: e.currentTarget.value })} error={err('expires_at')} />
          <Group><Button type="submit" loading={create.isPending}>Create key</Button></Group>
        </Stack>
      </form>
    </Stack>
  );
}

/** The check API key screens under /check-keys, loaded when first opened. */
export default function CheckKeyScreens() {
  return (
    <Routes>
      <Route index element={<CheckKeyList />} />
      <Route path="new" element={<CheckKeyCreate />} />
    </Routes>
  );
}
