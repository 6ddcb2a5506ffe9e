export * from './connection.js';
export * from './job-data.js';
export * from './job-ids.js';
export * from './job-options.js';
export * from './names.js';
export * from './runs-queue.js';
