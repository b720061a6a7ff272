import { Anchor, Badge, Button, Checkbox, Code, Group, Modal, NativeSelect, SimpleGrid, Stack, Table, Text, Textarea, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, Route, Routes, useNavigate, useParams } from 'react-router';
import type {
  AdminWebhook, AdminWebhookCreate, AdminWebhookCreated, AdminWebhookDelivery, AdminWebhookEventName, AdminWebhookListItem,
  AdminWebhookRetryResult, AdminWebhookTestResult, AdminWebhookUpdate,
} from '../../generated/types.ts';
import { api, viewedTenant } from '../api.ts';
import { can } from '../auth.ts';
import { Confirm, Details, Failure, fieldErrors, SecretOnce } from '../forms.tsx';
import { MODAL, PagedTable } from '../paged.tsx';
import { useSession } from '../session.ts';

/** Every event a webhook can subscribe to (the schema's enum; a name dropped there breaks this build). */
const EVENTS: AdminWebhookEventName[] = [
  'user.created', 'user.updated', 'user.deleted', 'user.suspended', 'user.unsuspended', 'auth.login', 'auth.login_failed', 'auth.logout',
  'auth.password_changed', 'auth.mfa_enabled', 'security.alert', 'security.suspicious_activity', 'role.assigned', 'role.unassigned',
  'policy.created', 'policy.updated', 'logging.quota_exceeded', 'control_plane.lookup_hmac_rotation',
];
const DELIVERY_COLOR = { success: 'teal.9', failed: 'red.9', pending: 'gray.7' } as const;
/** Webhook timestamps are epoch seconds (spec, Conventions). */
const at = (s: number | null | undefined) => (s === null || s === undefined ? '—' : new Date(s * 1000).toLocaleString());
const hookPath = (id: string) => `/webhooks/${encodeURIComponent(id)}`;

export function WebhookList() {
  const session = useSession();
  const [status, setStatus] = useState('');
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Webhooks</Title>
        {can(session, 'admin:webhooks:write') && <Button component={Link} to="/webhooks/new">New webhook</Button>}
      </Group>
      <NativeSelect label="Status" w={200} value={status} onChange={(e) => setStatus(e.currentTarget.value)}
        data={[{ value: '', label: 'Any' }, { value: 'active', label: 'Active' }, { value: 'inactive', label: 'Inactive' }]} />
      <PagedTable<AdminWebhookListItem>
        key={status} label="Webhooks" path="/webhooks" params={status ? { status } : {}} columns={['Name', 'URL', 'Events', 'Status', 'Success rate', 'Last triggered']}
        row={(w) => (
          <Table.Tr key={w.id}>
            <Table.Td><Anchor component={Link} to={hookPath(w.id)}>{w.name}</Anchor></Table.Td>
            <Table.Td>{w.url}</Table.Td>
            <Table.Td>{w.events.join(', ')}</Table.Td>
            <Table.Td><Badge color={w.status === 'active' ? 'teal.9' : 'gray.7'}>{w.status}</Badge></Table.Td>
            <Table.Td>{`${Math.round(w.success_rate)} %`}</Table.Td>
            <Table.Td>{at(w.last_triggered_at)}</Table.Td>
          </Table.Tr>
        )}
      />
    </Stack>
  );
}

interface FormValues { name: string; description: string; url: string; events: string[]; headers: string; timeout: string; max_retries: string; retry_interval: string }

/** The fields of create and update, as typed (numbers are sent as typed, so the server's bounds speak at their fields). */
function bodyOf(v: FormValues): AdminWebhookCreate {
  const headers: Record<string, string> = {};
  for (const line of v.headers.split('\n')) {
    const i = line.indexOf(':');
    if (line.trim()) headers[(i < 0 ? line : line.slice(0, i)).trim()] = i < 0 ? '' : line.slice(i + 1).trim();
  }
  const num = (s: string) => (s.trim() === '' ? undefined : Number(s));
  const retry = { ...(num(v.max_retries) !== undefined ? { max_retries: num(v.max_retries)! } : {}), ...(num(v.retry_interval) !== undefined ? { retry_interval: num(v.retry_interval)! } : {}) };
  return {
    name: v.name, url: v.url, events: v.events as AdminWebhookCreate['events'], headers,
    ...(v.description ? { description: v.description } : {}), ...(num(v.timeout) !== undefined ? { timeout: num(v.timeout)! } : {}),
    ...(Object.keys(retry).length ? { retry_policy: retry } : {}),
  };
}

