//! Helpers for the tests that take share links apart and forge them (`share.rs`, `hostile.rs`).

use std::io::{Read as _, Write as _};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use flate2::Compression;
use torchtraceap::share::{self, ShareOptions, SharedReport};

/// The prefix of the links this version writes.
pub const PREFIX: &str = "ttap2.";

pub fn zlib(bytes: &[u8]) -> Vec<u8> {
    let mut z = ZlibEncoder::new(Vec::new(), Compression::best());
    z.write_all(bytes).unwrap();
    z.finish().unwrap()
}

/// A well-formed link around any bytes: `prefix` + base64url(zlib(bytes)).
pub fn link(prefix: &str, bytes: &[u8]) -> String {
    format!("{prefix}{}", URL_SAFE_NO_PAD.encode(zlib(bytes)))
}

/// The JSON a link made of `shared` carries (format 2: facts only), nothing left out.
pub fn facts_json(shared: &SharedReport) -> serde_json::Value {
    let whole = ShareOptions {
        max_bytes: usize::MAX,
    };
    let fragment = share::encode(shared, &whole).unwrap().fragment;
    let compressed = URL_SAFE_NO_PAD.decode(&fragment[PREFIX.len()..]).unwrap();
    let mut json = Vec::new();
    ZlibDecoder::new(compressed.as_slice())
        .read_to_end(&mut json)
        .unwrap();
    // Without its checksum: a test forges links from it, read as links made before the checksum.
    let mut v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    v.as_object_mut().unwrap().remove("check");
    v
}
