import { Anchor, Badge, Button, Checkbox, Code, Group, Modal, NativeSelect, Stack, Table, Text, Textarea, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, Route, Routes, useNavigate, useParams } from 'react-router';
import type {
  AdminPrincipal, AdminPrincipalCreate, AdminPrincipalCredential, AdminPrincipalCredentialCreate, AdminPrincipalCredentialRotation,
  AdminPrincipalList, AdminPrincipalUpdate,
} from '../../generated/types.ts';
import { api, viewedTenant } from '../api.ts';
import { can } from '../auth.ts';
import { Confirm, Details, Failure, fieldErrors, when, words } from '../forms.tsx';
import { NumberedTable } from '../numbered.tsx';
import { MODAL } from '../paged.tsx';
import { useSession } from '../session.ts';

const TYPES: Array<AdminPrincipal['principalType']> = ['setup_tool', 'admin_ui_bff', 'automation', 'ci', 'mcp_server', 'ai_agent', 'internal_service', 'integration'];
const STATUS_COLOR = { active: 'teal.9', disabled: 'gray.7', deleted: 'red.9', rotating: 'grape.9', revoked: 'red.9', expired: 'gray.7' } as const;
const principalPath = (id: string) => `/machine-access/principals/${encodeURIComponent(id)}`;
const screenPath = (id: string) => `/principals/${encodeURIComponent(id)}`;

function PrincipalList() {
  const session = useSession();
  const [status, setStatus] = useState('');
  const [type, setType] = useState('');
  const params = { ...(status ? { status } : {}), ...(type ? { principal_type: type } : {}) };
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Machine principals</Title>
        {can(session, 'admin:machine-principals:write') && <Button component={Link} to="/principals/new">New principal</Button>}
      </Group>
      <Group>
        <NativeSelect label="Status" value={status} onChange={(e) => setStatus(e.currentTarget.value)} data={[{ value: '', label: 'Any' }, 'active', 'disabled', 'deleted']} />
        <NativeSelect label="Type" value={type} onChange={(e) => setType(e.currentTarget.value)} data={[{ value: '', label: 'Any' }, ...TYPES]} />
      </Group>
      <NumberedTable<AdminPrincipal, AdminPrincipalList>
        key={JSON.stringify(params)} label="Machine principals" path="/machine-access/principals" params={params} items={(a) => a.items}
        columns={['Name', 'Type', 'Status', 'Client id', 'Keys']}
        row={(p) => (
          <Table.Tr key={p.id}>
            <Table.Td><Anchor component={Link} to={screenPath(p.id)}>{p.displayName}</Anchor></Table.Td>
            <Table.Td>{p.principalType}</Table.Td>
            <Table.Td><Badge color={STATUS_COLOR[p.status]}>{p.status}</Badge></Table.Td>
            <Table.Td>{p.clientId}</Table.Td>
            <Table.Td>{p.credentials.filter((c) => c.status === 'active' || c.status === 'rotating').length}</Table.Td>
          </Table.Tr>
        )}
      />
    </Stack>
  );
}

interface Values { displayName: string; description: string; principalType: string; ttl: string; permissions: string; scope: string; scopeTenant: string }

