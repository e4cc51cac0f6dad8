export { weeklyEpisodeWorkflow } from './weekly-episode';
