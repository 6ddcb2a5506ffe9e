/**
 * slack-app-manifest.yaml against the sources: the events the bot listens to, its slash command, the
 * request URLs, and a scope for every Slack Web API method called anywhere in src/, and no scope more.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { EVENTS_PATH } from '../../src/bot/app.js';
import { SLASH_COMMAND } from '../../src/bot/commands.js';
import { readRepoFile, readYaml, sourceFiles } from './repo-files.js';

const manifest = z
  .looseObject({
    display_information: z.looseObject({ name: z.string().min(1), description: z.string().max(140) }),
    features: z.looseObject({
      agent_view: z.looseObject({ agent_description: z.string().min(1).max(300) }).optional(),
      app_home: z.looseObject({ home_tab_enabled: z.boolean(), messages_tab_enabled: z.boolean() }),
      bot_user: z.looseObject({ display_name: z.string().min(1) }),
      slash_commands: z.array(
        z.looseObject({ command: z.string(), url: z.string(), usage_hint: z.string() }),
      ),
    }),
    oauth_config: z.looseObject({ scopes: z.looseObject({ bot: z.array(z.string()) }) }),
    settings: z.looseObject({
      event_subscriptions: z.looseObject({ request_url: z.string(), bot_events: z.array(z.string()) }),
      interactivity: z.looseObject({ is_enabled: z.boolean(), request_url: z.string() }),
      socket_mode_enabled: z.boolean(),
    }),
  })
  .parse(readYaml('slack-app-manifest.yaml'));

/**
 * The bot scopes each Web API method needs (null: none; several when it depends on the conversation's
 * kind), from Slack's method reference. A method the sources call that is missing here fails the test:
 * look its scope up and add both.
 */
const METHOD_SCOPES: Record<string, string | readonly string[] | null> = {
  'auth.test': null,
  'chat.postMessage': 'chat:write',
  'chat.update': 'chat:write',
  'chat.delete': 'chat:write',
  'chat.postEphemeral': 'chat:write',
  'chat.getPermalink': null,
  'reactions.add': 'reactions:write',
  'reactions.remove': 'reactions:write',
  'views.open': null,
  'views.publish': null,
  'usergroups.users.list': 'usergroups:read',
  'users.info': 'users:read',
  'users.lookupByEmail': 'users:read.email',
  // Public and private channels; in a DM only its requester may cancel, so im:read is not asked for.
  'conversations.members': ['channels:read', 'groups:read'],
  // Per-channel permissions; a DM is known by its D… id, so im:read is not asked for.
  'conversations.info': ['channels:read', 'groups:read'],
  'conversations.replies': 'channels:history',
  'assistant.threads.setStatus': 'assistant:write',
  'assistant.threads.setSuggestedPrompts': 'assistant:write',
  'assistant.threads.setTitle': 'assistant:write',
  // Streams and sessions (issue 14): the worker streams answers and keeps each run's agent session.
  'chat.startStream': 'chat:write',
  'chat.appendStream': 'chat:write',
  'chat.stopStream': 'chat:write',
  'agents.sessions.setStatus': 'assistant:write',
  'agents.sessions.rename': 'assistant:write',
};

/** The Web API methods of the agent features (issue 14): their scopes must be granted. */
const AGENT_METHODS = [
  'assistant.threads.setSuggestedPrompts',
  'assistant.threads.setTitle',
  'chat.startStream',
  'chat.appendStream',
  'chat.stopStream',
  'agents.sessions.setStatus',
  'agents.sessions.rename',
] as const;

/** The scope each event subscription needs. */
const EVENT_SCOPES: Record<string, string | null> = {
  app_mention: 'app_mentions:read',
  'message.channels': 'channels:history',
  'message.groups': 'groups:history',
  'message.im': 'im:history',
  'message.mpim': 'mpim:history',
  app_home_opened: null,
  agent_session_stopped: 'assistant:write',
  assistant_thread_started: 'assistant:write',
  assistant_thread_context_changed: 'assistant:write',
};

/**
 * Slack Web API methods called in src/: `client.<family>.<method>(` and `apiCall('<method>'`. The engine
 * (src/loop) never talks to Slack; its `client.chat.completions.create(` is the OpenAI SDK.
 */
