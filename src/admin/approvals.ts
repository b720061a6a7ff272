import type { Deps } from '../deps.js';
import { Conflict, NotFound, ValidationError } from '../errors.js';
import type { Route } from '../http/types.js';
import { ARTIFACT_MAX_SECONDS } from '../elevation/artifacts.js';
import { ALERT_KIND, DEFAULT_PRESET, deriveRequestStatus, effectiveGrantStatus, effectiveStepStatus, POLICY_PRESETS, REQUEST_MOVES } from '../elevation/model.js';
import { alertData, decideStep, revokeGrantTokens, settle, type Mover } from '../elevation/service.js';
import { exchangingClient, issueSubjectToken } from '../elevation/subject-token.js';
import { grantView, requestListItem, requestView } from '../elevation/view.js';
import { decodeCursor, page } from '../store/cursor.js';
import { newId } from '../store/ids.js';
import type { TenantStore } from '../store/index.js';
import { adminRoute, found } from './route.js';
import type { AdminContext } from './types.js';

const READ = 'admin:approvals:read';
const WRITE = 'admin:approvals:write';
const APPROVE = 'admin:approvals:approve';
const GRANT_ISSUE = 'admin:approvals:grant:issue';
const tags = ['approvals'];
const audit = (action: string, severity: 'info' | 'warn' = 'info') => ({ action, resourceType: 'approval_request', resourceParam: 'requestId', severity });

export const requestNotFound = () => new NotFound('not_found', 'No such approval request.');
const grantNotFound = () => new NotFound('not_found', 'No such elevation grant.');

export const moverOf = (ctx: AdminContext): Mover => ({ type: ctx.actor.type, id: ctx.actor.id });

async function fullView(store: TenantStore, id: string, now = Date.now()) {
  const r = found(await store.approvals.getRequest(id), requestNotFound);
  return requestView(r, await store.approvals.steps(r.id), await store.approvals.grants(r.id), now);
}

