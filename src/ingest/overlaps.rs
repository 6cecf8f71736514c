//! GPU records that overrun the next one on their stream. A stream runs its work one piece at a
//! time, so an overlap there is the tracer's timestamps (seen on CUDA and ROCm traces): each
//! such record is clipped to the next one's start and counted (`TraceMeta::clipped`, an ingest
//! warning), so that no time counts twice; its duration as written stays for the fingerprint
//! and the export (`Trace::written_dur`).

use crate::model::{Clipped, Events, Track};

/// Clips each GPU record (kernel, copy, memset, collective) that runs past the start of the
/// next one on its stream to that start: a stream runs its work one piece at a time, so the
/// overlap is the tracer's timestamps, and clipped it is counted once. Of two records starting
/// together the shorter (sorted second) is clipped to nothing. Returns what was clipped.
pub(super) fn clip(e: &mut Events, tracks: &[Track]) -> Clipped {
    let mut clipped = Clipped::default();
    for track in tracks.iter().filter(|t| t.gpu) {
        let mut prev: Option<usize> = None;
        for i in track.events.clone().map(|i| i as usize) {
            // A zero-length record (an instant) overruns nothing and is nothing to clip.
            if !e.kind[i].is_gpu_work() || e.dur[i] == 0 {
                continue;
            }
            let Some(p) = prev.filter(|&p| e.end(p) > e.start[i]) else {
                prev = Some(i);
                continue;
            };
            clipped.records += 1;
            if e.start[i] > e.start[p] {
                clipped.ns += e.end(p) - e.start[i];
                clipped.written.push((p as u32, e.dur[p]));
                e.dur[p] = e.start[i] - e.start[p];
                prev = Some(i);
            } else {
                clipped.ns += e.dur[i];
                clipped.written.push((i as u32, e.dur[i]));
                e.dur[i] = 0;
            }
        }
    }
    clipped.written.sort_unstable();
    clipped
}
