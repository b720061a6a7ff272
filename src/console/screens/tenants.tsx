import { Anchor, Badge, Button, Checkbox, Code, Group, Progress, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import type { AdminTenant, AdminTenantCreate, AdminTenantCreated, AdminTenantSettings, AdminTenantUpdate } from '../../generated/types.ts';
import { api } from '../api.ts';
import { can } from '../auth.ts';
import { Confirm, Details, Failure, fieldErrors, SecretOnce, when } from '../forms.tsx';
import { PagedTable } from '../paged.tsx';
import { useSession } from '../session.ts';

const STATUS_COLOR: Record<AdminTenant['status'], string> = { active: 'teal.9', suspended: 'grape.9', deleting: 'red.9', deleted: 'gray.7' };

/** Platform administrators only: every tenant of the server. */
export function TenantList() {
  const session = useSession();
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Tenants</Title>
        {can(session, 'admin:tenants:write') && <Button component={Link} to="/tenants/new">New tenant</Button>}
      </Group>
      <PagedTable<AdminTenant>
        label="Tenants" path="/tenants" columns={['Id', 'Name', 'Status', 'Created']}
        row={(t) => (
          <Table.Tr key={t.id}>
            <Table.Td><Anchor component={Link} to={`/tenants/${encodeURIComponent(t.id)}`}>{t.id}</Anchor></Table.Td>
            <Table.Td>{t.display_name ?? t.name}</Table.Td>
            <Table.Td><Badge color={STATUS_COLOR[t.status]}>{t.status}</Badge></Table.Td>
            <Table.Td>{new Date(t.created_at).toLocaleString()}</Table.Td>
          </Table.Tr>
        )}
      />
    </Stack>
  );
}

/** A new tenant, optionally with its first admin client, whose secret is shown once. */
export function TenantCreate() {
  const queries = useQueryClient();
  const [v, setV] = useState({ id: '', name: '', display: '', admin: false });
  const create = useMutation({
    mutationFn: (body: AdminTenantCreate) => api<AdminTenantCreated>('POST', '/tenants', body),
    onSuccess: () => queries.invalidateQueries({ queryKey: ['/tenants'] }),
  });
  const err = fieldErrors(create.error);
  const t = create.data;
  if (t) {
    return (
      <Stack>
        <Title order={2}>Tenant created</Title>
        <Text>Tenant <Code>{t.id}</Code> is {t.status}.</Text>
        {t.admin_client && <><Text>Admin client <Code>{t.admin_client.client_id}</Code></Text><SecretOnce label="admin client secret" value={t.admin_client.client_secret} testId="tenant-admin-secret" /></>}
        <Anchor component={Link} to={`/tenants/${encodeURIComponent(t.id)}`}>Go to the tenant</Anchor>
      </Stack>
    );
  }
  return (
    <Stack maw={560}>
      <Title order={2}>New tenant</Title>
      <form noValidate onSubmit={(e) => {
        e.preventDefault();
        create.mutate({ ...(v.id ? { id: v.id } : {}), name: v.name, display_name: v.display || null, admin_client: v.admin });
      }}>
        <Stack>
          <Failure error={create.error} />
          <TextInput label="Id" description="Lower-case letters, digits and dashes; chosen by the server when empty" value={v.id} onChange={(e) => setV({ ...v, id: e.currentTarget.value })} error={err('id')} />
          <TextInput label="Name" value={v.name} onChange={(e) => setV({ ...v, name: e.currentTarget.value })} error={err('name')} />
          <TextInput label="Display name" description="Shown on the login page" value={v.display} onChange={(e) => setV({ ...v, display: e.currentTarget.value })} error={err('display_name')} />
          <Checkbox label="Also create the tenant's first admin client" checked={v.admin} onChange={(e) => setV({ ...v, admin: e.currentTarget.checked })} />
          <Group><Button type="submit" loading={create.isPending}>Create tenant</Button></Group>
        </Stack>
      </form>
    </Stack>
  );
}

