import { Alert, Anchor, Badge, Code, Stack, Table, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import type { AdminTenant } from '../../generated/types.ts';
import { api } from '../api.ts';
import { PagedTable } from '../paged.tsx';

/** Platform administrators only: every tenant of the server. */
export function TenantList() {
  return (
    <Stack>
      <Title order={2}>Tenants</Title>
      <PagedTable<AdminTenant>
        label="Tenants" path="/tenants" columns={['Id', 'Name', 'Status', 'Created']}
        row={(t) => (
          <Table.Tr key={t.id}>
            <Table.Td><Anchor component={Link} to={`/tenants/${encodeURIComponent(t.id)}`}>{t.id}</Anchor></Table.Td>
            <Table.Td>{t.display_name ?? t.name}</Table.Td>
            <Table.Td><Badge color={t.status === 'active' ? 'teal.9' : 'gray.7'}>{t.status}</Badge></Table.Td>
            <Table.Td>{new Date(t.created_at).toLocaleString()}</Table.Td>
          </Table.Tr>
        )}
      />
    </Stack>
  );
}

/** One tenant: its status, dates and settings as the admin API gives them. */
export function TenantDetail() {
  const { id = '' } = useParams();
  const tenant = useQuery({ queryKey: ['/tenants', id], queryFn: () => api<AdminTenant>('GET', `/tenants/${encodeURIComponent(id)}`) });
  if (tenant.error) return <Alert color="red" role="alert">{tenant.error.message}</Alert>;
  const t = tenant.data;
  if (!t) return <Text>Loading…</Text>;
  const when = (ms: number | null) => (ms === null ? '—' : new Date(ms).toLocaleString());
  const rows: Array<[string, string]> = [
    ['Id', t.id], ['Name', t.name], ['Display name', t.display_name ?? '—'], ['Status', t.status],
    ['Created', when(t.created_at)], ['Updated', when(t.updated_at)], ['Suspended', when(t.suspended_at)],
  ];
  return (
    <Stack>
      <Title order={2}>{t.display_name ?? t.name}</Title>
      <Table aria-label="Tenant details"><Table.Tbody>{rows.map(([k, v]) => <Table.Tr key={k}><Table.Th scope="row">{k}</Table.Th><Table.Td>{v}</Table.Td></Table.Tr>)}</Table.Tbody></Table>
      <Title order={3}>Settings</Title>
      <Code block>{JSON.stringify(t.settings, null, 2)}</Code>
    </Stack>
  );
}
