import { Alert, Anchor, Badge, Button, Group, Modal, NativeSelect, SegmentedControl, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import type { ElevationApprovalCreate, ElevationApprovalList, ElevationApprovalRequest, ElevationGrant } from '../../generated/types.ts';
import { api, ApiError, viewedTenant } from '../api.ts';
import { can } from '../auth.ts';
import { MODAL, PagedTable } from '../paged.tsx';
import { useSession } from '../session.ts';

type Item = ElevationApprovalList['items'][number];
const STATUS_COLOR: Record<string, string> = { pending: 'yellow.9', partially_approved: 'yellow.9', approved: 'teal.9', active: 'teal.9', denied: 'red.9', revoked: 'red.9', cancelled: 'gray.7', expired: 'gray.7' };
const when = (ms: number | null | undefined) => (ms ? new Date(ms).toLocaleString() : '—');

/** The approvals queue: requests waiting for my decision first, every request of the tenant on the other tab. */
export function ApprovalQueue() {
  const session = useSession();
  const [view, setView] = useState<'mine' | 'all'>('mine');
  const [status, setStatus] = useState('');
  const params: Record<string, string> = view === 'mine' ? { awaiting: 'me' } : status ? { status } : {};
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Approvals</Title>
        {can(session, 'admin:approvals:write') && <Button component={Link} to="/approvals/new">Request access</Button>}
      </Group>
      <Group align="flex-end">
        <SegmentedControl aria-label="Which requests" value={view} onChange={(v) => setView(v as 'mine' | 'all')} data={[{ value: 'mine', label: 'Waiting for me' }, { value: 'all', label: 'All requests' }]} />
        {view === 'all' && (
          <NativeSelect label="Status" value={status} onChange={(e) => setStatus(e.currentTarget.value)}
            data={[{ value: '', label: 'Any' }, ...['pending', 'partially_approved', 'approved', 'denied', 'cancelled', 'expired'].map((s) => ({ value: s, label: s.replace('_', ' ') }))]} />
        )}
      </Group>
      <PagedTable<Item>
        key={JSON.stringify(params)}
        label={view === 'mine' ? 'Requests waiting for me' : 'Approval requests'} path="/approvals" params={params}
        columns={['Request', 'Requested by', 'Action', 'Target', 'Status', 'Expires']}
        row={(r) => (
          <Table.Tr key={r.public_request_id}>
            <Table.Td><Anchor component={Link} to={`/approvals/${encodeURIComponent(r.public_request_id)}`}>{r.public_request_id}</Anchor></Table.Td>
            <Table.Td>{r.requester.name}</Table.Td>
            <Table.Td>{r.requested_action}</Table.Td>
            <Table.Td>{r.target_subject_type} {r.target_subject_id}</Table.Td>
            <Table.Td><Badge color={STATUS_COLOR[r.status]}>{r.status.replace('_', ' ')}</Badge></Table.Td>
            <Table.Td>{when(r.expires_at)}</Table.Td>
          </Table.Tr>
        )}
      />
    </Stack>
  );
}

