import { Alert, Badge, Button, Group, Modal, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import type { AdminUser } from '../../generated/types.ts';
import { api } from '../api.ts';
import { can } from '../auth.ts';
import { MODAL, PagedTable } from '../paged.tsx';
import { useSession } from '../session.ts';

const STATUS_COLOR: Record<AdminUser['status'], string> = { active: 'teal.9', locked: 'red.9', suspended: 'gray.7' };

/** The tenant's users, searched by email prefix; lock (confirmed) and unlock. */
export function UserList() {
  const session = useSession();
  const [typed, setTyped] = useState('');
  const [email, setEmail] = useState('');
  const [locking, setLocking] = useState<AdminUser | null>(null);
  const queries = useQueryClient();
  const setLock = useMutation({
    mutationFn: ({ user, lock }: { user: AdminUser; lock: boolean }) => api<AdminUser>('POST', `/users/${encodeURIComponent(user.id)}/${lock ? 'lock' : 'unlock'}`),
    onSuccess: async () => { setLocking(null); await queries.invalidateQueries({ queryKey: ['/users'] }); },
  });
  const writer = can(session, 'admin:users:write');
  return (
    <Stack>
      <Title order={2}>Users</Title>
      <form role="search" onSubmit={(e) => { e.preventDefault(); setEmail(typed.trim()); }}>
        <Group align="flex-end">
          <TextInput label="Email starts with" value={typed} onChange={(e) => setTyped(e.currentTarget.value)} />
          <Button type="submit" variant="default">Search</Button>
        </Group>
      </form>
      {setLock.error && <Alert color="red" role="alert">{setLock.error.message}</Alert>}
      <PagedTable<AdminUser>
        key={email}
        label="Users" path="/users" params={email ? { email } : {}} columns={['Email', 'Name', 'Status', ...(writer ? ['Actions'] : [])]}
        row={(u) => (
          <Table.Tr key={u.id}>
            <Table.Td>{u.email}</Table.Td>
            <Table.Td>{u.name ?? '—'}</Table.Td>
            <Table.Td><Badge color={STATUS_COLOR[u.status]}>{u.status}</Badge></Table.Td>
            {writer && (
              <Table.Td>
                {u.status === 'active' && <Button size="xs" variant="outline" color="red.9" onClick={() => setLocking(u)} aria-label={`Lock ${u.email}`}>Lock</Button>}
                {u.status === 'locked' && <Button size="xs" variant="default" loading={setLock.isPending} onClick={() => setLock.mutate({ user: u, lock: false })} aria-label={`Unlock ${u.email}`}>Unlock</Button>}
              </Table.Td>
            )}
          </Table.Tr>
        )}
      />
      <Modal opened={locking !== null} onClose={() => setLocking(null)} {...MODAL} title="Lock this user?">
        <Stack>
          <Text>{locking?.email} will not be able to sign in until unlocked. Tokens already issued stay valid.</Text>
          <Group justify="flex-end">
            <Button variant="default" onClick={() => setLocking(null)}>Cancel</Button>
            <Button color="red.9" loading={setLock.isPending} onClick={() => locking && setLock.mutate({ user: locking, lock: true })}>Lock user</Button>
          </Group>
        </Stack>
      </Modal>
    </Stack>
  );
}
