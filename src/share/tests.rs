//! Unit tests of `share`.

use super::*;

#[test]
fn the_fragment_is_found_in_a_link_or_given_alone() {
    assert_eq!(fragment_of(" http://h/p/#ttap1.abc \n"), "ttap1.abc");
    assert_eq!(fragment_of("#ttap1.abc"), "ttap1.abc");
    assert_eq!(fragment_of("ttap1.abc"), "ttap1.abc");
    assert_eq!(fragment_of("http://h/#"), "");
}

#[test]
fn the_prefix_names_the_version() {
    let payload_of = |f| payload_of(f, &REPORT_LINK);
    assert_eq!(payload_of("ttap1.xyz"), Ok("xyz"));
    assert_eq!(payload_of("ttap2.xyz"), Ok("xyz"));
    assert!(matches!(
        payload_of("ttap3.xyz"),
        Err(ShareError::Newer { .. })
    ));
    assert!(matches!(
        payload_of("ttap99999999999999999999999.xyz"),
        Err(ShareError::Newer { .. })
    ));
    assert!(matches!(
        payload_of("ttap0.xyz"),
        Err(ShareError::Unsupported { .. })
    ));
    for bad in ["ttap.xyz", "ttap1xyz", "ttapx.1", "perfetto", "TTAP1.x"] {
        assert!(
            matches!(payload_of(bad), Err(ShareError::NotALink { .. })),
            "{bad}"
        );
    }
}

#[test]
fn inflate_stops_at_the_cap_and_needs_the_end() {
    use std::io::Write as _;
    let zip = |data: &[u8]| {
        let mut z = ZlibEncoder::new(Vec::new(), Compression::best());
        z.write_all(data).unwrap();
        z.finish().unwrap()
    };
    let small = zip(b"{\"a\": 1}");
    assert_eq!(inflate(&small).unwrap(), b"{\"a\": 1}");
    for cut in 1..small.len() {
        assert!(inflate(&small[..cut]).is_err(), "cut at {cut}");
    }
    let exact = vec![b' '; MAX_JSON_BYTES];
    assert_eq!(inflate(&zip(&exact)).unwrap().len(), MAX_JSON_BYTES);
    let over = vec![b' '; MAX_JSON_BYTES + 1];
    assert!(matches!(inflate(&zip(&over)), Err(ShareError::TooBig)));
}

#[test]
fn limits_name_the_place() {
    let v: Value = serde_json::json!({"a": [1, {"b": "x".repeat(MAX_TEXT_BYTES + 1)}]});
    match check_limits(&v, &mut String::from("$"), 0) {
        Err(ShareError::TooLarge { path, .. }) => assert_eq!(path, "$.a[1].b"),
        other => panic!("{other:?}"),
    }
}
