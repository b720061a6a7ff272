import { Alert, Anchor, Badge, Button, FileInput, Group, NativeSelect, Progress, Stack, Table, Text, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import type { FieldMappingMapping, FieldMappingPreview, FieldMappingReviewTask, FieldMappingReviewTransition, UserJobsJob } from '../../generated/types.ts';
import { api, ApiError, viewedTenant } from '../api.ts';
import { can } from '../auth.ts';
import { readCsvHead } from '../csv.ts';
import { PagedTable } from '../paged.tsx';
import { useSession } from '../session.ts';

const JOB_COLOR: Record<UserJobsJob['status'], string> = { queued: 'gray.7', running: 'blue.9', succeeded: 'teal.9', failed: 'red.9', cancelled: 'gray.7' };
const finished = (j: UserJobsJob) => j.status === 'succeeded' || j.status === 'failed' || j.status === 'cancelled';
const percent = (j: UserJobsJob) => Math.round((j.progress ?? (j.status === 'succeeded' ? 1 : 0)) * 100);

/** User import jobs of the tenant, newest first, with their progress. */
export function ImportList() {
  const session = useSession();
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Imports</Title>
        <Group>
          {can(session, 'admin:field-mapping:read') && <Button variant="default" component={Link} to="/imports/review">Review tasks</Button>}
          {can(session, 'admin:users:write') && <Button component={Link} to="/imports/new">Import users</Button>}
        </Group>
      </Group>
      <PagedTable<UserJobsJob>
        label="Import jobs" path="/user-imports" columns={['Job', 'Status', 'Progress', 'Created', 'Rejected', 'For review', 'Started']}
        row={(j) => (
          <Table.Tr key={j.id}>
            <Table.Td><Anchor component={Link} to={`/imports/${encodeURIComponent(j.id)}`}>{j.id}</Anchor></Table.Td>
            <Table.Td><Badge color={JOB_COLOR[j.status]}>{j.status}</Badge></Table.Td>
            <Table.Td>{j.processed_rows.toLocaleString()} of {j.total_rows?.toLocaleString() ?? '?'}</Table.Td>
            <Table.Td>{j.counts.created}</Table.Td>
            <Table.Td>{j.counts.rejected}</Table.Td>
            <Table.Td>{j.counts.review}</Table.Td>
            <Table.Td>{new Date(j.created_at).toLocaleString()}</Table.Td>
          </Table.Tr>
        )}
      />
    </Stack>
  );
}

/** Where a column's values go: a user field, a metadata key named after the column, or nowhere. */
type Target = '' | 'email' | 'name' | 'email_verified' | 'metadata';
const TARGETS: Array<{ value: Target; label: string }> = [
  { value: '', label: 'Not imported' }, { value: 'email', label: 'Email' }, { value: 'name', label: 'Name' },
  { value: 'email_verified', label: 'Email verified' }, { value: 'metadata', label: 'Metadata' },
];
const squash = (s: string) => s.toLowerCase().replace(/[^a-z0-9]/g, '');
function guess(column: string): Target {
  const c = squash(column);
  if (['email', 'emailaddress', 'mail'].includes(c)) return 'email';
  if (['name', 'fullname', 'displayname'].includes(c)) return 'name';
  if (['emailverified', 'verified'].includes(c)) return 'email_verified';
  return '';
}
const metadataKey = (column: string) => column.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64) || 'field';

