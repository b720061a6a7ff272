import { Badge, Button, Group, NativeSelect, Stack, Table, TextInput, Title } from '@mantine/core';
import { useState } from 'react';
import type { AdminAuditLogEntry } from '../../generated/types.ts';
import { PagedTable } from '../paged.tsx';

interface Filters { action: string; resource_type: string; actor_id: string; result: string }
const NONE: Filters = { action: '', resource_type: '', actor_id: '', result: '' };

/** The administration audit log of the tenant, newest first, filtered as the API allows. */
export function AuditLog() {
  const [draft, setDraft] = useState<Filters>(NONE);
  const [applied, setApplied] = useState<Filters>(NONE);
  const params = Object.fromEntries(Object.entries(applied).filter(([, v]) => v !== ''));
  const field = (k: keyof Filters) => ({ value: draft[k], onChange: (e: { currentTarget: { value: string } }) => setDraft({ ...draft, [k]: e.currentTarget.value }) });
  return (
    <Stack>
      <Title order={2}>Audit log</Title>
      <form onSubmit={(e) => { e.preventDefault(); setApplied(draft); }} aria-label="Audit log filters">
        <Group align="flex-end">
          <TextInput label="Action" placeholder="client.create" {...field('action')} />
          <TextInput label="Resource type" placeholder="client" {...field('resource_type')} />
          <TextInput label="Actor id" {...field('actor_id')} />
          <NativeSelect label="Result" data={[{ value: '', label: 'Any' }, { value: 'success', label: 'Success' }, { value: 'failure', label: 'Failure' }]} {...field('result')} />
          <Button type="submit" variant="default">Filter</Button>
        </Group>
      </form>
      <PagedTable<AdminAuditLogEntry>
        key={JSON.stringify(params)}
        label="Audit log" path="/admin-audit-log" params={params} columns={['Time', 'Actor', 'Action', 'Resource', 'Result']}
        row={(e) => (
          <Table.Tr key={e.id}>
            <Table.Td>{new Date(e.created_at).toLocaleString()}</Table.Td>
            <Table.Td>{e.admin_email || e.actor_display_name || e.actor_id}</Table.Td>
            <Table.Td>{e.action}</Table.Td>
            <Table.Td>{e.resource_type} {e.resource_id}</Table.Td>
            <Table.Td><Badge color={e.result === 'success' ? 'teal.9' : 'red.9'}>{e.result}</Badge></Table.Td>
          </Table.Tr>
        )}
      />
    </Stack>
  );
}
