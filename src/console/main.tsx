import '@mantine/core/styles.css';
import { createTheme, MantineProvider, type CSSVariablesResolver } from '@mantine/core';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './app.tsx';
import { styleNonce } from './nonce.ts';

const nonce = styleNonce();
// Shade 8 of the primary colour: white text on it meets WCAG AA contrast (shade 6, the default, does not);
// autoContrast: dark text on light fills (a yellow warning badge), white on dark ones.
const theme = createTheme({ primaryShade: 8, respectReducedMotion: true, autoContrast: true });
// Error and secondary text dark enough for AA contrast on white (Mantine's defaults are red-6 and gray-6).
const contrast: CSSVariablesResolver = () => ({ variables: {}, light: { '--mantine-color-error': 'var(--mantine-color-red-9)', '--mantine-color-dimmed': 'var(--mantine-color-gray-7)' }, dark: {} });
const queries = new QueryClient({ defaultOptions: { queries: { retry: 1, refetchOnWindowFocus: false } } });

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <MantineProvider theme={theme} cssVariablesResolver={contrast} getStyleNonce={() => nonce} defaultColorScheme="light">
      <QueryClientProvider client={queries}>
        <App />
      </QueryClientProvider>
    </MantineProvider>
  </StrictMode>,
);