function webApiMethods(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const file of sourceFiles('src').filter((f) => !f.startsWith('src/loop/'))) {
    const text = readRepoFile(file);
    const calls = [
      ...text.matchAll(/\bclient\.((?:[a-z]+\.)+[a-zA-Z]+)\(/g),
      ...text.matchAll(/\bapiCall\(\s*'([a-z]+(?:\.[a-zA-Z]+)+)'/g),
    ];
    for (const [, method] of calls)
      found.set(method as string, [...(found.get(method as string) ?? []), file]);
  }
  return found;
}

/** Event types the bot registers listeners for (`app.event('…')`, `app.message(…)`). */
function listenedEvents(): Set<string> {
  const events = new Set<string>();
  for (const file of sourceFiles('src/bot')) {
    const text = readRepoFile(file);
    for (const [, name] of text.matchAll(/\bapp\.event\(\s*'([a-z_]+)'/g)) events.add(name as string);
    if (/\bapp\.message\(/.test(text)) events.add('message');
  }
  return events;
}

const scopes = manifest.oauth_config.scopes.bot;
const subscribed = manifest.settings.event_subscriptions.bot_events;

describe('slack-app-manifest.yaml', () => {
  it('subscribes to exactly the events the bot listens to', () => {
    const listened = listenedEvents();
    expect(listened.size).toBeGreaterThan(0);
    for (const event of listened) {
      if (event === 'message') expect(subscribed.some((e) => e.startsWith('message.'))).toBe(true);
      else expect(subscribed).toContain(event);
    }
    for (const event of subscribed) {
      expect(listened.has(event.startsWith('message.') ? 'message' : event), event).toBe(true);
    }
    expect(subscribed).toEqual(
      expect.arrayContaining([
        'app_mention',
        'message.im',
        'message.channels',
        'message.groups',
        'app_home_opened',
      ]),
    );
  });

  it('declares the /loopgate command, and sends events, clicks and commands to /slack/events', () => {
    const commands = manifest.features.slash_commands;
    expect(commands.map((c) => c.command)).toEqual([SLASH_COMMAND]);
    expect(SLASH_COMMAND).toBe('/loopgate');
    expect(EVENTS_PATH).toBe('/slack/events');
    const urls = [
      manifest.settings.event_subscriptions.request_url,
      manifest.settings.interactivity.request_url,
      ...commands.map((c) => c.url),
    ];
    for (const url of urls) {
      expect(url.startsWith('https://')).toBe(true);
      expect(new URL(url).pathname).toBe(EVENTS_PATH);
    }
    expect(manifest.settings.interactivity.is_enabled).toBe(true);
    expect(manifest.settings.socket_mode_enabled).toBe(false);
  });

  it('enables the Home tab (app_home_opened) and the Messages tab (direct messages)', () => {
    expect(manifest.features.app_home.home_tab_enabled).toBe(subscribed.includes('app_home_opened'));
    expect(manifest.features.app_home.messages_tab_enabled).toBe(subscribed.includes('message.im'));
  });

  it('has the scope of every Web API method the sources call', () => {
    const methods = webApiMethods();
    expect([...methods.keys()]).toEqual(
      expect.arrayContaining(['chat.postMessage', 'usergroups.users.list']),
    );
    for (const [method, files] of methods) {
      expect(
        Object.hasOwn(METHOD_SCOPES, method),
        `${method} (${files.join(', ')}) is not in METHOD_SCOPES`,
      ).toBe(true);
      for (const scope of [METHOD_SCOPES[method] ?? []].flat()) {
        expect(scopes, `${method} needs ${scope}`).toContain(scope);
      }
    }
  });

  it('asks for no scope that no method, event or command needs', () => {
    const needed = new Set<string>(['commands']);
    for (const method of webApiMethods().keys()) {
      for (const scope of [METHOD_SCOPES[method] ?? []].flat()) needed.add(scope);
    }
    for (const event of subscribed) {
      const scope = EVENT_SCOPES[event];
      expect(scope, `no scope known for event ${event}`).not.toBeUndefined();
      if (scope) needed.add(scope);
    }
    expect([...scopes].sort()).toEqual([...needed].sort());
  });

  it('declares the agent features: the agent view, assistant:write, chat:write and the agent events', () => {
    expect(manifest.features.agent_view?.agent_description).toBeTruthy();
    expect(scopes).toEqual(expect.arrayContaining(['assistant:write', 'chat:write']));
    expect(subscribed).toEqual(
      expect.arrayContaining([
        'agent_session_stopped',
        'assistant_thread_started',
        'assistant_thread_context_changed',
      ]),
    );
    // Streams and sessions may not all be called yet: their scopes are granted all the same.
    for (const method of AGENT_METHODS) {
      for (const scope of [METHOD_SCOPES[method] ?? []].flat())
        expect(scopes, `${method} needs ${scope}`).toContain(scope);
    }
  });

  it('justifies every scope in a comment right above it', () => {
    const lines = readRepoFile('slack-app-manifest.yaml').split('\n');
    for (const scope of scopes) {
      const at = lines.findIndex((l) => l.trim() === `- ${scope}`);
      expect(lines[at - 1]?.trim().startsWith('#'), scope).toBe(true);
    }
  });
});
