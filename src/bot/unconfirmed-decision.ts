import { StoreError } from '../store/index.js';

/**
 * What the clicker is told when the store withdrew their decision because too few Redis replicas
 * confirmed it (REDIS_WAIT_REPLICAS): nothing is recorded and the card keeps its buttons, so clicking
 * again is safe. Undefined for any other error.
 */
export function unconfirmedDecisionText(error: unknown): string | undefined {
  if (!(error instanceof StoreError) || error.code !== 'durability_unconfirmed') return undefined;
  return 'Your decision was not recorded: Redis could not confirm that it reached a replica. Nothing was changed; please try again in a moment.';
}
