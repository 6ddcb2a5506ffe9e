/** The part of `pg` the tests use (the package ships no types and @types/pg is not installed). */
declare module 'pg' {
  interface QueryResult {
    rows: Array<Record<string, unknown>>;
  }
  class Client {
    constructor(config: { connectionString: string });
    connect(): Promise<void>;
    query(text: string): Promise<QueryResult>;
    end(): Promise<void>;
  }
  const pg: { Client: typeof Client };
  export default pg;
}
