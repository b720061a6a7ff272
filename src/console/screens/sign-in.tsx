import { Alert, Anchor, Button, Center, Loader, Paper, Stack, Text, TextInput, Title } from '@mantine/core';
import { useEffect, useRef, useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { completeSignIn, lastTenant, sessionExpired, signIn } from '../auth.ts';

/** Who signs in to which tenant: the tenant names the console client (`<tenant>-console`). */
export function SignIn({ returnTo }: { returnTo: string }) {
  const fromUrl = new URLSearchParams(location.search).get('tenant');
  const [tenant, setTenant] = useState(fromUrl ?? lastTenant());
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  return (
    <Center mih="100vh">
      <Paper withBorder p="xl" w={380} component="main">
        <form onSubmit={(e) => {
          e.preventDefault();
          setBusy(true);
          signIn(tenant.trim(), returnTo.replace(/[?&]tenant=[^&]*/, '') || '/').catch((err: unknown) => { setBusy(false); setError(err instanceof Error ? err.message : String(err)); });
        }}>
          <Stack>
            <Title order={1} size="h2">svc console</Title>
            {sessionExpired()
              ? <Alert color="dark" variant="outline" role="status" title="Session expired">Your session expired and could not be renewed. Sign in again.</Alert>
              : <Text>Sign in with your administrator account.</Text>}
            {error && <Alert color="red" role="alert">{error}</Alert>}
            <TextInput label="Tenant" required value={tenant} onChange={(e) => setTenant(e.currentTarget.value)} autoComplete="organization" />
            <Button type="submit" loading={busy}>Sign in</Button>
          </Stack>
        </form>
      </Paper>
    </Center>
  );
}

/** /console/callback: the code comes back; tokens are fetched and kept in memory. */
export function Callback() {
  const navigate = useNavigate();
  const [error, setError] = useState<string | null>(null);
  const started = useRef(false);
  useEffect(() => {
    // Once only (StrictMode runs effects twice in development): a code is good for one exchange.
    if (started.current) return;
    started.current = true;
    completeSignIn(new URL(location.href))
      .then((to) => navigate(to, { replace: true }))
      .catch((err: unknown) => setError(err instanceof Error ? err.message : String(err)));
  }, [navigate]);
  return (
    <Center mih="100vh" component="main">
      {error
        ? <Stack><Title order={1} size="h2">Sign-in failed</Title><Alert color="red" role="alert">{error}</Alert><Anchor component={Link} to="/">Sign in again</Anchor></Stack>
        : <Stack align="center"><Loader aria-label="Signing in" /><Text>Signing in…</Text></Stack>}
    </Center>
  );
}

export function SignedOut() {
  return (
    <Center mih="100vh" component="main">
      <Stack>
        <Title order={1} size="h2">Signed out</Title>
        <Text>You are signed out of the console.</Text>
        <Anchor component={Link} to="/">Sign in again</Anchor>
      </Stack>
    </Center>
  );
}
