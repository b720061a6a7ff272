import { Anchor, Badge, Button, Checkbox, Code, Group, NativeSelect, Stack, Table, Text, Textarea, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import type { AdminClient, AdminClientCreate, AdminClientCreated, AdminClientSecret, AdminClientUpdate } from '../../generated/types.ts';
import { api, viewedTenant } from '../api.ts';
import { can } from '../auth.ts';
import { Confirm, Details, Failure, fieldErrors, SecretOnce, words } from '../forms.tsx';
import { PagedTable } from '../paged.tsx';
import { useSession } from '../session.ts';

export function ClientList() {
  const session = useSession();
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Clients</Title>
        {can(session, 'admin:clients:write') && <Button component={Link} to="/clients/new">New client</Button>}
      </Group>
      <PagedTable<AdminClient>
        label="Clients" path="/clients" columns={['Client id', 'Name', 'Authentication', 'Grant types']}
        row={(c) => (
          <Table.Tr key={c.client_id}>
            <Table.Td><Anchor component={Link} to={`/clients/${encodeURIComponent(c.client_id)}`}>{c.client_id}</Anchor></Table.Td>
            <Table.Td>{c.name}</Table.Td>
            <Table.Td>{c.token_endpoint_auth_method}</Table.Td>
            <Table.Td>{c.grant_types.join(', ')}</Table.Td>
          </Table.Tr>
        )}
      />
    </Stack>
  );
}

/** One client: its settings, edit, enable or disable, secret rotation (shown once), delete (confirmed). */
export function ClientDetail() {
  const { id = '' } = useParams();
  const session = useSession();
  const navigate = useNavigate();
  const queries = useQueryClient();
  const [confirming, setConfirming] = useState<'delete' | 'rotate' | 'disable' | null>(null);
  const path = `/clients/${encodeURIComponent(id)}`;
  const client = useQuery({ queryKey: ['/clients', viewedTenant(), id], queryFn: () => api<AdminClient>('GET', path) });
  const remove = useMutation({
    mutationFn: () => api<void>('DELETE', path),
    onSuccess: async () => { await queries.invalidateQueries({ queryKey: ['/clients'] }); navigate('/clients'); },
  });
  const rotate = useMutation({ mutationFn: () => api<AdminClientSecret>('POST', `${path}/secret`), onSuccess: () => setConfirming(null) });
  const toggle = useMutation({
    mutationFn: (verb: 'enable' | 'disable') => api<AdminClient>('POST', `${path}/${verb}`),
    onSuccess: async () => { setConfirming(null); await queries.invalidateQueries({ queryKey: ['/clients'] }); },
  });
  if (client.error) return <Failure error={client.error} />;
  const c = client.data;
  if (!c) return <Text>Loading…</Text>;
  const writer = can(session, 'admin:clients:write');
  const secretBased = c.token_endpoint_auth_method === 'client_secret_basic' || c.token_endpoint_auth_method === 'client_secret_post';
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>{c.name}</Title>
        <Badge color={c.status === 'active' ? 'teal.9' : 'gray.7'}>{c.status}</Badge>
      </Group>
      <Details label="Client details" rows={[
        ['Client id', c.client_id], ['Name', c.name], ['Status', c.status], ['Authentication', c.token_endpoint_auth_method], ['Grant types', c.grant_types.join(', ')],
        ['Scopes', c.scopes.join(' ')], ['Redirect URIs', c.redirect_uris.join(' ')], ['Post-logout redirect URIs', c.post_logout_redirect_uris.join(' ')],
        ['Allowed audiences', c.allowed_audiences.join(' ')], ['Access token lifetime', c.access_token_ttl === null ? 'server default' : `${c.access_token_ttl} s`],
        ['Refresh token lifetime', c.refresh_token_ttl === null ? 'server default' : `${c.refresh_token_ttl} s`], ['First party', c.first_party ? 'yes' : 'no'],
      ]} />
      {rotate.data && <SecretOnce label="new secret" value={rotate.data.client_secret} testId="rotated-secret" />}
      <Failure error={toggle.error} />
      {writer && (
        <Group>
          <Button component={Link} to={`/clients/${encodeURIComponent(c.client_id)}/edit`}>Edit client</Button>
          {secretBased && <Button variant="outline" color="red.9" onClick={() => { rotate.reset(); setConfirming('rotate'); }}>Rotate secret</Button>}
          {c.status === 'active'
            ? <Button variant="outline" color="red.9" onClick={() => setConfirming('disable')}>Disable client</Button>
            : <Button variant="default" loading={toggle.isPending} onClick={() => toggle.mutate('enable')}>Enable client</Button>}
          <Button color="red" variant="outline" onClick={() => setConfirming('delete')}>Delete client</Button>
        </Group>
      )}
      <Confirm opened={confirming === 'delete'} title="Delete this client?" action="Delete" pending={remove.isPending} error={remove.error} onConfirm={() => remove.mutate()} onClose={() => setConfirming(null)}>
        <Text>{c.client_id} stops working at once: its tokens are no longer accepted. This cannot be undone.</Text>
      </Confirm>
      <Confirm opened={confirming === 'rotate'} title="Rotate the secret?" action="Rotate secret" pending={rotate.isPending} error={rotate.error} onConfirm={() => rotate.mutate()} onClose={() => setConfirming(null)}>
        <Text>The current secret of {c.client_id} stops working at once. The new one is shown once, on this page.</Text>
      </Confirm>
      <Confirm opened={confirming === 'disable'} title="Disable this client?" action="Disable" pending={toggle.isPending} error={toggle.error} onConfirm={() => toggle.mutate('disable')} onClose={() => setConfirming(null)}>
        <Text>{c.client_id} can get no tokens while disabled, and every token it holds is revoked.</Text>
      </Confirm>
    </Stack>
  );
}

