//! Every event's details in one byte arena: an event's `detail` is the offset of its record.
//!
//! A record starts with a mask of the fields present, then each present field as a LEB128
//! varint (signed ones zigzagged; floats as their four bytes). Most values are small (streams,
//! devices, ids that count up, interned strings), so a CPU op's record takes about 12 bytes and
//! a runtime call's 5, where a struct per event took 56 and 24. Records are decoded into the
//! detail structs on demand; only the event's kind says which struct its record holds.

use serde::{Deserialize, Serialize};

use super::kind::{CopyDirection, HostMemory, RuntimeClass};
use super::{CopyDetail, KernelDetail, MemoryDetail, OpDetail, RuntimeDetail, StrId};

/// The arena. Records are appended in event order; an offset stays valid for the arena's life.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Details {
    bytes: Vec<u8>,
}

const RUNTIME_CLASSES: [RuntimeClass; 8] = [
    RuntimeClass::Launch,
    RuntimeClass::GraphLaunch,
    RuntimeClass::Synchronize,
    RuntimeClass::Malloc,
    RuntimeClass::Free,
    RuntimeClass::Memcpy,
    RuntimeClass::Memset,
    RuntimeClass::Other,
];
const DIRECTIONS: [CopyDirection; 6] = [
    CopyDirection::HostToDevice,
    CopyDirection::DeviceToHost,
    CopyDirection::DeviceToDevice,
    CopyDirection::HostToHost,
    CopyDirection::PeerToPeer,
    CopyDirection::Unknown,
];
const HOST_MEMORY: [HostMemory; 3] = [
    HostMemory::Pinned,
    HostMemory::Pageable,
    HostMemory::NotApplicable,
];

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

/// Writes one record straight into the arena: its fixed head, a mask of `MASK` bytes (a bit
/// per optional field, in the order they are put, patched at the end), then the fields present.
struct Record<'a, const MASK: usize> {
    out: &'a mut Vec<u8>,
    at: usize,
    mask_at: usize,
    mask: u64,
    bit: u32,
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

impl<'a, const MASK: usize> Record<'a, MASK> {
    fn new(out: &'a mut Vec<u8>, head: &[u8]) -> Record<'a, MASK> {
        let at = out.len();
        out.extend_from_slice(head);
        let mask_at = out.len();
        out.extend_from_slice(&[0; MASK]);
        Record {
            out,
            at,
            mask_at,
            mask: 0,
            bit: 0,
        }
    }

    /// Marks the next field present or absent.
    fn next(&mut self, present: bool) -> bool {
        if present {
            self.mask |= 1 << self.bit;
        }
        self.bit += 1;
        present
    }

    fn uint(&mut self, v: Option<u64>) -> &mut Self {
        if self.next(v.is_some()) {
            varint(self.out, v.unwrap_or(0));
        }
        self
    }

    fn int(&mut self, v: Option<i64>) -> &mut Self {
        self.uint(v.map(zigzag))
    }

    fn float(&mut self, v: Option<f32>) -> &mut Self {
        if self.next(v.is_some()) {
            self.out.extend_from_slice(&v.unwrap_or(0.0).to_le_bytes());
        }
        self
    }

    fn dim3(&mut self, v: Option<[u32; 3]>) -> &mut Self {
        if self.next(v.is_some()) {
            for x in v.unwrap_or_default() {
                varint(self.out, u64::from(x));
            }
        }
        self
    }

    /// Writes the mask; returns the record's offset.
    fn finish(&mut self) -> u32 {
        let mask = self.mask.to_le_bytes();
        self.out[self.mask_at..self.mask_at + MASK].copy_from_slice(&mask[..MASK]);
        u32::try_from(self.at)
            .ok()
            .filter(|&at| at != super::NONE)
            .expect("less than 4 GiB of event details")
    }
}

/// Reads one record back, field by field in the order they were put.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    mask: u64,
    bit: u32,
}

