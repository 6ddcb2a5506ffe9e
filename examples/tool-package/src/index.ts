// Every tool of the package: list the package under `custom:` in loopgate.yaml and loopgate loads both.
export { changePlan } from './change-plan.js';
export { lookupCustomer } from './lookup-customer.js';
