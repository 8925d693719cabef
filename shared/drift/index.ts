// Schema drift around the pure schema core: the ingest gate, the Firestore retry store, the schema sweep.
export * from './bad-data';
export * from './ddl-pacer';
export * from './field-errors';
export * from './firestore-store';
export * from './gate';
export * from './proposal-merger';
export * from './protected-names';
export * from './row-json';
export * from './schema-cache';
export * from './store';
export * from './sweep';
export * from './table-admin';