/** Approval requests, their steps and the elevation grants they yield (issue 12; spec, Elevation). */
export function approvalRoutes(deps: Deps): Route[] {
  const decision = (kind: 'approve' | 'deny') => adminRoute(deps, {
    method: 'POST', path: `/api/admin/approvals/:requestId/steps/:stepId/${kind}`, permission: APPROVE, tags, body: 'elevation.approval-decision',
    summary: kind === 'approve' ? 'Approve a portal_confirm step (never the requester; a step naming its approver takes only that one); email_otp, passkey and reauth steps are approved only through an approval artifact (403)' : 'Deny a step (or withdraw an approval): the request is denied and its grant revoked',
    response: { 200: 'elevation.approval-request' }, errors: [404, 409],
    audit: audit(`approval_step.${kind}`, kind === 'deny' ? 'warn' : 'info'),
    handler: async ({ deps, ctx, params, body, mutate }) => {
      const now = Date.now();
      const out = await mutate(async (tx, store) => {
        const r = found(await store.approvals.getRequest(params.requestId!, { lock: true }), requestNotFound);
        const s = await decideStep(deps, tx, store, r, params.stepId!, moverOf(ctx), { decision: kind, ...body }, now);
        const view = requestView(s.request, s.steps, s.grants, now);
        return { result: view, metadata: { step_id: s.step.id, status: s.status }, after: { status: s.status, step: s.step.status } };
      });
      return { body: out };
    },
  });

  return [
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/approvals', permission: READ, tags, query: 'query.approval-list',
      summary: 'List approval requests, newest first (status as it reads now, expiry included); awaiting=me: those with a step the caller may still decide', response: { 200: 'elevation.approval-list' },
      handler: async ({ ctx, store, query }) => {
        const now = Date.now();
        const { awaiting, ...rest } = query;
        const p = page(await store.approvals.listRequests({ ...rest, cursor: decodeCursor(query.cursor), awaitingActor: awaiting === 'me' ? ctx.actor.id : undefined }, now), query.limit);
        return { body: { items: p.items.map((r) => requestListItem(r)), cursor: p.next } };
      },
    }),
    adminRoute(deps, {
      method: 'POST', path: '/api/admin/approvals', permission: WRITE, tags, body: 'elevation.approval-create',
      summary: 'Request time-boxed elevated access, naming the approval steps it needs', response: { 201: 'elevation.approval-request' }, errors: [],
      audit: { action: 'approval_request.create', resourceType: 'approval_request', severity: 'warn' },
      handler: async ({ ctx, body, store, mutate }) => {
        const now = Date.now();
        const preset = body.policy_preset ?? DEFAULT_PRESET;
        const expiresAt = now + POLICY_PRESETS[preset]! * 1000;
        const details: Record<string, string[]> = {};
        if (!(await store.approvals.audienceKnown(body.audience))) details.audience = ['is not an audience of this tenant'];
        const keys = new Set<string>();
        body.approvals.forEach((a, i) => {
          if (keys.has(a.step_key)) (details[`approvals.${i}.step_key`] ??= []).push('is used by another step');
          keys.add(a.step_key);
          if (a.expires_at !== undefined && a.expires_at <= now) (details[`approvals.${i}.expires_at`] ??= []).push('is in the past');
        });
        if (Object.keys(details).length) throw new ValidationError(details);
        const id = newId('apr');
        const view = await mutate(async (_tx, st) => {
          await st.approvals.insertRequest({
            id, investigation_id: body.investigation_id ?? newId('inv'), request_surface: body.request_surface, requested_action: body.requested_action,
            target_subject_type: body.target_subject_type, target_subject_id: body.target_subject_id, resource_class: body.resource_class,
            resource_ids: body.resource_ids ?? [body.target_subject_id], redaction_level: body.redaction_level ?? 'masked', reason_code: body.reason_code,
            reason_note: body.reason_note ?? null, ticket_reference: body.ticket_reference ?? null, reference: body.reference ?? null,
            policy_preset: preset, partial_access_allowed: body.partial_access_allowed ?? false, allow_reexchange: body.allow_reexchange ?? false, audience: body.audience,
            requester_type: ctx.actor.type, requester_id: ctx.actor.id, requester_name: ctx.actor.displayName, expires_at: expiresAt,
          }, body.approvals.map((a) => ({
            id: newId('aps'), step_key: a.step_key, side: a.side, subject_type: a.subject_type, subject_id: a.subject_id ?? null, method: a.method,
            // A step never outlives its request.
            expires_at: Math.min(a.expires_at ?? expiresAt, expiresAt),
          })));
          const v = await fullView(st, id, now);
          return { result: v, resourceId: id, after: v };
        });
        return { status: 201, body: view };
      },
    }),
    adminRoute(deps, {
      method: 'GET', path: '/api/admin/approvals/:requestId', permission: READ, tags,
      summary: 'Get an approval request with its steps and grants', response: { 200: 'elevation.approval-request' }, errors: [404],
      handler: async ({ store, params }) => ({ body: await fullView(store, params.requestId!) }),
    }),
    adminRoute(deps, {
      method: 'POST', path: '/api/admin/approvals/:requestId/cancel', permission: WRITE, tags, body: 'elevation.approval-cancel',
      summary: 'Cancel a request: pending steps are cancelled and an active grant is revoked', response: { 200: 'elevation.approval-request' }, errors: [404, 409],
      audit: audit('approval_request.cancel', 'warn'),
      handler: async ({ deps, ctx, params, body, mutate }) => {
        const now = Date.now();
        const out = await mutate(async (tx, store) => {
          const r = found(await store.approvals.getRequest(params.requestId!, { lock: true }), requestNotFound);
          const status = deriveRequestStatus(r, await store.approvals.steps(r.id), now);
          if (!REQUEST_MOVES.cancel.has(status)) throw new Conflict('conflict', `The request is ${status}.`);
          await store.approvals.setRequestStatus(r.id, r.status, now);
          const s = await settle(deps, tx, store, { ...r, cancelled_at: now }, moverOf(ctx), now);
          const view = requestView(s.request, s.steps, s.grants, now);
          return { result: view, before: { status }, after: { status: s.status }, metadata: { reason_code: body.reason_code ?? null, reason_note: body.reason_note ?? null } };
        });
        return { body: out };
      },
    }),
    decision('approve'),
    decision('deny'),
    adminRoute(deps, {
      method: 'POST', path: '/api/admin/approvals/:requestId/steps/:stepId/artifacts', permission: WRITE, tags, body: 'elevation.artifact-create',
      summary: 'Issue a single-use approval artifact for a pending step (at most 10 minutes, never past the step)', response: { 201: 'elevation.artifact-created' }, errors: [404, 409],
      audit: audit('approval_artifact.issue'),
      handler: async ({ ctx, params, body, mutate }) => {
        const now = Date.now();
        const out = await mutate(async (_tx, store) => {
          const r = found(await store.approvals.getRequest(params.requestId!, { lock: true }), requestNotFound);
          const steps = await store.approvals.steps(r.id);
          const step = found(steps.find((s) => s.id === params.stepId), () => new NotFound('not_found', 'No such approval step.'));
          const status = deriveRequestStatus(r, steps, now);
          if (!REQUEST_MOVES.decide.has(status) || effectiveStepStatus(step, now) !== 'pending') throw new Conflict('conflict', `The step is ${effectiveStepStatus(step, now)} and its request ${status}.`);
          const a = await store.approvals.insertArtifact({
            id: newId('apa'), request_id: r.id, step_id: step.id, method: step.method, approver_id: step.subject_id, issued_by: ctx.actor.id,
            expires_at: Math.min(now + Math.min(body.expires_in ?? ARTIFACT_MAX_SECONDS, ARTIFACT_MAX_SECONDS) * 1000, Number(step.expires_at)),
          });
          const result = { artifact_id: a.id, request_id: r.id, step_id: step.id, method: a.method, approver_id: a.approver_id, expires_at: Number(a.expires_at) };
          return { result, metadata: { artifact_id: a.id, step_id: step.id }, after: result };
        });
        return { status: 201, body: out };
      },
    }),
    adminRoute(deps, {
      method: 'POST', path: '/api/admin/approvals/:requestId/grants/:grantId/revoke', permission: WRITE, tags, body: 'elevation.grant-revoke',
      summary: 'Revoke an active grant: every token minted from it becomes inactive at once', response: { 200: 'elevation.grant' }, errors: [404, 409],
      audit: audit('elevation_grant.revoke', 'warn'),
      events: ['security.alert'],
      handler: async ({ deps: d, ctx, params, body, mutate }) => {
        const now = Date.now();
        const out = await mutate(async (_tx, store, emit) => {
          const r = found(await store.approvals.getRequest(params.requestId!, { lock: true }), requestNotFound);
          const g = await store.approvals.getGrant(params.grantId!, { lock: true });
          if (!g || g.request_id !== r.id) throw grantNotFound();
          const status = effectiveGrantStatus(g, now);
          if (status !== 'active') throw new Conflict('conflict', `The grant is ${status}.`);
          const closed = found(await store.approvals.closeGrant(g.id, 'revoked', now, body.reason_code ?? 'manual'), grantNotFound);
          const tokens = await revokeGrantTokens(d, store, g.id, now);
          emit('security.alert', alertData(ALERT_KIND.revoked, g, r, moverOf(ctx)));
          return { result: grantView(closed, now), resourceId: r.id, metadata: { grant_id: g.id, tokens_revoked: tokens, reason_note: body.reason_note ?? null }, before: { status }, after: { status: 'revoked' } };
        });
        return { body: out };
      },
    }),
    adminRoute(deps, {
      method: 'POST', path: '/api/admin/approvals/:requestId/grants/:grantId/subject-token', permission: GRANT_ISSUE, tags, body: 'elevation.subject-token-request',
      summary: 'Issue a short-lived subject token for token exchange from an active elevation grant', response: { 200: 'elevation.subject-token' }, errors: [404, 409],
      audit: audit('elevation_grant.subject_token', 'warn'),
      handler: async ({ deps, ctx, params, body, mutate }) => {
        const now = Date.now();
        const out = await mutate(async (_tx, store) => {
          // The request is locked (shared with revocation and expiry) while the token is minted and recorded.
          const r = found(await store.approvals.getRequest(params.requestId!, { lock: true }), requestNotFound);
          const g = await store.approvals.getGrant(params.grantId!, { lock: true });
          if (!g || g.request_id !== r.id) throw grantNotFound();
          const reqStatus = deriveRequestStatus(r, await store.approvals.steps(r.id), now);
          const status = effectiveGrantStatus(g, now);
          if (status !== 'active' || reqStatus !== 'approved') throw new Conflict('conflict', `The grant is ${status} and its request ${reqStatus}; no token is issued.`);
          const client = await exchangingClient(deps, store.tenantId, body.client_id, g.audience);
          const remaining = Math.floor((Number(g.expires_at) - now) / 1000);
          if (remaining < 1) throw new Conflict('conflict', 'The grant is about to expire; no token is issued.');
          const result = await issueSubjectToken(deps, store, r, g, client, Math.min(body.expires_in ?? 300, remaining));
          return { result, resourceId: r.id, metadata: { grant_id: g.id, client_id: client.clientId, expires_in: result.expires_in } };
        });
        return { body: out };
      },
    }),
  ];
}

