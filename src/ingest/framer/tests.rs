//! Unit tests of `framer`.

use super::*;

#[derive(Clone, Debug, PartialEq)]
enum Seen {
    Top(bool),
    Key(String),
    Value(String, String),
    Element(String),
    Malformed,
    Oversized,
}

/// Records frames; reads object elements with the event reader and records them too.
struct Recorder {
    seen: Vec<Seen>,
}

impl Consumer for Recorder {
    fn wants_value(&self, k: &[u8]) -> bool {
        k == b"schemaVersion" || k == b"deviceProperties"
    }
    fn frame(&mut self, fr: Frame<'_>) {
        self.seen.push(match fr {
            Frame::TopLevel { object } => Seen::Top(object),
            Frame::Key(k) => Seen::Key(String::from_utf8_lossy(k).into()),
            Frame::Value { key, bytes } => Seen::Value(
                String::from_utf8_lossy(key).into(),
                String::from_utf8_lossy(bytes).into(),
            ),
            Frame::Element(b) => Seen::Element(String::from_utf8_lossy(b).into()),
            Frame::Malformed => Seen::Malformed,
            Frame::Oversized => Seen::Oversized,
        })
    }
    fn element_in_place(&mut self, rest: &[u8]) -> Result<usize, Stopped> {
        let mut ev = crate::ingest::event::RawEvent::default();
        let n = crate::ingest::event::parse_event(rest, &mut ev)?;
        self.seen
            .push(Seen::Element(String::from_utf8_lossy(&rest[..n]).into()));
        Ok(n)
    }
}

fn frames(input: &[u8], chunk: usize) -> (Vec<Seen>, Result<(), Cut>) {
    let mut f = Framer::default();
    let mut r = Recorder { seen: Vec::new() };
    for c in input.chunks(chunk.max(1)) {
        f.push(c, &mut r).unwrap();
    }
    let end = f.finish(&mut r).unwrap();
    (r.seen, end)
}

const KINETO: &str = r#"{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "A100 {x}"}],
    "traceEvents": [
      {"ph": "X", "name": "a\"}{[", "args": {"Input Dims": [[1, 2], []]}},
      {"ph": "i", "name": "b\\"} ,
      [1, 2], 7, "s"
    ], "traceName": "t.json", "extra": {"nested": [1, {"x": "}"}]}}"#;

