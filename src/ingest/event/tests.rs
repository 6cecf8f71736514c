//! Unit tests of `event`.

use super::*;

fn raw(s: &str) -> Raw<'_> {
    Raw(s.as_bytes())
}

#[test]
fn an_event_is_read_with_only_the_fields_that_matter() {
    let input = br#"{ "ph" : "X", "cat": "kernel", "name": "k\"1", "pid": 0, "tid": "stream 7",
        "ts": 12.5, "dur": 3, "unknown": {"deep": [1, {"x": "]}"}]},
        "args": {"grid": [1, 2, 3], "correlation": 9, "Concrete Inputs": ["", "1"], "other": null}} trailing"#;
    let mut ev = RawEvent::default();
    let end = parse_event(input, &mut ev).unwrap();
    assert_eq!(&input[end..], b" trailing");
    assert_eq!(ev.ph, Some(raw("\"X\"")));
    assert_eq!(text(ev.name.unwrap()), "k\"1");
    assert_eq!(text(ev.tid.unwrap()), "stream 7");
    assert_eq!(micros_to_ns(ev.ts.unwrap()), Some(12_500));
    assert_eq!(dim3(ev.args.grid.unwrap()), Some([1, 2, 3]));
    assert_eq!(uint(ev.args.correlation.unwrap()), Some(9));
    assert!(ev.args.concrete_inputs.is_some());
    let mut ev = RawEvent::default();
    parse_event(br#"{"name": "B/E", "attr": {"Bytes": "12"}}"#, &mut ev).unwrap();
    assert_eq!(int(ev.args.alloc_bytes.unwrap()), Some(12));
}

/// The slots of `a` that hold a value, by their place in the struct.
fn filled(a: &RawArgs<'_>) -> Vec<usize> {
    [
        a.name,
        a.correlation,
        a.device,
        a.stream,
        a.grid,
        a.block,
        a.registers,
        a.shared_memory,
        a.occupancy,
        a.bytes,
        a.bandwidth,
        a.external_id,
        a.sequence_number,
        a.input_dims,
        a.input_types,
        a.collective_name,
        a.in_nelems,
        a.out_nelems,
        a.group_size,
        a.dtype,
        a.process_group,
        a.alloc_bytes,
        a.total_allocated,
        a.total_reserved,
        a.device_type,
        a.device_id,
        a.concrete_inputs,
    ]
    .iter()
    .enumerate()
    .filter_map(|(i, slot)| slot.map(|_| i))
    .collect()
}

#[test]
fn every_argument_is_kept_under_each_of_its_spellings_and_no_other() {
    let spellings = [
        ("name", 0),
        ("correlation", 1),
        ("device", 2),
        ("stream", 3),
        ("grid", 4),
        ("block", 5),
        ("registers per thread", 6),
        ("shared memory", 7),
        ("est. achieved occupancy %", 8),
        ("theoretical occupancy %", 8),
        ("bytes", 9),
        ("memory bandwidth (GB/s)", 10),
        ("External id", 11),
        ("external id", 11),
        ("Sequence number", 12),
        ("Input Dims", 13),
        ("Input dims", 13),
        ("Input type", 14),
        ("Collective name", 15),
        ("In msg nelems", 16),
        ("Out msg nelems", 17),
        ("Group size", 18),
        ("dtype", 19),
        ("Process Group Name", 20),
        ("Bytes", 21),
        ("Total Allocated", 22),
        ("Total Reserved", 23),
        ("Device Type", 24),
        ("Device Id", 25),
        ("Concrete Inputs", 26),
    ];
    for (key, slot) in spellings {
        let mut args = RawArgs::default();
        args.set(key.as_bytes(), raw("7"));
        assert_eq!(filled(&args), [slot], "{key}");
        // The same key with one byte changed, or one byte more or less, is not kept.
        for other in [key.to_uppercase(), format!("{key} "), key[1..].to_string()] {
            let mut args = RawArgs::default();
            args.set(other.as_bytes(), raw("7"));
            let known = spellings.iter().any(|(k, _)| *k == other);
            assert_eq!(filled(&args).len(), usize::from(known), "{other}");
        }
    }
}

