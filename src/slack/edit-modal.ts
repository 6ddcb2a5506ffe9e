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
export const WHOLE = 'args';
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
export function editFields(schema: Record<string, unknown>): Field[] | null {
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
export type EditMetadata = z.infer<typeof EditMetadata>;

const json = (value: unknown) => JSON.stringify(value, null, 2) ?? '';

function element(field: Field, value: unknown): types.InputBlockElement {
  const base = { action_id: EDIT_INPUT };
  switch (field.kind) {
    case 'enum': {
      const options = (field.options ?? []).map((o) => ({ text: plainText(o, 75), value: o }));
      const initial = options.find((o) => o.value === value);
      return {
        ...base,
        type: 'static_select' as const,
        options,
        ...(initial ? { initial_option: initial } : {}),
      };
    }
    case 'number':
    case 'integer':
      return {
        ...base,
        type: 'number_input' as const,
        is_decimal_allowed: field.kind === 'number',
        ...(typeof value === 'number' ? { initial_value: String(value) } : {}),
      };
    case 'boolean': {
      const option = { text: plainText('true', 75), value: 'true' };
      return {
        ...base,
        type: 'checkboxes' as const,
        options: [option],
        ...(value === true ? { initial_options: [option] } : {}),
      };
    }
    case 'string':
      return {
        ...base,
        type: 'plain_text_input' as const,
        multiline: typeof value === 'string' && (value.length > 80 || value.includes('\n')),
        max_length: MAX_TEXT,
        ...(typeof value === 'string' ? { initial_value: value.slice(0, MAX_TEXT) } : {}),
      };
    case 'json':
      return {
        ...base,
        type: 'plain_text_input' as const,
        multiline: true,
        max_length: MAX_TEXT,
        ...(value === undefined ? {} : { initial_value: json(value).slice(0, MAX_TEXT) }),
      };
  }
}

/** The Edit modal for an approval of `tool` with arguments `args`. */
export function editModal(
  meta: EditMetadata & { tool: string; schema: Record<string, unknown>; args: unknown },
): ModalView {
  const privateMetadata = JSON.stringify(EditMetadata.parse(meta));
  const fields = editFields(meta.schema);
  const args = asRecord(meta.args) ?? {};
  const inputs: KnownBlock[] = fields
    ? fields.map((f) => ({
        type: 'input' as const,
        block_id: `arg:${f.name}`,
        optional: !f.required || f.kind === 'boolean',
        label: plainText(f.kind === 'json' ? `${f.name} (JSON)` : f.name, SLACK_LIMITS.inputLabel),
        element: element(f, args[f.name]),
        ...(f.description ? { hint: plainText(f.description, 150) } : {}),
      }))
    : [
        {
          type: 'input' as const,
          block_id: WHOLE,
          label: plainText('Arguments (JSON)', SLACK_LIMITS.inputLabel),
          element: element({ name: WHOLE, kind: 'json', required: true }, meta.args),
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

export type EditParse =
  | { ok: true; meta: EditMetadata; args: unknown }
  | { ok: false; meta: EditMetadata; errors: Record<string, string> };

function readValue(
  field: Field,
  v: z.infer<typeof StateValue> | undefined,
): { value?: unknown; error?: string } {
  if (!v) return {};
  switch (field.kind) {
    case 'enum':
      return v.selected_option ? { value: v.selected_option.value } : {};
    case 'boolean':
      return { value: (v.selected_options ?? []).length > 0 };
    case 'number':
    case 'integer': {
      if (v.value == null || v.value === '') return {};
      const n = Number(v.value);
      return Number.isFinite(n) ? { value: n } : { error: 'expected a number' };
    }
    case 'string':
      return v.value == null ? {} : { value: v.value };
    case 'json':
      if (v.value == null || v.value.trim() === '') return {};
      try {
        return { value: JSON.parse(v.value) };
      } catch (err) {
        return { error: `not valid JSON (${(err as Error).message})` };
      }
  }
}

/** Reads a submitted Edit modal back into arguments; throws a ZodError on a payload of another shape. */
export function parseEditSubmission(view: unknown, schema: Record<string, unknown>): EditParse {
  const parsed = EditSubmission.parse(view);
  const meta = EditMetadata.parse(JSON.parse(parsed.private_metadata));
  const values = parsed.state.values;
  const fields = editFields(schema);
  const errors: Record<string, string> = {};
  if (!fields) {
    const read = readValue({ name: WHOLE, kind: 'json', required: true }, values[WHOLE]?.[EDIT_INPUT]);
    if (read.error) return { ok: false, meta, errors: { [WHOLE]: read.error } };
    return { ok: true, meta, args: read.value ?? {} };
  }
  const args: Record<string, unknown> = {};
  for (const field of fields) {
    const read = readValue(field, values[`arg:${field.name}`]?.[EDIT_INPUT]);
    if (read.error) errors[`arg:${field.name}`] = read.error;
    else if (read.value !== undefined) args[field.name] = read.value;
  }
  return Object.keys(errors).length > 0 ? { ok: false, meta, errors } : { ok: true, meta, args };
}

/** The block of the form an error at `path` (a JSON pointer such as /params/env) belongs to. */
export function blockOfPath(schema: Record<string, unknown>, pointer: string): string {
  if (!editFields(schema)) return WHOLE;
  const top = pointer.split('/')[1];
  const names = Object.keys(asRecord(schema.properties) ?? {});
  return top && names.includes(top) ? `arg:${top}` : `arg:${names[0] ?? ''}`;
}
