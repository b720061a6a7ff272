import { AppShell, Group, Title } from '@mantine/core';
import { BrowserRouter, Route, Routes } from 'react-router';
import { Home } from './screens/home.tsx';
import { NotFoundScreen } from './screens/not-found.tsx';

/** The console's shell: header, and the screens by client-side route under /console. */
export function App() {
  return (
    <BrowserRouter basename="/console">
      <AppShell header={{ height: 56 }} padding="md">
        <AppShell.Header>
          <Group h="100%" px="md" justify="space-between">
            <Title order={1} size="h3">svc console</Title>
          </Group>
        </AppShell.Header>
        <AppShell.Main>
          <Routes>
            <Route path="/" element={<Home />} />
            <Route path="*" element={<NotFoundScreen />} />
          </Routes>
        </AppShell.Main>
      </AppShell>
    </BrowserRouter>
  );
}
