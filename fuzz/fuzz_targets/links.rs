//! The link a fuzz input stands for, shared by the `share_decode` and `view_link_decode` targets.

use std::io::Write;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use flate2::{write::ZlibEncoder, Compression};

fn zlib(bytes: &[u8]) -> Vec<u8> {
    let mut z = ZlibEncoder::new(Vec::new(), Compression::fast());
    z.write_all(bytes).unwrap();
    z.finish().unwrap()
}

/// `control % 4`: 0, the payload as text (a whole link or a fragment); 1, `prefix` and the
/// payload as text; 2, `prefix` and base64url(zlib(payload)) (the payload is the link's JSON);
/// 3, `prefix` and base64url(payload) (arbitrary compressed data).
pub fn link(control: u8, prefix: &str, payload: &[u8]) -> String {
    match control % 4 {
        0 => String::from_utf8_lossy(payload).into_owned(),
        1 => format!("{prefix}{}", String::from_utf8_lossy(payload)),
        2 => format!("{prefix}{}", URL_SAFE_NO_PAD.encode(zlib(payload))),
        _ => format!("{prefix}{}", URL_SAFE_NO_PAD.encode(payload)),
    }
}
