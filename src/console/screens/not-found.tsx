import { Anchor, Stack, Text, Title } from '@mantine/core';
import { Link } from 'react-router';

export function NotFoundScreen() {
  return (
    <Stack>
      <Title order={2}>Page not found</Title>
      <Text>There is no such page in the console. <Anchor component={Link} to="/">Go to the start page</Anchor>.</Text>
    </Stack>
  );
}
