// Checks a deploy plan against Firestore's written fields: each (collection, field) must have an inventory decision
// the plan carries out (an exemption step for `exempt`, no exemption for `query`/`kept`), and each collection a TTL
// policy step or a stated reason for none. Shared by the unit test (plan vs inventory) and the emulator test (plan
// vs the fields the stores really write).
import { commandsOf } from '../../deploy/gcloud/steps';
import type { Plan } from '../../deploy/gcloud/options';
import { FIRESTORE_INVENTORY } from '../../shared/state/firestore-inventory';

/** The plan's Firestore settings: exempt `collection.field`s, TTL collections, composite `collection(a,b)`s. */
export function firestoreSettingsOf(plan: Plan): {
  exempt: Set<string>;
  ttl: Set<string>;
  composite: Set<string>;
} {
  const exempt = new Set<string>();
  const ttl = new Set<string>();
  const composite = new Set<string>();
  for (const c of plan.steps.flatMap(commandsOf).map((c) => c.join(' '))) {
    const group = /--collection-group=(\S+)/.exec(c)?.[1];
    let m: RegExpExecArray | null;
    if ((m = /^gcloud firestore indexes fields update (\S+) .*--disable-indexes/.exec(c))) {
      exempt.add(`${group}.${m[1]}`);
    } else if (/^gcloud firestore fields ttls update expireAt /.test(c)) {
      ttl.add(String(group));
    } else if (c.startsWith('gcloud firestore indexes composite create')) {
      const fields = [...c.matchAll(/field-path=([^,\s]+)/g)].map((f) => f[1]);
      composite.add(`${group}(${fields.join(',')})`);
    }
  }
  return { exempt, ttl, composite };
}

/**
 * What is wrong with `plan` for `written` (collection id → top-level fields): each problem as a sentence; none when
 * every written field and collection has a decision the plan carries out.
 */
export function firestoreCoverageProblems(
  plan: Plan,
  written: ReadonlyMap<string, ReadonlySet<string>>,
): string[] {
  const settings = firestoreSettingsOf(plan);
  const problems: string[] = [];
  for (const [collection, fields] of written) {
    const entry = FIRESTORE_INVENTORY.find((c) => c.collection === collection);
    if (entry === undefined) {
      problems.push(`${collection}: written, but not in the Firestore inventory`);
      continue;
    }
    if ('field' in entry.ttl && !settings.ttl.has(collection)) {
      problems.push(`${collection}: the inventory gives it a TTL, the plan sets none`);
    }
    for (const field of fields) {
      const decision = entry.fields[field];
      const exempted = settings.exempt.has(`${collection}.${field}`);
      if (decision === undefined) problems.push(`${collection}.${field}: written, no decision`);
      else if (decision.index === 'exempt' && !exempted) {
        problems.push(`${collection}.${field}: exempt in the inventory, no exemption in the plan`);
      } else if (decision.index !== 'exempt' && exempted) {
        problems.push(
          `${collection}.${field}: ${decision.index} in the inventory, exempt in the plan`,
        );
      }
    }
    for (const [a, b] of entry.composite ?? []) {
      if (!settings.composite.has(`${collection}(${a},${b})`)) {
        problems.push(`${collection}: composite index (${a}, ${b}) missing from the plan`);
      }
    }
  }
  return problems;
}
