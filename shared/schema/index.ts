// The pure schema core of the bad-data design: inference, merge, planning, guard rails, retry accounting.
export * from './api-schema';
export * from './column-names';
export * from './ddl';
export * from './infer';
export * from './plan';
export * from './proposals';
export * from './retry';
export * from './row';
export * from './type-lattice';
export * from './types';
export * from './permanence';
export * from './support';
