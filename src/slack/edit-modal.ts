/**
 * The Edit modal: a form built from the tool's JSON Schema (kept on the approval), filled with the call's
 * current arguments. Per top-level property: a static select for a string enum, a number input for
 * numbers and integers, a checkbox for booleans, a text input for strings, and a JSON text input for
 * anything else (objects, arrays, unions). A schema without plain properties gets one JSON input for the
 * whole arguments. The submission is read back into an arguments object here; validating it against the
 * schema and the policy is the bot's job (src/bot/edit.ts).
 */
import type { types } from '@slack/bolt';
import { z } from 'zod';
import { context, type KnownBlock, type ModalView, plainText } from './block-kit.js';
import { CALLBACK_IDS } from './ids.js';
import { SLACK_LIMITS } from './limits.js';
import { escapeAndTruncate } from './mrkdwn.js';

/** Action id of every input; block ids are `arg:<name>`, or WHOLE for the whole arguments as JSON. */
export const EDIT_INPUT = 'value';
const WHOLE = 'args';
const MAX_FIELDS = 40;
const MAX_TEXT = 3_000;

type Kind = 'enum' | 'number' | 'integer' | 'boolean' | 'string' | 'json';
interface Field {
  name: string;
  kind: Kind;
  required: boolean;
  options?: string[];
  description?: string;
}
/** The one JSON input of a schema without plain properties. */
const WHOLE_FIELD: Field = { name: WHOLE, kind: 'json', required: true };

const asRecord = (v: unknown): Record<string, unknown> | undefined =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;

function kindOf(prop: Record<string, unknown>): Pick<Field, 'kind' | 'options'> {
  const values = Array.isArray(prop.enum) ? prop.enum : undefined;
  if (values && values.length > 0 && values.length <= 100 && values.every((v) => typeof v === 'string')) {
    return { kind: 'enum', options: values as string[] };
  }
  if (prop.type === 'number' || prop.type === 'integer' || prop.type === 'boolean')
    return { kind: prop.type };
  if (prop.type === 'string') return { kind: 'string' };
  return { kind: 'json' };
}

/** The form's fields, or null when the schema is not an object of plain properties (one JSON input then). */
function editFields(schema: Record<string, unknown>): Field[] | null {
  const properties = asRecord(schema.properties);
  if (schema.type !== 'object' || !properties) return null;
  const names = Object.keys(properties);
  if (names.length === 0 || names.length > MAX_FIELDS) return null;
  const required = new Set(Array.isArray(schema.required) ? schema.required.map(String) : []);
  return names.map((name) => {
    const prop = asRecord(properties[name]) ?? {};
    return {
      name,
      ...kindOf(prop),
      required: required.has(name),
      ...(typeof prop.description === 'string' ? { description: prop.description } : {}),
    };
  });
}

const EditMetadata = z.object({
  approvalId: z.string().min(1),
  channel: z.string().min(1),
  messageTs: z.string().min(1),
});
type EditMetadata = z.infer<typeof EditMetadata>;

/** JSON as the form shows it: indented when that fits an input, else compact. */
function jsonText(value: unknown): string {
  const pretty = JSON.stringify(value, null, 2) ?? '';
  return pretty.length <= MAX_TEXT ? pretty : (JSON.stringify(value) ?? '');
}

/**
 * What the form holds for `value` as Slack sends it back untouched (null: an empty input, no selection).
 * A field submitted with exactly this is unchanged, and keeps the call's own value (or its absence).
 */
function shownRaw(field: Pick<Field, 'kind' | 'options'>, value: unknown): string | null {
  switch (field.kind) {
    case 'enum':
      return typeof value === 'string' && (field.options ?? []).includes(value) ? value : null;
    case 'number':
    case 'integer':
      return typeof value === 'number' ? String(value) : null;
    case 'boolean':
      return value === true ? 'true' : 'false';
    case 'string':
      return typeof value === 'string' && value !== '' ? value : null;
    case 'json':
      return value === undefined ? null : jsonText(value);
  }
}

