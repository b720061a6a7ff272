import { Center, Loader, NavLink } from '@mantine/core';
import { lazy, Suspense, type ReactNode } from 'react';
import { Link, Navigate, Route } from 'react-router';
import { can, type Session } from './auth.ts';

/**
 * The operations screens (issue 33: dashboard, approvals, logging, imports, sharding, lookup-key rotation),
 * each loaded on first use so the first load of /console stays within its budget (recharts alone is
 * larger than the rest of a screen).
 */
const Dashboard = lazy(() => import('./screens/dashboard.tsx').then((m) => ({ default: m.Dashboard })));
const approvals = () => import('./screens/approvals.tsx');
const ApprovalQueue = lazy(() => approvals().then((m) => ({ default: m.ApprovalQueue })));
const ApprovalDetail = lazy(() => approvals().then((m) => ({ default: m.ApprovalDetail })));
const ApprovalCreate = lazy(() => approvals().then((m) => ({ default: m.ApprovalCreate })));
const imports = () => import('./screens/imports.tsx');
const ImportList = lazy(() => imports().then((m) => ({ default: m.ImportList })));
const ImportCreate = lazy(() => imports().then((m) => ({ default: m.ImportCreate })));
const ImportJob = lazy(() => imports().then((m) => ({ default: m.ImportJob })));
const ReviewTasks = lazy(() => imports().then((m) => ({ default: m.ReviewTasks })));
const Logging = lazy(() => import('./screens/logging.tsx').then((m) => ({ default: m.Logging })));
const Sharding = lazy(() => import('./screens/sharding.tsx').then((m) => ({ default: m.Sharding })));
const LookupKeys = lazy(() => import('./screens/lookup-keys.tsx').then((m) => ({ default: m.LookupKeys })));

const loading = <Center p="xl"><Loader aria-label="Loading" /></Center>;
const lazily = (node: ReactNode) => <Suspense fallback={loading}>{node}</Suspense>;
/** A screen the person may not use is not there, even by address: back to the start. */
const guarded = (allowed: boolean, node: ReactNode) => (allowed ? lazily(node) : <Navigate to="/" replace />);

export function OperationsNav({ session }: { session: Session }) {
  return (
    <>
      {can(session, 'admin:approvals:read') && <NavLink component={Link} to="/approvals" label="Approvals" />}
      {can(session, 'admin:users:read') && <NavLink component={Link} to="/imports" label="Imports" />}
      {can(session, 'admin:logging:read') && <NavLink component={Link} to="/logging" label="Logging" />}
      {can(session, 'admin:settings:read') && <NavLink component={Link} to="/sharding" label="Sharding" />}
      {session.platform && can(session, 'admin:control-plane:read') && <NavLink component={Link} to="/lookup-keys" label="Lookup keys" />}
    </>
  );
}

/** The routes, as elements for <Routes> (called, not rendered: Routes reads its children's props). */
export function operationsRoutes(session: Session) {
  return [
    <Route key="/" path="/" element={lazily(<Dashboard />)} />,
    <Route key="/approvals" path="/approvals" element={guarded(can(session, 'admin:approvals:read'), <ApprovalQueue />)} />,
    <Route key="/approvals/new" path="/approvals/new" element={guarded(can(session, 'admin:approvals:write'), <ApprovalCreate />)} />,
    <Route key="/approvals/:id" path="/approvals/:id" element={guarded(can(session, 'admin:approvals:read'), <ApprovalDetail />)} />,
    <Route key="/imports" path="/imports" element={guarded(can(session, 'admin:users:read'), <ImportList />)} />,
    <Route key="/imports/new" path="/imports/new" element={guarded(can(session, 'admin:users:write'), <ImportCreate />)} />,
    <Route key="/imports/review" path="/imports/review" element={guarded(can(session, 'admin:field-mapping:read'), <ReviewTasks />)} />,
    <Route key="/imports/:id" path="/imports/:id" element={guarded(can(session, 'admin:users:read'), <ImportJob />)} />,
    <Route key="/logging" path="/logging" element={guarded(can(session, 'admin:logging:read'), <Logging />)} />,
    <Route key="/sharding" path="/sharding" element={guarded(can(session, 'admin:settings:read'), <Sharding />)} />,
    <Route key="/lookup-keys" path="/lookup-keys" element={guarded(session.platform && can(session, 'admin:control-plane:read'), <LookupKeys />)} />,
  ];
}
