//! The trace's identity: a stable hash of what identifies a trace, without revealing it. A
//! shared link, a saved label and a kept report find their trace again by it; `share`
//! re-exports it as `share::fingerprint`.

use super::Trace;

/// 64-bit FNV-1a: small, and the same on every platform (no `usize`, no seeds).
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }

    fn text(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.bytes(s.as_bytes());
    }
}

/// 64-bit FNV-1a of `bytes` (a link's checksum: `share::pack_value`).
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h = Fnv::new();
    h.bytes(bytes);
    h.0
}

/// A stable hash of what identifies a trace, without revealing it: `fp1-` and 16 hex digits.
///
/// It covers the event count, the span, the device names and every event's name, start and
/// duration. Events are combined by a wrapping sum of their hashes, so the result depends on
/// what the trace holds, not on the order the model keeps events or interns names in. The same
/// trace gives the same fingerprint plain or gzip-compressed, natively and in wasm32. A new
/// algorithm gets a new `fpN-` prefix.
pub fn fingerprint(trace: &Trace) -> String {
    let ev = &trace.events;
    let mut names: Vec<Option<u64>> = vec![None; trace.strings.len()];
    let mut events = 0u64;
    for i in trace.recorded() {
        let id = ev.name[i];
        let name = *names[id as usize].get_or_insert_with(|| {
            let mut h = Fnv::new();
            h.text(trace.strings.get(id));
            h.0
        });
        let mut h = Fnv::new();
        h.u64(name);
        h.u64(ev.start[i] as u64);
        // As written: a record clipped where it overran the next one keeps its identity.
        h.u64(trace.written_dur(i) as u64);
        events = events.wrapping_add(h.0);
    }
    let mut h = Fnv::new();
    h.text("torchtraceap fingerprint 1");
    h.u64(trace.recorded().len() as u64);
    let (first, last) = trace.meta.span.unwrap_or((0, 0));
    h.u64(first as u64);
    h.u64(last as u64);
    for d in &trace.meta.devices {
        h.text(d.name.as_deref().unwrap_or(""));
    }
    h.u64(events);
    format!("fp1-{:016x}", h.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_1a_matches_its_published_test_vectors() {
        for (text, want) in [
            ("", 0xcbf2_9ce4_8422_2325u64),
            ("a", 0xaf63_dc4c_8601_ec8c),
            ("foobar", 0x8594_4171_f739_67e8),
        ] {
            let mut h = Fnv::new();
            h.bytes(text.as_bytes());
            assert_eq!(h.0, want, "{text:?}");
        }
    }
}
