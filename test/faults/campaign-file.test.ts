/** The smoke campaign on the file store (testkit/campaign-smoke.ts); a file per store, so that the two run side by side. */
import { describeCampaignSmoke } from '../../testkit/campaign-smoke';

describeCampaignSmoke('file');