/** One tenant: status and dates, lifecycle (suspend, unsuspend, delete with the purge followed), settings. */
export function TenantDetail() {
  const { id = '' } = useParams();
  const session = useSession();
  const queries = useQueryClient();
  const [confirming, setConfirming] = useState<'suspend' | 'delete' | null>(null);
  const [editing, setEditing] = useState(false);
  const path = `/tenants/${encodeURIComponent(id)}`;
  const tenant = useQuery({
    queryKey: ['/tenants', id], queryFn: () => api<AdminTenant>('GET', path),
    // While the purge runs, the status is asked again each second until the tenant is deleted.
    refetchInterval: (q) => (q.state.data?.status === 'deleting' ? 1000 : false),
  });
  const move = useMutation({
    mutationFn: (verb: 'suspend' | 'unsuspend' | 'delete') => api<AdminTenant>(verb === 'delete' ? 'DELETE' : 'POST', verb === 'delete' ? path : `${path}/${verb}`),
    onSuccess: async () => { setConfirming(null); await queries.invalidateQueries({ queryKey: ['/tenants'] }); },
  });
  if (tenant.error) return <Failure error={tenant.error} />;
  const t = tenant.data;
  if (!t) return <Text>Loading…</Text>;
  const writer = can(session, 'admin:tenants:write') && session?.tenant !== t.id;
  const live = t.status === 'active' || t.status === 'suspended';
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>{t.display_name ?? t.name}</Title>
        <Badge color={STATUS_COLOR[t.status]} data-testid="tenant-status">{t.status}</Badge>
      </Group>
      <Details label="Tenant details" rows={[
        ['Id', t.id], ['Name', t.name], ['Display name', t.display_name ?? '—'], ['Status', t.status],
        ['Created', when(t.created_at)], ['Updated', when(t.updated_at)], ['Suspended', when(t.suspended_at)], ['Deleted', when(t.deleted_at)],
      ]} />
      {t.status === 'deleting' && (
        <Stack gap={4}>
          <Text id="purge-label">Purging the tenant's data: its rows, keys and queued jobs…</Text>
          <Progress value={100} striped aria-labelledby="purge-label" />
        </Stack>
      )}
      {t.status === 'deleted' && <Text role="status">The tenant is deleted: all its data is purged.</Text>}
      <Failure error={move.error} />
      {writer && live && (
        <Group>
          <Button onClick={() => setEditing(!editing)} variant={editing ? 'default' : 'filled'}>{editing ? 'Close settings' : 'Edit settings'}</Button>
          {t.status === 'active'
            ? <Button variant="outline" color="red.9" onClick={() => setConfirming('suspend')}>Suspend tenant</Button>
            : <Button variant="default" loading={move.isPending} onClick={() => move.mutate('unsuspend')}>Unsuspend tenant</Button>}
          <Button variant="outline" color="red" onClick={() => setConfirming('delete')}>Delete tenant</Button>
        </Group>
      )}
      {editing && live ? <TenantSettingsForm key={t.updated_at} t={t} onSaved={() => setEditing(false)} /> : (
        <>
          <Title order={3}>Settings</Title>
          <Code block>{JSON.stringify(t.settings, null, 2)}</Code>
        </>
      )}
      <Confirm opened={confirming === 'suspend'} title="Suspend this tenant?" action="Suspend" pending={move.isPending} error={move.error} onConfirm={() => move.mutate('suspend')} onClose={() => setConfirming(null)}>
        <Text>{t.id}'s tokens stop being accepted and its people cannot sign in or administer it until it is unsuspended.</Text>
      </Confirm>
      <Confirm opened={confirming === 'delete'} title="Delete this tenant?" action="Delete tenant" pending={move.isPending} error={move.error} onConfirm={() => move.mutate('delete')} onClose={() => setConfirming(null)}>
        <Text>Every client, user, key and log of {t.id} is purged. This cannot be undone.</Text>
      </Confirm>
    </Stack>
  );
}