#[test]
fn a_cut_event_is_incomplete_and_a_broken_one_malformed() {
    let input = br#"{"ph": "X", "name": "a\"b", "args": {"x": [1, 2]}, "ts": 1.5}"#;
    for cut in 0..input.len() {
        assert_eq!(
            parse_event(&input[..cut], &mut RawEvent::default())
                .err()
                .map(|e| e.0),
            Some(Stop::Incomplete),
            "cut at {cut}"
        );
    }
    assert!(parse_event(input, &mut RawEvent::default()).is_ok());
    for bad in [
        &br#"{"ph" "X"}"#[..],
        br#"{"ph": "X" "ts": 1}"#,
        br#"{ph: 1}"#,
        br#"{"a": @}"#,
        b"[1]",
        br#"{"tid": 391{, "ts": 1}"#,
        br#"{"a": {]}, "ts": 1}"#,
        br#"{"a": [}], "ts": 1}"#,
    ] {
        let got = parse_event(bad, &mut RawEvent::default())
            .err()
            .map(|e| e.0);
        assert_eq!(
            got,
            Some(Stop::Malformed),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
}

#[test]
fn eight_digits_are_read_at_once() {
    for n in ["00000000", "12345678", "99999999", "10000001"] {
        let w = u64::from_le_bytes(n.as_bytes().try_into().unwrap());
        assert_eq!(eight_digits(w), n.parse::<u64>().unwrap(), "{n}");
    }
    assert_eq!(
        micros_to_ns(raw("1661203462611636")),
        Some(1_661_203_462_611_636_000)
    );
    assert_eq!(micros_to_ns(raw("12345678.9")), Some(12_345_678_900));
    assert_eq!(
        micros_to_ns(raw("-123456789012.5")),
        Some(-123_456_789_012_500)
    );
    assert_eq!(micros_to_ns(raw("12345678901234567890")), None);
}

#[test]
fn eight_digit_words_are_recognised() {
    let word = |s: &[u8; 8]| u64::from_le_bytes(*s);
    assert!(all_digits(word(b"01234567")));
    assert!(all_digits(word(b"99999999")));
    for bad in [
        b"0123456.",
        b"/1234567",
        b":1234567",
        b"1234567,",
        b"1234\x80567",
        b"12345 67",
    ] {
        assert!(!all_digits(word(bad)), "{}", String::from_utf8_lossy(bad));
    }
    let input = br#"{"ts": 1661203462611636, "dur": 12345678901234567890, "x": -12.5e3}"#;
    let mut ev = RawEvent::default();
    parse_event(input, &mut ev).unwrap();
    assert_eq!(ev.ts, Some(raw("1661203462611636")));
    assert_eq!(ev.dur, Some(raw("12345678901234567890")));
}

#[test]
fn numbers_and_literals_end_at_their_delimiter_whatever_their_length() {
    for len in 1..=20 {
        let digits: String = (0..len).map(|i| char::from(b'1' + i % 9)).collect();
        for number in [
            digits.clone(),
            format!("-{digits}"),
            format!("{digits}.5e-3"),
        ] {
            for end in [",", "}", "]", " ", "\n"] {
                let text = format!("{number}{end}");
                assert_eq!(scalar_end(text.as_bytes(), 1), Ok(number.len()), "{text:?}");
            }
            let text = format!("{number}{{");
            assert_eq!(scalar_end(text.as_bytes(), 1), Err(Stop::Malformed));
            assert_eq!(scalar_end(number.as_bytes(), 1), Err(Stop::Incomplete));
        }
    }
    for literal in ["true", "false", "null", "0.5925926", "1E+5"] {
        let text = format!("{literal},\"x\": 12345678901234567");
        assert_eq!(
            scalar_end(text.as_bytes(), 1),
            Ok(literal.len()),
            "{literal}"
        );
    }
}

#[test]
fn nested_values_are_skipped_to_their_own_closing_bracket() {
    for pad in 0..16 {
        let spaces = " ".repeat(pad);
        let value =
            format!(r#"[[512],{spaces}[1024, 64],{{"k": "]}}[{{\"", "x": []}}, {spaces}"{{"]"#);
        let input = format!(r#"{{"args": {{"Input Dims": {value}, "name": "n"}}, "ph": "X"}} ["#);
        let mut ev = RawEvent::default();
        let end = parse_event(input.as_bytes(), &mut ev).unwrap();
        assert_eq!(&input[end..], " [", "pad {pad}");
        assert_eq!(ev.args.input_dims, Some(raw(&value)), "pad {pad}");
        assert_eq!(ev.args.name, Some(raw("\"n\"")));
        assert_eq!(ev.ph, Some(raw("\"X\"")));
        let unclosed = &value[..value.len() - 1];
        let mut c = Cursor {
            b: unclosed.as_bytes(),
            i: 0,
        };
        assert_eq!(c.nested(), Err(Stop::Incomplete), "pad {pad}");
        let mismatched = format!("{unclosed}}}");
        let mut c = Cursor {
            b: mismatched.as_bytes(),
            i: 0,
        };
        assert_eq!(c.nested(), Err(Stop::Malformed), "pad {pad}");
    }
}

#[test]
fn launch_dimensions_are_read_compact_or_not() {
    assert_eq!(dim3(raw("[128,1,1]")), Some([128, 1, 1]));
    assert_eq!(dim3(raw("[4294967295,0,7]")), Some([u32::MAX, 0, 7]));
    assert_eq!(dim3(raw("[ 8, 7 ,1 ]")), Some([8, 7, 1]));
    for bad in [
        "[4294967296,1,1]",
        "[01,1,1]",
        "[1,2]",
        "[1,2,3,4]",
        "[1,2,3,]",
        "[1,,3]",
        "[-1,2,3]",
        "[1.5,2,3]",
        "[]",
        "\"[1,2,3]\"",
    ] {
        assert_eq!(dim3(raw(bad)), None, "{bad}");
    }
    assert_eq!(
        short_digits(b"1234567890123456789"),
        Some(1_234_567_890_123_456_789)
    );
    assert_eq!(short_digits(b"12345678901234567890"), None);
    assert_eq!(short_digits(b"1234567x"), None);
    assert_eq!(short_digits(b"123456789x"), None);
    assert_eq!(short_digits(b""), None);
    assert_eq!(uint(raw("13164942")), Some(13_164_942));
    assert_eq!(uint(raw("7.9")), Some(7));
}

#[test]
fn fractional_microseconds_become_exact_nanoseconds() {
    assert_eq!(
        micros_to_ns(raw("5387313686629.708")),
        Some(5_387_313_686_629_708)
    );
    assert_eq!(micros_to_ns(raw("12")), Some(12_000));
    assert_eq!(micros_to_ns(raw("0.01")), Some(10));
    assert_eq!(micros_to_ns(raw("1.0005")), Some(1_001));
    assert_eq!(micros_to_ns(raw("-3.5")), Some(-3_500));
    assert_eq!(micros_to_ns(raw("1.5e3")), Some(1_500_000));
    assert_eq!(micros_to_ns(raw("1.2.3")), None);
    assert_eq!(micros_to_ns(raw("")), None);
    assert_eq!(micros_to_ns(raw("-")), None);
    assert_eq!(micros_to_ns(raw("\" 42 \"")), Some(42_000));
}

#[test]
fn numbers_written_as_strings_are_read() {
    assert_eq!(
        micros_to_ns(raw("\"2097962447511.067\"")),
        Some(2_097_962_447_511_067)
    );
    assert_eq!(uint(raw("\"3620872431\"")), Some(3_620_872_431));
    assert_eq!(int(raw("\"-7\"")), Some(-7));
    assert_eq!(float(raw("\"0.5\"")), Some(0.5));
}

#[test]
fn integers_beyond_64_bits_do_not_fail() {
    assert_eq!(
        uint(raw("10159970886766084423")),
        Some(10_159_970_886_766_084_423)
    );
    assert_eq!(
        uint(raw("340282366920938463463374607431768211456")),
        Some(u64::MAX)
    );
    assert_eq!(micros_to_ns(raw("99999999999999999999999999")), None);
    assert_eq!(micros_to_ns(raw("7.6e18")), None);
}

#[test]
fn text_unescapes_only_when_needed() {
    assert!(matches!(
        text(raw("\"aten::mm\"")),
        Cow::Borrowed("aten::mm")
    ));
    assert_eq!(text(raw(r#""a\"b\u00e9""#)), "a\"bé");
    assert_eq!(text(raw("42")), "42");
    assert_eq!(text(Raw(b"\"a\xffb\"")), "a\u{fffd}b");
}