impl<'a> Reader<'a> {
    /// A reader of the record at `at`: its `HEAD` fixed bytes (returned), then a mask of
    /// `MASK` bytes.
    fn new<const HEAD: usize, const MASK: usize>(
        bytes: &'a [u8],
        at: u32,
    ) -> ([u8; HEAD], Reader<'a>) {
        let at = at as usize;
        let head: [u8; HEAD] = bytes[at..at + HEAD].try_into().expect("HEAD bytes");
        let mut mask = [0u8; 8];
        mask[..MASK].copy_from_slice(&bytes[at + HEAD..at + HEAD + MASK]);
        let r = Reader {
            bytes,
            at: at + HEAD + MASK,
            mask: u64::from_le_bytes(mask),
            bit: 0,
        };
        (head, r)
    }

    fn varint(&mut self) -> u64 {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let b = self.bytes[self.at];
            self.at += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return v;
            }
            shift += 7;
        }
    }

    fn present(&mut self) -> bool {
        let yes = self.mask & (1 << self.bit) != 0;
        self.bit += 1;
        yes
    }

    fn uint(&mut self) -> Option<u64> {
        self.present().then(|| self.varint())
    }

    fn int(&mut self) -> Option<i64> {
        self.uint().map(unzigzag)
    }

    fn u32(&mut self) -> Option<u32> {
        self.uint().map(|v| v as u32)
    }

    fn float(&mut self) -> Option<f32> {
        self.present().then(|| {
            let b: [u8; 4] = self.bytes[self.at..self.at + 4]
                .try_into()
                .expect("four bytes");
            self.at += 4;
            f32::from_le_bytes(b)
        })
    }

    fn dim3(&mut self) -> Option<[u32; 3]> {
        self.present()
            .then(|| [0; 3].map(|_: u32| self.varint() as u32))
    }
}

impl Details {
    pub(crate) fn push_kernel(&mut self, k: &KernelDetail) -> u32 {
        Record::<2>::new(&mut self.bytes, &[])
            .int(k.device)
            .int(k.stream)
            .uint(k.correlation)
            .dim3(k.grid)
            .dim3(k.block)
            .uint(k.registers_per_thread.map(u64::from))
            .uint(k.shared_memory)
            .float(k.occupancy_pct)
            .uint(k.collective.map(u64::from))
            .finish()
    }

    pub fn kernel(&self, at: u32) -> KernelDetail {
        let ([], mut r) = Reader::new::<0, 2>(&self.bytes, at);
        KernelDetail {
            device: r.int(),
            stream: r.int(),
            correlation: r.uint(),
            grid: r.dim3(),
            block: r.dim3(),
            registers_per_thread: r.u32(),
            shared_memory: r.uint(),
            occupancy_pct: r.float(),
            collective: r.u32(),
        }
    }

    pub(crate) fn push_copy(&mut self, c: &CopyDetail) -> u32 {
        Record::<1>::new(&mut self.bytes, &[c.direction as u8, c.host_memory as u8])
            .int(c.device)
            .int(c.stream)
            .uint(c.correlation)
            .uint(c.bytes)
            .float(c.bandwidth_gbps)
            .finish()
    }

    pub fn copy(&self, at: u32) -> CopyDetail {
        let ([direction, host_memory], mut r) = Reader::new::<2, 1>(&self.bytes, at);
        CopyDetail {
            device: r.int(),
            stream: r.int(),
            correlation: r.uint(),
            bytes: r.uint(),
            bandwidth_gbps: r.float(),
            direction: DIRECTIONS[direction as usize],
            host_memory: HOST_MEMORY[host_memory as usize],
        }
    }

    pub(crate) fn push_runtime(&mut self, d: &RuntimeDetail) -> u32 {
        Record::<1>::new(&mut self.bytes, &[d.class as u8])
            .uint(d.correlation)
            .finish()
    }

    pub fn runtime(&self, at: u32) -> RuntimeDetail {
        let ([class], mut r) = Reader::new::<1, 1>(&self.bytes, at);
        RuntimeDetail {
            class: RUNTIME_CLASSES[class as usize],
            correlation: r.uint(),
        }
    }

    /// The class of the runtime call whose record is at `at` (its first byte).
    pub fn runtime_class(&self, at: u32) -> RuntimeClass {
        RUNTIME_CLASSES[self.bytes[at as usize] as usize]
    }

