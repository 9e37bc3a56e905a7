use super::*;
use serde_json::Value;

fn parsed(era: Era, core: &str) -> Value {
    let whole: Vec<u8> = result(era, core.as_bytes()).concat();
    serde_json::from_slice(&whole).expect("JSON")
}

#[test]
fn markdown_and_json_cores() {
    let md = read_core(b"# T\n\n\"quoted\" \\ text\n", false).expect("core");
    let v = parsed(Era::Handshake, &md);
    assert_eq!(v["content"][0]["text"], "# T\n\n\"quoted\" \\ text\n");
    assert_eq!(v["isError"], false);
    assert!(v.get("structuredContent").is_none() && v.get("resultType").is_none());
    let body = br#"{"ok":true,"data":{"board":{"title":"T"}}}"#;
    let js = read_core(body, true).expect("core");
    let v = parsed(Era::Modern, &js);
    assert_eq!(v["structuredContent"], json!({"board": {"title": "T"}}));
    assert_eq!(v["content"][0]["text"], r#"{"board":{"title":"T"}}"#);
    assert_eq!(v["resultType"], "complete");
    assert!(v["_meta"]["io.modelcontextprotocol/serverInfo"]["name"].is_string());
}

#[test]
fn an_empty_core_is_still_a_result_in_every_era() {
    for era in [Era::Modern, Era::Handshake] {
        let v = parsed(era, "");
        assert_eq!(v["isError"], true, "{era:?}: {v}");
        assert_eq!(v["structuredContent"]["error"]["code"], "INTERNAL_ERROR");
    }
}

#[test]
fn errors_carry_the_api_code() {
    let e = ApiError::InvalidShareUrl {
        message: "not a share link",
    };
    let v = parsed(Era::Modern, &error_core(&e));
    assert_eq!(v["isError"], true);
    assert_eq!(
        v["content"][0]["text"],
        "INVALID_SHARE_URL: not a share link"
    );
    assert_eq!(
        v["structuredContent"]["error"],
        json!({"code": "INVALID_SHARE_URL", "message": "not a share link", "field": "url"})
    );
}
