import { Alert, Badge, Button, Code, Group, Modal, NativeSelect, NumberInput, PasswordInput, Stack, Table, Tabs, Text, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import type {
  AdminDestination, AdminDestinationCreate, AdminDestinationCreated, AdminDestinationMutationResult, AdminLogChunk, AdminLogQuotaEvaluationList,
  AdminLogQuotaPolicy, AdminLogQuotaPolicyCreate, AdminLogQuotaPolicyList, AdminLogUsageAggregateList,
} from '../../generated/types.ts';
import { api, ApiError, download, viewedTenant } from '../api.ts';
import { can } from '../auth.ts';
import { MODAL, PagedTable } from '../paged.tsx';
import { useSession } from '../session.ts';

const when = (ms: number | null | undefined) => (ms ? new Date(ms).toLocaleString() : '—');
const HEALTH: Record<AdminDestination['health'], string> = { unknown: 'gray.7', healthy: 'teal.9', degraded: 'yellow.9', failing: 'red.9' };
const fieldErrors = (e: unknown) => (e instanceof ApiError ? e.details : {});

/** The tenant's log archive: where it goes (destinations and their credentials), what it holds (chunks), quotas and usage. */
export function Logging() {
  const [tab, setTab] = useState<string | null>('destinations');
  return (
    <Stack>
      <Title order={2}>Logging</Title>
      <Tabs value={tab} onChange={setTab} keepMounted={false}>
        <Tabs.List>
          <Tabs.Tab value="destinations">Destinations</Tabs.Tab>
          <Tabs.Tab value="chunks">Chunks</Tabs.Tab>
          <Tabs.Tab value="quotas">Quotas</Tabs.Tab>
          <Tabs.Tab value="usage">Usage</Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="destinations" pt="md"><Destinations /></Tabs.Panel>
        <Tabs.Panel value="chunks" pt="md"><Chunks /></Tabs.Panel>
        <Tabs.Panel value="quotas" pt="md"><Quotas /></Tabs.Panel>
        <Tabs.Panel value="usage" pt="md"><Usage /></Tabs.Panel>
      </Tabs>
    </Stack>
  );
}

function Destinations() {
  const session = useSession();
  const queries = useQueryClient();
  const writer = can(session, 'admin:logging:write');
  const [rotating, setRotating] = useState<AdminDestination | null>(null);
  const [creating, setCreating] = useState(false);
  const refresh = () => queries.invalidateQueries({ queryKey: ['/destinations'] });
  const step = useMutation({
    mutationFn: ({ d, kind }: { d: AdminDestination; kind: 'activate' | 'abort' }) => api<AdminDestinationMutationResult>('POST', `/destinations/${encodeURIComponent(d.id)}/credentials/${kind}`),
    onSuccess: refresh,
  });
  return (
    <Stack>
      {writer && <Group><Button onClick={() => setCreating(true)}>New destination</Button></Group>}
      {step.error && <Alert color="red" role="alert">{step.error.message}</Alert>}
      <PagedTable<AdminDestination>
        label="Log destinations" path="/destinations" columns={['Name', 'Kind', 'Where', 'Health', 'Credential', ...(writer ? ['Rotation'] : [])]}
        row={(d) => {
          const current = d.credential_versions.find((c) => c.status === 'current');
          return (
            <Table.Tr key={d.id}>
              <Table.Td>{d.name}{d.enabled ? '' : ' (disabled)'}</Table.Td>
              <Table.Td>{d.kind === 'http_sink' ? 'HTTP sink' : 'Filesystem'}</Table.Td>
              <Table.Td>{d.url ?? d.directory}</Table.Td>
              <Table.Td><Badge color={HEALTH[d.health]}>{d.health}</Badge></Table.Td>
              <Table.Td>{d.kind === 'http_sink' ? `version ${current?.version ?? '—'}, ${d.rotation_state}` : '—'}</Table.Td>
              {writer && (
                <Table.Td>
                  {d.kind === 'http_sink' && d.rotation_state !== 'prepared' && <Button size="xs" variant="default" onClick={() => setRotating(d)} aria-label={`Rotate the credential of ${d.name}`}>Rotate credential</Button>}
                  {d.rotation_state === 'prepared' && (
                    <Group gap="xs">
                      <Button size="xs" loading={step.isPending} onClick={() => step.mutate({ d, kind: 'activate' })} aria-label={`Activate the new credential of ${d.name}`}>Activate new credential</Button>
                      <Button size="xs" variant="outline" color="red.9" loading={step.isPending} onClick={() => step.mutate({ d, kind: 'abort' })} aria-label={`Abort the rotation of ${d.name}`}>Abort</Button>
                    </Group>)}
                </Table.Td>)}
            </Table.Tr>
          );
        }}
      />
      <CreateDestination opened={creating} onClose={() => setCreating(false)} onCreated={refresh} />
      <PrepareCredential destination={rotating} onClose={() => setRotating(null)} onDone={refresh} />
    </Stack>
  );
}

function CreateDestination({ opened, onClose, onCreated }: { opened: boolean; onClose: () => void; onCreated: () => unknown }) {
  const [f, setF] = useState({ name: '', kind: 'http_sink' as AdminDestinationCreate['kind'], url: '', directory: '' });
  const create = useMutation({
    mutationFn: () => api<AdminDestinationCreated>('POST', '/destinations', { name: f.name, kind: f.kind, ...(f.kind === 'http_sink' ? { url: f.url } : f.directory ? { directory: f.directory } : {}) }),
    onSuccess: onCreated,
  });
  const close = () => { create.reset(); onClose(); };
  const err = fieldErrors(create.error);
  return (
    <Modal opened={opened} onClose={close} {...MODAL} title="New log destination">
      {create.data
        ? (
          <Stack>
            <Text>Destination {create.data.destination.name} created.</Text>
            {create.data.secret && <><Text>Its signing credential, shown only this once:</Text><Code block data-testid="destination-secret">{create.data.secret}</Code></>}
            <Group justify="flex-end"><Button onClick={close}>Done</Button></Group>
          </Stack>)
        : (
          <form noValidate onSubmit={(e) => { e.preventDefault(); create.mutate(); }}>
            <Stack>
              {create.error && <Alert color="red" role="alert">{create.error.message}</Alert>}
              <TextInput label="Name" value={f.name} onChange={(e) => setF({ ...f, name: e.currentTarget.value })} error={err.name?.join('; ')} />
              <NativeSelect label="Kind" value={f.kind} onChange={(e) => setF({ ...f, kind: e.currentTarget.value as typeof f.kind })} data={[{ value: 'http_sink', label: 'HTTP sink' }, { value: 'filesystem', label: 'Filesystem' }]} />
              {f.kind === 'http_sink'
                ? <TextInput label="URL" value={f.url} onChange={(e) => setF({ ...f, url: e.currentTarget.value })} error={err.url?.join('; ')} />
                : <TextInput label="Directory" description="Under the server's log archive directory" value={f.directory} onChange={(e) => setF({ ...f, directory: e.currentTarget.value })} error={err.directory?.join('; ')} />}
              <Group justify="flex-end"><Button variant="default" onClick={close}>Cancel</Button><Button type="submit" loading={create.isPending}>Create</Button></Group>
            </Stack>
          </form>)}
    </Modal>
  );
}

/** Rotation, step one: the next credential is stored sealed; activating it (in the list) makes it current with an overlap. */
function PrepareCredential({ destination, onClose, onDone }: { destination: AdminDestination | null; onClose: () => void; onDone: () => unknown }) {
  const [secret, setSecret] = useState('');
  const prepare = useMutation({
    mutationFn: () => api<AdminDestinationMutationResult>('POST', `/destinations/${encodeURIComponent(destination!.id)}/credentials/prepare`, { secret_value: secret }),
    onSuccess: async () => { setSecret(''); await onDone(); onClose(); },
  });
  return (
    <Modal opened={destination !== null} onClose={() => { prepare.reset(); onClose(); }} {...MODAL} title="Rotate the credential">
      <form noValidate onSubmit={(e) => { e.preventDefault(); prepare.mutate(); }}>
        <Stack>
          <Text>The new credential is stored sealed and waits; once the receiver knows it, activate it. The old one keeps working for the overlap.</Text>
          {prepare.error && <Alert color="red" role="alert">{prepare.error.message}</Alert>}
          <PasswordInput label="New credential" value={secret} onChange={(e) => setSecret(e.currentTarget.value)} error={fieldErrors(prepare.error).secret_value?.join('; ')} />
          <Group justify="flex-end"><Button variant="default" onClick={onClose}>Cancel</Button><Button type="submit" loading={prepare.isPending}>Prepare</Button></Group>
        </Stack>
      </form>
    </Modal>
  );
}

function Chunks() {
  const [error, setError] = useState<string | null>(null);
  const save = async (c: AdminLogChunk) => {
    setError(null);
    try {
      const blob = await download('GET', `/admin-logging/chunks/${encodeURIComponent(c.id)}/download`);
      const a = document.createElement('a');
      a.href = URL.createObjectURL(blob);
      a.download = `${c.log_type}-${c.id}.ndjson`;
      a.click();
      setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
    } catch (err) { setError(err instanceof Error ? err.message : String(err)); }
  };
  return (
    <Stack>
      {error && <Alert color="red" role="alert">{error}</Alert>}
      <PagedTable<AdminLogChunk>
        label="Log chunks" path="/admin-logging/chunks" columns={['Hour', 'Log', 'Records', 'Status', 'Download']}
        row={(c) => (
          <Table.Tr key={c.id}>
            <Table.Td>{when(c.hour_start)}</Table.Td>
            <Table.Td>{c.log_type} ({c.plane})</Table.Td>
            <Table.Td>{c.record_count.toLocaleString()}</Table.Td>
            <Table.Td><Badge color={c.status === 'committed' ? 'teal.9' : 'gray.7'}>{c.status}</Badge></Table.Td>
            <Table.Td>{c.status === 'committed' && <Button size="xs" variant="default" onClick={() => { void save(c); }} aria-label={`Download chunk ${c.id}`}>Download</Button>}</Table.Td>
          </Table.Tr>
        )}
      />
    </Stack>
  );
}

const METRICS = ['records', 'bytes', 'chunks', 'dropped_records'] as const;
const WINDOWS = ['minute', 'hour', 'day', 'month'] as const;

function Quotas() {
  const session = useSession();
  const queries = useQueryClient();
  const tenant = viewedTenant();
  const [page, setPage] = useState(1);
  const policies = useQuery({ queryKey: ['/logging-policies/quotas', tenant], queryFn: () => api<AdminLogQuotaPolicyList>('GET', '/logging-policies/quotas') });
  const evaluations = useQuery({ queryKey: ['/logging-policies/quota-evaluations', tenant, page], queryFn: () => api<AdminLogQuotaEvaluationList>('GET', `/logging-policies/quota-evaluations?limit=20&page=${page}`) });
  const [f, setF] = useState<AdminLogQuotaPolicyCreate>({ metric_name: 'records', window_kind: 'hour', hard_limit: 100000, enforcement_mode: 'notify' });
  const create = useMutation({
    mutationFn: () => api<AdminLogQuotaPolicy>('POST', '/logging-policies/quotas', f),
    onSuccess: () => queries.invalidateQueries({ queryKey: ['/logging-policies/quotas'] }),
  });
  const error = policies.error ?? evaluations.error;
  if (error) return <Alert color="red" role="alert">{error.message}</Alert>;
  return (
    <Stack>
      <Title order={3}>Quota policies</Title>
      <Table aria-label="Quota policies">
        <Table.Thead><Table.Tr><Table.Th>Name</Table.Th><Table.Th>Measures</Table.Th><Table.Th>Limits</Table.Th><Table.Th>Enforcement</Table.Th><Table.Th>Active</Table.Th></Table.Tr></Table.Thead>
        <Table.Tbody>
          {policies.data?.items.map((p) => (
            <Table.Tr key={p.id}>
              <Table.Td>{p.name ?? p.id}</Table.Td>
              <Table.Td>{p.metric_name} per {p.window_kind}{p.log_type ? ` of ${p.log_type}` : ''}</Table.Td>
              <Table.Td>{p.soft_limit !== null ? `soft ${p.soft_limit.toLocaleString()}, ` : ''}hard {p.hard_limit.toLocaleString()}</Table.Td>
              <Table.Td>{p.enforcement_mode.replace(/_/g, ' ')}</Table.Td>
              <Table.Td>{p.active ? 'yes' : 'no'}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {policies.data?.items.length === 0 && <Text>No quota policies yet.</Text>}
      {can(session, 'admin:logging:write') && (
        <form aria-label="New quota policy" noValidate onSubmit={(e) => { e.preventDefault(); create.mutate(); }}>
          <Group align="flex-end">
            <NativeSelect label="Metric" value={f.metric_name} onChange={(e) => setF({ ...f, metric_name: e.currentTarget.value as typeof f.metric_name })} data={[...METRICS]} />
            <NativeSelect label="Window" value={f.window_kind} onChange={(e) => setF({ ...f, window_kind: e.currentTarget.value as typeof f.window_kind })} data={[...WINDOWS]} />
            <NumberInput label="Hard limit" value={f.hard_limit} min={1} onChange={(v) => setF({ ...f, hard_limit: Number(v) })} error={fieldErrors(create.error).hard_limit?.join('; ')} />
            <NativeSelect label="Enforcement" value={f.enforcement_mode} onChange={(e) => setF({ ...f, enforcement_mode: e.currentTarget.value as typeof f.enforcement_mode })}
              data={['observe', 'notify', 'throttle_non_critical', 'block_non_critical'].map((m) => ({ value: m, label: m.replace(/_/g, ' ') }))} />
            <Button type="submit" loading={create.isPending}>Add policy</Button>
          </Group>
          {create.error && <Alert mt="xs" color="red" role="alert">{create.error.message}</Alert>}
        </form>)}
      <Title order={3}>Evaluations</Title>
      <Table aria-label="Quota evaluations">
        <Table.Thead><Table.Tr><Table.Th>Window</Table.Th><Table.Th>Metric</Table.Th><Table.Th>Value</Table.Th><Table.Th>State</Table.Th><Table.Th>Action</Table.Th></Table.Tr></Table.Thead>
        <Table.Tbody>
          {evaluations.data?.items.map((e) => (
            <Table.Tr key={e.id}>
              <Table.Td>{when(e.window_start_at)}</Table.Td>
              <Table.Td>{e.metric_name}{e.log_type ? ` of ${e.log_type}` : ''}</Table.Td>
              <Table.Td>{e.value.toLocaleString()} of {e.hard_limit.toLocaleString()}</Table.Td>
              <Table.Td><Badge color={e.state === 'ok' ? 'teal.9' : e.state === 'warning' ? 'yellow.9' : 'red.9'}>{e.state.replace('_', ' ')}</Badge></Table.Td>
              <Table.Td>{e.enforcement_action.replace(/_/g, ' ')}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {evaluations.data?.items.length === 0 && <Text>No evaluations yet.</Text>}
      <Group>
        <Button variant="default" size="xs" disabled={page < 2} onClick={() => setPage(page - 1)}>Previous page</Button>
        <Button variant="default" size="xs" disabled={!evaluations.data?.page?.has_more} onClick={() => setPage(page + 1)}>Next page</Button>
      </Group>
    </Stack>
  );
}

const COLOURS = ['#1864ab', '#2b8a3e', '#862e9c', '#c92a2a', '#495057', '#e8590c'];

/** What the tenant logged per window, a bar per log type (the rollup the quotas are evaluated on). */
function Usage() {
  const [metric, setMetric] = useState<(typeof METRICS)[number]>('records');
  const [windowKind, setWindowKind] = useState<(typeof WINDOWS)[number]>('hour');
  const usage = useQuery({
    queryKey: ['/logging-policies/usage-aggregates', viewedTenant(), metric, windowKind],
    queryFn: () => api<AdminLogUsageAggregateList>('GET', `/logging-policies/usage-aggregates?metric_name=${metric}&window_kind=${windowKind}&limit=500`),
  });
  const types = [...new Set(usage.data?.items.map((a) => a.log_type) ?? [])].sort();
  const byWindow = new Map<number, Record<string, number | string>>();
  for (const a of usage.data?.items ?? []) {
    const row = byWindow.get(a.window_start_at) ?? { window: new Date(a.window_start_at).toLocaleString() };
    row[a.log_type] = Number(row[a.log_type] ?? 0) + a.value;
    byWindow.set(a.window_start_at, row);
  }
  const data = [...byWindow.entries()].sort(([a], [b]) => a - b).map(([, r]) => r);
  return (
    <Stack>
      <Group>
        <NativeSelect label="Metric" value={metric} onChange={(e) => setMetric(e.currentTarget.value as typeof metric)} data={[...METRICS]} />
        <NativeSelect label="Window" value={windowKind} onChange={(e) => setWindowKind(e.currentTarget.value as typeof windowKind)} data={[...WINDOWS]} />
      </Group>
      {usage.error && <Alert color="red" role="alert">{usage.error.message}</Alert>}
      {usage.data && data.length === 0 && <Text>No usage recorded for these windows yet.</Text>}
      {data.length > 0 && (
        <figure style={{ margin: 0, width: '100%', height: 280 }} aria-label={`Logged ${metric} per ${windowKind}, by log type`} role="img">
          <ResponsiveContainer>
            <BarChart data={data}>
              <CartesianGrid strokeDasharray="3 3" />
              <XAxis dataKey="window" minTickGap={40} />
              <YAxis width={80} />
              <Tooltip />
              <Legend />
              {types.map((t, i) => <Bar key={t} dataKey={t} stackId="a" fill={COLOURS[i % COLOURS.length]} isAnimationActive={false} />)}
            </BarChart>
          </ResponsiveContainer>
        </figure>)}
    </Stack>
  );
}
