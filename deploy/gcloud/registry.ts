// Which functions functions/index.ts registers with the Functions Framework, read from its syntax tree (no build,
// no import of the code): the deploy plan deploys exactly these.
import ts from 'typescript';
import { PIPELINES } from '../../shared/pipelines';

const FRAMEWORK = '@google-cloud/functions-framework';
/**
 * The call that registers every pipeline from the registry (shared/pipeline/runtime/entry-points.ts): it stands for
 * each pipeline's ingest (cloudEvent), schemaSweep (http, when drift is on) and fireWindows (http) entry points.
 */
const PIPELINE_REGISTRATION = 'registerPipelineFunctions';

/** The Functions Framework's declarative signatures we deploy. */
export type SignatureType = 'http' | 'cloudevent';

/** One `functions.http('name', …)` or `functions.cloudEvent('name', …)` registration. */
export interface RegisteredFunction {
  /** The registered name: the entry point (`--entry-point`). */
  readonly entryPoint: string;
  readonly signatureType: SignatureType;
}

const SIGNATURES: Readonly<Record<string, SignatureType>> = {
  http: 'http',
  cloudEvent: 'cloudevent',
};

/**
 * The registrations in `source` (a TypeScript module), in source order; a `registerPipelineFunctions(…)` call
 * stands for the ingest, schemaSweep and fireWindows entry points of every registered pipeline, from the registry.
 * Understands a namespace import
 * (`import * as functions from '@google-cloud/functions-framework'`) and named imports (`import { http } …`).
 * @throws Error when a registration's name is not a string literal (the plan must know it without running code),
 * or when a name is registered twice.
 */
export function registeredFunctions(
  source: string,
  fileName = 'functions/index.ts',
): RegisteredFunction[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.ES2022, true);
  const namespaces = new Set<string>();
  const named = new Map<string, SignatureType>();
  for (const statement of file.statements) {
    if (!ts.isImportDeclaration(statement)) continue;
    if (
      !ts.isStringLiteral(statement.moduleSpecifier) ||
      statement.moduleSpecifier.text !== FRAMEWORK
    )
      continue;
    const bindings = statement.importClause?.namedBindings;
    if (bindings === undefined) continue;
    if (ts.isNamespaceImport(bindings)) namespaces.add(bindings.name.text);
    else {
      for (const element of bindings.elements) {
        const signature = SIGNATURES[(element.propertyName ?? element.name).text];
        if (signature !== undefined) named.set(element.name.text, signature);
      }
    }
  }

  const found: RegisteredFunction[] = [];
  const add = (fn: RegisteredFunction, line: number): void => {
    if (found.some((f) => f.entryPoint === fn.entryPoint)) {
      throw new Error(`${fileName}:${line}: ${fn.entryPoint} is registered twice`);
    }
    found.push(fn);
  };
  const visit = (node: ts.Node): void => {
    if (
      ts.isCallExpression(node) &&
      ts.isIdentifier(node.expression) &&
      node.expression.text === PIPELINE_REGISTRATION
    ) {
      const line = file.getLineAndCharacterOfPosition(node.getStart()).line + 1;
      for (const p of PIPELINES) {
        add({ entryPoint: p.functions.ingest.entryPoint, signatureType: 'cloudevent' }, line);
        const sweep = p.functions.schemaSweep;
        if (sweep !== null) add({ entryPoint: sweep.entryPoint, signatureType: 'http' }, line);
        add({ entryPoint: p.functions.fireWindows.entryPoint, signatureType: 'http' }, line);
      }
    }
    if (ts.isCallExpression(node)) {
      const signature = signatureOf(node.expression, namespaces, named);
      if (signature !== undefined) {
        const first = node.arguments[0];
        const line = file.getLineAndCharacterOfPosition(node.getStart()).line + 1;
        if (first === undefined || !ts.isStringLiteralLike(first)) {
          throw new Error(`${fileName}:${line}: the function name must be a string literal`);
        }
        add({ entryPoint: first.text, signatureType: signature }, line);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

function signatureOf(
  callee: ts.Expression,
  namespaces: ReadonlySet<string>,
  named: ReadonlyMap<string, SignatureType>,
): SignatureType | undefined {
  if (ts.isIdentifier(callee)) return named.get(callee.text);
  if (
    ts.isPropertyAccessExpression(callee) &&
    ts.isIdentifier(callee.expression) &&
    namespaces.has(callee.expression.text)
  ) {
    return SIGNATURES[callee.name.text];
  }
  return undefined;
}
