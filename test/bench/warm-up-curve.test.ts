import { describe, expect, it } from 'vitest';
import { renderWarmUpCurve, type CurveBlock, type WarmUpCurve } from './warm-up-curve.ts';

const blocks = (...cpu: number[]): CurveBlock[] => cpu.map((us, i) => ({ from: i * 500, calls: 500, proxyCpuUsPerCall: us, p50: 2, errors: 0 }));

describe('the warm-up curve report', () => {
  const curve: WarmUpCurve = {
    callsPerBlock: 500,
    sides: [
      { side: 'switchyard-legacy', blocks: blocks(2000, 1200, 1000) },
      { side: 'supergateway', blocks: blocks(3000, 2000, 1600) },
    ],
  };
  const text = renderWarmUpCurve(curve).join('\n');

  it('heads each block with the calls it covers', () => {
    expect(text).toContain('| side | 1–500 | 501–1000 | 1001–1500 |');
  });

  it('says how much a fresh process costs over a burnt-in one, and against supergateway at both ends', () => {
    expect(text).toContain('legacy session (b): first block ÷ last 2×, ÷ supergateway 0.67× first and 0.63× last');
    expect(text).toContain('supergateway --stateful (e): first block ÷ last 1.88×.');
  });

  it('shows a block with errors as such', () => {
    const failing: WarmUpCurve = { callsPerBlock: 500, sides: [{ side: 'supergateway', blocks: [{ from: 0, calls: 500, proxyCpuUsPerCall: 900, p50: 3, errors: 4 }] }] };
    expect(renderWarmUpCurve(failing).join('\n')).toContain('| 900 (3), 4 errors |');
  });
});
