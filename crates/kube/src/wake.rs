//! Fewer wake-ups under load, for the one-thread runtime ([`nap_if_crowded`]).
//!
//! ork spends its time waiting: on the API server, on the services. Each answer or watch event
//! that arrives while the thread sleeps wakes it, and on a busy machine the wake-up (the switch
//! back in after `epoll_wait`) costs about as much as handling the answer: 8 % of ork's CPU
//! during a burst of 2,000 new CRs was that switch. While many reconciles are in flight,
//! answers come as a stream, and a thread that naps a moment before it parks finds several
//! ready at once and handles them in one wake-up (the interrupt moderation of network cards).
//! Measured on 2 cores, 2,000 new CRs, alternated runs: ork's CPU per CR 0.63 → 0.52 ms with
//! the same time to converge and the same latencies; counting the lane's writes too (16 CRs' at
//! a time) took the lane's tail after convergence from 0.32 to 0.21 CPU-s. A nap of 4 ms saved
//! little more and made a full resync pass 55 % longer. With few reconciles in flight (an edit
//! on a quiet cluster) the thread never naps, so a lone change keeps its latency. The thread
//! naps only when it has nothing to run: a process that is itself the limit never parks. The
//! price: an answer that comes during a nap waits for its end (1 ms on average at 2 ms), so a
//! reconcile of several round trips takes a few milliseconds longer under load. Where the
//! machine has CPU to spare and the workers, not the API server, set the pace, that is
//! throughput lost; `ork run --wake-nap 0` turns the naps off.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Reconciles and CRs' lane writes in flight in this process, every entry together.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
/// Of those, the CRs' lane writes.
static LANE: AtomicUsize = AtomicUsize::new(0);

/// Counts one reconcile in flight until dropped.
pub(crate) struct InFlight(());

impl InFlight {
    pub fn enter() -> InFlight {
        IN_FLIGHT.fetch_add(1, Ordering::Relaxed);
        InFlight(())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Counts one CR's lane writes in flight until dropped.
pub(crate) struct LaneInFlight(InFlight);

impl LaneInFlight {
    pub fn enter() -> LaneInFlight {
        LANE.fetch_add(1, Ordering::Relaxed);
        LaneInFlight(InFlight::enter())
    }
}

impl Drop for LaneInFlight {
    fn drop(&mut self) {
        LANE.fetch_sub(1, Ordering::Relaxed);
    }
}

/// CRs' lane writes in flight in this process.
pub(crate) fn lane_in_flight() -> usize {
    LANE.load(Ordering::Relaxed)
}

/// Reconciles (or CRs' lane writes) in flight from which answers come as a stream.
pub const CROWD: usize = 4;

/// The park hook of the one-thread runtime (tokio's `on_thread_park`): naps for `nap` while at
/// least [`CROWD`] reconciles are in flight. `ork run --wake-nap` (2 ms by default: long enough
/// for several answers to gather, short against the tens of milliseconds a reconcile waits on
/// a busy API server).
pub fn nap_if_crowded(nap: Duration) {
    if let Some(d) = nap_for(
        IN_FLIGHT.load(Ordering::Relaxed),
        LANE.load(Ordering::Relaxed),
        nap,
    ) {
        std::thread::sleep(d);
    }
}

/// How long to nap with `in_flight` reconciles and CRs' lane writes in flight, `lane` of them
/// lane writes. When only the lane is at work (the annotations and events after a burst has
/// converged), nobody waits for its answers: the nap is [`LANE_NAP`] times longer, so that one
/// wake-up handles more of them. 2,000 CRs, alternated runs: ork's CPU after convergence (the
/// lane's 4,000 writes and the CR events they cause) 0.29–0.31 → 0.22–0.24 s with 4 times the
/// nap, no less with 8 times. The price: a fresh change that comes while only the lane is at
/// work may wait for the end of an 8 ms nap instead of a 2 ms one.
fn nap_for(in_flight: usize, lane: usize, nap: Duration) -> Option<Duration> {
    if nap.is_zero() || !crowded(in_flight) {
        return None;
    }
    Some(if lane >= in_flight {
        nap * LANE_NAP
    } else {
        nap
    })
}

/// How many times the nap a thread takes when only lane writes are in flight.
const LANE_NAP: u32 = 4;

fn crowded(in_flight: usize) -> bool {
    in_flight >= CROWD
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn naps_only_in_a_crowd() {
        assert!(!crowded(0));
        assert!(!crowded(1));
        assert!(!crowded(CROWD - 1));
        assert!(crowded(CROWD));
        assert!(crowded(100));
    }

    #[test]
    fn naps_longer_when_only_the_lane_waits() {
        let nap = Duration::from_millis(2);
        assert_eq!(nap_for(3, 3, nap), None, "too few in flight");
        assert_eq!(nap_for(8, 0, nap), Some(nap), "reconciles wait for answers");
        assert_eq!(nap_for(8, 5, nap), Some(nap), "some of them reconciles");
        assert_eq!(nap_for(8, 8, nap), Some(nap * LANE_NAP), "only the lane");
        assert_eq!(nap_for(8, 8, Duration::ZERO), None, "--wake-nap 0");
    }
}
