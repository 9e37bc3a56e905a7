//! The cursor's skips and reads, against what a value parse accepts.

use super::*;

/// The scan's verdict on `text` as a whole value with `levels` left.
fn scanned(text: &str, levels: usize) -> bool {
    let mut scan = Scan::new(text);
    scan.value(MAX_LEVELS - levels).is_ok() && scan.at_end()
}

#[test]
fn syntax_is_serde_jsons() {
    for text in [
        "",
        " ",
        "{",
        "}",
        "[",
        "[1,]",
        "[,1]",
        "{\"a\":1,}",
        "{,}",
        "{\"a\" 1}",
        "{1:2}",
        "{\"a\":}",
        "01",
        "-",
        "-01",
        "1.",
        ".5",
        "1e",
        "1e+",
        "1.5e-",
        "+1",
        "0x1",
        "tru",
        "truex",
        "nul",
        "NaN",
        "\"a",
        "\"\\x\"",
        "\"\\u12\"",
        "\"\\u12g4\"",
        "\"\t\"",
        "\"\u{1f}\"",
        "[1 2]",
        "{\"a\":1 \"b\":2}",
        "[]]",
        "{}}",
        "1 2",
        "\"a\"\"b\"",
        "-0",
        "0",
        "0.5e10",
        "1E-2",
        "-12.25",
        "[ ]",
        "{ }",
        " [1 , 2 ] ",
        "\"\\/\\b\"",
        "{\"\":[{}]}",
        "\"\\uD83D\\uDE00\"",
        "\"\\ud800\"",
        "[\"é\", null, true, false]",
        "\r\n\t[1]\r\n\t",
        "[\u{a0}1]",
        "[1]\u{0}",
    ] {
        let want = serde_json::from_str::<serde_json::Value>(text).is_ok();
        assert_eq!(scanned(text, MAX_LEVELS), want, "{text:?}");
    }
}

#[test]
fn keys_are_unescaped_and_held_to_a_value_parse() {
    let mut scan = Scan::new(r#"{"a\u0062": 1, "c": 2}"#);
    let mut first = true;
    assert!(scan.open_object());
    assert_eq!(scan.next_key(&mut first).unwrap().as_deref(), Some("ab"));
    assert_eq!(scan.value(1), Ok((12, 13)));
    let key = scan.next_key(&mut first).unwrap();
    assert!(matches!(key, Some(Cow::Borrowed("c"))));
    scan.value(1).unwrap();
    assert_eq!(scan.next_key(&mut first), Ok(None));
    assert!(scan.at_end());
    for bad in [
        r#"{"\ud800": 1}"#,
        r#"{"a": 1,}"#,
        r#"{"a" 1}"#,
        r#"{1: 1}"#,
    ] {
        let mut scan = Scan::new(bad);
        let mut first = true;
        assert!(scan.open_object());
        let read = scan.next_key(&mut first).and_then(|_| scan.value(1));
        let read = read.and_then(|_| scan.next_key(&mut first));
        assert_eq!(read.err(), Some(Bad), "{bad}");
    }
}

#[test]
fn a_scalar_is_read_as_serde_json_reads_it() {
    for text in [
        "0",
        "7",
        "-0",
        "-5",
        "-00",
        "00",
        "01",
        "-",
        "-a",
        "1.",
        "-1.5",
        "-1e2",
        "123456789012345678",
        "-123456789012345678",
        "-1234567890123456789",
        "-9223372036854775808",
        "-9223372036854775809",
        "1234567890123456789",
        "9999999999999999999",
        "18446744073709551615",
        "18446744073709551616",
        "1.0",
        "2e3",
        r#""""#,
        r#""id""#,
        r#""a\"b""#,
        r#""\u00e9""#,
        "true",
        "null",
        "[1]",
        r#"{"a":"b"}"#,
    ] {
        let mut scan = Scan::new(text);
        let got = scan.read(0, std::marker::PhantomData::<serde_json::Value>);
        let want = serde_json::from_str::<serde_json::Value>(text).map_err(|_| Bad);
        assert_eq!(got, want, "{text}");
        if let Ok(serde_json::Value::Number(n)) = &got {
            let same = serde_json::from_str::<serde_json::Number>(text).unwrap();
            assert_eq!(
                (n.as_u64(), n.as_i64(), n.is_f64()),
                (same.as_u64(), same.as_i64(), same.is_f64())
            );
        }
    }
}

#[test]
fn what_the_scan_leaves_to_a_value_parse() {
    for (text, suspect) in [
        (r#"{"a":[1,"x\"y",{"b":null}],"c":-1.25}"#, false),
        (r#""\u00e9\\ud800""#, false),
        (r#""\ud83d\ude00""#, true),
        (r#"{"\uDC00":1}"#, true),
        ("1e3", true),
        ("[1E3]", true),
        (&"9".repeat(SHORT_NUMBER), false),
        (&"9".repeat(SHORT_NUMBER + 1), true),
    ] {
        assert_eq!(
            skip_value(text.as_bytes(), 0, 4).map(|(_, s)| s),
            Ok(suspect),
            "{text}"
        );
    }
    assert!(skip_value(b"[[[[]]]]", 0, 4).is_ok());
    assert_eq!(skip_value(b"[[[[[]]]]]", 0, 4), Err(Bad));
    assert!(check_as_value("[[[[]]]]", 4).is_ok());
    assert!(check_as_value("[[[[[]]]]]", 4).is_err());
}
