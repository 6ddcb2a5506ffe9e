/**
 * The Streamable HTTP counterpart of stdio's `maxBufferSize`: a fetch whose successful response bodies
 * are cut at `maxBytes` per message, so a server cannot make a worker buffer an unbounded reply. A JSON
 * body is one message; an event stream is counted per event (bytes since the last blank line), so a
 * long-lived stream of small events is not cut. Past the bound the body errors and `onTooLarge` is told
 * (the connection is then dropped, as stdio's is).
 */
export function boundedFetch(
  maxBytes: number,
  onTooLarge: (why: string) => void,
  base: typeof fetch = fetch,
): typeof fetch {
  return async (input, init) => {
    const response = await base(input, init);
    if (!response.ok || !response.body) return response;
    const events = (response.headers.get('content-type') ?? '').includes('text/event-stream');
    const sizeAfter = events ? eventSize(maxBytes) : bodySize();
    const why = `a reply of the server was larger than maxReplyBytes (${maxBytes} bytes)`;
    const counted = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          if (sizeAfter(chunk) > maxBytes) {
            controller.error(new Error(why));
            onTooLarge(why);
            return;
          }
          controller.enqueue(chunk);
        },
      }),
    );
    return new Response(counted, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

/** The size of the message being read, after one more chunk of the body. */
type MessageSize = (chunk: Uint8Array) => number;

/** A JSON body is one message: every byte counts. */
function bodySize(): MessageSize {
  let size = 0;
  return (chunk) => {
    size += chunk.byteLength;
    return size;
  };
}

/** An event stream: bytes since the last blank line, carriage returns aside; counting stops past `maxBytes`. */
function eventSize(maxBytes: number): MessageSize {
  let size = 0;
  let afterNewline = false;
  return (chunk) => {
    for (const byte of chunk) {
      if (byte === 0x0a) {
        // A blank line ends an event: what follows is the next message.
        if (afterNewline) size = 0;
        afterNewline = true;
      } else if (byte !== 0x0d) {
        afterNewline = false;
        size += 1;
      }
      if (size > maxBytes) break;
    }
    return size;
  };
}
