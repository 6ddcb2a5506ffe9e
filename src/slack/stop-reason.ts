import type { StopReason } from '../loop/run-status.js';

/** Why a run ended, as a sentence for the thread; used when the run has no stopMessage of its own. */
export const STOP_REASON_SENTENCE: Record<StopReason, string> = {
  completed: 'The run completed.',
  max_steps: 'I stopped because I reached the maximum number of steps before finishing.',
  deadline: 'I stopped because the run took longer than its time limit.',
  token_budget: 'I stopped because the run used up its token budget.',
  cost_budget: 'I stopped because the run reached its cost limit.',
  loop_detected: 'I stopped because I kept making the same call with the same arguments.',
  tool_errors: 'I stopped because too many tool calls failed in a row.',
  model_error:
    'I stopped because the language model could not be reached, refused the request, or gave unusable replies.',
  validation_failed: 'I stopped because I could not produce an answer that passed the checks.',
  output_limit:
    'I stopped because the answer was cut off at the token limit, even when I asked for a shorter one.',
  content_filter: "I stopped because the model provider's content filter stopped the answer.",
  refused: 'I stopped because the model declined to answer.',
  internal_error: 'I stopped because loopgate itself failed to continue this run (see the logs).',
  context_overflow:
    "I stopped because the conversation no longer fit the model's context window, even after I summarised its earlier part.",
  cancelled: 'The run was cancelled.',
};
