/** The events of an SSE body, as a test reads them: comments (keep-alives) left out, each event's id and data. */
export interface SseEvent {
  id?: string;
  data: string;
}

export function eventsOf(text: string): SseEvent[] {
  return text.split('\n\n').filter((block) => block.trim() !== '' && !block.startsWith(':')).map((block) => {
    const id = /^id: (.*)$/m.exec(block)?.[1];
    const data = /^data: ?(.*)$/m.exec(block)?.[1] ?? '';
    return id === undefined ? { data } : { id, data };
  });
}
