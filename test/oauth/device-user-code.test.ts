import t from 'tap';
import { displayUserCode, newUserCode, normalizeUserCode, USER_CODE_ALPHABET } from '../../src/device/user-code.js';

// User codes (RFC 8628 6.1): base 20 without vowels, 8 characters shown XXXX-XXXX, typed loosely.
t.test('the alphabet has 20 characters and no vowels (no words), no digits (no 0/O, 1/I)', async (t) => {
  t.equal(new Set(USER_CODE_ALPHABET).size, 20);
  t.notMatch(USER_CODE_ALPHABET, /[AEIOUY0-9]/);
});

t.test('fresh codes use the whole alphabet and round-trip through display and typing', async (t) => {
  const seen = new Set<string>();
  for (let i = 0; i < 500; i++) {
    const c = newUserCode();
    t.match(c, /^[BCDFGHJKLMNPQRSTVWXZ]{8}$/);
    for (const ch of c) seen.add(ch);
    t.equal(normalizeUserCode(displayUserCode(c)), c);
    if (i > 20 && seen.size === 20) break;
  }
  t.equal(seen.size, 20, 'every character occurs');
});

t.test('typing: lower case, no dash or spaces are fine; anything else is not a code', async (t) => {
  t.equal(normalizeUserCode('bcdf-ghjk'), 'BCDFGHJK');
  t.equal(normalizeUserCode('bcdfghjk'), 'BCDFGHJK');
  t.equal(normalizeUserCode(' BCDF GHJK '), 'BCDFGHJK');
  for (const bad of ['', 'BCDF-GHJ', 'BCDF-GHJKL', 'BCDA-GHJK', 'BCDF_GHJK', 'BCDF-GHJ1', 'ＢCDF-GHJK', 'B'.repeat(40)]) t.equal(normalizeUserCode(bad), null, JSON.stringify(bad));
});
