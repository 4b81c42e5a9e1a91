package io.sluice.storage.ack;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;

class AckTrackerPropertyTest {
    @Property(tries = 200)
    void shouldMatchModelUnderRandomAcksRangesRelocationsAndReclaims(@ForAll long seed) {
        AckModel model = new AckModel();
        AckTracker tracker = new AckTracker();
        AckWorkload workload = new AckWorkload(seed, model, 70);
        AckWorkload.Target target = AckWorkload.of(tracker);
        for (int round = 0; round < 10; round++) {
            workload.run(target, 40);
            model.assertMatches(tracker);
        }
    }
}
