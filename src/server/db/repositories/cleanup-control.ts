/**
 * The switches of cleanup and what guards a pass: the control row (halt switch, planning lease,
 * last pass), enforced policies (and the policies seen on environments, to enforce), and the
 * per-project circuit breakers. Every change is audited in the same transaction.
 */
import type { PassOutcome } from '../../../api/cleanup.js';
import { sql, type Kysely } from 'kysely';
import { isSqlite } from '../dialect.js';
import { writeAudit, type AuditInput } from './audit.js';
import type { Database } from '../schema.js';
import { monotonicMs } from '../../../monotonic.js';

/**
 * A reading of both clocks, kept after every pass so that a restart on the same host (the same
 * boot: the monotonic clock is the system's, counted from boot) still sees a step taken while
 * the server was down — and keeps the forward steps it compensates (cleanup/clock.ts).
 */
export interface ClockReading {
  wall: number;
  monotonic: number;
  forwardMs: number;
}

/** What persisted records and the database say of the wall clock. */
export interface ClockAnchors {
  /** When the last planning pass ended, on the clock of whoever ran it. */
  lastPassAt: number | null;
  /** The newest receive time of an event. */
  newestReceivedAt: number | null;
  /** PostgreSQL's own clock, read with the round trip it took (SQLite has none of its own). */
  database?: { now: number; roundTripMs: number };
}