function WebhookForm({ initial, submit, pending, error, action }: { initial: FormValues; submit: (b: AdminWebhookCreate) => void; pending: boolean; error: unknown; action: string }) {
  const [v, setV] = useState(initial);
  const err = fieldErrors(error);
  const text = (k: Exclude<keyof FormValues, 'events'>) => ({ value: v[k], onChange: (e: { currentTarget: { value: string } }) => setV({ ...v, [k]: e.currentTarget.value }) });
  return (
    <form noValidate onSubmit={(e) => { e.preventDefault(); submit(bodyOf(v)); }}>
      <Stack maw={720}>
        <Failure error={error} />
        <TextInput label="Name" {...text('name')} error={err('name')} />
        <TextInput label="URL" description="http or https address receiving the deliveries" {...text('url')} error={err('url')} />
        <TextInput label="Description" {...text('description')} error={err('description')} />
        <Checkbox.Group label="Events" value={v.events} onChange={(events) => setV({ ...v, events })} error={err('events') ?? err('filters')}>
          <SimpleGrid cols={3} mt="xs" spacing="xs">{EVENTS.map((e) => <Checkbox key={e} value={e} label={e} />)}</SimpleGrid>
        </Checkbox.Group>
        <Textarea label="Custom headers" description="One per line, as Name: value" autosize minRows={2} {...text('headers')} error={err('headers')} />
        <Group grow align="flex-start">
          <TextInput label="Timeout (seconds)" inputMode="numeric" {...text('timeout')} error={err('timeout')} />
          <TextInput label="Automatic retries" inputMode="numeric" {...text('max_retries')} error={err('retry_policy.max_retries')} />
          <TextInput label="First retry after (seconds)" inputMode="numeric" {...text('retry_interval')} error={err('retry_policy.retry_interval')} />
        </Group>
        <Group><Button type="submit" loading={pending}>{action}</Button></Group>
      </Stack>
    </form>
  );
}

/** A new webhook; the signing secret the server generates is shown once. */
export function WebhookCreate() {
  const queries = useQueryClient();
  const create = useMutation({
    mutationFn: (b: AdminWebhookCreate) => api<AdminWebhookCreated & { secret?: string }>('POST', '/webhooks', b),
    onSuccess: () => queries.invalidateQueries({ queryKey: ['/webhooks'] }),
  });
  const made = create.data;
  if (made) {
    return (
      <Stack>
        <Title order={2}>Webhook created</Title>
        <Text>Webhook <Code>{made.id}</Code> sends {made.events.join(', ')} to {made.url}.</Text>
        {made.secret && <SecretOnce label="signing secret" value={made.secret} testId="webhook-secret" />}
        <Anchor component={Link} to={hookPath(made.id)}>Go to the webhook</Anchor>
      </Stack>
    );
  }
  return (
    <Stack>
      <Title order={2}>New webhook</Title>
      <WebhookForm initial={{ name: '', description: '', url: '', events: [], headers: '', timeout: '', max_retries: '', retry_interval: '' }}
        submit={(b) => create.mutate(b)} pending={create.isPending} error={create.error} action="Create webhook" />
    </Stack>
  );
}

export function WebhookEdit() {
  const { id = '' } = useParams();
  const navigate = useNavigate();
  const queries = useQueryClient();
  const hook = useQuery({ queryKey: ['/webhooks', viewedTenant(), id], queryFn: () => api<AdminWebhook>('GET', hookPath(id)) });
  const save = useMutation({
    mutationFn: (b: AdminWebhookUpdate) => api<AdminWebhook>('PUT', hookPath(id), b),
    onSuccess: async () => { await queries.invalidateQueries({ queryKey: ['/webhooks'] }); navigate(hookPath(id)); },
  });
  if (hook.error) return <Failure error={hook.error} />;
  const w = hook.data;
  if (!w) return <Text>Loading…</Text>;
  return (
    <Stack>
      <Title order={2}>Edit {w.name}</Title>
      <WebhookForm
        initial={{
          name: w.name, description: w.description ?? '', url: w.url, events: w.events, headers: Object.entries(w.headers).map(([k, val]) => `${k}: ${val}`).join('\n'),
          timeout: String(w.timeout), max_retries: String(w.retry_policy.max_retries), retry_interval: String(w.retry_policy.retry_interval),
        }}
        submit={(b) => save.mutate(b)} pending={save.isPending} error={save.error} action="Save webhook" />
    </Stack>
  );
}

/** A signing secret made in the browser (its CSPRNG), in the server's own form; the server only ever stores it sealed. */
function newSigningSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return `whsec_${btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')}`;
}