/** Whether the form can hold `value` whole; a field that cannot is shown read-only and kept as it is. */
function fitsForm(field: Pick<Field, 'kind' | 'options'>, value: unknown): boolean {
  return (shownRaw(field, value) ?? '').length <= MAX_TEXT;
}

function element(field: Field, value: unknown): types.InputBlockElement {
  const base = { action_id: EDIT_INPUT };
  const initial = shownRaw(field, value);
  switch (field.kind) {
    case 'enum': {
      const options = (field.options ?? []).map((o) => ({ text: plainText(o, 75), value: o }));
      const selected = options.find((o) => o.value === initial);
      return {
        ...base,
        type: 'static_select' as const,
        options,
        ...(selected ? { initial_option: selected } : {}),
      };
    }
    case 'number':
    case 'integer':
      return {
        ...base,
        type: 'number_input' as const,
        is_decimal_allowed: field.kind === 'number',
        ...(initial === null ? {} : { initial_value: initial }),
      };
    case 'boolean': {
      const option = { text: plainText('true', 75), value: 'true' };
      return {
        ...base,
        type: 'checkboxes' as const,
        options: [option],
        ...(initial === 'true' ? { initial_options: [option] } : {}),
      };
    }
    case 'string':
    case 'json':
      return {
        ...base,
        type: 'plain_text_input' as const,
        multiline:
          field.kind === 'json' || (initial !== null && (initial.length > 80 || initial.includes('\n'))),
        max_length: MAX_TEXT,
        ...(initial === null ? {} : { initial_value: initial }),
      };
  }
}

/** The note that stands for a field too long for the form: it is kept exactly as it is. */
function keptBlock(field: Field, value: unknown): KnownBlock {
  const length = (shownRaw(field, value) ?? '').length.toLocaleString('en-US');
  return context(
    `*${escapeAndTruncate(field.name, 200, '…')}* is ${length} characters, too long for a form field (${MAX_TEXT.toLocaleString('en-US')}): it is kept exactly as it is, and *Full text* on the card shows all of it. To change it, Reject the call and ask for another.`,
  );
}

/** The Edit modal for an approval of `tool` with arguments `args`. */
export function editModal(
  meta: EditMetadata & { tool: string; schema: Record<string, unknown>; args: unknown },
): ModalView {
  const privateMetadata = JSON.stringify(EditMetadata.parse(meta));
  const fields = editFields(meta.schema);
  const args = asRecord(meta.args) ?? {};
  const inputs: KnownBlock[] = fields
    ? fields.map((f) =>
        fitsForm(f, args[f.name])
          ? {
              type: 'input' as const,
              block_id: `arg:${f.name}`,
              optional: !f.required || f.kind === 'boolean',
              label: plainText(f.kind === 'json' ? `${f.name} (JSON)` : f.name, SLACK_LIMITS.inputLabel),
              element: element(f, args[f.name]),
              ...(f.description ? { hint: plainText(f.description, 150) } : {}),
            }
          : keptBlock(f, args[f.name]),
      )
    : [
        {
          type: 'input' as const,
          block_id: WHOLE,
          label: plainText('Arguments (JSON)', SLACK_LIMITS.inputLabel),
          element: element(WHOLE_FIELD, meta.args),
        },
      ];
  return {
    type: 'modal',
    callback_id: CALLBACK_IDS.edit,
    private_metadata: privateMetadata,
    title: plainText('Edit arguments', SLACK_LIMITS.modalTitle),
    submit: plainText('Submit', SLACK_LIMITS.modalTitle),
    close: plainText('Cancel', SLACK_LIMITS.modalTitle),
    blocks: [
      context(
        `Editing \`${escapeAndTruncate(meta.tool, 200, '…')}\`. The edited call is checked against the tool's schema and the policy's rules again. Submitting counts as your approval of it where those rules let you approve it; otherwise it waits for the approvers they name.`,
      ),
      ...inputs,
    ],
  };
}

const StateValue = z.looseObject({
  type: z.string(),
  value: z.string().nullish(),
  selected_option: z.looseObject({ value: z.string() }).nullish(),
  selected_options: z.array(z.looseObject({ value: z.string() })).nullish(),
});

