import { Alert, Anchor, Button, Checkbox, Code, CopyButton, Group, Modal, NativeSelect, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import type { AdminClient, AdminClientCreate, AdminClientCreated } from '../../generated/types.ts';
import { api, ApiError, viewedTenant } from '../api.ts';
import { can } from '../auth.ts';
import { MODAL, PagedTable } from '../paged.tsx';
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

export function ClientDetail() {
  const { id = '' } = useParams();
  const session = useSession();
  const navigate = useNavigate();
  const queries = useQueryClient();
  const [confirming, setConfirming] = useState(false);
  const client = useQuery({ queryKey: ['/clients', viewedTenant(), id], queryFn: () => api<AdminClient>('GET', `/clients/${encodeURIComponent(id)}`) });
  const remove = useMutation({
    mutationFn: () => api<void>('DELETE', `/clients/${encodeURIComponent(id)}`),
    onSuccess: async () => { await queries.invalidateQueries({ queryKey: ['/clients'] }); navigate('/clients'); },
  });
  if (client.error) return <Alert color="red" role="alert">{client.error.message}</Alert>;
  const c = client.data;
  if (!c) return <Text>Loading…</Text>;
  const rows: Array<[string, string]> = [
    ['Client id', c.client_id], ['Name', c.name], ['Authentication', c.token_endpoint_auth_method], ['Grant types', c.grant_types.join(', ')],
    ['Scopes', c.scopes.join(' ')], ['Redirect URIs', c.redirect_uris.join(' ')], ['Allowed audiences', c.allowed_audiences.join(' ')],
    ['First party', c.first_party ? 'yes' : 'no'],
  ];
  return (
    <Stack>
      <Title order={2}>{c.name}</Title>
      <Table aria-label="Client details"><Table.Tbody>{rows.map(([k, v]) => <Table.Tr key={k}><Table.Th scope="row">{k}</Table.Th><Table.Td>{v || '—'}</Table.Td></Table.Tr>)}</Table.Tbody></Table>
      {can(session, 'admin:clients:write') && <Group><Button color="red" variant="outline" onClick={() => setConfirming(true)}>Delete client</Button></Group>}
      <Modal opened={confirming} onClose={() => setConfirming(false)} {...MODAL} title="Delete this client?">
        <Stack>
          <Text>{c.client_id} stops working at once: its tokens are no longer accepted. This cannot be undone.</Text>
          {remove.error && <Alert color="red" role="alert">{remove.error.message}</Alert>}
          <Group justify="flex-end">
            <Button variant="default" onClick={() => setConfirming(false)}>Cancel</Button>
            <Button color="red" loading={remove.isPending} onClick={() => remove.mutate()}>Delete</Button>
          </Group>
        </Stack>
      </Modal>
    </Stack>
  );
}

const GRANTS: Array<[AdminClientCreate['grant_types'][number], string]> = [
  ['client_credentials', 'Client credentials'], ['authorization_code', 'Authorization code'], ['refresh_token', 'Refresh token'],
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
  const details = create.error instanceof ApiError ? create.error.details : {};
  const fieldError = (f: string) => Object.entries(details).filter(([k]) => k === f || k.startsWith(`${f}.`)).flatMap(([, v]) => v).join('; ') || undefined;
  const created = create.data;
  if (created) {
    return (
      <Stack>
        <Title order={2}>Client created</Title>
        <Text>Client id <Code>{created.client_id}</Code></Text>
        {created.client_secret
          ? (
            <Alert color="dark" variant="outline" title="Copy the secret now">
              <Stack gap="xs">
                <Text>It is shown only this once: the server keeps no copy it could show again.</Text>
                <Code block data-testid="client-secret">{created.client_secret}</Code>
                <CopyButton value={created.client_secret}>{({ copied, copy }) => <Button size="xs" onClick={copy}>{copied ? 'Copied' : 'Copy secret'}</Button>}</CopyButton>
              </Stack>
            </Alert>)
          : <Text>This client uses no secret.</Text>}
        <Anchor component={Link} to={`/clients/${encodeURIComponent(created.client_id)}`}>Go to the client</Anchor>
      </Stack>
    );
  }
  const list = (s: string) => s.split(/\s+/).filter(Boolean);
  return (
    <Stack maw={560}>
      <Title order={2}>New client</Title>
      <form noValidate onSubmit={(e) => {
        e.preventDefault();
        create.mutate({ name, token_endpoint_auth_method: auth, grant_types: grants as AdminClientCreate['grant_types'], ...(scopes ? { scopes: list(scopes) } : {}), ...(redirects ? { redirect_uris: list(redirects) } : {}) });
      }}>
        <Stack>
          {create.error && <Alert color="red" role="alert">{create.error.message}</Alert>}
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
