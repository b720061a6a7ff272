import { Alert, Group, Paper, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import type { AdminDashboard } from '../../generated/types.ts';
import { api } from '../api.ts';
import { can } from '../auth.ts';
import { useSession } from '../session.ts';

/** Seconds between readings, and how many intervals the charts keep (5 minutes). */
const EVERY_MS = 5000;
const KEEP = 60;
type Group = AdminDashboard['groups'][number];
const LINES: Array<[Group['name'], string]> = [['token', '#1864ab'], ['introspect', '#2b8a3e'], ['login', '#862e9c'], ['admin', '#c92a2a'], ['other', '#495057']];

/** One interval between two readings: per group, requests/s, errors/s and the 95th percentile latency in ms. */
type Point = { time: string } & Record<string, number | string | null>;

/** The quantile of the requests that landed in the interval, by linear interpolation in their bucket. */
function quantile(q: number, now: Group['latency'], before: Group['latency'] | undefined): number | null {
  const counts = now.counts.map((c, i) => c - (before?.counts[i] ?? 0));
  const total = now.count - (before?.count ?? 0);
  if (total <= 0 || counts.length === 0) return null;
  const want = q * total;
  for (let i = 0; i < counts.length; i++) {
    if (counts[i]! >= want) {
      const lo = i === 0 ? 0 : now.le[i - 1]!;
      const below = i === 0 ? 0 : counts[i - 1]!;
      const inBucket = counts[i]! - below;
      return (lo + (now.le[i]! - lo) * (inBucket > 0 ? (want - below) / inBucket : 1)) * 1000;
    }
  }
  return now.le[now.le.length - 1]! * 1000;
}

function interval(a: AdminDashboard, b: AdminDashboard): Point {
  const secs = Math.max(0.001, (b.at - a.at) / 1000);
  const p: Point = { time: new Date(b.at).toLocaleTimeString() };
  for (const g of b.groups) {
    const prev = a.groups.find((x) => x.name === g.name);
    // A restarted process starts its counters again from 0: the interval reads as if from nothing.
    const restarted = prev !== undefined && g.requests < prev.requests;
    const base = restarted ? undefined : prev;
    p[`${g.name}_rate`] = round((g.requests - (base?.requests ?? 0)) / secs);
    p[`${g.name}_errors`] = round((g.server_errors - (base?.server_errors ?? 0) + g.client_errors - (base?.client_errors ?? 0)) / secs);
    p[`${g.name}_p95`] = (() => { const v = quantile(0.95, g.latency, base?.latency); return v === null ? null : round(v); })();
  }
  return p;
}
const round = (n: number) => Math.round(n * 100) / 100;

/** The start screen: who is signed in, and for platform administrators the deployment's request rates, errors and latency. */
export function Dashboard() {
  const session = useSession();
  const charts = !!session?.platform && can(session, 'admin:metrics:read');
  return (
    <Stack>
      <Title order={2}>Dashboard</Title>
      <Text>Signed in as {session?.email} to tenant {session?.tenant}{session?.platform ? ' (platform administrator)' : ''}.</Text>
      {charts ? <Charts /> : <Text>Administer this tenant from the sections on the left.</Text>}
    </Stack>
  );
}

function Charts() {
  const [readings, setReadings] = useState<AdminDashboard[]>([]);
  const reading = useQuery({ queryKey: ['/dashboard'], queryFn: () => api<AdminDashboard>('GET', '/dashboard'), refetchInterval: EVERY_MS, gcTime: 0 });
  useEffect(() => {
    const d = reading.data;
    if (d) setReadings((r) => (r[r.length - 1]?.at === d.at ? r : [...r, d].slice(-(KEEP + 1))));
  }, [reading.data]);
  if (reading.error) return <Alert color="red" role="alert">{reading.error.message}</Alert>;
  const points = readings.slice(1).map((b, i) => interval(readings[i]!, b));
  const last = readings[readings.length - 1];
  const total = (f: (g: Group) => number) => (last ? last.groups.reduce((n, g) => n + f(g), 0) : 0);
  return (
    <Stack>
      <SimpleGrid cols={{ base: 2, md: 4 }}>
        <Stat label="Requests answered" value={total((g) => g.requests)} />
        <Stat label="Server errors (5xx)" value={total((g) => g.server_errors)} />
        <Stat label="In flight now" value={last?.inflight ?? 0} />
        <Stat label="Refused (503, 429)" value={last?.refusals ?? 0} />
      </SimpleGrid>
      <Text size="sm" c="dimmed">Since each process started; the charts read every {EVERY_MS / 1000} seconds and keep the last five minutes.</Text>
      {points.length === 0 && <Text role="status">Collecting the first interval…</Text>}
      <Chart title="Requests per second" points={points} suffix="rate" unit="req/s" />
      <Chart title="Errors per second (4xx and 5xx)" points={points} suffix="errors" unit="err/s" />
      <Chart title="Latency, 95th percentile (ms)" points={points} suffix="p95" unit="ms" />
    </Stack>
  );
}

function Stat({ label, value }: { label: string; value: number }) {
  return (
    <Paper withBorder p="sm">
      <Text size="sm" c="dimmed">{label}</Text>
      <Text size="xl" fw={700} data-testid={`stat-${label}`}>{value.toLocaleString()}</Text>
    </Paper>
  );
}

function Chart({ title, points, suffix, unit }: { title: string; points: Point[]; suffix: string; unit: string }) {
  const id = `chart-${suffix}`;
  return (
    <Paper withBorder p="sm" component="figure" m={0} aria-labelledby={id}>
      <Group justify="space-between"><Title order={3} size="h5" id={id}>{title}</Title></Group>
      <div style={{ width: '100%', height: 220 }} role="img" aria-label={`${title}: a line per route group (token, introspect, login, admin, other)`}>
        <ResponsiveContainer>
          <LineChart data={points} margin={{ top: 8, right: 16, bottom: 0, left: 0 }}>
            <CartesianGrid strokeDasharray="3 3" />
            <XAxis dataKey="time" minTickGap={40} />
            <YAxis unit={` ${unit}`} width={90} />
            <Tooltip />
            <Legend />
            {LINES.map(([g, colour]) => <Line key={g} type="monotone" dataKey={`${g}_${suffix}`} name={g} stroke={colour} dot={false} isAnimationActive={false} connectNulls />)}
          </LineChart>
        </ResponsiveContainer>
      </div>
    </Paper>
  );
}
