/** The activity half of the Temporal floor (bench/workflows/floor.ts). */
export function createFloorActivities() {
  return {
    async noopActivity(): Promise<void> {
      // Nothing: what remains of the round trip is Temporal's own cost.
    },
  };
}

export type FloorActivities = ReturnType<typeof createFloorActivities>;
