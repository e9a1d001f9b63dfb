/**
 * The shape of a V8 CPU profile (`.cpuprofile`, the inspector's `Profiler.stop` result), as the
 * bench's profile readers use it.
 *
 * @module
 */

export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}
