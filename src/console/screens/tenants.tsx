import { Badge, Stack, Table, Title } from '@mantine/core';
import type { AdminTenant } from '../../generated/types.ts';
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
            <Table.Td>{t.id}</Table.Td>
            <Table.Td>{t.display_name ?? t.name}</Table.Td>
            <Table.Td><Badge color={t.status === 'active' ? 'teal.9' : 'gray.7'}>{t.status}</Badge></Table.Td>
            <Table.Td>{new Date(t.created_at).toLocaleString()}</Table.Td>
          </Table.Tr>
        )}
      />
    </Stack>
  );
}
