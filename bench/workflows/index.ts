/** The real workflows plus the bench-only floor, bundled together so that one worker runs both, interleaved. */
export * from '../../src/workflows';
export { floorWorkflow } from './floor';