/** One webhook: its figures, a test send, the delivery log with retries, the signing secret's rotation, activation and delete. */
export function WebhookDetail() {
  const { id = '' } = useParams();
  const session = useSession();
  const navigate = useNavigate();
  const queries = useQueryClient();
  const [confirming, setConfirming] = useState<'delete' | 'rotate' | null>(null);
  const [testEvent, setTestEvent] = useState('');
  const [rotated, setRotated] = useState<string | null>(null);
  const [attemptsOf, setAttemptsOf] = useState<string | null>(null);
  const [status, setStatus] = useState('');
  const hook = useQuery({ queryKey: ['/webhooks', viewedTenant(), id], queryFn: () => api<AdminWebhook>('GET', hookPath(id)) });
  const refresh = () => queries.invalidateQueries({ queryKey: ['/webhooks'] });
  // A test send is recorded in the delivery log and the counters: both are read again at once.
  const test = useMutation({ mutationFn: () => api<AdminWebhookTestResult>('POST', `${hookPath(id)}/test`, testEvent ? { event: testEvent } : {}), onSuccess: refresh });
  const update = useMutation({ mutationFn: (b: AdminWebhookUpdate) => api<AdminWebhook>('PUT', hookPath(id), b), onSuccess: refresh });
  const rotate = useMutation({
    mutationFn: async () => { const secret = newSigningSecret(); await api<AdminWebhook>('PUT', hookPath(id), { secret }); return secret; },
    onSuccess: (secret) => { setRotated(secret); setConfirming(null); },
  });
  const remove = useMutation({ mutationFn: () => api<void>('DELETE', hookPath(id)), onSuccess: async () => { await refresh(); navigate('/webhooks'); } });
  const retry = useMutation({ mutationFn: (deliveryId: string) => api<AdminWebhookRetryResult>('POST', `${hookPath(id)}/deliveries/${encodeURIComponent(deliveryId)}/retry`), onSuccess: refresh });
  if (hook.error) return <Failure error={hook.error} />;
  const w = hook.data;
  if (!w) return <Text>Loading…</Text>;
  const writer = can(session, 'admin:webhooks:write');
  const t = test.data;
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>{w.name}</Title>
        <Badge color={w.status === 'active' ? 'teal.9' : 'gray.7'} data-testid="webhook-status">{w.status}</Badge>
      </Group>
      <Details label="Webhook details" rows={[
        ['Id', w.id], ['URL', w.url], ['Description', w.description ?? ''], ['Events', w.events.join(', ')], ['Status', w.status],
        ['Custom headers', Object.keys(w.headers).join(', ')], ['Timeout', `${w.timeout} s`],
        ['Retries', `${w.retry_policy.max_retries}, the first after ${w.retry_policy.retry_interval} s`],
        ['Deliveries', `${w.total_deliveries} (${w.failed_deliveries} failed, ${Math.round(w.success_rate)} % succeeded)`],
        ['Last success', at(w.last_success_at)], ['Last failure', at(w.last_failure_at)],
      ]} />
      {rotated && <SecretOnce label="new signing secret" value={rotated} testId="rotated-signing-secret" />}
      <Failure error={update.error} />
      {writer && (
        <Group>
          <Button component={Link} to={`${hookPath(w.id)}/edit`}>Edit webhook</Button>
          {w.status === 'active'
            ? <Button variant="default" loading={update.isPending} onClick={() => update.mutate({ status: 'inactive' })}>Deactivate</Button>
            : <Button variant="default" loading={update.isPending} onClick={() => update.mutate({ status: 'active' })}>Activate</Button>}
          <Button variant="outline" color="red.9" onClick={() => { setRotated(null); setConfirming('rotate'); }}>Rotate signing secret</Button>
          <Button variant="outline" color="red" onClick={() => setConfirming('delete')}>Delete webhook</Button>
        </Group>
      )}
      {writer && (
        <form aria-label="Test send" onSubmit={(e) => { e.preventDefault(); test.mutate(); }}>
          <Stack gap="xs">
            <Title order={3}>Test send</Title>
            <Group align="flex-end">
              <NativeSelect label="Event to send" value={testEvent} onChange={(e) => setTestEvent(e.currentTarget.value)} data={[{ value: '', label: 'webhook.test (a plain test)' }, ...EVENTS]} />
              <Button type="submit" variant="default" loading={test.isPending}>Send a test</Button>
            </Group>
            <Failure error={test.error} />
            {t && (
              <Text role="status" data-testid="test-result">
                {t.success ? 'Delivered' : 'Not delivered'}: {t.status_code !== undefined ? `answered ${t.status_code}` : t.error} in {t.duration_ms} ms
                {t.error && t.status_code !== undefined ? ` (${t.error})` : ''}
              </Text>
            )}
          </Stack>
        </form>
      )}
      <Title order={3}>Delivery log</Title>
      <Failure error={retry.error} />
      <NativeSelect label="Delivery status" w={200} value={status} onChange={(e) => setStatus(e.currentTarget.value)}
        data={[{ value: '', label: 'Any' }, { value: 'success', label: 'Succeeded' }, { value: 'failed', label: 'Failed' }, { value: 'pending', label: 'Pending' }]} />
      <PagedTable<AdminWebhookDelivery>
        key={status} label="Delivery log" path={`${hookPath(w.id)}/deliveries`} params={status ? { status } : {}} refetchMs={2000}
        columns={['Event', 'Status', 'Attempt', 'Answer', 'Triggered', ...(writer ? ['Actions'] : [])]}
        row={(d) => (
          <Table.Tr key={d.id}>
            <Table.Td><Anchor component="button" type="button" onClick={() => setAttemptsOf(d.id)} aria-label={`Attempts of ${d.event} delivery ${d.id}`}>{d.event}</Anchor></Table.Td>
            <Table.Td><Badge color={DELIVERY_COLOR[d.status]}>{d.status}</Badge></Table.Td>
            <Table.Td>{d.attempt}</Table.Td>
            <Table.Td>{d.response_status ?? d.error ?? '—'}</Table.Td>
            <Table.Td>{at(d.triggered_at)}</Table.Td>
            {writer && (
              <Table.Td>
                {d.status === 'failed' && <Button size="xs" variant="default" loading={retry.isPending && retry.variables === d.id} onClick={() => retry.mutate(d.id)} aria-label={`Retry delivery ${d.id}`}>Retry</Button>}
              </Table.Td>
            )}
          </Table.Tr>
        )}
      />
      <Attempts webhookId={w.id} deliveryId={attemptsOf} onClose={() => setAttemptsOf(null)} />
      <Confirm opened={confirming === 'rotate'} title="Rotate the signing secret?" action="Rotate secret" pending={rotate.isPending} error={rotate.error} onConfirm={() => rotate.mutate()} onClose={() => setConfirming(null)}>
        <Text>Deliveries are signed with a new secret from now on; receivers checking the old one will refuse them until they have the new one. It is shown once, on this page.</Text>
      </Confirm>
      <Confirm opened={confirming === 'delete'} title="Delete this webhook?" action="Delete" pending={remove.isPending} error={remove.error} onConfirm={() => remove.mutate()} onClose={() => setConfirming(null)}>
        <Text>{w.name} and its delivery history are deleted; nothing more is sent to {w.url}. This cannot be undone.</Text>
      </Confirm>
    </Stack>
  );
}

