import {
  appendAt,
  ConfigFileError,
  docValue,
  type JsonDoc,
  type JsonPath,
  nodeAt,
  removeAt,
  setAt,
} from './json-edit.js';
import {
  type EntryState,
  FOREIGN_MCP,
  hookGroups,
  isObject,
  isOurHook,
  type Launcher,
  mcpServer,
  mcpServerState,
  sameValue,
} from './ours.js';
import type { HookKind, RuntimeTable } from './table.js';

/**
 * Our entries in a runtime's JSON configuration: the matcher groups under `hooks.<Event>` and the
 * `mcpServers.harness` server. Everything else in the file is someone else's and is left alone.
 */

/** What we may drop once our removal empties it: an event's array, `hooks`, `mcpServers`. */
const ours = (container: JsonPath) =>
  (container.length === 2 && container[0] === 'hooks') ||
  (container.length === 1 && (container[0] === 'hooks' || container[0] === 'mcpServers'));

function eventList(doc: JsonDoc, event: string): unknown[] {
  nodeAt(doc, ['hooks', event]);
  const hooks = (docValue(doc) as Record<string, unknown>)['hooks'];
  if (hooks === undefined) return [];
  if (!isObject(hooks)) throw new ConfigFileError(doc.file, '`hooks` is not an object');
  const list = hooks[event];
  if (list === undefined) return [];
  if (!Array.isArray(list)) throw new ConfigFileError(doc.file, `\`hooks.${event}\` is not an array`);
  return list;
}

/** Where our hook objects are under one event: group index, hook index, and whether it is alone. */
function occurrences(list: unknown[], runtime: string): { group: number; hook: number; alone: boolean }[] {
  const found: { group: number; hook: number; alone: boolean }[] = [];
  list.forEach((g, group) => {
    const hooks = isObject(g) ? g['hooks'] : undefined;
    if (!Array.isArray(hooks)) return;
    hooks.forEach((h, hook) => {
      if (isOurHook(h, runtime)) found.push({ group, hook, alone: hooks.length === 1 });
    });
  });
  return found;
}

/** Each point's entry: `current` when it is exactly the group `harness connect` writes now. */
export function hookStates(
  doc: JsonDoc,
  table: RuntimeTable,
  launcher: Launcher,
): Record<HookKind, EntryState> {
  const states = {} as Record<HookKind, EntryState>;
  for (const { kind, event, group } of hookGroups(table, launcher)) {
    const list = eventList(doc, event);
    const [first, ...more] = occurrences(list, table.name);
    states[kind] =
      first === undefined
        ? 'absent'
        : more.length === 0 && first.alone && sameValue(list[first.group], group)
          ? 'current'
          : 'stale';
  }
  return states;
}

export function installHooks(doc: JsonDoc, table: RuntimeTable, launcher: Launcher): JsonDoc {
  for (const { event, group } of hookGroups(table, launcher)) {
    const list = eventList(doc, event);
    const [first, ...more] = occurrences(list, table.name);
    if (first !== undefined && more.length === 0 && first.alone) {
      // An entry of an older install (another entry path) is replaced where it stands.
      if (!sameValue(list[first.group], group)) doc = setAt(doc, ['hooks', event, first.group], group);
      continue;
    }
    doc = removeEventHooks(doc, event, table.name);
    doc = appendAt(doc, ['hooks', event], group);
  }
  return doc;
}

export function removeHooks(doc: JsonDoc, table: RuntimeTable): JsonDoc {
  for (const event of new Set(Object.values(table.events))) doc = removeEventHooks(doc, event, table.name);
  return doc;
}

/** Takes out our hook objects under `event`: their group when it holds nothing else. */
function removeEventHooks(doc: JsonDoc, event: string, runtime: string): JsonDoc {
  for (;;) {
    const at = occurrences(eventList(doc, event), runtime).at(-1);
    if (at === undefined) return doc;
    const path = at.alone ? ['hooks', event, at.group] : ['hooks', event, at.group, 'hooks', at.hook];
    doc = removeAt(doc, path, ours);
  }
}

export function mcpState(doc: JsonDoc, launcher: Launcher): EntryState {
  nodeAt(doc, ['mcpServers', 'harness']);
  const servers = (docValue(doc) as Record<string, unknown>)['mcpServers'];
  if (servers === undefined) return 'absent';
  if (!isObject(servers)) throw new ConfigFileError(doc.file, '`mcpServers` is not an object');
  return mcpServerState(servers['harness'], launcher);
}

export function installMcp(doc: JsonDoc, launcher: Launcher): JsonDoc {
  const state = mcpState(doc, launcher);
  if (state === 'foreign') throw new ConfigFileError(doc.file, FOREIGN_MCP);
  return state === 'current' ? doc : setAt(doc, ['mcpServers', 'harness'], mcpServer(launcher));
}

export function removeMcp(doc: JsonDoc, launcher: Launcher): JsonDoc {
  const state = mcpState(doc, launcher);
  return state === 'current' || state === 'stale' ? removeAt(doc, ['mcpServers', 'harness'], ours) : doc;
}
