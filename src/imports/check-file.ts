import { isUtf8 } from 'node:buffer';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { CsvError, parse } from 'csv-parse';
import { AppError, JobError, TooManyRows } from '../errors.js';
import { LIMITS } from '../field-mapping/model.js';

/** How an import's file is read: here, when it is sent, and by the worker (src/imports/run-import.ts), alike. */
export const IMPORT_CSV = { bom: true, skip_empty_lines: true, trim: false, max_record_size: 64 * 1024 } as const;

// The file is parsed in slices of this many bytes, the event loop turning between them: a 30 MB file
// costs the HTTP process a few hundred milliseconds of CPU, never in one piece.
const SLICE = 64 * 1024;

/**
 * Everything that would make an import fail as a whole, found before the job is accepted (202 is left for
 * row-level problems, which the worker records row by row): text that is not UTF-8, a malformed header,
 * a header without the mapped columns, a body that does not parse, more than LIMITS.importRows rows.
 * `file` is the CSV's UTF-8 bytes as they will be stored, `body` the request's raw bytes (the JSON
 * parser already replaced what was not UTF-8). Reads the file once, as a stream, up to the first problem.
 * Returns the number of rows. Messages name lines, columns and column names, never a value.
 */
export async function checkImportFile(a: { csv: string; file: Buffer; body: Buffer; columns: string[] }): Promise<number> {
  checkEncoding(a.csv, a.body);
  let header: string[] | undefined;
  let rows = 0;
  const parser = parse({
    ...IMPORT_CSV,
    columns: (first: string[]) => { checkHeader(first, a.columns, parser.info.lines); header = first; return first; },
  });
  const count = new Writable({
    objectMode: true,
    write(_row, _enc, done) { done(++rows > LIMITS.importRows ? new TooManyRows(LIMITS.importRows) : undefined); },
  });
  try {
    await pipeline(Readable.from(slices(a.file)), parser, count);
  } catch (err) {
    if (err instanceof AppError) throw err;
    if (err instanceof CsvError) throw new JobError('import_failed', describeCsvError(err, header));
    throw err;
  }
  if (!header) throw new JobError('import_failed', 'The file has no CSV header line.');
  return rows;
}

async function* slices(file: Buffer): AsyncGenerator<Buffer> {
  for (let i = 0; i < file.length; i += SLICE) {
    if (i > 0) await nextTurn();
    yield file.subarray(i, i + SLICE);
  }
}

// A lone surrogate (a JSON escape no UTF-8 text can hold) or U+FFFD (what the JSON reader, or an earlier
// conversion, put where bytes were not UTF-8).
const NOT_TEXT = /\uFFFD|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function checkEncoding(csv: string, body: Buffer): void {
  const m = NOT_TEXT.exec(csv);
  if (!m) {
    if (!isUtf8(body)) throw new JobError('import_failed', 'The request body is not valid UTF-8.');
    return;
  }
  const before = csv.slice(0, m.index);
  const line = (before.match(/\n/g)?.length ?? 0) + 1;
  const character = [...before.slice(before.lastIndexOf('\n') + 1)].length + 1;
  const where = `line ${line}, character ${character}`;
  throw new JobError('import_failed', m[0] !== '\uFFFD' || !isUtf8(body)
    ? `The file is not valid UTF-8 text (${where}): save it as UTF-8 and send it again.`
    : `The file holds U+FFFD, the replacement character an earlier conversion leaves where it lost text (${where}): convert the original file to UTF-8 and send it again.`);
}

function checkHeader(header: string[], mapped: string[], line: number): void {
  const seen = new Set<string>();
  header.forEach((name, i) => {
    if (name !== '' && seen.has(name)) throw new JobError('import_failed', `The CSV header is malformed at line ${line}, column ${i + 1}: the column name ${JSON.stringify(name)} appears twice.`);
    seen.add(name);
  });
  const missing = mapped.filter((c) => !seen.has(c));
  if (missing.length) throw new JobError('import_failed', `The header lacks the columns: ${missing.join(', ')}.`);
}

const REASONS: Partial<Record<string, string>> = {
  INVALID_OPENING_QUOTE: 'a quote appears inside a field that does not start with one (quote the whole field, and double a quote inside it)',
  CSV_INVALID_CLOSING_QUOTE: 'a quoted field goes on after its closing quote (double a quote inside a quoted field)',
  CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE: 'a quoted field goes on after its closing quote (double a quote inside a quoted field)',
  CSV_QUOTE_NOT_CLOSED: 'a quoted field is never closed',
  CSV_MAX_RECORD_SIZE: `a row is longer than ${IMPORT_CSV.max_record_size / 1024} KiB`,
};

/** A parse error as the operator can act on it: where (csv-parse's line and field index), and what, without the field's value. */
function describeCsvError(e: CsvError, header: string[] | undefined): string {
  const line = typeof e.lines === 'number' ? e.lines : undefined;
  const what = header ? 'The CSV' : 'The CSV header';
  if (e.code === 'CSV_RECORD_INCONSISTENT_COLUMNS' || e.code === 'CSV_RECORD_INCONSISTENT_FIELDS_LENGTH') {
    const got = Array.isArray(e.record) ? e.record.length : undefined;
    return `${what} is malformed at line ${line}: the row has ${got ?? 'a different number of'} fields where the header has ${header?.length ?? 'another number'}.`;
  }
  const column = typeof e.index === 'number' ? `, column ${e.index + 1}` : '';
  return `${what} is malformed at line ${line}${column}: ${REASONS[e.code] ?? `it cannot be parsed (${e.code})`}.`;
}
