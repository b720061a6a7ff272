import { AppShell, Button, Group, NavLink, Select, Text, Title } from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { lazy, Suspense, useState } from 'react';
import { BrowserRouter, Link, Navigate, Route, Routes, useLocation } from 'react-router';
import type { AdminTenantList } from '../generated/types.ts';
import { api, selectTenant, viewedTenant } from './api.ts';
import { can, signOut } from './auth.ts';
import { Callback, SignedOut, SignIn } from './screens/sign-in.tsx';
import { ClientCreate, ClientDetail, ClientEdit, ClientList } from './screens/clients.tsx';
import { NotFoundScreen } from './screens/not-found.tsx';
import { TenantCreate, TenantDetail, TenantList } from './screens/tenants.tsx';
import { UserDetail, UserList } from './screens/users.tsx';
import { AuditLog } from './screens/audit.tsx';
import { useSession } from './session.ts';
import { OperationsNav, operationsRoutes } from './operations.tsx';

// Screens loaded when first opened, so the first load stays within its budget (ops/console-budget.mjs).
const Webhooks = lazy(() => import('./screens/webhooks.tsx'));
const Roles = lazy(() => import('./screens/roles.tsx'));
const Policies = lazy(() => import('./screens/policies.tsx'));
const Principals = lazy(() => import('./screens/principals.tsx'));
const CheckKeys = lazy(() => import('./screens/check-keys.tsx'));

/** The console's shell: header, navigation, and the screens by client-side route under /console. */
export function App() {
  return (
    <BrowserRouter basename="/console">
      <Routes>
        <Route path="/callback" element={<Callback />} />
        <Route path="/signed-out" element={<SignedOut />} />
        <Route path="*" element={<Signed />} />
      </Routes>
    </BrowserRouter>
  );
}

/** Every other screen needs a signed-in person: without one, the sign-in screen. */
function Signed() {
  const session = useSession();
  const location = useLocation();
  if (!session) return <SignIn returnTo={location.pathname + location.search} />;
  return (
    <AppShell header={{ height: 60 }} navbar={{ width: 200, breakpoint: 'sm' }} padding="md">
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between">
          <Title order={1} size="h3">svc console</Title>
          <Group>
            {session.platform ? <TenantSwitcher /> : <Text size="sm">Tenant <strong>{session.tenant}</strong></Text>}
            <Text size="sm" data-testid="signed-in-as">{session.email}</Text>
            <Button variant="default" size="xs" onClick={() => { void signOut(); }}>Sign out</Button>
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs" aria-label="Sections">
        <NavLink component={Link} to="/" label="Dashboard" />
        {session.platform && can(session, 'admin:tenants:read') && <NavLink component={Link} to="/tenants" label="Tenants" />}
        {can(session, 'admin:clients:read') && <NavLink component={Link} to="/clients" label="Clients" />}
        {can(session, 'admin:users:read') && <NavLink component={Link} to="/users" label="Users" />}
        {can(session, 'admin:audit-log:read') && <NavLink component={Link} to="/audit" label="Audit log" />}
        {can(session, 'admin:roles:read') && <NavLink component={Link} to="/roles" label="Roles" />}
        {can(session, 'admin:policies:read') && <NavLink component={Link} to="/policies" label="Admin policies" />}
        {can(session, 'admin:machine-principals:read') && <NavLink component={Link} to="/principals" label="Machine principals" />}
        {can(session, 'admin:check-api-keys:read') && <NavLink component={Link} to="/check-keys" label="Check API keys" />}
        {can(session, 'admin:webhooks:read') && <NavLink component={Link} to="/webhooks" label="Webhooks" />}
        <OperationsNav session={session} />
      </AppShell.Navbar>
      <AppShell.Main>
        <Suspense fallback={<Text>Loading…</Text>}><Routes>
          {operationsRoutes(session)}
          <Route path="/tenants" element={session.platform ? <TenantList /> : <Navigate to="/" replace />} />
          <Route path="/tenants/new" element={session.platform ? <TenantCreate /> : <Navigate to="/" replace />} />
          <Route path="/tenants/:id" element={session.platform ? <TenantDetail /> : <Navigate to="/" replace />} />
          <Route path="/clients" element={<ClientList />} />
          <Route path="/clients/new" element={<ClientCreate />} />
          <Route path="/clients/:id" element={<ClientDetail />} />
          <Route path="/clients/:id/edit" element={<ClientEdit />} />
          <Route path="/users" element={<UserList />} />
          <Route path="/users/:id" element={<UserDetail />} />
          <Route path="/audit" element={<AuditLog />} />
          <Route path="/webhooks/*" element={<Webhooks />} />
          <Route path="/roles/*" element={<Roles />} />
          <Route path="/policies/*" element={<Policies />} />
          <Route path="/principals/*" element={<Principals />} />
          <Route path="/check-keys/*" element={<CheckKeys />} />
          <Route path="*" element={<NotFoundScreen />} />
        </Routes></Suspense>
      </AppShell.Main>
    </AppShell>
  );
}

/** Platform administrators choose the tenant every screen acts on (X-Tenant-Id). */
function TenantSwitcher() {
  const queries = useQueryClient();
  const [tenant, setTenant] = useState(viewedTenant());
  const list = useQuery({ queryKey: ['tenants', 'switcher'], queryFn: () => api<AdminTenantList>('GET', '/tenants?limit=100') });
  const options = (list.data?.items ?? []).map((t) => ({ value: t.id, label: t.name ? `${t.name} (${t.id})` : t.id }));
  if (tenant && !options.some((o) => o.value === tenant)) options.unshift({ value: tenant, label: tenant });
  return (
    <Select
      aria-label="Tenant" size="xs" searchable data={options} value={tenant}
      onChange={(v) => { selectTenant(v); setTenant(v); void queries.invalidateQueries(); }}
    />
  );
}
