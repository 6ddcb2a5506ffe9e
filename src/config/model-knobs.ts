import type { Logger } from '../log/logger.js';
import { fallbackModel } from '../loop/fallback-model.js';
import type { ModelPort } from '../loop/model-port.js';
import { createOpenAIModel, type SchemaFallback } from '../loop/openai-model.js';
import { readSecret } from '../tools/settings.js';
import type { Env } from './env.js';
import type { Policy } from './policy.js';

/**
 * The settings every model port of loopgate is made with, production and eval alike: timeout and retries
 * from the environment, schema form and parallel tool calls from the policy, a refused schema logged once
 * in the server's own words.
 */
export function modelKnobs(
  env: Pick<Env<'worker'>, 'OPENAI_MAX_RETRIES' | 'OPENAI_TIMEOUT_MS'>,
  policy: Pick<Policy, 'model'>,
  logger: Pick<Logger, 'warn'>,
) {
  return {
    maxRetries: env.OPENAI_MAX_RETRIES,
    timeoutMs: env.OPENAI_TIMEOUT_MS,
    schemas: policy.model.schemas,
    parallelToolCalls: policy.model.parallelToolCalls,
    onSchemaFallback: (f: SchemaFallback) =>
      logger.warn(
        {
          baseURL: f.baseURL,
          model: f.model,
          refused: f.refused,
          using: f.using,
          status: f.status,
          server: f.serverMessage,
        },
        `model server refused the ${f.refused} tool schemas (HTTP ${f.status}: ${f.serverMessage}); using the ${f.using} form for this endpoint and model from now on`,
      ),
  };
}

export type ModelEnv = Pick<
  Env<'worker'>,
  'OPENAI_API_KEY' | 'OPENAI_BASE_URL' | 'OPENAI_MAX_RETRIES' | 'OPENAI_TIMEOUT_MS' | 'OPENAI_MODEL'
>;

/**
 * The primary model, then `model.fallbacks` in order: each an OpenAI-compatible endpoint with the
 * primary's knobs (modelKnobs), its own server and key when the policy names them. The worker and the
 * eval build their models here, so both run a model the same way.
 */
export function modelChain(
  env: ModelEnv,
  policy: Pick<Policy, 'model'>,
  logger: Pick<Logger, 'warn'>,
  options: {
    fetch?: typeof fetch;
    primaryName?: string;
    /** Where `apiKeyEnv` secrets are read; default process.env. */
    secrets?: Readonly<Record<string, string | undefined>>;
  } = {},
): ModelPort {
  const primaryName = options.primaryName ?? policy.model?.name ?? env.OPENAI_MODEL;
  const base = { ...modelKnobs(env, policy, logger), ...(options.fetch ? { fetch: options.fetch } : {}) };
  const primary = createOpenAIModel({
    ...base,
    apiKey: env.OPENAI_API_KEY,
    ...(env.OPENAI_BASE_URL ? { baseURL: env.OPENAI_BASE_URL } : {}),
    model: primaryName,
  });
  const fallbacks = policy.model.fallbacks.map((f, i) => {
    const baseURL = f.baseUrl ?? env.OPENAI_BASE_URL;
    const apiKey = f.apiKeyEnv
      ? readSecret(options.secrets ?? process.env, f.apiKeyEnv, `model.fallbacks[${i}].apiKeyEnv`)
      : env.OPENAI_API_KEY;
    return {
      name: f.name,
      port: createOpenAIModel({ ...base, apiKey, ...(baseURL ? { baseURL } : {}), model: f.name }),
    };
  });
  return fallbackModel([{ name: primaryName, port: primary }, ...fallbacks], {
    onFallback: (failed, next, err) =>
      logger.warn({ failed, next, err: err.message }, 'model failed; asking the next fallback model'),
  });
}
