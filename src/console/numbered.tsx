import { Button, Group, Table, Text } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useState, type ReactNode } from 'react';
import { api, viewedTenant } from './api.ts';
import { PAGE_SIZE } from './paged.tsx';

/**
 * A list the admin API pages by number (`page`, `limit`, `total`: machine principals, check API keys),
 * as PagedTable does for cursors. `items` picks the rows out of the answer (check API keys call them `keys`).
 */
export function NumberedTable<T, R extends { total?: number }>({ label, path, params = {}, columns, items, row }: {
  label: string;
  path: string;
  params?: Record<string, string>;
  columns: string[];
  items: (answer: R) => T[];
  row: (item: T) => ReactNode;
}) {
  const [page, setPage] = useState(1);
  const qs = new URLSearchParams({ ...params, limit: String(PAGE_SIZE), page: String(page) });
  const answer = useQuery({ queryKey: [path, viewedTenant(), qs.toString()], queryFn: () => api<R>('GET', `${path}?${qs}`) });
  if (answer.error) return <Text c="red" role="alert">{answer.error.message}</Text>;
  const rows = answer.data ? items(answer.data) : [];
  const total = answer.data?.total;
  const more = total === undefined ? rows.length === PAGE_SIZE : page * PAGE_SIZE < total;
  return (
    <>
      <Table striped highlightOnHover aria-label={label} aria-busy={answer.isLoading}>
        <Table.Thead><Table.Tr>{columns.map((c) => <Table.Th key={c}>{c}</Table.Th>)}</Table.Tr></Table.Thead>
        <Table.Tbody>{rows.map(row)}</Table.Tbody>
      </Table>
      {answer.data && rows.length === 0 && <Text>Nothing here yet.</Text>}
      <Group mt="sm">
        <Button variant="default" size="xs" disabled={page < 2} onClick={() => setPage(page - 1)}>Previous page</Button>
        <Text size="sm">Page {page}{total !== undefined ? ` of ${Math.max(1, Math.ceil(total / PAGE_SIZE))}` : ''}</Text>
        <Button variant="default" size="xs" disabled={!more} onClick={() => setPage(page + 1)}>Next page</Button>
      </Group>
    </>
  );
}
