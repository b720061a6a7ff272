import { Anchor, Badge, Button, Checkbox, Group, NativeSelect, Stack, Table, Text, Textarea, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, Route, Routes, useNavigate, useParams } from 'react-router';
import type { AdminPolicy, AdminPolicyCreate } from '../../generated/types.ts';
import { api, viewedTenant } from '../api.ts';
import { can } from '../auth.ts';
import { Confirm, Details, Failure, fieldErrors, when, words } from '../forms.tsx';
import { PagedTable } from '../paged.tsx';
import { useSession } from '../session.ts';

const policyPath = (id: string) => `/admin-policies/${encodeURIComponent(id)}`;

function PolicyList() {
  const session = useSession();
  const [effect, setEffect] = useState('');
  const [enabled, setEnabled] = useState('');
  const params = { ...(effect ? { effect } : {}), ...(enabled ? { enabled } : {}) };
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Admin policies</Title>
        {can(session, 'admin:policies:write') && <Button component={Link} to="/policies/new">New policy</Button>}
      </Group>
      <Group>
        <NativeSelect label="Effect" value={effect} onChange={(e) => setEffect(e.currentTarget.value)} data={[{ value: '', label: 'Any' }, { value: 'allow', label: 'Allow' }, { value: 'deny', label: 'Deny' }]} />
        <NativeSelect label="Active" value={enabled} onChange={(e) => setEnabled(e.currentTarget.value)} data={[{ value: '', label: 'Any' }, { value: 'true', label: 'Active' }, { value: 'false', label: 'Inactive' }]} />
      </Group>
      <PagedTable<AdminPolicy>
        key={JSON.stringify(params)} label="Admin policies" path="/admin-policies" params={params} columns={['Name', 'Effect', 'Priority', 'Resources', 'Actions', 'Active']}
        row={(p) => (
          <Table.Tr key={p.id}>
            <Table.Td><Anchor component={Link} to={`/policies/${encodeURIComponent(p.id)}`}>{p.name}</Anchor></Table.Td>
            <Table.Td><Badge color={p.effect === 'allow' ? 'teal.9' : 'red.9'}>{p.effect}</Badge></Table.Td>
            <Table.Td>{p.priority}</Table.Td>
            <Table.Td>{p.resource_types.join(', ')}</Table.Td>
            <Table.Td>{p.actions.join(', ')}</Table.Td>
            <Table.Td>{p.enabled ? 'yes' : 'no'}</Table.Td>
          </Table.Tr>
        )}
      />
    </Stack>
  );
}

/** Everything a policy holds; its conditions as the API's JSON list (ip_range, time_window, auth_strength). */
function PolicyForm({ policy, action, onSaved }: { policy?: AdminPolicy; action: string; onSaved: (p: AdminPolicy) => void }) {
  const queries = useQueryClient();
  const [v, setV] = useState({
    name: policy?.name ?? '', description: policy?.description ?? '', priority: String(policy?.priority ?? 0), effect: policy?.effect ?? 'deny',
    resources: (policy?.resource_types ?? []).join(' '), actions: (policy?.actions ?? []).join(' '), enabled: policy?.enabled ?? false,
    conditions: JSON.stringify(policy?.conditions ?? [], null, 2),
  });
  const [badJson, setBadJson] = useState<string | undefined>();
  const save = useMutation({
    mutationFn: (b: AdminPolicyCreate) => api<AdminPolicy>(policy ? 'PUT' : 'POST', policy ? policyPath(policy.id) : '/admin-policies', b),
    onSuccess: async (p) => { await queries.invalidateQueries({ queryKey: ['/admin-policies'] }); onSaved(p); },
  });
  const err = fieldErrors(save.error);
  const text = (k: 'name' | 'description' | 'priority' | 'resources' | 'actions' | 'conditions') => ({ value: v[k], onChange: (e: { currentTarget: { value: string } }) => setV({ ...v, [k]: e.currentTarget.value }) });
  return (
    <form noValidate onSubmit={(e) => {
      e.preventDefault();
      let conditions: AdminPolicyCreate['conditions'];
      try { conditions = JSON.parse(v.conditions || '[]') as AdminPolicyCreate['conditions']; } catch { setBadJson('is not JSON'); return; }
      setBadJson(undefined);
      save.mutate({
        name: v.name, description: v.description || null, priority: Number(v.priority), effect: v.effect as AdminPolicy['effect'],
        // Empty lists are sent as typed: the server's "at least one" stands at the field.
        resource_types: words(v.resources) as AdminPolicyCreate['resource_types'], actions: words(v.actions) as AdminPolicyCreate['actions'], enabled: v.enabled, conditions,
      });
    }}>
      <Stack maw={720}>
        <Failure error={save.error} />
        <TextInput label="Name" {...text('name')} error={err('name')} />
        <TextInput label="Description" {...text('description')} error={err('description')} />
        <Group grow align="flex-start">
          <TextInput label="Priority" description="Higher is evaluated first; at equal priority deny wins" inputMode="numeric" {...text('priority')} error={err('priority')} />
          <NativeSelect label="Effect" value={v.effect} onChange={(e) => setV({ ...v, effect: e.currentTarget.value as AdminPolicy['effect'] })} data={[{ value: 'deny', label: 'Deny' }, { value: 'allow', label: 'Allow' }]} error={err('effect')} />
        </Group>
        <TextInput label="Resource types" description="Separated by spaces, e.g. users clients; * for all" {...text('resources')} error={err('resource_types')} />
        <TextInput label="Actions" description="Separated by spaces, e.g. read write; * for all" {...text('actions')} error={err('actions')} />
        <Textarea label="Conditions" description='A JSON list, all must hold; e.g. [{"type": "ip_range", "params": {"cidrs": ["10.0.0.0/8"]}}]' autosize minRows={3}
          styles={{ input: { fontFamily: 'monospace' } }} {...text('conditions')} error={badJson ?? err('conditions')} />
        <Checkbox label="Active" checked={v.enabled} onChange={(e) => setV({ ...v, enabled: e.currentTarget.checked })} error={err('enabled')} />
        <Group><Button type="submit" loading={save.isPending}>{action}</Button></Group>
      </Stack>
    </form>
  );
}

