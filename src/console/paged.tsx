import { Button, Group, Table, Text } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useState, type ReactNode } from 'react';
import { api, viewedTenant } from './api.ts';

export const PAGE_SIZE = 20;

/**
 * Every confirmation dialog: a named close button, and no scroll lock, whose injected <style> element
 * (react-remove-scroll) carries no nonce and would be refused by the console's CSP.
 */
export const MODAL = { lockScroll: false, closeButtonProps: { 'aria-label': 'Close' } } as const;

/**
 * A list page by page as the admin API gives it: opaque cursors, so "next" follows the server's
 * cursor and "previous" goes back through the cursors already seen.
 */
export function PagedTable<T>({ label, path, params = {}, columns, row, refetchMs }: {
  label: string;
  path: string;
  params?: Record<string, string>;
  columns: string[];
  row: (item: T) => ReactNode;
  /** Ask again every so often: a list that changes behind the screen (a delivery log). */
  refetchMs?: number;
}) {
  const [cursors, setCursors] = useState<Array<string | undefined>>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const qs = new URLSearchParams({ ...params, limit: String(PAGE_SIZE), ...(cursor ? { cursor } : {}) });
  const page = useQuery({
    queryKey: [path, viewedTenant(), qs.toString()],
    queryFn: () => api<{ items: T[]; cursor: string | null }>('GET', `${path}?${qs}`),
    refetchInterval: refetchMs ?? false,
  });
  if (page.error) return <Text c="red" role="alert">{page.error.message}</Text>;
  return (
    <>
      <Table striped highlightOnHover aria-label={label} aria-busy={page.isLoading}>
        <Table.Thead><Table.Tr>{columns.map((c) => <Table.Th key={c}>{c}</Table.Th>)}</Table.Tr></Table.Thead>
        <Table.Tbody>{page.data?.items.map(row)}</Table.Tbody>
      </Table>
      {page.data && page.data.items.length === 0 && <Text>Nothing here yet.</Text>}
      <Group mt="sm">
        <Button variant="default" size="xs" disabled={cursors.length < 2} onClick={() => setCursors(cursors.slice(0, -1))}>Previous page</Button>
        <Button variant="default" size="xs" disabled={!page.data?.cursor} onClick={() => setCursors([...cursors, page.data!.cursor!])}>Next page</Button>
      </Group>
    </>
  );
}
