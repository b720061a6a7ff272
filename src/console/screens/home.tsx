import { Stack, Text, Title } from '@mantine/core';

export function Home() {
  return (
    <Stack>
      <Title order={2}>Welcome</Title>
      <Text>Administer tenants, clients, users and the audit log of this server.</Text>
    </Stack>
  );
}
