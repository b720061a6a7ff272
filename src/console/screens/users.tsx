import { Alert, Anchor, Badge, Button, Group, Modal, NativeSelect, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import type { AdminPiiPartitionSettings, AdminRoleList, AdminUser, AdminUserPiiMoved, AdminUserLoginSessionList, AdminUserRoles, AdminUserSessionList, LoginConsentList } from '../../generated/types.ts';
import { api, viewedTenant } from '../api.ts';
import { Confirm, Details, Failure, fieldErrors, when } from '../forms.tsx';
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
            <Table.Td><Anchor component={Link} to={`/users/${encodeURIComponent(u.id)}`}>{u.email}</Anchor></Table.Td>
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

/** One user: details, roles (assign, remove), lock, the PII partition move, and delete (confirmed). */
export function UserDetail() {
  const { id = '' } = useParams();
  const session = useSession();
  const navigate = useNavigate();
  const queries = useQueryClient();
  const path = `/users/${encodeURIComponent(id)}`;
  const [confirming, setConfirming] = useState<'delete' | 'lock' | null>(null);
  const user = useQuery({ queryKey: ['/users', viewedTenant(), id], queryFn: () => api<AdminUser>('GET', path) });
  const refresh = () => queries.invalidateQueries({ queryKey: ['/users'] });
  const lock = useMutation({ mutationFn: (on: boolean) => api<AdminUser>('POST', `${path}/${on ? 'lock' : 'unlock'}`), onSuccess: async () => { setConfirming(null); await refresh(); } });
  const remove = useMutation({ mutationFn: () => api<void>('DELETE', path), onSuccess: async () => { await refresh(); navigate('/users'); } });
  if (user.error) return <Failure error={user.error} />;
  const u = user.data;
  if (!u) return <Text>Loading…</Text>;
  const writer = can(session, 'admin:users:write');
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>{u.email}</Title>
        <Badge color={STATUS_COLOR[u.status]}>{u.status}</Badge>
      </Group>
      <Details label="User details" rows={[
        ['Id', u.id], ['Email', u.email], ['Name', u.name ?? '—'], ['Status', u.status], ['Email verified', u.email_verified ? 'yes' : 'no'],
        ['Created', when(u.created_at)], ['Updated', when(u.updated_at)],
      ]} />
      <Failure error={lock.error} />
      {writer && (
        <Group>
          {u.status === 'active' && <Button variant="outline" color="red.9" onClick={() => setConfirming('lock')}>Lock user</Button>}
          {u.status === 'locked' && <Button variant="default" loading={lock.isPending} onClick={() => lock.mutate(false)}>Unlock user</Button>}
          <Button variant="outline" color="red" onClick={() => setConfirming('delete')}>Delete user</Button>
        </Group>
      )}
      {can(session, 'admin:roles:read') && <UserRoles userId={u.id} writer={can(session, 'admin:roles:write')} />}
      <UserSessions userId={u.id} writer={writer} />
      <UserLoginSessions userId={u.id} writer={writer} />
      <UserConsents userId={u.id} writer={writer} />
      {writer && <PiiMove userId={u.id} />}
      <Confirm opened={confirming === 'lock'} title="Lock this user?" action="Lock user" pending={lock.isPending} error={lock.error} onConfirm={() => lock.mutate(true)} onClose={() => setConfirming(null)}>
        <Text>{u.email} will not be able to sign in until unlocked. Tokens already issued stay valid.</Text>
      </Confirm>
      <Confirm opened={confirming === 'delete'} title="Delete this user?" action="Delete user" pending={remove.isPending} error={remove.error} onConfirm={() => remove.mutate()} onClose={() => setConfirming(null)}>
        <Text>{u.email}, their role assignments and tokens are deleted. This cannot be undone.</Text>
      </Confirm>
    </Stack>
  );
}

