// The worker's log: one line per event, "TIMESTAMP worker[NAME] EVENT key=value ...",
// the time in UTC with milliseconds (ISO 8601), so that a supervisor or a test can read it.

// The line of one event.
export function formatLine(name, event, fields = {}, now = new Date()) {
  const parts = Object.entries(fields)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => ` ${k}=${v}`).join('');
  return `${now.toISOString()} worker[${name}] ${event}${parts}`;
}

// A logger writing each event's line to a stream (stdout by default).
export function streamLogger(name = 'node', stream = process.stdout) {
  return (event, fields) => { stream.write(`${formatLine(name, event, fields)}\n`); };
}

// A text as a log field: JSON-quoted, so that it stays on its line and one field.
export const quoted = (text) => JSON.stringify(String(text ?? ''));