/** Create and edit alike (the type is chosen once, at creation). */
function PrincipalForm({ p, action, onSaved }: { p?: AdminPrincipal; action: string; onSaved: (p: AdminPrincipal) => void }) {
  const queries = useQueryClient();
  const first = p?.tenantScopes[0];
  const [v, setV] = useState<Values>({
    displayName: p?.displayName ?? '', description: p?.description ?? '', principalType: p?.principalType ?? 'automation', ttl: String(p?.tokenTtlSeconds ?? 900),
    permissions: (p?.permissions ?? []).join('\n'), scope: first?.scope_mode ?? 'none', scopeTenant: first?.tenant_id ?? '',
  });
  const save = useMutation({
    mutationFn: (b: AdminPrincipalCreate) => {
      const { principalType, ...update } = b;
      return p ? api<AdminPrincipal>('PUT', principalPath(p.id), update satisfies AdminPrincipalUpdate) : api<AdminPrincipal>('POST', '/machine-access/principals', { principalType, ...update });
    },
    onSuccess: async (saved) => { await queries.invalidateQueries({ queryKey: ['/machine-access/principals'] }); onSaved(saved); },
  });
  const err = fieldErrors(save.error);
  const text = (k: keyof Values) => ({ value: v[k], onChange: (e: { currentTarget: { value: string } }) => setV({ ...v, [k]: e.currentTarget.value }) });
  return (
    <form noValidate onSubmit={(e) => {
      e.preventDefault();
      const scope = v.scope as 'none' | 'all' | 'allow';
      save.mutate({
        displayName: v.displayName, description: v.description || null, principalType: v.principalType as AdminPrincipal['principalType'], tokenTtlSeconds: Number(v.ttl),
        permissions: words(v.permissions), tenantScopes: [scope === 'allow' ? { scope_mode: scope, tenant_id: v.scopeTenant } : { scope_mode: scope, tenant_id: null }],
      });
    }}>
      <Stack maw={640}>
        <Failure error={save.error} />
        <TextInput label="Display name" {...text('displayName')} error={err('displayName')} />
        <TextInput label="Description" {...text('description')} error={err('description')} />
        {!p && <NativeSelect label="Type" data={TYPES} {...text('principalType')} error={err('principalType')} />}
        <TextInput label="Token lifetime (seconds)" inputMode="numeric" {...text('ttl')} error={err('tokenTtlSeconds')} />
        <Textarea label="Permissions" description="One per line, e.g. admin:tenants:read" autosize minRows={2} {...text('permissions')} error={err('permissions')} />
        <Group grow align="flex-start">
          <NativeSelect label="Tenant scope" {...text('scope')} error={err('tenantScopes')}
            data={[{ value: 'none', label: 'This tenant only' }, { value: 'allow', label: 'A named tenant' }, { value: 'all', label: 'Every tenant (platform)' }]} />
          {v.scope === 'allow' && <TextInput label="Named tenant" {...text('scopeTenant')} />}
        </Group>
        <Group><Button type="submit" loading={save.isPending}>{action}</Button></Group>
      </Stack>
    </form>
  );
}

function PrincipalCreate() {
  const navigate = useNavigate();
  return (
    <Stack>
      <Title order={2}>New machine principal</Title>
      <PrincipalForm action="Create principal" onSaved={(p) => navigate(screenPath(p.id))} />
    </Stack>
  );
}

