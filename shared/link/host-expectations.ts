/**
 * What a worker expects of one host, sent to it in the `link-accepted` of a doctor's link probe
 * (`LINK_PROBE_HEADER`), so `switchyard doctor` on the workstation can compare it with the host's
 * own files: the servers the worker routes to this host to launch there, and each trust profile
 * its agents name for them, at the revision they pin.
 *
 * It flows worker → host only, and only to a host that has just proved its key. It holds names
 * and revisions the worker config holds anyway; the host never tells the worker its own
 * revisions (DESIGN §5), so a worker cannot learn what would pass the stale check.
 *
 * @module
 */
import * as z from '../zod.ts';
import { AgentNameSchema, ProfileRefSchema, RevisionSchema, ServerNameSchema } from '../names.ts';

export const hostExpectationsSchema = z.lazily(() =>
  z.strictObject({
    servers: z.array(ServerNameSchema).check(z.maxLength(1000)),
    'trust-profiles': z
      .array(z.strictObject({ ref: ProfileRefSchema, revision: RevisionSchema, agents: z.array(AgentNameSchema).check(z.maxLength(1000)) }))
      .check(z.maxLength(1000)),
  }),
);

export type HostExpectations = z.infer<ReturnType<typeof hostExpectationsSchema>>;