type Grant = AdminClientCreate['grant_types'][number];
const GRANTS: Array<[Grant, string]> = [
  ['client_credentials', 'Client credentials'], ['authorization_code', 'Authorization code'], ['refresh_token', 'Refresh token'],
  ['urn:ietf:params:oauth:grant-type:token-exchange', 'Token exchange'], ['urn:ietf:params:oauth:grant-type:device_code', 'Device code'],
];

/** A new client; its secret is shown here once and never again (the server keeps only its hash). */
export function ClientCreate() {
  const queries = useQueryClient();
  const [name, setName] = useState('');
  const [grants, setGrants] = useState<string[]>(['client_credentials']);
  const [redirects, setRedirects] = useState('');
  const [scopes, setScopes] = useState('');
  const [auth, setAuth] = useState<AdminClientCreate['token_endpoint_auth_method']>('client_secret_basic');
  const create = useMutation({
    mutationFn: (body: AdminClientCreate) => api<AdminClientCreated>('POST', '/clients', body),
    onSuccess: () => queries.invalidateQueries({ queryKey: ['/clients'] }),
  });
  const fieldError = fieldErrors(create.error);
  const created = create.data;
  if (created) {
    return (
      <Stack>
        <Title order={2}>Client created</Title>
        <Text>Client id <Code>{created.client_id}</Code></Text>
        {created.client_secret ? <SecretOnce label="secret" value={created.client_secret} testId="client-secret" /> : <Text>This client uses no secret.</Text>}
        <Anchor component={Link} to={`/clients/${encodeURIComponent(created.client_id)}`}>Go to the client</Anchor>
      </Stack>
    );
  }
  return (
    <Stack maw={560}>
      <Title order={2}>New client</Title>
      <form noValidate onSubmit={(e) => {
        e.preventDefault();
        create.mutate({ name, token_endpoint_auth_method: auth, grant_types: grants as AdminClientCreate['grant_types'], ...(scopes ? { scopes: words(scopes) } : {}), ...(redirects ? { redirect_uris: words(redirects) } : {}) });
      }}>
        <Stack>
          <Failure error={create.error} />
          <TextInput label="Name" value={name} onChange={(e) => setName(e.currentTarget.value)} error={fieldError('name')} />
          <Checkbox.Group label="Grant types" value={grants} onChange={setGrants} error={fieldError('grant_types')}>
            <Group mt="xs">{GRANTS.map(([v, l]) => <Checkbox key={v} value={v} label={l} />)}</Group>
          </Checkbox.Group>
          <NativeSelect label="Client authentication" value={auth} onChange={(e) => setAuth(e.currentTarget.value as typeof auth)} error={fieldError('token_endpoint_auth_method')}
            data={[{ value: 'client_secret_basic', label: 'Secret (HTTP Basic)' }, { value: 'client_secret_post', label: 'Secret (form post)' }, { value: 'none', label: 'None (public client, PKCE)' }]} />
          <TextInput label="Scopes" description="Separated by spaces" value={scopes} onChange={(e) => setScopes(e.currentTarget.value)} error={fieldError('scopes')} />
          <TextInput label="Redirect URIs" description="Separated by spaces" value={redirects} onChange={(e) => setRedirects(e.currentTarget.value)} error={fieldError('redirect_uris')} />
          <Group><Button type="submit" loading={create.isPending}>Create client</Button></Group>
        </Stack>
      </form>
    </Stack>
  );
}

