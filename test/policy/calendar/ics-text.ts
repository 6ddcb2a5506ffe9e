/** iCalendar text for tests: a VCALENDAR of events, CRLF line ends as RFC 5545 writes them. */
export function calendar(...events: string[][]): string {
  return ['BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//loopgate tests//EN', ...events.flat(), 'END:VCALENDAR']
    .map((line) => `${line}\r\n`)
    .join('');
}

/** One VEVENT with its UID and a DTSTAMP, and the lines given. */
export function event(uid: string, ...lines: string[]): string[] {
  return ['BEGIN:VEVENT', `UID:${uid}`, 'DTSTAMP:20261201T000000Z', ...lines, 'END:VEVENT'];
}