export class CleanupControlRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly reader: Kysely<Database> = db,
  ) {}

  async control() {
    return this.reader
      .selectFrom('cleanup_control')
      .selectAll()
      .where('id', '=', 'global')
      .executeTakeFirstOrThrow();
  }

  /**
   * What the wall clock must not contradict: the last pass's end, the newest event's receipt and,
   * on PostgreSQL, the database's own clock (with the round trip it took to read).
   */
  async clockAnchors(o: { database: boolean }): Promise<ClockAnchors> {
    const [control, newest] = await Promise.all([
      this.db
        .selectFrom('cleanup_control')
        .select('last_pass_at')
        .where('id', '=', 'global')
        .executeTakeFirst(),
      this.reader
        .selectFrom('events')
        .select((eb) => eb.fn.max('received_at').as('at'))
        .executeTakeFirst(),
    ]);
    const time = (v: unknown) => (v == null ? null : Date.parse(String(v)));
    const anchors = { lastPassAt: time(control?.last_pass_at), newestReceivedAt: time(newest?.at) };
    if (!o.database || isSqlite(this.db)) return anchors;
    const sent = monotonicMs();
    const row = await sql<{ now: Date | string }>`select clock_timestamp() as now`.execute(this.db);
    const roundTripMs = monotonicMs() - sent;
    const now = new Date(row.rows[0]!.now).getTime() + roundTripMs / 2;
    return { ...anchors, database: { now, roundTripMs } };
  }

  /** The planning clock's last reading under a boot of the host, if one was kept. */
  async clockReading(bootId: string): Promise<ClockReading | undefined> {
    const row = await this.db
      .selectFrom('cleanup_clock_readings')
      .selectAll()
      .where('boot_id', '=', bootId)
      .executeTakeFirst();
    return (
      row && {
        wall: Number(row.wall_ms),
        monotonic: Number(row.monotonic_ms),
        forwardMs: Number(row.forward_ms),
      }
    );
  }

  async saveClockReading(bootId: string, r: ClockReading): Promise<void> {
    const values = {
      wall_ms: Math.round(r.wall),
      monotonic_ms: Math.round(r.monotonic),
      forward_ms: Math.round(r.forwardMs),
    };
    await this.db
      .insertInto('cleanup_clock_readings')
      .values({ boot_id: bootId, ...values })
      .onConflict((oc) => oc.column('boot_id').doUpdateSet(values))
      .execute();
  }

  /** How many passes have finished (on the writer: a pass compares it with the one it last stored). */
  async passSeq(): Promise<number> {
    const control = await this.db
      .selectFrom('cleanup_control')
      .select('pass_seq')
      .where('id', '=', 'global')
      .executeTakeFirstOrThrow();
    return Number(control.pass_seq);
  }

  async setHalted(halted: boolean, actor: string, now: Date): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const result = await trx
        .updateTable('cleanup_control')
        .set({
          halted: halted ? 1 : 0,
          halted_at: halted ? now.toISOString() : null,
          halted_by: halted ? actor : null,
        })
        .where('id', '=', 'global')
        .where('halted', '=', halted ? 0 : 1)
        .executeTakeFirst();
      const changed = Number(result.numUpdatedRows) === 1;
      if (changed) {
        await writeAudit(trx, now, [
          { actor, action: halted ? 'cleanup-halt' : 'cleanup-resume', detail: {} },
        ]);
      }
      return changed;
    });
  }

  /** Takes (or renews) the planning lease; false while another replica holds a live one. */
  async acquirePlanLease(owner: string, leaseMs: number, now: Date): Promise<boolean> {
    const at = now.toISOString();
    const result = await this.db
      .updateTable('cleanup_control')
      .set({
        plan_lease_owner: owner,
        plan_lease_expires_at: new Date(now.getTime() + leaseMs).toISOString(),
      })
      .where('id', '=', 'global')
      .where((eb) =>
        eb.or([
          eb('plan_lease_owner', 'is', null),
          eb('plan_lease_owner', '=', owner),
          eb('plan_lease_expires_at', '<', at),
        ]),
      )
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  /**
   * Ends a pass: releases the lease and records how the pass ended (`PassOutcome`, with why).
   */
  async releasePlanLease(
    owner: string,
    passMs: number,
    /** The pass's time; null keeps the last one (a pass skipped because the clock is wrong). */
    now: Date | null,
    outcome: { outcome: PassOutcome; note?: string } = { outcome: 'ok' },
  ): Promise<void> {
    await this.db
      .updateTable('cleanup_control')
      .set((eb) => ({
        plan_lease_owner: null,
        plan_lease_expires_at: null,
        pass_seq: eb('pass_seq', '+', 1),
        last_pass_at: now ? now.toISOString() : eb.ref('last_pass_at'),
        last_pass_ms: Math.round(passMs),
        last_pass_outcome: outcome.outcome,
        last_pass_note: outcome.note?.slice(0, 2000) ?? null,
      }))
      .where('id', '=', 'global')
      .where('plan_lease_owner', '=', owner)
      .execute();
  }

  async policies() {
    return this.reader
      .selectFrom('cleanup_policies')
      .selectAll()
      .orderBy('project')
      .orderBy('environment')
      .execute();
  }

  /** The policies seen on active environments of a project (and environment name). */
  async seenPolicies(project: string, environment?: string) {
    let q = this.db
      .selectFrom('environments')
      .select(['name', 'policy_after_inactivity', 'policy_action', 'policy_after_close', 'policy_schedule'])
      .where('project', '=', project)
      .where('state', 'in', ['active', 'paused'])
      .where('policy_action', 'is not', null)
      .distinct();
    if (environment) q = q.where('name', '=', environment);
    return q.execute();
  }

  async enforce(
    rows: {
      project: string;
      environment: string;
      afterMs: number;
      action: string;
      text: string;
      afterCloseMs: number | null;
      schedule: string | null;
    }[],
    actor: string,
    now: Date,
  ): Promise<void> {
    const at = now.toISOString();
    await this.db.transaction().execute(async (trx) => {
      for (const r of rows) {
        await trx
          .insertInto('cleanup_policies')
          .values({
            project: r.project,
            environment: r.environment,
            after_inactivity_ms: r.afterMs,
            action: r.action,
            after_close_ms: r.afterCloseMs,
            schedule: r.schedule,
            enforced_at: at,
            enforced_by: actor,
          })
          .onConflict((oc) =>
            oc.columns(['project', 'environment']).doUpdateSet({
              after_inactivity_ms: r.afterMs,
              action: r.action,
              after_close_ms: r.afterCloseMs,
              schedule: r.schedule,
              enforced_at: at,
              enforced_by: actor,
            }),
          )
          .execute();
      }
      await writeAudit(
        trx,
        now,
        rows.map((r) => ({
          actor,
          action: 'policy-enforce',
          detail: {
            project: r.project,
            environment: r.environment,
            afterInactivity: r.text,
            action: r.action,
            ...(r.afterCloseMs !== null ? { afterCloseMs: r.afterCloseMs } : {}),
            ...(r.schedule !== null ? { schedule: JSON.parse(r.schedule) as unknown } : {}),
          },
        })),
      );
    });
  }

  async breakers() {
    return this.reader.selectFrom('cleanup_breakers').selectAll().orderBy('project').execute();
  }

  async openBreakers(
    opened: { project: string; dueCount: number; activeCount: number }[],
    actor: string,
    now: Date,
  ): Promise<void> {
    if (opened.length === 0) return;
    await this.db.transaction().execute(async (trx) => {
      const audits: AuditInput[] = [];
      for (const b of opened) {
        const result = await trx
          .insertInto('cleanup_breakers')
          .values({
            project: b.project,
            opened_at: now.toISOString(),
            due_count: b.dueCount,
            active_count: b.activeCount,
          })
          .onConflict((oc) => oc.column('project').doNothing())
          .executeTakeFirst();
        if (Number(result.numInsertedOrUpdatedRows ?? 0) > 0) {
          audits.push({
            actor,
            action: 'breaker-open',
            detail: {
              project: b.project,
              due: b.dueCount,
              active: b.activeCount,
              message: `${b.dueCount} of ${b.activeCount} environments under enforced policies due at once; nothing is cleaned in ${b.project} until an admin resets the breaker`,
            },
          });
        }
      }
      await writeAudit(trx, now, audits);
    });
  }

  async resetBreaker(project: string, actor: string, now: Date): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const result = await trx
        .deleteFrom('cleanup_breakers')
        .where('project', '=', project)
        .executeTakeFirst();
      if (Number(result.numDeletedRows) !== 1) return false;
      await writeAudit(trx, now, [{ actor, action: 'breaker-reset', detail: { project } }]);
      return true;
    });
  }
}