/** The user's roles: assigned from the tenant's roles, removed one by one. */
function UserRoles({ userId, writer }: { userId: string; writer: boolean }) {
  const queries = useQueryClient();
  const path = `/users/${encodeURIComponent(userId)}/roles`;
  const [pick, setPick] = useState('');
  const assigned = useQuery({ queryKey: ['/users', viewedTenant(), userId, 'roles'], queryFn: () => api<AdminUserRoles>('GET', path) });
  const roles = useQuery({ queryKey: ['/roles', viewedTenant(), 'all'], queryFn: () => api<AdminRoleList>('GET', '/roles?limit=100'), enabled: writer });
  const change = useMutation({
    mutationFn: (c: { add: boolean; roleId: string }) => (c.add ? api('POST', path, { role_id: c.roleId }) : api('DELETE', `${path}/${encodeURIComponent(c.roleId)}`)),
    onSuccess: async () => { setPick(''); await queries.invalidateQueries({ queryKey: ['/users'] }); },
  });
  const have = assigned.data?.roles ?? [];
  const options = (roles.data?.items ?? []).filter((r) => !have.some((h) => h.role_id === r.id)).map((r) => ({ value: r.id, label: r.name }));
  return (
    <Stack gap="xs">
      <Title order={3}>Roles</Title>
      <Failure error={assigned.error ?? change.error} />
      <Table aria-label="Roles of the user">
        <Table.Thead><Table.Tr><Table.Th>Role</Table.Th><Table.Th>Permissions</Table.Th><Table.Th>Assigned</Table.Th>{writer && <Table.Th>Actions</Table.Th>}</Table.Tr></Table.Thead>
        <Table.Tbody>
          {have.map((r) => (
            <Table.Tr key={r.role_id}>
              <Table.Td>{r.name}</Table.Td><Table.Td>{r.permissions.join(' ')}</Table.Td><Table.Td>{when(r.assigned_at)}</Table.Td>
              {writer && <Table.Td><Button size="xs" variant="default" onClick={() => change.mutate({ add: false, roleId: r.role_id })} aria-label={`Remove role ${r.name}`}>Remove</Button></Table.Td>}
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {have.length === 0 && assigned.data && <Text>No roles.</Text>}
      {writer && (
        <form onSubmit={(e) => { e.preventDefault(); if (pick) change.mutate({ add: true, roleId: pick }); }}>
          <Group align="flex-end">
            <NativeSelect label="Role to assign" data={[{ value: '', label: 'Choose a role' }, ...options]} value={pick} onChange={(e) => setPick(e.currentTarget.value)} />
            <Button type="submit" variant="default" loading={change.isPending} disabled={!pick}>Assign role</Button>
          </Group>
        </form>
      )}
    </Stack>
  );
}

/** Moves the user's personal data to another partition of the server (copy, switch, delete: done when answered). */
function PiiMove({ userId }: { userId: string }) {
  const session = useSession();
  const [partition, setPartition] = useState('');
  const settings = useQuery({
    queryKey: ['/settings/pii-partitions', viewedTenant()], queryFn: () => api<AdminPiiPartitionSettings>('GET', '/settings/pii-partitions'),
    enabled: can(session, 'admin:settings:read'),
  });
  const move = useMutation({ mutationFn: (p: string) => api<AdminUserPiiMoved>('POST', `/users/${encodeURIComponent(userId)}/pii-partition`, { partition: p }) });
  const err = fieldErrors(move.error);
  const known = settings.data?.available_partitions;
  return (
    <form aria-label="PII partition" onSubmit={(e) => { e.preventDefault(); move.mutate(partition); }}>
      <Stack gap="xs" maw={560}>
        <Title order={3}>Personal data partition</Title>
        <Text size="sm">Where this user's personal data is stored. Moving copies it, switches the user over, then deletes the old copy.</Text>
        {move.error && !err('partition') && <Failure error={move.error} />}
        {move.data && (
          <Text role="status">
            {move.data.moved ? `Moved from ${move.data.from_partition} to ${move.data.partition}.` : `Already in ${move.data.partition}: nothing moved.`}
          </Text>
        )}
        <Group align="flex-start">
          {known
            ? <NativeSelect label="Move to partition" data={[{ value: '', label: 'Choose a partition' }, ...known]} value={partition} onChange={(e) => setPartition(e.currentTarget.value)} error={err('partition')} />
            : <TextInput label="Move to partition" value={partition} onChange={(e) => setPartition(e.currentTarget.value)} error={err('partition')} />}
          <Button type="submit" mt={25} variant="default" loading={move.isPending} disabled={!partition}>Move data</Button>
        </Group>
      </Stack>
    </form>
  );
}

/** A user's sessions of one kind (`GET /users/{id}/<kind>`), and the ending of one (`DELETE .../<kind>/{sid}`). */
function useEndableSessions<T extends { id: string }>(userId: string, kind: 'sessions' | 'login-sessions') {
  const queries = useQueryClient();
  const path = `/users/${encodeURIComponent(userId)}/${kind}`;
  const [ending, setEnding] = useState<T | null>(null);
  const list = useQuery({ queryKey: ['/users', viewedTenant(), userId, kind], queryFn: () => api<{ sessions: T[] }>('GET', path) });
  const end = useMutation({
    mutationFn: (id: string) => api<void>('DELETE', `${path}/${encodeURIComponent(id)}`),
    onSuccess: async () => { setEnding(null); await queries.invalidateQueries({ queryKey: ['/users'] }); },
  });
  return { list, rows: list.data?.sessions ?? [], ending, setEnding, end };
}

/** The user's sessions at applications (live refresh token families); ending one is confirmed. */
function UserSessions({ userId, writer }: { userId: string; writer: boolean }) {
  const { list, rows, ending, setEnding, end } = useEndableSessions<AdminUserSessionList['sessions'][number]>(userId, 'sessions');
  return (
    <Stack gap="xs">
      <Title order={3}>Sessions</Title>
      <Failure error={list.error} />
      <Table aria-label="Sessions of the user">
        <Table.Thead><Table.Tr><Table.Th>Application</Table.Th><Table.Th>Scope</Table.Th><Table.Th>Started</Table.Th><Table.Th>Last used</Table.Th><Table.Th>Expires</Table.Th>{writer && <Table.Th>Actions</Table.Th>}</Table.Tr></Table.Thead>
        <Table.Tbody>
          {rows.map((r) => (
            <Table.Tr key={r.id}>
              <Table.Td>{r.client_id}</Table.Td><Table.Td>{r.scope}</Table.Td><Table.Td>{when(r.started_at)}</Table.Td><Table.Td>{when(r.last_used_at)}</Table.Td><Table.Td>{when(r.expires_at)}</Table.Td>
              {writer && <Table.Td><Button size="xs" variant="outline" color="red.9" onClick={() => setEnding(r)} aria-label={`End session at ${r.client_id}`}>End</Button></Table.Td>}
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {list.data && rows.length === 0 && <Text>No sessions.</Text>}
      <Confirm opened={ending !== null} title="End this session?" action="End session" pending={end.isPending} error={end.error} onConfirm={() => ending && end.mutate(ending.id)} onClose={() => setEnding(null)}>
        <Text>{ending?.client_id} loses this sign-in: its refresh token and the access tokens issued from it stop working.</Text>
      </Confirm>
    </Stack>
  );
}

/** The user's login sessions at svc itself (the session cookie); ending one is confirmed. */
function UserLoginSessions({ userId, writer }: { userId: string; writer: boolean }) {
  const { list, rows, ending, setEnding, end } = useEndableSessions<AdminUserLoginSessionList['sessions'][number]>(userId, 'login-sessions');
  return (
    <Stack gap="xs">
      <Title order={3}>Login sessions</Title>
      <Failure error={list.error} />
      <Table aria-label="Login sessions of the user">
        <Table.Thead><Table.Tr><Table.Th>Session</Table.Th><Table.Th>Signed in</Table.Th><Table.Th>Expires</Table.Th>{writer && <Table.Th>Actions</Table.Th>}</Table.Tr></Table.Thead>
        <Table.Tbody>
          {rows.map((r) => (
            <Table.Tr key={r.id}>
              <Table.Td>{r.id}</Table.Td><Table.Td>{when(r.signed_in_at)}</Table.Td><Table.Td>{when(r.expires_at)}</Table.Td>
              {writer && <Table.Td><Button size="xs" variant="outline" color="red.9" onClick={() => setEnding(r)} aria-label={`End login session ${r.id}`}>End</Button></Table.Td>}
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {list.data && rows.length === 0 && <Text>No login sessions.</Text>}
      <Confirm opened={ending !== null} title="End this login session?" action="End login session" pending={end.isPending} error={end.error} onConfirm={() => ending && end.mutate(ending.id)} onClose={() => setEnding(null)}>
        <Text>The browser signed in with this session must sign in again. Tokens applications already hold are not affected.</Text>
      </Confirm>
    </Stack>
  );
}

/** The applications the user consented to; withdrawing a consent is confirmed. */
function UserConsents({ userId, writer }: { userId: string; writer: boolean }) {
  const queries = useQueryClient();
  const path = `/users/${encodeURIComponent(userId)}/consents`;
  const [revoking, setRevoking] = useState<LoginConsentList['consents'][number] | null>(null);
  const list = useQuery({ queryKey: ['/users', viewedTenant(), userId, 'consents'], queryFn: () => api<LoginConsentList>('GET', path) });
  const revoke = useMutation({
    mutationFn: (id: string) => api<void>('DELETE', `${path}/${encodeURIComponent(id)}`),
    onSuccess: async () => { setRevoking(null); await queries.invalidateQueries({ queryKey: ['/users'] }); },
  });
  const rows = list.data?.consents ?? [];
  return (
    <Stack gap="xs">
      <Title order={3}>Consents</Title>
      <Failure error={list.error} />
      <Table aria-label="Consents of the user">
        <Table.Thead><Table.Tr><Table.Th>Application</Table.Th><Table.Th>Scopes</Table.Th><Table.Th>Granted</Table.Th><Table.Th>Expires</Table.Th>{writer && <Table.Th>Actions</Table.Th>}</Table.Tr></Table.Thead>
        <Table.Tbody>
          {rows.map((c) => (
            <Table.Tr key={c.id}>
              <Table.Td>{c.clientName ? `${c.clientName} (${c.clientId})` : c.clientId}</Table.Td><Table.Td>{(c.selectedScopes ?? c.scopes).join(' ')}</Table.Td>
              <Table.Td>{when(c.grantedAt)}</Table.Td><Table.Td>{when(c.expiresAt)}</Table.Td>
              {writer && <Table.Td><Button size="xs" variant="outline" color="red.9" onClick={() => setRevoking(c)} aria-label={`Withdraw consent to ${c.clientId}`}>Withdraw</Button></Table.Td>}
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {list.data && rows.length === 0 && <Text>No consents.</Text>}
      <Confirm opened={revoking !== null} title="Withdraw this consent?" action="Withdraw consent" pending={revoke.isPending} error={revoke.error} onConfirm={() => revoking && revoke.mutate(revoking.id)} onClose={() => setRevoking(null)}>
        <Text>{revoking?.clientId} loses the user's consent: its tokens for the user stop working, and the user is asked again at the next sign-in.</Text>
      </Confirm>
    </Stack>
  );
}