/** Every attempt of one delivery, in a dialog. */
function Attempts({ webhookId, deliveryId, onClose }: { webhookId: string; deliveryId: string | null; onClose: () => void }) {
  const one = useQuery({
    queryKey: ['/webhooks', viewedTenant(), webhookId, 'delivery', deliveryId],
    queryFn: () => api<AdminWebhookDelivery>('GET', `${hookPath(webhookId)}/deliveries/${encodeURIComponent(deliveryId!)}`),
    enabled: deliveryId !== null,
  });
  const d = one.data;
  return (
    <Modal opened={deliveryId !== null} onClose={onClose} {...MODAL} size="lg" title="Delivery attempts">
      <Stack>
        <Failure error={one.error} />
        {d && <Text>{d.event}, delivery {d.id}: {d.status}</Text>}
        <Table aria-label="Attempts">
          <Table.Thead><Table.Tr><Table.Th>Attempt</Table.Th><Table.Th>Result</Table.Th><Table.Th>Answer</Table.Th><Table.Th>Time (ms)</Table.Th><Table.Th>When</Table.Th></Table.Tr></Table.Thead>
          <Table.Tbody>
            {(d?.attempts ?? []).map((a) => (
              <Table.Tr key={a.attempt}>
                <Table.Td>{a.attempt}</Table.Td><Table.Td>{a.status}</Table.Td><Table.Td>{a.response_status ?? a.error ?? '—'}</Table.Td>
                <Table.Td>{a.response_time_ms}</Table.Td><Table.Td>{at(a.triggered_at)}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Stack>
    </Modal>
  );
}

/** The webhook screens under /webhooks, loaded when first opened. */
export default function WebhookScreens() {
  return (
    <Routes>
      <Route index element={<WebhookList />} />
      <Route path="new" element={<WebhookCreate />} />
      <Route path=":id" element={<WebhookDetail />} />
      <Route path=":id/edit" element={<WebhookEdit />} />
    </Routes>
  );
}