    pub(crate) fn push_op(&mut self, o: &OpDetail) -> u32 {
        Record::<1>::new(&mut self.bytes, &[])
            .uint(o.external_id)
            .uint(o.sequence_number)
            .uint(o.input_dims.map(u64::from))
            .uint(o.input_types.map(u64::from))
            .uint(o.concrete_inputs.map(u64::from))
            .uint(o.collective.map(u64::from))
            .finish()
    }

    pub fn op(&self, at: u32) -> OpDetail {
        let ([], mut r) = Reader::new::<0, 1>(&self.bytes, at);
        OpDetail {
            external_id: r.uint(),
            sequence_number: r.uint(),
            input_dims: r.u32().map(|s| s as StrId),
            input_types: r.u32().map(|s| s as StrId),
            concrete_inputs: r.u32().map(|s| s as StrId),
            collective: r.u32(),
        }
    }

    pub(crate) fn push_memory(&mut self, m: &MemoryDetail) -> u32 {
        Record::<1>::new(&mut self.bytes, &[])
            .int(Some(m.bytes))
            .int(m.total_allocated)
            .int(m.total_reserved)
            .int(m.device_type)
            .int(m.device_id)
            .finish()
    }

    pub fn memory(&self, at: u32) -> MemoryDetail {
        let ([], mut r) = Reader::new::<0, 1>(&self.bytes, at);
        MemoryDetail {
            bytes: r.int().unwrap_or(0),
            total_allocated: r.int(),
            total_reserved: r.int(),
            device_type: r.int(),
            device_id: r.int(),
        }
    }

    /// Bytes in use and allocated.
    pub fn bytes(&self) -> (usize, usize) {
        (self.bytes.len(), self.bytes.capacity())
    }

    /// Makes room for `bytes` more, exactly, as far as memory allows.
    pub(crate) fn try_reserve_exact(&mut self, bytes: usize) {
        let _ = self.bytes.try_reserve_exact(bytes);
    }

    pub(crate) fn shrink_to_fit(&mut self) {
        self.bytes.shrink_to_fit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_back_as_written() {
        let mut d = Details::default();
        let k = KernelDetail {
            device: Some(0),
            stream: Some(-1),
            correlation: Some(u64::MAX),
            grid: Some([1, 70_000, 3]),
            block: None,
            registers_per_thread: Some(255),
            shared_memory: Some(231_424),
            occupancy_pct: Some(37.5),
            collective: Some(2),
        };
        let c = CopyDetail {
            device: None,
            stream: Some(4_294_967_295),
            correlation: Some(7),
            bytes: Some(1 << 40),
            bandwidth_gbps: Some(12.5),
            direction: CopyDirection::DeviceToHost,
            host_memory: HostMemory::Pageable,
        };
        let r = RuntimeDetail {
            class: RuntimeClass::Other,
            correlation: None,
        };
        let o = OpDetail {
            external_id: Some(7_195_619),
            sequence_number: Some(0),
            input_dims: Some(3),
            input_types: None,
            concrete_inputs: Some(9),
            collective: None,
        };
        let m = MemoryDetail {
            bytes: i64::MIN,
            total_allocated: Some(i64::MAX),
            total_reserved: None,
            device_type: Some(1),
            device_id: Some(0),
        };
        let at = [
            d.push_kernel(&k),
            d.push_copy(&c),
            d.push_runtime(&r),
            d.push_op(&o),
            d.push_memory(&m),
        ];
        assert_eq!(format!("{:?}", d.kernel(at[0])), format!("{k:?}"));
        assert_eq!(format!("{:?}", d.copy(at[1])), format!("{c:?}"));
        assert_eq!(format!("{:?}", d.runtime(at[2])), format!("{r:?}"));
        assert_eq!(d.runtime_class(at[2]), RuntimeClass::Other);
        assert_eq!(format!("{:?}", d.op(at[3])), format!("{o:?}"));
        assert_eq!(format!("{:?}", d.memory(at[4])), format!("{m:?}"));
        // A runtime call without correlation: its class and an empty mask.
        assert_eq!(at[3] - at[2], 2);
    }
}
