export { weeklyEpisodeWorkflow } from './weekly-episode';
export { episodeProductionWorkflow } from './episode-production';
export { paidStepWorkflow } from './paid-step';
export { episodeReassemblyWorkflow } from './episode-reassembly';
