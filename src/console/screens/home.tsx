import { Stack, Text, Title } from '@mantine/core';
import { useSession } from '../session.ts';

export function Home() {
  const session = useSession();
  return (
    <Stack>
      <Title order={2}>Welcome</Title>
      <Text>Signed in as {session?.email} to tenant {session?.tenant}{session?.platform ? ' (platform administrator)' : ''}.</Text>
      <Text>Administer this server's tenants and clients from the sections on the left.</Text>
    </Stack>
  );
}
