import { Anchor, Button, Group, Stack, Table, Text, Textarea, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, Route, Routes, useNavigate, useParams } from 'react-router';
import type { AdminRole, AdminRoleCreate } from '../../generated/types.ts';
import { api, viewedTenant } from '../api.ts';
import { can } from '../auth.ts';
import { Confirm, Details, Failure, fieldErrors, when, words } from '../forms.tsx';
import { PagedTable } from '../paged.tsx';
import { useSession } from '../session.ts';

const rolePath = (id: string) => `/roles/${encodeURIComponent(id)}`;

function RoleList() {
  const session = useSession();
  const [typed, setTyped] = useState('');
  const [name, setName] = useState('');
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Roles</Title>
        {can(session, 'admin:roles:write') && <Button component={Link} to="/roles/new">New role</Button>}
      </Group>
      <form role="search" onSubmit={(e) => { e.preventDefault(); setName(typed.trim()); }}>
        <Group align="flex-end">
          <TextInput label="Name" value={typed} onChange={(e) => setTyped(e.currentTarget.value)} />
          <Button type="submit" variant="default">Search</Button>
        </Group>
      </form>
      <PagedTable<AdminRole>
        key={name} label="Roles" path="/roles" params={name ? { name } : {}} columns={['Name', 'Description', 'Permissions', 'Updated']}
        row={(r) => (
          <Table.Tr key={r.id}>
            <Table.Td><Anchor component={Link} to={rolePath(r.id)}>{r.name}</Anchor></Table.Td>
            <Table.Td>{r.description ?? '—'}</Table.Td>
            <Table.Td>{r.permissions.join(' ')}</Table.Td>
            <Table.Td>{when(r.updated_at)}</Table.Td>
          </Table.Tr>
        )}
      />
    </Stack>
  );
}

/** Name, description and permissions, for create and edit alike. */
function RoleForm({ role, action, onSaved }: { role?: AdminRole; action: string; onSaved: (r: AdminRole) => void }) {
  const queries = useQueryClient();
  const [v, setV] = useState({ name: role?.name ?? '', description: role?.description ?? '', permissions: (role?.permissions ?? []).join('\n') });
  const save = useMutation({
    mutationFn: (b: AdminRoleCreate) => api<AdminRole>(role ? 'PUT' : 'POST', role ? rolePath(role.id) : '/roles', b),
    onSuccess: async (r) => { await queries.invalidateQueries({ queryKey: ['/roles'] }); onSaved(r); },
  });
  const err = fieldErrors(save.error);
  return (
    <form noValidate onSubmit={(e) => { e.preventDefault(); save.mutate({ name: v.name, description: v.description || null, permissions: words(v.permissions) }); }}>
      <Stack maw={640}>
        <Failure error={save.error} />
        <TextInput label="Name" value={v.name} onChange={(e) => setV({ ...v, name: e.currentTarget.value })} error={err('name')} />
        <TextInput label="Description" value={v.description} onChange={(e) => setV({ ...v, description: e.currentTarget.value })} error={err('description')} />
        <Textarea label="Permissions" description="One per line, e.g. admin:users:read or documents:read; * matches one segment, or all the rest when last" autosize minRows={3}
          value={v.permissions} onChange={(e) => setV({ ...v, permissions: e.currentTarget.value })} error={err('permissions')} />
        <Group><Button type="submit" loading={save.isPending}>{action}</Button></Group>
      </Stack>
    </form>
  );
}

function RoleCreate() {
  const navigate = useNavigate();
  return (
    <Stack>
      <Title order={2}>New role</Title>
      <RoleForm action="Create role" onSaved={(r) => navigate(rolePath(r.id))} />
    </Stack>
  );
}

/** One role: its details, edited in place, deleted after a confirmation. */
function RoleDetail() {
  const { id = '' } = useParams();
  const session = useSession();
  const navigate = useNavigate();
  const queries = useQueryClient();
  const [confirming, setConfirming] = useState(false);
  const role = useQuery({ queryKey: ['/roles', viewedTenant(), id], queryFn: () => api<AdminRole>('GET', rolePath(id)) });
  const remove = useMutation({ mutationFn: () => api<void>('DELETE', rolePath(id)), onSuccess: async () => { await queries.invalidateQueries({ queryKey: ['/roles'] }); navigate('/roles'); } });
  if (role.error) return <Failure error={role.error} />;
  const r = role.data;
  if (!r) return <Text>Loading…</Text>;
  const writer = can(session, 'admin:roles:write');
  return (
    <Stack>
      <Title order={2}>{r.name}</Title>
      <Details label="Role details" rows={[['Id', r.id], ['Name', r.name], ['Description', r.description ?? ''], ['Permissions', r.permissions.join(' ')], ['Created', when(r.created_at)], ['Updated', when(r.updated_at)]]} />
      {writer && (
        <>
          <Title order={3}>Edit</Title>
          <RoleForm key={r.updated_at} role={r} action="Save role" onSaved={() => undefined} />
          <Group><Button variant="outline" color="red" onClick={() => setConfirming(true)}>Delete role</Button></Group>
        </>
      )}
      <Confirm opened={confirming} title="Delete this role?" action="Delete" pending={remove.isPending} error={remove.error} onConfirm={() => remove.mutate()} onClose={() => setConfirming(false)}>
        <Text>{r.name} and its assignments are deleted: tokens issued from now on no longer carry its permissions.</Text>
      </Confirm>
    </Stack>
  );
}

/** The role screens under /roles, loaded when first opened. */
export default function RoleScreens() {
  return (
    <Routes>
      <Route index element={<RoleList />} />
      <Route path="new" element={<RoleCreate />} />
      <Route path=":id" element={<RoleDetail />} />
    </Routes>
  );
}