/** One principal: details, its keys (add, rotate, revoke), enable or disable, edit, delete after a confirmation. */
function PrincipalDetail() {
  const { id = '' } = useParams();
  const session = useSession();
  const queries = useQueryClient();
  const [confirming, setConfirming] = useState<'delete' | 'disable' | null>(null);
  const [editing, setEditing] = useState(false);
  const principal = useQuery({ queryKey: ['/machine-access/principals', viewedTenant(), id], queryFn: () => api<AdminPrincipal>('GET', principalPath(id)) });
  const refresh = () => queries.invalidateQueries({ queryKey: ['/machine-access/principals'] });
  const move = useMutation({
    mutationFn: (verb: 'enable' | 'disable' | 'delete') => (verb === 'delete' ? api<void>('DELETE', principalPath(id)) : api<void>('POST', `${principalPath(id)}/${verb}`)),
    onSuccess: async () => { setConfirming(null); await refresh(); },
  });
  if (principal.error) return <Failure error={principal.error} />;
  const p = principal.data;
  if (!p) return <Text>Loading…</Text>;
  const writer = can(session, 'admin:machine-principals:write') && p.status !== 'deleted';
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>{p.displayName}</Title>
        <Badge color={STATUS_COLOR[p.status]} data-testid="principal-status">{p.status}</Badge>
      </Group>
      <Details label="Principal details" rows={[
        ['Id', p.id], ['Client id', <Code key="c">{p.clientId}</Code>], ['Type', p.principalType], ['Description', p.description ?? ''], ['Status', p.status],
        ['Token lifetime', `${p.tokenTtlSeconds} s`], ['Permissions', p.permissions.join(' ')],
        ['Tenant scopes', p.tenantScopes.map((s) => (s.tenant_id ? `${s.scope_mode} ${s.tenant_id}` : s.scope_mode)).join(', ')], ['Created', when(p.createdAt)], ['Updated', when(p.updatedAt)],
      ]} />
      <Failure error={move.error} />
      {writer && (
        <Group>
          <Button onClick={() => setEditing(!editing)} variant={editing ? 'default' : 'filled'}>{editing ? 'Close editing' : 'Edit principal'}</Button>
          {p.status === 'active'
            ? <Button variant="outline" color="red.9" onClick={() => setConfirming('disable')}>Disable principal</Button>
            : <Button variant="default" loading={move.isPending} onClick={() => move.mutate('enable')}>Enable principal</Button>}
          <Button variant="outline" color="red" onClick={() => setConfirming('delete')}>Delete principal</Button>
        </Group>
      )}
      {editing && writer && <PrincipalForm key={p.updatedAt} p={p} action="Save principal" onSaved={() => setEditing(false)} />}
      <Credentials p={p} writer={writer} />
      <Confirm opened={confirming === 'disable'} title="Disable this principal?" action="Disable" pending={move.isPending} error={move.error} onConfirm={() => move.mutate('disable')} onClose={() => setConfirming(null)}>
        <Text>{p.displayName} gets no tokens while disabled, and the tokens it holds are revoked.</Text>
      </Confirm>
      <Confirm opened={confirming === 'delete'} title="Delete this principal?" action="Delete" pending={move.isPending} error={move.error} onConfirm={() => move.mutate('delete')} onClose={() => setConfirming(null)}>
        <Text>{p.displayName}'s keys and tokens are revoked; it stays listed as deleted. This cannot be undone.</Text>
      </Confirm>
    </Stack>
  );
}

interface KeyValues { displayName: string; alg: string; jwk: string; grace: string }
const NO_KEY: KeyValues = { displayName: '', alg: 'ES256', jwk: '', grace: '86400' };