type Flag = 'token_exchange_enabled' | 'revoke_exchanged_tokens' | 'require_dpop' | 'require_pushed_authorization_requests' | 'token_decision_logging' | 'status_list';
type Seconds = 'access_token_ttl' | 'refresh_token_ttl' | 'consent_ttl' | 'device_code_ttl';
const FLAGS: Array<[Flag, string]> = [
  ['token_exchange_enabled', 'Token exchange enabled'], ['revoke_exchanged_tokens', 'Revoking a token ends the tokens exchanged from it'],
  ['require_dpop', 'Every token request needs a DPoP proof'], ['require_pushed_authorization_requests', 'Authorization requests only through /par'],
  ['token_decision_logging', 'Archive token decisions as logs'], ['status_list', 'Tokens carry a status list claim'],
];
const SECONDS: Array<[Seconds, string]> = [
  ['access_token_ttl', 'Access token lifetime (seconds)'], ['refresh_token_ttl', 'Refresh token lifetime (seconds)'],
  ['consent_ttl', 'Consent lifetime (seconds)'], ['device_code_ttl', 'Device code lifetime (seconds)'],
];

/** The tenant's names and its commonest settings; the settings object is sent whole, other keys kept as they were. */
function TenantSettingsForm({ t, onSaved }: { t: AdminTenant; onSaved: () => void }) {
  const queries = useQueryClient();
  const s = t.settings;
  const [name, setName] = useState(t.name);
  const [display, setDisplay] = useState(t.display_name ?? '');
  const [nums, setNums] = useState<Record<Seconds, string>>(Object.fromEntries(SECONDS.map(([k]) => [k, s[k] === undefined ? '' : String(s[k])])) as Record<Seconds, string>);
  const [flags, setFlags] = useState<Record<Flag, boolean>>(Object.fromEntries(FLAGS.map(([k]) => [k, k === 'revoke_exchanged_tokens' ? s[k] !== false : s[k] === true])) as Record<Flag, boolean>);
  const [methods, setMethods] = useState<string[]>(s.login_methods ?? ['email_code', 'passkey']);
  const save = useMutation({
    mutationFn: (body: AdminTenantUpdate) => api<AdminTenant>('PUT', `/tenants/${encodeURIComponent(t.id)}`, body),
    onSuccess: async () => { await queries.invalidateQueries({ queryKey: ['/tenants'] }); onSaved(); },
  });
  const err = fieldErrors(save.error);
  return (
    <form noValidate aria-label="Tenant settings" onSubmit={(e) => {
      e.preventDefault();
      const settings: AdminTenantSettings = { ...s, ...flags, login_methods: methods as AdminTenantSettings['login_methods'] };
      // A number is sent as typed, so the server's bounds speak next to the field; empty means the server's default.
      for (const [k] of SECONDS) { if (nums[k].trim() === '') delete settings[k]; else settings[k] = Number(nums[k]); }
      save.mutate({ name, display_name: display || null, settings });
    }}>
      <Stack maw={640}>
        <Title order={3}>Settings</Title>
        <Failure error={save.error} />
        <TextInput label="Name" value={name} onChange={(e) => setName(e.currentTarget.value)} error={err('name')} />
        <TextInput label="Display name" value={display} onChange={(e) => setDisplay(e.currentTarget.value)} error={err('display_name')} />
        {SECONDS.map(([k, label]) => (
          <TextInput key={k} label={label} description="Empty: the server default" inputMode="numeric" value={nums[k]}
            onChange={(e) => setNums({ ...nums, [k]: e.currentTarget.value })} error={err(`settings.${k}`)} />
        ))}
        <Checkbox.Group label="Sign-in methods" value={methods} onChange={setMethods} error={err('settings.login_methods')}>
          <Group mt="xs"><Checkbox value="email_code" label="Email code" /><Checkbox value="passkey" label="Passkey" /></Group>
        </Checkbox.Group>
        {FLAGS.map(([k, label]) => <Checkbox key={k} label={label} checked={flags[k]} onChange={(e) => setFlags({ ...flags, [k]: e.currentTarget.checked })} error={err(`settings.${k}`)} />)}
        <Group><Button type="submit" loading={save.isPending}>Save settings</Button></Group>
      </Stack>
    </form>
  );
}
