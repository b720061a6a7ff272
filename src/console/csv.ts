/**
 * The first lines of a CSV file (RFC 4180: quoted fields, doubled quotes, CRLF or LF), for the import
 * screen's mapping table and its preview only: the whole file goes to the server as it is, which parses
 * and checks it again (src/imports/check-file.ts).
 */
export function readCsvHead(text: string, maxRows: number): { header: string[]; rows: string[][] } {
  const records: string[][] = [];
  let field = '';
  let record: string[] = [];
  let quoted = false;
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  for (; i < text.length && records.length <= maxRows; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { field += '"'; i++; } else if (c === '"') quoted = false; else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') { record.push(field); field = ''; }
    else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      record.push(field); field = '';
      if (record.length > 1 || record[0] !== '') records.push(record);
      record = [];
    } else field += c;
  }
  if (records.length <= maxRows && (field !== '' || record.length)) { record.push(field); records.push(record); }
  const [header = [], ...rows] = records;
  return { header, rows };
}