/** The principal's public keys: registered, rotated (the old one stays usable for a grace period), revoked. */
function Credentials({ p, writer }: { p: AdminPrincipal; writer: boolean }) {
  const queries = useQueryClient();
  const [v, setV] = useState<KeyValues>(NO_KEY);
  const [rotating, setRotating] = useState<AdminPrincipalCredential | null>(null);
  const [revoking, setRevoking] = useState<AdminPrincipalCredential | null>(null);
  const [revokeTokens, setRevokeTokens] = useState(false);
  const refresh = () => queries.invalidateQueries({ queryKey: ['/machine-access/principals'] });
  const add = useMutation({
    mutationFn: (b: AdminPrincipalCredentialCreate & { graceSeconds?: number }): Promise<unknown> => (rotating
      ? api<AdminPrincipalCredentialRotation>('POST', `${principalPath(p.id)}/credentials/${encodeURIComponent(rotating.id)}/rotate`, b)
      : api<AdminPrincipalCredential>('POST', `${principalPath(p.id)}/credentials`, b)),
    onSuccess: async () => { setV(NO_KEY); setRotating(null); await refresh(); },
  });
  const revoke = useMutation({
    mutationFn: (c: AdminPrincipalCredential) => api<AdminPrincipalCredential>('POST', `${principalPath(p.id)}/credentials/${encodeURIComponent(c.id)}/revoke`, { revokeTokens }),
    onSuccess: async () => { setRevoking(null); await refresh(); },
  });
  const err = fieldErrors(add.error);
  const text = (k: keyof KeyValues) => ({ value: v[k], onChange: (e: { currentTarget: { value: string } }) => setV({ ...v, [k]: e.currentTarget.value }) });
  const keyForm = (
    <form noValidate aria-label={rotating ? 'Successor key' : 'New key'} onSubmit={(e) => {
      e.preventDefault();
      add.mutate({ displayName: v.displayName, alg: v.alg as AdminPrincipalCredential['alg'], publicJwkJson: v.jwk, ...(rotating ? { graceSeconds: Number(v.grace) } : {}) });
    }}>
      <Stack maw={640} gap="xs">
        <Failure error={add.error} />
        <Group grow align="flex-start">
          <TextInput label="Key name" {...text('displayName')} error={err('displayName')} />
          <NativeSelect label="Algorithm" data={['ES256', 'PS256', 'RS256']} {...text('alg')} error={err('alg')} />
          {rotating && <TextInput label="Old key usable for (seconds)" inputMode="numeric" {...text('grace')} error={err('graceSeconds')} />}
        </Group>
        <Textarea label="Public key (JWK)" description="The public JWK as JSON; private members are refused" autosize minRows={3} styles={{ input: { fontFamily: 'monospace' } }}
          {...text('jwk')} error={err('publicJwkJson') ?? err('publicJwk') ?? err('kid')} />
        <Group><Button type="submit" loading={add.isPending}>{rotating ? 'Rotate key' : 'Add key'}</Button></Group>
      </Stack>
    </form>
  );
  return (
    <Stack gap="xs">
      <Title order={3}>Keys</Title>
      <Table aria-label="Keys">
        <Table.Thead><Table.Tr><Table.Th>Name</Table.Th><Table.Th>Key id</Table.Th><Table.Th>Algorithm</Table.Th><Table.Th>Status</Table.Th><Table.Th>Expires</Table.Th>{writer && <Table.Th>Actions</Table.Th>}</Table.Tr></Table.Thead>
        <Table.Tbody>
          {p.credentials.map((c) => (
            <Table.Tr key={c.id}>
              <Table.Td>{c.displayName}</Table.Td><Table.Td>{c.kid}</Table.Td><Table.Td>{c.alg}</Table.Td>
              <Table.Td><Badge color={STATUS_COLOR[c.status]}>{c.status}</Badge></Table.Td><Table.Td>{when(c.expiresAt)}</Table.Td>
              {writer && (
                <Table.Td>
                  {c.status === 'active' && (
                    <Group gap="xs">
                      <Button size="xs" variant="default" onClick={() => { add.reset(); setV(NO_KEY); setRotating(c); }} aria-label={`Rotate key ${c.displayName}`}>Rotate</Button>
                      <Button size="xs" variant="outline" color="red.9" onClick={() => { setRevokeTokens(false); setRevoking(c); }} aria-label={`Revoke key ${c.displayName}`}>Revoke</Button>
                    </Group>
                  )}
                </Table.Td>
              )}
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {p.credentials.length === 0 && <Text>No keys yet: the principal cannot get tokens until one is added.</Text>}
      {writer && !rotating && <><Title order={4}>Add a key</Title>{keyForm}</>}
      <Modal opened={rotating !== null} onClose={() => setRotating(null)} {...MODAL} size="lg" title={`Rotate key ${rotating?.displayName ?? ''}`}>
        <Stack><Text>The successor is registered now; the old key stays usable, as rotating, for the grace period.</Text>{keyForm}</Stack>
      </Modal>
      <Confirm opened={revoking !== null} title="Revoke this key?" action="Revoke key" pending={revoke.isPending} error={revoke.error} onConfirm={() => revoking && revoke.mutate(revoking)} onClose={() => setRevoking(null)}>
        <Text>Assertions signed with {revoking?.displayName} are refused at once.</Text>
        <Checkbox label="Also revoke every token the principal holds" checked={revokeTokens} onChange={(e) => setRevokeTokens(e.currentTarget.checked)} />
      </Confirm>
    </Stack>
  );
}

/** The machine principal screens under /principals, loaded when first opened. */
export default function PrincipalScreens() {
  return (
    <Routes>
      <Route index element={<PrincipalList />} />
      <Route path="new" element={<PrincipalCreate />} />
      <Route path=":id" element={<PrincipalDetail />} />
    </Routes>
  );
}