/** A client's settings as the update operation takes them: every field sent replaces the stored one. */
export function ClientEdit() {
  const { id = '' } = useParams();
  const client = useQuery({ queryKey: ['/clients', viewedTenant(), id], queryFn: () => api<AdminClient>('GET', `/clients/${encodeURIComponent(id)}`) });
  if (client.error) return <Failure error={client.error} />;
  if (!client.data) return <Text>Loading…</Text>;
  return <ClientForm key={client.data.updated_at} c={client.data} />;
}

function ClientForm({ c }: { c: AdminClient }) {
  const navigate = useNavigate();
  const queries = useQueryClient();
  const [v, setV] = useState({
    name: c.name, grants: c.grant_types as string[], scopes: c.scopes.join(' '), redirects: c.redirect_uris.join(' '), logout: c.post_logout_redirect_uris.join(' '),
    audiences: c.allowed_audiences.join(' '), access: c.access_token_ttl === null ? '' : String(c.access_token_ttl), refresh: c.refresh_token_ttl === null ? '' : String(c.refresh_token_ttl),
    first_party: c.first_party, can_introspect: c.can_introspect, strict_validation: c.strict_validation,
  });
  const save = useMutation({
    mutationFn: (body: AdminClientUpdate) => api<AdminClient>('PUT', `/clients/${encodeURIComponent(c.client_id)}`, body),
    onSuccess: async () => { await queries.invalidateQueries({ queryKey: ['/clients'] }); navigate(`/clients/${encodeURIComponent(c.client_id)}`); },
  });
  const err = fieldErrors(save.error);
  const text = (k: 'name' | 'scopes' | 'redirects' | 'logout' | 'audiences' | 'access' | 'refresh') => ({ value: v[k], onChange: (e: { currentTarget: { value: string } }) => setV({ ...v, [k]: e.currentTarget.value }) });
  const flag = (k: 'first_party' | 'can_introspect' | 'strict_validation') => ({ checked: v[k], onChange: (e: { currentTarget: { checked: boolean } }) => setV({ ...v, [k]: e.currentTarget.checked }) });
  // A number typed is sent as typed, so the server's range check speaks; empty means the server default.
  const ttl = (s: string) => (s.trim() === '' ? null : Number(s));
  return (
    <Stack maw={640}>
      <Title order={2}>Edit {c.name}</Title>
      <form noValidate onSubmit={(e) => {
        e.preventDefault();
        save.mutate({
          name: v.name, grant_types: v.grants as AdminClientUpdate['grant_types'] & object, scopes: words(v.scopes), redirect_uris: words(v.redirects),
          post_logout_redirect_uris: words(v.logout), allowed_audiences: words(v.audiences), access_token_ttl: ttl(v.access), refresh_token_ttl: ttl(v.refresh),
          first_party: v.first_party, can_introspect: v.can_introspect, strict_validation: v.strict_validation,
        });
      }}>
        <Stack>
          <Failure error={save.error} />
          <TextInput label="Name" {...text('name')} error={err('name')} />
          <Checkbox.Group label="Grant types" value={v.grants} onChange={(grants) => setV({ ...v, grants })} error={err('grant_types')}>
            <Group mt="xs">{GRANTS.map(([g, l]) => <Checkbox key={g} value={g} label={l} />)}</Group>
          </Checkbox.Group>
          <TextInput label="Scopes" description="Separated by spaces" {...text('scopes')} error={err('scopes')} />
          <Textarea label="Redirect URIs" description="One per line" autosize minRows={2} {...text('redirects')} error={err('redirect_uris')} />
          <Textarea label="Post-logout redirect URIs" description="One per line" autosize minRows={1} {...text('logout')} error={err('post_logout_redirect_uris')} />
          <Textarea label="Allowed audiences" description="One per line: the audiences this client may ask tokens for" autosize minRows={1} {...text('audiences')} error={err('allowed_audiences')} />
          <Group grow>
            <TextInput label="Access token lifetime (seconds)" description="Empty: the server default" inputMode="numeric" {...text('access')} error={err('access_token_ttl')} />
            <TextInput label="Refresh token lifetime (seconds)" description="Empty: the server default" inputMode="numeric" {...text('refresh')} error={err('refresh_token_ttl')} />
          </Group>
          <Checkbox label="First party (no consent screen)" {...flag('first_party')} error={err('first_party')} />
          <Checkbox label="May introspect tokens" {...flag('can_introspect')} error={err('can_introspect')} />
          <Checkbox label="Strict introspection validation" {...flag('strict_validation')} error={err('strict_validation')} />
          <Group>
            <Button type="submit" loading={save.isPending}>Save client</Button>
            <Button variant="default" component={Link} to={`/clients/${encodeURIComponent(c.client_id)}`}>Cancel</Button>
          </Group>
        </Stack>
      </form>
    </Stack>
  );
}