#[test]
fn every_chunk_size_gives_the_same_frames() {
    let (whole, end) = frames(KINETO.as_bytes(), usize::MAX);
    assert_eq!(end, Ok(()));
    assert_eq!(
        whole,
        vec![
            Seen::Top(true),
            Seen::Key("schemaVersion".into()),
            Seen::Value("schemaVersion".into(), "1".into()),
            Seen::Key("deviceProperties".into()),
            Seen::Value(
                "deviceProperties".into(),
                r#"[{"id": 0, "name": "A100 {x}"}]"#.into()
            ),
            Seen::Key("traceEvents".into()),
            Seen::Element(
                r#"{"ph": "X", "name": "a\"}{[", "args": {"Input Dims": [[1, 2], []]}}"#.into()
            ),
            Seen::Element(r#"{"ph": "i", "name": "b\\"}"#.into()),
            Seen::Element("[1, 2]".into()),
            Seen::Element("7".into()),
            Seen::Element(r#""s""#.into()),
            Seen::Key("traceName".into()),
            Seen::Key("extra".into()),
        ]
    );
    for size in 1..40 {
        {
            let got = frames(KINETO.as_bytes(), size);
            assert_eq!(got, (whole.clone(), Ok(())), "chunk size {size}");
        }
    }
}

#[test]
fn stray_delimiters_are_elements_of_their_own_and_never_stall_the_framer() {
    let (seen, end) = frames(b"[{\"a\": 1}, }, :, {\"b\": 2} }]", 2);
    assert_eq!(end, Ok(()));
    let elements: Vec<&Seen> = seen
        .iter()
        .filter(|s| matches!(s, Seen::Element(_)))
        .collect();
    assert_eq!(elements.len(), 5, "{seen:?}");
}

/// Every chunk size gives `expected` and a complete input.
fn assert_every_chunking(text: &[u8], expected: &[Seen]) {
    for size in 1..text.len() + 1 {
        assert_eq!(
            frames(text, size),
            (expected.to_vec(), Ok(())),
            "chunk size {size}"
        );
    }
}

#[test]
fn a_malformed_event_is_cut_at_the_next_line_so_the_rest_survives() {
    let text =
        b"[\n{\"name\": \"un\"escaped\", \"ph\": \"X\"},\n  {\"ph\": \"X\"},\n{\"ph\": \"i\"}\n]";
    let expected = vec![
        Seen::Top(false),
        Seen::Malformed,
        Seen::Element("{\"ph\": \"X\"}".into()),
        Seen::Element("{\"ph\": \"i\"}".into()),
    ];
    assert_every_chunking(text, &expected);
}

#[test]
fn a_malformed_event_on_one_line_ends_where_its_braces_close() {
    let text = br#"[{"ph": "X" "ts": 1}, {"ph": "X"}, {"ph" 1}, {"ph": "i"}]"#;
    let expected = vec![
        Seen::Top(false),
        Seen::Malformed,
        Seen::Element(r#"{"ph": "X"}"#.into()),
        Seen::Malformed,
        Seen::Element(r#"{"ph": "i"}"#.into()),
    ];
    assert_every_chunking(text, &expected);
}

#[test]
fn a_bare_array_is_a_list_of_events() {
    let (seen, end) = frames(b"\xEF\xBB\xBF [ {\"ph\":\"B\"},{\"ph\":\"E\"} ]\n", 3);
    assert_eq!(end, Ok(()));
    assert_eq!(
        seen,
        vec![
            Seen::Top(false),
            Seen::Element("{\"ph\":\"B\"}".into()),
            Seen::Element("{\"ph\":\"E\"}".into())
        ]
    );
}

#[test]
fn a_cut_input_keeps_the_complete_events_and_says_where_it_stopped() {
    let text = r#"{"traceEvents": [{"ph": "X"}, {"ph": "X", "name": "cut he"#;
    let (seen, end) = frames(text.as_bytes(), 5);
    assert_eq!(end, Err(Cut::InsideEvent));
    assert_eq!(
        seen.iter()
            .filter(|s| matches!(s, Seen::Element(_)))
            .count(),
        1
    );
    assert_eq!(
        frames(br#"{"traceEvents": [{"ph": "X"},"#, 4).1,
        Err(Cut::InsideEventArray)
    );
    assert_eq!(
        frames(br#"{"schemaVersion": 1"#, 4).1,
        Err(Cut::InsideTopLevel)
    );
    assert_eq!(frames(b"  \n", 4).1, Err(Cut::Empty));
}

#[test]
fn bytes_that_cannot_start_json_are_a_syntax_error_at_their_offset() {
    let mut f = Framer::default();
    let mut r = Recorder { seen: Vec::new() };
    let err = f.push(b"  \x00\x05\x16\x07", &mut r).unwrap_err();
    assert_eq!(
        err,
        SyntaxError {
            offset: 2,
            expected: "'{' or '[' (the start of a JSON trace)",
            found: 0
        }
    );
}

#[test]
fn oversized_values_are_skipped_not_kept() {
    let mut f = Framer::default();
    let mut r = Recorder { seen: Vec::new() };
    f.push(b"[{\"name\": \"", &mut r).unwrap();
    let block = vec![b'x'; 1 << 20];
    for _ in 0..(MAX_VALUE_BYTES >> 20) + 1 {
        f.push(&block, &mut r).unwrap();
    }
    assert!(f.carry.capacity() <= MAX_VALUE_BYTES);
    f.push(b"\"}, {\"ph\": \"X\"}]", &mut r).unwrap();
    assert_eq!(
        r.seen,
        vec![
            Seen::Top(false),
            Seen::Oversized,
            Seen::Element("{\"ph\": \"X\"}".into())
        ]
    );
    assert_eq!(f.finish(&mut r), Ok(Ok(())));
}