function PolicyCreate() {
  const navigate = useNavigate();
  return (
    <Stack>
      <Title order={2}>New admin policy</Title>
      <PolicyForm action="Create policy" onSaved={(p) => navigate(`/policies/${encodeURIComponent(p.id)}`)} />
    </Stack>
  );
}

/** One policy: details, activate or deactivate, edit in place, delete after a confirmation. */
function PolicyDetail() {
  const { id = '' } = useParams();
  const session = useSession();
  const navigate = useNavigate();
  const queries = useQueryClient();
  const [confirming, setConfirming] = useState(false);
  const policy = useQuery({ queryKey: ['/admin-policies', viewedTenant(), id], queryFn: () => api<AdminPolicy>('GET', policyPath(id)) });
  const refresh = () => queries.invalidateQueries({ queryKey: ['/admin-policies'] });
  const toggle = useMutation({ mutationFn: (on: boolean) => api<AdminPolicy>('POST', `${policyPath(id)}/${on ? 'activate' : 'deactivate'}`), onSuccess: refresh });
  const remove = useMutation({ mutationFn: () => api<void>('DELETE', policyPath(id)), onSuccess: async () => { await refresh(); navigate('/policies'); } });
  if (policy.error) return <Failure error={policy.error} />;
  const p = policy.data;
  if (!p) return <Text>Loading…</Text>;
  const writer = can(session, 'admin:policies:write');
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>{p.name}</Title>
        <Badge color={p.enabled ? 'teal.9' : 'gray.7'} data-testid="policy-state">{p.enabled ? 'active' : 'inactive'}</Badge>
      </Group>
      <Details label="Policy details" rows={[
        ['Id', p.id], ['Effect', p.effect], ['Priority', String(p.priority)], ['Resource types', p.resource_types.join(', ')], ['Actions', p.actions.join(', ')],
        ['Conditions', p.conditions.length ? JSON.stringify(p.conditions) : 'none: always'], ['Active', p.enabled ? 'yes' : 'no'],
        ['Created', `${when(p.created_at)} by ${p.created_by ?? 'unknown'}`], ['Updated', `${when(p.updated_at)} by ${p.updated_by ?? 'unknown'}`],
      ]} />
      <Failure error={toggle.error} />
      {writer && (
        <Group>
          {p.enabled
            ? <Button variant="default" loading={toggle.isPending} onClick={() => toggle.mutate(false)}>Deactivate</Button>
            : <Button variant="default" loading={toggle.isPending} onClick={() => toggle.mutate(true)}>Activate</Button>}
          <Button variant="outline" color="red" onClick={() => setConfirming(true)}>Delete policy</Button>
        </Group>
      )}
      {writer && <><Title order={3}>Edit</Title><PolicyForm key={p.updated_at} policy={p} action="Save policy" onSaved={() => undefined} /></>}
      <Confirm opened={confirming} title="Delete this policy?" action="Delete" pending={remove.isPending} error={remove.error} onConfirm={() => remove.mutate()} onClose={() => setConfirming(false)}>
        <Text>{p.name} no longer applies from the next request. This cannot be undone.</Text>
      </Confirm>
    </Stack>
  );
}

/** The admin policy screens under /policies, loaded when first opened. */
export default function PolicyScreens() {
  return (
    <Routes>
      <Route index element={<PolicyList />} />
      <Route path="new" element={<PolicyCreate />} />
      <Route path=":id" element={<PolicyDetail />} />
    </Routes>
  );
}
