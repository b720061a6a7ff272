import t from 'tap';
import { ConfigError, loadConfig } from '../../src/config.js';
import { canonicalAddress, clientAddress, parseTrustedProxies, TrustedProxies } from '../../src/http/client-address.js';

// Issue 29 items 3 and 7: the one function every per-address budget reads the client address from.

t.test('addresses have one text form, whatever wrote them', async (t) => {
  t.equal(canonicalAddress('203.0.113.7'), '203.0.113.7');
  t.equal(canonicalAddress(' 203.0.113.7:4711 '), '203.0.113.7', 'an IPv4 address with a port');
  t.equal(canonicalAddress('0000:0000:0000:0000:0000:0000:0000:0001'), '::1', "uWS's uncompressed IPv6");
  t.equal(canonicalAddress('0000:0000:0000:0000:0000:ffff:7f00:0002'), '127.0.0.2', 'IPv4-mapped IPv6 (a dual-stack socket) is the IPv4 address');
  t.equal(canonicalAddress('::FFFF:198.51.100.4'), '198.51.100.4');
  t.equal(canonicalAddress('[2001:DB8:0:0::1]:443'), '2001:db8::1', 'bracketed IPv6 with a port, upper case');
  t.equal(canonicalAddress('fe80::1%eth0'), 'fe80::1', 'a zone is not part of the address');
  for (const bad of ['unknown', '_hidden', '', '1.2.3', '[::1', '[::1]x', '300.1.1.1']) t.equal(canonicalAddress(bad), null, `"${bad}" is not an address`);
});

t.test('TRUSTED_PROXIES: addresses and CIDR ranges of both families, every bad entry named', async (t) => {
  t.same(parseTrustedProxies(' 10.0.0.0/8, 192.0.2.1 ,2001:DB8::/32, ::1, ::ffff:172.16.0.0/108, ').ranges,
    ['10.0.0.0/8', '192.0.2.1/32', '2001:db8::/32', '::1/128', '172.16.0.0/12']);
  t.same(parseTrustedProxies('').ranges, [], 'empty: nobody is trusted');
  const err = t.throws(() => loadConfig({ NODE_ENV: 'test', TRUSTED_PROXIES: '10.0.0.0/33,proxy.local,::/129,1.2.3.4/x,::ffff:0:0/90' })) as ConfigError;
  t.type(err, ConfigError);
  t.equal(err.problems.filter((p) => p.startsWith('TRUSTED_PROXIES')).length, 5, err.problems.join('; '));
  t.same(loadConfig({ NODE_ENV: 'test' }).trustedProxies, [], 'off by default');
  t.same(loadConfig({ NODE_ENV: 'test', TRUSTED_PROXIES: '127.0.0.1,fd00::/8' }).trustedProxies, ['127.0.0.1/32', 'fd00::/8']);
});

t.test('the right-most X-Forwarded-For entry that is not a trusted proxy', async (t) => {
  const trusted = new TrustedProxies(parseTrustedProxies('10.0.0.0/8, 2001:db8::/32').ranges);
  t.equal(clientAddress('10.1.1.1', '203.0.113.7', trusted), '203.0.113.7', 'one trusted proxy');
  t.equal(clientAddress('10.1.1.1', '198.51.100.9, 203.0.113.7, 10.2.2.2', trusted), '203.0.113.7', 'two proxies; what the client wrote itself (left) is not believed');
  t.equal(clientAddress('10.1.1.1', '198.51.100.9, 203.0.113.7', trusted), '203.0.113.7', 'a spoofed left part changes nothing');
  t.equal(clientAddress('10.1.1.1', '10.9.9.9, 10.2.2.2', trusted), '10.9.9.9', 'every hop trusted: the left-most');
  t.equal(clientAddress('10.1.1.1', '2001:db8::5, [2001:DB8:1::7]:80', trusted), '2001:db8::5', 'IPv6 hops, bracketed with a port');
  t.equal(clientAddress('2001:db8::1', '203.0.113.7:5555', trusted), '203.0.113.7', 'an IPv6 proxy forwarding an IPv4 client with its port');
  t.equal(clientAddress('10.1.1.1', '203.0.113.7, unknown', trusted), '10.1.1.1', 'an entry that is not an address stops at the proxy that wrote it');
  t.equal(clientAddress('10.1.1.1', '203.0.113.7,, ', trusted), '203.0.113.7', 'empty entries are skipped');
  t.equal(clientAddress('10.1.1.1', undefined, trusted), '10.1.1.1', 'no header: the proxy itself');
  t.equal(clientAddress('198.51.100.1', '203.0.113.7', trusted), '198.51.100.1', 'an untrusted peer cannot name another address');
  t.equal(clientAddress('10.1.1.1', '203.0.113.7', new TrustedProxies([])), '10.1.1.1', 'nothing trusted: the header is ignored');
  t.equal(clientAddress('10.1.1.1', '203.0.113.7', undefined), '10.1.1.1');
});