const EditSubmission = z.looseObject({
  callback_id: z.literal(CALLBACK_IDS.edit),
  private_metadata: z.string(),
  state: z.looseObject({ values: z.record(z.string(), z.record(z.string(), StateValue)) }),
});

type EditParse =
  | { ok: true; meta: EditMetadata; args: unknown }
  | { ok: false; meta: EditMetadata; errors: Record<string, string> };

/** What Slack sent back for a field, in the form of shownRaw. */
function rawOf(field: Field, v: z.infer<typeof StateValue> | undefined): string | null {
  if (!v) return null;
  switch (field.kind) {
    case 'enum':
      return v.selected_option?.value ?? null;
    case 'boolean':
      return (v.selected_options ?? []).length > 0 ? 'true' : 'false';
    default:
      return v.value == null || v.value === '' ? null : v.value;
  }
}

/**
 * A field's value after the submission: the call's own value (or its absence) when the form could not
 * hold it or it comes back as it was shown, else what the person entered.
 */
function readValue(
  field: Field,
  v: z.infer<typeof StateValue> | undefined,
  current: unknown,
): { value?: unknown; error?: string } {
  const raw = rawOf(field, v);
  if (!fitsForm(field, current) || raw === shownRaw(field, current)) return { value: current };
  if (raw === null) return {};
  switch (field.kind) {
    case 'enum':
    case 'string':
      return { value: raw };
    case 'boolean':
      return { value: raw === 'true' };
    case 'number':
    case 'integer': {
      const n = Number(raw);
      return Number.isFinite(n) ? { value: n } : { error: 'expected a number' };
    }
    case 'json':
      try {
        return { value: JSON.parse(raw) };
      } catch (err) {
        return { error: `not valid JSON (${(err as Error).message})` };
      }
  }
}

/** The metadata of a submitted Edit modal; throws a ZodError on a payload of another shape. */
export function editSubmissionMeta(view: unknown): EditMetadata {
  return EditMetadata.parse(JSON.parse(EditSubmission.parse(view).private_metadata));
}

/**
 * Reads a submitted Edit modal back into arguments, over `current` (the call's arguments the form was
 * opened with): what the person did not change keeps its exact value. Throws a ZodError on a payload of
 * another shape.
 */
export function parseEditSubmission(
  view: unknown,
  schema: Record<string, unknown>,
  current: unknown,
): EditParse {
  const parsed = EditSubmission.parse(view);
  const meta = editSubmissionMeta(view);
  const values = parsed.state.values;
  const fields = editFields(schema);
  const errors: Record<string, string> = {};
  if (!fields) {
    const read = readValue(WHOLE_FIELD, values[WHOLE]?.[EDIT_INPUT], current);
    if (read.error) return { ok: false, meta, errors: { [WHOLE]: read.error } };
    return { ok: true, meta, args: read.value ?? {} };
  }
  const own = asRecord(current) ?? {};
  const args: Record<string, unknown> = {};
  for (const field of fields) {
    const read = readValue(field, values[`arg:${field.name}`]?.[EDIT_INPUT], own[field.name]);
    if (read.error) errors[`arg:${field.name}`] = read.error;
    else if (read.value !== undefined) args[field.name] = read.value;
  }
  return Object.keys(errors).length > 0 ? { ok: false, meta, errors } : { ok: true, meta, args };
}

/** Whether the form can hold `args` at all: a form of one JSON input needs all of them to fit it. */
export function formCanHold(schema: Record<string, unknown>, args: unknown): boolean {
  return editFields(schema) !== null || fitsForm(WHOLE_FIELD, args);
}

/** The block of the form an error at `path` (a JSON pointer such as /params/env) belongs to. */
export function blockOfPath(schema: Record<string, unknown>, pointer: string): string {
  if (!editFields(schema)) return WHOLE;
  const top = pointer.split('/')[1];
  const names = Object.keys(asRecord(schema.properties) ?? {});
  return top && names.includes(top) ? `arg:${top}` : `arg:${names[0] ?? ''}`;
}