/** The field mapping the table describes (docs/field-mapping.md): one catalog entry per target, an edge per column, the usual normalisations. */
export function mappingOf(header: string[], targets: Target[]): FieldMappingMapping {
  const entries = new Map<string, FieldMappingMapping['catalog']['entries'][number]>();
  const edges: FieldMappingMapping['edges'] = [];
  const columnToPath: Record<string, string> = {};
  header.forEach((col, i) => {
    const t = targets[i];
    if (!t) return;
    const path = t === 'metadata' ? `metadata.${metadataKey(col)}` : t;
    const id = path.replace(/\./g, '_');
    if (!entries.has(id)) {
      entries.set(id, {
        id, namespace: 'user', path, cardinality: 'one', required: t === 'email',
        valueType: t === 'email' ? 'email' : t === 'email_verified' ? 'boolean' : 'string',
        classification: t === 'email' || t === 'name' ? 'pii' : 'internal',
      });
    }
    columnToPath[col] = `src.c${i}`;
    edges.push({ id: `e${i}`, sourceRef: `src.c${i}`, targetRef: id });
  });
  type Some = [string, ...string[]];
  const into = (id: string) => edges.filter((e) => e.targetRef === id).map((e) => e.id) as Some;
  const transforms: NonNullable<FieldMappingMapping['transforms']> = [];
  if (into('email').length) transforms.push({ id: 't_email', inputEdgeIds: into('email'), operation: 'normalize', parameters: { kind: 'email' }, outputTargetRef: 'email' });
  if (into('email_verified').length) transforms.push({ id: 't_verified', inputEdgeIds: into('email_verified'), operation: 'text_to_boolean', outputTargetRef: 'email_verified' });
  // Several columns into the name (first and last): joined with a space.
  if (into('name').length > 1) transforms.push({ id: 't_name', inputEdgeIds: into('name'), operation: 'concat', parameters: { separator: ' ' }, outputTargetRef: 'name' });
  const emailColumns = header.filter((_, i) => targets[i] === 'email');
  return { catalog: { entries: [...entries.values()] as FieldMappingMapping['catalog']['entries'] }, columnToPath, edges, transforms, requiredColumns: emailColumns };
}