/** One request: its steps to approve or deny, and the grant an approval yields, which can be revoked. */
export function ApprovalDetail() {
  const { id = '' } = useParams();
  const session = useSession();
  const queries = useQueryClient();
  const [revoking, setRevoking] = useState<ElevationGrant | null>(null);
  const key = ['/approvals', viewedTenant(), id];
  const request = useQuery({ queryKey: key, queryFn: () => api<ElevationApprovalRequest>('GET', `/approvals/${encodeURIComponent(id)}`) });
  const done = async () => { setRevoking(null); await queries.invalidateQueries({ queryKey: ['/approvals'] }); };
  const decide = useMutation({
    mutationFn: ({ step, kind }: { step: string; kind: 'approve' | 'deny' }) => api<ElevationApprovalRequest>('POST', `/approvals/${encodeURIComponent(id)}/steps/${encodeURIComponent(step)}/${kind}`, {}),
    onSuccess: done,
  });
  const revoke = useMutation({
    mutationFn: (grant: string) => api<ElevationGrant>('POST', `/approvals/${encodeURIComponent(id)}/grants/${encodeURIComponent(grant)}/revoke`, { reason_code: 'console' }),
    onSuccess: done,
  });
  if (request.error) return <Alert color="red" role="alert">{request.error.message}</Alert>;
  const r = request.data;
  if (!r) return <Text>Loading…</Text>;
  const approver = can(session, 'admin:approvals:approve');
  const writer = can(session, 'admin:approvals:write');
  const open = r.status === 'pending' || r.status === 'partially_approved';
  const rows: Array<[string, string]> = [
    ['Request', r.public_request_id], ['Status', r.status.replace('_', ' ')], ['Requested by', r.requester.name], ['Action', r.requested_action],
    ['Target', `${r.target_subject_type} ${r.target_subject_id}`], ['Resource class', r.resource_class], ['Audience', r.audience],
    ['Reason', [r.reason_code, r.reason_note].filter(Boolean).join(': ')], ['Expires', when(r.expires_at)],
  ];
  const error = decide.error ?? revoke.error;
  return (
    <Stack>
      <Title order={2}>Approval request</Title>
      <Table aria-label="Request details"><Table.Tbody>{rows.map(([k, v]) => <Table.Tr key={k}><Table.Th scope="row">{k}</Table.Th><Table.Td>{v || '—'}</Table.Td></Table.Tr>)}</Table.Tbody></Table>
      {error && <Alert color="red" role="alert">{error.message}</Alert>}
      <Title order={3}>Steps</Title>
      <Table aria-label="Approval steps">
        <Table.Thead><Table.Tr><Table.Th>Step</Table.Th><Table.Th>Side</Table.Th><Table.Th>Method</Table.Th><Table.Th>Status</Table.Th><Table.Th>Decided</Table.Th>{approver && <Table.Th>Decision</Table.Th>}</Table.Tr></Table.Thead>
        <Table.Tbody>
          {r.approvals.map((s) => (
            <Table.Tr key={s.id}>
              <Table.Td>{s.step_key}</Table.Td>
              <Table.Td>{s.side.replace('_', ' ')}</Table.Td>
              <Table.Td>{s.method.replace('_', ' ')}</Table.Td>
              <Table.Td><Badge color={STATUS_COLOR[s.status]}>{s.status}</Badge></Table.Td>
              <Table.Td>{s.decided_at ? `${when(s.decided_at)} by ${s.decided_by}` : '—'}</Table.Td>
              {approver && (
                <Table.Td>
                  {open && s.status === 'pending' && (
                    <Group gap="xs">
                      {s.method === 'portal_confirm'
                        ? <Button size="xs" loading={decide.isPending} onClick={() => decide.mutate({ step: s.id, kind: 'approve' })} aria-label={`Approve ${s.step_key}`}>Approve</Button>
                        : <Text size="sm">Approved with a {s.method.replace('_', ' ')} artifact</Text>}
                      <Button size="xs" color="red.9" variant="outline" loading={decide.isPending} onClick={() => decide.mutate({ step: s.id, kind: 'deny' })} aria-label={`Deny ${s.step_key}`}>Deny</Button>
                    </Group>
                  )}
                </Table.Td>
              )}
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      <Title order={3}>Grant</Title>
      {r.grants.length === 0
        ? <Text>No grant yet: one is made when every step is approved.</Text>
        : (
          <Table aria-label="Elevation grants">
            <Table.Thead><Table.Tr><Table.Th>Grant</Table.Th><Table.Th>Status</Table.Th><Table.Th>Audience</Table.Th><Table.Th>Expires</Table.Th>{writer && <Table.Th>Actions</Table.Th>}</Table.Tr></Table.Thead>
            <Table.Tbody>
              {r.grants.map((g) => (
                <Table.Tr key={g.public_grant_id}>
                  <Table.Td>{g.public_grant_id}</Table.Td>
                  <Table.Td><Badge color={STATUS_COLOR[g.status]}>{g.status}</Badge>{g.revoked_at ? ` ${when(g.revoked_at)}` : ''}</Table.Td>
                  <Table.Td>{g.audience}</Table.Td>
                  <Table.Td>{when(g.expires_at)}</Table.Td>
                  {writer && <Table.Td>{g.status === 'active' && <Button size="xs" color="red.9" variant="outline" onClick={() => setRevoking(g)}>Revoke grant</Button>}</Table.Td>}
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>)}
      <Modal opened={revoking !== null} onClose={() => setRevoking(null)} {...MODAL} title="Revoke this grant?">
        <Stack>
          <Text>Every token minted from {revoking?.public_grant_id} stops working at once. This cannot be undone.</Text>
          {revoke.error && <Alert color="red" role="alert">{revoke.error.message}</Alert>}
          <Group justify="flex-end">
            <Button variant="default" onClick={() => setRevoking(null)}>Cancel</Button>
            <Button color="red.9" loading={revoke.isPending} onClick={() => revoking && revoke.mutate(revoking.public_grant_id)}>Revoke</Button>
          </Group>
        </Stack>
      </Modal>
    </Stack>
  );
}

/** Files a request for time-boxed access with one step another administrator confirms in the console. */
export function ApprovalCreate() {
  const navigate = useNavigate();
  const queries = useQueryClient();
  const [f, setF] = useState({ requested_action: '', target_subject_id: '', resource_class: 'user_profile', reason_code: '', reason_note: '', audience: '' });
  const create = useMutation({
    mutationFn: (body: ElevationApprovalCreate) => api<ElevationApprovalRequest>('POST', '/approvals', body),
    onSuccess: async (r) => { await queries.invalidateQueries({ queryKey: ['/approvals'] }); navigate(`/approvals/${encodeURIComponent(r.public_request_id)}`); },
  });
  const details = create.error instanceof ApiError ? create.error.details : {};
  const err = (k: string) => details[k]?.join('; ');
  const field = (k: keyof typeof f, label: string, description?: string) => (
    <TextInput label={label} description={description} value={f[k]} onChange={(e) => setF({ ...f, [k]: e.currentTarget.value })} error={err(k)} />
  );
  return (
    <Stack maw={560}>
      <Title order={2}>Request access</Title>
      <form noValidate onSubmit={(e) => {
        e.preventDefault();
        create.mutate({
          request_surface: 'console', requested_action: f.requested_action, target_subject_type: 'user', target_subject_id: f.target_subject_id,
          resource_class: f.resource_class, reason_code: f.reason_code, audience: f.audience,
          redaction_level: 'masked', policy_preset: 'support_case_default', partial_access_allowed: false, allow_reexchange: false, ...(f.reason_note ? { reason_note: f.reason_note } : {}),
          approvals: [{ step_key: 'operator', side: 'admin_operator', subject_type: 'admin', method: 'portal_confirm' }],
        });
      }}>
        <Stack>
          {create.error && <Alert color="red" role="alert">{create.error.message}</Alert>}
          {field('requested_action', 'Action', 'What you need to do, e.g. read_profile')}
          {field('target_subject_id', 'User id', 'The user whose data you need')}
          {field('resource_class', 'Resource class')}
          {field('audience', 'Audience', 'The API the access is for: an audience of one of this tenant\'s clients')}
          {field('reason_code', 'Reason code', 'e.g. a support case')}
          {field('reason_note', 'Note')}
          <Text size="sm">Another administrator confirms the request in their approvals queue.</Text>
          <Group><Button type="submit" loading={create.isPending}>File request</Button></Group>
        </Stack>
      </form>
    </Stack>
  );
}