/** A CSV file, its columns mapped to user fields in a table, a dry run over its first 100 rows, then the import. */
export function ImportCreate() {
  const session = useSession();
  const navigate = useNavigate();
  const queries = useQueryClient();
  const [file, setFile] = useState<File | null>(null);
  const [text, setText] = useState('');
  const [head, setHead] = useState<{ header: string[]; rows: string[][] }>({ header: [], rows: [] });
  const [targets, setTargets] = useState<Target[]>([]);
  const [readError, setReadError] = useState<string | null>(null);
  const mapping = mappingOf(head.header, targets);
  const preview = useMutation({
    mutationFn: () => api<FieldMappingPreview>('POST', '/field-mapping/preview/csv', {
      ...mapping, rows: head.rows.slice(0, 100).map((r) => Object.fromEntries(head.header.map((h, i) => [h, r[i] ?? '']))),
    }),
  });
  const start = useMutation({
    mutationFn: () => api<UserJobsJob>('POST', '/user-imports', { mapping, csv: text }),
    onSuccess: async (j) => { await queries.invalidateQueries({ queryKey: ['/user-imports'] }); navigate(`/imports/${encodeURIComponent(j.id)}`); },
  });
  const choose = async (f: File | null) => {
    setFile(f); preview.reset(); start.reset(); setReadError(null);
    if (!f) { setText(''); setHead({ header: [], rows: [] }); setTargets([]); return; }
    const t = await f.text();
    const h = readCsvHead(t, 100);
    if (h.header.length === 0) setReadError('The file has no header line.');
    setText(t); setHead(h); setTargets(h.header.map(guess));
  };
  const suggestion = (col: string) => preview.data?.headerSuggestions.find((s) => s.column === col);
  const details = start.error instanceof ApiError ? Object.entries(start.error.details) : [];
  const canPreview = can(session, 'admin:field-mapping:write');
  return (
    <Stack>
      <Title order={2}>Import users</Title>
      <FileInput label="CSV file" description="A header line, then one user a line; at most 100,000 rows" accept=".csv,text/csv" value={file} onChange={(f) => { void choose(f); }} clearable clearButtonProps={{ 'aria-label': 'Clear the file' }} />
      {readError && <Alert color="red" role="alert">{readError}</Alert>}
      {head.header.length > 0 && (
        <>
          <Title order={3}>Columns</Title>
          <Table aria-label="Column mapping">
            <Table.Thead><Table.Tr><Table.Th>Column</Table.Th><Table.Th>First value</Table.Th><Table.Th>Imported as</Table.Th></Table.Tr></Table.Thead>
            <Table.Tbody>
              {head.header.map((col, i) => (
                <Table.Tr key={`${i}-${col}`}>
                  <Table.Td>{col}</Table.Td>
                  <Table.Td>{head.rows[0]?.[i] ?? ''}</Table.Td>
                  <Table.Td>
                    <NativeSelect aria-label={`Import ${col} as`} data={TARGETS} value={targets[i] ?? ''}
                      onChange={(e) => { const next = [...targets]; next[i] = e.currentTarget.value as Target; setTargets(next); preview.reset(); }}
                      description={targets[i] === 'metadata' ? `metadata.${metadataKey(col)}` : !targets[i] && suggestion(col) ? `Suggested: ${suggestion(col)!.path}` : undefined} />
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
          {!targets.includes('email') && <Alert color="yellow.9" variant="outline" role="status">Choose the column that holds the email address.</Alert>}
          <Group>
            {canPreview && <Button variant="default" loading={preview.isPending} disabled={!targets.includes('email')} onClick={() => preview.mutate()}>Check the first {Math.min(100, head.rows.length)} rows</Button>}
            <Button loading={start.isPending} disabled={!targets.includes('email')} onClick={() => start.mutate()}>Start import</Button>
          </Group>
          {preview.error && <Alert color="red" role="alert">{preview.error.message}</Alert>}
          {start.error && <Alert color="red" role="alert">{start.error.message}{details.length > 0 && <>: {details.map(([k, v]) => `${k} ${v.join(', ')}`).join('; ')}</>}</Alert>}
          {preview.data && <PreviewResult preview={preview.data} />}
        </>
      )}
    </Stack>
  );
}

function PreviewResult({ preview }: { preview: FieldMappingPreview }) {
  const s = preview.summary;
  const doubtful = preview.rowResults.filter((r) => r.status !== 'success');
  return (
    <Stack>
      <Title order={3}>Dry run</Title>
      <Text role="status">{s.total} rows checked: {s.success} import cleanly, {s.partial} with warnings (held for review), {s.failed} rejected. Nothing was stored.</Text>
      {doubtful.length > 0 && (
        <Table aria-label="Rows with findings">
          <Table.Thead><Table.Tr><Table.Th>Row</Table.Th><Table.Th>Outcome</Table.Th><Table.Th>Findings</Table.Th></Table.Tr></Table.Thead>
          <Table.Tbody>
            {doubtful.slice(0, 20).map((r) => (
              <Table.Tr key={r.index}>
                <Table.Td>{r.index + 1}</Table.Td>
                <Table.Td><Badge color={r.status === 'failed' ? 'red.9' : 'yellow.9'}>{r.status === 'failed' ? 'rejected' : 'warning'}</Badge></Table.Td>
                <Table.Td>{r.reasons.map((x) => `${x.targetRef}: ${x.code}`).join(', ')}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>)}
    </Stack>
  );
}

/** One import: its progress bar, polled every second until the job finishes, and its counts. */
export function ImportJob() {
  const { id = '' } = useParams();
  const session = useSession();
  const job = useQuery({
    queryKey: ['/user-imports', viewedTenant(), id],
    queryFn: () => api<UserJobsJob>('GET', `/user-imports/${encodeURIComponent(id)}`),
    refetchInterval: (q) => (q.state.data && finished(q.state.data) ? false : 1000),
  });
  if (job.error) return <Alert color="red" role="alert">{job.error.message}</Alert>;
  const j = job.data;
  if (!j) return <Text>Loading…</Text>;
  const pct = percent(j);
  return (
    <Stack>
      <Title order={2}>Import {j.id}</Title>
      <Group><Badge color={JOB_COLOR[j.status]} data-testid="job-status">{j.status}</Badge><Text>{j.processed_rows.toLocaleString()} of {j.total_rows?.toLocaleString() ?? '?'} rows</Text></Group>
      <Progress value={pct} size="xl" aria-label="Import progress" color={j.status === 'failed' ? 'red.9' : undefined} animated={!finished(j)} />
      <Table aria-label="Import counts">
        <Table.Tbody>
          {([['Created', j.counts.created], ['Updated', j.counts.updated], ['Unchanged', j.counts.unchanged], ['Rejected', j.counts.rejected], ['Held for review', j.counts.review]] as const)
            .map(([k, v]) => <Table.Tr key={k}><Table.Th scope="row">{k}</Table.Th><Table.Td>{v.toLocaleString()}</Table.Td></Table.Tr>)}
        </Table.Tbody>
      </Table>
      {j.error && <Alert color="red" role="alert">{j.error.code}{j.error.message ? `: ${j.error.message}` : ''}</Alert>}
      {j.counts.review > 0 && can(session, 'admin:field-mapping:read') && <Anchor component={Link} to={`/imports/review?job=${encodeURIComponent(j.id)}`}>Review the {j.counts.review} rows held back</Anchor>}
    </Stack>
  );
}

/** Rows an import held back (warnings, conflicts with existing users): approve applies the change, reject discards it. */
export function ReviewTasks() {
  const session = useSession();
  const queries = useQueryClient();
  const job = new URLSearchParams(location.search).get('job') ?? '';
  const [status, setStatus] = useState('open');
  const move = useMutation({
    mutationFn: ({ task, to }: { task: string; to: 'approved' | 'rejected' | 'dismissed' }) =>
      api<FieldMappingReviewTransition>('POST', `/field-mapping/review-tasks/${encodeURIComponent(task)}/transition`, { status: to }),
    onSuccess: () => queries.invalidateQueries({ queryKey: ['/field-mapping/review-tasks'] }),
  });
  const writer = can(session, 'admin:field-mapping:write');
  const params = { ...(status ? { status } : {}), ...(job ? { job_id: job } : {}) };
  return (
    <Stack>
      <Title order={2}>Review tasks</Title>
      {job && <Text>Of import {job}.</Text>}
      <NativeSelect label="Status" value={status} onChange={(e) => setStatus(e.currentTarget.value)} w={220}
        data={[{ value: '', label: 'Any' }, ...['open', 'in_review', 'approved', 'rejected', 'resolved', 'dismissed'].map((s) => ({ value: s, label: s.replace('_', ' ') }))]} />
      {move.error && <Alert color="red" role="alert">{move.error.message}</Alert>}
      <PagedTable<FieldMappingReviewTask>
        key={JSON.stringify(params)}
        label="Review tasks" path="/field-mapping/review-tasks" params={params} columns={['Row', 'Kind', 'Status', 'Findings', 'Would set', ...(writer ? ['Decision'] : [])]}
        row={(r) => (
          <Table.Tr key={r.id}>
            <Table.Td>{r.row_index === null ? '—' : r.row_index + 1}</Table.Td>
            <Table.Td>{r.task_type === 'import_conflict' ? 'conflict' : 'warning'}</Table.Td>
            <Table.Td><Badge color={r.status === 'approved' ? 'teal.9' : r.status === 'rejected' ? 'red.9' : 'gray.7'}>{r.status.replace('_', ' ')}</Badge></Table.Td>
            <Table.Td>{r.reasons.map((x) => `${x.targetRef}: ${x.code}`).join(', ') || r.reason_codes.join(', ')}</Table.Td>
            <Table.Td>{r.pending_fields.join(', ')}</Table.Td>
            {writer && (
              <Table.Td>
                {(r.status === 'open' || r.status === 'in_review') && (
                  <Group gap="xs">
                    <Button size="xs" onClick={() => move.mutate({ task: r.id, to: 'approved' })} aria-label={`Approve row ${(r.row_index ?? 0) + 1}`}>Approve</Button>
                    <Button size="xs" variant="outline" color="red.9" onClick={() => move.mutate({ task: r.id, to: 'rejected' })} aria-label={`Reject row ${(r.row_index ?? 0) + 1}`}>Reject</Button>
                  </Group>
                )}
              </Table.Td>
            )}
          </Table.Tr>
        )}
      />
    </Stack>
  );
}
